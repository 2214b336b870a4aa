"""The released Book-SORT data as SORT items: Hub-like Parquet splits, JSON lines and the three-CSV layout."""

from __future__ import annotations

from collections import Counter

import pandas as pd
import pytest

from knowlab.core.io import DataError
from knowlab.sort.build import ITEM_KEYS
from knowlab.sort.release import load_booksort_release


def test_load_booksort_release_local_formats(tmp_path, booksort_release):
    WORDS, EXCERPT, PAIRS = booksort_release.words, booksort_release.excerpt, booksort_release.pairs
    frame = pd.DataFrame(booksort_release.rows)
    hub_like = tmp_path / "hub" / "data"
    hub_like.mkdir(parents=True)
    frame[frame.excerpt_idx < 2].to_parquet(hub_like / "test-00000-of-00001.parquet")
    frame[frame.excerpt_idx >= 2].to_parquet(hub_like / "validation-00000-of-00001.parquet")
    items = load_booksort_release(tmp_path / "hub", cache_dir=str(tmp_path / "cache"))
    assert len(items) == 12 and all(tuple(it) == ITEM_KEYS for it in items)
    first = items[0]
    assert first["item_id"] == "69087|E40|S3|x000|b0" and first["excerpt"] == EXCERPT
    assert (first["split"], first["answer"], first["segment_a"]) == ("test", "B", " ".join(WORDS[3:6]))
    assert Counter(it["split"] for it in items) == {"test": 8, "validation": 4}
    assert [it["distance_bin"] for it in items[:4]] == [0, 1, 2, 3]
    assert [it["distance"] for it in items[:4]] == [p2 - p1 for p1, p2, _ in PAIRS]
    assert all(it["excerpt_start"] is None for it in items)

    jsonl = tmp_path / "rows.jsonl"
    frame.to_json(jsonl, orient="records", lines=True)
    from_json = load_booksort_release(jsonl, n_test=1, cache_dir=str(tmp_path / "cache"))
    assert Counter(it["split"] for it in from_json) == {"test": 4, "validation": 8}
    assert [{**it, "split": None} for it in from_json] == [{**it, "split": None} for it in items]

    triplets = tmp_path / "csv"
    triplets.mkdir()
    seg_cols = ["book_idx", "excerpt_idx", "segment_idx", "segment_1", "segment_2", "seg1_pos", "seg2_pos"]
    frame[[*seg_cols, "distance_bin", "present_seg1_first"]].to_csv(triplets / "segments_40-s3-n3.csv")
    excerpts = frame[["book_idx", "excerpt_idx", "excerpt_pos", "excerpt_text"]].drop_duplicates(["excerpt_idx"])
    excerpts.to_csv(triplets / "excerpts_40-s3-n3.csv")
    frame[["book_idx", "book_title", "num_words"]].drop_duplicates().to_csv(triplets / "books_40-s3-n3.csv")
    assert load_booksort_release(triplets, n_test=2) == items

    broken = frame.copy()
    broken.loc[0, "seg1_pos"] = 1
    broken.to_json(tmp_path / "broken.jsonl", orient="records", lines=True)
    with pytest.raises(DataError, match="row 0: segment_1 does not match the excerpt"):
        load_booksort_release(tmp_path / "broken.jsonl", cache_dir=str(tmp_path / "cache"))

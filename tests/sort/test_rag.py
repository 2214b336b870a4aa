"""SORT retrieval: chunking with offsets, per-book search with the packaged MiniLM, recall@k, oracle passages,
the retrieval table."""

from __future__ import annotations

import itertools
import re

import numpy as np
import pytest

from knowlab.core.io import write_parquet
from knowlab.core.retrieval import PACKAGED_MINILM, build_index
from knowlab.sort.books import Book
from knowlab.sort.rag import (
    book_passages,
    build_book_indexes,
    chunk_text,
    oracle_passages,
    query_text,
    read_passages,
    recall_at_k,
    retrieval_rows,
    retrieve,
    segment_char_spans,
    with_char_spans,
    word_char_offsets,
)
from knowlab.sort.settings import SortRetrievalSettings


def _opening(text: str, n_chars: int = 900) -> str:
    """The first sentences of a text (at most ``n_chars``) as one paragraph."""
    head = " ".join(text[:n_chars].split())
    return head[: head.rfind(".") + 1]


@pytest.fixture(scope="module")
def books(corpus):
    """Two small 'books' of real prose: the openings of the shipped news (encyclopedia) fictions, one
    paragraph per event, so that each ~1024-character passage holds one topic."""
    return {
        f"book-{style}": "\n\n".join(_opening(f["fiction"]) for f in corpus["fictions"] if f["style"] == style)
        for style in ("news", "encyclopedia")
    }


@pytest.fixture
def embedder(minilm, one_thread):
    """The session's MiniLM, torch on one thread during the test."""
    return minilm


def test_chunks_are_at_most_1024_characters_non_overlapping_and_located(books):
    for text in books.values():
        passages = chunk_text(text)
        assert len(passages) >= 4
        for p in passages:
            assert len(p["text"]) <= 1024
            assert text[p["start_char"] : p["end_char"]] == p["text"]
            assert p["text"] == p["text"].strip()
        for left, right in itertools.pairwise(passages):
            assert left["end_char"] <= right["start_char"]
            assert text[left["end_char"] : right["start_char"]].strip() == ""  # only whitespace is dropped
        assert passages[0]["start_char"] == 0 and passages[-1]["end_char"] == len(text.rstrip())
        assert np.mean([len(p["text"]) for p in passages[:-1]]) > 600  # ~1024-character passages


def test_chunk_text_argument_errors():
    with pytest.raises(ValueError, match="need chunk_size >= 1 and 0 <= chunk_overlap < chunk_size, got 10, 10"):
        chunk_text("some text", chunk_size=10, chunk_overlap=10)


def test_book_passages_carry_ids_and_book():
    passages = book_passages("bk", "one two three four five six", chunk_size=10)
    assert [p["passage_id"] for p in passages] == [f"bk:{i:05d}" for i in range(len(passages))]
    assert {p["book_id"] for p in passages} == {"bk"}


def test_a_passage_sentence_retrieves_its_passage_first(books, embedder):
    passages = [p for book_id, text in books.items() for p in book_passages(book_id, text)]
    indexes = build_book_indexes(passages, embedder, batch_size=16)
    assert set(indexes) == set(books)
    queries = []
    for p in passages:
        # the passage's own first two sentences (MiniLM reads only a passage's first 256 word pieces)
        own = " ".join(re.split(r"(?<=[.!?])\s+", p["text"])[:2])
        queries.append({"item_id": p["passage_id"], "book_id": p["book_id"], "query": own})
    results = retrieve(indexes, passages, queries, embedder, k=2)
    for query, result in zip(queries, results):
        assert result["item_id"] == query["item_id"]
        assert result["passage_ids"][0] == query["item_id"]
        assert len(result["passage_ids"]) == 2 and all(
            pid.startswith(query["book_id"]) for pid in result["passage_ids"]
        )
        assert result["scores"][0] >= result["scores"][1]
        assert -1.0001 <= result["scores"][1] <= result["scores"][0] <= 1.0001
    # one index over every book gives the same top passage here
    index, vectors = build_index(passages, embedder)
    assert vectors.shape == (len(passages), 384) and np.allclose(np.linalg.norm(vectors, axis=1), 1, atol=1e-5)
    pooled = retrieve(index, passages, queries, embedder, k=1, same_book=False)
    assert [r["passage_ids"][0] for r in pooled] == [q["item_id"] for q in queries]
    # k beyond a book's passages returns them all
    many = retrieve(indexes, passages, queries[:1], embedder, k=1000)
    assert len(many[0]["passage_ids"]) == sum(p["book_id"] == queries[0]["book_id"] for p in passages)
    with pytest.raises(ValueError, match="no index for book 'nope'; indexed books:"):
        retrieve(indexes, passages, [{"book_id": "nope", "query": "x"}], embedder)


def test_query_is_the_two_segments():
    assert query_text({"segment_a": " first part ", "segment_b": "second part"}) == "first part second part"
    assert query_text({"segment_a": "a", "segment_b": "b", "query": "custom"}) == "custom"


# --- recall and oracle passages on a hand-made book ---------------------------------------------

WORDS = [f"w{i:02d}" for i in range(60)]  # 3 characters each: 10 words fill a 39-character passage


@pytest.fixture
def hand_book():
    text = " ".join(WORDS)
    passages = book_passages("bk", text, chunk_size=40)
    assert [p["text"] for p in passages] == [" ".join(WORDS[i : i + 10]) for i in range(0, 60, 10)]
    # segment 1: words 2-5 inside passage 0; segment 2: words 28-31, split over passages 2 and 3
    item = {"item_id": "it", "book_id": "bk", "first_start": 2, "second_start": 28, "segment_length": 4}
    return text, passages, with_char_spans(item, word_char_offsets(WORDS))


def test_word_char_offsets_locate_every_word():
    text = " ".join(WORDS + ["longer", "x"])
    offsets = word_char_offsets(WORDS + ["longer", "x"])
    assert offsets.shape == (62, 2)
    assert all(text[s:e] == w for (s, e), w in zip(offsets, WORDS + ["longer", "x"]))
    assert word_char_offsets([]).shape == (0, 2)


def test_segment_spans_match_the_words(hand_book):
    text, _, item = hand_book
    first, second = segment_char_spans(item, word_char_offsets(WORDS))
    assert text[slice(*first)] == "w02 w03 w04 w05"
    assert text[slice(*second)] == "w28 w29 w30 w31"
    with pytest.raises(ValueError, match=r"item 'it': second_start=58 \+ 4 words is outside the book"):
        segment_char_spans(dict(item, second_start=58), word_char_offsets(WORDS))


def test_oracle_passages_are_those_holding_the_segments_in_text_order(hand_book):
    _, passages, item = hand_book
    other_book = [dict(p, book_id="other", passage_id="other" + p["passage_id"]) for p in passages]
    oracle = oracle_passages(item, list(reversed(passages)) + other_book)
    assert [p["passage_id"] for p in oracle] == ["bk:00000", "bk:00002", "bk:00003"]


def test_recall_at_k_counts_segments_held_entirely(hand_book):
    _, passages, item = hand_book
    by_id = {p["passage_id"]: p for p in passages}

    def recall(*ids):
        return recall_at_k(item, [by_id[f"bk:{i:05d}"] for i in ids])

    assert recall(0, 2, 3) == 1.0
    assert recall(3, 2, 0) == 1.0  # order does not matter
    assert recall(3, 0) == 0.5  # the second segment is cut in two and only half is held
    assert recall(2, 3) == 0.5
    assert recall(1, 4) == 0.0
    assert recall() == 0.0
    foreign = [dict(by_id["bk:00000"], book_id="other")]
    assert recall_at_k(item, foreign) == 0.0
    with pytest.raises(ValueError, match="item 'x' has no character spans: add them with with_char_spans"):
        recall_at_k({"item_id": "x", "book_id": "bk"}, passages)


def test_retrieval_rows_hold_rag_and_oracle_passages_with_recall(embedder, tmp_path):
    """The workflow's table: per item a ``rag`` row (top k, most similar first) and an ``oracle_rag`` row
    (the passages holding the segments, in text order), each with its recall; read back by condition."""
    book = Book("bk", "The Hand Book", list(WORDS))
    items = [
        {"item_id": "it0", "book_id": "bk", "first_start": 2, "second_start": 28, "segment_length": 4,
         "segment_a": "w02 w03 w04 w05", "segment_b": "w28 w29 w30 w31"},
        {"item_id": "it1", "book_id": "bk", "first_start": 41, "second_start": 52, "segment_length": 3,
         "segment_a": "w52 w53 w54", "segment_b": "w41 w42 w43"},
    ]  # fmt: skip
    settings = SortRetrievalSettings(embedder=PACKAGED_MINILM, chunk_size=40, k=2, batch_size=4)
    table = retrieval_rows(items, [book], settings)
    assert list(table.columns) == ["item_id", "condition", "passage_ids", "passages", "scores", "recall"]
    assert list(zip(table.item_id, table.condition)) == [
        ("it0", "rag"), ("it0", "oracle_rag"), ("it1", "rag"), ("it1", "oracle_rag")
    ]  # fmt: skip
    passages = {p["passage_id"]: p for p in book_passages("bk", " ".join(WORDS), 40)}
    offsets = word_char_offsets(WORDS)
    for item in items:
        spanned = with_char_spans(item, offsets)
        rag = table[(table.item_id == item["item_id"]) & (table.condition == "rag")].iloc[0]
        oracle = table[(table.item_id == item["item_id"]) & (table.condition == "oracle_rag")].iloc[0]
        assert len(rag.passage_ids) == 2 and list(rag.scores) == sorted(rag.scores, reverse=True)
        assert list(rag.passages) == [passages[p]["text"] for p in rag.passage_ids]
        assert rag.recall == recall_at_k(spanned, [passages[p] for p in rag.passage_ids])
        assert list(oracle.passage_ids) == [p["passage_id"] for p in oracle_passages(spanned, list(passages.values()))]
        assert list(oracle.scores) == [] and oracle.recall == 1.0
    assert list(table[(table.item_id == "it0") & (table.condition == "oracle_rag")].passage_ids.iloc[0]) == [
        "bk:00000", "bk:00002", "bk:00003"
    ]  # fmt: skip
    path = tmp_path / "retrieval.parquet"
    write_parquet(path, table)
    for condition in ("rag", "oracle_rag"):
        rows = table[table.condition == condition]
        assert read_passages(path, condition) == {i: list(p) for i, p in zip(rows.item_id, rows.passages)}


# --- the paper's database: passages of all books, cut from the text with its paragraph breaks ----------

SEA = (
    "The harbour woke before dawn. Fishermen coiled their nets and argued about the tide.\n\n"
    "Out past the breakwater the sea was grey and heavy, and the gulls circled the trawlers.\n\n"
    "By noon the boats came back low in the water, their holds full of herring and cod.\n\n"
    "In the evening the sailors sang in the tavern by the quay until the lamps burned out."
)
MOUNTAIN = (
    "The climbers left the hut at first light, roped together on the frozen glacier.\n\n"
    "Above the icefall the ridge narrowed to a blade of snow between two cliffs.\n\n"
    "At the summit the wind was so strong that they stayed only a minute.\n\n"
    "They came down through the pine forest at dusk, tired, to the village in the valley."
)


def _item(book: Book, item_id: str, first: int, second: int, length: int) -> dict:
    words = book.words
    return {
        "item_id": item_id, "book_id": book.book_id, "first_start": first, "second_start": second,
        "segment_length": length, "segment_a": " ".join(words[first : first + length]),
        "segment_b": " ".join(words[second : second + length]),
    }  # fmt: skip


def test_book_text_keeps_paragraph_breaks_and_round_trips():
    from knowlab.sort.books import book_from_text
    from knowlab.sort.steps.data import books_from_records, books_records

    book = book_from_text("sea", "The Sea", "CHAPTER I\n\n" + SEA + "\n", "sea.txt", gutenberg=False)
    assert book.text == SEA and book.words == SEA.split() and book.passage_text == SEA
    (record,) = books_records([book])
    assert record["text"] == SEA and books_from_records([record]) == [book]
    assert books_from_records([record])[0].text == SEA
    bare = Book("bare", "Bare", SEA.split())  # a book known only by its words
    assert bare.passage_text == " ".join(SEA.split())
    with pytest.raises(ValueError, match=r"book 'bad': text\.split\(\) differs from words"):
        _ = Book("bad", "Bad", ["x"], text="y").passage_text


def test_word_offsets_and_recall_in_a_text_with_paragraph_breaks():
    words = SEA.split()
    offsets = word_char_offsets(words, SEA)
    assert all(SEA[s:e] == w for (s, e), w in zip(offsets, words))
    with pytest.raises(ValueError, match=r"text\.split\(\) differs from the book's words"):
        word_char_offsets(words[:-1], SEA)
    passages = book_passages("sea", SEA, chunk_size=100)
    assert len(passages) == 4 and all("\n" not in p["text"] for p in passages)  # one paragraph each
    # a segment across the first paragraph break: held only when both paragraphs are retrieved
    first = len(passages[0]["text"].split()) - 2
    item = with_char_spans(_item(Book("sea", "Sea", words, SEA), "it", first, 30, 4), offsets)
    assert recall_at_k(item, passages[:2], text=SEA) == 0.5  # "\n\n" between them is whitespace only
    assert recall_at_k(item, passages[:1], text=SEA) == 0.0
    assert recall_at_k(item, passages[:2]) == 0.0  # without the text, the 2-character gap exceeds max_gap 1


@pytest.mark.parametrize("scope", ["all_books", "same_book"])
def test_retrieval_scope_searches_all_books_or_the_items_own(embedder, scope):
    """``all_books`` (the paper's): one index over both books, an item's top k from either; ``same_book``:
    only its own book's passages.  Passages keep the text's paragraph breaks."""
    books = [Book("sea", "The Sea", SEA.split(), SEA), Book("mountain", "The Mountain", MOUNTAIN.split(), MOUNTAIN)]
    items = [_item(books[0], "sea0", 2, 40, 5), _item(books[1], "mountain0", 1, 35, 5)]
    # 200-character passages: two paragraphs each, joined by their paragraph break; k = 3 > 2 passages a book
    settings = SortRetrievalSettings(embedder=PACKAGED_MINILM, chunk_size=200, k=3, batch_size=8, scope=scope)
    table = retrieval_rows(items, books, settings)
    rag = table[table.condition == "rag"].set_index("item_id")
    for item in items:
        found = list(rag.loc[item["item_id"], "passage_ids"])
        from_books = {pid.split(":")[0] for pid in found}
        if scope == "all_books":
            assert len(found) == 3 and from_books == {"sea", "mountain"}
            assert found[0].startswith(item["book_id"])  # its own book's passage is the most similar
        else:
            assert len(found) == 2 and from_books == {item["book_id"]}
        assert rag.loc[item["item_id"], "recall"] == 1.0  # both passages of the own book are retrieved
    assert all("\n\n" in text for texts in table.passages for text in texts)
    with pytest.raises(ValueError, match=r"sort\.rag\.scope must be one of \('all_books', 'same_book'\), got 'nearby'"):
        SortRetrievalSettings(embedder=PACKAGED_MINILM, chunk_size=200, k=3, batch_size=8, scope="nearby")

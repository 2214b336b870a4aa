"""SORT with retrieval-augmented memory: Book-SORT passages, queries, search, recall and oracle passages.

The pipeline of the paper ("Assessing Episodic Memory in LLMs with Sequence Order Recall
Tasks", Sec. 3.2 "Retrieval Augmented Generation", App. B.4.1):

- each book's text, paragraph breaks included (:attr:`knowlab.sort.books.Book.passage_text`),
  is cut into ~1024-character, non-overlapping passages with LangChain's recursive character
  splitter, which splits at paragraph breaks first (:func:`chunk_text`, :func:`book_passages`);
- passages are embedded with a sentence embedder (BGE-v1.5 in the paper, selectable by Hub
  id; the embedded default is the packaged all-MiniLM-L6-v2,
  :func:`knowlab.core.retrieval.load_embedder`) and searched exactly by cosine similarity
  (faiss ``IndexFlatIP`` on L2-normalised vectors, :func:`knowlab.core.retrieval.build_index`)
  in one database of the passages of all books (``sort.rag.scope: all_books``, the paper's),
  or, with ``same_book``, in one index per book (:func:`build_book_indexes`);
- the query is the segment text alone (App. B.4.1, Table 8: the best of 10 queries); the two
  segments are joined into one query, ``segment_a + " " + segment_b``
  (:func:`query_text`); the ``k = 2`` nearest passages are put into the prompt most similar
  first (:func:`retrieve`).  Under ``all_books`` they may come from any book; only those of
  the item's own book can hold its segments.
- oracle RAG (Sec. 5.5, Fig. 4b): the passages that hold the two segments, in text order
  (:func:`oracle_passages`); :func:`recall_at_k` measures how much of the two segments
  the retrieved passages hold (App. B.4.1, Table 8).
- :func:`retrieval_rows`: the RAG and oracle-RAG passages of every item with recall@k, the
  table the workflow writes; :func:`read_passages` reads one condition back for the prompts.

Character offsets: a book's text is the string whose ``str.split()`` gives the words
whose indices are the items' ``first_start`` / ``second_start`` (``" ".join(words)`` for a
book without its text); chunk exactly that string so that :func:`word_char_offsets` maps
word offsets to the passages' character offsets.
"""

from __future__ import annotations

import bisect
import logging
import os
import re
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from knowlab.core.io import read_parquets
from knowlab.core.retrieval import build_index, embed, load_embedder, search
from knowlab.sort.books import Book
from knowlab.sort.settings import RAG_SCOPES, SortRetrievalSettings

log = logging.getLogger(__name__)

#: ``sort.rag.scope``: one database of all books' passages (the paper's, Sec. 3.2) or one per book
SCOPES = RAG_SCOPES


def chunk_text(text: str, chunk_size: int = 1024, chunk_overlap: int = 0) -> list[dict[str, Any]]:
    """Cut ``text`` into passages with ``RecursiveCharacterTextSplitter(add_start_index=True)`` (paper Sec. 3.2).

    The splitter tries paragraph, line, word and character breaks in turn, so that each
    passage has at most ``chunk_size`` characters; passages are stripped of surrounding
    whitespace.

    Returns:
        ``[{"start_char", "end_char", "text"}, ...]`` in text order, with
        ``text == source[start_char:end_char]`` (end exclusive).

    Raises:
        ValueError: ``chunk_size < 1`` or ``chunk_overlap`` outside ``[0, chunk_size)``; or a
            passage that the splitter places where the text does not hold it.
    """
    # deferred: langchain's splitter only in the job that cuts the books into passages
    from langchain_text_splitters import RecursiveCharacterTextSplitter

    if chunk_size < 1 or not 0 <= chunk_overlap < chunk_size:
        raise ValueError(f"need chunk_size >= 1 and 0 <= chunk_overlap < chunk_size, got {chunk_size}, {chunk_overlap}")
    splitter = RecursiveCharacterTextSplitter(chunk_size=chunk_size, chunk_overlap=chunk_overlap, add_start_index=True)
    out = []
    for doc in splitter.create_documents([text]):
        start = int(doc.metadata["start_index"])
        end = start + len(doc.page_content)
        if start < 0 or text[start:end] != doc.page_content:
            raise ValueError(f"splitter offset {start} does not locate passage {doc.page_content[:40]!r}")
        out.append({"start_char": start, "end_char": end, "text": doc.page_content})
    return out


def book_passages(book_id: str, text: str, chunk_size: int = 1024, chunk_overlap: int = 0) -> list[dict[str, Any]]:
    """Passages of one book: :func:`chunk_text` plus ``passage_id`` (``"<book_id>:<index, 5 digits>"``) and ``book_id``.

    Returns:
        ``[{"passage_id", "book_id", "start_char", "end_char", "text"}, ...]`` in text order.
    """
    return [
        {"passage_id": f"{book_id}:{i:05d}", "book_id": book_id, **p}
        for i, p in enumerate(chunk_text(text, chunk_size, chunk_overlap))
    ]


def build_book_indexes(passages: Sequence[Mapping[str, Any]], embedder, batch_size: int = 32) -> dict[str, Any]:
    """One :func:`knowlab.core.retrieval.build_index` per book: ``{book_id: faiss index}``, rows in the order
    the book's passages have in ``passages``."""
    by_book: dict[str, list[Mapping[str, Any]]] = {}
    for p in passages:
        by_book.setdefault(p["book_id"], []).append(p)
    return {book_id: build_index(group, embedder, batch_size)[0] for book_id, group in by_book.items()}


def query_text(item: Mapping[str, Any]) -> str:
    """The search query of an item: its ``query`` if set, else ``segment_a + " " + segment_b``
    (paper App. B.4.1, query 8)."""
    if item.get("query"):
        return str(item["query"])
    return f"{str(item['segment_a']).strip()} {str(item['segment_b']).strip()}"


def retrieve(
    index,
    passages: Sequence[Mapping[str, Any]],
    queries: Sequence[Mapping[str, Any]],
    embedder,
    k: int = 2,
    same_book: bool = True,
    batch_size: int = 32,
) -> list[dict[str, Any]]:
    """Top-``k`` passages for each query, most similar first (paper Sec. 3.2, App. B.4.1).

    Args:
        index: with ``same_book``, ``{book_id: faiss index}`` from :func:`build_book_indexes`
            over ``passages``; otherwise one faiss index over all ``passages`` in order
            (:func:`knowlab.core.retrieval.build_index`).
        passages: the indexed passages (dicts with ``passage_id``, ``book_id``, ``text``).
        queries: SORT items (``book_id``, ``segment_a``, ``segment_b``, optional ``item_id``),
            or dicts with ``book_id`` and a ``query`` text; see :func:`query_text`.
        embedder: the embedder the index was built with.
        k: passages per query (fewer if the book has fewer).
        same_book: search only the query's own book.

    Returns:
        one ``{"item_id", "passage_ids", "scores"}`` per query, in order; ``scores`` are
        cosine similarities, descending.

    Raises:
        ValueError: ``k < 1``; with ``same_book``, a query whose book has no index, or an
            index that is not a mapping.
    """
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    if same_book and not isinstance(index, Mapping):
        raise ValueError("same_book retrieval needs {book_id: index} from build_book_indexes")
    if not queries:
        return []
    vectors = embed([query_text(q) for q in queries], embedder, batch_size)
    if same_book:
        rows_of: dict[str, list[Mapping[str, Any]]] = {}
        for p in passages:
            rows_of.setdefault(p["book_id"], []).append(p)
        groups: dict[str, list[int]] = {}
        for i, q in enumerate(queries):
            if q["book_id"] not in index:
                raise ValueError(f"no index for book {q['book_id']!r}; indexed books: {sorted(index)}")
            groups.setdefault(q["book_id"], []).append(i)
        searches = [(index[book], rows_of.get(book, []), members) for book, members in groups.items()]
    else:
        searches = [(index, list(passages), list(range(len(queries))))]
    out: list[dict[str, Any] | None] = [None] * len(queries)
    for book_index, rows, members in searches:
        for i, found in zip(members, search(book_index, vectors[members], k), strict=True):
            out[i] = {
                "item_id": queries[i].get("item_id"),
                "passage_ids": [rows[j]["passage_id"] for j, _ in found],
                "scores": [s for _, s in found],
            }
    return out  # type: ignore[return-value]


def word_char_offsets(book_words: Sequence[str], text: str | None = None) -> np.ndarray:
    """Character span of each word in ``text``, or in ``" ".join(book_words)`` without it.

    Args:
        book_words: the book's words (``text.split()``).
        text: the book text the passages were cut from (paragraph breaks kept).

    Returns:
        int64 array of shape ``(n_words, 2)``: ``[start, end)`` of word ``i``.

    Raises:
        ValueError: ``text.split()`` differs from ``book_words``.
    """
    if text is not None:
        matches = list(re.finditer(r"\S+", text))
        if len(matches) != len(book_words) or any(m.group() != w for m, w in zip(matches, book_words, strict=True)):
            raise ValueError("text.split() differs from the book's words")
        return np.array([m.span() for m in matches], dtype=np.int64).reshape(len(matches), 2)
    lengths = np.fromiter((len(w) for w in book_words), dtype=np.int64, count=len(book_words))
    starts = np.zeros(len(lengths), dtype=np.int64)
    if len(lengths):
        starts[1:] = np.cumsum(lengths[:-1] + 1)
    return np.stack([starts, starts + lengths], axis=1)


def segment_char_spans(item: Mapping[str, Any], offsets: np.ndarray) -> tuple[tuple[int, int], tuple[int, int]]:
    """Character spans ``[start, end)`` of the item's first and second segment in the book text.

    Uses the word offsets ``first_start``, ``second_start`` and ``segment_length`` (words)
    of the item, and :func:`word_char_offsets` of its book.

    Raises:
        ValueError: a segment that runs past the end of the book.
    """
    spans = []
    for key in ("first_start", "second_start"):
        start, length = int(item[key]), int(item["segment_length"])
        if start < 0 or length < 1 or start + length > len(offsets):
            raise ValueError(f"item {item.get('item_id')!r}: {key}={start} + {length} words is outside the book")
        spans.append((int(offsets[start, 0]), int(offsets[start + length - 1, 1])))
    return spans[0], spans[1]


def with_char_spans(item: Mapping[str, Any], offsets: np.ndarray) -> dict[str, Any]:
    """A copy of ``item`` with ``first_char_start``, ``first_char_end``, ``second_char_start``, ``second_char_end``."""
    (a, b), (c, d) = segment_char_spans(item, offsets)
    return {**item, "first_char_start": a, "first_char_end": b, "second_char_start": c, "second_char_end": d}


def _item_spans(item: Mapping[str, Any]) -> list[tuple[int, int]]:
    keys = ("first_char_start", "first_char_end", "second_char_start", "second_char_end")
    if any(key not in item for key in keys):
        raise ValueError(f"item {item.get('item_id')!r} has no character spans: add them with with_char_spans")
    return [(int(item[keys[0]]), int(item[keys[1]])), (int(item[keys[2]]), int(item[keys[3]]))]


def _same_book(item: Mapping[str, Any], passages: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The passages of the item's book, by start offset (all of them when passages carry no ``book_id``)."""
    own = [p for p in passages if p.get("book_id", item.get("book_id")) == item.get("book_id")]
    return sorted(own, key=lambda p: p["start_char"])


def recall_at_k(
    item: Mapping[str, Any],
    retrieved_passages: Sequence[Mapping[str, Any]],
    max_gap: int = 1,
    text: str | None = None,
) -> float:
    """Fraction (0, 0.5 or 1) of the item's two segments that the retrieved passages hold entirely (App. B.4.1).

    A segment counts when its character span lies inside the union of the retrieved passages
    of the item's book (passages of other books never count), where two passages are joined
    when only whitespace separates them in ``text``, the item's book text, or, without
    ``text``, when at most ``max_gap`` characters do (in ``" ".join(words)`` consecutive
    passages are separated by one space).  So a segment split across two adjacent passages
    counts when both are retrieved.

    Args:
        item: a SORT item with character spans (:func:`with_char_spans`) and ``book_id``.
        retrieved_passages: passage dicts (``start_char``, ``end_char``, ``book_id``), e.g.
            the top ``k`` of :func:`retrieve`, looked up by id.
        max_gap: characters between joined passages, when ``text`` is not given.
        text: the text the item's book passages were cut from.

    Raises:
        ValueError: the item has no character spans.
    """
    spans = _item_spans(item)
    merged: list[list[int]] = []
    for p in _same_book(item, retrieved_passages):
        start, end = int(p["start_char"]), int(p["end_char"])
        if merged and (
            text[merged[-1][1] : start].strip() == "" if text is not None else start - merged[-1][1] <= max_gap
        ):
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    starts = [m[0] for m in merged]
    held = 0
    for s, e in spans:
        j = bisect.bisect_right(starts, s) - 1
        held += j >= 0 and merged[j][1] >= e
    return held / len(spans)


def oracle_passages(item: Mapping[str, Any], passages: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The passages of the item's book that overlap either segment, in text order (oracle RAG, paper Fig. 4b).

    Raises:
        ValueError: the item has no character spans (:func:`with_char_spans`).
    """
    spans = _item_spans(item)
    return [p for p in _same_book(item, passages) if any(p["start_char"] < e and s < p["end_char"] for s, e in spans)]


# --------------------------------------------------------------------------- the workflow's retrieval table


def retrieval_rows(
    items: Sequence[Mapping[str, Any]], books: Sequence[Book], settings: SortRetrievalSettings
) -> pd.DataFrame:
    """RAG and oracle-RAG passages for every item, with retrieval recall@k (paper Sec. 3.2, App. B.4.1).

    Passages are cut from each book's text with its paragraph breaks
    (:attr:`~knowlab.sort.books.Book.passage_text`).  With ``scope: all_books`` (the paper's)
    one index holds the passages of all ``books`` and an item's top ``k`` come from any of
    them; with ``same_book`` each item searches only its own book's passages.

    Args:
        items: SORT items (:func:`knowlab.sort.build.build_items`).
        books: the books they were built from (with ``all_books``, every one is searched).
        settings: ``sort.rag``: ``embedder`` (``packaged:all-MiniLM-L6-v2`` or a Hub id / path),
            ``chunk_size`` (characters), ``k``, ``batch_size``, ``scope`` (:data:`SCOPES`).

    Returns:
        one row per (item, condition) with ``condition`` in ``rag`` / ``oracle_rag``,
        ``passage_ids`` (``"<book_id>:<index>"``), ``passages`` (texts, in prompt order: most
        similar first for RAG, text order for the oracle), ``scores`` (cosine; empty for the
        oracle) and ``recall`` (fraction of the two segments the passages hold: 0, 0.5 or 1).

    Raises:
        ValueError: a book whose text does not split into its words (an unknown ``scope`` fails
            building ``settings``).
    """
    scope = settings.scope
    texts = {b.book_id: b.passage_text for b in books}
    for book_id, text in texts.items():
        if "\n" not in text:
            log.warning("book %s has no line breaks: passages are cut from its words joined by spaces", book_id)
    passages = [p for b in books for p in book_passages(b.book_id, texts[b.book_id], settings.chunk_size)]
    by_id = {p["passage_id"]: p for p in passages}
    offsets = {b.book_id: word_char_offsets(b.words, texts[b.book_id]) for b in books}
    spanned = [with_char_spans(item, offsets[item["book_id"]]) for item in items]
    embedder = load_embedder(settings.embedder)
    log.info(
        "%d passages of %d books (scope %s); embedding with %s", len(passages), len(books), scope, settings.embedder
    )
    if scope == "same_book":
        index = build_book_indexes(passages, embedder, settings.batch_size)
    else:
        index = build_index(passages, embedder, settings.batch_size)[0]
    found = retrieve(
        index, passages, spanned, embedder, k=settings.k, same_book=scope == "same_book", batch_size=settings.batch_size
    )
    rows = []
    for item, hit in zip(spanned, found, strict=True):
        retrieved = [by_id[p] for p in hit["passage_ids"]]
        oracle = oracle_passages(item, passages)
        for condition, chosen, scores in (("rag", retrieved, hit["scores"]), ("oracle_rag", oracle, [])):
            rows.append(
                {
                    "item_id": item["item_id"],
                    "condition": condition,
                    "passage_ids": [p["passage_id"] for p in chosen],
                    "passages": [p["text"] for p in chosen],
                    "scores": list(scores),
                    "recall": recall_at_k(item, chosen, text=texts[item["book_id"]]),
                }
            )
    table = pd.DataFrame(rows)
    log.info("retrieval recall@%d (%s): %.3f", settings.k, scope, table.loc[table.condition == "rag", "recall"].mean())
    return table


def read_passages(retrieval_path: str | os.PathLike, condition: str) -> dict[str, list[str]]:
    """Passages by item id for one RAG condition (``rag`` / ``oracle_rag``), in prompt order,
    from the table :func:`retrieval_rows` wrote (one row per item and condition; were an item id
    to repeat within the condition, its last row would win).
    """
    table = read_parquets([retrieval_path])
    table = table[table.condition == condition]
    return dict(zip(table.item_id, table.passages.map(list), strict=True))

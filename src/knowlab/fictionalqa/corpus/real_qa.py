"""Real-world factual Q&A: the control that fine-tuning on fiction teaches no real facts.

Source: FictionalQA (Kirchenbauer et al. 2026), Sec. 4 (Fig. 6), App. C.7 and D.2:
the paper measures ``nll(answer | question)`` on the validation subset of TriviaQA (Joshi
et al., 2017), each pair templated as ``"Question: <question> Answer: <answer>"``, and
finds no improvement from training on fictional documents.

Two sources give the same records (config ``real_qa``, :func:`load_real_qa`):

- ``shipped``: ``data/real_qa/real_qa.jsonl``, 140 questions about stable, well-known
  facts written for this project (offline default; see ``data/real_qa/README.md``);
- ``triviaqa``: TriviaQA from the Hugging Face Hub (``mandarjoshi/trivia_qa``, config
  ``rc.nocontext``, split ``validation``) via ``datasets.load_dataset``, optionally a
  seeded subsample.

Every loader returns records ``{"question_id", "question", "answer", "aliases",
"source"}``: strings, except ``aliases`` (a list of strings, possibly empty), with
``source`` either ``"shipped"`` or ``"triviaqa"``.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from knowlab.core.io import DataError, iter_jsonl_numbered
from knowlab.core.models import hub_error, pinned_hub_id
from knowlab.fictionalqa.settings import RealQASettings
from knowlab.core.rng import keyed_rng

SOURCES = ("shipped", "triviaqa")
SHIPPED_FIELDS = ("question_id", "question", "answer", "aliases", "topic")
SHIPPED_ID_RE = re.compile(r"^real_\d{3,}$")


def validate_shipped_record(record: Mapping[str, Any], where: str) -> None:
    """Check one line of the shipped file; ``where`` ("file:line") prefixes every error.

    A record is ``{"question_id": "real_<nnn>", "question": str, "answer": str,
    "aliases": [str, ...], "topic": str}`` with non-empty strings.

    Raises:
        DataError: a field is missing, empty or mistyped, or the id is not ``real_<nnn>``.
    """
    for field in SHIPPED_FIELDS:
        if field not in record:
            raise DataError(f"{where}: real_qa record is missing required field {field!r}")
        value = record[field]
        if field == "aliases":
            if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
                raise DataError(f"{where}: field 'aliases' must be a list of non-empty strings")
        elif not isinstance(value, str) or not value.strip():
            raise DataError(f"{where}: field {field!r} must be a non-empty string")
    if not SHIPPED_ID_RE.match(record["question_id"]):
        raise DataError(f"{where}: malformed question_id {record['question_id']!r} (expected real_<nnn>)")


def load_shipped(path: str | os.PathLike) -> list[dict[str, Any]]:
    """Read and validate the shipped real-world Q&A file (JSONL, one question a line).

    Returns:
        The records in file order, as ``{question_id, question, answer, aliases,
        source="shipped"}`` (``topic`` is checked but not returned).

    Raises:
        FileNotFoundError: ``path`` does not exist.
        DataError: malformed JSON, a record failing :func:`validate_shipped_record`, or a
            duplicate ``question_id``; the message names the file and line.
    """
    records = []
    first_seen: dict[str, int] = {}
    for lineno, record in iter_jsonl_numbered(path):
        where = f"{path}:{lineno}"
        validate_shipped_record(record, where)
        qid = record["question_id"]
        if qid in first_seen:
            raise DataError(f"{where}: duplicate question_id {qid!r} (first at line {first_seen[qid]})")
        first_seen[qid] = lineno
        records.append(
            {
                "question_id": qid,
                "question": record["question"],
                "answer": record["answer"],
                "aliases": list(record["aliases"]),
                "source": "shipped",
            }
        )
    return records


def triviaqa_records(rows: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Map TriviaQA rows to real-Q&A records (pure; no download).

    A row (``mandarjoshi/trivia_qa``, any config) has ``question``, ``question_id`` and
    ``answer = {"value", "aliases", "normalized_value", ...}``; the answer is ``value``
    and the aliases are ``answer["aliases"]``.  Questions and answers are stripped of
    surrounding whitespace.  ``rows`` may be a ``datasets.Dataset`` or any iterable of
    mappings.

    Returns:
        ``{question_id, question, answer, aliases, source="triviaqa"}`` per row, in row order.

    Raises:
        DataError: a row lacks one of those fields, or has an empty question or answer
            (the message gives the 0-based row number).
    """
    records = []
    for i, row in enumerate(rows):
        try:
            record = {
                "question_id": row["question_id"],
                "question": row["question"].strip(),
                "answer": row["answer"]["value"].strip(),
                "aliases": list(row["answer"]["aliases"]),
                "source": "triviaqa",
            }
        except (KeyError, TypeError, AttributeError) as err:
            raise DataError(f"TriviaQA row {i}: missing or mistyped field ({err!r})") from None
        if not record["question"] or not record["answer"]:
            raise DataError(f"TriviaQA row {i} ({record['question_id']}): empty question or answer")
        records.append(record)
    return records


def subsample(records: list[dict[str, Any]], n: int | None, seed: int) -> list[dict[str, Any]]:
    """A seeded subsample of ``n`` records, returned in ``question_id`` order.

    The records are sorted by ``question_id`` first, so the choice does not depend on the
    order they came in; the indices are drawn with ``keyed_rng(seed, "real_qa")``.
    ``n=None`` or ``n >= len(records)`` keeps every record (sorted).
    """
    ordered = sorted(records, key=lambda record: record["question_id"])
    if n is None or n >= len(ordered):
        return ordered
    picked = sorted(keyed_rng(seed, "real_qa").sample(range(len(ordered)), n))
    return [ordered[i] for i in picked]


def load_triviaqa(
    hub_id: str = "mandarjoshi/trivia_qa",
    config: str = "rc.nocontext",
    split: str = "validation",
    n: int | None = None,
    seed: int = 0,
    revision: str | None = None,
) -> list[dict[str, Any]]:
    """Load TriviaQA from the Hugging Face Hub (Kirchenbauer et al. 2026, App. C.7: validation split).

    Calls ``datasets.load_dataset(hub_id, config, split=split, revision=revision)``
    (network or a populated Hub cache needed), maps rows with :func:`triviaqa_records`
    and keeps a :func:`subsample` of ``n`` (all when ``None``).  ``rc.nocontext`` is the
    reading-comprehension subset without its evidence documents (questions and answers
    only); pin ``revision`` (config ``real_qa.triviaqa.revision``, or ``hub_id`` written
    ``"<id>@<commit>"``) to a commit hash for reproducibility: an unpinned id is a WARNING
    in the rule log and a manifest note (:func:`knowlab.core.models.note_hub_revision`).

    Returns:
        Records ``{question_id, question, answer, aliases, source="triviaqa"}`` in
        ``question_id`` order.

    Raises:
        knowlab.core.models.HubUnreachableError: the Hub could not be reached, or has no such
            dataset or revision (names ``real_qa.triviaqa.hub_id``, the id and the revision).
        ValueError: conflicting revisions.
        DataError: as :func:`triviaqa_records`.
    """
    # deferred: the datasets library only when the config names a Hub dataset
    import datasets

    key = "real_qa.triviaqa.hub_id"
    hub_id, revision = pinned_hub_id(hub_id, revision, key)
    try:
        rows = datasets.load_dataset(hub_id, config, split=split, revision=revision)
    except OSError as err:  # connection errors and "dataset not found" are OSErrors
        raise hub_error(key, hub_id, revision, err) from err
    return subsample(triviaqa_records(rows), n, seed)


def load_real_qa(settings: RealQASettings, basedir: str | os.PathLike = ".", seed: int = 0) -> list[dict[str, Any]]:
    """Load the configured real-world Q&A (config ``real_qa``: ``settings``).

    ``settings.shipped`` is a path relative to ``basedir``; missing ``settings.triviaqa`` keys
    (``hub_id``, ``config``, ``split``, ``n``, ``revision``) take :func:`load_triviaqa`'s defaults;
    ``seed`` keys the TriviaQA subsample.

    Raises:
        DataError, FileNotFoundError: as raised by the loaders.
    """
    if settings.source == "shipped":
        return load_shipped(Path(basedir) / settings.shipped)
    return load_triviaqa(**(settings.triviaqa or {}), seed=seed)

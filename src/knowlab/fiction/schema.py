"""The FictionalQA release schema (Kirchenbauer et al. 2026, Sec. 3 and App. C).

Four tables, one record per line of a JSONL file:

============  ==============================================================
seeds         ``event_id``, ``seed``
fictsheets    ``event_id``, ``fictsheet`` (text), ``entities``, ``events``,
              ``locations``, ``times``, ``reasons`` (lists of strings)
fictions      ``event_id``, ``fiction_id``, ``style``, ``fiction`` (text)
fict_qa       ``event_id``, ``fiction_id``, ``question_id``, ``fict``,
              ``question``, ``span_answer``, ``natural_answer``
============  ==============================================================

Ids are composite keys (App. C): ``event_000``, ``event_000_style_news_num_000``,
``event_000_style_news_num_000_question_000``.  Styles: news, social,
encyclopedia, corporate, blog.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from knowlab.core.io import DataError, iter_jsonl_numbered, write_jsonl

STYLES = ("news", "social", "encyclopedia", "corporate", "blog")
TABLES = ("seeds", "fictsheets", "fictions", "fict_qa")
FICTSHEET_FIELDS = ("entities", "events", "locations", "times", "reasons")

REQUIRED: dict[str, tuple[str, ...]] = {
    "seeds": ("event_id", "seed"),
    "fictsheets": ("event_id", "fictsheet", *FICTSHEET_FIELDS),
    "fictions": ("event_id", "fiction_id", "style", "fiction"),
    "fict_qa": ("event_id", "fiction_id", "question_id", "fict", "question", "span_answer", "natural_answer"),
}
LIST_FIELDS = set(FICTSHEET_FIELDS)

EVENT_RE = re.compile(r"^event_(\d+)$")
FICTION_RE = re.compile(r"^(event_\d+)_style_([a-z]+)_num_(\d+)$")
QUESTION_RE = re.compile(r"^(event_\d+_style_[a-z]+_num_\d+)_question_(\d+)$")


def validate_record(table: str, record: Mapping[str, Any], where: str) -> None:
    """Check one record of ``table``; ``where`` ("file:line") prefixes every error.

    Raises:
        DataError: a required field is missing, empty or mistyped, or an id is malformed
            or inconsistent with its parent id.
    """
    if table not in REQUIRED:
        raise ValueError(f"unknown table {table!r}; expected one of {TABLES}")
    for field in REQUIRED[table]:
        if field not in record:
            raise DataError(f"{where}: {table} record is missing required field {field!r}")
        value = record[field]
        if field in LIST_FIELDS:
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                raise DataError(f"{where}: field {field!r} must be a list of strings")
        elif not isinstance(value, str) or not value.strip():
            raise DataError(f"{where}: field {field!r} must be a non-empty string")
    if not EVENT_RE.match(record["event_id"]):
        raise DataError(f"{where}: malformed event_id {record['event_id']!r} (expected event_<i>)")
    if "fiction_id" in record:
        match = FICTION_RE.match(record["fiction_id"])
        if not match:
            raise DataError(
                f"{where}: malformed fiction_id {record['fiction_id']!r} (expected event_<i>_style_<s>_num_<j>)"
            )
        if match.group(1) != record["event_id"]:
            raise DataError(f"{where}: fiction_id {record['fiction_id']!r} does not belong to {record['event_id']!r}")
        if match.group(2) not in STYLES:
            raise DataError(
                f"{where}: unknown style {match.group(2)!r} in {record['fiction_id']!r}; styles are {STYLES}"
            )
        if table == "fictions" and record["style"] != match.group(2):
            raise DataError(f"{where}: style {record['style']!r} disagrees with fiction_id {record['fiction_id']!r}")
    if table == "fict_qa":
        match = QUESTION_RE.match(record["question_id"])
        if not match or match.group(1) != record["fiction_id"]:
            raise DataError(
                f"{where}: question_id {record['question_id']!r} is not <fiction_id>_question_<k> of {record['fiction_id']!r}"
            )


def validate_corpus(tables: Mapping[str, list[dict[str, Any]]], source: str = "corpus") -> None:
    """Check ids are unique and every child points to an existing parent.

    Raises:
        DataError: duplicate ids, an orphan fiction or question, or an event without a fictsheet.
    """
    events = {r["event_id"] for r in tables["seeds"]}
    keys = {"seeds": "event_id", "fictsheets": "event_id", "fictions": "fiction_id", "fict_qa": "question_id"}
    for table, key in keys.items():
        seen: set[str] = set()
        for record in tables[table]:
            if record[key] in seen:
                raise DataError(f"{source}: duplicate {key} {record[key]!r} in {table}")
            seen.add(record[key])
    sheets = {r["event_id"] for r in tables["fictsheets"]}
    fictions = {r["fiction_id"] for r in tables["fictions"]}
    for record in tables["fictions"]:
        if record["event_id"] not in events:
            raise DataError(f"{source}: fiction {record['fiction_id']!r} has no seed {record['event_id']!r}")
        if record["event_id"] not in sheets:
            raise DataError(f"{source}: event {record['event_id']!r} has no fictsheet")
    for record in tables["fict_qa"]:
        if record["fiction_id"] not in fictions:
            raise DataError(
                f"{source}: question {record['question_id']!r} refers to missing fiction {record['fiction_id']!r}"
            )


def read_table(path: str | Path, table: str, allow_empty: bool = False) -> list[dict[str, Any]]:
    """Read and validate one JSONL table; errors name the file and line.

    Raises:
        DataError: a malformed line or record, or (unless ``allow_empty``) a file with no record.
    """
    records = []
    for lineno, record in iter_jsonl_numbered(path, allow_empty=allow_empty):
        validate_record(table, record, f"{path}:{lineno}")
        records.append(record)
    return records


def read_corpus(folder: str | Path, allow_empty: Sequence[str] = ()) -> dict[str, list[dict[str, Any]]]:
    """Read ``<folder>/{seeds,fictsheets,fictions,fict_qa}.jsonl`` and validate them together; an empty
    table fails naming its file unless it is in ``allow_empty``."""
    folder = Path(folder)
    tables = {table: read_table(folder / f"{table}.jsonl", table, table in allow_empty) for table in TABLES}
    validate_corpus(tables, source=str(folder))
    return tables


def write_corpus(folder: str | Path, tables: Mapping[str, list[dict[str, Any]]]) -> None:
    """Write the four tables as JSONL under ``folder`` (atomically, one file each)."""
    for table in TABLES:
        write_jsonl(Path(folder) / f"{table}.jsonl", tables[table])

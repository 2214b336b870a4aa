"""Load the FictionalQA corpus: the raw pipeline output or the released dataset.

Source: FictionalQA (Kirchenbauer et al. 2026), Sec. 3 and App. C; the authors'
pipeline (github.com/jwkirchenbauer/fictionalqa, ``pipeline/``) and its Hub ETL
(``etl_nbs_and_scripts/e2e_pipeline_hf_hub_etl.ipynb``), released as the Hugging Face
dataset ``tomg-group-umd/fictionalqa``.

Two inputs give the same four tables of :mod:`knowlab.fiction.schema`:

* :func:`load_batch_results` reads a pipeline output folder in OpenAI Batch API result
  format (``<folder>/batch_results/{seeds,fictsheets,fictions,fict_qa}.jsonl``);
* :func:`load_release_folder` reads the released dataset in its Hub layout
  (``<folder>/<config>/*.parquet``), or flat ``<config>.jsonl`` / ``<config>.parquet`` files.

:func:`load_release` is the config switch between them (and :func:`download_release`).
Every record is checked with :func:`~knowlab.fiction.schema.validate_record` and the
tables together with :func:`~knowlab.fiction.schema.validate_corpus`.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import yaml

from knowlab.core.io import DataError, iter_jsonl_numbered
from knowlab.core.models import hub_error, pinned_hub_id, split_revision
from knowlab.fiction.schema import (
    EVENT_RE,
    FICTION_RE,
    FICTSHEET_FIELDS,
    QUESTION_RE,
    TABLES,
    validate_corpus,
    validate_record,
)

log = logging.getLogger(__name__)

QA_FIELDS = ("fict", "question", "span_answer", "natural_answer")

#: the release's size (Kirchenbauer et al. 2026, Sec. 3 and App. C): 100 seed events, each written as
#: documents of five styles (per event: the paper's generation, ``config/paper.yaml``'s
#: ``fiction.generate.styles``), about 5 questions a document; what the design planner
#: (:mod:`knowlab.findings.planner`) and the capacity plan count before the release is fetched
RELEASE_EVENTS = 100
RELEASE_STYLES = {"news": 5, "social": 3, "encyclopedia": 2, "corporate": 3, "blog": 2}
RELEASE_QUESTIONS_PER_DOCUMENT = 5

# Key spellings the authors' ``utils.parse_yaml`` repairs ("SLOPPY edge case handling").
_QA_KEY_ALIASES = {
    "span": "span_answer",
    "span,answer": "span_answer",
    "span answer": "span_answer",
    "natural": "natural_answer",
    "natural,answer": "natural_answer",
    "natural answer": "natural_answer",
    "natural, answer": "natural_answer",
}

# Release column name -> our column name, per config.  The dataset card
# (ds_readmes/raw_dataset.md) uses our names for every field we read, so these are empty;
# a renamed column in a later revision is a one-line fix here.
RELEASE_COLUMN_MAP: dict[str, dict[str, str]] = {table: {} for table in TABLES}

# --------------------------------------------------------------------------- fictsheets

_SECTION_NAMES = r"entit(?:y|ies)|events?|locations?|times?|reasons?"
_HEADER_RE = re.compile(
    r"^\s*(?P<hashes>#{1,6}\s*)?(?P<open>\*\*|__)?\s*(?P<name>" + _SECTION_NAMES + r")\s*"
    r"(?P<close>\*\*|__)?\s*(?P<colon>:)?\s*(?P<close2>\*\*|__)?\s*(?P<rest>.*?)\s*$",
    re.IGNORECASE,
)
_BULLET_RE = re.compile(r"^(?P<indent>[ \t]*)(?:\d+[.)]|[-*\u2022+])[ \t]+(?P<text>\S.*?)\s*$")
_RULE_RE = re.compile(r"^\s*([-*_])(?:\s*\1){2,}\s*$")


def _section_key(name: str) -> str:
    name = name.lower()
    for key in FICTSHEET_FIELDS:
        if name[:4] == key[:4]:
            return key
    raise AssertionError(name)  # unreachable: _SECTION_NAMES only holds the five stems


def _match_header(line: str) -> tuple[str, str] | None:
    """Return ``(section_key, trailing_text)`` when ``line`` is a section heading."""
    match = _HEADER_RE.match(line)
    if not match:
        return None
    marked = match["hashes"] or match["open"] or match["close"] or match["close2"]
    rest = match["rest"]
    if rest and not match["colon"]:
        return None  # prose such as "Events unfolded quickly", not a heading
    if not (marked or match["colon"] or not rest):
        return None
    return _section_key(match["name"]), rest


def _split_items(lines: list[str]) -> list[str]:
    """Items of one fictsheet section: bullet/number markers removed, continuations joined.

    Top-level items are the least-indented bullet lines; deeper bullets and wrapped lines
    right after an item are appended to it; prose after a blank line (an intro or trailing
    remark) is dropped.  A section without any bullet keeps each non-blank line as an item.
    """
    if not any(_BULLET_RE.match(line) for line in lines):
        return [line.strip() for line in lines if line.strip() and not _RULE_RE.match(line)]
    items: list[str] = []
    base_indent: int | None = None
    after_blank = False
    for line in lines:
        if not line.strip() or _RULE_RE.match(line):
            after_blank = True
            continue
        match = _BULLET_RE.match(line)
        if match:
            indent = len(match["indent"].expandtabs(4))
            if base_indent is None or indent <= base_indent or not items:
                base_indent = indent if base_indent is None else min(base_indent, indent)
                items.append(match["text"])
            else:
                items[-1] = f"{items[-1]} {match['text']}"
        elif items and (not after_blank or line[:1].isspace()):
            items[-1] = f"{items[-1]} {line.strip()}"
        after_blank = False
    return items


def parse_fictsheet(text: str) -> dict[str, list[str]]:
    """Split a fictsheet into its five item lists.

    A fictsheet is the gpt-4o "fict sheet" of one seed event (FictionalQA, Kirchenbauer et al. 2026, Sec. 3,
    App. C): sections Entities, Events, Locations, Times, Reasons, each a list, e.g.
    ``"**Entities:**\\n\\n1. Isabelle Chang - Lead ...\\n2. ...\\n\\n**Events:**\\n\\n1. ..."``.
    Headings may be ``**Entities:**``, ``**Entities**:``, ``### Entities``, ``Entities:`` (any
    case, singular or plural); items may be numbered (``1.``/``1)``) or bulleted (``-``,
    ``*``, ``•``).  Item text is returned without its marker; wrapped lines and nested
    bullets are joined onto their item; text before the first heading and prose after a
    section's list are ignored.  A repeated heading extends its list.

    Returns:
        ``{"entities": [...], "events": [...], "locations": [...], "times": [...],
        "reasons": [...]}``; a missing section gives an empty list.  Never raises on
        malformed text (an unparseable sheet gives empty lists, which callers may reject).
    """
    bodies: dict[str, list[str]] = {key: [] for key in FICTSHEET_FIELDS}
    current: list[str] | None = None
    for line in text.splitlines():
        header = _match_header(line)
        if header is not None:
            key, rest = header
            current = bodies[key]
            current.append("")  # a heading separates repeated sections like a blank line
            if rest:
                current.append(rest)
        elif current is not None:
            current.append(line)
    return {key: _split_items(lines) for key, lines in bodies.items()}


# --------------------------------------------------------------------------- fict_qa YAML

_FENCE_RE = re.compile(r"```[ \t]*(?:ya?ml)?[ \t]*\n(?P<body>.*?)(?:```|\Z)", re.DOTALL | re.IGNORECASE)


def _authors_yaml_repairs(body: str) -> str:
    """The two textual repairs of the authors' ``utils.parse_yaml``, applied before parsing."""
    body = body.replace("natural\n_answer", "natural_answer")
    return re.sub(r'("[^"]*") and ("[^"]*")', r"\1", body)


def _qa_value(value: Any, field: str, where: str) -> str:
    if isinstance(value, list):
        if not value:
            raise DataError(f"{where}: field {field!r} is an empty list")
        value = value[-1]  # the authors' parser keeps the last element of a list
    if not isinstance(value, str):
        raise DataError(f"{where}: field {field!r} must be a string or a list of strings, got {type(value).__name__}")
    value = value.strip()
    if not value:
        raise DataError(f"{where}: field {field!r} is empty")
    return value


def parse_fict_qa_yaml(text: str, where: str = "fict_qa") -> list[dict[str, str]]:
    """Parse one fict_qa response (FictionalQA step 4, Kirchenbauer et al. 2026 App. C) into question dicts.

    The response is a ```` ```yaml ```` fenced list (the fence is optional) of items with
    keys ``fict``, ``question``, ``span_answer``, ``natural_answer``, each a string or a
    one-element list of strings, e.g.::

        - fict:
            - "The Ring of Silence Protocol was developed in 2046"
          question:
            - "In what year was the Ring of Silence Protocol developed?"
          ...

    Scalars are read as text (YAML ``BaseLoader``), so an unquoted ``2046`` stays ``"2046"``.
    As in the authors' ``utils.parse_yaml``: misspelt keys (``span``, ``natural answer``, ...)
    are renamed, a list with several elements keeps its last one, and when the raw text is
    not valid YAML the authors' two textual repairs (``natural\\n_answer``; ``"a" and "b"``
    -> ``"a"``) are tried before giving up.  Extra keys are dropped.

    Args:
        text: the response content.
        where: prefix for error messages (e.g. ``"<file>:<line>"``).

    Returns:
        One ``{"fict", "question", "span_answer", "natural_answer"}`` dict of non-empty
        stripped strings per item, in YAML order (the order that numbers the questions).

    Raises:
        DataError: the YAML does not parse, is not a list of mappings, or an item lacks a
            field or has an empty or non-text value.
    """
    match = _FENCE_RE.search(text)
    body = match["body"] if match else text
    try:
        data = yaml.load(body, Loader=yaml.BaseLoader)
    except yaml.YAMLError as err:
        try:
            data = yaml.load(_authors_yaml_repairs(body), Loader=yaml.BaseLoader)
        except yaml.YAMLError:
            detail = " ".join(str(err).split())
            raise DataError(f"{where}: malformed fict_qa YAML ({detail})") from None
    if not isinstance(data, list) or not data:
        raise DataError(f"{where}: fict_qa YAML must be a non-empty list of items, got {type(data).__name__}")
    items = []
    for k, item in enumerate(data):
        item_where = f"{where}: item {k}"
        if not isinstance(item, dict):
            raise DataError(f"{item_where}: expected a mapping with fields {QA_FIELDS}, got {type(item).__name__}")
        item = {_QA_KEY_ALIASES.get(key.strip().lower(), key.strip().lower()): value for key, value in item.items()}
        missing = [field for field in QA_FIELDS if field not in item]
        if missing:
            raise DataError(f"{item_where}: missing field(s) {missing}")
        items.append({field: _qa_value(item[field], field, item_where) for field in QA_FIELDS})
    return items


# --------------------------------------------------------------------------- batch results


def _iter_batch_contents(path: Path) -> Iterator[tuple[int, str, str]]:
    """Yield ``(line, custom_id, message content)`` of one Batch API result file."""
    for lineno, record in iter_jsonl_numbered(path):
        where = f"{path}:{lineno}"
        custom_id = record.get("custom_id")
        if not isinstance(custom_id, str) or not custom_id:
            raise DataError(f"{where}: missing custom_id")
        if record.get("error"):
            raise DataError(f"{where}: request {custom_id!r} failed: {record['error']}")
        response = record.get("response")
        status = response.get("status_code") if isinstance(response, dict) else None
        if status != 200:
            raise DataError(f"{where}: request {custom_id!r} has status {status} (expected 200)")
        try:
            content = response["body"]["choices"][0]["message"]["content"]
        except (KeyError, IndexError, TypeError):
            raise DataError(f"{where}: request {custom_id!r} has no response.body.choices[0].message.content") from None
        if not isinstance(content, str) or not content.strip():
            raise DataError(f"{where}: request {custom_id!r} has empty message content")
        yield lineno, custom_id, content


def _event_from_custom_id(custom_id: str, where: str) -> str:
    """``batch_prompt_files_nov8/create_seeds-7`` -> ``event_007`` (authors' ETL ``parse_custom_id``)."""
    if EVENT_RE.match(custom_id):
        return custom_id
    match = re.search(r"-(\d+)$", custom_id)
    if not match:
        raise DataError(f"{where}: custom_id {custom_id!r} is neither event_<i> nor <prompt file>-<i>")
    return f"event_{int(match.group(1)):03d}"


def _load_per_event(path: Path, table: str) -> dict[str, tuple[dict[str, Any], str]]:
    records: dict[str, tuple[dict[str, Any], str]] = {}
    for lineno, custom_id, content in _iter_batch_contents(path):
        where = f"{path}:{lineno}"
        event_id = _event_from_custom_id(custom_id, where)
        if event_id in records:
            raise DataError(f"{where}: {event_id} ({custom_id!r}) appears twice (first at {records[event_id][1]})")
        if table == "seeds":
            if len(re.findall(r"^\s*\*\s", content, flags=re.MULTILINE)) > 1:
                log.warning(
                    "%s: seed response %r holds several bullets; kept whole as one event, "
                    "as the authors' pipeline and release do",
                    where,
                    custom_id,
                )
            record: dict[str, Any] = {"event_id": event_id, "seed": content}
        else:
            record = {"event_id": event_id, "fictsheet": content, **parse_fictsheet(content)}
            if not record["entities"] or not record["events"]:
                log.warning(
                    "%s: fictsheet %r parsed with no entities or no events; check its headings", where, custom_id
                )
        validate_record(table, record, where)
        records[event_id] = (record, where)
    return records


def load_batch_results(folder: str | Path) -> dict[str, list[dict[str, Any]]]:
    """Read a FictionalQA pipeline output folder (OpenAI Batch API results) as the four tables.

    Reads ``<folder>/batch_results/{seeds,fictsheets,fictions,fict_qa}.jsonl``; each line is
    ``{"custom_id": ..., "response": {"status_code": 200, "body": {"choices": [{"message":
    {"content": ...}}]}}, "error": null}``.  Id scheme (Kirchenbauer et al. 2026, App. C; checked
    against the authors' ``pipeline/`` and Hub ETL notebook):

    * seeds / fictsheets: ``custom_id`` is ``<prompt file>-<i>`` (e.g.
      ``batch_prompt_files_nov8/create_seeds-0``, ``.../seeds_to_fictsheets-0``) and maps to
      ``event_<i:03d>``, exactly as the authors' ETL does.  One response is one event: the
      seed prompt asks for a single seed, the pipeline pairs response ``i`` with fictsheet
      ``i`` and fictions ``event_<i>_*``, and the release stores the whole response
      verbatim as ``seed`` (e.g. ``"* The Ring of Silence Protocol of 2046. ..."``).  A
      response that lists several bullets is therefore NOT split into several events
      (splitting would shift every later event off its fictsheet and fictions); it is
      kept whole and a warning is logged.
    * fictions: ``custom_id`` is already the fiction id ``event_000_style_news_num_000``;
      ``event_id`` and ``style`` come from it.
    * fict_qa: ``custom_id`` is the fiction id; the content is the YAML list read by
      :func:`parse_fict_qa_yaml`, and question ``k`` (0-based, YAML order) gets
      ``<fiction_id>_question_<k:03d>``, which reproduces the authors' ids in
      ``intermediate_results/annotated_fict_qa.jsonl`` and the release.

    Events without any fiction (e.g. a seeds/fictsheets batch longer than the fictions
    batch, or an aborted run) are dropped from seeds and fictsheets, with an info log, so
    every event in the result has documents; the released data (100 seeds, 100 fictsheets,
    1500 fictions) has none such.  A fiction whose event has no seed or no fictsheet, or a
    question whose fiction is missing, is an error.

    Returns:
        ``{"seeds": [...], "fictsheets": [...], "fictions": [...], "fict_qa": [...]}``;
        seeds and fictsheets sorted by ``event_id``, fictions and questions in file (then
        YAML) order; fields as in :mod:`knowlab.fiction.schema`.

    Raises:
        FileNotFoundError: ``batch_results/`` or one of the four files is missing.
        DataError: a malformed JSON line, a failed request (``error`` set or status other
            than 200), a missing or empty message, an unrecognised or duplicate custom_id,
            malformed fict_qa YAML, or a record/corpus failing the schema checks; the
            message names the file and line.
    """
    folder = Path(folder)
    results = folder / "batch_results"
    paths = {table: results / f"{table}.jsonl" for table in TABLES}
    for path in paths.values():
        if not path.is_file():
            raise FileNotFoundError(f"batch result file not found: {path}")

    seeds = _load_per_event(paths["seeds"], "seeds")
    sheets = _load_per_event(paths["fictsheets"], "fictsheets")

    fictions: list[dict[str, Any]] = []
    fiction_where: dict[str, str] = {}
    for lineno, custom_id, content in _iter_batch_contents(paths["fictions"]):
        where = f"{paths['fictions']}:{lineno}"
        match = FICTION_RE.match(custom_id)
        if not match:
            raise DataError(f"{where}: custom_id {custom_id!r} is not a fiction id event_<i>_style_<s>_num_<j>")
        if custom_id in fiction_where:
            raise DataError(f"{where}: fiction {custom_id!r} appears twice (first at {fiction_where[custom_id]})")
        record = {"event_id": match.group(1), "fiction_id": custom_id, "style": match.group(2), "fiction": content}
        validate_record("fictions", record, where)
        fiction_where[custom_id] = where
        fictions.append(record)

    fict_qa: list[dict[str, Any]] = []
    qa_where: dict[str, str] = {}
    for lineno, custom_id, content in _iter_batch_contents(paths["fict_qa"]):
        where = f"{paths['fict_qa']}:{lineno}"
        match = FICTION_RE.match(custom_id)
        if not match:
            raise DataError(f"{where}: custom_id {custom_id!r} is not a fiction id event_<i>_style_<s>_num_<j>")
        if custom_id in qa_where:
            raise DataError(f"{where}: questions for {custom_id!r} appear twice (first at {qa_where[custom_id]})")
        qa_where[custom_id] = where
        for k, item in enumerate(parse_fict_qa_yaml(content, where=where)):
            record = {
                "event_id": match.group(1),
                "fiction_id": custom_id,
                "question_id": f"{custom_id}_question_{k:03d}",
                **item,
            }
            validate_record("fict_qa", record, where)
            fict_qa.append(record)

    with_fictions = {record["event_id"] for record in fictions}
    dropped = sorted((set(seeds) | set(sheets)) - with_fictions)
    if dropped:
        log.info(
            "%s: dropping %d event(s) without fictions from seeds/fictsheets: %s",
            folder,
            len(dropped),
            ", ".join(dropped[:10]) + (" ..." if len(dropped) > 10 else ""),
        )
    without_qa = set(fiction_where) - set(qa_where)
    if without_qa:
        log.info("%s: %d fiction(s) have no fict_qa response", folder, len(without_qa))

    tables = {
        "seeds": [seeds[e][0] for e in sorted(seeds) if e in with_fictions],
        "fictsheets": [sheets[e][0] for e in sorted(sheets) if e in with_fictions],
        "fictions": fictions,
        "fict_qa": fict_qa,
    }
    validate_corpus(tables, source=str(folder))
    return tables


# --------------------------------------------------------------------------- release folder


def _config_files(folder: Path, config: str) -> list[Path]:
    sub = folder / config
    if sub.is_dir():
        files = sorted(sub.rglob("*.parquet")) or sorted(sub.rglob("*.jsonl"))
        if files:
            return files
    for suffix in (".parquet", ".jsonl"):
        flat = folder / f"{config}{suffix}"
        if flat.is_file():
            return [flat]
    raise FileNotFoundError(
        f"{folder}: no data for config {config!r} (expected {config}/*.parquet, {config}.parquet or {config}.jsonl)"
    )


def _iter_rows(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield ``(1-based row or line number, record)`` of a Parquet or JSONL file."""
    if path.suffix == ".jsonl":
        yield from iter_jsonl_numbered(path)
        return
    try:
        rows = pq.read_table(path).to_pylist()
    except Exception as err:  # pyarrow raises several types for a corrupt file
        raise DataError(f"{path}: unreadable Parquet file ({err})") from None
    yield from enumerate(rows, start=1)


def _normalise_release_record(table: str, raw: dict[str, Any]) -> dict[str, Any]:
    """Rename release columns and derive absent-but-derivable fields (see load_release_folder)."""
    rename = RELEASE_COLUMN_MAP[table]
    record = {rename.get(key, key): value for key, value in raw.items()}

    def missing(field: str) -> bool:
        return record.get(field) is None

    if table == "fict_qa" and missing("fiction_id") and isinstance(record.get("question_id"), str):
        match = QUESTION_RE.match(record["question_id"])
        if match:
            record["fiction_id"] = match.group(1)
    if table in ("fictions", "fict_qa") and isinstance(record.get("fiction_id"), str):
        match = FICTION_RE.match(record["fiction_id"])
        if match:
            if missing("event_id"):
                record["event_id"] = match.group(1)
            if table == "fictions" and missing("style"):
                record["style"] = match.group(2)
    if table == "fictsheets":
        parsed: dict[str, list[str]] | None = None
        for field in FICTSHEET_FIELDS:
            value = record.get(field)
            if value is None and isinstance(record.get("fictsheet"), str):
                if parsed is None:
                    parsed = parse_fictsheet(record["fictsheet"])
                record[field] = parsed[field]
            elif isinstance(value, str):  # the release stores each section as its raw text
                record[field] = _split_items(value.splitlines())
            elif isinstance(value, tuple):
                record[field] = list(value)
    return record


def load_release_folder(folder: str | Path) -> dict[str, list[dict[str, Any]]]:
    """Read the released FictionalQA dataset from a local folder as the four tables.

    Layout: the Hugging Face Hub layout of ``tomg-group-umd/fictionalqa`` (FictionalQA,
    Kirchenbauer et al. 2026 App. C), one sub-folder per config, ``seeds/``, ``fictsheets/``, ``fictions/``,
    ``fict_qa/``, each holding ``*.parquet`` shards (e.g. ``train-00000-of-00001.parquet``,
    read in name order), or else ``<config>.parquet`` / ``<config>.jsonl`` directly in
    ``folder``.  Other configs (answer attempts, joined_qa, MCQ) are ignored.

    Columns: release names are mapped through :data:`RELEASE_COLUMN_MAP` (identity: the
    dataset card uses our names).  Absent or null but derivable fields are derived:
    ``fiction_id`` from ``question_id``; ``event_id`` (and, for fictions, ``style``) from
    ``fiction_id``; fictsheet lists via :func:`parse_fictsheet` on ``fictsheet``.  A list
    field stored as text -- as in the release, where ``entities`` etc. are the raw section
    text ``"1. Isabelle Chang - ...\\n2. ..."`` -- is split into items like a fictsheet
    section.  Extra columns (``question_num``, ``duplicate_root``,
    ``duplicate_relationship``, ...) are kept.

    Returns:
        ``{"seeds": [...], "fictsheets": [...], "fictions": [...], "fict_qa": [...]}``,
        rows in file order, values as native Python objects.

    Raises:
        FileNotFoundError: a config has no data file.
        DataError: an unreadable file, a malformed JSONL line, or a record failing
            ``validate_record`` (message ``"<file>:<row>: ..."``, rows 1-based), or the
            tables failing ``validate_corpus`` (duplicate ids, orphans).
    """
    folder = Path(folder)
    tables: dict[str, list[dict[str, Any]]] = {}
    for table in TABLES:
        records = []
        for path in _config_files(folder, table):
            for row, raw in _iter_rows(path):
                record = _normalise_release_record(table, raw)
                validate_record(table, record, f"{path}:{row}")
                records.append(record)
        tables[table] = records
    validate_corpus(tables, source=str(folder))
    return tables


# --------------------------------------------------------------------------- download / switch

HUB_ID_KEY = "fiction.release.hub_id"  # the config key that names the release on the Hub


def download_release(hub_id: str, revision: str | None, dest: str | Path | None) -> Path:
    """Download the four corpus configs of a FictionalQA release from the Hugging Face Hub.

    Calls ``huggingface_hub.snapshot_download(repo_id=hub_id, repo_type="dataset",
    revision=revision, allow_patterns=["seeds/*", "fictsheets/*", "fictions/*",
    "fict_qa/*"], local_dir=dest)`` (dataset ``tomg-group-umd/fictionalqa``, FictionalQA
    Kirchenbauer et al. 2026 App. C).  Pin ``revision`` (config ``fiction.release.revision``, or
    ``hub_id`` written ``"<id>@<commit>"``) to a commit hash for reproducibility; ``None``
    takes the default branch (a WARNING in the rule log and a manifest note,
    :func:`knowlab.core.models.note_hub_revision`).  ``dest=None`` uses the Hub cache.

    Returns:
        The local folder holding ``<config>/*.parquet``, ready for :func:`load_release_folder`.

    Raises:
        knowlab.core.models.HubUnreachableError: the Hub could not be reached, or has no such
            dataset or revision (names ``fiction.release.hub_id``, the id and the revision).
        ValueError: conflicting revisions.
    """
    # deferred: Hub downloads only when the config names the Hub
    import huggingface_hub

    hub_id, revision = pinned_hub_id(hub_id, revision, HUB_ID_KEY)
    try:
        local = huggingface_hub.snapshot_download(
            repo_id=hub_id,
            repo_type="dataset",
            revision=revision,
            allow_patterns=[f"{config}/*" for config in TABLES],
            local_dir=None if dest is None else str(dest),
        )
    except OSError as err:  # HTTP, connection and "not in the local cache" errors are all OSErrors
        raise hub_error(HUB_ID_KEY, hub_id, revision, err) from err
    return Path(local)


def load_release(
    path: str | Path | None,
    hub_id: str | None,
    revision: str | None = None,
    cache_dir: str | Path | None = None,
) -> dict[str, list[dict[str, Any]]]:
    """Load the FictionalQA corpus from the configured source (FictionalQA, Kirchenbauer et al. 2026 App. C).

    * ``path`` given (it wins over ``hub_id``): a folder with ``batch_results/`` is read by
      :func:`load_batch_results` (raw pipeline output), any other by
      :func:`load_release_folder` (released dataset stored locally).
    * else ``hub_id`` given: :func:`download_release` into
      ``<cache_dir>/<owner>--<name>/<revision or "main">`` (or the Hub cache when
      ``cache_dir`` is ``None``), then :func:`load_release_folder`.

    Returns:
        The four tables of :mod:`knowlab.fiction.schema`, validated.

    Raises:
        ValueError: neither ``path`` nor ``hub_id`` is given.
        FileNotFoundError, DataError: as raised by the loaders.
    """
    if path is not None:
        folder = Path(path)
        if hub_id is not None:
            log.info("both a local path and hub_id %s given; reading the local path %s", hub_id, folder)
        if (folder / "batch_results").is_dir():
            return load_batch_results(folder)
        return load_release_folder(folder)
    if hub_id is not None:
        dest = None
        if cache_dir is not None:
            bare_id, pinned = split_revision(hub_id, revision, HUB_ID_KEY)
            dest = Path(cache_dir) / bare_id.replace("/", "--") / (pinned or "main")
        return load_release_folder(download_release(hub_id, revision, dest))
    raise ValueError("no corpus source: give a local path (release folder or pipeline output) or a hub_id")

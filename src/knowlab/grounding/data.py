"""Grounding items: the KAIST release (Original / Conflict) and grounding items built from the fiction corpus.

Paper: "How Well Do Large Language Models Truly Ground?" (seed 002), Sec. 3 (dataset
construction: Original-Gold, Steps 1-3; Conflict-Gold, Step 4 "Modify Context"), Fig. 2, App. A.

Every item follows the shared schema (one dict per item)::

    item_id str, version "original"|"conflict", source "kaist"|"fiction", question str,
    answers list[str], contexts list[str], atomic_facts list[str] (non-empty),
    factors dict[str, str], gold_doc_ids list[str], extra dict

and a document of the distractor pool is ``{"doc_id", "title", "text"}`` (KAIST documents
also carry ``"url"``, so that :func:`render_kaist_doc` rebuilds the exact context form).

KAIST release, observed on the real files (and relied on here):

- ``original_version.json`` / ``revised_version.json``: ``{qId: {qId, qText, answer,
  atomic_texts, context_list}}``, 480 records each, the same qIds (Conflict = revised).
- ``metadata/localDocId2title.json``: ``{L_DOC id: "Title: <title> [<url>]\\n"}`` and
  ``metadata/localDocId2localDocText.json``: ``{L_DOC id: text}``, 2,620 documents.  An
  original gold context is the document's title string, one more ``"\\n"``, then its text,
  i.e. ``"Title: <title> [<url>]\\n\\n<text>"`` (:func:`render_kaist_doc`): 669 of the 682
  original contexts equal a pool document exactly (after stripping); 13 contexts (12 items)
  are cut differently and fall back to the pool documents with the same title.  Some pool
  texts are duplicated (29 texts), so one context can match several ids: all are kept.
- revised (conflict) contexts are the annotators' edits and mostly use a single ``"\\n"``
  after the title line (643 of 682); two (Q36) have no title line.  Conflict items therefore
  take the gold document ids of their original item (same qId).
- ``has_answer`` agrees with answer emptiness in every original record (260 definite,
  220 free-form).  In the revised file two definite records (Q102, Q111) have an empty
  answer (the annotators changed the facts and wrote no new answer): they are kept with
  ``answers == []`` and ``extra["answer_missing"] = True`` (logged).  Two revised answers are
  the literal ``"None"``/``"none"`` (Q7, Q15: after the edit none of the candidates is
  right); they are kept as the answer alternative ``["None"]``/``["none"]``.
"""

from __future__ import annotations

import logging
import math
import re
import urllib.request
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from knowlab.core.io import DataError, atomic_path, read_json
from knowlab.core.rng import keyed_rng

log = logging.getLogger(__name__)

KAIST_FILES = {
    "original": "original_version.json",
    "conflict": "revised_version.json",
    "meta": "metadata/qId2metaInfo.json",
    "text": "metadata/localDocId2localDocText.json",
    "title": "metadata/localDocId2title.json",
}
VERSIONS = ("original", "conflict")
_TITLE_LINE = re.compile(r"Title: (?P<title>.*) \[(?P<url>\S*)\]\n\Z", re.DOTALL)
_CONTEXT_HEADER = re.compile(r"Title: (?P<title>.*?) \[(?P<url>\S*)\]\n")


# --------------------------------------------------------------------------- KAIST release


def fetch_kaist_release(url: str, cache_dir: str | Path) -> Path:
    """Download the five release files from ``url`` (an http(s) folder) into ``cache_dir``.

    Each file ``<url>/<relative path>`` (see :data:`KAIST_FILES`) is fetched with ``urllib``
    unless ``cache_dir/<relative path>`` already exists; writes are atomic.  Not exercised by
    the tests (they run offline).

    Returns:
        ``cache_dir`` as a Path, ready for :func:`load_kaist_release`.
    """
    cache = Path(cache_dir)
    for rel in KAIST_FILES.values():
        dest = cache / rel
        if dest.is_file():
            continue
        with atomic_path(dest) as tmp, urllib.request.urlopen(f"{url.rstrip('/')}/{rel}") as response:
            tmp.write_bytes(response.read())
    return cache


def parse_answers(raw: str) -> list[str]:
    """Answer alternatives of a KAIST ``answer`` field: split on ``"|"``, strip, drop empties.

    ``"the son of Sigimer | a prince of the nation"`` -> ``["the son of Sigimer", "a prince of
    the nation"]``; ``""`` and ``" | "`` -> ``[]``.  ``"&"`` inside an alternative (``"Unilever &
    England"``) joins the parts of one answer and is kept.
    """
    return [part.strip() for part in str(raw).split("|") if part.strip()]


def parse_kaist_title(raw: str, where: str = "") -> tuple[str, str]:
    """``"Title: Lisztomania [https://...]\\n"`` -> ``("Lisztomania", "https://...")``.

    Raises:
        DataError: the string does not have that form (``where`` names file and id).
    """
    match = _TITLE_LINE.fullmatch(raw) if isinstance(raw, str) else None
    if not match:
        raise DataError(f"{where}: title string {raw!r} is not 'Title: <title> [<url>]\\n'")
    return match["title"], match["url"]


def render_kaist_doc(doc: Mapping[str, Any]) -> str:
    """A pool document in the form of an original gold context: ``"Title: <title> [<url>]\\n\\n<text>"``.

    Documents without ``url`` (e.g. fiction documents) are rendered as their text alone, the
    form of a fiction gold context.
    """
    if doc.get("url") is None:
        return str(doc["text"])
    return f"Title: {doc['title']} [{doc['url']}]\n\n{doc['text']}"


def context_title(context: str) -> str | None:
    """The title of a ``"Title: <title> [<url>]\\n..."`` context, or None when it has no title line."""
    match = _CONTEXT_HEADER.match(context)
    return match["title"] if match else None


def read_pool(text_path: str | Path, title_path: str | Path) -> list[dict[str, Any]]:
    """The KAIST document pool: ``[{"doc_id", "title", "url", "text"}, ...]`` in the text file's order.

    ``title`` is the clean article name (``"Lisztomania"``) parsed from the title string.

    Raises:
        DataError: the two files do not have the same ids, or a title/text is malformed
            (the message names the file and the document id).
    """
    texts, titles = read_json(text_path), read_json(title_path)
    if not isinstance(texts, dict) or not isinstance(titles, dict):
        raise DataError(f"{text_path} / {title_path}: expected JSON objects {{doc_id: str}}")
    if set(texts) != set(titles):
        odd = sorted(set(texts) ^ set(titles))[:5]
        raise DataError(f"{text_path} and {title_path} hold different document ids (e.g. {odd})")
    pool = []
    for doc_id, text in texts.items():
        if not isinstance(text, str) or not text.strip():
            raise DataError(f"{text_path}: document {doc_id} has no text")
        title, url = parse_kaist_title(titles[doc_id], f"{title_path}: {doc_id}")
        pool.append({"doc_id": doc_id, "title": title, "url": url, "text": text})
    return pool


def match_gold_docs(contexts: Sequence[str], pool: Sequence[Mapping[str, Any]]) -> tuple[list[str], int]:
    """Pool ids of the gold ``contexts``: exact match of the stripped rendered form, else same title.

    A context equal (after ``strip()``) to :func:`render_kaist_doc` of pool documents gives
    all of those ids (duplicated pool texts give several); a context without an exact match
    gives every pool document whose title equals the context's title (the fall-back).

    Returns:
        ``(doc_ids, n_fallback)``: ids in context order without repeats, and the number of
        contexts that had no exact match.
    """
    by_form, by_title = _pool_lookup(pool)
    return _match(contexts, by_form, by_title)


def _pool_lookup(pool: Sequence[Mapping[str, Any]]) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    by_form: dict[str, list[str]] = {}
    by_title: dict[str, list[str]] = {}
    for doc in pool:
        by_form.setdefault(render_kaist_doc(doc).strip(), []).append(doc["doc_id"])
        by_title.setdefault(doc["title"], []).append(doc["doc_id"])
    return by_form, by_title


def _match(contexts, by_form, by_title) -> tuple[list[str], int]:
    ids: list[str] = []
    n_fallback = 0
    for context in contexts:
        found = by_form.get(context.strip())
        if not found:
            n_fallback += 1
            found = by_title.get(context_title(context) or "", [])
        ids.extend(i for i in found if i not in ids)
    return ids, n_fallback


def _check_record(record: Any, qid: str, path: Path) -> None:
    where = f"{path}: {qid}"
    if not isinstance(record, dict):
        raise DataError(f"{where}: expected an object, got {type(record).__name__}")
    for key, kind in (("qText", str), ("answer", str), ("atomic_texts", list), ("context_list", list)):
        if key not in record:
            raise DataError(f"{where}: missing field {key!r}")
        if not isinstance(record[key], kind):
            raise DataError(f"{where}: field {key!r} must be {kind.__name__}, got {type(record[key]).__name__}")
    if record.get("qId", qid) != qid:
        raise DataError(f"{where}: record qId {record['qId']!r} differs from its key")
    if not record["qText"].strip():
        raise DataError(f"{where}: empty question")
    if not [f for f in record["atomic_texts"] if isinstance(f, str) and f.strip()]:
        raise DataError(f"{where}: no atomic facts (atomic_texts is empty)")
    if not record["context_list"] or not all(isinstance(c, str) and c.strip() for c in record["context_list"]):
        raise DataError(f"{where}: context_list must be a non-empty list of non-empty strings")


def _factors(meta: Mapping[str, Any], qid: str, path: Path) -> dict[str, str]:
    if qid not in meta:
        raise DataError(f"{path}: missing factor entry for {qid}")
    entry = meta[qid]
    if (
        not isinstance(entry, dict)
        or entry.get("pop") not in ("high", "low")
        or not isinstance(entry.get("has_multi"), bool)
        or not isinstance(entry.get("has_answer"), bool)
    ):
        raise DataError(f"{path}: {qid}: factor entry {entry!r} needs pop high|low, has_multi and has_answer booleans")
    return {
        "popularity": entry["pop"],
        "contexts": "multi" if entry["has_multi"] else "single",
        "answer_type": "definite" if entry["has_answer"] else "free_form",
    }


def _answers(raw: str, definite: bool, version: str, qid: str, path: Path) -> tuple[list[str], bool]:
    """(answers, answer_missing) of one record; see :func:`load_kaist_release` for the rules."""
    answers = parse_answers(raw)
    if raw.strip() and not answers:
        if definite:
            raise DataError(f"{path}: {qid}: answer {raw!r} holds only separators but the question is definite")
        return [], False
    if definite and not answers:
        if version == "conflict":
            return [], True
        raise DataError(f"{path}: {qid}: definite question (has_answer true) with no answer alternatives")
    if answers and not definite:
        raise DataError(f"{path}: {qid}: free-form question (has_answer false) with answer {raw!r}")
    return answers, False


def load_kaist_release(
    root: str | Path, cache_dir: str | Path | None = None
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]]]:
    """Read the KAIST grounding release into items (Original-Gold, Conflict-Gold) and the document pool.

    Args:
        root: the release folder (``original_version.json``, ``revised_version.json`` and
            ``metadata/`` with ``qId2metaInfo.json``, ``localDocId2localDocText.json``,
            ``localDocId2title.json``), or an ``http(s)://`` base URL of the same layout, in
            which case the files are first fetched into ``cache_dir`` (:func:`fetch_kaist_release`).
        cache_dir: download folder; required when ``root`` is a URL.

    Returns:
        ``(original_items, conflict_items, pool)``: 480 + 480 items on the real release, in
        the original file's order, pairing by ``item_id`` (the qId); conflict items have
        ``version == "conflict"``.  ``factors`` come from ``qId2metaInfo.json``: ``pop`` ->
        ``popularity`` high|low, ``has_multi`` -> ``contexts`` multi|single, ``has_answer`` ->
        ``answer_type`` definite|free_form (Sec. 3.1, Fig. 2).  ``answers`` =
        :func:`parse_answers` (``[]`` for free-form).  ``gold_doc_ids`` =
        :func:`match_gold_docs` of the original contexts, shared by both versions;
        ``extra["gold_title_fallback"]`` counts the contexts matched by title only
        (13 contexts on the real release; the total is logged).  ``pool`` = :func:`read_pool`.

    Answer rules (``has_answer`` decides):
        - definite, answer has alternatives: the alternatives;
        - definite, answer only separators (``" | "``): DataError;
        - definite, empty answer: DataError in the original file; in the revised file
          accepted as ``[]`` with ``extra["answer_missing"] = True`` (Q102, Q111 of the release);
        - free-form, empty or only separators: ``[]``; free-form with alternatives: DataError.

    Raises:
        DataError: naming the file and the qId, for a record that is not an object, lacks a
            field, has no atomic facts, an empty context list, an answer breaking the rules
            above, a qId with no entry in ``qId2metaInfo.json`` ("missing factor entry") or a
            malformed entry; or when the two versions hold different qIds.
        ValueError: ``root`` is a URL and ``cache_dir`` is None.
    """
    if str(root).startswith(("http://", "https://")):
        if cache_dir is None:
            raise ValueError("load_kaist_release: a URL root needs cache_dir")
        root = fetch_kaist_release(str(root), cache_dir)
    root = Path(root)
    paths = {name: root / rel for name, rel in KAIST_FILES.items()}
    meta = read_json(paths["meta"])
    if not isinstance(meta, dict):
        raise DataError(f"{paths['meta']}: expected a JSON object {{qId: factors}}")
    pool = read_pool(paths["text"], paths["title"])
    by_form, by_title = _pool_lookup(pool)

    records = {}
    for version in VERSIONS:
        data = read_json(paths[version])
        if not isinstance(data, dict):
            raise DataError(f"{paths[version]}: expected a JSON object {{qId: record}}")
        records[version] = data
    missing = sorted(set(records["original"]) ^ set(records["conflict"]))
    if missing:
        raise DataError(f"{paths['original']} and {paths['conflict']} hold different qIds, e.g. {missing[:5]}")

    out: dict[str, list[dict[str, Any]]] = {v: [] for v in VERSIONS}
    n_fallback = 0
    for qid in records["original"]:
        factors = _factors(meta, qid, paths["meta"])
        gold_ids: list[str] = []
        fallback = 0
        for version in VERSIONS:
            record = records[version][qid]
            _check_record(record, qid, paths[version])
            if version == "original":
                gold_ids, fallback = _match(record["context_list"], by_form, by_title)
                n_fallback += fallback
            answers, answer_missing = _answers(
                record["answer"], factors["answer_type"] == "definite", version, qid, paths[version]
            )
            extra: dict[str, Any] = {"gold_title_fallback": fallback}
            if answer_missing:
                extra["answer_missing"] = True
                log.warning("%s: %s: definite question with an empty answer; kept with answers=[]", paths[version], qid)
            out[version].append(
                {
                    "item_id": qid,
                    "version": version,
                    "source": "kaist",
                    "question": record["qText"],
                    "answers": answers,
                    "contexts": list(record["context_list"]),
                    "atomic_facts": [f for f in record["atomic_texts"] if isinstance(f, str) and f.strip()],
                    "factors": dict(factors),
                    "gold_doc_ids": list(gold_ids),
                    "extra": extra,
                }
            )
    n_contexts = sum(len(item["contexts"]) for item in out["original"])
    log.info(
        "KAIST gold contexts: %d of %d match a pool document exactly; %d fall back to same-title documents",
        n_contexts - n_fallback,
        n_contexts,
        n_fallback,
    )
    return out["original"], out["conflict"], pool


# --------------------------------------------------------------------------- item checks

_REQUIRED: dict[str, type] = {
    "item_id": str,
    "version": str,
    "source": str,
    "question": str,
    "answers": list,
    "contexts": list,
    "atomic_facts": list,
    "factors": dict,
    "gold_doc_ids": list,
    "extra": dict,
}
_FACTOR_VALUES = {
    "popularity": {"high", "low"},
    "contexts": {"single", "multi"},
    "answer_type": {"definite", "free_form"},
}


def check_items(items: Sequence[Mapping[str, Any]]) -> None:
    """Validate items against the shared schema (module docstring).

    Checks: every key present with its type; ``item_id``/``question`` non-empty;
    ``version`` in original|conflict and ``source`` in kaist|fiction; ``answers``,
    ``gold_doc_ids`` lists of strings; ``contexts`` and ``atomic_facts`` non-empty lists of
    non-empty strings; ``factors`` a dict of str -> str holding ``contexts`` and
    ``answer_type`` (plus ``popularity`` for KAIST), each with an allowed value; no
    ``(item_id, version)`` twice.

    Raises:
        DataError: naming the item_id (and version) and the violation.
    """
    seen: set[tuple[str, str]] = set()
    for n, item in enumerate(items):
        name = f"item {item.get('item_id', f'#{n}')!r}" if isinstance(item, Mapping) else f"item #{n}"
        if not isinstance(item, Mapping):
            raise DataError(f"{name}: not a mapping")
        for key, kind in _REQUIRED.items():
            if key not in item:
                raise DataError(f"{name}: missing key {key!r}")
            if not isinstance(item[key], kind):
                raise DataError(f"{name}: {key!r} must be {kind.__name__}, got {type(item[key]).__name__}")
        name = f"{name} ({item['version']})"
        if not item["item_id"] or not item["question"].strip():
            raise DataError(f"{name}: empty item_id or question")
        if item["version"] not in VERSIONS:
            raise DataError(f"{name}: version must be original|conflict")
        if item["source"] not in ("kaist", "fiction"):
            raise DataError(f"{name}: source must be kaist|fiction, got {item['source']!r}")
        for key in ("answers", "gold_doc_ids"):
            if not all(isinstance(x, str) for x in item[key]):
                raise DataError(f"{name}: {key!r} must hold strings")
        for key in ("contexts", "atomic_facts"):
            if not item[key] or not all(isinstance(x, str) and x.strip() for x in item[key]):
                raise DataError(f"{name}: {key!r} must be a non-empty list of non-empty strings")
        factors = item["factors"]
        if not all(isinstance(k, str) and isinstance(v, str) for k, v in factors.items()):
            raise DataError(f"{name}: factors must map str to str, got {factors!r}")
        needed = ("popularity", "contexts", "answer_type") if item["source"] == "kaist" else ("contexts", "answer_type")
        for key in needed:
            if factors.get(key) not in _FACTOR_VALUES[key]:
                raise DataError(
                    f"{name}: factor {key!r} = {factors.get(key)!r}, expected one of {sorted(_FACTOR_VALUES[key])}"
                )
        key = (item["item_id"], item["version"])
        if key in seen:
            raise DataError(f"{name}: duplicate item_id and version")
        seen.add(key)


# --------------------------------------------------------------------------- fiction items

_MONTHS = "January|February|March|April|May|June|July|August|September|October|November|December"
_DAYS = "Mondays?|Tuesdays?|Wednesdays?|Thursdays?|Fridays?|Saturdays?|Sundays?"
_UNITS = (
    "one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|thirteen|fourteen|fifteen|sixteen|"
    "seventeen|eighteen|nineteen"
)
_TENS = "twenty|thirty|forty|fifty|sixty|seventy|eighty|ninety"
_NUMBER_WORD = rf"(?:(?:{_TENS})(?:-(?:{_UNITS}))?|{_UNITS})"
_ORDINAL_WORD = (
    "first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|eleventh|twelfth|thirteenth|"
    "fourteenth|fifteenth|sixteenth|seventeenth|eighteenth|nineteenth|twentieth|thirtieth|fortieth|fiftieth"
)
_DIGITS = r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?"
_NUMBER = re.compile(rf"(?P<prefix>[£$€]?)(?P<num>{_DIGITS}|{_NUMBER_WORD})(?P<rest>%|\s\D*)?", re.IGNORECASE)
_ORDINAL = re.compile(rf"(?P<prefix>)(?P<num>\d+(?:st|nd|rd|th)|{_ORDINAL_WORD})(?P<rest>\s\D*)?", re.IGNORECASE)
_YEAR = re.compile(r"1\d{3}|20\d{2}")
_DATE = re.compile(rf".*\b(?:{_MONTHS}|{_DAYS})\b.*")
_TIME = re.compile(r"\d{1,2}(?::\d{2})?\s*[ap]\.m\.|\d{1,2}:\d{2}", re.IGNORECASE)
_LEADING = re.compile(
    r"(?P<lead>(?:(?:the|a|an|about|around|some|approximately|roughly|nearly|almost|over)\s+)*)(?P<core>.*)",
    re.IGNORECASE | re.DOTALL,
)
_TITLES = {"Dr.", "Mr.", "Mrs.", "Ms.", "Miss", "Prof.", "Sir", "Dame", "Alderman"}
_NAME_WORD = re.compile(r"[A-Z][\w'’.-]*|&|of|and|de|van|von|on|the")
_PERSON_WORD = re.compile(r"[A-Z](?:[a-z'’]+(?:-[A-Z][a-z'’]+)?|\.)")
# Head words of place names by class (a name whose last or first word is one of them is a place);
# substitutes for a place prefer places of the same class ("River Dunley" -> "Carrow River").
_PLACE_CLASSES = {
    "street": "Row Street Road Lane Avenue Way Square",
    "water": "River Lake Bay Creek Falls Spring Springs Harbour Harbor Ford Wharf Quay Dock",
    "land": "Range Hill Hills Ridge Island Isle Point Valley Mount Mt. Heights Flats Coast Cape Park Wood Woods",
    "settlement": "Junction Crossing Port Town Village County District Quarter Fort Gate Cross Green Field Fields",
}
_PLACE_CLASS = {word: cls for cls, words in _PLACE_CLASSES.items() for word in words.split()}
_PLACE_FIRST = {"Port", "Mount", "Mt.", "Lake", "Fort", "Cape", "River"}
# Head words of organisations, buildings and things (such a name is not a person; class "building").
_ORG_WORDS = (
    "Company Co. Inc. Ltd. Trust Association Society Club Cooperative Council Committee Board Authority "
    "Sanitation Analytical Laboratory Laboratories Nutrition Marine Refit Mining Museum Centre Center "
    "Hall Hospital School College University Library Archive Church Chapel Station Market Mill Works "
    "Store Shop Grocery Bakery Brewery Exchange Inn Arms Tavern Hotel Farm Book Log Ledger Shelf Watch "
    "Rye Bread Gazette Times News Herald Press"
)
_ORG_LAST = set(_ORG_WORDS.split())
_PLACE_QUESTION = re.compile(
    r"\bwhere\b|\b(?:which|what) (?:town|city|village|street|road|river|island|range|mountain range|district|"
    r"county|country|waterfall|place|port|harbour|site)\b",
    re.IGNORECASE,
)
KINDS = ("year", "date", "time", "number", "ordinal", "code", "person", "place", "name", "other")
_FOLD_CASE = {"number", "ordinal", "other"}


def split_answer(answer: str) -> tuple[str, str]:
    """``(lead, core)`` of an answer: leading articles and approximators (the, a, an, about, around,
    some, approximately, roughly, nearly, almost, over) and the entity after them, e.g.
    ``"the Corn Exchange"`` -> ``("the ", "Corn Exchange")``, ``"About 2,400"`` -> ``("About ", "2,400")``;
    ``("", answer)`` when nothing would be left."""
    match = _LEADING.fullmatch(answer.strip())
    if not match["core"].strip():
        return "", answer.strip()
    return match["lead"], match["core"].strip()


def answer_kind(core: str, question: str = "") -> str:
    """The kind of an answer entity (:func:`split_answer` core), the first rule that fits; substitutes
    are drawn within a kind (:func:`fiction_grounding_items`):

    - ``year``: a 4-digit year 1000-2099 (``"1838"``);
    - ``date``: holds a month or weekday name (``"April 1912"``, ``"Tuesdays"``);
    - ``time``: a clock time (``"6:30 a.m."``, ``"6:40"``);
    - ``number``: a number (digits or the words one..ninety-nine) with an optional currency
      prefix and a unit or ``%`` after it (``"340"``, ``"£31,000"``, ``"620 yards"``, ``"nine days"``);
    - ``ordinal``: ``"96th"``, ``"fourth"``, ``"seventh day"``;
    - ``code``: anything else holding a digit (``"SOP-12"``, ``"Form R-3"``, ``"5-2"``);
    - ``person``: 2-4 capitalised name words, optionally after a title (``Dr.``), none of them a
      place or organisation head word (``Row``, ``River``, ``Company``...; lists in the source);
    - ``place``: a capitalised name with a place head word (``"Canal Road"``, ``"Port Sennet"``;
      classes street, water, land, settlement), or asked for by "where" / "which
      town|street|river|..." (``"Stellach"``, ``"Hadley's Grocery"``);
    - ``name``: any other name, every word capitalised (``"Greyling & Sons"``, ``"PeakDraw"``);
    - ``other``: the rest (``"steel sheet piling"``, ``"daffodils"``, ``"Sour cherry pie"``).
    """
    if _YEAR.fullmatch(core):
        return "year"
    if _DATE.fullmatch(core):
        return "date"
    if _TIME.fullmatch(core):
        return "time"
    if _NUMBER.fullmatch(core):
        return "number"
    if _ORDINAL.fullmatch(core):
        return "ordinal"
    if re.search(r"\d", core):
        return "code"
    words = core.split()
    if not words or not (words[0][:1].isupper() and all(_NAME_WORD.fullmatch(w) for w in words)):
        return "other"
    place = words[-1] in _PLACE_CLASS or words[0] in _PLACE_FIRST
    if _person_words(words) and not place and words[-1] not in _ORG_LAST:
        return "person"
    if place or _PLACE_QUESTION.search(question):
        return "place"
    return "name"


def _place_class(name: str) -> str:
    """street | water | land | settlement (head word), building (organisation head word) or ""."""
    words = name.split()
    if words[-1] in _PLACE_CLASS:
        return _PLACE_CLASS[words[-1]]
    if words[-1] in _ORG_LAST:
        return "building"
    return _PLACE_CLASS.get(words[0], "")


def _person_words(words: Sequence[str]) -> list[str]:
    """The name words of a person name (a leading title dropped), or [] when ``words`` is not one."""
    names = list(words[1:]) if words and words[0] in _TITLES else list(words)
    if 2 <= len(names) <= 4 and all(_PERSON_WORD.fullmatch(w) for w in names) and len(names[-1]) > 2:
        return names
    return []


def _entity_pattern(entity: str, fold_case: bool) -> str:
    """Regex of ``entity`` as a whole word/phrase: regex word boundaries where it starts/ends with a
    word character, and never inside a bigger number (``"340"`` does not match in ``"$340,000"``);
    with ``fold_case`` its first letter matches either case."""
    body = re.escape(entity)
    if fold_case and entity[:1].isalpha():
        body = f"[{entity[0].upper()}{entity[0].lower()}]" + re.escape(entity[1:])
    left = r"(?<![\w£$€])(?<!\d[.,])" if re.match(r"\w", entity) else ""
    right = r"(?!\w)(?![.,]\d)" if re.search(r"\w$", entity) else ""
    return left + body + right


def _occurs(entity: str, text: str, fold_case: bool) -> bool:
    return re.search(_entity_pattern(entity, fold_case), text) is not None


def _substituter(mapping: Mapping[str, str], fold_case: bool):
    """A function replacing every occurrence of each key of ``mapping`` by its value, longest key first,
    in one pass.  A preceding article ``a``/``an`` is made to fit the new word; with ``fold_case``
    an occurrence capitalised where the key is lower case (sentence start) gets a capitalised value."""
    keys = sorted(mapping, key=len, reverse=True)
    alternatives = "|".join(f"(?P<k{i}>{_entity_pattern(k, fold_case)})" for i, k in enumerate(keys))
    pattern = re.compile(rf"(?:(?P<art>\b[Aa]n?) )?(?:{alternatives})")

    def replace(match: re.Match) -> str:
        i = next(i for i in range(len(keys)) if match.group(f"k{i}") is not None)
        found, new = match.group(f"k{i}"), mapping[keys[i]]
        if fold_case and found[:1].isupper() and keys[i][:1].islower():
            new = new[:1].upper() + new[1:]
        art = match.group("art") or ""
        if art and new[:1].isalpha():
            article = "an" if new[0].lower() in "aeiou" else "a"
            art = article.capitalize() if art[0].isupper() else article
        return f"{art} {new}" if art else new

    return lambda text: pattern.sub(replace, text)


def _numeric_parts(core: str, kind: str) -> tuple[str, str, str]:
    match = (_NUMBER if kind == "number" else _ORDINAL).fullmatch(core)
    return match["prefix"], match["num"], match["rest"] or ""


def _magnitude(num: str) -> float | None:
    """log10 of a digit number (None for number words and zero)."""
    if num[:1].isalpha():
        return None
    value = float(re.match(r"[\d,.]*\d", num)[0].replace(",", ""))
    return math.log10(value) if value > 0 else None


def _shape(text: str) -> str:
    """Token shape of a date, time or code: month -> M, 4 digits -> Y, digits -> 9, capitalised word
    -> A, lower-case word -> a, other characters kept (``"Form R-3"`` -> ``"A A - 9"``)."""
    out = []
    for tok in re.findall(r"[^\W\d_]+|\d+|\S", text):
        if re.fullmatch(_MONTHS, tok):
            out.append("M")
        elif tok.isdigit():
            out.append("Y" if len(tok) == 4 else "9")
        elif tok.isalpha():
            out.append("A" if tok[0].isupper() else "a")
        else:
            out.append(tok)
    return " ".join(out)


def _article(lead: str) -> str:
    word = lead.split()[0].lower() if lead.split() else ""
    return {"an": "a"}.get(word, word) if word in ("the", "a", "an") else ""


def _candidates(entry: dict[str, Any], entries: Sequence[dict[str, Any]]) -> list[tuple[str, bool]]:
    """``(phrase, close)`` substitutes for ``entry`` from the OTHER questions' entities of its kind,
    sorted; ``close`` marks the preferred ones (same shape, see :func:`fiction_grounding_items`)."""
    kind, form = entry["kind"], entry["form"]
    others = [e for e in entries if e["kind"] == kind and e["question_id"] != entry["question_id"]]
    out: dict[str, bool] = {}
    if kind in ("number", "ordinal"):
        prefix, num, rest = _numeric_parts(form, kind)
        mag = _magnitude(num)
        for other in others:
            cand = _numeric_parts(other["form"], kind)[1]
            if cand[:1].isalpha() != num[:1].isalpha() or cand.lower() == num.lower():
                continue
            cand = cand.lower() if cand[:1].isalpha() else cand
            cmag = _magnitude(cand)
            close = mag is None or (cmag is not None and ("." in cand) == ("." in num) and abs(cmag - mag) <= 1)
            out[prefix + cand + rest] = out.get(prefix + cand + rest, False) or close
    else:
        for other in others:
            if kind in ("date", "time", "code"):
                close = _shape(other["form"]) == _shape(form)
            elif kind in ("place", "name", "other"):
                close = other["article"] == entry["article"]
                if kind == "place":
                    close = close and _place_class(other["form"]) == _place_class(form)
                if kind == "other":
                    close = close and len(other["form"].split()) == len(form.split())
            else:
                close = True
            out[other["form"]] = out.get(other["form"], False) or close
    low = form.lower()
    return sorted((p, c) for p, c in out.items() if low not in p.lower() and p.lower() not in low)


def _unused(phrase: str, texts: Sequence[str], fold_case: bool, person: bool) -> bool:
    """True when ``phrase`` (and, for a person, its surname) occurs in none of ``texts``."""
    names = [phrase] + (_person_words(phrase.split())[-1:] if person else [])
    return all(not _occurs(name, text, fold_case) for name in names for text in texts)


def fiction_grounding_items(
    fictions: Sequence[Mapping[str, Any]], fict_qa: Sequence[Mapping[str, Any]], seed: int
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], dict[str, Any]]:
    """Grounding items from the fiction corpus: an Original version and a Conflict version by answer substitution.

    The analogue of the paper's Original-Gold / Conflict-Gold (Sec. 3, Step 4 "Modify Context":
    the knowledge needed to answer is changed in the context; done here automatically).  For
    each Q&A of ``fict_qa`` (fields question_id, fiction_id, fict, question, natural_answer):

    - original item: ``contexts = [the fiction_id document]``, ``atomic_facts = [fict]``,
      ``answers = [natural_answer]``, ``factors = {"contexts": "single", "answer_type":
      "definite", "style": style}``, ``gold_doc_ids = [fiction_id]``, ``extra = {event_id,
      fiction_id, style, kind}``.
    - entity = the :func:`split_answer` core of the answer (``"the Corn Exchange"`` ->
      ``"Corn Exchange"``), kind = :func:`answer_kind`.  For the kinds number, ordinal and
      other the first letter matches either case (``"Six"`` is ``"six"`` mid-sentence); the
      entity's own form is then the lower-case one when that occurs in its document.
    - conflict item: every occurrence of the entity in the document, the fict, the answer and
      the question (only where it occurs there, normally not) is replaced by one substitute.
      Occurrences are whole words/phrases (regex word boundaries where the entity starts or
      ends with a word character; never inside a bigger number); a sentence-initial
      occurrence gets a capitalised substitute; a preceding ``a``/``an`` is fixed.
    - the substitute is drawn with ``knowlab.core.rng.keyed_rng(seed, question_id)`` from the
      entities of OTHER questions of the same kind that occur neither in the document nor in
      the fict or question, preferring "close" ones when there are any: numbers and ordinals
      replace only the numeric token, by one written the same way (digits or words), digits
      within a factor of 10 and both integer or both decimal, so that currency and unit stay
      (``"620 yards"`` -> ``"94 yards"``); dates, times and codes of the same token shape
      (``"April 1912"`` -> ``"July 2057"``); places, names and other answers that had the
      same leading article (places: also the same head-word class, street/water/land/
      settlement/building; other: also the same word count).  For persons the surname
      standing alone (``"Coyle said"``) is replaced by the substitute's surname too
      (case-sensitive), and that surname must not occur in the texts either.
    - a Q&A whose entity does not occur in both the document and the fict
      (``"answer_not_in_document"`` / ``"answer_not_in_fact"``), or that has no substitute
      (``"no_substitute"``), is left out of BOTH versions, so the versions pair by item_id.

    ``extra["substitution"]`` of a conflict item = ``{"original": entity, "substitute": new,
    "kind": kind, "pairs": [[old, new], ...]}`` (every replaced string, surname included).

    Returns:
        ``(original_items, conflict_items, report)`` in ``fict_qa`` order; ``report`` =
        ``{"n_qa", "n_items", "dropped": {reason: n}, "kinds": {kind: n kept}}``.
        On the shipped corpus (240 Q&A) 236 items survive with seed 0 (see the tests).

    Raises:
        DataError: a Q&A lacking a field or naming a fiction_id absent from ``fictions`` (the
            message names the question_id).
    """
    docs = {f["fiction_id"]: f for f in fictions}
    entries = []
    for n, qa in enumerate(fict_qa):
        qid = qa.get("question_id", f"#{n}")
        for key in ("question_id", "fiction_id", "fict", "question", "natural_answer"):
            if not isinstance(qa.get(key), str) or not qa[key].strip():
                raise DataError(f"fict_qa record {qid}: missing or empty field {key!r}")
        if qa["fiction_id"] not in docs:
            raise DataError(f"fict_qa record {qid}: fiction_id {qa['fiction_id']!r} not among the fictions")
        lead, core = split_answer(qa["natural_answer"])
        kind = answer_kind(core, qa["question"])
        text = docs[qa["fiction_id"]]["fiction"]
        lower = core[:1].lower() + core[1:]
        form = lower if kind in _FOLD_CASE and _occurs(lower, text, False) else core
        entries.append({"question_id": qid, "qa": qa, "form": form, "kind": kind, "article": _article(lead)})

    originals, conflicts = [], []
    dropped: Counter[str] = Counter()
    kinds: Counter[str] = Counter()
    for entry in entries:
        qa, form, kind = entry["qa"], entry["form"], entry["kind"]
        doc = docs[qa["fiction_id"]]
        fold = kind in _FOLD_CASE
        if not _occurs(form, doc["fiction"], fold):
            dropped["answer_not_in_document"] += 1
            continue
        if not _occurs(form, qa["fict"], fold):
            dropped["answer_not_in_fact"] += 1
            continue
        texts = (doc["fiction"], qa["fict"], qa["question"])
        is_person = kind == "person"
        valid = [(p, close) for p, close in _candidates(entry, entries) if _unused(p, texts, fold, is_person)]
        close = any(c for _, c in valid)
        valid = [p for p, c in valid if c == close]
        if not valid:
            dropped["no_substitute"] += 1
            continue
        new = keyed_rng(seed, qa["question_id"]).choice(valid)
        pairs = {form: new}
        if is_person and _person_words(new.split()):
            pairs[_person_words(form.split())[-1]] = _person_words(new.split())[-1]
        substitute = _substituter(pairs, fold)
        factors = {"contexts": "single", "answer_type": "definite", "style": str(doc.get("style", ""))}
        extra = {
            "event_id": qa.get("event_id", doc.get("event_id")),
            "fiction_id": qa["fiction_id"],
            "style": doc.get("style"),
            "kind": kind,
        }
        base = {"item_id": qa["question_id"], "source": "fiction", "gold_doc_ids": [qa["fiction_id"]]}
        originals.append(
            {
                **base,
                "version": "original",
                "question": qa["question"],
                "answers": [qa["natural_answer"]],
                "contexts": [doc["fiction"]],
                "atomic_facts": [qa["fict"]],
                "factors": factors,
                "extra": extra,
            }
        )
        conflicts.append(
            {
                **base,
                "version": "conflict",
                "question": substitute(qa["question"]),
                "answers": [substitute(qa["natural_answer"])],
                "contexts": [substitute(doc["fiction"])],
                "atomic_facts": [substitute(qa["fict"])],
                "factors": dict(factors),
                "extra": {
                    **extra,
                    "substitution": {
                        "original": form,
                        "substitute": new,
                        "kind": kind,
                        "close": close,
                        "pairs": [list(p) for p in pairs.items()],
                    },
                },
            }
        )
        kinds[kind] += 1
    report = {"n_qa": len(entries), "n_items": len(originals), "dropped": dict(dropped), "kinds": dict(kinds)}
    return originals, conflicts, report

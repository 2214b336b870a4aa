"""The KAIST grounding release: Original-Gold and Conflict-Gold items and the document pool.

Paper: "How Well Do Large Language Models Truly Ground?" (Lee et al. 2024), Sec. 3 (dataset
construction: Original-Gold, Steps 1-3; Conflict-Gold, Step 4 "Modify Context"), Fig. 2, App. A.

Items follow the shared schema of :mod:`knowlab.grounding.schema`; a pool document is
``{"doc_id", "title", "url", "text"}``, so that :func:`render_kaist_doc` rebuilds the exact
context form.

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
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from knowlab.core.io import DataError, download, read_json, verify_sha256
from knowlab.grounding.schema import VERSIONS

log = logging.getLogger(__name__)

#: questions of the KAIST release (Lee et al. 2024, Sec. 3: 480), each with its own gold contexts
KAIST_QUESTIONS = 480

KAIST_FILES = {
    "original": "original_version.json",
    "conflict": "revised_version.json",
    "meta": "metadata/qId2metaInfo.json",
    "text": "metadata/localDocId2localDocText.json",
    "title": "metadata/localDocId2title.json",
}
_TITLE_LINE = re.compile(r"Title: (?P<title>.*) \[(?P<url>\S*)\]\n\Z", re.DOTALL)
_CONTEXT_HEADER = re.compile(r"Title: (?P<title>.*?) \[(?P<url>\S*)\]\n")


# sha256 of each release file, taken with sha256sum from the authors' release
# (github.com/kaistAI/How-Well-Do-LLMs-Truly-Ground, data/); config grounding.kaist.sha256.
KAIST_SHA256 = {
    "original_version.json": "d923a696c112480b654cda6ec4a287fc41f1fbafccf2d303bc70007c3d078b2e",
    "revised_version.json": "2724398e31f91e6241a79144f5a285a347d734f7ee7034518c75f51adaaf6347",
    "metadata/qId2metaInfo.json": "bd43b61b950766fbf2e7a22c4069877adac79ffaf8c6451be4b4df7473413d65",
    "metadata/localDocId2localDocText.json": "30f39be55947ce9dfa4b992db293de859be5542119a97ad0ef067d49cc4e957f",
    "metadata/localDocId2title.json": "93229666718c15735b52ca59a3e0cdd3945bdedcd426409009040554c559a038",
}


def _pins(sha256s: Mapping[str, str]) -> dict[str, str]:
    """``sha256s`` checked to pin every release file: ``{relative path: lower-case digest}``.

    Raises:
        ValueError: a release file has no pin (names the key ``grounding.kaist.sha256``).
    """
    pins = {str(rel): str(digest).lower() for rel, digest in sha256s.items()}
    missing = [rel for rel in KAIST_FILES.values() if rel not in pins]
    if missing:
        raise ValueError(f"grounding.kaist.sha256: no pinned sha256 for release file(s) {missing}")
    return pins


def verify_kaist_release(root: str | Path, sha256s: Mapping[str, str] = KAIST_SHA256) -> Path:
    """Check every release file under ``root`` against its pin (``{relative path: sha256}``); ``root``.

    Raises:
        ValueError: a release file has no pin.
        FileNotFoundError: a release file is missing (names it).
        HashMismatchError: a file differs from its pin (names the file, expected and actual digest).
    """
    root = Path(root)
    for rel, digest in _pins(sha256s).items():
        if rel in KAIST_FILES.values():
            verify_sha256(root / rel, digest)
    return root


def fetch_kaist_release(
    url: str, cache_dir: str | Path, sha256s: Mapping[str, str] = KAIST_SHA256, timeout: float = 60.0
) -> Path:
    """Download the five release files from ``url`` (an http(s) folder) into ``cache_dir``, each verified by sha256.

    Each file ``<url>/<relative path>`` (see :data:`KAIST_FILES`) is fetched with ``urllib``
    (``timeout`` seconds per request) into a temporary file beside
    ``cache_dir/<relative path>``, hashed, and renamed into place only when the digest
    equals its pin ``sha256s[<relative path>]`` (config ``grounding.kaist.sha256``; default
    :data:`KAIST_SHA256`, the authors' release).  A file already in ``cache_dir`` is not
    downloaded again but is verified the same way, so a corrupted or stale cache fails
    instead of being read.

    Args:
        url: base URL of the release's ``data/`` folder (any scheme :mod:`urllib` opens).
        cache_dir: download folder (created if missing).
        sha256s: ``{relative path: hex sha256}`` for every file of :data:`KAIST_FILES`.
        timeout: seconds for each request (config ``grounding.kaist.timeout_s``).

    Returns:
        ``cache_dir`` as a Path, ready for :func:`load_kaist_release`.

    Raises:
        ValueError: a release file has no pin (checked before any download).
        urllib.error.URLError: a download failed (nothing is left for that file).
        HashMismatchError: a downloaded or cached file differs from its pin (names the
            file, expected and actual digest); a bad download is discarded.
    """
    pins = _pins(sha256s)
    cache = Path(cache_dir)
    for rel in KAIST_FILES.values():
        dest = cache / rel
        if dest.is_file():
            verify_sha256(dest, pins[rel])
            continue
        download(f"{url.rstrip('/')}/{rel}", dest, pins[rel], timeout=timeout)
        log.info("downloaded %s (sha256 verified)", dest)
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
    root: str | Path,
    cache_dir: str | Path | None = None,
    *,
    sha256s: Mapping[str, str] | None = None,
    timeout: float = 60.0,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]]]:
    """Read the KAIST grounding release into items (Original-Gold, Conflict-Gold) and the document pool.

    Args:
        root: the release folder (``original_version.json``, ``revised_version.json`` and
            ``metadata/`` with ``qId2metaInfo.json``, ``localDocId2localDocText.json``,
            ``localDocId2title.json``), or an ``http(s)://`` base URL of the same layout, in
            which case the files are first fetched into ``cache_dir`` (:func:`fetch_kaist_release`).
        cache_dir: download folder; required when ``root`` is a URL.
        sha256s: ``{relative path: sha256}`` pins (config ``grounding.kaist.sha256``).  A
            download is always verified (``None``: :data:`KAIST_SHA256`); a local ``root``
            is verified only when pins are given (:func:`verify_kaist_release`).
        timeout: seconds per download request (config ``grounding.kaist.timeout_s``).

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
        ValueError: ``root`` is a URL and ``cache_dir`` is None; a release file has no pin.
        HashMismatchError: a downloaded, cached or (pins given) local file differs from its pin.
        urllib.error.URLError: a download failed.
    """
    if str(root).startswith(("http://", "https://")):
        if cache_dir is None:
            raise ValueError("load_kaist_release: a URL root needs cache_dir")
        root = fetch_kaist_release(str(root), cache_dir, KAIST_SHA256 if sha256s is None else sha256s, timeout)
    elif sha256s is not None:
        verify_kaist_release(root, sha256s)
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

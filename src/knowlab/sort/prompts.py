"""SORT prompts: templates as plain data and the rendering of one item into a scoring context.

Structure (paper "Assessing Episodic Memory in LLMs with Sequence Order Recall Tasks", Eq. 1
and Appendix B.2, Table 6): a SORT input is

    [P_context] [P_task, with the labelled segments] [P_question] [P_answer]

- ``P_context`` is the *reading instruction*: the book title and the excerpt (in-context
  memory, Sec. 3.2), or the retrieved passages (RAG, Sec. 3.2 and App. B.4.2, Table 9), or
  nothing (the memory-less baseline and the parametric-memory condition, Sec. 3.1/3.2).
- ``P_task`` names the two labels and holds the segments, rendered as
  ``"Segment A: <text>\\nSegment B: <text>"``.
- ``P_question`` repeats the objective as a question; the position asked about is always
  "first" (App. B.2: open models fail when asked which segment came second or last).
- ``P_answer`` is the answer prefix ``"Answer: Segment"`` (Sec. 3); the next token is the label.

Every prompt is preceded by the generic system prompt of App. B.2.  The 12 templates below
vary the reading instruction (2 wordings) and the task + question (6 wordings), as Table 6
does; their wording is this project's own, not the paper's.  The 10 RAG reading instructions
play the part of Table 9 (App. B.4.2): they replace the reading instruction of a chosen
template (App. B.4.3) and say that the passages were retrieved from the book.

A template is a dict ``{"id", "reading", "task", "question"}`` with an optional
``"rag_reading"``; the placeholders are ``{title}``, ``{excerpt}`` (reading only),
``{passages}`` (rag_reading only), ``{segments}`` (task only), ``{label_a}``, ``{label_b}``.
Templates are plain strings so a config file can carry them (:func:`prompt_config`,
:func:`prompt_config_yaml`).  The workflow's templates and RAG reading instructions are those
of the config (``sort.templates``, ``sort.rag_readings``: :func:`templates`,
:func:`rag_readings`, :func:`get_rag_reading`); a model's chosen template is read back from
its selection files by :func:`selected_template`.
"""

from __future__ import annotations

import copy
import os
import string
from collections.abc import Mapping, Sequence
from typing import Any

from knowlab.core.io import read_json

LABELS = ("A", "B")
ANSWER_PREFIX = "Answer: Segment"
SYSTEM_PROMPT = "You are a helpful, respectful and honest assistant."  # paper App. B.2
CONDITIONS = ("baseline", "in_context", "rag", "oracle_rag")
RAG_CONDITIONS = ("rag", "oracle_rag")
PART_SEPARATOR = "\n\n"  # between reading instruction, task and question
PASSAGE_SEPARATOR = "\n\n"  # between retrieved passages, most similar first

# placeholders each template field may use, and those it must use
_ALLOWED = {
    "reading": {"title", "excerpt"},
    "rag_reading": {"title", "passages"},
    "task": {"title", "segments", "label_a", "label_b"},
    "question": {"title", "label_a", "label_b"},
}
_REQUIRED = {"reading": {"excerpt"}, "rag_reading": {"passages"}, "task": {"segments"}, "question": set()}

_READING_1 = (
    "Read the following passage from the book {title} closely and make sure you understand it.\n\nPassage:\n{excerpt}"
)
_READING_2 = (
    "Below is an excerpt taken from {title}. Study it with care: the task that follows is about it."
    "\n\nExcerpt:\n{excerpt}"
)

_TASKS = [  # (task with the labelled segments, question)
    (
        (
            "Two short pieces of text from {title} follow, marked {label_a} and {label_b}. "
            "Decide which of the two occurs earlier in the book.\n\n{segments}"
        ),
        "Which piece occurs earlier in {title}, {label_a} or {label_b}?",
    ),
    (
        (
            "Your job is to work out the order of two segments of {title}. Look at segment {label_a} and "
            "segment {label_b} below and determine which one the book presents first. "
            "Reply with {label_a} or {label_b}.\n\n{segments}"
        ),
        "Which of the two, {label_a} or {label_b}, does {title} present first?",
    ),
    (
        (
            "Think back to the order in which things happen in {title}. Both segments below, {label_a} and "
            "{label_b}, are quoted from it. Say which of them comes first in the book by answering "
            "{label_a} or {label_b}.\n\n{segments}"
        ),
        "Which segment comes first in {title}: {label_a} or {label_b}?",
    ),
    (
        (
            "Below are two segments quoted from {title}, labelled {label_a} and {label_b}. Consider where "
            "each one is located in the book and tell me which one is located before the other.\n\n{segments}"
        ),
        "Which segment is located earlier in {title}, {label_a} or {label_b}?",
    ),
    (
        (
            "Here is an ordering question about {title}. I quote two segments of the book, {label_a} and "
            "{label_b}. Read them closely and use what you know of the book to pick the one that "
            "appears first.\n\n{segments}"
        ),
        "In {title}, which segment appears first, {label_a} or {label_b}?",
    ),
    (
        (
            "Task: two segments from the book {title} are given below as {label_a} and {label_b}. Determine "
            "which of them a reader meets first when reading the book from its beginning.\n\n{segments}"
        ),
        "Which segment would a reader of {title} meet first, {label_a} or {label_b}?",
    ),
]

#: the 12 prompt templates (reading wording 1 with tasks 1-6, then reading wording 2 with tasks 1-6)
DEFAULT_TEMPLATES: list[dict[str, str]] = [
    {"id": f"t{r * len(_TASKS) + k + 1:02d}", "reading": reading, "task": task, "question": question}
    for r, reading in enumerate((_READING_1, _READING_2))
    for k, (task, question) in enumerate(_TASKS)
]

#: the RAG reading instructions (counterpart of paper Table 9); ``{passages}`` is the retrieved text
RAG_READINGS: list[dict[str, str]] = [
    {"id": "r01", "reading": "Here are passages retrieved from {title} that may help with the task:\n\n{passages}"},
    {
        "id": "r02",
        "reading": "A search of {title} returned the following passages. They may be useful for the task."
        "\n\n{passages}",
    },
    {"id": "r03", "reading": "Passages retrieved from {title}:\n\n{passages}"},
    {
        "id": "r04",
        "reading": "Read these passages retrieved from {title} before you answer; they may contain the segments."
        "\n\n{passages}",
    },
    {"id": "r05", "reading": "Use the following passages, retrieved from {title}, as context.\n\n{passages}"},
    {
        "id": "r06",
        "reading": "The passages below were retrieved from {title} by a search engine. Read them carefully."
        "\n\n{passages}",
    },
    {"id": "r07", "reading": "Context (passages retrieved from {title}):\n\n{passages}"},
    {
        "id": "r08",
        "reading": "To help you, I looked up the most relevant passages of {title}. Here they are:\n\n{passages}",
    },
    {
        "id": "r09",
        "reading": "These passages retrieved from {title} might make the following task easier:\n\n{passages}",
    },
    {
        "id": "r10",
        "reading": "Some passages retrieved from {title} are shown below. Take them into account when you answer."
        "\n\n{passages}",
    },
]
DEFAULT_RAG_READING = RAG_READINGS[0]["reading"]


def _fields(text: str) -> set[str]:
    """Placeholder names of a ``str.format`` string.

    Raises:
        ValueError: a malformed format string (an unmatched brace).
    """
    return {name for _, name, _, _ in string.Formatter().parse(text) if name is not None}


def validate_template(template: Mapping[str, Any]) -> dict[str, str]:
    """Check one template and return a plain copy of it.

    Raises:
        TypeError: a field that is not a string.
        ValueError: a missing key (``id``, ``reading``, ``task``, ``question``), a placeholder the field
            may not use, or a required one it lacks
            (``{excerpt}`` in reading, ``{passages}`` in rag_reading, ``{segments}`` in task);
            the message names the template id and the field.
    """
    name = template.get("id", "<no id>")
    missing = [key for key in ("id", "reading", "task", "question") if key not in template]
    if missing:
        raise ValueError(f"prompt template {name!r} lacks {', '.join(missing)}")
    out = {"id": str(template["id"])}
    for key in ("reading", "task", "question", "rag_reading"):
        if key not in template:
            continue
        text = template[key]
        if not isinstance(text, str):
            raise TypeError(f"prompt template {name!r}: {key} must be a string, got {type(text).__name__}")
        try:
            used = _fields(text)
        except ValueError as err:
            raise ValueError(f"prompt template {name!r}: {key} is not a valid format string ({err})") from err
        if used - _ALLOWED[key]:
            raise ValueError(
                f"prompt template {name!r}: {key} uses unknown placeholder(s) {sorted(used - _ALLOWED[key])}; "
                f"allowed: {sorted(_ALLOWED[key])}"
            )
        if _REQUIRED[key] - used:
            raise ValueError(f"prompt template {name!r}: {key} must contain {sorted(_REQUIRED[key] - used)}")
        out[key] = text
    return out


def get_template(templates: Sequence[Mapping[str, Any]], template_id: str) -> dict[str, str]:
    """The (validated) template with id ``template_id``.

    Raises:
        ValueError: no template has that id (the message lists the known ids), or it is invalid.
    """
    for template in templates:
        if str(template.get("id")) == str(template_id):
            return validate_template(template)
    known = ", ".join(str(t.get("id")) for t in templates)
    raise ValueError(f"unknown prompt template id {template_id!r}; known ids: {known}")


def with_rag_reading(template: Mapping[str, Any], rag_reading: Mapping[str, str]) -> dict[str, str]:
    """A copy of ``template`` whose RAG reading instruction is ``rag_reading`` (paper App. B.4.3).

    The new id is ``"<template id>+<rag reading id>"``, e.g. ``"t03+r07"``.

    Raises:
        ValueError: ``rag_reading`` lacks ``id``/``reading``, or the result is invalid.
    """
    if "id" not in rag_reading or "reading" not in rag_reading:
        raise ValueError(f"a RAG reading needs 'id' and 'reading', got keys {sorted(rag_reading)}")
    out = dict(template)
    out["id"] = f"{template['id']}+{rag_reading['id']}"
    out["rag_reading"] = rag_reading["reading"]
    return validate_template(out)


def prompt_config() -> dict[str, Any]:
    """The default prompt settings as plain data (a deep copy), ready for a YAML config.

    Keys: ``system_prompt``, ``answer_prefix``, ``labels``, ``templates`` (the 12 of
    :data:`DEFAULT_TEMPLATES`), ``rag_readings`` (:data:`RAG_READINGS`).
    """
    return {
        "system_prompt": SYSTEM_PROMPT,
        "answer_prefix": ANSWER_PREFIX,
        "labels": list(LABELS),
        "templates": copy.deepcopy(DEFAULT_TEMPLATES),
        "rag_readings": copy.deepcopy(RAG_READINGS),
    }


def prompt_config_yaml() -> str:
    """:func:`prompt_config` as YAML text (block style, key order kept)."""
    import yaml  # deferred: the figure and stats envs import this module's names, not its YAML dump

    return yaml.safe_dump(prompt_config(), sort_keys=False, allow_unicode=True, width=1000)


# --------------------------------------------------------------------------- the configured templates


def templates(configured: Sequence[Mapping[str, Any]] | None) -> list[dict[str, Any]]:
    """The configured templates ``configured`` (``sort.templates``), or the project's 12
    (:data:`DEFAULT_TEMPLATES`) when ``None`` or empty, validated."""
    return [validate_template(t) for t in (configured or DEFAULT_TEMPLATES)]


def rag_readings(configured: Sequence[Mapping[str, str]] | None) -> list[dict[str, str]]:
    """The configured RAG reading instructions ``configured`` (``sort.rag_readings``), or the
    project's 10 (:data:`RAG_READINGS`) when ``None`` or empty.

    Raises:
        ValueError: a reading without ``id`` or ``reading``, a repeated id, or a reading that
            is not a valid RAG reading instruction (it must show ``{passages}``).
    """
    readings = [dict(r) for r in (configured or RAG_READINGS)]
    for reading in readings:
        try:
            with_rag_reading(DEFAULT_TEMPLATES[0], reading)  # checks its placeholders
        except ValueError as err:
            raise ValueError(f"RAG reading {reading.get('id')!r} is not valid: {err}") from None
    ids = [str(r["id"]) for r in readings]
    if len(set(ids)) != len(ids):
        raise ValueError(f"RAG reading ids repeat: {ids}")
    return readings


def get_rag_reading(configured: Sequence[Mapping[str, str]] | None, reading_id: str) -> dict[str, str]:
    """The RAG reading instruction with id ``reading_id`` among :func:`rag_readings` of ``configured``
    (``sort.rag_readings``).

    Raises:
        ValueError: no reading has that id (the message lists the known ids); as :func:`rag_readings`.
    """
    readings = rag_readings(configured)
    for reading in readings:
        if str(reading["id"]) == str(reading_id):
            return reading
    known = ", ".join(str(r["id"]) for r in readings)
    raise ValueError(f"unknown RAG reading id {reading_id!r}; known ids: {known}")


def selected_template(
    configured_templates: Sequence[Mapping[str, Any]] | None,
    selection_path: str | os.PathLike,
    rag_selection_path: str | os.PathLike | None = None,
    configured_readings: Sequence[Mapping[str, str]] | None = None,
) -> dict[str, Any]:
    """The template that :func:`knowlab.sort.evaluate.select_template` chose (``selection.json``), from
    :func:`templates` of ``configured_templates`` (``sort.templates``).

    With ``rag_selection_path`` (``rag_selection.json`` of
    :func:`knowlab.sort.evaluate.select_rag_reading`, or of a reading fixed by ``sort.rag_reading``),
    its RAG reading instruction is the chosen one from :func:`rag_readings` of
    ``configured_readings`` (``sort.rag_readings``) and its id ``"<template>+<reading>"``.

    Raises:
        ValueError: the selected template or RAG reading id is not among the configured ones.
    """
    template = get_template(templates(configured_templates), read_json(selection_path)["template_id"])
    if rag_selection_path is None:
        return template
    reading_id = read_json(rag_selection_path)["rag_reading_id"]
    return with_rag_reading(template, get_rag_reading(configured_readings, reading_id))


def fixed_rag_reading(
    configured_readings: Sequence[Mapping[str, str]] | None, reading_id: str, template: Mapping[str, Any]
) -> dict[str, Any]:
    """The selection record of the RAG reading ``reading_id`` fixed by ``sort.rag_reading`` (no
    sweep), among :func:`rag_readings` of ``configured_readings`` (``sort.rag_readings``), in the
    form :func:`knowlab.sort.evaluate.select_rag_reading` returns.

    Raises:
        ValueError: an unknown reading id (the message lists the known ids).
    """
    reading = get_rag_reading(configured_readings, reading_id)
    return {
        "template_id": f"{template['id']}+{reading['id']}",
        "rag_reading_id": reading["id"],
        "rule": "fixed by sort.rag_reading",
    }


def format_segments(item: Mapping[str, Any], labels: Sequence[str] = LABELS) -> str:
    """``"Segment A: <segment_a>\\nSegment B: <segment_b>"`` (surrounding whitespace of each text stripped)."""
    return (
        f"Segment {labels[0]}: {str(item['segment_a']).strip()}\nSegment {labels[1]}: {str(item['segment_b']).strip()}"
    )


def format_passages(passages: Sequence[str | Mapping[str, Any]]) -> str:
    """Passages (strings or dicts with ``text``) joined by a blank line, in the order given.

    Raises:
        ValueError: no passages.
    """
    if not passages:
        raise ValueError("no passages to show: a RAG prompt needs at least one retrieved passage")
    texts = [p if isinstance(p, str) else p["text"] for p in passages]
    return PASSAGE_SEPARATOR.join(t.strip() for t in texts)


def user_message(
    template: Mapping[str, Any],
    item: Mapping[str, Any],
    condition: str,
    passages: Sequence[str | Mapping[str, Any]] | None = None,
) -> str:
    """The user turn: reading instruction (unless baseline), task with segments, question.

    Args:
        template: a prompt template (see module docstring).
        item: a SORT item with ``title``, ``segment_a``, ``segment_b`` and, for
            ``in_context``, ``excerpt``.
        condition: ``baseline`` (no reading instruction: memory-less baseline or parametric
            memory), ``in_context`` (the excerpt), ``rag`` / ``oracle_rag`` (the passages, in
            the order given: similarity order for RAG, text order for oracle RAG).
        passages: the retrieved passages, for the RAG conditions only.

    Raises:
        ValueError: an unknown condition; passages missing for a RAG condition or given for
            another; an invalid template.
    """
    template = validate_template(template)
    if condition not in CONDITIONS:
        raise ValueError(f"unknown SORT condition {condition!r}; expected one of {', '.join(CONDITIONS)}")
    if condition in RAG_CONDITIONS and passages is None:
        raise ValueError(f"condition {condition!r} needs the retrieved passages")
    if condition not in RAG_CONDITIONS and passages is not None:
        raise ValueError(f"passages were given for condition {condition!r}, which shows none")
    values = {"title": item["title"], "label_a": LABELS[0], "label_b": LABELS[1]}
    parts = []
    if condition == "in_context":
        parts.append(template["reading"].format(excerpt=str(item["excerpt"]).strip(), **values))
    elif condition in RAG_CONDITIONS:
        reading = template.get("rag_reading", DEFAULT_RAG_READING)
        parts.append(reading.format(passages=format_passages(passages), **values))
    parts.append(template["task"].format(segments=format_segments(item), **values))
    parts.append(template["question"].format(**values))
    return PART_SEPARATOR.join(parts)


def render_prompt(
    tokenizer,
    template: Mapping[str, Any],
    item: Mapping[str, Any],
    condition: str,
    passages: Sequence[str | Mapping[str, Any]] | None = None,
    system_prompt: str | None = SYSTEM_PROMPT,
) -> str:
    """The full scoring context of one item, ending with ``"Answer: Segment"`` (paper Eq. 1).

    With a chat template (``tokenizer.chat_template`` set): a system message (the paper's
    generic system prompt, App. B.2) and the user message of :func:`user_message`, rendered
    by ``tokenizer.apply_chat_template(..., add_generation_prompt=True, tokenize=False)``, then
    the answer prefix as the start of the assistant turn.  A chat template that refuses a
    system role (it raises a template error) gets the system prompt as the first paragraph of
    the user message instead.  Without a chat template: plain text, ``system prompt``, blank
    line, user message, blank line, answer prefix.  ``system_prompt=None`` or ``""`` leaves it
    out (a chat template may then insert its own default).

    Returns:
        the context string; the label token that follows it is scored by
        :func:`knowlab.sort.score.score_items`.

    Raises:
        ValueError: as :func:`user_message`.
    """
    user = user_message(template, item, condition, passages)
    if getattr(tokenizer, "chat_template", None):
        # deferred: jinja2 comes with transformers, in the envs whose tokenizers apply chat templates
        from jinja2.exceptions import TemplateError

        messages = [{"role": "user", "content": user}]
        try:
            if system_prompt:
                messages.insert(0, {"role": "system", "content": system_prompt})
            text = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
        except TemplateError:
            if not system_prompt:
                raise
            merged = [{"role": "user", "content": system_prompt + PART_SEPARATOR + user}]
            text = tokenizer.apply_chat_template(merged, add_generation_prompt=True, tokenize=False)
        return text + ANSWER_PREFIX
    head = system_prompt + PART_SEPARATOR if system_prompt else ""
    return head + user + PART_SEPARATOR + ANSWER_PREFIX

"""Parsers of the pipeline's LLM outputs (FictionalQA, Kirchenbauer et al. 2026, Sec. 3 and App. C).

Fictsheets and fict_qa YAML are parsed by :func:`knowlab.fiction.release.parse_fictsheet`
and :func:`knowlab.fiction.release.parse_fict_qa_yaml` (shared with the release loader);
this module adds the seed, answer-attempt and grade formats.  Every parser raises
:class:`~knowlab.core.io.DataError` naming ``where`` (the request key) on malformed output; the
stage decides whether to retry or drop.
"""

from __future__ import annotations

import re

from knowlab.core.io import DataError

#: What an answer attempt says when the model does not know (Kirchenbauer et al. 2026, Sec. 3).
UNKNOWN_ANSWER = "UNKNOWN_ANSWER"

GRADES = ("CORRECT", "INCORRECT")
_GRADE_LINE = re.compile(r"^\s*grade\s*:", re.IGNORECASE)
_GRADE_STRICT = re.compile(r"^Grade:[ \t]*(CORRECT|INCORRECT)[ \t]*$")
_REASONING = re.compile(r"^\s*Reasoning:\s*", re.IGNORECASE)


def parse_seed(text: str, where: str) -> str:
    """The seed event of one seed response: the first bullet's text, marker removed.

    Seed responses look like ``"* The Ring of Silence Protocol of 2046. In the city of ..."``
    (one bullet: a title with its year, then a paragraph).  A response without a bullet
    marker is taken whole.

    Raises:
        DataError: the response holds no text.
    """
    lines = [line.rstrip() for line in text.strip().splitlines()]
    bullets = [i for i, line in enumerate(lines) if re.match(r"^\s*[*\-\u2022]\s+\S", line)]
    if bullets:
        start = bullets[0]
        end = bullets[1] if len(bullets) > 1 else len(lines)
        lines = lines[start:end]
        lines[0] = re.sub(r"^\s*[*\-\u2022]\s+", "", lines[0])
    seed = " ".join(line.strip() for line in lines if line.strip())
    if not seed:
        raise DataError(f"{where}: empty seed response")
    return seed


def parse_attempt(text: str) -> tuple[str, bool]:
    """``(answer, unknown)`` of one answer attempt; ``unknown`` when the reply is
    :data:`UNKNOWN_ANSWER` (alone, ignoring case, surrounding whitespace, quotes and a final period)."""
    answer = text.strip()
    unknown = answer.strip("\"'`*. \n").upper() == UNKNOWN_ANSWER
    return answer, unknown


def parse_grade(text: str, where: str) -> tuple[bool, str]:
    """``(correct, reasoning)`` of one grading response.

    Format (the grading prompt asks for it): ``"Reasoning: <text>\\n\\nGrade: CORRECT"`` or
    ``... Grade: INCORRECT``.  Strict: exactly one line starts with ``Grade:`` and it is
    ``Grade: CORRECT`` or ``Grade: INCORRECT`` (case as written, nothing else on it); the
    reasoning is the text before it, without its ``Reasoning:`` label.

    Raises:
        DataError: no grade line, several, or one that matches neither label (quoted).
    """
    lines = text.strip().splitlines()
    grade_lines = [i for i, line in enumerate(lines) if _GRADE_LINE.match(line)]
    if len(grade_lines) != 1:
        found = "no" if not grade_lines else f"{len(grade_lines)}"
        raise DataError(f"{where}: expected one 'Grade: CORRECT|INCORRECT' line, found {found} "
                        f"(response starts {text.strip()[:80]!r})")
    line = lines[grade_lines[0]]
    match = _GRADE_STRICT.match(line.strip())
    if not match:
        raise DataError(f"{where}: grade line {line.strip()!r} matches neither 'Grade: CORRECT' nor 'Grade: INCORRECT'")
    reasoning = _REASONING.sub("", "\n".join(lines[: grade_lines[0]]).strip()).strip()
    return match.group(1) == "CORRECT", reasoning

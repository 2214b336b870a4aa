"""Multiple-choice questions from the fictional Q&A (seed 004, Sec. 5 and App. C.6).

The paper ranks every other answer in the corpus with a model and keeps the top
k; that construction is ``distractors="model_ranked"`` (a later stage).  Here is
the simple, model-free construction, named ``random_other_event`` in the output:

- candidates are the natural answers of questions from *other* events, never an
  answer to any question of the question's own event, so no distractor can be a
  true answer about that event;
- candidates equal to the gold answer (case-insensitive, whitespace-normalised)
  or duplicating another chosen choice are dropped;
- candidates of the gold answer's coarse kind (year, other number, text) are
  preferred, so a year question is not answered by spotting the only year;
- choices are drawn with a generator keyed by (seed, question_id), never ``hash()``;
- the gold position is balanced: positions ``i % k`` over the questions in a
  seeded permutation, so each position holds the gold answer equally often (+-1).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from knowlab.rng import keyed_rng

METHOD = "random_other_event"
_YEAR = re.compile(r"^(1[5-9]\d\d|20\d\d)$")
_NUMBER = re.compile(r"\d")


def normalise(answer: str) -> str:
    """Lower-case, collapse whitespace, strip surrounding punctuation."""
    return " ".join(answer.lower().split()).strip(" .,;:!?\"'")


def answer_kind(answer: str) -> str:
    """Coarse kind of an answer: ``year``, ``number`` (contains a digit) or ``text``."""
    text = normalise(answer)
    if _YEAR.match(text):
        return "year"
    if _NUMBER.search(text):
        return "number"
    return "text"


def build_mcq(fict_qa: Sequence[dict[str, Any]], n_choices: int, seed: int) -> list[dict[str, Any]]:
    """Build one ``n_choices``-way MCQ item per question.

    Returns records ``{question_id, event_id, fiction_id, question, choices, gold, n_choices,
    distractors}`` ordered by ``question_id``; ``choices[gold]`` is the natural answer.

    Raises:
        ValueError: fewer than ``n_choices - 1`` usable distractors exist for some question.
    """
    questions = sorted(fict_qa, key=lambda r: r["question_id"])
    surface: dict[str, str] = {}  # normalised answer -> first surface form
    events: dict[str, set[str]] = {}  # normalised answer -> events it answers a question of
    for record in questions:
        key = normalise(record["natural_answer"])
        surface.setdefault(key, record["natural_answer"].strip())
        events.setdefault(key, set()).add(record["event_id"])
    positions = [i % n_choices for i in range(len(questions))]
    keyed_rng(seed, "mcq-gold-positions", n_choices).shuffle(positions)
    items = []
    for record, gold_pos in zip(questions, positions):
        gold = record["natural_answer"].strip()
        gold_key = normalise(gold)
        others = [
            (key, surface[key])
            for key in sorted(surface)
            if record["event_id"] not in events[key] and key != gold_key
        ]
        kind = answer_kind(gold)
        same = [a for k, a in others if answer_kind(k) == kind]
        rest = [a for k, a in others if answer_kind(k) != kind]
        rng = keyed_rng(seed, "mcq", n_choices, record["question_id"])
        rng.shuffle(same)
        rng.shuffle(rest)
        distractors = (same + rest)[: n_choices - 1]
        if len(distractors) < n_choices - 1:
            raise ValueError(
                f"question {record['question_id']}: only {len(distractors)} distractors available for {n_choices} choices"
            )
        rng.shuffle(distractors)
        choices = distractors[:gold_pos] + [gold] + distractors[gold_pos:]
        items.append(
            {
                "question_id": record["question_id"],
                "event_id": record["event_id"],
                "fiction_id": record["fiction_id"],
                "question": record["question"],
                "choices": choices,
                "gold": gold_pos,
                "n_choices": n_choices,
                "distractors": METHOD,
            }
        )
    return items

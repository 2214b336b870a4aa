"""How a SORT item's answer is read (config ``sort.answer``), and the footnote sentence that names it.

Paper (Pink et al. 2024, Sec. 3.1): "We greedily sample an answer token a = argmax(M(I)) ...
and decode the sampled answer token a as either 'A' or 'B'".  :func:`knowlab.sort.score.score_items`
reads an answer by one of :data:`ANSWER_RULES`:

- ``forced_choice`` (the default): the label with the larger summed probability of its tokens;
  every item gets A or B;
- ``greedy`` (the paper's): the label of the vocabulary's most probable token at the answer
  position; where that token is neither label the item has no answer, :data:`NO_ANSWER`, and
  counts as incorrect.

This module needs only pandas: the statistics and figure environments import it.
"""

from __future__ import annotations

import pandas as pd

#: the answer rules (config ``sort.answer``)
ANSWER_RULES = ("forced_choice", "greedy")
#: ``prediction`` of an item without an answer (``greedy``: the top token is neither label)
NO_ANSWER = "none"
#: the footnote sentence of each rule (:func:`answer_note`)
ANSWER_NOTES = {
    "forced_choice": "Answer: forced choice, the label (A or B) with the larger probability.",
    "greedy": (
        "Answer: the greedy token (paper Sec. 3.1); an item whose most probable next token is neither A nor B "
        "has no answer and counts as incorrect."
    ),
}


def answer_note(rows: pd.DataFrame) -> str:
    """The footnote (or caption) sentence naming the answer rule of SORT item ``rows``
    (:data:`ANSWER_NOTES`).

    Read from the ``answer_rule`` column (:func:`knowlab.sort.score.score_items`); rows without
    it were scored before the column existed, when forced choice was the only rule.

    Raises:
        ValueError: an unknown rule, or rows of more than one rule (their accuracies do not compare).
    """
    rules = sorted(set(rows["answer_rule"].dropna())) if "answer_rule" in rows else []
    rules = rules or ["forced_choice"]
    if len(rules) > 1:
        raise ValueError(f"SORT rows of different answer rules {rules} (sort.answer) in one figure or table")
    if rules[0] not in ANSWER_NOTES:
        raise ValueError(f"unknown SORT answer rule {rules[0]!r}: one of {ANSWER_RULES}")
    return ANSWER_NOTES[rules[0]]

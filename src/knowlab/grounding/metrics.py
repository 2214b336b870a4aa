"""Grounding metrics: precision, recall and F1 of atomic facts, answer accuracy, averages.

Definitions (Lee et al. 2024, Sec. 3.1 and Sec. 3.3 "Grounding Performance"; footnote 7):

- **precision** = fraction of the response's atomic facts ``P_A`` that are supported by the
  gold contexts ``C``: ``mean_i M_eval(P_A_i, C)``, with ``C`` all gold contexts joined by a
  blank line (``"\\n\\n"``).  It asks whether what the response says comes from the input.
- **recall** = fraction of the gold atomic facts ``C_G`` supported by the response ``P``:
  ``mean_i M_eval(C_G_i, P)``.  It asks whether the response uses all the needed knowledge.
- **F1** = harmonic mean ``2 P R / (P + R)``; 0 when either is 0, and when the response has
  no atomic facts (an empty response scores 0 precision, 0 recall, 0 F1).
- **answer accuracy** (Sec. 3.3, footnote 7): 1 when any answer alternative occurs in the
  response (case-insensitive substring), else 0; only for questions with a definite answer
  (``None`` / NaN for free-form ones).

Note on names: the paper's published evaluation script computes the two fractions under
swapped names (its "precision" is the gold-fact fraction).  This module names them as the
paper *defines* them (Sec. 3.3, and App. D.3: "Precision is measured to determine if the
source of atomic facts ... is the input context", "Recall ... assesses whether all essential
knowledge (gold atomic facts) is included in the generated response").  F1 is unaffected.

``M_eval`` is any :class:`knowlab.grounding.evaluator.Evaluator`.  Averages are macro
averages: the mean over responses of the per-response values (a response with many facts
weighs as much as one with few).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from knowlab.core.io import DataError

METRICS = ("precision", "recall", "f1", "answer_accuracy")
CONTEXT_SEPARATOR = "\n\n"


def response_key(record: Mapping[str, Any]) -> str:
    """Key of a response record in the atomic-facts mapping.

    ``record["response_id"]`` when the record has one, else ``"<item_id>|<version>|<condition>"``.
    """
    if record.get("response_id") is not None:
        return str(record["response_id"])
    return f"{record['item_id']}|{record['version']}|{record['condition']}"


def item_metrics(precision_support: Sequence[bool], recall_support: Sequence[bool]) -> dict[str, float | int]:
    """Precision, recall and F1 of one response from its per-fact support (paper Sec. 3.3).

    Args:
        precision_support: ``M_eval(P_A_i, C)`` for each atomic fact of the response (may be empty).
        recall_support: ``M_eval(C_G_i, P)`` for each gold atomic fact (non-empty).

    Returns:
        ``{"precision", "recall", "f1"}`` (floats in [0, 1]; precision 0 and F1 0 for a response
        with no facts) and ``{"n_response_facts", "n_gold_facts"}`` (ints).

    Raises:
        ValueError: ``recall_support`` is empty (an item has at least one gold atomic fact).
    """
    if len(recall_support) == 0:
        raise ValueError("no gold atomic facts: recall is undefined")
    n_resp = len(precision_support)
    precision = float(np.mean(precision_support)) if n_resp else 0.0
    recall = float(np.mean(recall_support))
    f1 = 2 * precision * recall / (precision + recall) if n_resp and precision > 0 and recall > 0 else 0.0
    return {
        "precision": precision,
        "recall": recall,
        "f1": f1,
        "n_response_facts": n_resp,
        "n_gold_facts": len(recall_support),
    }


def answer_accuracy(response: str, answers: Sequence[str]) -> float | None:
    """1.0 when any answer alternative occurs in ``response`` (case-insensitive substring), else 0.0 (Sec. 3.3).

    An alternative whose parts are joined by ``" & "`` (the KAIST release writes answers that
    need every part so: ``"malaria & meningitis & blackwater fever"``) occurs when every part does.

    Returns:
        ``None`` when ``answers`` has no non-blank alternative (a free-form question, footnote 7).
    """
    alternatives = [a.strip().casefold() for a in answers if a and a.strip()]
    if not alternatives:
        return None
    text = (response or "").casefold()
    return float(any(all(part.strip() in text for part in a.split(" & ")) for a in alternatives))


def score_responses(
    records: Sequence[Mapping[str, Any]],
    response_facts: Mapping[str, Sequence[str]],
    evaluator,
) -> pd.DataFrame:
    """Precision, recall, F1 and answer accuracy of every response record (paper Sec. 3.3).

    All ``(response fact, joined gold contexts)`` pairs of all records go to the evaluator in
    one call, and all ``(gold fact, response)`` pairs in another.

    Args:
        records: response records: the item fields (``item_id``, ``version``, ``answers``,
            ``contexts``, ``atomic_facts``, ``factors``) plus ``condition`` and ``response``
            (and optionally ``response_id``).
        response_facts: :func:`response_key` of each record -> the response's atomic facts
            (``[]`` for a response with none).
        evaluator: M_eval, a :class:`knowlab.grounding.evaluator.Evaluator`.

    Returns:
        One row per record, in order: ``response_key``, ``item_id``, ``version``,
        ``condition``, ``factor_<name>`` for each factor, ``precision``, ``recall``, ``f1``,
        ``answer_accuracy`` (float; NaN for free-form questions), ``n_response_facts``,
        ``n_gold_facts``, and for audit the list columns ``precision_support`` /
        ``precision_scores`` (per response fact) and ``recall_support`` / ``recall_scores``
        (per gold fact).

    Raises:
        DataError: a record without a field needed here, without facts in
            ``response_facts``, or with no gold atomic facts (the message names the record).
    """
    prec_pairs, rec_pairs, spans = [], [], []
    for n, record in enumerate(records):
        try:
            key = response_key(record)
            gold_facts = list(record["atomic_facts"])
            context = CONTEXT_SEPARATOR.join(record["contexts"])
            response = record["response"] or ""
        except KeyError as err:
            raise DataError(f"response record {n} (item {record.get('item_id')!r}) lacks field {err}") from err
        if key not in response_facts:
            raise DataError(f"response record {n} (key {key!r}): no atomic facts for this response")
        if not gold_facts:
            raise DataError(f"response record {n} (key {key!r}): item has no gold atomic facts")
        facts = list(response_facts[key])
        spans.append((len(prec_pairs), len(facts), len(rec_pairs), len(gold_facts)))
        prec_pairs += [(f, context) for f in facts]
        rec_pairs += [(g, response) for g in gold_facts]
    prec_scores, rec_scores = evaluator.scores(prec_pairs), evaluator.scores(rec_pairs)
    prec_support, rec_support = evaluator.decide(prec_scores), evaluator.decide(rec_scores)
    rows = []
    for record, (p0, np_, r0, nr) in zip(records, spans):
        p_sup, r_sup = prec_support[p0 : p0 + np_], rec_support[r0 : r0 + nr]
        factors = record.get("factors") or {}
        accuracy = None
        if factors.get("answer_type") != "free_form":
            accuracy = answer_accuracy(record["response"] or "", record.get("answers") or [])
        rows.append(
            {
                "response_key": response_key(record),
                "item_id": record["item_id"],
                "version": record.get("version"),
                "condition": record.get("condition"),
                **{f"factor_{name}": level for name, level in factors.items()},
                **item_metrics(p_sup.tolist(), r_sup.tolist()),
                "answer_accuracy": np.nan if accuracy is None else accuracy,
                "precision_support": p_sup.tolist(),
                "precision_scores": prec_scores[p0 : p0 + np_].tolist(),
                "recall_support": r_sup.tolist(),
                "recall_scores": rec_scores[r0 : r0 + nr].tolist(),
            }
        )
    frame = pd.DataFrame(rows)
    if not rows:
        return frame
    order = ["response_key", "item_id", "version", "condition"]
    order += [c for c in frame.columns if c.startswith("factor_")]
    order += [*METRICS[:3], "answer_accuracy", "n_response_facts", "n_gold_facts"]
    order += ["precision_support", "precision_scores", "recall_support", "recall_scores"]
    frame["answer_accuracy"] = frame["answer_accuracy"].astype(float)
    return frame[order]


def macro_average(rows: pd.DataFrame, by: Sequence[str] = ("condition",)) -> pd.DataFrame:
    """Mean over responses of precision, recall, F1 and answer accuracy per group (macro average).

    Answer accuracy is averaged over the responses where it is defined (NaN skipped);
    ``n`` counts all responses of the group and ``n_answer_accuracy`` those with a defined
    answer accuracy.

    Returns:
        One row per group: the ``by`` columns, ``precision``, ``recall``, ``f1``,
        ``answer_accuracy``, ``n``, ``n_answer_accuracy``.
    """
    by = list(by)
    grouped = rows.groupby(by, sort=True, dropna=False)
    out = grouped[list(METRICS)].mean()
    out["n"] = grouped.size()
    out["n_answer_accuracy"] = grouped["answer_accuracy"].count()
    return out.reset_index()


def by_factor(rows: pd.DataFrame, factors: Iterable[str] | None = None) -> pd.DataFrame:
    """Macro averages per condition and level of each factor (paper Sec. 4.2 / App. D.2 factor analysis).

    Args:
        rows: the output of :func:`score_responses`.
        factors: factor names (default: every ``factor_<name>`` column).

    Returns:
        Long table: ``condition``, ``factor``, ``level``, ``precision``, ``recall``, ``f1``,
        ``answer_accuracy``, ``n``, ``n_answer_accuracy``.
    """
    names = list(factors) if factors is not None else [c[len("factor_") :] for c in rows if c.startswith("factor_")]
    parts = []
    for name in names:
        table = macro_average(rows, by=("condition", f"factor_{name}")).rename(columns={f"factor_{name}": "level"})
        table.insert(1, "factor", name)
        parts.append(table)
    columns = ["condition", "factor", "level", *METRICS, "n", "n_answer_accuracy"]
    return pd.concat(parts, ignore_index=True)[columns] if parts else pd.DataFrame(columns=columns)

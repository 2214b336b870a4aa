"""SORT scoring: the answer (forced choice or the greedy token), the continuous score, segment perplexity,
prompt selection.

Definitions (paper "Assessing Episodic Memory in LLMs with Sequence Order Recall Tasks"):

- *Answer* (Sec. 3.1): the model reads the context that ends with the answer prefix
  ``"Answer: Segment"``; "we greedily sample an answer token a = argmax(M(I)) ... and decode
  [it] as either A or B".  The tokens that map to a label are ``"A"`` and ``" A"`` (those that
  are a single token after the context; App. E.3 "all answers that can be mapped to either A
  or B").  Two rules (:data:`knowlab.sort.answers.ANSWER_RULES`, config ``sort.answer``):

  - ``forced_choice`` (the default): the label with the larger probability, a label's
    probability being the summed probability of its tokens.  Every item gets A or B.
  - ``greedy`` (the paper's): the label whose token is the argmax of the whole vocabulary at
    the answer position.  Where that token is neither label, the item has no answer:
    ``prediction`` is ``"none"`` (:data:`knowlab.sort.answers.NO_ANSWER`) and the item counts
    as incorrect.

  Either way ``label_is_greedy`` records whether the greedy token was a label token, and
  ``answer_rule`` names the rule.
- *Continuous score* (App. E.3): ``log(p(a=y) / (p(a=A) + p(a=B)))`` with ``y`` the correct
  label; at most 0, and ``log 0.5`` when the model cannot tell the two apart.
- *Segment perplexity* (App. E.1, Fig. 12): mean negative log-likelihood per token of each
  segment alone, with no context.
- *Prompt selection* (Sec. 3.1, App. B.3): per template, accuracy and the proportion of "A"
  answers on held-out items; the proportion should be near 0.5, and the accuracy high.

All log-probabilities are natural logarithms (nats) and come from the one scoring engine,
:mod:`knowlab.core.scoring` (lm-evaluation-harness semantics, :func:`~knowlab.core.scoring.encode_context`:
a context starts with the special tokens its tokenizer adds by default, a BOS on Llama-3,
none on SmolLM2): each context is encoded once and, as every label token is a single-token
continuation of the same context, the engine packs all label tokens of a context into one
sequence of just the context.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from knowlab.core.scoring import encode_context, loglikelihood, score_token_ids
from knowlab.sort.answers import ANSWER_RULES, NO_ANSWER
from knowlab.sort.prompts import LABELS


def _split_trailing_space(context: str) -> tuple[str, str]:
    """``(context without trailing whitespace, that whitespace)``: the harness moves it to the continuation."""
    stripped = context.rstrip()
    return stripped, context[len(stripped) :]


def _label_ids_after(tokenizer, context: str, labels: Sequence[str]) -> dict[str, list[int]]:
    """Label variants that are one token after ``context`` (see :func:`label_token_ids`): compared on the
    context's own text ids, without the special tokens :func:`~knowlab.core.scoring.encode_context` puts before them."""
    stripped, moved = _split_trailing_space(context)
    text_ids = tokenizer(stripped, add_special_tokens=False)["input_ids"] if stripped else []
    out: dict[str, list[int]] = {}
    for label in labels:
        ids: list[int] = []
        for variant in (label, " " + label):
            if stripped:
                whole = tokenizer(stripped + moved + variant, add_special_tokens=False)["input_ids"]
                ok = len(whole) == len(text_ids) + 1 and whole[:-1] == text_ids
                token = whole[-1] if ok else None
            else:  # empty context: the prefix token stands in for it, the continuation is encoded alone
                alone = tokenizer(moved + variant, add_special_tokens=False)["input_ids"]
                token = alone[0] if len(alone) == 1 else None
            if token is not None and token not in ids:
                ids.append(token)
        if not ids:
            raise ValueError(
                f"label {label!r}: neither {label!r} nor {' ' + label!r} is a single token after the context "
                f"...{context[-40:]!r}; SORT scoring needs single-token labels"
            )
        out[label] = ids
    return out


def label_token_ids(tokenizer, context: str, labels: Sequence[str] = LABELS) -> dict[str, list[int]]:
    """Token ids that map to each label when they follow ``context`` (paper App. E.3).

    The candidates of label ``X`` are ``"X"`` and ``" X"``.  A candidate counts when
    ``context + candidate`` encodes as the context's own tokens plus exactly one more token
    (harness boundary semantics of :func:`knowlab.core.scoring.encode_pair`: trailing
    whitespace of the context moves to the start of the candidate; the special tokens the
    tokenizer puts before the context, such as Llama-3's BOS, are not part of the comparison;
    an empty context is the prefix token).  Duplicate ids are kept once.

    Returns:
        ``{label: [token id, ...]}``, ids in the order ``"X"``, ``" X"``.

    Raises:
        ValueError: a label with no single-token candidate (the message names it).
    """
    return _label_ids_after(tokenizer, context, labels)


def score_items(
    model,
    tokenizer,
    contexts: Sequence[str],
    answers: Sequence[str],
    batch_size: int = 8,
    item_ids: Sequence[str] | None = None,
    answer: str = "forced_choice",
) -> pd.DataFrame:
    """SORT answers and continuous scores, one row per context (paper Sec. 3.1, App. E.3).

    Args:
        model: a causal LM (see :func:`knowlab.core.scoring.score_token_ids`).
        tokenizer: its tokenizer.
        contexts: rendered prompts ending with the answer prefix (:func:`knowlab.sort.prompts.render_prompt`).
        answers: the correct label of each context, ``"A"`` or ``"B"``.
        batch_size: sequences per forward pass.
        item_ids: optional ids, written as a first ``item_id`` column (join on it, not row order).
        answer: the answer rule, one of :data:`ANSWER_RULES` (config ``sort.answer``; module
            docstring): ``forced_choice`` or ``greedy``.

    Returns:
        DataFrame in the order of ``contexts`` with columns ``[item_id,] answer, logp_a,
        logp_b`` (log of the summed probability of each label's tokens, nats), ``prediction``
        (``forced_choice``: the label with the larger one, a tie going to "A"; ``greedy``: the
        label of the top token of the whole vocabulary, :data:`NO_ANSWER` where it is neither),
        ``answer_rule`` (``answer``), ``correct`` (bool, ``prediction == answer``: False without
        an answer), ``score`` (``logp_correct - log(p_A + p_B)``, <= 0, whatever the rule),
        ``logp_labels`` (``log(p_A + p_B)``: the probability mass on the labels),
        ``label_is_greedy`` (the top token of the whole vocabulary is one of the label tokens)
        and ``n_context_tokens`` (the special tokens the tokenizer adds included).

    Raises:
        ValueError: lengths differ, an answer that is not a label, an unknown ``answer`` rule
            (naming ``sort.answer``), or a label without a single-token form after some context
            (:func:`label_token_ids`).
    """
    if len(contexts) != len(answers) or (item_ids is not None and len(item_ids) != len(contexts)):
        raise ValueError(
            f"contexts ({len(contexts)}), answers ({len(answers)})"
            + (f" and item_ids ({len(item_ids)})" if item_ids is not None else "")
            + " must have the same length"
        )
    bad = sorted({a for a in answers if a not in LABELS})
    if bad:
        raise ValueError(f"answers must be one of {LABELS}, got {bad}")
    if answer not in ANSWER_RULES:
        raise ValueError(f"sort.answer must be one of {ANSWER_RULES}, got {answer!r}")
    pairs: list[tuple[list[int], list[int]]] = []
    owners: list[tuple[int, str]] = []  # (context index, label) of each pair
    n_context_tokens = []
    for i, context in enumerate(contexts):
        context_ids = encode_context(tokenizer, context)
        n_context_tokens.append(len(context_ids))
        for label, ids in _label_ids_after(tokenizer, context, LABELS).items():
            for token in ids:
                pairs.append((context_ids, [token]))
                owners.append((i, label))
    scores = score_token_ids(model, pairs, batch_size=batch_size, desc="SORT") if pairs else []
    per_label = [{label: [] for label in LABELS} for _ in contexts]
    greedy_label: list[str | None] = [None] * len(contexts)  # the label of the vocabulary's top token
    for (i, label), s in zip(owners, scores):
        per_label[i][label].append(float(s.logprobs[0]))
        if bool(s.greedy[0]):
            greedy_label[i] = label
    greedy = [label is not None for label in greedy_label]
    logp = np.array([[np.logaddexp.reduce(lp[label]) for label in LABELS] for lp in per_label]).reshape(-1, 2)
    mass = np.logaddexp(logp[:, 0], logp[:, 1])
    if answer == "greedy":
        prediction = np.array([label or NO_ANSWER for label in greedy_label], dtype=object)
    else:
        prediction = np.where(logp[:, 0] >= logp[:, 1], LABELS[0], LABELS[1])
    answer_idx = np.array([LABELS.index(a) for a in answers], dtype=int)
    frame = pd.DataFrame(
        {
            "answer": list(answers),
            "logp_a": logp[:, 0],
            "logp_b": logp[:, 1],
            "prediction": prediction,
            "answer_rule": answer,
            "correct": prediction == np.array(answers, dtype=object),
            "score": logp[np.arange(len(answers)), answer_idx] - mass,
            "logp_labels": mass,
            "label_is_greedy": greedy,
            "n_context_tokens": n_context_tokens,
        }
    )
    frame["correct"] = frame["correct"].astype(bool)
    if item_ids is not None:
        frame.insert(0, "item_id", list(item_ids))
    return frame


def segment_nll(model, tokenizer, items: Sequence[Mapping[str, Any]], batch_size: int = 8) -> pd.DataFrame:
    """Per-token negative log-likelihood of each item's two segments without any context (paper App. E.1, Fig. 12).

    Each segment (surrounding whitespace stripped) is scored by
    :func:`knowlab.core.scoring.loglikelihood` as the continuation of an empty context,
    which the engine replaces by the prefix token (BOS, else EOS); every token of the segment
    is scored.

    Returns:
        DataFrame, one row per item in order: ``item_id``, ``n_tokens_a``, ``n_tokens_b``,
        ``nll_a``, ``nll_b`` (mean nats per token), ``ppl_a``, ``ppl_b`` (``exp`` of those).

    Raises:
        ValueError: an item with an empty segment.
    """
    requests = []
    for item in items:
        for key in ("segment_a", "segment_b"):
            text = str(item[key]).strip()
            if not text:
                raise ValueError(f"item {item.get('item_id')!r} has an empty {key}")
            requests.append(("", text))
    results = loglikelihood(model, tokenizer, requests, batch_size=batch_size, desc="segment nll")
    rows = []
    for k, item in enumerate(items):
        (ll_a, n_a, _), (ll_b, n_b, _) = results[2 * k], results[2 * k + 1]
        rows.append(
            {
                "item_id": item.get("item_id"),
                "n_tokens_a": n_a,
                "n_tokens_b": n_b,
                "nll_a": -ll_a / n_a,
                "nll_b": -ll_b / n_b,
                "ppl_a": math.exp(-ll_a / n_a),
                "ppl_b": math.exp(-ll_b / n_b),
            }
        )
    columns = ["item_id", "n_tokens_a", "n_tokens_b", "nll_a", "nll_b", "ppl_a", "ppl_b"]
    return pd.DataFrame(rows, columns=columns)


def _id_key(value) -> tuple:
    """Sort key that orders numeric ids numerically and string ids lexically (numbers first)."""
    if isinstance(value, (int, float, np.integer, np.floating)):
        return (0, float(value), "")
    return (1, 0.0, str(value))


def _rate_distance(a_rate: float) -> float:
    """``|a_rate - 0.5|``, infinite for a template without any answer."""
    return math.inf if math.isnan(a_rate) else abs(a_rate - 0.5)


def select_prompt(rows: pd.DataFrame, max_rate_deviation: float = 0.2) -> dict[str, Any]:
    """Choose a prompt template from held-out results (paper Sec. 3.1, App. B.3).

    Per template: ``accuracy`` (mean of ``correct``; an item without an answer is incorrect) and
    ``a_rate`` (share of "A" among the A and B answers: every prediction under forced choice;
    NaN where no item has one, and the template is rejected).
    A template whose ``a_rate`` is farther than ``max_rate_deviation`` from 0.5 is rejected
    (App. B.3: "the proportion of A and B responses, which should be around 0.5"); among the
    rest the highest accuracy wins, ties going to the lowest id.  If every template is
    rejected, the one with ``a_rate`` closest to 0.5 is chosen (ties: higher accuracy, then
    lowest id) and ``rule`` says so.

    Args:
        rows: one row per (template, item) with columns ``template_id``, ``prediction``
            ("A"/"B", or :data:`NO_ANSWER` under the ``greedy`` rule) and ``correct`` (bool).
        max_rate_deviation: largest accepted ``|a_rate - 0.5|``.

    Returns:
        ``{"template_id", "accuracy", "a_rate", "all_rejected", "table", "rule"}``; ``table``
        lists ``{"template_id", "n", "accuracy", "a_rate", "rejected"}`` per template, ids in
        order.

    Raises:
        ValueError: missing columns, no rows, or a negative ``max_rate_deviation``.
    """
    missing = [c for c in ("template_id", "prediction", "correct") if c not in rows.columns]
    if missing:
        raise ValueError(f"select_prompt needs columns template_id, prediction, correct; missing {missing}")
    if rows.empty:
        raise ValueError("select_prompt got no rows")
    if max_rate_deviation < 0:
        raise ValueError(f"max_rate_deviation must be >= 0, got {max_rate_deviation}")
    table = []
    for template_id in sorted(rows["template_id"].unique(), key=_id_key):
        group = rows[rows["template_id"] == template_id]
        answered = group["prediction"].isin(LABELS)
        a_rate = float((group["prediction"] == LABELS[0]).sum() / answered.sum()) if answered.any() else math.nan
        table.append(
            {
                "template_id": template_id.item() if isinstance(template_id, np.generic) else template_id,
                "n": len(group),
                "accuracy": float(group["correct"].astype(bool).mean()),
                "a_rate": a_rate,
                "rejected": bool(math.isnan(a_rate) or abs(a_rate - 0.5) > max_rate_deviation + 1e-12),
            }
        )
    kept = [row for row in table if not row["rejected"]]
    if kept:
        best = min(kept, key=lambda r: (-r["accuracy"], _id_key(r["template_id"])))
        rule = (
            f"highest accuracy among the {len(kept)} of {len(table)} templates whose A-rate is within "
            f"{max_rate_deviation} of 0.5 (paper App. B.3); ties go to the lowest id"
        )
    else:
        best = min(table, key=lambda r: (_rate_distance(r["a_rate"]), -r["accuracy"], _id_key(r["template_id"])))
        rule = (
            f"all {len(table)} templates have an A-rate farther than {max_rate_deviation} from 0.5: chose the one "
            "closest to 0.5 (ties: higher accuracy, then lowest id)"
        )
    return {
        "template_id": best["template_id"],
        "accuracy": best["accuracy"],
        "a_rate": best["a_rate"],
        "all_rejected": not kept,
        "table": table,
        "rule": rule,
    }

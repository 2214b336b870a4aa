"""Grounding tables: the paper's Tables 1, 8-12 and the numbers behind Figs. 3c, 4, 5, 15-16,
and grounding across fine-tuning.

Input: item rows (one per model x dataset x condition x question) with ``precision``,
``recall``, ``f1`` (each in [0, 1]) and ``answer_accuracy`` (0/1, NaN for free-form
questions) from :func:`knowlab.grounding.metrics.score_responses`, plus ``model``,
``dataset``, ``condition`` and ``factor_<name>`` columns.  Every metric is macro-averaged
(the mean over questions of the per-question value; paper Sec. 3.3) and reported x 100 as
in the paper's tables, with a 95% percentile-bootstrap interval (:func:`knowlab.core.stats.bootstrap_ci`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from knowlab.core.stats import StatsSettings, bootstrap_ci, pair_tests
from knowlab.core.probe import trained_items
from knowlab.grounding.metrics import answer_accuracy, by_factor
from knowlab.grounding.settings import GOLD_CONDITIONS, NO_CONTEXT

METRICS = ("precision", "recall", "f1")
#: columns naming how a row was scored (set by :func:`knowlab.grounding.steps.data.score`), carried
#: by every grounding table and said in every grounding figure's footnote
METHOD_COLUMNS = ("decomposer", "evaluator")
FOLLOWS = ("follows_context", "follows_training")  # 0/1 per response (follow_rates)
SETTING_LABELS = {
    "original_gold": "Original-Gold",
    "original_dist": "Original-Dist",
    "conflict_gold": "Conflict-Gold",
    "conflict_dist": "Conflict-Dist",
    NO_CONTEXT: "No context",
}


def summarize(
    rows: pd.DataFrame,
    by: Sequence[str],
    metrics: Sequence[str] = (*METRICS, "answer_accuracy"),
    *,
    stats: StatsSettings,
) -> pd.DataFrame:
    """Macro averages x 100 of ``metrics`` per group of ``by``, with ``<metric>_low``/``_high``
    (bootstrap interval at ``stats.confidence`` of ``stats.bootstrap_resamples`` resamples at
    ``stats.seed``; x 100), ``confidence`` (that level) and ``n`` (questions).  NaN values (answer
    accuracy of free-form questions) are left out of their metric's mean."""
    out = []
    for key, group in rows.groupby(list(by), sort=True, dropna=False):
        record: dict[str, Any] = dict(zip(by, key if isinstance(key, tuple) else (key,), strict=True))
        record["n"] = len(group)
        record["confidence"] = stats.confidence
        for metric in metrics:
            values = group[metric].to_numpy(dtype=float)
            low, high = bootstrap_ci(
                values, n_resamples=stats.bootstrap_resamples, seed=stats.seed, confidence=stats.confidence
            )
            record[metric] = 100 * np.nanmean(values) if np.isfinite(values).any() else np.nan
            record[f"{metric}_low"], record[f"{metric}_high"] = 100 * low, 100 * high
        out.append(record)
    return pd.DataFrame(out)


def method_labels(rows: pd.DataFrame, fallback: Mapping[str, str] | None = None) -> dict[str, str]:
    """``{"decomposer": ..., "evaluator": ...}``: the distinct values of the rows' :data:`METHOD_COLUMNS`
    (joined by ``" | "`` in the rare mix, e.g. scores of two configurations), else ``fallback``'s
    value (e.g. labels made from the config), else ``"not recorded"``.

    Values: ``"sentences (sentence-level, not atomic facts)"`` or ``"llm:<model>"``
    (:func:`knowlab.grounding.settings.decomposer_label`), ``"<kind>:<model>@<threshold>"``
    (:func:`knowlab.grounding.settings.evaluator_label`).
    """
    out = {}
    for column in METHOD_COLUMNS:
        values = list(dict.fromkeys(rows[column].dropna().astype(str))) if column in rows else []
        out[column] = " | ".join(values) if values else (fallback or {}).get(column, "not recorded")
    return out


def with_method_columns(table: pd.DataFrame, labels: Mapping[str, str]) -> pd.DataFrame:
    """``table`` with :data:`METHOD_COLUMNS` appended as its last columns (one value each, from
    :func:`method_labels`); existing columns and values are unchanged."""
    return table.drop(columns=[c for c in METHOD_COLUMNS if c in table.columns]).assign(
        **{c: labels[c] for c in METHOD_COLUMNS}
    )


def method_note(labels: Mapping[str, str]) -> str:
    """The figures' footnote sentence naming the decomposer and M_eval, e.g. ``"Decomposer: sentences
    (sentence-level, not atomic facts); evaluator: bi_encoder:packaged:all-MiniLM-L6-v2@0.4."``"""
    return f"Decomposer: {labels['decomposer']}; evaluator: {labels['evaluator']}."


def table1(summary: pd.DataFrame, metric: str = "f1") -> pd.DataFrame:
    """Table 1: ``metric`` (x 100) per setting (rows: the four gold/dist settings) and model (columns),
    one block per dataset."""
    part = summary[summary.condition.isin(GOLD_CONDITIONS)]
    table = part.pivot_table(index=["dataset", "condition"], columns="model", values=metric)
    order = {c: i for i, c in enumerate(GOLD_CONDITIONS)}
    table = table.sort_index(key=lambda idx: idx.map(order) if idx.name == "condition" else idx)
    return table.rename(index=SETTING_LABELS, level="condition")


def factor_table(rows: pd.DataFrame, condition: str, metric: str = "f1") -> pd.DataFrame:
    """Tables 8-11 / Fig. 3c: ``metric`` (x 100) per dataset and model, overall and per level of each
    factor (:func:`knowlab.grounding.metrics.by_factor`), in one setting.  Columns ``overall`` and
    ``<factor>=<level>``."""
    records = []
    for (dataset, model), group in rows[rows.condition == condition].groupby(["dataset", "model"]):
        long = by_factor(group)
        record = {"dataset": dataset, "model": model, "overall": 100 * group[metric].mean()}
        record |= {f"{f}={level}": 100 * v for f, level, v in zip(long.factor, long.level, long[metric], strict=True)}
        records.append(record)
    return pd.DataFrame(records).set_index(["dataset", "model"])


def answer_accuracy_table(summary: pd.DataFrame) -> pd.DataFrame:
    """Table 12: answer accuracy (x 100, definite-answer questions only) per model in five settings."""
    conditions = [NO_CONTEXT, *GOLD_CONDITIONS]
    part = summary[summary.condition.isin(conditions)]
    table = part.pivot_table(index=["dataset", "model"], columns="condition", values="answer_accuracy")
    table = table[[c for c in conditions if c in table.columns]]
    return table.rename(columns=SETTING_LABELS)


def reduction_rates(summary: pd.DataFrame, metric: str = "f1") -> pd.DataFrame:
    """Fig. 5: the reduction rate (%) from Gold to Dist, ``100 * (gold - dist) / gold`` of ``metric``,
    per dataset, model and version (original, conflict).  NaN where the gold value is 0."""
    values = summary.set_index(["dataset", "model", "condition"])[metric]
    out = []
    for (dataset, model), _ in summary.groupby(["dataset", "model"]):
        for version in ("original", "conflict"):
            gold = values.get((dataset, model, f"{version}_gold"), np.nan)
            dist = values.get((dataset, model, f"{version}_dist"), np.nan)
            rate = 100 * (gold - dist) / gold if gold else np.nan
            out.append(
                {
                    "dataset": dataset,
                    "model": model,
                    "version": version,
                    "gold": gold,
                    "dist": dist,
                    "reduction_rate": rate,
                }
            )
    return pd.DataFrame(out)


def length_curve(rows: pd.DataFrame, summary: pd.DataFrame) -> pd.DataFrame:
    """Fig. 4: F1 (x 100) against the mean input-context length (tokens) on the Original version:
    ``original_gold`` (no distractor), every ``length_<N>`` and ``original_dist``."""
    keep = (
        rows.condition.eq("original_gold")
        | rows.condition.eq("original_dist")
        | rows.condition.str.startswith("length_")
    )
    tokens = rows[keep].groupby(["dataset", "model", "condition"])[["context_tokens", "n_distractors"]].mean()
    columns = ["f1", "f1_low", "f1_high", "confidence", "n"]
    part = summary.set_index(["dataset", "model", "condition"]).loc[tokens.index, columns]
    return tokens.join(part).reset_index().sort_values(["dataset", "model", "context_tokens"])


def position_table(summary: pd.DataFrame, position: str) -> pd.DataFrame:
    """Gold-context position (Sec. 4.2): F1 (x 100) per model for each ``position_<p>`` condition and
    ``original_dist`` (whose position is ``position``)."""
    part = summary[summary.condition.str.startswith("position_") | summary.condition.eq("original_dist")].copy()
    part["position"] = part.condition.map(lambda c: position if c == "original_dist" else c.removeprefix("position_"))
    return part.pivot_table(index=["dataset", "model"], columns="position", values="f1")


# --- across fine-tuning -------------------------------------------------------------------


def original_answers(rows: pd.DataFrame) -> dict[str, list[str]]:
    """``item_id -> answers`` of each question under ``original_gold`` (the answers the fiction taught;
    its first such row), the ``original_answers`` of :func:`follow_rates`."""
    original = rows[rows.condition == "original_gold"].drop_duplicates("item_id").set_index("item_id")["answers"]
    return original.map(list).to_dict()


def follow_rates(rows: pd.DataFrame, original_answers: Mapping[str, Sequence[str]]) -> pd.DataFrame:
    """Add ``follows_context`` and ``follows_training`` to across-fine-tuning rows.

    ``follows_context``: the response holds an answer of the context it was given (the
    Original answer under ``original_gold``, the substituted one under ``conflict_gold``),
    i.e. the row's answer accuracy.  ``follows_training``: under ``conflict_gold``, the
    response holds the Original answer (what the fiction taught), which the context no
    longer says (:func:`knowlab.grounding.metrics.answer_accuracy` against the Original
    answers); NaN under ``original_gold``, where both answers coincide.
    """
    follows_training = [
        answer_accuracy(r, original_answers[i]) if c == "conflict_gold" else np.nan
        for r, i, c in zip(rows.response, rows.item_id, rows.condition, strict=True)
    ]
    return rows.assign(follows_context=rows.answer_accuracy.astype(float), follows_training=follows_training)


def finetune_rates(rows: pd.DataFrame) -> pd.DataFrame:
    """Mean F1, follows-context and follows-training rates (x 100) per run, step, side and condition,
    then the :data:`METHOD_COLUMNS` of the rows (:func:`method_labels`)."""
    keys = ["run", "step", "side", "condition"]
    rates = (
        rows.fillna({"side": "all"})
        .groupby(keys)[["f1", "follows_context", "follows_training"]]
        .mean()
        .mul(100)
        .join(rows.fillna({"side": "all"}).groupby(keys).size().rename("n"))
        .reset_index()
    )
    return with_method_columns(rates, method_labels(rows))


def finetune_mcnemar(
    rows: pd.DataFrame, runs: Sequence[str], control: str | None, steps: Sequence[int], exact_below: int
) -> pd.DataFrame:
    """McNemar of each fiction run against the control at matched steps, on item-paired
    ``follows_context`` and ``follows_training`` (0/1), per condition, on the questions of the
    run's training documents (``side == "train"``).

    The tests are :func:`knowlab.core.stats.pair_tests` of ``(run, step, condition, metric)``
    against ``(control, step, condition, metric)`` at each of ``steps`` (McNemar's exact
    binomial test below ``exact_below`` discordant items, config ``stats.mcnemar_exact_below``;
    p = 1 when none is discordant), with Holm over
    each (run, condition, metric) family of steps (``family=("condition", "metric")``, one
    call per run).  A (condition, metric) with no value for the run and the control (e.g.
    ``follows_training`` under ``original_gold``) is left out.

    Args:
        rows: :func:`follow_rates` rows with ``run, step, side, condition, item_id``; step 0 of
            each run is the base model (:func:`knowlab.core.checkpoints.step0_rows`).
        runs: the fiction runs, in order.
        control: the control run; None gives an empty table (nothing to compare with).
        steps: the checkpoint steps.

    Returns:
        One row per run, condition (sorted), metric and step: ``run_a, step_a, run_b, step_b,
        n, b, c, statistic, pvalue, pvalue_holm, exact, correction, condition, metric, decomposer,
        evaluator`` (:data:`METHOD_COLUMNS`);
        an empty frame when there is no control or nothing to test.

    Raises:
        ValueError: a checkpoint without rows (:func:`knowlab.core.stats.pair_tests`).
    """
    if not control:
        return pd.DataFrame()
    key_columns = ("run", "step", "condition", "metric")
    out = []
    for run in runs:
        trained = trained_items(rows, run)
        part = rows[rows.run.isin([run, control]) & rows.item_id.isin(trained)]
        values = part.melt(
            id_vars=["run", "step", "condition", "item_id"],
            value_vars=list(FOLLOWS),
            var_name="metric",
            value_name="follows",
        ).dropna(subset=["follows"])
        tested = set(zip(values.condition, values.metric))
        pairs = [
            ((run, step, condition, metric), (control, step, condition, metric))
            for condition in sorted(part.condition.unique())
            for metric in FOLLOWS
            if (condition, metric) in tested
            for step in steps
        ]
        if not pairs:
            continue
        table = pair_tests(
            values.astype({"follows": int}),
            pairs,
            "mcnemar",
            "follows",
            key_columns=key_columns,
            family=key_columns[2:],
            exact_below=exact_below,
        )
        extra = ["condition_a", "metric_a", "condition_b", "metric_b", "mean_a", "mean_b"]
        out.append(table.drop(columns=extra).assign(condition=table["condition_a"], metric=table["metric_a"]))
    return with_method_columns(pd.concat(out, ignore_index=True), method_labels(rows)) if out else pd.DataFrame()

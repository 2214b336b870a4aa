"""SORT analysis: accuracy with bootstrap intervals, binomial tests against chance, paired
tests between checkpoints and conditions, and the paper's Tables 1-2.

Source: Pink et al., "Assessing Episodic Memory in LLMs with Sequence Order Recall Tasks"
(Pink et al. 2024): Sec. 5 (Tables 1-2, Figs. 3-4), App. C.1 and Fig. 10 (baseline accuracy per
distance bin and segment length, binomial tests against chance, asterisks for p < 0.05 and
p < 0.01), App. E.2-E.3 and Figs. 14-15 (McNemar's test on per-item correctness and a paired
t-test on the log-probability of the correct answer between fine-tuned checkpoints).

Input: *item rows*, one row per item x model x condition x run x step (see
:mod:`knowlab.sort.score`), with at least ``item_id``, ``correct`` (bool) and ``score``
(nats, ``log(p(correct) / (p(A) + p(B)))`` <= 0, ``log 0.5`` for an undecided model) plus
the grouping columns a function names: ``model``, ``condition`` (``baseline``,
``in_context``, ``rag``, ``oracle_rag``), ``run`` (``base`` before fine-tuning, ``books``,
``instructions``, or a FictionalQA run), ``step``, ``epoch``, ``excerpt_length`` L_E and
``segment_length`` L_S (words), ``distance_bin`` (0..3), ``split`` (``test`` or
``validation``) and, for SORT on FictionalQA documents, ``side`` (``train`` or ``val``).
Under the ``greedy`` answer rule (config ``sort.answer``, :mod:`knowlab.sort.answers`) an item
whose top token is neither label has ``prediction`` ``"none"`` and ``correct`` False: accuracy,
the binomial tests against chance (0.5, now a conservative null: a model may also not answer)
and McNemar count it as wrong; the ``score`` and its t-tests do not depend on the rule.  The
tables' captions name the rule (:func:`knowlab.sort.answers.answer_note`).

The statistics themselves come from :mod:`knowlab.core.stats` (McNemar and the paired t-test
with their defined degenerate cases, Holm's correction, the percentile bootstrap) and
``scipy.stats.binomtest``; this module only groups and pairs the SORT rows.  Items are
paired by ``item_id`` joins, never by row order.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from scipy.stats import binomtest

from knowlab.core.checkpoints import BASE_RUN
from knowlab.core.stats import CORRECTION, StatsSettings, bootstrap_ci, checkpoint_pairs, holm_adjust, pair_tests
from knowlab.core.probe import trained_items
from knowlab.sort.answers import answer_note

CONDITION_NAMES = {
    "baseline": "no memory (baseline)",
    "in_context": "in-context",
    "rag": "RAG",
    "oracle_rag": "oracle RAG",
}
TESTS = {"mcnemar": "correct", "ttest": "score"}  # test -> the item column it is run on
DEFAULT_KEY_COLUMNS = ("run", "step", "condition")
CHANCE = 0.5
LOG_CHANCE = math.log(0.5)  # the score of a model that cannot tell A from B (nats)
STANDARD_MAX_EXCERPT = 2500  # L_E <= 2500 words: "SORT"; longer (10000, 20000): "SORT-extend" (Table 2)


def _require(rows: pd.DataFrame, columns: Sequence[str], what: str) -> None:
    missing = [c for c in columns if c not in rows.columns]
    if missing:
        raise ValueError(f"{what} needs columns {list(columns)}; missing {missing}")


def _groups(rows: pd.DataFrame, by: Sequence[str]):
    """``(key tuple, group)`` pairs of ``rows`` grouped by ``by`` (one group of everything when ``by`` is empty)."""
    if not by:
        return [((), rows)]
    return list(rows.groupby(list(by), sort=True, dropna=False))


def marks(p: float) -> str:
    """Significance marks of the paper's figures (Figs. 2, 5, 10): ``"**"`` for p < 0.01,
    ``"*"`` for p < 0.05, else ``""`` (also for NaN)."""
    if p is None or not np.isfinite(p):
        return ""
    return "**" if p < 0.01 else "*" if p < 0.05 else ""


# ----------------------------------------------------------------------------- accuracy


def accuracy_table(
    rows: pd.DataFrame,
    by: Sequence[str],
    stats: StatsSettings,
) -> pd.DataFrame:
    """Accuracy and mean score per group, with percentile-bootstrap confidence intervals.

    Paper: Table 2 and Figs. 2-4, 10 report the mean accuracy with a bootstrapped 95%
    interval; Fig. 16 the mean log-probability of the correct answer.  Intervals come from
    :func:`knowlab.core.stats.bootstrap_ci` (``scipy.stats.bootstrap``, percentile method, at
    ``stats.confidence`` with ``stats.bootstrap_resamples``, the same ``stats.seed`` for every
    group), resampling the group's rows.  A group that pools
    several models or runs resamples their rows as independent observations.

    Args:
        rows: item rows with ``item_id``, ``correct`` (bool), the ``by`` columns and
            optionally ``score`` (nats; NaN allowed, e.g. for an API model without log-probs).
        by: grouping columns (e.g. ``["model", "segment_length"]``); ``[]`` gives one row.
        stats: the intervals' level, resamples and seed.

    Returns:
        One row per group, sorted by ``by``: the ``by`` columns, ``n`` (scored rows in the group),
        ``n_items`` (distinct ``item_id``), ``n_correct``, ``accuracy`` (fraction in [0, 1]),
        ``ci_low``, ``ci_high``, ``mean_score``, ``score_ci_low``, ``score_ci_high`` (nats;
        NaN without a ``score`` column or when every score is NaN), ``confidence``.

    Raises:
        ValueError: a column is missing, or ``rows`` is empty.
    """
    _require(rows, ["item_id", "correct", *by], "accuracy_table")
    if rows.empty:
        raise ValueError("accuracy_table got no rows")
    out = []
    for key, group in _groups(rows, by):
        correct = group["correct"].astype(float).to_numpy()
        correct = correct[~np.isnan(correct)]  # an unscored row counts neither way
        bootstrap = {"confidence": stats.confidence, "n_resamples": stats.bootstrap_resamples, "seed": stats.seed}
        low, high = bootstrap_ci(correct, **bootstrap)
        scores = group["score"].astype(float).to_numpy() if "score" in group else np.array([np.nan])
        s_low, s_high = bootstrap_ci(scores, **bootstrap)
        finite = scores[~np.isnan(scores)]
        out.append(
            {
                **dict(zip(by, key)),
                "n": int(correct.size),
                "n_items": int(group["item_id"].nunique()),
                "n_correct": int(correct.sum()),
                "accuracy": float(correct.mean()) if correct.size else float("nan"),
                "ci_low": low,
                "ci_high": high,
                "mean_score": float(finite.mean()) if finite.size else float("nan"),
                "score_ci_low": s_low,
                "score_ci_high": s_high,
                "confidence": stats.confidence,
            }
        )
    return pd.DataFrame(out)


def binomial_tests(
    rows: pd.DataFrame, by: Sequence[str], p: float = CHANCE, alternative: str = "two-sided"
) -> pd.DataFrame:
    """Binomial test of the number correct against chance in every group, Holm-corrected over the table.

    Paper: App. C.1 / Figs. 5 and 10 (baseline accuracy per distance bin and segment length;
    asterisks mark a significant difference from chance) and Fig. 2 / Sec. 5.2.  Each group
    is tested with ``scipy.stats.binomtest(k, n, p, alternative)``; the family of Holm's
    step-down correction (:func:`knowlab.core.stats.holm_adjust`) is every group of
    the table.  Marks (:func:`marks`) are put on the corrected p-value.

    Args:
        rows: item rows with ``correct`` and the ``by`` columns.
        by: grouping columns, e.g. ``["model", "segment_length", "distance_bin"]``.
        p: success probability under the null (0.5: the two labels are equally likely).
        alternative: ``"two-sided"``, ``"greater"`` or ``"less"`` as in scipy.

    Returns:
        One row per group: the ``by`` columns, ``k`` (correct), ``n`` (rows), ``accuracy``,
        ``pvalue``, ``pvalue_holm``, ``correction`` (``"holm"``), ``family_size`` (the number of
        tests Holm's correction ran over: every row of the table, whichever of them a figure
        marks), ``significance`` (``""``, ``"*"``, ``"**"`` on ``pvalue_holm``), ``alternative``,
        ``p_null``.

    Raises:
        ValueError: a missing column, no rows, or an ``alternative`` scipy rejects.
    """
    _require(rows, ["correct", *by], "binomial_tests")
    if rows.empty:
        raise ValueError("binomial_tests got no rows")
    out = []
    for key, group in _groups(rows, by):
        correct = group["correct"].dropna().astype(bool)
        k, n = int(correct.sum()), len(correct)
        if n == 0:
            raise ValueError(f"group {dict(zip(by, key))} has no scored row")
        result = binomtest(k, n, p=p, alternative=alternative)
        out.append({**dict(zip(by, key)), "k": k, "n": n, "accuracy": k / n, "pvalue": float(result.pvalue)})
    table = pd.DataFrame(out)
    table["pvalue_holm"] = holm_adjust(table["pvalue"].to_numpy())
    table["correction"] = CORRECTION
    table["family_size"] = len(table)
    table["significance"] = table["pvalue_holm"].map(marks)
    table["alternative"] = alternative
    table["p_null"] = p
    return table


# ----------------------------------------------------------------------------- paired tests


def key_label(key_columns: Sequence[str], key: Sequence[Any]) -> str:
    """Default display label of a checkpoint/condition key, e.g. ``"books, step 19, baseline"``."""
    parts = []
    for column, value in zip(key_columns, key):
        if column == "step":
            parts.append(f"step {value}")
        elif column == "epoch":
            parts.append(f"epoch {float(value):g}")
        elif column == "condition":
            parts.append(CONDITION_NAMES.get(value, str(value)))
        else:
            parts.append(str(value))
    return ", ".join(parts)


def condition_matrix(
    rows: pd.DataFrame,
    keys: Sequence[tuple] | None,
    test: str = "mcnemar",
    alternative: str = "greater",
    *,
    key_columns: Sequence[str] = DEFAULT_KEY_COLUMNS,
    pairs: Sequence[tuple[tuple, tuple]] | None = None,
    labels: Mapping[tuple, str] | None = None,
    exact_below: int | None = None,
) -> pd.DataFrame:
    """Paired tests between every ordered pair of checkpoints/conditions, Holm-corrected over the matrix.

    Paper: App. E.2 / Fig. 14 (McNemar's test on per-item correctness between fine-tuned
    checkpoints; a row checkpoint vs a column checkpoint) and App. E.3 / Fig. 15 (paired
    t-test on the log-probability of the correct answer, ``score``; "whether a model (row)
    has higher log probabilities of the correct answer compared to another model
    (columns)", i.e. ``alternative="greater"`` on row - column).

    A *key* is a tuple of values of ``key_columns``, e.g. ``("books", 38, "baseline")`` for
    ``("run", "step", "condition")``.  The tests are :func:`knowlab.core.stats.pair_tests`
    on ``correct`` (McNemar: exact binomial below ``exact_below`` discordant items, else
    chi-square with continuity correction; p = 1 when no item is discordant) or ``score``
    (``scipy.stats.ttest_rel``; p = 1 when every difference is 0), each pair joined on
    ``item_id`` (inner join; an item with a NaN value in either is dropped).  Holm's
    correction runs over the distinct tests between different keys of the whole matrix:
    unordered pairs for McNemar and a two-sided t-test, ordered pairs for a one-sided
    t-test; diagonal cells get 1.  This function adds the SORT labels and columns.

    Args:
        rows: item rows with ``item_id``, the ``key_columns`` and ``correct`` (McNemar)
            or ``score`` (t-test).  Within a key an ``item_id`` may appear once: filter the
            rows to one model (and one template) first.
        keys: the keys, in display order; every ordered pair (diagonal included) is tested.
            May be ``None`` when ``pairs`` is given.
        test: ``"mcnemar"`` or ``"ttest"``.
        alternative: the t-test's alternative on mean(row - column): ``"greater"``,
            ``"less"`` or ``"two-sided"`` (McNemar is always two-sided).
        key_columns: the columns a key's values belong to.
        pairs: explicit ``(row key, column key)`` pairs instead of all ordered pairs of
            ``keys`` (e.g. :func:`knowlab.core.stats.checkpoint_pairs` with a control,
            ``key_columns=("run", "step")``).
        labels: display label per key (default :func:`key_label`); labels must be unique.
        exact_below: McNemar uses the exact test when fewer items are discordant (config
            ``stats.mcnemar_exact_below``; required for McNemar, as :func:`knowlab.core.stats.pair_tests`).

    Returns:
        One row per pair: ``a``, ``b`` (labels of the row and column key), ``{col}_a`` and
        ``{col}_b`` for each key column, ``n_items`` (paired items), ``mean_a``, ``mean_b``
        (accuracy, or mean score in nats, on the paired items), then for McNemar
        ``discordant_a`` (a right, b wrong), ``discordant_b`` (a wrong, b right), ``exact``,
        for the t-test ``mean_diff`` (mean of a - b, nats) and ``alternative``; then
        ``statistic``, ``pvalue``, ``pvalue_holm``, ``correction``, ``test``, ``metric``
        (the item column tested) and ``key_columns`` (comma-joined), which
        :func:`knowlab.core.stats.recompute_pvalue` reads.

    Raises:
        ValueError: unknown ``test`` or ``alternative``, missing columns, a key of the wrong
            length, a key without rows, duplicated labels, a key with a repeated
            ``item_id``, or two keys that share no item.
    """
    if test not in TESTS:
        raise ValueError(f"test must be one of {tuple(TESTS)}, got {test!r}")
    metric = TESTS[test]
    key_columns = tuple(key_columns)
    if pairs is None:
        if not keys:
            raise ValueError("condition_matrix needs keys or pairs")
        keys = [tuple(k) for k in keys]
        pairs = [(a, b) for a in keys for b in keys]
    else:
        pairs = [(tuple(a), tuple(b)) for a, b in pairs]
        keys = list(dict.fromkeys(k for pair in pairs for k in pair))
    names = {k: (labels or {}).get(k, key_label(key_columns, k)) for k in keys}
    if len(set(names.values())) != len(names):
        raise ValueError(f"labels of the keys are not unique: {sorted(names.values())}")
    table = pair_tests(
        rows, pairs, test, metric, key_columns=key_columns, alternative=alternative, exact_below=exact_below
    )
    table = table.rename(columns={"n": "n_items", "b": "discordant_a", "c": "discordant_b"})
    table.insert(0, "a", [names[a] for a, _ in pairs])
    table.insert(1, "b", [names[b] for _, b in pairs])
    sides = [f"{c}_{side}" for side in "ab" for c in key_columns]
    extra = ["discordant_a", "discordant_b", "exact"] if test == "mcnemar" else ["mean_diff", "alternative"]
    columns = ["a", "b", *sides, "n_items", "mean_a", "mean_b", *extra, "statistic", "pvalue", "pvalue_holm"]
    return table[[*columns, "correction"]].assign(test=test, metric=metric, key_columns=",".join(key_columns))


def _matrices(rows: pd.DataFrame, keys, alternative: str, **options) -> dict[str, pd.DataFrame]:
    """``{test: condition_matrix(rows, keys, test, alternative, **options)}`` for McNemar and the t-test."""
    return {test: condition_matrix(rows, keys, test, alternative, **options) for test in TESTS}


def condition_tests(
    rows: pd.DataFrame, model: str, conditions: Sequence[str], alternative: str, exact_below: int
) -> dict[str, pd.DataFrame]:
    """The memory conditions of one model against each other (Sec. 5): ``{"mcnemar": ..., "ttest": ...}``,
    :func:`condition_matrix` tables with keys ``(condition,)`` in ``conditions`` order, on the
    rows of ``model``, items paired across conditions by ``item_id``.

    Raises:
        ValueError: as :func:`condition_matrix` (e.g. a condition without rows of ``model``).
    """
    keys = [(c,) for c in conditions]
    return _matrices(
        rows[rows["model"] == model], keys, alternative, key_columns=("condition",), exact_below=exact_below
    )


def parametric_tests(
    rows: pd.DataFrame, alternative: str, exact_below: int, condition: str = "baseline"
) -> dict[str, pd.DataFrame]:
    """Figs. 14-15 (App. E.2-E.3): the base model and every checkpoint of the parametric fine-tuning
    runs against each other on ``condition``: ``{"mcnemar": ..., "ttest": ...}``,
    :func:`condition_matrix` tables over :func:`finetune_keys` (keys ``(run, step, condition)``,
    labels ``"base"``, ``"books ep 1"``, ...).

    Raises:
        ValueError: as :func:`finetune_keys` and :func:`condition_matrix`.
    """
    keys, labels = finetune_keys(rows, condition=condition)
    return _matrices(rows, keys, alternative, labels=labels, exact_below=exact_below)


def fiction_tests(
    rows: pd.DataFrame,
    runs: Sequence[str],
    steps: Sequence[int],
    control: str | None,
    alternative: str,
    exact_below: int,
) -> dict[tuple[str, str], pd.DataFrame]:
    """SORT on the FictionalQA documents: each run's checkpoints against each other and against the
    control at matched steps, on the items of the run's training documents.

    For each run, the items are those with ``side == "train"`` in the run's rows (the run's
    split); the rows of the run and of ``control`` on those items are tested over
    :func:`knowlab.core.stats.checkpoint_pairs` of ``steps`` (keys ``(run, step)``; the
    control pairs only when ``control`` is given).

    Args:
        rows: item rows with ``run, step, side, item_id, correct, score``; step 0 of each
            run is the base model (:func:`knowlab.core.checkpoints.step0_rows`).
        runs: the fiction runs, in order.
        steps: the checkpoint steps.
        control: the control run, or None.
        alternative: the t-test's alternative.
        exact_below: McNemar's exact-test threshold (config ``stats.mcnemar_exact_below``).

    Returns:
        ``{(run, test): condition_matrix table}`` for each run and test (``"mcnemar"``,
        ``"ttest"``), in that order.

    Raises:
        ValueError: as :func:`condition_matrix` (e.g. a checkpoint without rows).
    """
    out = {}
    for run in runs:
        trained = trained_items(rows, run)
        part = rows[rows["run"].isin([run, control]) & rows["item_id"].isin(trained)]
        pairs = checkpoint_pairs(steps, run, control)
        for test, table in _matrices(
            part, None, alternative, key_columns=("run", "step"), pairs=pairs, exact_below=exact_below
        ).items():
            out[(run, test)] = table
    return out


def finetune_keys(
    rows: pd.DataFrame,
    runs: Sequence[str] = (BASE_RUN, "books", "instructions"),
    condition: str = "baseline",
) -> tuple[list[tuple], dict[tuple, str]]:
    """Keys ``(run, step, condition)`` and labels of the fine-tuning matrix of Figs. 14-15.

    Order: the runs in ``runs`` order, each run's steps ascending (the base model, step 0,
    once).  Labels read ``"base"`` (run :data:`~knowlab.core.checkpoints.BASE_RUN`) and
    ``"<run> ep <epoch>"`` when the rows carry a finite
    ``epoch``, else ``"<run> step <step>"``.

    Raises:
        ValueError: no rows of ``condition`` for any of ``runs``.
    """
    _require(rows, ["run", "step", "condition"], "finetune_keys")
    part = rows[(rows["condition"] == condition) & rows["run"].isin(runs)]
    if part.empty:
        raise ValueError(f"no rows of condition {condition!r} for runs {list(runs)}")
    keys, labels = [], {}
    for run in runs:
        steps = part.loc[part["run"] == run]
        for step in sorted(steps["step"].unique()):
            key = (run, int(step), condition)
            epochs = steps.loc[steps["step"] == step, "epoch"] if "epoch" in steps else pd.Series(dtype=float)
            epoch = epochs.dropna().iloc[0] if epochs.notna().any() else None
            if run == BASE_RUN:
                label = "base"
            elif int(step) == 0:
                label = run
            elif epoch is not None:
                label = f"{run} ep {float(epoch):g}"
            else:
                label = f"{run} step {int(step)}"
            keys.append(key)
            labels[key] = label
    return keys, labels


# ----------------------------------------------------------------------------- tables


@dataclass(frozen=True)
class SortTable:
    """A paper table: ``long`` (tidy numbers from :func:`accuracy_table`), ``wide`` (the
    display form, one row per model, cells ``"accuracy ± half-width"``) and its caption."""

    name: str
    caption: str
    long: pd.DataFrame
    wide: pd.DataFrame


def _cell(row: Mapping[str, Any]) -> str:
    half = (row["ci_high"] - row["ci_low"]) / 2
    return f"{row['accuracy']:.2f} ± {half:.3f}"


def wide_table(long: pd.DataFrame, column: str, header: Mapping[Any, str] | None = None) -> pd.DataFrame:
    """Pivot an :func:`accuracy_table` with a ``model`` column to one row per model, one
    column per value of ``column``; cells ``"0.52 ± 0.007"`` (accuracy ± half-width of its
    bootstrap interval), ``"/"`` where a model has no rows (as in the paper's tables).
    ``header`` renames the columns; models keep their order of first appearance."""
    models = list(dict.fromkeys(long["model"]))
    values = list(dict.fromkeys(long[column]))
    cells = {(r["model"], r[column]): _cell(r) for _, r in long.iterrows()}
    header = header or {}
    data = {"Model": models}
    for v in values:
        data[header.get(v, str(v))] = [cells.get((m, v), "/") for m in models]
    return pd.DataFrame(data)


def _test_rows(rows: pd.DataFrame, condition: str) -> pd.DataFrame:
    part = rows[rows["condition"] == condition]
    if "run" in part:
        part = part[part["run"] == BASE_RUN]
    if "split" in part:
        part = part[part["split"] == "test"]
    if part.empty:
        raise ValueError(f"no test rows of condition {condition!r} for the base models (run {BASE_RUN!r})")
    return part


def table1_baseline(rows: pd.DataFrame, stats: StatsSettings) -> SortTable:
    """Table 1: baseline accuracy (no memory of the texts) per model and segment length L_S.

    Rows: ``condition == "baseline"``, ``run == BASE_RUN``, ``split == "test"`` (when those
    columns exist).  Cells: accuracy ± half-width of the percentile-bootstrap interval at ``stats.confidence``.

    Raises:
        ValueError: no such rows, or missing ``model`` / ``segment_length`` columns.
    """
    part = _test_rows(rows, "baseline")
    long = accuracy_table(part, ["model", "segment_length"], stats)
    wide = wide_table(long, "segment_length", {v: f"Segment length {v}" for v in long["segment_length"]})
    caption = (
        "Baseline: SORT accuracy before the models are exposed to the texts, by segment length "
        f"(words); mean ± half-width of the {stats.confidence:.0%} percentile-bootstrap interval over items "
        "(test split). "
        + answer_note(part)
    )
    return SortTable("table1_baseline_by_segment_length", caption, long, wide)


def table2_in_context(rows: pd.DataFrame, stats: StatsSettings) -> SortTable:
    """Table 2: in-context accuracy per model and excerpt length L_E.

    One column per L_E, then ``SORT`` (pooled over L_E <= 2500 words) and ``SORT-extend``
    (pooled over L_E > 2500 words; 10000 and 20000 in the paper) when such excerpts exist, as in the paper's Table 2.
    Rows: ``condition == "in_context"``, ``run == BASE_RUN``, ``split == "test"``.  The long
    table has ``pooled`` = ``""`` per excerpt length, ``"SORT"`` or ``"SORT-extend"``
    (``excerpt_length`` NA) for the pooled rows.

    Raises:
        ValueError: no such rows, or missing ``model`` / ``excerpt_length`` columns.
    """
    part = _test_rows(rows, "in_context")
    _require(part, ["model", "excerpt_length"], "table2_in_context")
    per_length = accuracy_table(part, ["model", "excerpt_length"], stats).assign(pooled="")
    frames = [per_length]
    for name, mask in (
        ("SORT", part["excerpt_length"] <= STANDARD_MAX_EXCERPT),
        ("SORT-extend", part["excerpt_length"] > STANDARD_MAX_EXCERPT),
    ):
        if mask.any():
            frames.append(accuracy_table(part[mask], ["model"], stats).assign(pooled=name))
    long = pd.concat(frames, ignore_index=True)
    long["excerpt_length"] = long["excerpt_length"].astype("Int64")
    long["column"] = [p if p else f"L_E = {int(e)}" for p, e in zip(long["pooled"], long["excerpt_length"])]
    wide = wide_table(long, "column")
    caption = (
        "In-context memory: SORT accuracy by excerpt length L_E (words), mean ± half-width of the "
        f"{stats.confidence:.0%} percentile-bootstrap interval over items (test split). SORT pools L_E ≤ 2500, "
        "SORT-extend pools L_E > 2500 (10000 and 20000 in the paper). " + answer_note(part)
    )
    return SortTable("table2_in_context_by_excerpt_length", caption, long.drop(columns="column"), wide)


def tables(rows: pd.DataFrame, stats: StatsSettings) -> dict[str, SortTable]:
    """The paper's Tables 1 and 2 from the item rows: ``{"table1": ..., "table2": ...}``.

    A table whose condition has no rows is left out (e.g. a config without in-context runs).
    See :func:`table1_baseline` and :func:`table2_in_context`.
    """
    _require(rows, ["condition"], "tables")
    out = {}
    for name, make, condition in (("table1", table1_baseline, "baseline"), ("table2", table2_in_context, "in_context")):
        if (rows["condition"] == condition).any():
            out[name] = make(rows, stats)
    return out

"""FictionalQA paired tests: one fine-tuning run's checkpoints against each other and against the
control run, on the questions of one MCQ suite (the tables ``results/stats/{run}/{suite}_{test}``).

Source: FictionalQA (Kirchenbauer et al. 2026) compares the checkpoints of fine-tuning
runs on the same questions.  The tests, their degenerate cases and Holm's correction are
those of :func:`knowlab.core.stats.pair_tests` (McNemar on per-question ``acc``, a paired
t-test on ``gold_logprob_norm``); this module picks the suite's items and the pairs, and
keeps the saved tables' columns.

Input: *item tables* of :mod:`knowlab.fictionalqa.suites`, concatenated over checkpoints,
with columns ``run, step, suite, item_id, acc`` (0/1, NaN where the suite has no choices)
and ``gold_logprob_norm`` (nats, <= 0: log softmax of the choices' summed log-likelihoods at
the gold choice).  Step 0 of every run is the base model
(:func:`knowlab.core.checkpoints.with_step0`).

A saved row's p-value recomputes from the item tables with
``knowlab.core.stats.recompute_pvalue(row, items, within=("suite",))``.
"""

from __future__ import annotations

import pandas as pd

from knowlab.core.stats import Pair, checkpoint_pairs, pair_tests

ACC_METRIC = "acc"
TTEST_METRIC = "gold_logprob_norm"
MEANS = ["mean_a", "mean_b"]  # of the core table; not in the saved FictionalQA tables


def run_pairs(items: pd.DataFrame, run: str, control: str | None) -> list[Pair]:
    """``run``'s checkpoint matrix (every ordered pair of its steps in ``items``, ascending, diagonal
    included), then ``run`` vs ``control`` at each of those steps when ``items`` hold a
    ``control`` run other than ``run`` (:func:`knowlab.core.stats.checkpoint_pairs`).

    ``items``: columns ``run, step``.  A run without rows gives no pairs.
    """
    steps = sorted(items.loc[items["run"] == run, "step"].unique().tolist())
    with_control = control and control != run and (items["run"] == control).any()
    return checkpoint_pairs(steps, run, control if with_control else None)


def mcnemar_for_run(
    items: pd.DataFrame, run: str, control: str | None, suite: str, exact_below: int = 25
) -> pd.DataFrame:
    """McNemar on per-question ``acc`` of ``suite`` over :func:`run_pairs` of the suite's rows.

    Args:
        items: concatenated item tables (columns ``run, step, suite, item_id, acc``).
        run: the run whose checkpoints are compared.
        control: the control run (compared at matched steps when ``items`` hold it), or None.
        suite: the MCQ suite, e.g. ``"mcq4"``.
        exact_below: the exact test when fewer items are discordant.

    Returns:
        One row per pair: ``run_a, step_a, run_b, step_b, n, b, c, statistic, pvalue,
        pvalue_holm, exact, correction, suite, metric`` (``metric = "acc"``); Holm over the
        table (:func:`knowlab.core.stats.pair_tests`).

    Raises:
        ValueError: as :func:`knowlab.core.stats.pair_tests` (e.g. no rows of ``run`` in ``suite``).
    """
    rows = items[items["suite"] == suite]
    table = pair_tests(rows, run_pairs(rows, run, control), "mcnemar", ACC_METRIC, exact_below=exact_below)
    return table.drop(columns=MEANS).assign(suite=suite, metric=ACC_METRIC)


def ttest_for_run(
    items: pd.DataFrame, run: str, control: str | None, suite: str, alternative: str = "greater"
) -> pd.DataFrame:
    """Paired t-test on per-question ``gold_logprob_norm`` of ``suite`` (nats), over the same pairs
    as :func:`mcnemar_for_run`; ``alternative`` on mean(row - column) as in
    :func:`knowlab.core.stats.ttest_pair`.

    Returns:
        One row per pair: ``run_a, step_a, run_b, step_b, n, mean_diff, statistic, pvalue,
        pvalue_holm, alternative, correction, suite, metric`` (``metric = "gold_logprob_norm"``);
        Holm over every ordered off-diagonal pair for a one-sided alternative, over the
        unordered pairs for ``"two-sided"``.

    Raises:
        ValueError: as :func:`knowlab.core.stats.pair_tests`.
    """
    rows = items[items["suite"] == suite]
    table = pair_tests(rows, run_pairs(rows, run, control), "ttest", TTEST_METRIC, alternative=alternative)
    return table.drop(columns=MEANS).assign(suite=suite, metric=TTEST_METRIC)

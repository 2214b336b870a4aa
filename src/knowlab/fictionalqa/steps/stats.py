"""The statistics steps of the FictionalQA rules (``rules/fictionalqa.smk``: ``fictionalqa_paired_tests``,
``fictionalqa_summary``; :mod:`knowlab.fictionalqa.steps`): the tables from the item rows.

- :func:`paired_tests`: McNemar and paired t-test tables of one run on one MCQ suite
  (:mod:`knowlab.fictionalqa.stats`);
- :func:`summary`: every metric per split, run, step, suite and side with bootstrap intervals
  (:mod:`knowlab.fictionalqa.summary`).

Step 0 of every run is the base model, evaluated once as run ``base_model``
(:func:`knowlab.core.checkpoints.with_step0`).  The figures are drawn from these tables by
:mod:`knowlab.fictionalqa.steps.figures`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd

from knowlab.core.checkpoints import with_step0
from knowlab.core.stats import StatsSettings
from knowlab.fictionalqa.stats import mcnemar_for_run, ttest_for_run
from knowlab.fictionalqa.summary import summarise


def paired_tests(
    items: pd.DataFrame,
    runs: Sequence[str],
    run: str,
    control: str | None,
    suite: str,
    stats: StatsSettings,
) -> dict[str, pd.DataFrame]:
    """``{"mcnemar": ..., "ttest": ...}``: the tests of ``run``'s checkpoints (and against ``control``
    at matched steps, when ``runs`` hold it) on ``suite``, from the item rows ``items`` of ``runs``
    (the base model's as step 0 of each; :func:`knowlab.fictionalqa.stats.mcnemar_for_run`,
    :func:`~knowlab.fictionalqa.stats.ttest_for_run`; ``stats``: McNemar's exact threshold and the
    t-test's alternative)."""
    rows = with_step0(items, runs)
    return {
        "mcnemar": mcnemar_for_run(rows, run, control, suite, stats.mcnemar_exact_below),
        "ttest": ttest_for_run(rows, run, control, suite, stats.ttest_alternative),
    }


def summary(
    items: pd.DataFrame,
    runs: Sequence[str],
    splits: Sequence[dict[str, Any]],
    train_logs: pd.DataFrame,
    stats: StatsSettings,
) -> pd.DataFrame:
    """The study summary of the item rows ``items`` of ``runs`` (the base model's as step 0 of each)
    under each split of ``splits``, with the epochs of ``train_logs`` and bootstrap intervals of
    ``stats`` (:func:`knowlab.fictionalqa.summary.summarise`)."""
    return summarise(with_step0(items, runs), splits, train_logs, stats)

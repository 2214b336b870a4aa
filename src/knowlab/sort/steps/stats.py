"""The steps of the SORT statistics rules (:mod:`knowlab.sort.steps`; scripts ``sort_stats``,
``sort_fiction_stats``, ``sort_parametric_stats``): the test tables from the item rows.

- :func:`condition_stats`: the base model's memory conditions: the paper's Tables 1-2, binomial
  tests against chance, McNemar / t-test matrices across conditions (paper Sec. 5, App. C.1);
- :func:`fiction_stats`: SORT on the FictionalQA documents across fine-tuning: the rows with their
  train/val sides, binomial tests, McNemar / t-test matrices between checkpoints;
- :func:`parametric_stats`: SORT after parametric-memory fine-tuning: the rows of every epoch,
  McNemar / t-test matrices between checkpoints (paper App. E.2-E.3, Figs. 14-15).

Each also returns the bands of its figures (:mod:`knowlab.sort.bands`), which the figure rules
draw: every interval of a SORT figure is computed here, with the rule's ``stats``
(:class:`knowlab.core.stats.StatsSettings`).

The statistics are :mod:`knowlab.sort.analysis`; the figures drawn from these tables are
:mod:`knowlab.sort.steps.figures`.  Nothing here imports matplotlib (``envs/stats.yaml``).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from knowlab.core.io import atomic_dir, write_parquet
from knowlab.core.tables import write_table
from knowlab.core.probe import across_finetuning
from knowlab.core.stats import StatsSettings
from knowlab.sort import analysis, bands
from knowlab.sort.settings import EPOCH_FIGURES

log = logging.getLogger(__name__)

#: the groups of the base model's binomial tests against chance (Fig. 10's marks)
BINOMIAL_BY = ("model", "condition", "segment_length", "distance_bin")


def condition_stats(
    rows: pd.DataFrame,
    tables_dir: str | os.PathLike,
    models: Sequence[str],
    conditions: Sequence[str],
    stats: StatsSettings,
) -> tuple[pd.DataFrame, list[dict[str, pd.DataFrame]], dict[str, pd.DataFrame]]:
    """The statistics of the evaluated models' memory conditions.

    Writes the paper's Tables 1-2 (:func:`knowlab.sort.analysis.tables`, intervals of ``stats``)
    into the folder ``tables_dir``: ``<name>.csv`` and ``<name>.tex`` (the wide form, with its
    caption) and ``<name>_long.csv`` (the tidy numbers), each logged.

    Returns:
        The binomial tests against chance per model, condition, segment length and distance bin
        (:func:`knowlab.sort.analysis.binomial_tests`); per model of ``models`` (in order) its
        conditions' ``{"mcnemar": ..., "ttest": ...}`` matrices
        (:func:`knowlab.sort.analysis.condition_tests`, ``stats.ttest_alternative``, McNemar exact
        below ``stats.mcnemar_exact_below`` discordant items); the base model's figures' bands
        (:func:`knowlab.sort.bands.condition_bands`).
    """
    with atomic_dir(tables_dir) as folder:
        for table in analysis.tables(rows, stats).values():
            write_table(table.wide, folder / f"{table.name}.csv", folder / f"{table.name}.tex", table.caption)
            table.long.to_csv(folder / f"{table.name}_long.csv", index=False)
            log.info("%s\n%s", table.name, table.wide.to_string())
    binomial = analysis.binomial_tests(rows, by=list(BINOMIAL_BY))
    tests = [
        analysis.condition_tests(rows, model, conditions, stats.ttest_alternative, stats.mcnemar_exact_below)
        for model in models
    ]
    return binomial, tests, bands.condition_bands(rows, stats)


def fiction_stats(
    rows: pd.DataFrame,
    base: pd.DataFrame,
    splits: Mapping[str, Mapping[str, Any]],
    fictions: Sequence[Mapping[str, Any]],
    tests_dir: str | os.PathLike,
    *,
    runs: Sequence[str],
    control: str | None,
    steps: Sequence[int],
    stats: StatsSettings,
) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """The statistics of SORT on the FictionalQA documents across fine-tuning.

    Writes the McNemar / t-test matrices of each run's checkpoints (and against ``control``, when
    given) on its training documents' items (:func:`knowlab.sort.analysis.fiction_tests`) into the
    folder ``tests_dir``, one ``<run>_<test>.parquet`` each.

    Args:
        rows: the item rows of the runs' checkpoints after step 0.
        base: the base model's rows (step 0 of every run).
        splits: each run's split, by run (:func:`knowlab.core.probe.across_finetuning`).
        fictions: the fiction documents.

    Returns:
        The rows of every run and step with the train/val ``side`` of each run's split
        (:func:`knowlab.core.probe.across_finetuning`), the binomial tests against
        chance per run, step and side (``all`` for rows without a side), and the figure's bands
        (:func:`knowlab.sort.bands.fiction_bands`).
    """
    rows = across_finetuning(rows, base, [*runs, *([control] if control else [])], splits, fictions)
    binomial = analysis.binomial_tests(rows.fillna({"side": "all"}), by=["run", "step", "side"])
    log.info("accuracy by run, step and side:\n%s", binomial[["run", "step", "side", "n", "accuracy", "pvalue_holm"]])
    tests = analysis.fiction_tests(rows, runs, steps, control, stats.ttest_alternative, stats.mcnemar_exact_below)
    with atomic_dir(tests_dir) as folder:
        for (run, test), table in tests.items():
            write_parquet(folder / f"{run}_{test}.parquet", table)
    return rows, binomial, bands.fiction_bands(rows, stats)


def parametric_stats(
    base: pd.DataFrame, rows: pd.DataFrame, nll: pd.DataFrame, stats: StatsSettings
) -> tuple[pd.DataFrame, dict[str, pd.DataFrame], dict[str, pd.DataFrame]]:
    """The statistics of SORT after parametric-memory fine-tuning.

    Args:
        base: the base model's rows (``sort_evaluate_base``), epoch 0 of every run.
        rows: the rows of the fine-tuned checkpoints (``sort_parametric_evaluate``).
        nll: the segments' nll of every epoch (Fig. 12).
        stats: the t-test's alternative, McNemar's exact threshold and the bands' intervals.

    Returns:
        The rows of every epoch (``base`` first, with ``epoch`` 0.0), accuracy by run, epoch and
        condition logged; the ``{"mcnemar": ..., "ttest": ...}`` matrices between checkpoints
        (:func:`knowlab.sort.analysis.parametric_tests`); the bands of Figs. 12, 13 and 16 by
        figure name (:func:`knowlab.sort.bands.epoch_bands`).
    """
    rows = pd.concat([base.assign(epoch=0.0), rows], ignore_index=True)
    summary = rows.groupby(["run", "epoch", "condition"])["correct"].agg(["mean", "size"])
    log.info("accuracy by run, epoch and condition:\n%s", summary)
    tests = analysis.parametric_tests(rows, stats.ttest_alternative, stats.mcnemar_exact_below)
    figure_bands = {
        name: bands.epoch_bands(nll if metric == "perplexity" else rows, stats, metric=metric)
        for name, metric in EPOCH_FIGURES.items()
    }
    return rows, tests, figure_bands

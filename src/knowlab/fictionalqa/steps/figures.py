"""The steps of the FictionalQA figure rules (:mod:`knowlab.fictionalqa.steps`; scripts
``fictionalqa_figure`` and ``fictionalqa_figure_pvalues``): figures drawn from the tables of the
statistics rules (:mod:`knowlab.fictionalqa.steps.stats`) and from the training logs; no statistic
is computed here.

- :func:`draw_family`: one of the paper's figure families (:mod:`knowlab.fictionalqa.figures`), from
  the study summary, or for ``fig2`` from the training logs;
- :func:`draw_pvalues`: the p-value matrix of one paired-test table
  (:func:`knowlab.core.plotting.plot_pvalue_matrix`).

Both save the figure as PDF and PNG (``envs/plot.yaml``).
"""

from __future__ import annotations

import os

import pandas as pd

from knowlab.core.plotting import plot_pvalue_matrix
from knowlab.core.probe import run_name
from knowlab.fictionalqa.figures import curves_from_summary, curves_from_train_logs, plot_family


def draw_family(
    family: str,
    summary: pd.DataFrame,
    train_logs: pd.DataFrame,
    pdf: str | os.PathLike,
    png: str | os.PathLike,
    *,
    model: str,
    note: str | None = None,
) -> pd.DataFrame:
    """Draw figure ``family`` (a key of :data:`knowlab.fictionalqa.figures.FAMILIES`) to ``pdf`` and
    ``png``; the curves drawn.

    ``fig2`` is drawn from the training logs ``train_logs``
    (:func:`~knowlab.fictionalqa.figures.curves_from_train_logs`), every other family from the
    study summary ``summary`` (:func:`~knowlab.fictionalqa.figures.curves_from_summary`, ``model``
    naming the series); ``note``: the settings line under the figure.
    """
    if family == "fig2":
        curves = curves_from_train_logs(train_logs)
    else:
        curves = curves_from_summary(summary, family, model=model)
    plot_family(family, curves, pdf, png, note=note)
    return curves


def draw_pvalues(
    table: pd.DataFrame,
    run: str,
    suite: str,
    pdf: str | os.PathLike,
    png: str | os.PathLike,
    *,
    note: str | None = None,
) -> None:
    """Draw the Holm-corrected p-value matrix of one paired-test table of ``run`` on MCQ ``suite``
    (:func:`knowlab.core.plotting.plot_pvalue_matrix`, runs by their display names) to ``pdf`` and
    ``png``."""
    title = f"{run_name(run)}: MCQ-{suite.removeprefix('mcq')}"
    plot_pvalue_matrix(table, title, pdf, png, note=note, run_label=run_name)

"""The steps of the FictionalQA figure rules (:mod:`knowlab.fictionalqa.steps`; scripts
``fictionalqa_figure`` and ``fictionalqa_figure_pvalues``): figures drawn from the tables of the
statistics rules (:mod:`knowlab.fictionalqa.steps.stats`) and from the training logs; no statistic
is computed here.

- :func:`draw_family`: one of the paper's figure families (:mod:`knowlab.fictionalqa.figures`), from
  the study summary, or for ``fig2`` from the training logs;
- :func:`draw_across_models`: one of the across-models families (paper Figs. 4, 7 left, 9, 10, 11),
  from every fine-tuned model's summary, one colour per model;
- :func:`draw_pvalues`: the p-value matrix of one paired-test table
  (:func:`knowlab.core.plotting.plot_pvalue_matrix`).

All save the figure as PDF and PNG (``envs/plot.yaml``).
"""

from __future__ import annotations

import os
from collections.abc import Sequence

import pandas as pd

from knowlab.core.plotting import plot_pvalue_matrix
from knowlab.fiction.splits import run_name
from knowlab.fictionalqa.figures import (
    curves_across_models,
    curves_from_summary,
    curves_from_train_logs,
    plot_across_models,
    plot_family,
)


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


def draw_across_models(
    family: str,
    summaries: pd.DataFrame,
    models: Sequence[str],
    pdf: str | os.PathLike,
    png: str | os.PathLike,
    *,
    note: str | None = None,
) -> pd.DataFrame:
    """Draw the across-models figure ``family`` (a key of
    :data:`knowlab.fictionalqa.figures.ACROSS_MODELS`) to ``pdf`` and ``png``; the curves drawn.

    After the FictionalQA paper: ``fig4`` Fig. 4 (train / val document loss, Doc and Event
    splits), ``fig7`` Fig. 7 left (MCQ-4 accuracy, Doc split), ``fig9`` Fig. 9 (nll(answer |
    question) on fictional and real-world Q&A, Doc split), ``fig10`` Fig. 10 (MCQ-4 on questions
    from train vs val documents, Doc / Event / Fictsheets) and ``fig10_11`` Fig. 11 (MCQ-4 vs
    MCQ-10, Doc split); each model's fine-tuned run and its webtext-only control.

    ``summaries``: every model's study summary (:mod:`knowlab.fictionalqa.summary`, one row per
    split, run, step, suite and side) concatenated, with a ``model`` column (display name).
    ``models``: the config's model order, which fixes each model's colour in every such figure
    (:func:`knowlab.core.plotting.model_colours`).  ``note``: the settings line under the figure.
    Returns the curves (:func:`~knowlab.fictionalqa.figures.curves_across_models`: columns
    ``panel, series`` (model), ``style, run, x, y`` and for MCQ ``y_lo, y_hi``; one row per point).
    """
    curves = curves_across_models(summaries, family, models)
    plot_across_models(family, curves, pdf, png, note=note, models=models)
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

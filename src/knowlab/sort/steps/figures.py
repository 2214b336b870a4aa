"""The steps of the SORT figure rules (:mod:`knowlab.sort.steps`; scripts ``sort_figures``,
``sort_fiction_figures``, ``sort_parametric_figures``): figures drawn from the tables of the
statistics rules (:mod:`knowlab.sort.steps.stats`: their tests and the figures' bands,
:mod:`knowlab.sort.bands`) and from the item rows (the footnotes' models and answer rule); no
test or interval is computed here.

- :func:`condition_figures`: the base model's memory conditions: Figs. 3a, 3b (in context), 4 (RAG),
  10 (baseline, marked by the binomial tests) and the McNemar / t-test matrices across conditions;
- :func:`fiction_figure`: SORT on the FictionalQA documents per checkpoint and side;
- :func:`parametric_figures`: parametric-memory fine-tuning: Figs. 12 (segment perplexity), 13
  (accuracy), 16 (score) by epoch and the matrices of Figs. 14-15.

``figures`` maps a rule's output keys ``<name>_pdf`` and ``<name>_png`` to their paths.  The drawing
is :mod:`knowlab.sort.condition_plots`, :mod:`knowlab.sort.finetune_plots` and
:mod:`knowlab.sort.matrix_plots` (``envs/plot.yaml``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping

import pandas as pd

from knowlab.core.stats import StatsSettings
from knowlab.sort.answers import answer_note
from knowlab.sort.condition_plots import plot_by_distance, plot_by_excerpt_length, plot_rag
from knowlab.sort.finetune_plots import plot_across_epochs, plot_fiction_sort
from knowlab.sort.matrix_plots import plot_matrix
from knowlab.sort.settings import CONDITION_FIGURES, EPOCH_FIGURES

#: the matrices across the base model's conditions: test -> what the title says it tests
CONDITION_MATRICES = {"mcnemar": "McNemar's test on correctness", "ttest": "paired t-test on the score"}
#: the matrices across parametric fine-tuning checkpoints: test -> (figure, what the title says)
PARAMETRIC_MATRICES = {
    "mcnemar": ("fig14", "McNemar's test on correctness"),
    "ttest": ("fig15", "paired t-test on the score"),
}
#: the drawing of each banded figure of the base model (:data:`knowlab.sort.bands.CONDITION_FIGURES`)
PLOTS = {"excerpt_length": plot_by_excerpt_length, "distance": plot_by_distance, "rag": plot_rag}


def _paths(figures: Mapping[str, str | os.PathLike], name: str) -> tuple[str | os.PathLike, str | os.PathLike]:
    """The (pdf, png) paths of figure ``name``."""
    return figures[f"{name}_pdf"], figures[f"{name}_png"]


def condition_figures(
    rows: pd.DataFrame,
    binomial: pd.DataFrame,
    tests: Mapping[str, pd.DataFrame],
    bands: Mapping[str, pd.DataFrame],
    figures: Mapping[str, str | os.PathLike],
    *,
    model: str,
    stats: StatsSettings,
    retrieval: pd.DataFrame | None = None,
) -> None:
    """Draw the base model's figures ``fig3a``, ``fig3b``, ``fig10``, ``fig4``, ``mcnemar`` and ``ttest``.

    Args:
        rows: the item rows of every evaluated model and condition.
        binomial: the binomial tests against chance of :func:`knowlab.sort.steps.stats.condition_stats`
            (its ``baseline`` rows mark Fig. 10).
        tests: the base model's ``{"mcnemar": ..., "ttest": ...}`` matrices across conditions.
        bands: each banded figure's bands by name (:func:`knowlab.sort.bands.condition_bands`).
        figures: the output paths (see the module docstring).
        model: the model named in the matrices' footnotes.
        stats: the bands' level and resamples, for the footnotes.
        retrieval: the retrieval table (``sort_retrieval``), whose ``rag`` recall Fig. 4 shows; None
            when no RAG condition is scored.
    """
    recall = None
    if retrieval is not None:
        recall = retrieval[retrieval.condition == "rag"].merge(rows[["item_id", "distance_bin"]].drop_duplicates())
    extra = {"fig10": {"marks": binomial[binomial.condition == "baseline"]}, "fig4": {"recall": recall}}
    for name, (kind, options) in CONDITION_FIGURES.items():
        PLOTS[kind](rows, bands[name], *_paths(figures, name), **options, **extra.get(name, {}), stats=stats)
    for test, what in CONDITION_MATRICES.items():
        plot_matrix(
            tests[test], f"SORT, base model: {what} across memory conditions", *_paths(figures, test), model=model,
            note=answer_note(rows) if test == "mcnemar" else None,  # correctness depends on the answer rule
        )  # fmt: skip


def fiction_figure(
    rows: pd.DataFrame,
    bands: pd.DataFrame,
    pdf: str | os.PathLike,
    png: str | os.PathLike,
    *,
    model: str,
    stats: StatsSettings,
) -> None:
    """Draw SORT on the FictionalQA documents per checkpoint and side
    (:func:`knowlab.sort.finetune_plots.plot_fiction_sort`) from the rows and bands of
    :func:`knowlab.sort.steps.stats.fiction_stats` (``stats``: the bands' level and resamples,
    for the footnote)."""
    plot_fiction_sort(rows, bands, pdf, png, model=model, stats=stats)


def parametric_figures(
    rows: pd.DataFrame,
    nll: pd.DataFrame,
    tests: Mapping[str, pd.DataFrame],
    bands: Mapping[str, pd.DataFrame],
    figures: Mapping[str, str | os.PathLike],
    *,
    model: str,
    stats: StatsSettings,
) -> None:
    """Draw the parametric fine-tuning figures ``fig14``, ``fig15`` (the matrices of ``tests``, from
    :func:`knowlab.sort.steps.stats.parametric_stats`), ``fig12`` (the segments' perplexity, ``nll``),
    ``fig13`` and ``fig16`` (accuracy and score, ``rows``, the rows of every epoch), each with its
    ``bands`` (by figure name, :func:`knowlab.sort.bands.epoch_bands`; ``stats`` for the footnotes)."""
    for test, (name, what) in PARAMETRIC_MATRICES.items():
        note = answer_note(rows) if test == "mcnemar" else None  # correctness depends on the answer rule
        title = f"SORT without context after fine-tuning: {what}"
        plot_matrix(tests[test], title, *_paths(figures, name), model=model, note=note)
    for name, metric in EPOCH_FIGURES.items():
        plot_across_epochs(
            nll if metric == "perplexity" else rows, bands[name], *_paths(figures, name), metric=metric, model=model,
            stats=stats,
        )  # fmt: skip

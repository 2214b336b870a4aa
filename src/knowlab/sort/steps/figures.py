"""The steps of the SORT figure rules (:mod:`knowlab.sort.steps`; scripts ``sort_figures``,
``sort_fiction_figures``, ``sort_parametric_figures``): figures drawn from the tables of the
statistics rules (:mod:`knowlab.sort.steps.stats`) and from the item rows; no test is computed here.

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

from knowlab.sort.answers import answer_note
from knowlab.sort.condition_plots import plot_by_distance, plot_by_excerpt_length, plot_rag
from knowlab.sort.finetune_plots import plot_across_epochs, plot_fiction_sort
from knowlab.sort.matrix_plots import plot_matrix

#: the matrices across the base model's conditions: test -> what the title says it tests
CONDITION_MATRICES = {"mcnemar": "McNemar's test on correctness", "ttest": "paired t-test on the score"}
#: the matrices across parametric fine-tuning checkpoints: test -> (figure, what the title says)
PARAMETRIC_MATRICES = {
    "mcnemar": ("fig14", "McNemar's test on correctness"),
    "ttest": ("fig15", "paired t-test on the score"),
}
#: the figures by parametric fine-tuning epoch: figure -> metric of
#: :func:`~knowlab.sort.finetune_plots.plot_across_epochs`
ACROSS_EPOCHS = {"fig12": "perplexity", "fig13": "accuracy", "fig16": "score"}


def _paths(figures: Mapping[str, str | os.PathLike], name: str) -> tuple[str | os.PathLike, str | os.PathLike]:
    """The (pdf, png) paths of figure ``name``."""
    return figures[f"{name}_pdf"], figures[f"{name}_png"]


def condition_figures(
    rows: pd.DataFrame,
    binomial: pd.DataFrame,
    tests: Mapping[str, pd.DataFrame],
    figures: Mapping[str, str | os.PathLike],
    *,
    model: str,
    n_resamples: int,
    seed: int,
    retrieval: pd.DataFrame | None = None,
) -> None:
    """Draw the base model's figures ``fig3a``, ``fig3b``, ``fig10``, ``fig4``, ``mcnemar`` and ``ttest``.

    Args:
        rows: the item rows of every evaluated model and condition.
        binomial: the binomial tests against chance of :func:`knowlab.sort.steps.stats.condition_stats`
            (its ``baseline`` rows mark Fig. 10).
        tests: the base model's ``{"mcnemar": ..., "ttest": ...}`` matrices across conditions.
        figures: the output paths (see the module docstring).
        model: the model named in the matrices' footnotes.
        n_resamples, seed: the bootstrap of the accuracy bands (config ``stats.bootstrap_resamples``,
            ``seed``).
        retrieval: the retrieval table (``sort_retrieval``), whose ``rag`` recall Fig. 4 shows; None
            when no RAG condition is scored.
    """
    bands = {"n_resamples": n_resamples, "seed": seed}
    plot_by_excerpt_length(rows, *_paths(figures, "fig3a"), **bands)
    plot_by_distance(rows, *_paths(figures, "fig3b"), **bands)
    plot_by_distance(
        rows, *_paths(figures, "fig10"), condition="baseline", hue="segment_length", panel="model",
        marks=binomial[binomial.condition == "baseline"], **bands,
    )  # fmt: skip
    recall = None
    if retrieval is not None:
        recall = retrieval[retrieval.condition == "rag"].merge(rows[["item_id", "distance_bin"]].drop_duplicates())
    plot_rag(rows, *_paths(figures, "fig4"), recall=recall, **bands)
    for test, what in CONDITION_MATRICES.items():
        plot_matrix(
            tests[test], f"SORT, base model: {what} across memory conditions", *_paths(figures, test), model=model,
            note=answer_note(rows) if test == "mcnemar" else None,  # correctness depends on the answer rule
        )  # fmt: skip


def fiction_figure(
    rows: pd.DataFrame, pdf: str | os.PathLike, png: str | os.PathLike, *, model: str, n_resamples: int, seed: int
) -> None:
    """Draw SORT on the FictionalQA documents per checkpoint and side
    (:func:`knowlab.sort.finetune_plots.plot_fiction_sort`) from the rows of
    :func:`knowlab.sort.steps.stats.fiction_stats`; bands: ``n_resamples`` bootstrap resamples,
    ``seed`` (config ``stats.bootstrap_resamples``, ``seed``)."""
    plot_fiction_sort(rows, pdf, png, model=model, n_resamples=n_resamples, seed=seed)


def parametric_figures(
    rows: pd.DataFrame,
    nll: pd.DataFrame,
    tests: Mapping[str, pd.DataFrame],
    figures: Mapping[str, str | os.PathLike],
    *,
    model: str,
    n_resamples: int,
    seed: int,
) -> None:
    """Draw the parametric fine-tuning figures ``fig14``, ``fig15`` (the matrices of ``tests``, from
    :func:`knowlab.sort.steps.stats.parametric_stats`), ``fig12`` (the segments' perplexity from
    ``nll``), ``fig13`` and ``fig16`` (accuracy and score from ``rows``, the rows of every epoch);
    bands: ``n_resamples`` bootstrap resamples, ``seed`` (config ``stats.bootstrap_resamples``, ``seed``)."""
    for test, (name, what) in PARAMETRIC_MATRICES.items():
        note = answer_note(rows) if test == "mcnemar" else None  # correctness depends on the answer rule
        title = f"SORT without context after fine-tuning: {what}"
        plot_matrix(tests[test], title, *_paths(figures, name), model=model, note=note)
    for name, metric in ACROSS_EPOCHS.items():
        plot_across_epochs(
            nll if metric == "perplexity" else rows, *_paths(figures, name), metric=metric, model=model,
            n_resamples=n_resamples, seed=seed,
        )  # fmt: skip

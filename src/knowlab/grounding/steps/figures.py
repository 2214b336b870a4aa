"""The figure steps of the grounding rules (``rules/grounding.smk``: ``grounding_figures``,
``grounding_finetune_figures``; :mod:`knowlab.grounding.steps`): the figures drawn from the tables
of :mod:`knowlab.grounding.steps.stats`, read back with exactly the values written; no statistic
is computed here.  The drawing is :mod:`knowlab.grounding.plots`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import pandas as pd

from knowlab.grounding import analysis, plots, report


def read_tables(folder: str | Path) -> dict[str, pd.DataFrame]:
    """The grounding tables the figures show (:data:`knowlab.grounding.report.FIGURE_TABLES`), from
    the folder rule ``grounding_tables`` writes (:func:`knowlab.grounding.report.read_figure_tables`)."""
    return report.read_figure_tables(folder)


def read_rates(path: str | Path) -> pd.DataFrame:
    """The across-fine-tuning rates table (``rates.csv`` of rule ``grounding_finetune_stats``), read
    back with exactly the values written (:func:`knowlab.grounding.report.read_table`)."""
    return report.read_table(path)


def draw(tables: Mapping[str, pd.DataFrame], outputs: Mapping[str, str]) -> None:
    """Draw the grounding figures (Figs. 3c, 4, 5, 15-16, gold position) from ``tables``
    (:func:`read_tables`).

    ``outputs`` maps ``<name>_pdf`` / ``<name>_png`` to paths for the names fig3c, fig4, fig5,
    fig15_16, position (a name without both is not drawn; other keys are ignored).  Every
    figure's footnote names the models (those of the summary) and the decomposer and evaluator
    (the tables' method columns, :func:`knowlab.grounding.analysis.method_note`).
    """
    labels = analysis.method_labels(tables["summary"])
    tables = {
        name: table.drop(columns=[c for c in analysis.METHOD_COLUMNS if c in table.columns])
        for name, table in tables.items()
    }
    summary = tables["summary"]
    models = ", ".join(sorted(summary.model.unique()))
    note = f"Models: {models}. {analysis.method_note(labels)}"
    factors = tables["factors_original_gold"].set_index(["dataset", "model"])
    position = tables["position"].set_index(["dataset", "model"])
    figures = {
        "fig3c": lambda pdf, png: plots.plot_by_factor(factors, pdf, png, note=note),
        "fig4": lambda pdf, png: plots.plot_length_curve(tables["length_curve"], pdf, png, note=note),
        "fig5": lambda pdf, png: plots.plot_reduction(tables["reduction_rates"], pdf, png, note=note),
        "fig15_16": lambda pdf, png: plots.plot_precision_recall(summary, pdf, png, note=note),
        "position": lambda pdf, png: plots.plot_position(position, pdf, png, note=note),
    }
    for name, plot in figures.items():
        if f"{name}_pdf" in outputs and f"{name}_png" in outputs:
            plot(outputs[f"{name}_pdf"], outputs[f"{name}_png"])


def draw_finetune(rates: pd.DataFrame, pdf: str, png: str, *, model: str, runs: Sequence[str]) -> None:
    """The across-fine-tuning figure of ``rates`` (:func:`read_rates`) for the fiction ``runs`` and the
    control, as PDF and PNG (:func:`knowlab.grounding.plots.plot_finetune`; ``model``: the base
    model's name)."""
    plots.plot_finetune(rates, pdf, png, model=model, runs=runs)

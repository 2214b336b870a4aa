"""The grounding tables of rule ``grounding_tables`` (Lee et al. 2024, "How Well Do Large Language
Models Truly Ground?": Tables 1, 8-12, and the tables of Figs. 3c, 4, 5, 15-16 and the
gold-position analysis).

The statistics are :mod:`knowlab.grounding.analysis`; this module writes their tables from the
scored rows (CSV + LaTeX, :func:`knowlab.core.tables.write_table`: :func:`write_tables`) and
reads back the ones the figures show, with exactly the values written (:func:`read_figure_tables`;
rule ``grounding_figures`` draws them, :mod:`knowlab.grounding.steps.figures`).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd

from knowlab.core.io import atomic_dir
from knowlab.core.tables import write_table
from knowlab.grounding import analysis
from knowlab.grounding.settings import GOLD_CONDITIONS

if TYPE_CHECKING:
    from knowlab.core.stats import StatsSettings
    from knowlab.grounding.settings import GroundingTablesSettings

CAPTIONS = {
    "summary": "Grounding metrics (x 100, macro averages, bootstrap intervals at the level of column confidence) "
    "per dataset, model and condition.",
    "table1": "Grounding F1 (x 100) per model in the four settings (paper Table 1).",
    "table1_precision": "Precision (x 100): response atomic facts supported by the gold contexts (paper Figs. 15-16).",
    "table1_recall": "Recall (x 100): gold atomic facts supported by the response (paper Figs. 15-16).",
    "table12": "Answer accuracy (x 100, definite-answer questions) in five settings (paper Table 12).",
    "reduction_rates": "Reduction rate (%) of F1 from Gold to Dist contexts (paper Fig. 5).",
    "length_curve": "F1 (x 100) against input context length in tokens, Original version (paper Fig. 4).",
    "position": "F1 (x 100) by the position of the gold contexts among distractors (paper Sec. 4.2).",
    "factors": "Grounding F1 (x 100) by question and context factors, {} (paper Tables 8-11).",
}

#: the tables the figures are drawn from (:func:`knowlab.grounding.steps.figures.draw`)
FIGURE_TABLES = ("summary", "factors_original_gold", "length_curve", "reduction_rates", "position")


def config_labels(settings: GroundingTablesSettings) -> dict[str, str]:
    """``{"decomposer", "evaluator"}`` labels made from the ``grounding`` config alone (rows scored
    before the rows named them; an LLM's model unknown unless the config names it): those of
    ``settings`` (:meth:`~knowlab.grounding.settings.GroundingTablesSettings.from_config`)."""
    return {"decomposer": settings.decomposer_label, "evaluator": settings.evaluator_label}


def write_tables(rows, out_dir: str, settings: GroundingTablesSettings, stats: StatsSettings) -> None:
    """Write the grounding tables (CSV + LaTeX) into ``out_dir``.

    Tables: ``summary`` (every metric x 100 with bootstrap intervals at ``stats.confidence`` per
    dataset, model and condition), ``table1`` (F1; ``table1_precision``, ``table1_recall``: Figs. 15-16),
    ``factors_<setting>`` for the four settings (Tables 8-11), ``table12`` (answer accuracy),
    ``reduction_rates`` (Fig. 5), ``length_curve`` (Fig. 4), ``position``; the figures are drawn
    from them (:data:`FIGURE_TABLES`, :func:`knowlab.grounding.steps.figures.draw`).

    Every table ends with the columns ``decomposer`` and ``evaluator``
    (:func:`knowlab.grounding.analysis.method_labels` of the rows, or those of ``settings`` for
    rows that do not name them), e.g. ``"sentences (sentence-level, not atomic facts)"`` /
    ``"llm:<model>"`` and ``"bi_encoder:packaged:all-MiniLM-L6-v2@0.4"``; every figure's
    footnote says them (:func:`knowlab.grounding.analysis.method_note`).  The metric values
    do not depend on them.

    Args:
        rows: the scored rows of every dataset and model (frames of
            :func:`knowlab.grounding.steps.data.score`, concatenated).
        settings: ``position`` (``grounding.distractors.position``) and the decomposer's and
            evaluator's labels (they name the method when the rows do not).
        stats: the bootstrap intervals' level, resamples and seed (:func:`knowlab.grounding.analysis.summarize`).
    """
    summary = analysis.summarize(rows, ["dataset", "model", "condition"], stats=stats)
    tables = {
        "summary": summary.set_index(["dataset", "model", "condition"]),
        "table1": analysis.table1(summary, "f1"),
        "table1_precision": analysis.table1(summary, "precision"),
        "table1_recall": analysis.table1(summary, "recall"),
        "table12": analysis.answer_accuracy_table(summary),
        "reduction_rates": analysis.reduction_rates(summary).set_index(["dataset", "model", "version"]),
        "length_curve": analysis.length_curve(rows, summary).set_index(["dataset", "model", "condition"]),
        "position": analysis.position_table(summary, settings.position),
    }
    for condition in GOLD_CONDITIONS:
        tables[f"factors_{condition}"] = analysis.factor_table(rows, condition)
    labels = analysis.method_labels(
        rows, None if set(analysis.METHOD_COLUMNS) <= set(rows) else config_labels(settings)
    )
    with atomic_dir(out_dir) as folder:
        for name, table in tables.items():
            setting = analysis.SETTING_LABELS.get(name.removeprefix("factors_"))
            caption = CAPTIONS.get(name) or CAPTIONS["factors"].format(setting)
            write_table(
                analysis.with_method_columns(table.reset_index(), labels),
                folder / f"{name}.csv",
                folder / f"{name}.tex",
                caption,
                float_format="{:.1f}",
            )


def read_table(path: str | Path) -> pd.DataFrame:
    """A CSV table written by :func:`write_tables` (or :func:`knowlab.core.io.write_csv`) read back with
    the values written: floats as written (pandas writes the shortest repr that round-trips and
    parses it back exactly), empty cells NaN and no other text (e.g. a model named ``"NA"``)
    taken for a missing value."""
    return pd.read_csv(path, keep_default_na=False, na_values=[""])


def read_figure_tables(folder: str | Path) -> dict[str, pd.DataFrame]:
    """The tables the figures show (:data:`FIGURE_TABLES`), read from the folder of
    :func:`write_tables` (:func:`read_table`): name -> frame with its method columns."""
    return {name: read_table(Path(folder) / f"{name}.csv") for name in FIGURE_TABLES}

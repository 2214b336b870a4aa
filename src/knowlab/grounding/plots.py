"""Grounding figures (Lee et al. 2024): Fig. 3c (by factor), Fig. 4 (F1 vs input length), Fig. 5 (reduction
rate Gold -> Dist), Figs. 15-16 (precision and recall), gold-context position, and grounding
across fine-tuning.  Inputs are the tables of :mod:`knowlab.grounding.analysis` (values x 100).
Each figure has a title, labelled axes, one legend and a footnote under the panels, and is saved
as PDF and PNG; style and layout: :mod:`knowlab.core.plotting`; FictionalQA run names:
:func:`knowlab.fiction.splits.run_name`."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.patches import Patch

from knowlab.core.checkpoints import CONTROL_RUN
from knowlab.core.plotting import (
    CONTROL_COLOUR,
    STEP_LABEL,
    band_handle,
    colours,
    finish,
    integer_ticks,
    line_handle,
    line_with_band,
    models_note,
    panel_figure,
)
from knowlab.fiction.splits import run_name
from knowlab.grounding.analysis import SETTING_LABELS, method_labels, method_note

F1 = "grounding F1 (x 100)"


def _bars(ax, table: pd.DataFrame, ylabel: str, errors: pd.DataFrame | None = None) -> list[Patch]:
    """Grouped bars: one group per row of ``table``, one bar per column; returns the legend entries.

    ``errors`` (same shape) holds ``(below, above)`` error-bar lengths per cell."""
    n_rows, n_cols = table.shape
    width = 0.8 / max(n_cols, 1)
    x = np.arange(n_rows)
    palette = colours(table.columns)
    for j, column in enumerate(table.columns):
        yerr = None if errors is None else np.array(errors[column].tolist(), dtype=float).T  # (2, n_rows)
        ax.bar(
            x + (j - (n_cols - 1) / 2) * width,
            table[column],
            width,
            label=str(column),
            color=palette[column],
            yerr=yerr,
            capsize=2,
        )
    ax.set_xticks(x, [str(i) for i in table.index], rotation=0)
    ax.set_ylabel(ylabel)
    ax.grid(axis="x", visible=False)
    return [Patch(color=palette[c], label=str(c)) for c in table.columns]


def plot_by_factor(
    factor_table: pd.DataFrame, pdf: str | Path, png: str | Path, *, setting: str = "original_gold", note: str = ""
) -> None:
    """Fig. 3c: F1 (x 100) per model, overall and for each level of each factor, in ``setting``."""
    table = factor_table.reset_index()
    table["label"] = table["dataset"] + " / " + table["model"]
    table = table.set_index("label").drop(columns=["dataset", "model"]).T
    size = (max(6.0, 0.9 * len(table.index) + 2), 4.0)
    layout = panel_figure(1, table.shape[1], note, panel_size=size, legend_title="dataset / model")
    (ax,) = layout.axes
    handles = _bars(ax, table, F1)
    ax.set_xticks(range(len(table.index)), [i.replace("=", "\n") for i in table.index], fontsize=8)
    ax.set_xlabel("question or context factor (level)")
    title = f"Grounding F1 by question and context factors ({SETTING_LABELS.get(setting, setting)})"
    finish(layout, handles, title, pdf, png)


def plot_length_curve(curve: pd.DataFrame, pdf: str | Path, png: str | Path, *, note: str = "") -> None:
    """Fig. 4: F1 (x 100, bootstrap interval at the table's ``confidence``) against the mean
    input-context length in tokens
    (Original version; distractors added in rank order), one line per dataset / model."""
    groups = list(curve.groupby(["dataset", "model"], sort=False))
    palette = colours(key for key, _ in groups)
    handles = [line_handle(f"{dataset} / {model}", palette[(dataset, model)], marker="o") for dataset, model in palette]
    handles.append(band_handle(float(curve["confidence"].iloc[0])))
    note = "Numbers above points: mean distractor contexts per question. " + note
    layout = panel_figure(1, len(handles), note, panel_size=(6.4, 4.2))
    (ax,) = layout.axes
    for key, part in groups:
        part = part.sort_values("context_tokens")
        line_with_band(ax, part.context_tokens, part.f1, part.f1_low, part.f1_high, palette[key])
        for x, y, k in zip(part.context_tokens, part.f1, part.n_distractors, strict=True):
            ax.annotate(f"{k:.1f}", (x, y), textcoords="offset points", xytext=(0, 6), fontsize=8, ha="center")
    ax.set(xlabel="input context length (tokens, mean over questions)", ylabel=F1)
    finish(layout, handles, "Grounding F1 as distractor contexts lengthen the input", pdf, png)


def plot_reduction(rates: pd.DataFrame, pdf: str | Path, png: str | Path, *, note: str = "") -> None:
    """Fig. 5: reduction rate (%) of F1 from Gold to Dist contexts per model, Original and Conflict."""
    table = rates.assign(label=rates["dataset"] + " / " + rates["model"]).pivot_table(
        index="label", columns="version", values="reduction_rate", sort=False
    )
    table = table[[c for c in ("original", "conflict") if c in table.columns]]
    note = "100 x (F1 Gold - F1 Dist) / F1 Gold. " + note
    size = (max(5.0, 1.4 * len(table) + 2), 4.0)
    layout = panel_figure(1, table.shape[1], note, panel_size=size, legend_title="version")
    (ax,) = layout.axes
    handles = _bars(ax, table, "reduction rate of F1, Gold -> Dist (%)")
    ax.axhline(0, color="k", linewidth=0.8)
    ax.set_xlabel("dataset / model")
    finish(layout, handles, "How much distractor contexts reduce grounding F1", pdf, png)


def plot_precision_recall(summary: pd.DataFrame, pdf: str | Path, png: str | Path, *, note: str = "") -> None:
    """Figs. 15-16: precision and recall (x 100, bootstrap intervals at the summary's ``confidence``
    as error bars) per model
    in the four settings; one panel per setting."""
    settings = [c for c in SETTING_LABELS if c in set(summary.condition) and c != "no_context"]
    note = f"Error bars: {float(summary['confidence'].iloc[0]):.0%} bootstrap intervals. " + note
    layout = panel_figure(len(settings), 2, note, ncols=len(settings), panel_size=(3.8, 4.0), sharey=True)
    part = summary.assign(label=summary["dataset"] + " /\n" + summary["model"])
    handles = []
    for ax, setting in zip(layout.axes, settings, strict=True):
        rows = part[part.condition == setting]
        long = rows.melt(id_vars=["label"], value_vars=["precision", "recall"], var_name="metric", value_name="value")
        lows = rows.melt(id_vars=["label"], value_vars=["precision_low", "recall_low"], value_name="low")["low"]
        highs = rows.melt(id_vars=["label"], value_vars=["precision_high", "recall_high"], value_name="high")["high"]
        long = long.assign(low=lows.to_numpy(), high=highs.to_numpy())
        value = long.pivot_table(index="label", columns="metric", values="value", sort=False)
        errors = pd.DataFrame(
            {
                m: [
                    (max(v - lo, 0), max(hi - v, 0))
                    for v, lo, hi in long.loc[long.metric == m, ["value", "low", "high"]].itertuples(index=False)
                ]
                for m in value.columns
            },
            index=value.index,
        )
        handles = _bars(ax, value, "precision / recall (x 100)" if ax is layout.axes[0] else "", errors)
        ax.set_title(SETTING_LABELS[setting])
        ax.tick_params(axis="x", labelsize=8)
    title = "Precision (response facts supported by the gold contexts) and recall (gold facts in the response)"
    finish(layout, handles, title, pdf, png)


def plot_position(table: pd.DataFrame, pdf: str | Path, png: str | Path, *, note: str = "") -> None:
    """Gold-context position (Sec. 4.2): F1 (x 100) per model with the gold contexts at the start,
    middle, end or a random place among the distractors."""
    order = [p for p in ("start", "middle", "end", "random") if p in table.columns]
    table = table[order]
    table.index = [f"{d} / {m}" for d, m in table.index]
    size = (max(5.0, 1.6 * len(table) + 2), 4.0)
    layout = panel_figure(1, table.shape[1], note, panel_size=size, legend_title="gold position")
    (ax,) = layout.axes
    handles = _bars(ax, table, F1)
    ax.set_xlabel("dataset / model")
    title = "Grounding F1 by the position of the gold contexts (Original-Dist)"
    finish(layout, handles, title, pdf, png)


def plot_finetune(
    rates: pd.DataFrame, pdf: str | Path, png: str | Path, *, model: str, runs: Sequence[str], note: str = ""
) -> None:
    """Grounding across fine-tuning: F1, follows-context and follows-training rates (x 100) against
    the optimizer step, for each fiction run (train-side questions, solid) and the control
    (dashed), under Gold (Original) and Conflict contexts.  The footnote names the model, the
    decomposer and M_eval (the ``decomposer`` / ``evaluator`` columns of ``rates``,
    :func:`knowlab.grounding.analysis.method_note`) and ends with ``note``."""
    panels = [
        ("original_gold", "f1"),
        ("conflict_gold", "f1"),
        ("original_gold", "follows_context"),
        ("conflict_gold", "follows_context"),
        ("conflict_gold", "follows_training"),
    ]
    labels = {
        "f1": ("grounding F1", "F1 (x 100)"),
        "follows_context": ("answer follows the context", "rate (x 100)"),
        "follows_training": ("answer follows training (Original answer)", "rate (x 100)"),
    }
    palette = colours(runs)
    handles = [line_handle(run_name(run), palette[run], marker="o") for run in runs]
    has_control = (rates.run == CONTROL_RUN).any()
    if has_control:
        handles.append(line_handle("control (webtext only)", CONTROL_COLOUR, linestyle="--", marker="s"))
    footnote = f"{models_note(rates, model)} Fiction runs: questions on their training documents (solid)."
    if has_control:
        footnote += " Control: fine-tuned on webtext only, all questions (dashed)."
    footnote = f"{footnote} {method_note(method_labels(rates))} {note}".strip()
    layout = panel_figure(len(panels), len(handles), footnote)
    for ax, (condition, metric) in zip(layout.axes, panels, strict=True):
        for run in runs:
            part = rates[(rates.run == run) & (rates.side == "train") & (rates.condition == condition)].sort_values(
                "step"
            )
            line_with_band(ax, part.step, part[metric], colour=palette[run])
        control = rates[(rates.run == CONTROL_RUN) & (rates.condition == condition)].sort_values("step")
        if not control.empty:
            line_with_band(ax, control.step, control[metric], colour=CONTROL_COLOUR, linestyle="--", marker="s")
        title, ylabel = labels[metric]
        ax.set(title=f"{title}\n{SETTING_LABELS[condition]}", xlabel=STEP_LABEL, ylabel=ylabel)
        integer_ticks(ax)
    finish(layout, handles, f"Grounding on the fiction documents across fine-tuning ({model})", pdf, png)

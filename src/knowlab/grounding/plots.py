"""Grounding figures (seed 002): Fig. 3c (by factor), Fig. 4 (F1 vs input length), Fig. 5 (reduction
rate Gold -> Dist), Figs. 15-16 (precision and recall), gold-context position, and grounding
across fine-tuning.  Inputs are the tables of :mod:`knowlab.grounding.analysis` (values x 100).
Every figure is saved as PDF and PNG (:func:`knowlab.fictionalqa.figures.save`)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from knowlab.fictionalqa.figures import CONTROL, run_name, save
from knowlab.grounding.analysis import SETTING_LABELS

PALETTE = plt.get_cmap("tab10").colors


def _bars(ax, table: pd.DataFrame, ylabel: str, errors: pd.DataFrame | None = None) -> None:
    """Grouped bars: one group per row of ``table``, one bar per column."""
    n_rows, n_cols = table.shape
    width = 0.8 / max(n_cols, 1)
    x = np.arange(n_rows)
    for j, column in enumerate(table.columns):
        yerr = None if errors is None else np.array(errors[column].tolist(), dtype=float).T  # (2, n_rows)
        ax.bar(
            x + (j - (n_cols - 1) / 2) * width,
            table[column],
            width,
            label=str(column),
            color=PALETTE[j % 10],
            yerr=yerr,
            capsize=2,
        )
    ax.set_xticks(x, [str(i) for i in table.index], rotation=0)
    ax.set_ylabel(ylabel)
    ax.grid(axis="y", alpha=0.3)


def _note(fig, text: str) -> None:
    fig.text(0.01, 0.01, text, fontsize=7, color="0.35", ha="left", va="bottom", wrap=True)


def plot_by_factor(
    factor_table: pd.DataFrame, pdf: str | Path, png: str | Path, *, setting: str = "original_gold", note: str = ""
) -> None:
    """Fig. 3c: F1 (x 100) per model, overall and for each level of each factor, in ``setting``."""
    table = factor_table.reset_index()
    table["label"] = table["dataset"] + " / " + table["model"]
    table = table.set_index("label").drop(columns=["dataset", "model"]).T
    fig, ax = plt.subplots(figsize=(max(6.0, 0.9 * len(table.index) + 2), 4.0))
    _bars(ax, table, "grounding F1 (x 100)")
    ax.set_xticks(range(len(table.index)), [i.replace("=", "\n") for i in table.index], fontsize=8)
    ax.set_title(f"Grounding F1 by question and context factors ({SETTING_LABELS.get(setting, setting)})")
    ax.legend(fontsize=8, title="dataset / model", title_fontsize=8)
    _note(fig, note)
    fig.tight_layout(rect=(0, 0.05, 1, 1))
    save(fig, pdf, png)


def plot_length_curve(curve: pd.DataFrame, pdf: str | Path, png: str | Path, *, note: str = "") -> None:
    """Fig. 4: F1 (x 100, 95% bootstrap interval) against the mean input-context length in tokens
    (Original version; distractors added in rank order), one line per dataset / model."""
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    for j, ((dataset, model), part) in enumerate(curve.groupby(["dataset", "model"], sort=False)):
        part = part.sort_values("context_tokens")
        colour = PALETTE[j % 10]
        ax.plot(part.context_tokens, part.f1, marker="o", color=colour, label=f"{dataset} / {model}")
        ax.fill_between(part.context_tokens, part.f1_low, part.f1_high, color=colour, alpha=0.15)
        for x, y, k in zip(part.context_tokens, part.f1, part.n_distractors, strict=True):
            ax.annotate(f"{k:.1f}", (x, y), textcoords="offset points", xytext=(0, 6), fontsize=7, ha="center")
    ax.set_xlabel("input context length (tokens, mean over questions)")
    ax.set_ylabel("grounding F1 (x 100)")
    ax.set_title("Grounding F1 as distractor contexts lengthen the input")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    _note(fig, "Numbers above points: mean distractor contexts per question. " + note)
    fig.tight_layout(rect=(0, 0.05, 1, 1))
    save(fig, pdf, png)


def plot_reduction(rates: pd.DataFrame, pdf: str | Path, png: str | Path, *, note: str = "") -> None:
    """Fig. 5: reduction rate (%) of F1 from Gold to Dist contexts per model, Original and Conflict."""
    table = rates.assign(label=rates["dataset"] + " / " + rates["model"]).pivot_table(
        index="label", columns="version", values="reduction_rate", sort=False
    )
    table = table[[c for c in ("original", "conflict") if c in table.columns]]
    fig, ax = plt.subplots(figsize=(max(5.0, 1.4 * len(table) + 2), 4.0))
    _bars(ax, table, "reduction rate of F1, Gold -> Dist (%)")
    ax.axhline(0, color="k", linewidth=0.8)
    ax.set_title("How much distractor contexts reduce grounding F1")
    ax.legend(title="version", fontsize=8)
    _note(fig, "100 x (F1 Gold - F1 Dist) / F1 Gold. " + note)
    fig.tight_layout(rect=(0, 0.05, 1, 1))
    save(fig, pdf, png)


def plot_precision_recall(summary: pd.DataFrame, pdf: str | Path, png: str | Path, *, note: str = "") -> None:
    """Figs. 15-16: precision and recall (x 100, 95% bootstrap intervals) per model in the four
    settings; one panel per setting."""
    settings = [c for c in SETTING_LABELS if c in set(summary.condition) and c != "no_context"]
    fig, axes = plt.subplots(1, len(settings), figsize=(3.4 * len(settings), 4.0), sharey=True, squeeze=False)
    part = summary.assign(label=summary["dataset"] + " / " + summary["model"])
    for ax, setting in zip(axes[0], settings, strict=True):
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
        _bars(ax, value, "x 100" if ax is axes[0][0] else "", errors)
        ax.set_title(SETTING_LABELS[setting])
        ax.tick_params(axis="x", labelsize=7)
    axes[0][0].legend(fontsize=8)
    fig.suptitle("Precision (response facts supported by the gold contexts) and recall (gold facts in the response)")
    _note(fig, note)
    fig.tight_layout(rect=(0, 0.05, 1, 0.95))
    save(fig, pdf, png)


def plot_position(table: pd.DataFrame, pdf: str | Path, png: str | Path, *, note: str = "") -> None:
    """Gold-context position (Sec. 4.2): F1 (x 100) per model with the gold contexts at the start,
    middle, end or a random place among the distractors."""
    order = [p for p in ("start", "middle", "end", "random") if p in table.columns]
    table = table[order]
    table.index = [f"{d} / {m}" for d, m in table.index]
    fig, ax = plt.subplots(figsize=(max(5.0, 1.6 * len(table) + 2), 4.0))
    _bars(ax, table, "grounding F1 (x 100)")
    ax.set_title("Grounding F1 by the position of the gold contexts (Original-Dist)")
    ax.legend(title="gold position", fontsize=8)
    _note(fig, note)
    fig.tight_layout(rect=(0, 0.05, 1, 1))
    save(fig, pdf, png)


def plot_finetune(rates: pd.DataFrame, pdf: str | Path, png: str | Path, *, model: str, runs: Sequence[str]) -> None:
    """Grounding across fine-tuning: F1, follows-context and follows-training rates (x 100) against
    the optimizer step, for each fiction run (train-side questions, solid) and the control
    (dashed), under Gold (Original) and Conflict contexts."""
    panels = [
        ("original_gold", "f1"),
        ("conflict_gold", "f1"),
        ("original_gold", "follows_context"),
        ("conflict_gold", "follows_context"),
        ("conflict_gold", "follows_training"),
    ]
    labels = {
        "f1": "grounding F1",
        "follows_context": "answer follows the context",
        "follows_training": "answer follows training (Original answer)",
    }
    fig, axes = plt.subplots(1, len(panels), figsize=(3.3 * len(panels), 3.8), sharex=True)
    for ax, (condition, metric) in zip(axes, panels, strict=True):
        for j, run in enumerate(runs):
            part = rates[(rates.run == run) & (rates.side == "train") & (rates.condition == condition)].sort_values(
                "step"
            )
            ax.plot(part.step, part[metric], marker="o", color=PALETTE[j % 10], label=run_name(run))
        control = rates[(rates.run == CONTROL) & (rates.condition == condition)].sort_values("step")
        if not control.empty:
            ax.plot(
                control.step, control[metric], marker="s", linestyle="--", color="0.3", label="control (webtext only)"
            )
        ax.set_title(f"{labels[metric]}\n{SETTING_LABELS[condition]}", fontsize=9)
        ax.set_xlabel("optimizer step")
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("x 100 (train-split questions)")
    axes[0].legend(fontsize=7)
    fig.suptitle(f"Grounding on the fiction documents across fine-tuning ({model})")
    fig.tight_layout(rect=(0, 0, 1, 0.93))
    save(fig, pdf, png)

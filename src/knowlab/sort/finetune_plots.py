"""SORT figures across fine-tuning (Pink et al. 2024), each saved as PDF and PNG.

After Pink et al., "Assessing Episodic Memory in LLMs with Sequence Order Recall Tasks":

- :func:`plot_across_epochs`: Fig. 13 (accuracy vs fine-tuning epoch, parametric runs
  ``books`` vs ``instructions``, without and with the text in context), Fig. 16 (mean
  score, the log-probability of the correct answer) and Fig. 12 (segment perplexity).
- :func:`plot_fiction_sort`: SORT on FictionalQA documents, accuracy and mean score vs
  step per FictionalQA fine-tuning run and the control, train vs val documents.

Every figure has a title, labelled axes with units, a legend and a footnote naming the
model(s) and the intervals, and, where it shows accuracy, the answer rule
(:func:`knowlab.sort.answers.answer_note`, config ``sort.answer``).  Accuracy is the fraction of
items answered correctly; shaded bands are percentile-bootstrap intervals over items at
``stats.confidence``: each function draws the band table the stats rule wrote (``bands``,
:mod:`knowlab.sort.bands`) and computes no interval.  Style and layout: :mod:`knowlab.core.plotting`;
FictionalQA run names: :func:`knowlab.fiction.splits.run_name`.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.ticker import FuncFormatter

from knowlab.core.checkpoints import BASE_RUN, CONTROL_RUN
from knowlab.core.plotting import (
    ACCURACY_LABEL,
    PALETTE,
    STEP_LABEL,
    band_handle,
    bootstrap_note,
    chance_handle,
    chance_line,
    colours,
    finish,
    integer_ticks,
    line_handle,
    line_with_band,
    models_note,
    panel_figure,
)
from knowlab.core.stats import StatsSettings
from knowlab.fiction.splits import run_name
from knowlab.sort.analysis import CHANCE, CONDITION_NAMES, LOG_CHANCE
from knowlab.sort.answers import answer_note
from knowlab.sort.bands import epoch_conditions, epoch_rows, fiction_rows, require

SCORE = "mean log p(correct) / (p(A)+p(B)) (nats)"
PARAMETRIC_RUN_COLOURS = {BASE_RUN: "0.2", "books": PALETTE[0], "instructions": PALETTE[1]}
PARAMETRIC_RUN_NAMES = {
    BASE_RUN: "base model (before fine-tuning)",
    "books": "fine-tuned on texts + instructions",
    "instructions": "fine-tuned on instructions only",
}
PANEL_CONDITIONS = {"baseline": "without the text in context", "in_context": "with the text in context"}
SIDE_NAMES = {"train": "train documents", "val": "val documents", "all": "all documents"}


def plot_across_epochs(
    rows: pd.DataFrame,
    bands: pd.DataFrame,
    pdf: str | Path,
    png: str | Path,
    *,
    metric: str = "accuracy",
    runs: Sequence[str] = ("books", "instructions"),
    base_run: str = BASE_RUN,
    conditions: Sequence[str] = ("baseline", "in_context"),
    model: str | None = None,
    title: str | None = None,
    stats: StatsSettings,
) -> None:
    """Figs. 13, 16 and 12: a metric vs fine-tuning epoch for each run (texts + instructions
    vs instructions only), every curve starting at the base model (epoch 0).

    - ``metric="accuracy"`` (Fig. 13) and ``"score"`` (Fig. 16, mean log p(correct) /
      (p(A)+p(B)) in nats, dotted line at log 0.5): ``rows`` are item rows; one panel per
      condition in ``conditions`` that has rows ("without the text": ``baseline``; "with
      the text in context": ``in_context``) and per model.
    - ``metric="perplexity"`` (Fig. 12): ``rows`` are segment-perplexity rows (``item_id,
      run, step, epoch, nll_a, nll_b``, optional ``model``); the y-axis (log scale) is
      exp(mean per-token NLL) over both segments of every item, i.e. the perplexity of the
      average segment with no context; one panel per model.

    The x-axis is ``epoch`` when every fine-tuned row has one, else ``step``.  ``bands``:
    :func:`knowlab.sort.bands.epoch_bands` of the same rows and options (``value``, ``low``, ``high``).

    Raises:
        ValueError: unknown ``metric``, no rows of ``runs``, or missing columns.
    """
    if metric not in ("accuracy", "score", "perplexity"):
        raise ValueError(f"metric must be 'accuracy', 'score' or 'perplexity', got {metric!r}")
    data, x, models = epoch_rows(rows, runs, base_run)
    xlabel = "fine-tuning epochs completed" if x == "epoch" else STEP_LABEL
    require(bands, ["run", x, "value", "low", "high"], f"the figure of {metric}")
    table = bands
    if metric == "perplexity":
        panels = [(None, m) for m in models]
        ylabel = "segment perplexity (log scale)"
    else:
        panels = [(c, m) for m in models for c in epoch_conditions(data, conditions)]
        ylabel = ACCURACY_LABEL if metric == "accuracy" else SCORE
    palette = {r: PARAMETRIC_RUN_COLOURS.get(r, PALETTE[(i + 2) % len(PALETTE)]) for i, r in enumerate(runs)}
    handles = [line_handle(PARAMETRIC_RUN_NAMES.get(r, run_name(r)), palette[r], marker="o") for r in runs]
    handles.append(line_handle("base model (epoch 0)", linestyle="none", marker="s", markersize=5))
    handles.append(band_handle(stats.confidence))
    if metric == "accuracy":
        handles.append(chance_handle(f"chance ({CHANCE:g})"))
    elif metric == "score":
        handles.append(chance_handle("undecided (log 0.5)"))
    chance = {"accuracy": "chance", "score": "undecided model (log 0.5)", "perplexity": None}[metric]
    note = f"{models_note(data, model)} " + bootstrap_note(stats.bootstrap_resamples, stats.confidence, chance=chance)
    if metric == "accuracy":
        note += f" {answer_note(data)}"
    if metric == "perplexity":
        note += (
            " Perplexity = exp(mean negative log-likelihood per token) over both segments of every item,"
            " each scored alone without any context."
        )
    layout = panel_figure(len(panels), len(handles), note, ncols=min(len(panels), 2))
    for ax, (condition, m) in zip(layout.axes, panels):
        sub = table
        if condition is not None:
            sub = sub[sub["condition"] == condition]
        if m is not None:
            sub = sub[sub["model"] == m]
        for run in runs:
            line = sub[sub["run"] == run].sort_values(x)
            if len(line):
                line_with_band(ax, line[x], line["value"], line["low"], line["high"], palette[run])
        start = sub[sub[x] == 0]
        if len(start):
            ax.plot(start[x].iloc[:1], start["value"].iloc[:1], "ks", markersize=5, zorder=3)
        if metric == "accuracy":
            chance_line(ax, CHANCE)
        elif metric == "score":
            chance_line(ax, LOG_CHANCE)
        else:
            ax.set_yscale("log")
            ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
            ax.yaxis.set_minor_formatter(FuncFormatter(lambda v, _: f"{v:g}" if str(f"{v:g}")[0] in "25" else ""))
        if np.allclose(table[x].dropna() % 1, 0):
            integer_ticks(ax)
        parts = [str(m)] if m is not None and len(models) > 1 else []
        if condition is not None:
            parts.append(PANEL_CONDITIONS.get(condition, CONDITION_NAMES.get(condition, condition)))
        panel_title = " · ".join(parts)
        ax.set(xlabel=xlabel, ylabel=ylabel, title=panel_title)
    defaults = {
        "accuracy": "SORT accuracy across fine-tuning epochs (cf. paper Fig. 13)",
        "score": "Log-probability of the correct answer across fine-tuning epochs (cf. paper Fig. 16)",
        "perplexity": "Perplexity of the SORT segments after fine-tuning (cf. paper Fig. 12)",
    }
    finish(layout, handles, title or defaults[metric], pdf, png)


# ----------------------------------------------------------------------------- FictionalQA SORT


def plot_fiction_sort(
    rows: pd.DataFrame,
    bands: pd.DataFrame,
    pdf: str | Path,
    png: str | Path,
    *,
    model: str,
    condition: str | None = "baseline",
    control: str = CONTROL_RUN,
    title: str | None = None,
    stats: StatsSettings,
) -> None:
    """SORT on the fictional documents: accuracy (left) and mean score (right, nats) vs
    optimizer step, one colour per FictionalQA run (the control in grey), solid lines for
    items from the run's training documents, dashed for its validation documents, bootstrap
    bands (``bands``: :func:`knowlab.sort.bands.fiction_bands` of the same rows), chance lines
    (0.5 and log 0.5).

    Args:
        rows: item rows with ``run``, ``step``, ``side`` (``train``/``val``; NaN, e.g. for
            the control, is drawn as "all documents"), ``correct``, ``score``.
        model: the model fine-tuned, for the footnote.
        condition: rows shown when the table has a ``condition`` column (``None``: all).
        control: name of the webtext-only control run.

    Raises:
        ValueError: no rows, or missing columns.
    """
    part = fiction_rows(rows, condition)
    require(bands, ["run", "side", "step", "accuracy", "mean_score"], "SORT on the fiction documents")
    table = bands
    runs = sorted(table["run"].unique(), key=lambda r: (r == control, r))
    palette = colours(runs, control=[control])
    sides = {"train": "-", "val": "--", "all": "-."}
    shown_sides = [s for s in sides if (table["side"] == s).any()]
    handles = [line_handle(run_name(r), palette[r], marker="o") for r in runs]
    handles += [line_handle(SIDE_NAMES[s], linestyle=sides[s]) for s in shown_sides]
    handles += [band_handle(stats.confidence), chance_handle(f"chance ({CHANCE:g} / log {CHANCE:g})")]
    note = f"{models_note(part, model)} Condition: {CONDITION_NAMES.get(condition, condition or 'all')}. "
    note += bootstrap_note(stats.bootstrap_resamples, stats.confidence)
    note += " Train/val: whether the item's document was in the run's training split."
    note += f" {answer_note(part)}"
    layout = panel_figure(2, len(handles), note)
    for ax, (value, low, high, ylabel, chance) in zip(
        layout.axes,
        (
            ("accuracy", "ci_low", "ci_high", ACCURACY_LABEL, CHANCE),
            ("mean_score", "score_ci_low", "score_ci_high", SCORE, LOG_CHANCE),
        ),
    ):
        for (run, side), line in table.groupby(["run", "side"], sort=False):
            line = line.sort_values("step")
            line_with_band(ax, line["step"], line[value], line[low], line[high], palette[run], sides.get(side, "-."))
        chance_line(ax, chance)
        ax.set(
            xlabel=STEP_LABEL,
            ylabel=ylabel,
            title="Accuracy" if value == "accuracy" else "Mean score of the correct answer",
        )
        integer_ticks(ax)
    finish(layout, handles, title or "SORT on FictionalQA documents across fine-tuning", pdf, png)

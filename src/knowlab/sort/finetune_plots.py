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
items answered correctly; shaded bands are 95% percentile-bootstrap intervals over items
(:func:`knowlab.sort.analysis.accuracy_table`), with every function's ``n_resamples`` and ``seed``
(the rule's: config ``stats.bootstrap_resamples`` and ``seed``; no default here).  Style and layout: :mod:`knowlab.core.plotting`;
FictionalQA run names: :func:`knowlab.fictionalqa.figures.run_name`.
"""

from __future__ import annotations

import math
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
from knowlab.core.stats import bootstrap_ci
from knowlab.core.probe import run_name
from knowlab.sort.analysis import CHANCE, CONDITION_NAMES, LOG_CHANCE, accuracy_table
from knowlab.sort.answers import answer_note

SCORE = "mean log p(correct) / (p(A)+p(B)) (nats)"
PARAMETRIC_RUN_COLOURS = {BASE_RUN: "0.2", "books": PALETTE[0], "instructions": PALETTE[1]}
PARAMETRIC_RUN_NAMES = {
    BASE_RUN: "base model (before fine-tuning)",
    "books": "fine-tuned on texts + instructions",
    "instructions": "fine-tuned on instructions only",
}
PANEL_CONDITIONS = {"baseline": "without the text in context", "in_context": "with the text in context"}
SIDE_NAMES = {"train": "train documents", "val": "val documents", "all": "all documents"}


def _x_column(rows: pd.DataFrame, base_run: str) -> tuple[str, str]:
    """``("epoch", label)`` when every fine-tuned row has an epoch, else ``("step", label)``."""
    tuned = rows[rows["run"] != base_run]
    if "epoch" in rows and len(tuned) and tuned["epoch"].notna().all():
        return "epoch", "fine-tuning epochs completed"
    return "step", STEP_LABEL


def _with_base_start(rows: pd.DataFrame, runs: Sequence[str], base_run: str, x: str) -> pd.DataFrame:
    """Rows of ``runs``, the base model's rows copied into each run at x = 0 (every curve starts there)."""
    base = rows[rows["run"] == base_run]
    frames = [rows[rows["run"].isin(runs)]]
    for run in runs:
        if len(base):
            frames.append(base.assign(run=run, **{x: 0}))
    return pd.concat(frames, ignore_index=True)


def _perplexity_table(ppl: pd.DataFrame, by: Sequence[str], n_resamples: int, seed: int) -> pd.DataFrame:
    """exp(mean segment NLL per token) with a bootstrap interval, pooling both segments of each item."""
    long = pd.concat(
        [
            ppl.drop(columns=["nll_b"]).rename(columns={"nll_a": "nll"}),
            ppl.drop(columns=["nll_a"]).rename(columns={"nll_b": "nll"}),
        ]
    )
    out = []
    for key, group in long.groupby(list(by), sort=True):
        nll = group["nll"].astype(float).to_numpy()
        low, high = bootstrap_ci(nll, n_resamples=n_resamples, seed=seed)
        out.append(
            {**dict(zip(by, key)), "value": math.exp(np.nanmean(nll)), "low": math.exp(low), "high": math.exp(high)}
        )
    return pd.DataFrame(out)


def plot_across_epochs(
    rows: pd.DataFrame,
    pdf: str | Path,
    png: str | Path,
    *,
    metric: str = "accuracy",
    runs: Sequence[str] = ("books", "instructions"),
    base_run: str = BASE_RUN,
    conditions: Sequence[str] = ("baseline", "in_context"),
    model: str | None = None,
    title: str | None = None,
    n_resamples: int,
    seed: int,
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

    The x-axis is ``epoch`` when every fine-tuned row has one, else ``step``.

    Raises:
        ValueError: unknown ``metric``, no rows of ``runs``, or missing columns.
    """
    if metric not in ("accuracy", "score", "perplexity"):
        raise ValueError(f"metric must be 'accuracy', 'score' or 'perplexity', got {metric!r}")
    if not rows["run"].isin(runs).any():
        raise ValueError(f"no rows of runs {list(runs)}")
    x, xlabel = _x_column(rows, base_run)
    models = [None]
    if "model" in rows:  # only the models that were fine-tuned
        models = list(dict.fromkeys(rows.loc[rows["run"].isin(runs), "model"]))
        rows = rows[rows["model"].isin(models)]
    data = _with_base_start(rows, runs, base_run, x)
    if metric == "perplexity":
        panels = [(None, m) for m in models]
        table = _perplexity_table(data, ["run", x] + (["model"] if "model" in data else []), n_resamples, seed)
        ylabel = "segment perplexity (log scale)"
    else:
        shown = [c for c in conditions if (data["condition"] == c).any()]
        if not shown:
            raise ValueError(f"no rows of conditions {list(conditions)}")
        panels = [(c, m) for m in models for c in shown]
        by = ["condition", "run", x] + (["model"] if "model" in data else [])
        table = accuracy_table(data[data["condition"].isin(shown)], by, n_resamples, seed)
        column = {
            "accuracy": ("accuracy", "ci_low", "ci_high"),
            "score": ("mean_score", "score_ci_low", "score_ci_high"),
        }
        value, low, high = column[metric]
        table = table.rename(columns={value: "value", low: "low", high: "high"})
        ylabel = ACCURACY_LABEL if metric == "accuracy" else SCORE
    palette = {r: PARAMETRIC_RUN_COLOURS.get(r, PALETTE[(i + 2) % len(PALETTE)]) for i, r in enumerate(runs)}
    handles = [line_handle(PARAMETRIC_RUN_NAMES.get(r, run_name(r)), palette[r], marker="o") for r in runs]
    handles.append(line_handle("base model (epoch 0)", linestyle="none", marker="s", markersize=5))
    handles.append(band_handle())
    if metric == "accuracy":
        handles.append(chance_handle(f"chance ({CHANCE:g})"))
    elif metric == "score":
        handles.append(chance_handle("undecided (log 0.5)"))
    chance = {"accuracy": "chance", "score": "undecided model (log 0.5)", "perplexity": None}[metric]
    note = f"{models_note(data, model)} " + bootstrap_note(n_resamples, chance=chance)
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
    pdf: str | Path,
    png: str | Path,
    *,
    model: str,
    condition: str | None = "baseline",
    control: str = CONTROL_RUN,
    title: str | None = None,
    n_resamples: int,
    seed: int,
) -> None:
    """SORT on the fictional documents: accuracy (left) and mean score (right, nats) vs
    optimizer step, one colour per FictionalQA run (the control in grey), solid lines for
    items from the run's training documents, dashed for its validation documents, 95%
    bootstrap bands, chance lines (0.5 and log 0.5).

    Args:
        rows: item rows with ``run``, ``step``, ``side`` (``train``/``val``; NaN, e.g. for
            the control, is drawn as "all documents"), ``correct``, ``score``.
        model: the model fine-tuned, for the footnote.
        condition: rows shown when the table has a ``condition`` column (``None``: all).
        control: name of the webtext-only control run.

    Raises:
        ValueError: no rows, or missing columns.
    """
    part = rows
    if condition is not None and "condition" in rows:
        part = part[part["condition"] == condition]
    if part.empty:
        raise ValueError(f"no rows of condition {condition!r}")
    part = part.assign(side=part["side"].fillna("all") if "side" in part else "all")
    table = accuracy_table(part, ["run", "side", "step"], n_resamples, seed)
    runs = sorted(table["run"].unique(), key=lambda r: (r == control, r))
    palette = colours(runs, control=[control])
    sides = {"train": "-", "val": "--", "all": "-."}
    shown_sides = [s for s in sides if (table["side"] == s).any()]
    handles = [line_handle(run_name(r), palette[r], marker="o") for r in runs]
    handles += [line_handle(SIDE_NAMES[s], linestyle=sides[s]) for s in shown_sides]
    handles += [band_handle(), chance_handle(f"chance ({CHANCE:g} / log {CHANCE:g})")]
    note = f"{models_note(part, model)} Condition: {CONDITION_NAMES.get(condition, condition or 'all')}. "
    note += bootstrap_note(n_resamples)
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

"""Figures of the SORT study (seed 003), each saved as PDF and PNG.

After Pink et al., "Assessing Episodic Memory in LLMs with Sequence Order Recall Tasks":

- :func:`plot_by_excerpt_length`: Fig. 3a, in-context accuracy vs excerpt length L_E.
- :func:`plot_by_distance`: Fig. 3b (in-context accuracy vs distance bin, one line per
  L_E) and Fig. 10 / App. C.1 (baseline accuracy vs distance bin per model, asterisks
  from :func:`knowlab.sort.analysis.binomial_tests`).
- :func:`plot_rag`: Fig. 4a (RAG) and 4b (oracle RAG) vs distance bin, with the
  in-context and baseline accuracies for reference and the retrieval recall@k.
- :func:`plot_across_epochs`: Fig. 13 (accuracy vs fine-tuning epoch, runs ``books`` vs
  ``instructions``, without and with the text in context), Fig. 16 (mean score, the
  log-probability of the correct answer) and Fig. 12 (segment perplexity).
- :func:`plot_matrix`: Figs. 14 (McNemar) and 15 (paired t-test) p-value matrices.
- :func:`plot_fiction_sort`: SORT on FictionalQA documents, accuracy and mean score vs
  step per fine-tuning run and the control, train vs val documents.

Every figure has a title, labelled axes with units, a legend and a footnote naming the
model(s), the intervals and, where p-values are shown, the multiple-comparison correction.
Accuracy is the fraction of items answered correctly; shaded bands and error bars are 95%
percentile-bootstrap intervals over items (:func:`knowlab.sort.analysis.accuracy_table`).
"""

from __future__ import annotations

import math
import textwrap
from collections.abc import Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from matplotlib.ticker import FuncFormatter, MaxNLocator

from knowlab.fictionalqa.figures import CONTROL, plot_pvalue_matrix, run_name, save
from knowlab.sort.analysis import CHANCE, CONDITION_NAMES, LOG_CHANCE, accuracy_table
from knowlab.core.stats import bootstrap_ci

ACCURACY = "accuracy (fraction correct)"
SCORE = "mean log p(correct) / (p(A)+p(B)) (nats)"
DISTANCE = "distance bin (d0 nearest → d3 farthest)"
EXCERPT = "excerpt length L_E (words, log scale)"
LINESTYLES = ("-", "--", ":", "-.")
RUN_COLOURS = {"base": "0.2", "books": "tab:blue", "instructions": "tab:orange"}
RUN_NAMES = {
    "base": "base model (before fine-tuning)",
    "books": "fine-tuned on texts + instructions",
    "instructions": "fine-tuned on instructions only",
}
PANEL_CONDITIONS = {"baseline": "without the text in context", "in_context": "with the text in context"}
SIDE_NAMES = {"train": "train documents", "val": "val documents", "all": "all documents"}
COLUMN_NAMES = {"excerpt_length": "L_E", "segment_length": "L_S", "model": "model", "run": "run"}


# ----------------------------------------------------------------------------- helpers


def _colours(values: Sequence) -> dict:
    palette = plt.get_cmap("tab10").colors
    return {v: palette[i % len(palette)] for i, v in enumerate(values)}


def _value_name(column: str, value) -> str:
    """Legend text of one value of a grouping column ("L_E = 250 words", a model name...)."""
    if column in ("excerpt_length", "segment_length"):
        return f"{COLUMN_NAMES[column]} = {int(value)} words"
    if column == "condition":
        return CONDITION_NAMES.get(value, str(value))
    if column == "run":
        return RUN_NAMES.get(value, run_name(value))
    return str(value)


def _models_note(rows: pd.DataFrame, model: str | None) -> str:
    if model:
        return f"Model: {model}."
    if "model" in rows and rows["model"].nunique():
        names = list(dict.fromkeys(rows["model"].dropna().astype(str)))
        return ("Model: " if len(names) == 1 else "Models: ") + ", ".join(names) + "."
    return "Model: not recorded."


def _ci_note(n_resamples: int, confidence: float = 0.95, chance: str | None = "chance") -> str:
    note = f"Bands: {confidence:.0%} percentile-bootstrap intervals over items ({n_resamples} resamples)."
    return note + (f" Dotted line: {chance}." if chance else "")


def _layout(n_panels: int, handles: int, note: str, ncols: int | None = None, size=(4.8, 3.7)):
    """A figure with ``n_panels`` axes on top and a strip below for the legend and the wrapped note."""
    ncols = ncols or min(n_panels, 3)
    nrows = -(-n_panels // ncols)
    width = max(size[0] * ncols, 6.4)
    wrapped = textwrap.fill(note, width=int(width * 15))
    legend_cols = max(1, min(handles, 3 if width < 8 else 4))
    below = 0.24 * -(-handles // legend_cols) + 0.15 * (wrapped.count("\n") + 1) + 0.2
    fig = plt.figure(figsize=(width, size[1] * nrows + below), layout="constrained")
    top, bottom = fig.subfigures(2, 1, height_ratios=[size[1] * nrows, below])
    axes = top.subplots(nrows, ncols, squeeze=False).ravel()
    for ax in axes[n_panels:]:
        ax.remove()
    return fig, list(axes[:n_panels]), bottom, wrapped, legend_cols


def _finish(fig, bottom, handles, note: str, legend_cols: int, title: str, pdf, png) -> None:
    if handles:
        bottom.legend(handles=handles, loc="upper center", ncol=legend_cols, fontsize=8.5, frameon=False)
    bottom.text(0.5, 0.03, note, ha="center", va="bottom", fontsize=7.5, color="0.3")
    fig.suptitle(title)
    save(fig, pdf, png)


def _line(ax, x, y, low, high, colour, linestyle="-", marker="o", band=True, lw=1.6) -> None:
    ax.plot(x, y, color=colour, linestyle=linestyle, marker=marker, markersize=3.5, linewidth=lw)
    if band and np.isfinite(np.asarray(low, dtype=float)).any():
        ax.fill_between(x, low, high, color=colour, alpha=0.15, linewidth=0)


def _chance(ax, y: float = CHANCE) -> None:
    ax.axhline(y, color="k", linestyle=":", linewidth=1)


def _empty(ax, text: str) -> None:
    ax.text(0.5, 0.5, text, transform=ax.transAxes, ha="center", va="center", color="0.35")


def _filter(rows: pd.DataFrame, condition: str | None, split: str | None) -> pd.DataFrame:
    part = rows
    if condition is not None:
        part = part[part["condition"] == condition]
    if split is not None and "split" in part:
        part = part[part["split"] == split]
    if part.empty:
        raise ValueError(f"no rows for condition {condition!r} and split {split!r}")
    return part


def _legend_values(column: str | None, values, colours=None, styles=None) -> list:
    handles = []
    for v in values:
        kwargs = {"color": colours[v]} if colours else {"color": "k", "linestyle": styles[v]}
        handles.append(
            Line2D([], [], marker="o" if colours else None, markersize=3.5, label=_value_name(column, v), **kwargs)
        )
    return handles


CHANCE_HANDLE = Line2D([], [], color="k", linestyle=":", linewidth=1, label="chance (0.5)")


def _band_handle(confidence: float = 0.95) -> Patch:
    return Patch(color="0.5", alpha=0.25, label=f"{confidence:.0%} bootstrap CI")


# ----------------------------------------------------------------------------- Fig. 3a


def plot_by_excerpt_length(
    rows: pd.DataFrame,
    pdf: str | Path,
    png: str | Path,
    *,
    condition: str = "in_context",
    hue: str = "model",
    style: str | None = "segment_length",
    split: str | None = "test",
    model: str | None = None,
    title: str | None = None,
    n_resamples: int = 1000,
    seed: int = 0,
) -> None:
    """Fig. 3a: accuracy vs excerpt length L_E (words, log axis), one colour per ``hue``
    value (default: model), one line style per ``style`` value (default: segment length L_S),
    95% bootstrap bands, chance line at 0.5.

    Args:
        rows: item rows with ``condition``, ``excerpt_length``, ``correct``, ``item_id`` and
            the ``hue`` / ``style`` columns.
        pdf, png: output paths.
        condition: rows shown (paper: ``"in_context"``).
        split: keep only this ``split`` (``None``: all rows).
        model: model name for the footnote (default: the ``model`` values of the rows).

    Raises:
        ValueError: no rows, or missing columns (from :func:`accuracy_table`).
    """
    part = _filter(rows, condition, split)
    groups = [hue] + ([style] if style else [])
    table = accuracy_table(part, [*groups, "excerpt_length"], n_resamples, seed)
    hues = list(dict.fromkeys(table[hue]))
    styles = dict(zip(dict.fromkeys(table[style]), LINESTYLES)) if style else {None: "-"}
    colours = _colours(hues)
    handles = _legend_values(hue, hues, colours=colours)
    if style and len(styles) > 1:
        handles += _legend_values(style, styles, styles=styles)
    handles += [_band_handle(), CHANCE_HANDLE]
    note = f"{_models_note(part, model)} Condition: {CONDITION_NAMES.get(condition, condition)}. " + _ci_note(
        n_resamples
    )
    fig, (ax,), bottom, note, ncol = _layout(1, len(handles), note, size=(6.4, 4.2))
    for key, line in table.groupby(groups, sort=False):
        key = key if isinstance(key, tuple) else (key,)
        line = line.sort_values("excerpt_length")
        ls = styles[key[1]] if style else "-"
        _line(ax, line["excerpt_length"], line["accuracy"], line["ci_low"], line["ci_high"], colours[key[0]], ls)
    lengths = sorted(table["excerpt_length"].unique())
    ax.set_xscale("log")
    ax.set_xticks(lengths, [f"{int(v):,}" for v in lengths])
    ax.minorticks_off()
    _chance(ax)
    ax.set(xlabel=EXCERPT, ylabel=ACCURACY, ylim=(min(0.4, ax.get_ylim()[0]), 1.02))
    _finish(fig, bottom, handles, note, ncol, title or "SORT accuracy by excerpt length (cf. paper Fig. 3a)", pdf, png)


# ----------------------------------------------------------------------------- Fig. 3b / Fig. 10


def plot_by_distance(
    rows: pd.DataFrame,
    pdf: str | Path,
    png: str | Path,
    *,
    condition: str = "in_context",
    hue: str = "excerpt_length",
    panel: str | None = None,
    marks: pd.DataFrame | None = None,
    split: str | None = "test",
    model: str | None = None,
    title: str | None = None,
    n_resamples: int = 1000,
    seed: int = 0,
) -> None:
    """Fig. 3b / Fig. 10: accuracy vs distance bin (0..3), one line per ``hue`` value, one
    panel per ``panel`` value, 95% bootstrap bands, chance line; optional significance marks.

    Fig. 3b: ``condition="in_context", hue="excerpt_length"`` (averaged over the models in
    ``rows``).  Fig. 10: ``condition="baseline", hue="segment_length", panel="model",
    marks=binomial_tests(baseline_rows, ["model", "segment_length", "distance_bin"])``.

    Args:
        marks: a :func:`knowlab.sort.analysis.binomial_tests` table with the columns
            ``distance_bin``, ``hue`` (and ``panel`` when given) and ``significance``;
            its marks are drawn above each point's interval, and the footnote names the
            test and its correction.

    Raises:
        ValueError: no rows, missing columns, or ``marks`` without the grouping columns.
    """
    part = _filter(rows, condition, split)
    groups = ([panel] if panel else []) + [hue]
    table = accuracy_table(part, [*groups, "distance_bin"], n_resamples, seed)
    if marks is not None:
        need = [*groups, "distance_bin", "significance", "correction"]
        missing = [c for c in need if c not in marks]
        if missing:
            raise ValueError(f"marks needs columns {need}; missing {missing}")
        table = table.merge(marks[[*groups, "distance_bin", "significance"]], on=[*groups, "distance_bin"], how="left")
        table["significance"] = table["significance"].fillna("")
    panels = list(dict.fromkeys(table[panel])) if panel else [None]
    hues = list(dict.fromkeys(table[hue]))
    colours = _colours(hues)
    handles = _legend_values(hue, hues, colours=colours) + [_band_handle(), CHANCE_HANDLE]
    note = f"{_models_note(part, model)} Condition: {CONDITION_NAMES.get(condition, condition)}. " + _ci_note(
        n_resamples
    )
    if marks is not None:
        note += (
            f" Asterisks: {marks['alternative'].iloc[0] if 'alternative' in marks else 'two-sided'} binomial test "
            f"against {marks['p_null'].iloc[0] if 'p_null' in marks else CHANCE:g} per point, "
            f"{marks['correction'].iloc[0].capitalize()}-corrected over {len(marks)} tests "
            "(* p < 0.05, ** p < 0.01)."
        )
    fig, axes, bottom, note, ncol = _layout(len(panels), len(handles), note)
    for ax, value in zip(axes, panels):
        sub = table[table[panel] == value] if panel else table
        for h, line in sub.groupby(hue, sort=False):
            line = line.sort_values("distance_bin")
            _line(ax, line["distance_bin"], line["accuracy"], line["ci_low"], line["ci_high"], colours[h])
            if marks is not None:
                for _, r in line.iterrows():
                    if r["significance"]:
                        ax.annotate(
                            r["significance"],
                            (r["distance_bin"], r["ci_high"]),
                            xytext=(0, 1),
                            textcoords="offset points",
                            ha="center",
                            va="bottom",
                            color=colours[h],
                            fontsize=11,
                            fontweight="bold",
                        )
        _chance(ax)
        bins = sorted(table["distance_bin"].unique())
        ax.set_xticks(bins, [f"d{int(b)}" for b in bins])
        low = min(0.4, float(table["ci_low"].min()) - 0.03)
        high = 1.02 if marks is None else max(1.02, float(table["ci_high"].max()) + 0.07)
        ax.set(xlabel=DISTANCE, ylabel=ACCURACY, ylim=(low, high), title=str(value) if panel else "")
    default = "SORT accuracy by distance between segments"
    default += " (cf. paper Fig. 10)" if condition == "baseline" else " (cf. paper Fig. 3b)"
    _finish(fig, bottom, handles, note, ncol, title or default, pdf, png)


# ----------------------------------------------------------------------------- Fig. 4


def _recall(recall: pd.DataFrame) -> tuple[str, dict, float]:
    """``("@2", {bin: mean recall}, overall mean)`` from a recall table (per item or aggregated)."""
    if "recall" not in recall:
        raise ValueError("the recall table needs a 'recall' column")
    k = f"@{int(recall['k'].dropna().iloc[0])}" if "k" in recall and recall["k"].notna().any() else ""
    per_bin = recall.groupby("distance_bin")["recall"].mean().to_dict() if "distance_bin" in recall else {}
    return k, per_bin, float(recall["recall"].mean())


def plot_rag(
    rows: pd.DataFrame,
    pdf: str | Path,
    png: str | Path,
    *,
    recall: pd.DataFrame | None = None,
    hue: str = "model",
    references: Sequence[str] = ("in_context", "baseline"),
    split: str | None = "test",
    model: str | None = None,
    title: str | None = None,
    n_resamples: int = 1000,
    seed: int = 0,
) -> None:
    """Fig. 4: accuracy vs distance bin with (a) RAG and (b) oracle RAG memory, one colour per
    ``hue`` value (default: model); the same models' in-context (dashed) and baseline (dash-dot,
    thin) accuracies are drawn for comparison; a panel whose condition has no rows says so.

    Args:
        rows: item rows with ``condition`` among ``rag``, ``oracle_rag`` and ``references``.
        recall: optional retrieval recall (``recall`` in [0, 1], optional ``distance_bin``
            and ``k``; per item or aggregated): the mean is given in panel (a)'s title and,
            per distance bin, under its tick labels.

    Raises:
        ValueError: no ``rag`` or ``oracle_rag`` rows, or missing columns.
    """
    panels = ("rag", "oracle_rag")
    part = rows[rows["condition"].isin([*panels, *references])]
    if split is not None and "split" in part:
        part = part[part["split"] == split]
    if not part["condition"].isin(panels).any():
        raise ValueError("plot_rag needs rows of condition 'rag' or 'oracle_rag'")
    table = accuracy_table(part, ["condition", hue, "distance_bin"], n_resamples, seed)
    hues = list(dict.fromkeys(table.loc[table["condition"].isin(panels), hue]))
    colours = _colours(hues)
    styles = {"rag": "-", "oracle_rag": "-", "in_context": "--", "baseline": "-."}
    handles = _legend_values(hue, hues, colours=colours)
    handles += [Line2D([], [], color="k", linestyle="-", label="RAG memory (panel condition)")]
    handles += [
        Line2D([], [], color="k", linestyle=styles.get(c, "-."), label=CONDITION_NAMES.get(c, c))
        for c in references
        if (table["condition"] == c).any()
    ]
    handles += [_band_handle(), CHANCE_HANDLE]
    note = f"{_models_note(part[part['condition'].isin(panels)], model)} " + _ci_note(n_resamples)
    note += (
        " RAG: the passages retrieved with the two segments as query, most similar first; oracle RAG: the passages"
        " that hold the two segments, in text order."
    )
    k, per_bin, overall = _recall(recall) if recall is not None and len(recall) else ("", {}, None)
    if overall is not None:
        note += f" R{k}: retrieval recall, the fraction of an item's two segments inside the retrieved passages."
    fig, axes, bottom, note, ncol = _layout(2, len(handles), note)
    for ax, condition, letter in zip(axes, panels, "ab"):
        if not (table["condition"] == condition).any():
            _empty(ax, f"no {CONDITION_NAMES[condition]} rows in this config")
        for h in hues:
            for c in (condition, *references):
                line = table[(table["condition"] == c) & (table[hue] == h)].sort_values("distance_bin")
                if line.empty or not (table["condition"] == condition).any():
                    continue
                main = c == condition
                _line(
                    ax,
                    line["distance_bin"],
                    line["accuracy"],
                    line["ci_low"],
                    line["ci_high"],
                    colours[h],
                    styles.get(c, "-."),
                    marker="o" if main else None,
                    band=main,
                    lw=1.8 if main else 1.0,
                )
        _chance(ax)
        bins = sorted(table["distance_bin"].unique())
        panel_title = f"({letter}) {CONDITION_NAMES[condition]}"
        ticks = [f"d{int(b)}" for b in bins]
        if condition == "rag" and overall is not None:
            panel_title += f" (retrieval recall{k} = {overall:.2f})"
            ticks = [f"{t}\nR{k} {per_bin[b]:.2f}" if b in per_bin else t for t, b in zip(ticks, bins)]
        ax.set_xticks(bins, ticks)
        ax.set(
            xlabel=DISTANCE,
            ylabel=ACCURACY,
            ylim=(min(0.3, float(table["ci_low"].min()) - 0.03), 1.02),
            title=panel_title,
        )
    _finish(
        fig,
        bottom,
        handles,
        note,
        ncol,
        title or "SORT accuracy with retrieval-augmented memory (cf. paper Fig. 4)",
        pdf,
        png,
    )


# ----------------------------------------------------------------------------- Figs. 12, 13, 16


def _x_column(rows: pd.DataFrame, base_run: str) -> tuple[str, str]:
    """``("epoch", label)`` when every fine-tuned row has an epoch, else ``("step", label)``."""
    tuned = rows[rows["run"] != base_run]
    if "epoch" in rows and len(tuned) and tuned["epoch"].notna().all():
        return "epoch", "fine-tuning epochs completed"
    return "step", "optimizer step"


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
    base_run: str = "base",
    conditions: Sequence[str] = ("baseline", "in_context"),
    model: str | None = None,
    title: str | None = None,
    n_resamples: int = 1000,
    seed: int = 0,
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
        ylabel = ACCURACY if metric == "accuracy" else SCORE
    colours = {r: RUN_COLOURS.get(r, f"C{i + 2}") for i, r in enumerate(runs)}
    handles = [Line2D([], [], color=colours[r], marker="o", markersize=3.5, label=_value_name("run", r)) for r in runs]
    handles.append(Line2D([], [], color="k", marker="s", linestyle="none", markersize=5, label="base model (epoch 0)"))
    handles.append(_band_handle())
    if metric == "accuracy":
        handles.append(CHANCE_HANDLE)
    elif metric == "score":
        handles.append(Line2D([], [], color="k", linestyle=":", linewidth=1, label="undecided (log 0.5)"))
    chance = {"accuracy": "chance", "score": "undecided model (log 0.5)", "perplexity": None}[metric]
    note = f"{_models_note(data, model)} " + _ci_note(n_resamples, chance=chance)
    if metric == "perplexity":
        note += (
            " Perplexity = exp(mean negative log-likelihood per token) over both segments of every item,"
            " each scored alone without any context."
        )
    fig, axes, bottom, note, ncol = _layout(len(panels), len(handles), note, ncols=min(len(panels), 2))
    for ax, (condition, m) in zip(axes, panels):
        sub = table
        if condition is not None:
            sub = sub[sub["condition"] == condition]
        if m is not None:
            sub = sub[sub["model"] == m]
        for run in runs:
            line = sub[sub["run"] == run].sort_values(x)
            if len(line):
                _line(ax, line[x], line["value"], line["low"], line["high"], colours[run])
        start = sub[sub[x] == 0]
        if len(start):
            ax.plot(start[x].iloc[:1], start["value"].iloc[:1], "ks", markersize=5, zorder=3)
        if metric == "accuracy":
            _chance(ax)
        elif metric == "score":
            _chance(ax, LOG_CHANCE)
        else:
            ax.set_yscale("log")
            ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
            ax.yaxis.set_minor_formatter(FuncFormatter(lambda v, _: f"{v:g}" if str(f"{v:g}")[0] in "25" else ""))
        if np.allclose(table[x].dropna() % 1, 0):
            ax.xaxis.set_major_locator(MaxNLocator(integer=True))
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
    _finish(fig, bottom, handles, note, ncol, title or defaults[metric], pdf, png)


# ----------------------------------------------------------------------------- Figs. 14-15


def _fits_checkpoint_matrix(table: pd.DataFrame) -> bool:
    """Whether ``table`` has the shape :func:`knowlab.fictionalqa.figures.plot_pvalue_matrix` draws: one
    run's step x step matrix, plus that run vs one other run at matched steps."""
    if table.get("key_columns") is None or set(table["key_columns"]) != {"run,step"}:
        return False
    runs = table["run_a"].unique()
    if len(runs) != 1:
        return False
    within = table[table["run_b"] == runs[0]]
    versus = table[table["run_b"] != runs[0]]
    steps = set(within["step_a"])
    full = len(within) == len(steps) ** 2 and set(within["step_b"]) == steps
    matched = versus.empty or (versus["run_b"].nunique() == 1 and (versus["step_a"] == versus["step_b"]).all())
    return bool(full and matched)


def plot_matrix(
    table: pd.DataFrame,
    title: str,
    pdf: str | Path,
    png: str | Path,
    *,
    model: str,
    value: str = "pvalue_holm",
    note: str | None = None,
) -> None:
    """Figs. 14 (McNemar) and 15 (paired t-test): p-value of every row key vs column key.

    ``table`` is a :func:`knowlab.sort.analysis.condition_matrix` table.  When it is one
    run's checkpoint matrix with ``key_columns=("run", "step")`` (plus that run vs a control
    at matched steps, e.g. a FictionalQA run vs ``control``) it is drawn by
    :func:`knowlab.fictionalqa.figures.plot_pvalue_matrix`; otherwise (e.g. base / books / instructions
    checkpoints together, the paper's layout) as one labelled matrix in the order of the
    table's ``a`` column.  Cells show the p-value, bold with asterisks where < 0.05
    (* < 0.05, ** < 0.01).  The footnote names the model, the test, the correction and the
    size of its family.

    Args:
        value: column drawn, ``"pvalue_holm"`` (default) or ``"pvalue"`` (uncorrected).
        note: extra text for the footnote.

    Raises:
        ValueError: an empty table or a ``value`` column it lacks.
    """
    if table.empty or value not in table:
        raise ValueError(f"plot_matrix needs a non-empty table with column {value!r}")
    test = table["test"].iloc[0] if "test" in table else ("ttest" if "alternative" in table else "mcnemar")
    correction = table["correction"].iloc[0].capitalize() + "-corrected" if value != "pvalue" else "uncorrected"
    ordered = test == "ttest" and table["alternative"].iloc[0] != "two-sided"
    if "a" in table:
        keys = list(zip(table["a"], table["b"]))
    else:  # a knowlab.core.stats table: checkpoints are (run, step)
        keys = list(zip(zip(table["run_a"], table["step_a"]), zip(table["run_b"], table["step_b"])))
    tested = {
        (a, b) if ordered else frozenset((a, b))
        for (a, b), p in zip(keys, table["pvalue"])
        if a != b and not np.isnan(p)
    }
    n_family = len(tested)
    if test == "ttest":
        relation = {"greater": ">", "less": "<"}.get(table["alternative"].iloc[0], "≠")
        what = f"Paired t-test on the score log p(correct)/(p(A)+p(B)) (nats), H1: mean(row - column) {relation} 0"
    else:
        what = "Two-sided McNemar test on per-item correctness (exact binomial when few items are discordant)"
    footnote = f"Model: {model}. {what}. p-values {correction} over {n_family} distinct tests (diagonal = 1)."
    if "n_items" in table:
        low, high = int(table["n_items"].min()), int(table["n_items"].max())
        footnote += f" n = {low} paired items." if low == high else f" n = {low}-{high} paired items."
    if note:
        footnote += " " + note
    if _fits_checkpoint_matrix(table):
        plain = table.drop(columns=["alternative"]) if test == "mcnemar" and "alternative" in table else table
        plot_pvalue_matrix(plain, title, pdf, png, value=value, note=textwrap.fill(footnote, 150))
        plt.close("all")
        return
    order = list(dict.fromkeys(list(table["a"]) + list(table["b"])))
    matrix = table.pivot_table(index="a", columns="b", values=value, aggfunc="first").reindex(
        index=order, columns=order
    )
    n = len(order)
    side = max(4.5, 0.62 * n + 2.5)
    wrapped = textwrap.fill(footnote, width=int((side + 1.2) * 14))
    below = 0.16 * (wrapped.count("\n") + 1) + 0.2
    fig = plt.figure(figsize=(side + 1.2, side + below), layout="constrained")
    top, bottom = fig.subfigures(2, 1, height_ratios=[side, below])
    ax = top.subplots()
    image = ax.imshow(matrix.to_numpy(dtype=float), vmin=0, vmax=1, cmap="viridis_r")
    ax.set_xticks(range(n), order, rotation=45, ha="right")
    ax.set_yticks(range(n), order)
    ax.grid(False)
    size = 8 if n <= 10 else 6.5
    for (i, j), p in np.ndenumerate(matrix.to_numpy(dtype=float)):
        if np.isnan(p):
            text, weight = "–", "normal"
        else:
            star = "**" if p < 0.01 else "*" if p < 0.05 else ""
            text, weight = f"{p:.2g}{star}", "bold" if star else "normal"
        ax.text(j, i, text, ha="center", va="center", fontsize=size, color="w" if p > 0.5 else "k", fontweight=weight)
    ax.set(xlabel="column (b)", ylabel="row (a)")
    top.colorbar(image, ax=ax, label=f"p-value ({correction})", shrink=0.85)
    bottom.text(0.5, 0.05, wrapped, ha="center", va="bottom", fontsize=7.5, color="0.3")
    fig.suptitle(title)
    save(fig, pdf, png)


# ----------------------------------------------------------------------------- FictionalQA SORT


def plot_fiction_sort(
    rows: pd.DataFrame,
    pdf: str | Path,
    png: str | Path,
    *,
    model: str,
    condition: str | None = "baseline",
    control: str = CONTROL,
    title: str | None = None,
    n_resamples: int = 1000,
    seed: int = 0,
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
    palette = _colours([r for r in runs if r != control])
    colours = {r: ("0.45" if r == control else palette[r]) for r in runs}
    sides = {"train": "-", "val": "--", "all": "-."}
    shown_sides = [s for s in sides if (table["side"] == s).any()]
    handles = [Line2D([], [], color=colours[r], marker="o", markersize=3.5, label=run_name(r)) for r in runs]
    handles += [Line2D([], [], color="k", linestyle=sides[s], label=SIDE_NAMES[s]) for s in shown_sides]
    handles += [_band_handle(), Line2D([], [], color="k", linestyle=":", linewidth=1, label="chance (0.5 / log 0.5)")]
    note = f"Model: {model}. Condition: {CONDITION_NAMES.get(condition, condition or 'all')}. " + _ci_note(n_resamples)
    note += " Train/val: whether the item's document was in the run's training split."
    fig, axes, bottom, note, ncol = _layout(2, len(handles), note)
    for ax, (value, low, high, ylabel, chance) in zip(
        axes,
        (
            ("accuracy", "ci_low", "ci_high", ACCURACY, CHANCE),
            ("mean_score", "score_ci_low", "score_ci_high", SCORE, LOG_CHANCE),
        ),
    ):
        for (run, side), line in table.groupby(["run", "side"], sort=False):
            line = line.sort_values("step")
            _line(ax, line["step"], line[value], line[low], line[high], colours[run], sides.get(side, "-."))
        _chance(ax, chance)
        ax.set(
            xlabel="optimizer step",
            ylabel=ylabel,
            title="Accuracy" if value == "accuracy" else "Mean score of the correct answer",
        )
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    _finish(fig, bottom, handles, note, ncol, title or "SORT on FictionalQA documents across fine-tuning", pdf, png)

"""SORT figures of the base model under the memory conditions (Pink et al. 2024), each saved as PDF and PNG.

After Pink et al., "Assessing Episodic Memory in LLMs with Sequence Order Recall Tasks":

- :func:`plot_by_excerpt_length`: Fig. 3a, in-context accuracy vs excerpt length L_E.
- :func:`plot_by_distance`: Fig. 3b (in-context accuracy vs distance bin, one line per
  L_E) and Fig. 10 / App. C.1 (baseline accuracy vs distance bin per model, asterisks
  from :func:`knowlab.sort.analysis.binomial_tests`).
- :func:`plot_rag`: Fig. 4a (RAG) and 4b (oracle RAG) vs distance bin, with the
  in-context and baseline accuracies for reference and the retrieval recall@k.

Every figure has a title, labelled axes with units, a legend and a footnote naming the
model(s), the intervals and the answer rule (:func:`knowlab.sort.answers.answer_note`, config
``sort.answer``).  Accuracy is the fraction of items answered correctly; shaded bands are
percentile-bootstrap intervals over items at ``stats.confidence``: each function draws the band
table the stats rule wrote (``bands``, :mod:`knowlab.sort.bands`) and computes no interval;
``stats`` (:class:`knowlab.core.stats.StatsSettings`) names the level and resamples in the
footnote.  Style and layout: :mod:`knowlab.core.plotting`.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from knowlab.core.plotting import (
    ACCURACY_LABEL,
    LINESTYLES,
    band_handle,
    bootstrap_note,
    chance_handle,
    chance_line,
    colours,
    empty_panel,
    finish,
    line_handle,
    line_with_band,
    models_note,
    panel_figure,
)
from knowlab.core.stats import StatsSettings
from knowlab.sort.analysis import CHANCE, CONDITION_NAMES
from knowlab.sort.answers import answer_note
from knowlab.sort.bands import RAG_PANELS, rag_rows, require, select

DISTANCE = "distance bin (d0 nearest → d3 farthest)"
EXCERPT = "excerpt length L_E (words, log scale)"
CHANCE_LABEL = f"chance ({CHANCE:g})"
LENGTH_NAMES = {"excerpt_length": "L_E", "segment_length": "L_S"}


def _value_name(column: str | None, value) -> str:
    """Legend text of one value of a grouping column ("L_E = 250 words", a condition, a model name...)."""
    if column in LENGTH_NAMES:
        return f"{LENGTH_NAMES[column]} = {int(value)} words"
    if column == "condition":
        return CONDITION_NAMES.get(value, str(value))
    return str(value)


def _legend_values(column: str | None, values, palette=None, styles=None) -> list:
    """Legend entries of ``values`` of ``column``: by colour (``palette``) or by line style (``styles``)."""
    if palette:
        return [line_handle(_value_name(column, v), palette[v], marker="o") for v in values]
    return [line_handle(_value_name(column, v), linestyle=styles[v]) for v in values]


#: the columns of an accuracy band besides its grouping
BAND = ("accuracy", "ci_low", "ci_high")


def _condition_note(part: pd.DataFrame, model: str | None, condition: str, stats: StatsSettings) -> str:
    """Footnote of a one-condition figure: the model(s), the condition's name, the bootstrap bands and the
    answer rule."""
    return (
        f"{models_note(part, model)} Condition: {CONDITION_NAMES.get(condition, condition)}. "
        + bootstrap_note(stats.bootstrap_resamples, stats.confidence)
        + f" {answer_note(part)}"
    )


# ----------------------------------------------------------------------------- Fig. 3a


def plot_by_excerpt_length(
    rows: pd.DataFrame,
    bands: pd.DataFrame,
    pdf: str | Path,
    png: str | Path,
    *,
    condition: str = "in_context",
    hue: str = "model",
    style: str | None = "segment_length",
    split: str | None = "test",
    model: str | None = None,
    title: str | None = None,
    stats: StatsSettings,
) -> None:
    """Fig. 3a: accuracy vs excerpt length L_E (words, log axis), one colour per ``hue``
    value (default: model), one line style per ``style`` value (default: segment length L_S),
    bootstrap bands, chance line at 0.5.

    Args:
        rows: item rows with ``condition``, ``excerpt_length``, ``correct``, ``item_id`` and
            the ``hue`` / ``style`` columns (the footnote's models and answer rule).
        bands: :func:`knowlab.sort.bands.excerpt_length_bands` of the same rows and options.
        pdf, png: output paths.
        condition: rows shown (paper: ``"in_context"``).
        split: keep only this ``split`` (``None``: all rows).
        model: model name for the footnote (default: the ``model`` values of the rows).

    Raises:
        ValueError: no rows, or bands without the figure's points.
    """
    part = select(rows, condition, split)
    groups = [hue] + ([style] if style else [])
    require(bands, [*groups, "excerpt_length", *BAND], "Fig. 3a")
    table = bands
    hues = list(dict.fromkeys(table[hue]))
    styles = dict(zip(dict.fromkeys(table[style]), LINESTYLES)) if style else {None: "-"}
    palette = colours(hues)
    handles = _legend_values(hue, hues, palette=palette)
    if style and len(styles) > 1:
        handles += _legend_values(style, styles, styles=styles)
    handles += [band_handle(stats.confidence), chance_handle(CHANCE_LABEL)]
    note = _condition_note(part, model, condition, stats)
    layout = panel_figure(1, len(handles), note, panel_size=(6.4, 4.2))
    (ax,) = layout.axes
    for key, line in table.groupby(groups, sort=False):
        key = key if isinstance(key, tuple) else (key,)
        line = line.sort_values("excerpt_length")
        ls = styles[key[1]] if style else "-"
        line_with_band(
            ax, line["excerpt_length"], line["accuracy"], line["ci_low"], line["ci_high"], palette[key[0]], ls
        )
    lengths = sorted(table["excerpt_length"].unique())
    ax.set_xscale("log")
    ax.set_xticks(lengths, [f"{int(v):,}" for v in lengths])
    ax.minorticks_off()
    chance_line(ax, CHANCE)
    ax.set(xlabel=EXCERPT, ylabel=ACCURACY_LABEL, ylim=(min(0.4, ax.get_ylim()[0]), 1.02))
    finish(layout, handles, title or "SORT accuracy by excerpt length (cf. paper Fig. 3a)", pdf, png)


# ----------------------------------------------------------------------------- Fig. 3b / Fig. 10


def plot_by_distance(
    rows: pd.DataFrame,
    bands: pd.DataFrame,
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
    stats: StatsSettings,
) -> None:
    """Fig. 3b / Fig. 10: accuracy vs distance bin (0..3), one line per ``hue`` value, one
    panel per ``panel`` value, bootstrap bands, chance line; optional significance marks.

    Fig. 3b: ``condition="in_context", hue="excerpt_length"`` (averaged over the models in
    ``rows``).  Fig. 10: ``condition="baseline", hue="segment_length", panel="model",
    marks=binomial_tests(baseline_rows, ["model", "segment_length", "distance_bin"])``.

    Args:
        bands: :func:`knowlab.sort.bands.distance_bands` of the same rows and options.
        marks: a :func:`knowlab.sort.analysis.binomial_tests` table with the columns
            ``distance_bin``, ``hue`` (and ``panel`` when given) and ``significance``;
            its marks are drawn above each point's interval, and the footnote names the
            test and its correction.

    Raises:
        ValueError: no rows, missing columns, or ``marks`` without the grouping columns.
    """
    part = select(rows, condition, split)
    groups = ([panel] if panel else []) + [hue]
    require(bands, [*groups, "distance_bin", *BAND], "Fig. 3b / 10")
    table = bands
    if marks is not None:
        need = [*groups, "distance_bin", "significance", "correction", "family_size"]
        missing = [c for c in need if c not in marks]
        if missing:
            raise ValueError(f"marks needs columns {need}; missing {missing}")
        table = table.merge(marks[[*groups, "distance_bin", "significance"]], on=[*groups, "distance_bin"], how="left")
        table["significance"] = table["significance"].fillna("")
    panels = list(dict.fromkeys(table[panel])) if panel else [None]
    hues = list(dict.fromkeys(table[hue]))
    palette = colours(hues)
    handles = _legend_values(hue, hues, palette=palette) + [band_handle(stats.confidence), chance_handle(CHANCE_LABEL)]
    note = _condition_note(part, model, condition, stats)
    if marks is not None:
        note += (
            f" Asterisks: {marks['alternative'].iloc[0] if 'alternative' in marks else 'two-sided'} binomial test "
            f"against {marks['p_null'].iloc[0] if 'p_null' in marks else CHANCE:g} per point, "
            f"{marks['correction'].iloc[0].capitalize()}-corrected over "
            f"{marks['family_size'].iloc[0]} tests "
            "(* p < 0.05, ** p < 0.01)."
        )
    layout = panel_figure(len(panels), len(handles), note)
    for ax, value in zip(layout.axes, panels):
        sub = table[table[panel] == value] if panel else table
        for h, line in sub.groupby(hue, sort=False):
            line = line.sort_values("distance_bin")
            line_with_band(ax, line["distance_bin"], line["accuracy"], line["ci_low"], line["ci_high"], palette[h])
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
                            color=palette[h],
                            fontsize=11,
                            fontweight="bold",
                        )
        chance_line(ax, CHANCE)
        bins = sorted(table["distance_bin"].unique())
        ax.set_xticks(bins, [f"d{int(b)}" for b in bins])
        low = min(0.4, float(table["ci_low"].min()) - 0.03)
        high = 1.02 if marks is None else max(1.02, float(table["ci_high"].max()) + 0.07)
        ax.set(xlabel=DISTANCE, ylabel=ACCURACY_LABEL, ylim=(low, high), title=str(value) if panel else "")
    default = "SORT accuracy by distance between segments"
    default += " (cf. paper Fig. 10)" if condition == "baseline" else " (cf. paper Fig. 3b)"
    finish(layout, handles, title or default, pdf, png)


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
    bands: pd.DataFrame,
    pdf: str | Path,
    png: str | Path,
    *,
    recall: pd.DataFrame | None = None,
    hue: str = "model",
    references: Sequence[str] = ("in_context", "baseline"),
    split: str | None = "test",
    model: str | None = None,
    title: str | None = None,
    stats: StatsSettings,
) -> None:
    """Fig. 4: accuracy vs distance bin with (a) RAG and (b) oracle RAG memory, one colour per
    ``hue`` value (default: model); the same models' in-context (dashed) and baseline (dash-dot,
    thin) accuracies are drawn for comparison; a panel whose condition has no rows says so.

    Args:
        rows: item rows with ``condition`` among ``rag``, ``oracle_rag`` and ``references``.
        bands: :func:`knowlab.sort.bands.rag_bands` of the same rows and options.
        recall: optional retrieval recall (``recall`` in [0, 1], optional ``distance_bin``
            and ``k``; per item or aggregated): the mean is given in panel (a)'s title and,
            per distance bin, under its tick labels.

    Raises:
        ValueError: no ``rag`` or ``oracle_rag`` rows, or missing columns.
    """
    panels = RAG_PANELS
    part = rag_rows(rows, references, split)
    require(bands, ["condition", hue, "distance_bin", *BAND], "Fig. 4")
    table = bands
    hues = list(dict.fromkeys(table.loc[table["condition"].isin(panels), hue]))
    palette = colours(hues)
    styles = {"rag": "-", "oracle_rag": "-", "in_context": "--", "baseline": "-."}
    handles = _legend_values(hue, hues, palette=palette)
    handles += [line_handle("RAG memory (panel condition)")]
    handles += [
        line_handle(CONDITION_NAMES.get(c, c), linestyle=styles.get(c, "-."))
        for c in references
        if (table["condition"] == c).any()
    ]
    handles += [band_handle(stats.confidence), chance_handle(CHANCE_LABEL)]
    note = f"{models_note(part[part['condition'].isin(panels)], model)} "
    note += bootstrap_note(stats.bootstrap_resamples, stats.confidence)
    note += f" {answer_note(part)}"
    note += (
        " RAG: the passages retrieved with the two segments as query, most similar first; oracle RAG: the passages"
        " that hold the two segments, in text order."
    )
    k, per_bin, overall = _recall(recall) if recall is not None and len(recall) else ("", {}, None)
    if overall is not None:
        note += f" R{k}: retrieval recall, the fraction of an item's two segments inside the retrieved passages."
    layout = panel_figure(2, len(handles), note)
    for ax, condition, letter in zip(layout.axes, panels, "ab"):
        if not (table["condition"] == condition).any():
            empty_panel(ax, f"no {CONDITION_NAMES[condition]} rows in this config")
        for h in hues:
            for c in (condition, *references):
                line = table[(table["condition"] == c) & (table[hue] == h)].sort_values("distance_bin")
                if line.empty or not (table["condition"] == condition).any():
                    continue
                main = c == condition
                line_with_band(
                    ax,
                    line["distance_bin"],
                    line["accuracy"],
                    line["ci_low"],
                    line["ci_high"],
                    palette[h],
                    styles.get(c, "-."),
                    marker="o" if main else None,
                    band=main,
                    linewidth=1.8 if main else 1.0,
                )
        chance_line(ax, CHANCE)
        bins = sorted(table["distance_bin"].unique())
        panel_title = f"({letter}) {CONDITION_NAMES[condition]}"
        ticks = [f"d{int(b)}" for b in bins]
        if condition == "rag" and overall is not None:
            panel_title += f" (retrieval recall{k} = {overall:.2f})"
            ticks = [f"{t}\nR{k} {per_bin[b]:.2f}" if b in per_bin else t for t, b in zip(ticks, bins)]
        ax.set_xticks(bins, ticks)
        ax.set(
            xlabel=DISTANCE,
            ylabel=ACCURACY_LABEL,
            ylim=(min(0.3, float(table["ci_low"].min()) - 0.03), 1.02),
            title=panel_title,
        )
    finish(layout, handles, title or "SORT accuracy with retrieval-augmented memory (cf. paper Fig. 4)", pdf, png)

"""The one plotting style of every study (FictionalQA, SORT, grounding): figures saved as PDF and PNG.

Importing this module selects matplotlib's file-only Agg backend and applies :data:`STYLE`.
A study's figure module takes its look from here and keeps only its own vocabulary (run
names, axis labels of its metrics, figure families):

- Colours and lines: :func:`colours` (one colour per value, tab10 then light tab20 shades,
  the greys kept for :data:`CONTROL_COLOUR`), :func:`model_colours` (one fixed colour per model
  of a config's model order, the same in every figure), :data:`LINESTYLES` for a second grouping,
  :func:`line_with_band` (a curve with its shaded confidence band), :func:`chance_line`.
- Sizes: :data:`PANEL_SIZE` inches per panel, at most :data:`MAX_COLUMNS` panels a row,
  figures at least :data:`MIN_WIDTH` wide, legend and footnote text of at least 8 pt.
- Layout: :func:`panel_figure` (panels on top, one legend and a wrapped footnote under
  them) and :func:`finish` (legend, footnote, suptitle, :func:`save`); legend entries
  :func:`line_handle`, :func:`band_handle`, :func:`chance_handle`; :func:`empty_panel`.
- Footnotes naming the model(s) and the intervals: :func:`models_note`, :func:`bootstrap_note`.
- :func:`save`: the PDF and PNG of a figure, each written atomically, the PNG carrying
  :func:`describe` of the figure (read back with :func:`read_description`).
- p-values: :func:`pvalue_cells` (cell text) and :func:`plot_pvalue_matrix` (one run's
  checkpoint x checkpoint matrix and the run vs another at matched steps).
"""

from __future__ import annotations

import json
import textwrap
from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass
from itertools import cycle
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure, SubFigure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from matplotlib.ticker import MaxNLocator

from knowlab.core.io import atomic_path

STYLE = {"font.size": 10, "axes.titlesize": 11, "figure.dpi": 120, "axes.grid": True, "grid.alpha": 0.3}
plt.rcParams.update(STYLE)

DPI = 150  # resolution of the saved PNG (dots per inch)
PANEL_SIZE = (4.8, 3.8)  # width, height of one panel (inches)
MAX_COLUMNS = 3  # panels a row, unless a figure asks for more
MIN_WIDTH = 6.4  # inches: room for a legend and footnote under a single panel
LEGEND_FONTSIZE = 9
NOTE_FONTSIZE = 8
NOTE_COLOUR = "0.3"
CHARS_PER_INCH = 14  # footnote characters per inch of figure width at NOTE_FONTSIZE
CONTROL_COLOUR = "0.35"  # grey of a control run (a run without the treatment)
LINESTYLES = ("-", "--", ":", "-.")
BAND_ALPHA = 0.15
PVALUE_CMAP = "viridis_r"  # p-value 0 yellow, 1 dark
STEP_LABEL = "optimizer step"
ACCURACY_LABEL = "accuracy (fraction correct)"
_TAB20 = plt.get_cmap("tab20").colors
PALETTE = tuple([_TAB20[i] for i in range(0, 20, 2) if i != 14] + [_TAB20[i] for i in range(1, 20, 2) if i != 15])
"""18 colours: tab10 without its grey, then the light tab20 shades without theirs."""


def colours(values: Iterable[Hashable], control: Iterable[Hashable] = ()) -> dict:
    """One colour per distinct value in first-seen order: :data:`PALETTE` in turn (cycling
    after 18), :data:`CONTROL_COLOUR` for the values in ``control`` (they use no palette entry)."""
    control = set(control)
    palette = cycle(PALETTE)
    return {v: CONTROL_COLOUR if v in control else next(palette) for v in dict.fromkeys(values)}


def model_colours(models: Iterable[Hashable]) -> dict:
    """One colour per model, fixed by its place in ``models`` (a config's model order, duplicates
    dropped): :data:`PALETTE` in turn (cycling after 18), never :data:`CONTROL_COLOUR`.  Given the
    same full order, every figure colours a model alike, whichever models it happens to show."""
    return colours(models)


# no creation date in a PDF: the same figure is the same bytes on every run (PNG has none)
METADATA = {"pdf": {"CreationDate": None}, "png": {}}
FIGURE_KEY = "knowlab-figure"  # PNG text chunk holding :func:`describe` of the figure, as JSON


def describe(fig: Figure) -> dict:
    """What ``fig`` shows, for readers that cannot look at it (tests, audits): ``{"title": the
    suptitle ("" if none), "legend": [entry labels of every legend], "panels": [one dict per
    visible Axes, left to right, top to bottom: "title", "xlabel", "ylabel", "lines" (number of
    Line2D, chance lines included), "bands" (filled areas and other collections), "images"
    (imshow matrices), "texts" (text drawn in the panel, e.g. an empty panel's reason)]}``."""
    figures = [fig]
    for figure in figures:  # the subfigures' own legends, at any depth
        figures.extend(figure.subfigs)
    axes = [ax for ax in fig.get_axes() if ax.get_visible() and ax.get_label() != "<colorbar>"]
    legends = [legend for f in figures for legend in f.legends]
    legends += [ax.get_legend() for ax in axes if ax.get_legend() is not None]
    suptitle = fig.get_suptitle()
    return {
        "title": suptitle,
        "legend": [text.get_text() for legend in legends for text in legend.get_texts()],
        "panels": [
            {
                "title": ax.get_title(),
                "xlabel": ax.get_xlabel(),
                "ylabel": ax.get_ylabel(),
                "lines": len(ax.get_lines()),
                "bands": len(ax.collections),
                "images": len(ax.images),
                "texts": [text.get_text() for text in ax.texts],
            }
            for ax in axes
        ],
    }


def read_description(png: str | Path) -> dict:
    """:func:`describe` of the figure saved as ``png`` by :func:`save` (its :data:`FIGURE_KEY`
    text chunk). Raises KeyError, naming the file, when the PNG was not written by :func:`save`."""
    from PIL import Image  # deferred: only readers of saved figures need it

    with Image.open(png) as image:
        if FIGURE_KEY not in image.text:
            raise KeyError(f"{png}: no {FIGURE_KEY!r} text chunk (not a figure written by knowlab.core.plotting.save)")
        return json.loads(image.text[FIGURE_KEY])


def save(fig: Figure, pdf: str | Path, png: str | Path) -> None:
    """Save ``fig`` to ``pdf`` and ``png`` (format from the suffix, :data:`DPI`, no creation date:
    :data:`METADATA`), each written atomically (no partial file on failure), and close it.  The
    PNG carries its suptitle as ``Title`` and :func:`describe` as JSON under :data:`FIGURE_KEY`."""
    description = describe(fig)
    metadata = {
        "pdf": METADATA["pdf"],
        "png": {**METADATA["png"], "Title": description["title"], FIGURE_KEY: json.dumps(description)},
    }
    for path in (pdf, png):
        kind = Path(path).suffix[1:]
        with atomic_path(path) as tmp:
            fig.savefig(tmp, format=kind, dpi=DPI, metadata=metadata.get(kind))
    plt.close(fig)


def wrap_note(note: str, width: float) -> str:
    """``note`` wrapped to lines that fit a figure ``width`` inches wide at :data:`NOTE_FONTSIZE`."""
    return textwrap.fill(note, width=int(width * CHARS_PER_INCH)) if note else ""


# ----------------------------------------------------------------------------- layout


@dataclass
class PanelFigure:
    """A figure from :func:`panel_figure`: ``axes`` (one per panel, left to right, top to
    bottom), ``strip`` (the subfigure under them for the legend and footnote), the footnote
    wrapped to the figure width, the number of legend columns and the legend's title."""

    figure: Figure
    axes: list[Axes]
    strip: SubFigure
    note: str
    legend_columns: int
    legend_title: str | None = None


def panel_figure(
    n_panels: int,
    n_handles: int,
    note: str = "",
    *,
    ncols: int | None = None,
    panel_size: tuple[float, float] = PANEL_SIZE,
    legend_title: str | None = None,
    **subplots,
) -> PanelFigure:
    """A figure with ``n_panels`` axes on top (``ncols`` a row, default up to :data:`MAX_COLUMNS`)
    and a strip under them sized for ``n_handles`` legend entries (under ``legend_title``,
    if any) and the wrapped ``note``.

    ``panel_size`` is (width, height) of one panel in inches; the figure is at least
    :data:`MIN_WIDTH` wide.  ``subplots`` go to :meth:`matplotlib.figure.SubFigure.subplots`
    (e.g. ``sharey=True``).  Draw on ``axes``, then call :func:`finish`.
    """
    ncols = ncols or min(n_panels, MAX_COLUMNS)
    nrows = -(-n_panels // ncols)
    width = max(panel_size[0] * ncols, MIN_WIDTH)
    wrapped = wrap_note(note, width)
    legend_columns = max(1, min(n_handles, 3 if width < 8 else 4))
    note_lines = wrapped.count("\n") + 1 if wrapped else 0
    legend_rows = -(-n_handles // legend_columns) + (1 if legend_title and n_handles else 0)
    below = 0.24 * legend_rows + 0.15 * note_lines + 0.2  # inches
    fig = plt.figure(figsize=(width, panel_size[1] * nrows + below), layout="constrained")
    top, strip = fig.subfigures(2, 1, height_ratios=[panel_size[1] * nrows, below])
    axes = top.subplots(nrows, ncols, squeeze=False, **subplots).ravel()
    for ax in axes[n_panels:]:
        ax.remove()
    return PanelFigure(fig, list(axes[:n_panels]), strip, wrapped, legend_columns, legend_title)


def finish(
    layout: PanelFigure,
    handles: Sequence,
    title: str,
    pdf: str | Path,
    png: str | Path,
) -> Figure:
    """Put the legend (``handles``, under the layout's legend title) and the footnote in the strip
    of ``layout``, the suptitle ``title`` on top, save as ``pdf`` and ``png``; return the Figure (closed)."""
    if handles:
        layout.strip.legend(
            handles=handles,
            loc="upper center",
            ncol=layout.legend_columns,
            fontsize=LEGEND_FONTSIZE,
            title=layout.legend_title,
            title_fontsize=LEGEND_FONTSIZE,
            frameon=False,
        )
    if layout.note:
        layout.strip.text(0.5, 0.03, layout.note, ha="center", va="bottom", fontsize=NOTE_FONTSIZE, color=NOTE_COLOUR)
    layout.figure.suptitle(title)
    save(layout.figure, pdf, png)
    return layout.figure


def empty_panel(ax: Axes, text: str) -> None:
    """Write ``text`` (e.g. "no Doc split run in this config") in the middle of an empty panel."""
    ax.text(0.5, 0.5, text, transform=ax.transAxes, ha="center", va="center", color=NOTE_COLOUR)


def integer_ticks(ax: Axes) -> None:
    """Integer x ticks at 1, 2, 5 or 10 times a power of ten (optimizer steps, epochs)."""
    ax.xaxis.set_major_locator(MaxNLocator(integer=True, steps=[1, 2, 5, 10]))


# ----------------------------------------------------------------------------- lines and legend entries


def line_with_band(
    ax: Axes,
    x,
    y,
    low=None,
    high=None,
    colour="k",
    linestyle: str = "-",
    marker: str | None = "o",
    band: bool = True,
    linewidth: float = 1.6,
) -> None:
    """A curve ``y`` vs ``x`` with markers and, when ``band`` and ``low`` has a finite value,
    the interval ``low``..``high`` shaded in the same colour."""
    ax.plot(x, y, color=colour, linestyle=linestyle, marker=marker, markersize=3.5, linewidth=linewidth)
    if band and low is not None and np.isfinite(np.asarray(low, dtype=float)).any():
        ax.fill_between(x, low, high, color=colour, alpha=BAND_ALPHA, linewidth=0)


def chance_line(ax: Axes, y: float) -> None:
    """Dotted horizontal line at the chance level ``y`` (legend entry: :func:`chance_handle`)."""
    ax.axhline(y, color="k", linestyle=":", linewidth=1)


def line_handle(
    label: str, colour="k", linestyle: str = "-", marker: str | None = None, markersize: float = 3.5
) -> Line2D:
    """Legend entry of a curve: a colour (with ``marker="o"``) or a line style (black, no marker)."""
    return Line2D([], [], color=colour, linestyle=linestyle, marker=marker, markersize=markersize, label=label)


def chance_handle(label: str) -> Line2D:
    """Legend entry of :func:`chance_line`, e.g. ``"chance (0.5)"``."""
    return Line2D([], [], color="k", linestyle=":", linewidth=1, label=label)


def band_handle(confidence: float) -> Patch:
    """Legend entry of the shaded bands at level ``confidence`` (``stats.confidence``): ``"95% bootstrap CI"``."""
    return Patch(color="0.5", alpha=0.25, label=f"{confidence:.0%} bootstrap CI")


# ----------------------------------------------------------------------------- footnotes


def models_note(rows: pd.DataFrame, model: str | None = None) -> str:
    """``"Model: <model>."`` when ``model`` is given, else the distinct ``model`` values of
    ``rows`` (``"Models: a, b."``), else ``"Model: not recorded."``."""
    if model:
        return f"Model: {model}."
    if "model" in rows and rows["model"].nunique():
        names = list(dict.fromkeys(rows["model"].dropna().astype(str)))
        return ("Model: " if len(names) == 1 else "Models: ") + ", ".join(names) + "."
    return "Model: not recorded."


def bootstrap_note(n_resamples: int, confidence: float, chance: str | None = "chance") -> str:
    """Footnote of the shaded bands (percentile bootstrap over items, ``n_resamples`` resamples)
    and, unless ``chance`` is None, of the dotted line."""
    note = f"Bands: {confidence:.0%} percentile-bootstrap intervals over items ({n_resamples} resamples)."
    return note + (f" Dotted line: {chance}." if chance else "")


# ----------------------------------------------------------------------------- p-values


def pvalue_cells(ax: Axes, matrix: np.ndarray, fontsize: float = 8) -> None:
    """Write each p-value of ``matrix`` (drawn by ``imshow`` with :data:`PVALUE_CMAP`) in its
    cell: two significant digits, bold with ``*`` below 0.05 and ``**`` below 0.01, ``–`` for NaN."""
    for (i, j), p in np.ndenumerate(np.asarray(matrix, dtype=float)):
        if np.isnan(p):
            text, weight = "–", "normal"
        else:
            star = "**" if p < 0.01 else "*" if p < 0.05 else ""
            text, weight = f"{p:.2g}{star}", "bold" if star else "normal"
        ax.text(
            j, i, text, ha="center", va="center", fontsize=fontsize, color="w" if p > 0.5 else "k", fontweight=weight
        )
    ax.grid(False)


def plot_pvalue_matrix(
    table: pd.DataFrame,
    title: str,
    pdf: str | Path,
    png: str | Path,
    value: str = "pvalue_holm",
    note: str | None = None,
    run_label: Callable[[str], str] = str,
) -> Figure:
    """Paired-test p-values between checkpoints: checkpoint x checkpoint of the run (left) and,
    when present, the run vs the control at matched steps (right).  Returns the Figure.

    ``table`` columns: ``run_a, step_a, run_b, step_b, pvalue, pvalue_holm, correction``
    (:func:`knowlab.core.stats.pair_tests`), the run of the first row in every ``run_a``;
    a paired t-test table also has ``alternative``, else the test is McNemar's.  ``value``
    is the column drawn; the colorbar names its correction.  ``run_label`` gives a run's
    display name (e.g. :func:`knowlab.fiction.splits.run_name`).  ``note`` is printed
    small under the figure.
    """
    run = table["run_a"].iloc[0]
    within = table[(table["run_a"] == run) & (table["run_b"] == run)]
    versus = table[table["run_b"] != run]
    test = (
        f"paired t-test of row vs column, alternative: {table['alternative'].iloc[0]}"
        if "alternative" in table
        else "McNemar test"
    )
    correction = f"{table['correction'].iloc[0].capitalize()}-corrected" if value != "pvalue" else "uncorrected"
    width = 11 if len(versus) else 5.5
    fig, axes = plt.subplots(1, 2 if len(versus) else 1, figsize=(width, 4.5), squeeze=False, layout="constrained")
    matrix = within.pivot(index="step_a", columns="step_b", values=value).sort_index().sort_index(axis=1)
    ax = axes[0][0]
    image = ax.imshow(matrix.to_numpy(), vmin=0, vmax=1, cmap=PVALUE_CMAP)
    ax.set_xticks(range(len(matrix.columns)), matrix.columns)
    ax.set_yticks(range(len(matrix.index)), matrix.index)
    pvalue_cells(ax, matrix.to_numpy())
    ax.set(title=f"{run_label(run)}: checkpoint vs checkpoint", xlabel="checkpoint step", ylabel="checkpoint step")
    if len(versus):
        ax = axes[0][1]
        row = versus.sort_values("step_a")
        strip = row[value].to_numpy()[None, :]
        ax.imshow(strip, vmin=0, vmax=1, cmap=PVALUE_CMAP)
        ax.set_xticks(range(len(row)), row["step_a"])
        ax.set_yticks([0], [f"vs {run_label(row['run_b'].iloc[0])}"])
        pvalue_cells(ax, strip)
        ax.set(title=f"{run_label(run)} vs control at matched steps", xlabel="checkpoint step")
    fig.colorbar(image, ax=axes[0].tolist(), label=f"p-value ({correction})")
    fig.suptitle(f"{title}\n{test}; bold: * p < 0.05, ** p < 0.01")
    if note:
        fig.supxlabel(wrap_note(note, width), fontsize=NOTE_FONTSIZE, color=NOTE_COLOUR)
    save(fig, pdf, png)
    return fig

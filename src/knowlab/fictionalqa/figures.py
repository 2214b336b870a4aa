"""Figures of the FictionalQA study (Kirchenbauer et al. 2026), each saved as PDF and PNG.

Every figure family is drawn from a tidy *curves* table by one renderer,
:func:`plot_family` (panels left to right, at most three a row; one legend and
an optional note under them), whether the curves come from this pipeline
(:func:`curves_from_summary`, :func:`curves_from_train_logs`) or from the
paper's own numbers (:func:`knowlab.fictionalqa.paper_figures.paper_curves`).  Family keys
(used by the Snakemake rules) and what they show, after the paper's figures:

- ``fig2`` (Fig. 2): fiction and webtext samples seen (left, log scale) and
  epochs completed (right) vs optimizer step, one colour per run.
- ``fig3`` (Fig. 3): Doc split; loss on train/val documents vs step (left) and
  EM@50 (exact match of the last 50 tokens) vs epochs completed on the training
  documents (right).
- ``fig4`` (Fig. 4): train/val document loss vs step, Doc split (left) and
  Event split (right), with the webtext-only control.
- ``fig5`` (Fig. 5): Fictsheets train/val loss vs step (left); held-out webtext
  loss vs step while training on the Doc split (right); with the control.
- ``fig6`` (Fig. 6): nll(answer | question) vs step on fictional Q&A (left) and
  real-world Q&A (right; TriviaQA in the paper), one series per split + control.
- ``fig7`` (Fig. 7): MCQ-4 accuracy vs step across models on the Doc split
  (left) and across splits (right), with the control.
- ``fig8`` (Fig. 8): MCQ-4 accuracy vs step on questions from train vs val
  documents, one panel per split.
- ``fig9`` (Fig. 9, appendix D.2): ``fig6`` across models on the Doc split.
- ``fig10`` (Fig. 10, appendix D.3): ``fig8`` across models, Doc / Event /
  Fictsheets panels.
- ``fig10_11`` (Fig. 11, appendix D.3): MCQ-4 (left) vs MCQ-10 (right)
  accuracy vs step, one series per run or model, with the control.

When the workflow fine-tunes several base models, the across-models families
(:data:`ACROSS_MODELS`: ``fig4``, ``fig7``, ``fig9``, ``fig10``, ``fig10_11``) draw
every model's runs in one figure: :func:`curves_across_models` takes the models'
summaries concatenated, :func:`plot_across_models` draws them.  There a series is a
model, in one colour fixed by the config's model order
(:func:`knowlab.core.plotting.model_colours`: the same in every figure), and the line
style (:data:`ACROSS_STYLES`) tells the split's fine-tuned run from that model's
webtext-only control, and train from val documents or questions.

A fiction run is named after the split it trains on (``doc``, ``event``,
``fictsheets``, ``style_news``, ``style_blog``); ``control`` is the run on
webtext only.  Their display names (:data:`knowlab.fiction.splits.SPLIT_RUN_NAMES`,
:func:`knowlab.fiction.splits.run_name`) are also used by the other studies' figures of FictionalQA
runs (SORT and grounding across fine-tuning) and by the p-value matrices of the paired tests between
checkpoints (:func:`knowlab.core.plotting.plot_pvalue_matrix`).  Colours, layout and
saving: :mod:`knowlab.core.plotting`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import pandas as pd
from matplotlib.figure import Figure

from knowlab.core.checkpoints import CONTROL_RUN
from knowlab.core.plotting import (
    LINESTYLES,
    STEP_LABEL,
    band_handle,
    chance_handle,
    chance_line,
    colours,
    empty_panel,
    finish,
    integer_ticks,
    line_handle,
    line_with_band,
    model_colours,
    panel_figure,
)
from knowlab.fiction.splits import run_name

SPLITS = ("doc", "event", "style_news", "style_blog", "fictsheets")  # display order
CONTROL_PREFIX = "Base webtext"  # series whose label starts with this are drawn in grey
DOC_SIDES = {"train": "train documents", "val": "val documents"}
QUESTION_SIDES = {"train": "questions on train documents", "val": "questions on val documents"}
LOSS = "loss (nats/token)"
NLL = "nll(answer | question) (nats/token)"


@dataclass(frozen=True)
class Panel:
    """Title and axis labels of one panel; ``chance`` draws a dotted chance line;
    ``missing`` is printed in the panel when no curve falls in it; ``logy``: log y-axis
    (zeros left out)."""

    title: str
    ylabel: str
    xlabel: str = STEP_LABEL
    chance: float | None = None
    missing: str = "no data"
    ylim: tuple[float, float] | None = None
    logy: bool = False


@dataclass(frozen=True)
class Family:
    """A figure family: the paper's figure number, a suptitle and its panels left to right.
    Families with ``per_split`` draw one panel per distinct ``panel`` of the curves instead."""

    figure: int
    suptitle: str
    panels: tuple[Panel, ...] = ()
    per_split: Panel | None = None


def _no_run(run: str, where: str = "of this model") -> str:
    """An empty panel's text: no ``run`` (``doc``, ``event``, ``fictsheets``) run of the figure's model,
    or (``where="in this config"``: the figures across models) of any."""
    return f"no {run_name(run)} run {where}"


def _mcq(n: int) -> dict:
    return {"ylabel": f"MCQ-{n} accuracy", "chance": 1 / n}


FAMILIES = {
    "fig2": Family(
        2,
        "Samples seen and epochs completed per data source",
        (
            Panel("Samples seen", "samples seen (log scale)", logy=True),
            Panel("Epochs completed", "epochs completed"),
        ),
    ),
    "fig3": Family(
        3,
        "Verbatim memorization of the Doc split",
        (
            Panel("Loss on train / val documents", LOSS, missing=_no_run("doc")),
            Panel(
                "Exact match of the last 50 tokens",
                "EM@50",
                xlabel="epochs completed on the training documents",
                missing=_no_run("doc"),
                ylim=(-0.03, 1.03),
            ),
        ),
    ),
    "fig4": Family(
        4,
        "Loss on train / val documents by split",
        (
            Panel("Doc split", LOSS, missing=_no_run("doc")),
            Panel("Event split", LOSS, missing=_no_run("event")),
        ),
    ),
    "fig5": Family(
        5,
        "Fictsheets loss and held-out webtext loss",
        (
            Panel("Fictsheets split", LOSS, missing=_no_run("fictsheets")),
            Panel("Held-out webtext (training on the Doc split)", LOSS, missing=_no_run("doc")),
        ),
    ),
    "fig6": Family(
        6,
        "Answer loss given the question, by split",
        (Panel("Fictional Q&A", NLL), Panel("Real-world Q&A", NLL)),
    ),
    "fig7": Family(
        7,
        "Multiple-choice accuracy, 4 choices",
        (
            Panel("Across models (Doc split)", missing=_no_run("doc"), **_mcq(4)),
            Panel("Across splits", **_mcq(4)),
        ),
    ),
    "fig8": Family(8, "MCQ-4 accuracy on questions from train vs val documents", per_split=Panel("", **_mcq(4))),
    "fig9": Family(
        9,
        "Answer loss given the question, across models (Doc split)",
        (
            Panel("Fictional Q&A", NLL, missing=_no_run("doc")),
            Panel("Real-world Q&A", NLL, missing=_no_run("doc")),
        ),
    ),
    "fig10": Family(
        10, "MCQ-4 accuracy on questions from train vs val documents, across models", per_split=Panel("", **_mcq(4))
    ),
    "fig10_11": Family(
        11,
        "Multiple-choice accuracy with 4 vs 10 choices",
        (Panel("4 choices", **_mcq(4)), Panel("10 choices", **_mcq(10))),
    ),
}

NO_DOC = _no_run("doc", "in this config")
ACROSS_SPLITS = ("doc", "event", "fictsheets")  # panels of the across-models fig10 (and, first two, fig4)
ACROSS_MODELS = {
    "fig4": Family(
        4,
        "Loss on train / val documents by split, across models",
        (
            Panel("Doc split", LOSS, missing=NO_DOC),
            Panel("Event split", LOSS, missing=_no_run("event", "in this config")),
        ),
    ),
    "fig7": Family(
        7,
        "Multiple-choice accuracy, 4 choices, across models",
        (Panel("Across models (Doc split)", missing=NO_DOC, **_mcq(4)),),
    ),
    "fig9": Family(
        9,
        "Answer loss given the question, across models (Doc split)",
        (Panel("Fictional Q&A", NLL, missing=NO_DOC), Panel("Real-world Q&A", NLL, missing=NO_DOC)),
    ),
    "fig10": Family(
        10,
        "MCQ-4 accuracy on questions from train vs val documents, across models",
        tuple(Panel(run_name(s), missing=_no_run(s, "in this config"), **_mcq(4)) for s in ACROSS_SPLITS),
    ),
    "fig10_11": Family(
        11,
        "Multiple-choice accuracy with 4 vs 10 choices, across models (Doc split)",
        (Panel("4 choices", missing=NO_DOC, **_mcq(4)), Panel("10 choices", missing=NO_DOC, **_mcq(10))),
    ),
}
"""The across-models figure families, keyed and numbered as in :data:`FAMILIES` (paper Figs. 4, 7
left, 9, 10, 11): fixed panels, one series per model (:func:`curves_across_models`,
:func:`plot_across_models`); a panel no model has a run for shows its ``missing`` text."""

FINE_TUNED_DOC = "fine-tuned on the Doc split"  # line style of the Doc split only families (fig7, fig9, fig10_11)
FINE_TUNED = "fine-tuned"  # ... with the side, in the one-panel-per-split families (fig4, fig10)
CONTROL_STYLE = "control (webtext only)"
CONTROL_SIDE = "control"  # ... with the side
ACROSS_LEGEND_TITLE = "colour: model; line: fine-tuned on the split or the model's webtext-only control"
ACROSS_STYLES = {
    FINE_TUNED_DOC: "-",
    CONTROL_STYLE: "-.",
    f"{FINE_TUNED}, {DOC_SIDES['train']}": "-",
    f"{FINE_TUNED}, {DOC_SIDES['val']}": "--",
    f"{CONTROL_SIDE}, {DOC_SIDES['train']}": "-.",
    f"{CONTROL_SIDE}, {DOC_SIDES['val']}": ":",
    f"{FINE_TUNED}, {QUESTION_SIDES['train']}": "-",
    f"{FINE_TUNED}, {QUESTION_SIDES['val']}": "--",
    f"{CONTROL_SIDE}, {QUESTION_SIDES['train']}": "-.",
    f"{CONTROL_SIDE}, {QUESTION_SIDES['val']}": ":",
}
"""Line style of each ``style`` label of the across-models curves, in legend order: the fine-tuned
run solid (val documents / questions dashed), the model's control dash-dot (val dotted)."""


def plot_family(
    family: str,
    curves: pd.DataFrame,
    pdf: str | Path,
    png: str | Path,
    note: str | None = None,
    *,
    palette: Mapping[str, object] | None = None,
) -> Figure:
    """Draw ``curves`` as figure family ``family`` (a key of :data:`FAMILIES`), save it, return the Figure.

    ``curves`` columns: ``panel`` (panel title; the family's fixed panel titles, or
    any title for one-panel-per-split families), ``series`` (legend label, one colour
    each; labels starting with "Base webtext" are grey), ``x``, ``y``; optional
    ``style`` (a legend label per line style, e.g. train/val documents) and
    ``y_lo``, ``y_hi`` and ``confidence`` (a bootstrap CI at that level, drawn as a shaded band named
    in the legend).  A fixed panel without
    curves shows its ``missing`` text.  ``note`` is printed small under the figure.
    ``palette`` (series -> colour, e.g. :func:`knowlab.core.plotting.model_colours`) fixes the
    colours and the legend order of the series instead (every series must have one).
    Layout and style: :mod:`knowlab.core.plotting`.
    """
    return _draw(FAMILIES[family], curves, pdf, png, note, palette=palette)


def plot_across_models(
    family: str,
    curves: pd.DataFrame,
    pdf: str | Path,
    png: str | Path,
    note: str | None = None,
    *,
    models: Sequence[str],
) -> Figure:
    """Draw across-models ``curves`` (:func:`curves_across_models`) as family ``family`` (a key of
    :data:`ACROSS_MODELS`), save it as ``pdf`` and ``png``, return the Figure.

    One colour per model from its place in ``models`` (the config's model order,
    :func:`knowlab.core.plotting.model_colours`), so a model has the same colour in every
    across-models figure; the legend (titled :data:`ACROSS_LEGEND_TITLE`) lists the models drawn
    (colour), then the line styles drawn (:data:`ACROSS_STYLES`: fine-tuned run vs the model's
    control, train vs val), the CI band and the chance level.  A panel without curves shows its ``missing`` text.

    Raises:
        ValueError: a series of ``curves`` is not in ``models``, or a style is not in :data:`ACROSS_STYLES`.
    """
    return _draw(
        ACROSS_MODELS[family],
        curves,
        pdf,
        png,
        note,
        palette=model_colours(models),
        styles=ACROSS_STYLES,
        legend_title=ACROSS_LEGEND_TITLE,
    )


def _draw(
    spec: Family,
    curves: pd.DataFrame,
    pdf: str | Path,
    png: str | Path,
    note: str | None,
    palette: Mapping[str, object] | None = None,
    styles: Mapping[str, str] | None = None,
    legend_title: str | None = None,
) -> Figure:
    """The renderer of :func:`plot_family` and :func:`plot_across_models`: ``spec``'s panels.
    Without ``palette``, series colours in first-seen order (controls grey); without ``styles``,
    :data:`LINESTYLES` in first-seen order, the style legend only when there are several.  Given,
    each restricts the legend to the series / styles drawn, in its own order; ``legend_title``
    heads the legend."""
    curves = curves.copy()
    if "style" not in curves:
        curves["style"] = None
    if spec.per_split:
        titles = list(curves["panel"].unique()) or ["no split run in this config"]
        panels = [replace(spec.per_split, title=t, missing=t) for t in titles]
    else:
        panels = list(spec.panels)
    series = curves["series"].unique()
    if palette is None:
        palette = colours(series, control=[s for s in series if s.startswith(CONTROL_PREFIX)])
    else:
        _check_known("series", series, palette)
        palette = {s: c for s, c in palette.items() if s in set(series)}
    drawn = curves["style"].dropna().unique()
    if styles is None:
        styles = dict(zip(drawn, LINESTYLES))
        style_legend = len(styles) > 1
    else:
        _check_known("style", drawn, styles)
        styles = {s: ls for s, ls in styles.items() if s in set(drawn)}
        style_legend = bool(styles)
    banded = {"y_lo", "y_hi"} <= set(curves) and curves["y_lo"].notna().any()
    handles = [line_handle(s, c, marker="o") for s, c in palette.items()]
    if style_legend:
        handles += [line_handle(s, linestyle=ls) for s, ls in styles.items()]
    if banded:  # the level the summary's intervals were drawn at (stats.confidence)
        handles.append(band_handle(float(curves["confidence"].dropna().iloc[0])))
    chances = sorted({p.chance for p in panels if p.chance is not None}, reverse=True)
    if chances:
        handles.append(chance_handle("chance (" + ", ".join(f"1/{round(1 / c)}" for c in chances) + ")"))
    layout = panel_figure(len(panels), len(handles), note or "", legend_title=legend_title)
    for ax, panel in zip(layout.axes, panels):
        part = curves[curves["panel"] == panel.title]
        for (name, style), line in part.groupby(["series", "style"], sort=False, dropna=False):
            line = line.sort_values("x")
            low, high = (line["y_lo"], line["y_hi"]) if banded else (None, None)
            line_with_band(ax, line["x"], line["y"], low, high, palette[name], styles.get(style, "-"))
        if part.empty:
            empty_panel(ax, panel.missing)
        if panel.chance is not None:
            chance_line(ax, panel.chance)
        if panel.ylim:
            ax.set_ylim(panel.ylim)
        if panel.xlabel == STEP_LABEL:
            integer_ticks(ax)
        if panel.logy:
            ax.set_yscale("log", nonpositive="mask")
        ax.set(title=panel.title, xlabel=panel.xlabel, ylabel=panel.ylabel)
    return finish(layout, handles, f"{spec.suptitle} (cf. paper Fig. {spec.figure})", pdf, png)


def _check_known(what: str, values, known: Mapping) -> None:
    unknown = [v for v in values if v not in known]
    if unknown:
        raise ValueError(f"{what} without a colour or line style: {unknown} (known: {list(known)})")


def _select(summary: pd.DataFrame, suite: str, runs, sides=("all",), split: str | None = None) -> pd.DataFrame:
    """Rows of ``suite`` for ``runs`` on ``sides``; with ``split``, as labelled by that split,
    else one copy of the control's rows (it is repeated once per split)."""
    rows = summary[(summary["suite"] == suite) & summary["run"].isin(runs) & summary["side"].isin(sides)]
    if split:
        return rows[rows["split"] == split]
    return rows.drop_duplicates(["run", "side", "step"])


def _tidy(rows: pd.DataFrame, panel: str, y: str, x: str = "step", sides=None, model=None) -> pd.DataFrame:
    def label(run):
        return f"{model}, {run_name(run)}" if model and run != CONTROL_RUN else run_name(run)

    out = pd.DataFrame({"panel": panel, "series": rows["run"].map(label), "x": rows[x], "y": rows[y]})
    if sides:
        out["style"] = rows["side"].map(sides)
    if f"{y}_lo" in rows:
        out["y_lo"], out["y_hi"], out["confidence"] = rows[f"{y}_lo"], rows[f"{y}_hi"], rows["confidence"]
    return out


def curves_from_summary(
    summary: pd.DataFrame, family: str, metric: str = "acc", model: str | None = None
) -> pd.DataFrame:
    """Curves of ``family`` (any key of :data:`FAMILIES` but ``fig2``) from the pipeline's summary table.

    ``summary`` columns: ``split, run, step, epochs, suite, side, loss, em50, acc,
    acc_lo, acc_hi, acc_norm, acc_norm_lo, acc_norm_hi`` (see :mod:`knowlab.fictionalqa.summary`;
    suites ``fiction_doc, fictsheet_doc, webtext, fict_qa_nll, real_qa_nll, mcq4,
    mcq10``).  ``metric`` is the MCQ column (``acc`` or ``acc_norm``); ``model`` names
    the fiction runs in the across-models panels.  Runs missing from the config give
    empty panels, never an error.
    """
    if family not in FAMILIES or family == "fig2":
        raise ValueError(f"no summary curves for family {family!r} (fig2 comes from curves_from_train_logs)")
    panels = [p.title for p in FAMILIES[family].panels]
    fiction = [s for s in SPLITS if s in set(summary["run"])]
    docs = ("train", "val")
    if family == "fig3":
        rows = _select(summary, "fiction_doc", ["doc"], docs, split="doc")
        return pd.concat(
            [
                _tidy(rows, panels[0], "loss", sides=DOC_SIDES),
                _tidy(rows, panels[1], "em50", x="epochs", sides=DOC_SIDES),
            ]
        )
    if family == "fig4":
        return pd.concat(
            _tidy(_select(summary, "fiction_doc", [s, CONTROL_RUN], docs, split=s), p, "loss", sides=DOC_SIDES)
            for p, s in zip(panels, ("doc", "event"))
        )
    if family == "fig5":
        sheets = _select(summary, "fictsheet_doc", ["fictsheets", CONTROL_RUN], docs, split="fictsheets")
        web = _select(summary, "webtext", ["doc", CONTROL_RUN], split="doc")
        return pd.concat([_tidy(sheets, panels[0], "loss", sides=DOC_SIDES), _tidy(web, panels[1], "loss")])
    if family == "fig6":
        return pd.concat(
            _tidy(_select(summary, suite, fiction + [CONTROL_RUN]), p, "loss")
            for p, suite in zip(panels, ("fict_qa_nll", "real_qa_nll"))
        )
    if family == "fig9":
        return pd.concat(
            _tidy(_select(summary, suite, ["doc", CONTROL_RUN], split="doc"), p, "loss", model=model)
            for p, suite in zip(panels, ("fict_qa_nll", "real_qa_nll"))
        )
    if family == "fig7":
        return pd.concat(
            [
                _tidy(_select(summary, "mcq4", ["doc", CONTROL_RUN], split="doc"), panels[0], metric, model=model),
                _tidy(_select(summary, "mcq4", fiction + [CONTROL_RUN]), panels[1], metric),
            ]
        )
    if family in ("fig8", "fig10"):
        shown = fiction if family == "fig8" else [s for s in fiction if s in ("doc", "event", "fictsheets")]
        labels = model if family == "fig10" else None
        return pd.concat(
            [
                _tidy(
                    _select(summary, "mcq4", [s, CONTROL_RUN], docs, split=s),
                    run_name(s),
                    metric,
                    sides=QUESTION_SIDES,
                    model=labels,
                )
                for s in shown
            ]
            or [pd.DataFrame(columns=["panel", "series", "x", "y"])]
        )
    return pd.concat(  # fig10_11
        _tidy(_select(summary, suite, fiction + [CONTROL_RUN]), p, metric, model=model)
        for p, suite in zip(panels, ("mcq4", "mcq10"))
    )


def curves_from_train_logs(train_logs: pd.DataFrame) -> pd.DataFrame:
    """Curves of ``fig2``: samples seen and epochs completed per source vs step, one series per run.

    ``train_logs`` columns: ``run, step, fiction_samples_seen, fiction_epochs,
    webtext_samples_seen, webtext_epochs`` (one row per optimizer step; step 0 is
    added as zero when absent).  The control has no fiction source.
    """
    panels = [p.title for p in FAMILIES["fig2"].panels]
    frames = []
    for run in [s for s in SPLITS if s in set(train_logs["run"])] + [CONTROL_RUN]:
        log = train_logs[train_logs["run"] == run].sort_values("step")
        if log.empty:
            continue
        if log["step"].iloc[0] != 0:
            log = pd.concat([log.iloc[:1].assign(**{c: 0 for c in log.columns if c != "run"}), log])
        for source in ("fiction", "webtext") if run != CONTROL_RUN else ("webtext",):
            for panel, column in zip(panels, ("samples_seen", "epochs")):
                frames.append(
                    pd.DataFrame(
                        {
                            "panel": panel,
                            "series": run_name(run),
                            "style": source,
                            "x": log["step"],
                            "y": log[f"{source}_{column}"],
                        }
                    )
                )
    return pd.concat(frames, ignore_index=True)


def _across(rows: pd.DataFrame, panel: str, y: str, model: str, sides: Mapping[str, str] | None = None) -> pd.DataFrame:
    """Summary ``rows`` of one model as curves of ``panel``: series ``model``, style from the run
    (fine-tuned or control) and, with ``sides``, the side (:data:`ACROSS_STYLES`)."""
    control = rows["run"] == CONTROL_RUN
    if sides:
        style = control.map({True: CONTROL_SIDE, False: FINE_TUNED}) + ", " + rows["side"].map(sides)
    else:
        style = control.map({True: CONTROL_STYLE, False: FINE_TUNED_DOC})
    out = pd.DataFrame(
        {"panel": panel, "series": model, "style": style, "run": rows["run"], "x": rows["step"], "y": rows[y]}
    )
    if f"{y}_lo" in rows:
        out["y_lo"], out["y_hi"], out["confidence"] = rows[f"{y}_lo"], rows[f"{y}_hi"], rows["confidence"]
    return out


def curves_across_models(
    summary: pd.DataFrame, family: str, models: Sequence[str], metric: str = "acc"
) -> pd.DataFrame:
    """Curves of the across-models family ``family`` (a key of :data:`ACROSS_MODELS`) from every
    model's summary table.

    ``summary``: the models' summary tables (:mod:`knowlab.fictionalqa.summary`: ``split, run,
    step, epochs, suite, side, n_items, loss, em50, ..., acc, acc_lo, acc_hi, acc_norm,
    acc_norm_lo, acc_norm_hi``, one row per split, run, step, suite and side) concatenated, with a
    column ``model`` (the model's display name).  ``models``: the config's model order (it fixes
    each model's colour; models without rows are left out).  ``metric``: the MCQ column (``acc``
    or ``acc_norm``).  What is drawn, per model, after the paper's figures:

    - ``fig4`` (Fig. 4): ``fiction_doc`` loss on train / val documents vs step, the Doc split's
      run and the control (left) and the Event split's (right);
    - ``fig7`` (Fig. 7 left): ``mcq4`` ``metric`` on all questions, Doc split run and control;
    - ``fig9`` (Fig. 9): ``fict_qa_nll`` (left) and ``real_qa_nll`` (right) loss, Doc split run
      and control;
    - ``fig10`` (Fig. 10): ``mcq4`` ``metric`` on questions from train / val documents of the
      split, its run and the control, panels Doc split, Event split, Fictsheets;
    - ``fig10_11`` (Fig. 11): ``mcq4`` (left) and ``mcq10`` (right) ``metric`` on all questions,
      Doc split run and control.

    Returns:
        One row per drawn point, columns ``panel`` (a panel title of the family), ``series`` (the
        model), ``style`` (a key of :data:`ACROSS_STYLES`: fine-tuned run or control, and the
        side), ``run``, ``x`` (optimizer step), ``y`` and, for MCQ accuracy, ``y_lo``, ``y_hi``
        (95% bootstrap CI).  Runs or splits missing from the summary give no rows (their panel
        shows its ``missing`` text), never an error.

    Raises:
        ValueError: ``family`` has no across-models figure, ``summary`` has no ``model`` column, or
            a model of ``summary`` is not in ``models``.
    """
    if family not in ACROSS_MODELS:
        raise ValueError(f"no across-models figure {family!r} (one of {list(ACROSS_MODELS)})")
    if "model" not in summary:
        raise ValueError("summary has no model column: concatenate each model's summary with its model name")
    present = set(summary["model"])
    unknown = sorted(present - set(models), key=str)
    if unknown:
        raise ValueError(f"models {unknown} of the summary are not in the model order {list(models)}")
    panels = [p.title for p in ACROSS_MODELS[family].panels]
    frames = []
    for model in (m for m in dict.fromkeys(models) if m in present):
        rows = summary[summary["model"] == model]
        if family in ("fig4", "fig10"):
            suite, y, sides = (
                ("fiction_doc", "loss", DOC_SIDES) if family == "fig4" else ("mcq4", metric, QUESTION_SIDES)
            )
            for panel, split in zip(panels, ACROSS_SPLITS):
                own = _select(rows, suite, [split, CONTROL_RUN], ("train", "val"), split=split)
                frames.append(_across(own, panel, y, model, sides))
        else:
            suites = {"fig7": ("mcq4",), "fig9": ("fict_qa_nll", "real_qa_nll"), "fig10_11": ("mcq4", "mcq10")}
            y = "loss" if family == "fig9" else metric
            for panel, suite in zip(panels, suites[family]):
                frames.append(_across(_select(rows, suite, ["doc", CONTROL_RUN], split="doc"), panel, y, model))
    frames = [frame for frame in frames if len(frame)]
    if not frames:
        return pd.DataFrame(columns=["panel", "series", "style", "run", "x", "y"])
    return pd.concat(frames, ignore_index=True)

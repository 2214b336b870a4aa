"""The bands of SORT's figures: accuracy, score and perplexity with their bootstrap intervals, per point.

The statistics rules compute them (``sort_stats``, ``sort_parametric_stats``, ``sort_fiction_stats``;
:mod:`knowlab.sort.steps.stats`) and write one table per figure under ``results/sort/.../bands/``;
the figure rules draw those tables (:mod:`knowlab.sort.condition_plots`,
:mod:`knowlab.sort.finetune_plots`) and compute no interval themselves.  Every band is
:func:`knowlab.sort.analysis.accuracy_table` (or, for the segments' perplexity,
:func:`perplexity_table`) at ``stats.confidence`` with ``stats.bootstrap_resamples`` resamples and
``stats.seed`` (:class:`knowlab.core.stats.StatsSettings`).

The figures, the rows each shows and the points it draws (its grouping), named once in
:data:`knowlab.sort.settings.CONDITION_FIGURES` and :data:`~knowlab.sort.settings.EPOCH_FIGURES`:

- Fig. 3a (:func:`excerpt_length_bands`): in-context accuracy per model, segment length and excerpt length.
- Fig. 3b, Fig. 10 (:func:`distance_bands`): accuracy per distance bin, by excerpt length (in
  context) or per model and segment length (baseline).
- Fig. 4 (:func:`rag_bands`): RAG, oracle RAG, in-context and baseline accuracy per model and distance bin.
- Figs. 12, 13, 16 (:func:`epoch_bands`): perplexity, accuracy and score across fine-tuning epochs.
- SORT on the fiction documents (:func:`fiction_bands`): accuracy and score per run, side and step.

Nothing here imports matplotlib (``envs/stats.yaml``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pandas as pd

from knowlab.core.checkpoints import BASE_RUN
from knowlab.core.stats import StatsSettings, bootstrap_ci
from knowlab.sort.analysis import accuracy_table
from knowlab.sort.settings import CONDITION_FIGURES


def require(bands: pd.DataFrame, columns: Sequence[str], what: str) -> None:
    """Raise ValueError unless the band table ``bands`` has rows and ``columns`` (the figure ``what``
    draws its points by them, with their values and intervals)."""
    missing = [c for c in columns if c not in bands]
    if missing or bands.empty:
        raise ValueError(f"{what} needs bands by {list(columns)} (knowlab.sort.bands); missing {missing or 'rows'}")


def select(rows: pd.DataFrame, condition: str | None, split: str | None) -> pd.DataFrame:
    """The rows of ``condition`` (None: all) in ``split`` (None, or rows without a ``split`` column: all).

    Raises:
        ValueError: no such rows.
    """
    part = rows
    if condition is not None:
        part = part[part["condition"] == condition]
    if split is not None and "split" in part:
        part = part[part["split"] == split]
    if part.empty:
        raise ValueError(f"no rows for condition {condition!r} and split {split!r}")
    return part


def excerpt_length_bands(
    rows: pd.DataFrame,
    stats: StatsSettings,
    *,
    condition: str = "in_context",
    hue: str = "model",
    style: str | None = "segment_length",
    split: str | None = "test",
) -> pd.DataFrame:
    """Fig. 3a: accuracy per ``hue`` (and ``style``) value and excerpt length, of ``condition``'s rows."""
    groups = [hue] + ([style] if style else [])
    return accuracy_table(select(rows, condition, split), [*groups, "excerpt_length"], stats)


def distance_bands(
    rows: pd.DataFrame,
    stats: StatsSettings,
    *,
    condition: str = "in_context",
    hue: str = "excerpt_length",
    panel: str | None = None,
    split: str | None = "test",
) -> pd.DataFrame:
    """Figs. 3b and 10: accuracy per (``panel`` and) ``hue`` value and distance bin, of ``condition``'s rows."""
    groups = ([panel] if panel else []) + [hue]
    return accuracy_table(select(rows, condition, split), [*groups, "distance_bin"], stats)


RAG_PANELS = ("rag", "oracle_rag")


def rag_rows(rows: pd.DataFrame, references: Sequence[str], split: str | None) -> pd.DataFrame:
    """Fig. 4's rows: RAG, oracle RAG and the ``references`` conditions, in ``split``.

    Raises:
        ValueError: no RAG or oracle RAG row.
    """
    part = rows[rows["condition"].isin([*RAG_PANELS, *references])]
    if split is not None and "split" in part:
        part = part[part["split"] == split]
    if not part["condition"].isin(RAG_PANELS).any():
        raise ValueError("plot_rag needs rows of condition 'rag' or 'oracle_rag'")
    return part


def rag_bands(
    rows: pd.DataFrame,
    stats: StatsSettings,
    *,
    hue: str = "model",
    references: Sequence[str] = ("in_context", "baseline"),
    split: str | None = "test",
) -> pd.DataFrame:
    """Fig. 4: accuracy per condition, ``hue`` value and distance bin (:func:`rag_rows`)."""
    return accuracy_table(rag_rows(rows, references, split), ["condition", hue, "distance_bin"], stats)


BANDS = {"excerpt_length": excerpt_length_bands, "distance": distance_bands, "rag": rag_bands}


def condition_bands(rows: pd.DataFrame, stats: StatsSettings) -> dict[str, pd.DataFrame]:
    """The bands of every figure of :data:`knowlab.sort.settings.CONDITION_FIGURES`, by name.

    Raises:
        ValueError: ``rows`` lack a figure's condition (Fig. 4 needs RAG or oracle RAG).
    """
    return {name: BANDS[kind](rows, stats, **options) for name, (kind, options) in CONDITION_FIGURES.items()}


# ----------------------------------------------------------------------------- across fine-tuning


def x_column(rows: pd.DataFrame, base_run: str = BASE_RUN) -> str:
    """``"epoch"`` when every fine-tuned row has an epoch, else ``"step"``."""
    tuned = rows[rows["run"] != base_run]
    return "epoch" if "epoch" in rows and len(tuned) and tuned["epoch"].notna().all() else "step"


def epoch_rows(rows: pd.DataFrame, runs: Sequence[str], base_run: str = BASE_RUN) -> tuple[pd.DataFrame, str, list]:
    """The rows a figure across fine-tuning draws: those of ``runs`` and of their models, with the base
    model's rows copied into each run at x = 0 (every curve starts there); the x column
    (:func:`x_column`) and the models (``[None]`` without a ``model`` column).

    Raises:
        ValueError: no rows of ``runs``.
    """
    if not rows["run"].isin(runs).any():
        raise ValueError(f"no rows of runs {list(runs)}")
    x = x_column(rows, base_run)
    models: list = [None]
    if "model" in rows:  # only the models that were fine-tuned
        models = list(dict.fromkeys(rows.loc[rows["run"].isin(runs), "model"]))
        rows = rows[rows["model"].isin(models)]
    base = rows[rows["run"] == base_run]
    frames = [rows[rows["run"].isin(runs)]]
    for run in runs:
        if len(base):
            frames.append(base.assign(run=run, **{x: 0}))
    return pd.concat(frames, ignore_index=True), x, models


def perplexity_table(ppl: pd.DataFrame, by: Sequence[str], stats: StatsSettings) -> pd.DataFrame:
    """exp(mean segment nll per token) per group, with its bootstrap interval, pooling both segments
    of each item (``ppl``: ``nll_a``, ``nll_b`` and the ``by`` columns): ``value``, ``low``, ``high``."""
    long = pd.concat(
        [
            ppl.drop(columns=["nll_b"]).rename(columns={"nll_a": "nll"}),
            ppl.drop(columns=["nll_a"]).rename(columns={"nll_b": "nll"}),
        ]
    )
    out = []
    for key, group in long.groupby(list(by), sort=True):
        nll = group["nll"].astype(float).to_numpy()
        low, high = bootstrap_ci(
            nll, n_resamples=stats.bootstrap_resamples, seed=stats.seed, confidence=stats.confidence
        )
        out.append(
            {**dict(zip(by, key)), "value": math.exp(np.nanmean(nll)), "low": math.exp(low), "high": math.exp(high)}
        )
    return pd.DataFrame(out)


#: the columns of an accuracy table a metric across fine-tuning draws as ``value``, ``low``, ``high``
METRIC_COLUMNS = {
    "accuracy": ("accuracy", "ci_low", "ci_high"),
    "score": ("mean_score", "score_ci_low", "score_ci_high"),
}


def epoch_conditions(data: pd.DataFrame, conditions: Sequence[str]) -> list[str]:
    """The ``conditions`` that ``data`` has rows of.

    Raises:
        ValueError: none.
    """
    shown = [c for c in conditions if (data["condition"] == c).any()]
    if not shown:
        raise ValueError(f"no rows of conditions {list(conditions)}")
    return shown


def epoch_bands(
    rows: pd.DataFrame,
    stats: StatsSettings,
    *,
    metric: str,
    runs: Sequence[str] = ("books", "instructions"),
    base_run: str = BASE_RUN,
    conditions: Sequence[str] = ("baseline", "in_context"),
) -> pd.DataFrame:
    """Figs. 12, 13 and 16: ``metric`` (``perplexity``, ``accuracy`` or ``score``) per run, x (epoch
    or step) and model, and per condition for accuracy and score; columns ``value``, ``low``,
    ``high`` (:func:`epoch_rows`; ``rows``: segment-perplexity rows for ``perplexity``, else item rows).

    Raises:
        ValueError: an unknown ``metric``, no rows of ``runs`` or of ``conditions``.
    """
    if metric not in ("accuracy", "score", "perplexity"):
        raise ValueError(f"metric must be 'accuracy', 'score' or 'perplexity', got {metric!r}")
    data, x, _ = epoch_rows(rows, runs, base_run)
    models = ["model"] if "model" in data else []
    if metric == "perplexity":
        return perplexity_table(data, ["run", x, *models], stats)
    shown = epoch_conditions(data, conditions)
    table = accuracy_table(data[data["condition"].isin(shown)], ["condition", "run", x, *models], stats)
    value, low, high = METRIC_COLUMNS[metric]
    return table.rename(columns={value: "value", low: "low", high: "high"})


def fiction_rows(rows: pd.DataFrame, condition: str | None = "baseline") -> pd.DataFrame:
    """The rows of SORT on the fiction documents a figure shows: ``condition``'s (when the table has a
    ``condition`` column), ``side`` NaN (e.g. the control's) as ``all``.

    Raises:
        ValueError: no rows.
    """
    part = rows
    if condition is not None and "condition" in rows:
        part = part[part["condition"] == condition]
    if part.empty:
        raise ValueError(f"no rows of condition {condition!r}")
    return part.assign(side=part["side"].fillna("all") if "side" in part else "all")


def fiction_bands(rows: pd.DataFrame, stats: StatsSettings, *, condition: str | None = "baseline") -> pd.DataFrame:
    """SORT on the fiction documents: accuracy and score per run, side and step (:func:`fiction_rows`)."""
    return accuracy_table(fiction_rows(rows, condition), ["run", "side", "step"], stats)

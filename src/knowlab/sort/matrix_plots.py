"""SORT p-value matrices (Pink et al. 2024): Figs. 14 (McNemar) and 15 (paired t-test), saved as PDF and PNG.

After Pink et al., "Assessing Episodic Memory in LLMs with Sequence Order Recall Tasks":
:func:`plot_matrix` draws a :func:`knowlab.sort.analysis.condition_matrix` table, the paired
tests between memory conditions of the base model or between fine-tuning checkpoints, with a
footnote naming the model, the test, the multiple-comparison correction and its family size.
Style, cell text and the checkpoint layout: :mod:`knowlab.core.plotting`.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from knowlab.core.plotting import PVALUE_CMAP, finish, panel_figure, plot_pvalue_matrix, pvalue_cells
from knowlab.fiction.splits import run_name


def _fits_checkpoint_matrix(table: pd.DataFrame) -> bool:
    """Whether ``table`` has the shape :func:`knowlab.core.plotting.plot_pvalue_matrix` draws: one
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
    :func:`knowlab.core.plotting.plot_pvalue_matrix` with the FictionalQA run names; otherwise
    (e.g. base / books / instructions checkpoints together, the paper's layout) as one
    labelled matrix in the order of the table's ``a`` column.  Cells show the p-value, bold
    with asterisks where < 0.05 (* < 0.05, ** < 0.01).  The footnote names the model, the
    test, the correction and the size of its family.

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
        plot_pvalue_matrix(plain, title, pdf, png, value=value, note=footnote, run_label=run_name)
        return
    footnote += " Bold: * p < 0.05, ** p < 0.01."
    order = list(dict.fromkeys(list(table["a"]) + list(table["b"])))
    matrix = table.pivot_table(index="a", columns="b", values=value, aggfunc="first").reindex(
        index=order, columns=order
    )
    n = len(order)
    side = max(4.5, 0.62 * n + 2.5)
    layout = panel_figure(1, 0, footnote, panel_size=(side + 1.2, side))
    (ax,) = layout.axes
    image = ax.imshow(matrix.to_numpy(dtype=float), vmin=0, vmax=1, cmap=PVALUE_CMAP)
    ax.set_xticks(range(n), order, rotation=45, ha="right")
    ax.set_yticks(range(n), order)
    pvalue_cells(ax, matrix.to_numpy(dtype=float), fontsize=8 if n <= 10 else 6.5)
    ax.set(xlabel="column (b)", ylabel="row (a)")
    ax.get_figure(root=False).colorbar(image, ax=ax, label=f"p-value ({correction})", shrink=0.85)
    finish(layout, [], title, pdf, png)

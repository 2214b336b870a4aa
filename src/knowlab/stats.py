"""Paired tests over item-level tables (DESIGN: statistics from the field's libraries).

McNemar's test (``statsmodels.stats.contingency_tables.mcnemar``) compares the
per-question correctness of two checkpoints on the same questions, paired by
``item_id``.  With discordant counts b (A right, B wrong) and c (A wrong, B
right): the exact binomial test is used when ``b + c < exact_below`` (default
25), else the chi-square statistic with continuity correction.  When
``b + c == 0`` (e.g. a checkpoint against itself on the diagonal) the two
checkpoints agree on every question and the p-value is defined as 1.0.

Every table of tests is also corrected for multiple comparisons with Holm's
step-down method (``statsmodels.stats.multitest.multipletests``): the family is
every distinct pair of different checkpoints in the table (the run's
checkpoint-by-checkpoint matrix and its matched-step comparisons with the
control together); the figure names the correction.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
from statsmodels.stats.contingency_tables import mcnemar as sm_mcnemar
from statsmodels.stats.multitest import multipletests

CORRECTION = "holm"


def mcnemar_pair(a: pd.Series, b: pd.Series, exact_below: int = 25) -> dict[str, float]:
    """McNemar's test of two 0/1 correctness series indexed by ``item_id``.

    Returns ``n, b, c, statistic, pvalue, exact``.  Items present in only one series are dropped.

    Raises:
        ValueError: the series share no item.
    """
    joined = pd.concat([a.rename("a"), b.rename("b")], axis=1, join="inner").astype(bool)
    if joined.empty:
        raise ValueError("the two checkpoints share no item_id")
    n_b = int((joined["a"] & ~joined["b"]).sum())
    n_c = int((~joined["a"] & joined["b"]).sum())
    both = int((joined["a"] & joined["b"]).sum())
    neither = int((~joined["a"] & ~joined["b"]).sum())
    if n_b + n_c == 0:
        return {"n": len(joined), "b": 0, "c": 0, "statistic": 0.0, "pvalue": 1.0, "exact": True}
    exact = n_b + n_c < exact_below
    result = sm_mcnemar(np.array([[both, n_b], [n_c, neither]]), exact=exact, correction=True)
    return {
        "n": len(joined),
        "b": n_b,
        "c": n_c,
        "statistic": float(result.statistic),
        "pvalue": float(result.pvalue),
        "exact": exact,
    }


def mcnemar_table(
    correct: pd.DataFrame, pairs: Sequence[tuple[tuple[str, int], tuple[str, int]]], exact_below: int = 25
) -> pd.DataFrame:
    """McNemar for each ``((run_a, step_a), (run_b, step_b))`` pair.

    ``correct`` has columns ``run, step, item_id, correct``.  Returns one row per pair
    with the test result and ``pvalue_holm`` (Holm over the distinct pairs with a != b).
    """
    groups = {key: g.set_index("item_id")["correct"] for key, g in correct.groupby(["run", "step"])}
    rows = []
    for (ra, sa), (rb, sb) in pairs:
        res = mcnemar_pair(groups[(ra, sa)], groups[(rb, sb)], exact_below)
        rows.append({"run_a": ra, "step_a": sa, "run_b": rb, "step_b": sb, **res})
    table = pd.DataFrame(rows)
    off = (table["run_a"] != table["run_b"]) | (table["step_a"] != table["step_b"])
    # each unordered pair once: correct those, then copy to the mirrored cell
    key = table.apply(lambda r: tuple(sorted([(r.run_a, r.step_a), (r.run_b, r.step_b)])), axis=1)
    distinct = table[off].assign(key=key[off]).drop_duplicates("key")
    table["pvalue_holm"] = 1.0
    if len(distinct):
        adjusted = multipletests(distinct["pvalue"].to_numpy(), method=CORRECTION)[1]
        lookup = dict(zip(distinct["key"], adjusted))
        table.loc[off, "pvalue_holm"] = [lookup[k] for k in key[off]]
    table["correction"] = CORRECTION
    return table


def checkpoint_pairs(steps: Sequence[int], run: str) -> list[tuple[tuple[str, int], tuple[str, int]]]:
    """Every ordered pair of checkpoints of one run (the full matrix, diagonal included)."""
    return [((run, a), (run, b)) for a in steps for b in steps]


def matched_pairs(steps: Sequence[int], run: str, control: str) -> list[tuple[tuple[str, int], tuple[str, int]]]:
    """Fiction run vs control at each matched step."""
    return [((run, s), (control, s)) for s in steps]


def mcnemar_for_run(
    items: pd.DataFrame, run: str, control: str | None, suite: str, exact_below: int = 25
) -> pd.DataFrame:
    """McNemar on per-question ``acc`` of ``suite``: every pair of ``run``'s checkpoints and,
    when ``items`` hold a ``control`` run other than ``run``, ``run`` vs ``control`` at each step.

    ``items`` is the concatenation of item tables (columns ``run, step, suite, item_id, acc``).
    """
    rows = items[items["suite"] == suite]
    correct = rows[["run", "step", "item_id", "acc"]].rename(columns={"acc": "correct"})
    steps = sorted(correct.loc[correct["run"] == run, "step"].unique().tolist())
    pairs = checkpoint_pairs(steps, run)
    if control and control != run and (correct["run"] == control).any():
        pairs += matched_pairs(steps, run, control)
    return mcnemar_table(correct, pairs, exact_below).assign(suite=suite, metric="acc")

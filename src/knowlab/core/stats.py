"""Paired tests, multiple-comparison correction and bootstrap intervals over item-level tables.

Sources: FictionalQA (Kirchenbauer et al., seed 004) compares checkpoints of fine-tuning
runs on the same questions; SORT (seed 003, App. E.2-E.3, Figs. 14-15) tests such
checkpoint matrices with McNemar's test on per-question correctness and a paired t-test
on the log-probability of the correct answer normalised over the answer options.  Every
test comes from the field's libraries (statsmodels, scipy); this module only pairs the
items and defines the degenerate cases.

Pairing.  Two checkpoints are compared on the questions both were scored on, joined on
``item_id`` (inner join); an item whose score is missing (NaN) in either is dropped.
A table of tests has one row per ordered pair ``(a, b)`` of checkpoints
``(run, step)``: every pair of one run's checkpoints (the matrix, diagonal included)
and that run against the control run at each matched step.

McNemar (``acc``, 0/1 correctness; ``statsmodels.stats.contingency_tables.mcnemar``).
With discordant counts b (a right, b wrong) and c (a wrong, b right): the exact binomial
test when ``b + c < exact_below`` (default 25), else the chi-square statistic with
continuity correction.  Two-sided, so the (a, b) and (b, a) cells are the same test.
When ``b + c == 0`` (e.g. the diagonal) the checkpoints agree on every question and the
p-value is defined as 1.0.

Paired t-test (``gold_logprob_norm``; ``scipy.stats.ttest_rel``).  The score is the
log-probability of the gold choice normalised over the choices, i.e. log softmax of the
choices' summed log-likelihoods at the gold index (nats, <= 0; SORT's
log(p(y) / sum of p(choice))).  The test is on the per-item differences d = a - b;
``alternative="greater"`` (default) tests mean(d) > 0, "the row checkpoint gives the
correct answer a higher probability than the column checkpoint" (SORT Fig. 15);
``"less"`` and ``"two-sided"`` are as in scipy.  When every difference is 0 (e.g. the
diagonal) scipy returns NaN; the statistic is defined as 0.0 and the p-value as 1.0.
A one-sided (a, b) cell and its (b, a) mirror are different tests.

Correction.  Every table of p-values gets ``pvalue_holm``: Holm's step-down adjustment
(``statsmodels.stats.multitest.multipletests``, ``method="holm"``) over the table's family
of tests, named in the ``correction`` column.  The family is every distinct test between
two different checkpoints in the table (the run's matrix and its matched-step comparisons
with the control together): for McNemar each unordered pair once (copied to its mirrored
cell), for a one-sided t-test every ordered off-diagonal pair.  Diagonal cells keep
p = 1 and are not in the family; a NaN p-value (scipy's, e.g. one item with a non-zero
difference) is left out of the family and stays NaN.

Bootstrap.  :func:`bootstrap_ci` gives a percentile bootstrap confidence interval of a
mean (``scipy.stats.bootstrap``), used for the accuracy bands of the summary figures
(SORT Figs. 2 and 10 show bootstrapped 95% intervals).

Tables carry ``suite`` and ``metric`` (``acc`` or ``gold_logprob_norm``) so that
:func:`recompute_pvalue` can check any saved row against the item-level tables.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
from scipy.stats import bootstrap, ttest_rel
from statsmodels.stats.contingency_tables import mcnemar as sm_mcnemar
from statsmodels.stats.multitest import multipletests

CORRECTION = "holm"
ALTERNATIVES = ("greater", "less", "two-sided")
TTEST_METRIC = "gold_logprob_norm"

Checkpoint = tuple[str, int]
Pair = tuple[Checkpoint, Checkpoint]


def _paired(a: pd.Series, b: pd.Series) -> pd.DataFrame:
    """Columns ``a, b`` of the items present and not NaN in both series (joined on the index)."""
    joined = pd.concat([a.rename("a"), b.rename("b")], axis=1, join="inner").dropna()
    if joined.empty:
        raise ValueError("the two checkpoints share no item_id")
    return joined


def mcnemar_pair(a: pd.Series, b: pd.Series, exact_below: int = 25) -> dict[str, Any]:
    """McNemar's test of two 0/1 correctness series indexed by ``item_id``.

    Returns ``n, b, c, statistic, pvalue, exact``.  Items missing or NaN in either series
    are dropped.

    Raises:
        ValueError: the series share no item.
    """
    joined = _paired(a, b).astype(bool)
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


def ttest_pair(a: pd.Series, b: pd.Series, alternative: str = "greater") -> dict[str, Any]:
    """Paired t-test of two continuous per-item scores indexed by ``item_id``.

    ``alternative="greater"`` tests mean(a - b) > 0 (``a``, the row checkpoint, scores
    higher than ``b``); ``"less"`` and ``"two-sided"`` as in ``scipy.stats.ttest_rel``.
    Items missing or NaN in either series are dropped.  When every difference is 0 the
    result is defined as ``statistic = 0.0, pvalue = 1.0`` (scipy would return NaN).

    Returns:
        ``n`` (paired items), ``mean_diff`` (mean of a - b, in the scores' unit),
        ``statistic`` (t), ``pvalue``, ``alternative``.

    Raises:
        ValueError: the series share no item, or ``alternative`` is not one of
            :data:`ALTERNATIVES`.
    """
    if alternative not in ALTERNATIVES:
        raise ValueError(f"alternative must be one of {ALTERNATIVES}, got {alternative!r}")
    joined = _paired(a, b).astype(float)
    diff = joined["a"] - joined["b"]
    result = {"n": len(joined), "mean_diff": float(diff.mean())}
    if (diff == 0).all():
        return {**result, "statistic": 0.0, "pvalue": 1.0, "alternative": alternative}
    test = ttest_rel(joined["a"], joined["b"], alternative=alternative)
    return {**result, "statistic": float(test.statistic), "pvalue": float(test.pvalue), "alternative": alternative}


def _with_holm(table: pd.DataFrame, ordered: bool) -> pd.DataFrame:
    """Add ``pvalue_holm`` (after ``pvalue``) and ``correction`` to a table of pair tests.

    The Holm family is every distinct test between different checkpoints whose p-value is
    not NaN: each ordered pair when ``ordered`` (one-sided tests), else each unordered pair
    once, its adjusted value copied to the mirrored cell.  Diagonal cells get 1.0; NaN
    p-values stay NaN.
    """
    rows = list(zip(zip(table["run_a"], table["step_a"]), zip(table["run_b"], table["step_b"]), table["pvalue"]))
    keys = [(a, b) if ordered else tuple(sorted((a, b))) for a, b, _ in rows]
    family: dict[Any, float] = {}
    for key, (a, b, p) in zip(keys, rows):
        if a != b and not np.isnan(p):
            family.setdefault(key, p)
    adjusted = dict(zip(family, multipletests(list(family.values()), method=CORRECTION)[1])) if family else {}
    holm = [1.0 if a == b else adjusted.get(key, np.nan) for key, (a, b, _) in zip(keys, rows)]
    table.insert(table.columns.get_loc("pvalue") + 1, "pvalue_holm", holm)
    table["correction"] = CORRECTION
    return table


def _groups(scores: pd.DataFrame, column: str) -> dict[Checkpoint, pd.Series]:
    return {key: g.set_index("item_id")[column] for key, g in scores.groupby(["run", "step"])}


def mcnemar_table(correct: pd.DataFrame, pairs: Sequence[Pair], exact_below: int = 25) -> pd.DataFrame:
    """McNemar for each ``((run_a, step_a), (run_b, step_b))`` pair.

    ``correct`` has columns ``run, step, item_id, correct``.  Returns one row per pair:
    ``run_a, step_a, run_b, step_b, n, b, c, statistic, pvalue, pvalue_holm, exact,
    correction`` (Holm over the distinct unordered pairs with a != b).

    Raises:
        KeyError: a pair names a checkpoint absent from ``correct``.
    """
    groups = _groups(correct, "correct")
    rows = []
    for (ra, sa), (rb, sb) in pairs:
        res = mcnemar_pair(groups[(ra, sa)], groups[(rb, sb)], exact_below)
        rows.append({"run_a": ra, "step_a": sa, "run_b": rb, "step_b": sb, **res})
    return _with_holm(pd.DataFrame(rows), ordered=False)


def ttest_table(scores: pd.DataFrame, pairs: Sequence[Pair], alternative: str = "greater") -> pd.DataFrame:
    """Paired t-test (:func:`ttest_pair`) for each ``((run_a, step_a), (run_b, step_b))`` pair.

    ``scores`` has columns ``run, step, item_id, score``.  Returns one row per pair:
    ``run_a, step_a, run_b, step_b, n, mean_diff, statistic, pvalue, pvalue_holm,
    alternative, correction``.  Holm is over every ordered pair with a != b when the
    alternative is one-sided, over the unordered pairs when it is ``"two-sided"``.

    Raises:
        KeyError: a pair names a checkpoint absent from ``scores``.
        ValueError: as :func:`ttest_pair`.
    """
    groups = _groups(scores, "score")
    rows = []
    for (ra, sa), (rb, sb) in pairs:
        res = ttest_pair(groups[(ra, sa)], groups[(rb, sb)], alternative)
        rows.append({"run_a": ra, "step_a": sa, "run_b": rb, "step_b": sb, **res})
    return _with_holm(pd.DataFrame(rows), ordered=alternative != "two-sided")


def checkpoint_pairs(steps: Sequence[int], run: str) -> list[Pair]:
    """Every ordered pair of checkpoints of one run (the full matrix, diagonal included)."""
    return [((run, a), (run, b)) for a in steps for b in steps]


def matched_pairs(steps: Sequence[int], run: str, control: str) -> list[Pair]:
    """Fiction run vs control at each matched step."""
    return [((run, s), (control, s)) for s in steps]


def _pairs_for_run(scores: pd.DataFrame, run: str, control: str | None) -> list[Pair]:
    """``run``'s checkpoint matrix, plus ``run`` vs ``control`` at each step when ``scores`` hold the control."""
    steps = sorted(scores.loc[scores["run"] == run, "step"].unique().tolist())
    pairs = checkpoint_pairs(steps, run)
    if control and control != run and (scores["run"] == control).any():
        pairs += matched_pairs(steps, run, control)
    return pairs


def mcnemar_for_run(
    items: pd.DataFrame, run: str, control: str | None, suite: str, exact_below: int = 25
) -> pd.DataFrame:
    """McNemar on per-question ``acc`` of ``suite``: every pair of ``run``'s checkpoints and,
    when ``items`` hold a ``control`` run other than ``run``, ``run`` vs ``control`` at each step.

    ``items`` is the concatenation of item tables (columns ``run, step, suite, item_id, acc``).
    Returns :func:`mcnemar_table`'s table with ``suite`` and ``metric="acc"`` added.
    """
    rows = items[items["suite"] == suite]
    correct = rows[["run", "step", "item_id", "acc"]].rename(columns={"acc": "correct"})
    table = mcnemar_table(correct, _pairs_for_run(correct, run, control), exact_below)
    return table.assign(suite=suite, metric="acc")


def ttest_for_run(
    items: pd.DataFrame, run: str, control: str | None, suite: str, alternative: str = "greater"
) -> pd.DataFrame:
    """Paired t-test on per-question ``gold_logprob_norm`` of ``suite`` (nats; log softmax of
    the choices' summed log-likelihoods at the gold choice), over the same pairs as
    :func:`mcnemar_for_run`.

    ``items``: columns ``run, step, suite, item_id, gold_logprob_norm``.  Returns
    :func:`ttest_table`'s table with ``suite`` and ``metric="gold_logprob_norm"`` added.
    """
    rows = items[items["suite"] == suite]
    scores = rows[["run", "step", "item_id", TTEST_METRIC]].rename(columns={TTEST_METRIC: "score"})
    table = ttest_table(scores, _pairs_for_run(scores, run, control), alternative)
    return table.assign(suite=suite, metric=TTEST_METRIC)


def bootstrap_ci(
    values: Sequence[float] | np.ndarray, *, confidence: float = 0.95, n_resamples: int = 2000, seed: int = 0
) -> tuple[float, float]:
    """Percentile bootstrap confidence interval ``(low, high)`` of the mean of ``values``.

    ``scipy.stats.bootstrap(..., method="percentile", rng=np.random.default_rng(seed))``.
    Percentile rather than scipy's default BCa: on 0/1 accuracies over few items BCa's
    jackknife acceleration degenerates (scipy warns and returns NaN bounds), while the
    percentile interval is always defined.  NaN values are dropped first.  Fewer than 2
    values, or all values equal, give ``(mean, mean)`` without resampling (there is no
    spread; scipy would warn or return NaN); no values give ``(nan, nan)``.
    """
    x = np.asarray(values, dtype=float)
    x = x[~np.isnan(x)]
    if x.size == 0:
        return (float("nan"), float("nan"))
    if x.size < 2 or (x == x[0]).all():
        return (float(x.mean()), float(x.mean()))
    result = bootstrap(
        (x,),
        np.mean,
        confidence_level=confidence,
        n_resamples=n_resamples,
        method="percentile",
        rng=np.random.default_rng(seed),
    )
    return (float(result.confidence_interval.low), float(result.confidence_interval.high))


def recompute_pvalue(row: Mapping[str, Any], items: pd.DataFrame) -> float:
    """Recompute the uncorrected p-value of one saved table row from the item-level rows.

    An independent check of :func:`mcnemar_for_run` / :func:`ttest_for_run`: the pair is
    re-selected from ``items`` (columns ``run, step, suite, item_id`` and the row's
    ``metric``) by ``suite``, ``run_a, step_a, run_b, step_b``, merged on ``item_id``
    (NaN rows dropped), and tested directly: ``metric="acc"`` with statsmodels ``mcnemar``
    (the row's ``exact`` flag; continuity correction), ``metric="gold_logprob_norm"`` with
    scipy ``ttest_rel`` (the row's ``alternative``).  The module's definitions apply:
    no discordant pair / all differences 0 give 1.0.

    Raises:
        ValueError: an unknown ``metric``.
    """
    metric = row["metric"]
    if metric not in ("acc", TTEST_METRIC):
        raise ValueError(f"cannot recompute a p-value for metric {metric!r}")
    suite = items[items["suite"] == row["suite"]]

    def checkpoint(run: str, step: int) -> pd.DataFrame:
        return suite.loc[(suite["run"] == run) & (suite["step"] == step), ["item_id", metric]]

    a, b = checkpoint(row["run_a"], row["step_a"]), checkpoint(row["run_b"], row["step_b"])
    paired = a.merge(b, on="item_id", suffixes=("_a", "_b")).dropna()
    test = "mcnemar" if metric == "acc" else "ttest"
    return direct_pvalue(paired[f"{metric}_a"], paired[f"{metric}_b"], test, row.get("exact"), row.get("alternative"))


def direct_pvalue(x, y, test: str, exact: bool | None = None, alternative: str | None = None) -> float:
    """The p-value of paired per-item values straight from statsmodels / scipy (checks of saved tables).

    ``test="mcnemar"``: ``x``, ``y`` are 0/1 correctness; statsmodels ``mcnemar`` on their 2x2
    table with ``exact`` and the continuity correction.  ``test="ttest"``: scipy
    ``ttest_rel(x, y, alternative=alternative)``.  No discordant pair / all differences 0
    give 1.0, the definitions of :func:`mcnemar_pair` and :func:`ttest_pair`.
    """
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if test == "mcnemar":
        x, y = x.astype(bool), y.astype(bool)
        table = np.array([[(x & y).sum(), (x & ~y).sum()], [(~x & y).sum(), (~x & ~y).sum()]])
        if table[0, 1] + table[1, 0] == 0:
            return 1.0
        return float(sm_mcnemar(table, exact=bool(exact), correction=True).pvalue)
    if (x == y).all():
        return 1.0
    return float(ttest_rel(x, y, alternative=alternative).pvalue)

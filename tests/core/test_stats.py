"""McNemar, paired t-tests, Holm's correction, the findings' rank tests, the SORT binomial tests and the
percentile bootstrap against independent references (numbers derived by hand with ``math`` / numpy in
this module, or printed in textbooks): none calls the function under test or the scipy / statsmodels
routine it wraps.  Also the one pair-test table (any key columns, Holm families, ordered/unordered
tests), defined degenerate cases and recomputation."""

import itertools
import math
from dataclasses import FrozenInstanceError, fields

import numpy as np
import pandas as pd
import pytest

from knowlab.findings.base import signed_rank
from knowlab.core import stats
from knowlab.core.stats import (
    StatsSettings,
    bootstrap_ci,
    bootstrap_difference,
    minimum_detectable_effect,
    checkpoint_pairs,
    direct_pvalue,
    matched_pairs,
    mcnemar_pair,
    mcnemar_sample_size,
    pair_tests,
    recompute_pvalue,
    ttest_pair,
)


def _series(values, ids=None):
    return pd.Series(values, index=ids or [f"q{i}" for i in range(len(values))])


# ---------------------------------------------------------------------------- independent references
# Written from the definitions with the standard library (math, itertools) and numpy only.


def _holm_by_hand(pvalues):
    """Holm (1979) step-down: sort ascending (ties in input order), q_(i) = max_{j <= i} min(1, (m - j + 1) p_(j)),
    back to the input order (tied p-values get equal q whatever their order)."""
    m = len(pvalues)
    adjusted, running = [0.0] * m, 0.0
    for j, i in enumerate(sorted(range(m), key=lambda i: pvalues[i])):  # j = 0: the smallest p, factor m
        running = max(running, min(1.0, (m - j) * pvalues[i]))
        adjusted[i] = running
    return adjusted


def _mcnemar_exact_by_hand(b, c):
    """Exact McNemar: the two-sided binomial test of min(b, c) in b + c trials at 1/2,
    2 * sum_{k <= min(b, c)} C(b + c, k) / 2^(b + c), at most 1."""
    n = b + c
    return min(1.0, 2 * sum(math.comb(n, k) for k in range(min(b, c) + 1)) / 2**n)


def _mcnemar_chi2_by_hand(b, c):
    """McNemar's chi-square with Edwards' (1948) continuity correction, x = (|b - c| - 1)^2 / (b + c), and its
    p-value on one degree of freedom, P(Z^2 > x) = erfc(sqrt(x / 2))."""
    x = (abs(b - c) - 1) ** 2 / (b + c)
    return x, math.erfc(math.sqrt(x / 2))


def _t_two_sided_by_hand(t, df):
    """P(|T| >= |t|) of Student's t on an integer ``df``, closed form (Abramowitz & Stegun 1964, 26.7.3 and
    26.7.4): with theta = atan(|t| / sqrt(df)), c = cos theta, P(|T| < |t|) is, for odd df,
    (2 / pi) (theta + sin theta [c + (2/3) c^3 + ... + (2*4*...*(df-3)) / (1*3*...*(df-2)) c^(df-2)])
    (2 theta / pi for df = 1), and for even df
    sin theta [1 + (1/2) c^2 + ... + (1*3*...*(df-3)) / (2*4*...*(df-2)) c^(df-2)]."""
    theta = math.atan(abs(t) / math.sqrt(df))
    sin, cos = math.sin(theta), math.cos(theta)
    total = 0.0
    if df % 2:
        term = cos
        for j in range((df - 1) // 2):
            total += term
            term *= cos * cos * (2 * j + 2) / (2 * j + 3)
        inside = 2 / math.pi * (theta + sin * total)
    else:
        term = 1.0
        for j in range(df // 2):
            total += term
            term *= cos * cos * (2 * j + 1) / (2 * j + 2)
        inside = sin * total
    return 1 - inside


def _paired_t_by_hand(a, b, alternative):
    """``(t, p)`` of the paired t-test: d = a - b, t = mean(d) / (sd(d) / sqrt(n)) (sd with n - 1), df = n - 1;
    one-sided tails are halves of the two-sided p (the t distribution is symmetric)."""
    d = [x - y for x, y in zip(a, b)]
    n = len(d)
    mean = sum(d) / n
    t = mean / math.sqrt(sum((x - mean) ** 2 for x in d) / (n - 1) / n)
    two_sided = _t_two_sided_by_hand(t, n - 1)
    upper = two_sided / 2 if t > 0 else 1 - two_sided / 2  # P(T >= t)
    return t, {"two-sided": two_sided, "greater": upper, "less": 1 - upper}[alternative]


def _two_sided_from_null(null, observed):
    """Two-sided exact p of a statistic symmetric under the null: 2 * the smaller tail at ``observed``, at most 1."""
    lower = sum(v <= observed for v in null) / len(null)
    upper = sum(v >= observed for v in null) / len(null)
    return min(1.0, 2 * min(lower, upper))


def _signed_rank_exact_by_hand(a, b):
    """Exact two-sided Wilcoxon signed-rank p (no zero and no tied |a - b|): R+ (the sum of the ranks of |d|
    over positive d) against its null, R+ over all 2^n sign patterns of the ranks 1..n."""
    d = [x - y for x, y in zip(a, b)]
    n = len(d)
    ranks = {i: r for r, i in enumerate(sorted(range(n), key=lambda i: abs(d[i])), start=1)}
    r_plus = sum(ranks[i] for i in range(n) if d[i] > 0)
    null = [sum(r for r, plus in zip(range(1, n + 1), signs) if plus) for signs in itertools.product((0, 1), repeat=n)]
    return _two_sided_from_null(null, r_plus)


def _binomial_p_by_hand(k, n, p, alternative):
    """Binomial test of k successes in n trials at ``p``, from the pmf C(n, i) p^i (1 - p)^(n - i): one-sided
    tails, and two-sided the total probability of the outcomes no more likely than k (the
    "minimum-likelihood" two-sided test; a relative 1e-7 counts float-equal pmfs as ties)."""
    pmf = [math.comb(n, i) * p**i * (1 - p) ** (n - i) for i in range(n + 1)]
    if alternative == "greater":
        return sum(pmf[k:])
    if alternative == "less":
        return sum(pmf[: k + 1])
    return min(1.0, sum(q for q in pmf if q <= pmf[k] * (1 + 1e-7)))


def _percentile_bootstrap_by_hand(samples, statistic, n_resamples, seed, confidence):
    """``(low, high, se)`` of a percentile bootstrap (Efron & Tibshirani 1993, ch. 13): ``n_resamples``
    resamples with replacement of each sample, the statistic on each, its (1 - confidence) / 2 and
    (1 + confidence) / 2 quantiles (linear interpolation, Hyndman & Fan type 7, numpy's default) and its
    standard deviation (n - 1).  The index draws are ``rng.integers(0, n, (n_resamples, n))`` of
    ``np.random.default_rng(seed)``, one sample after the other, in one batch: the draw order of
    scipy 1.17's resampler (``scipy/stats/_resampling.py``, ``_bootstrap_resample``), so the same seed
    gives the same resamples."""
    rng = np.random.default_rng(seed)
    resampled = [s[rng.integers(0, s.size, (n_resamples, s.size))] for s in samples]
    theta = statistic(*resampled)
    tail = (1 - confidence) / 2
    low, high = np.quantile(theta, [tail, 1 - tail])
    return float(low), float(high), float(theta.std(ddof=1))


def _mean(u):
    return u.mean(axis=-1)


def _pairs_of_counts(b, c, both=3, neither=2):
    """0/1 series ``a``, ``b`` with ``b`` items a right and b wrong, ``c`` the other way round, plus concordant ones."""
    a = [1] * b + [0] * c + [1] * both + [0] * neither
    other = [0] * b + [1] * c + [1] * both + [0] * neither
    return _series(a), _series(other)


# Student's (1908) sleep data (Cushny & Peebles 1905): extra hours of sleep of 10 patients under two
# hypnotics.  R's ``t.test(extra ~ group, data = sleep, paired = TRUE)`` prints t = -4.0621, df = 9,
# p-value = 0.002833, mean difference -1.58.
SLEEP_1 = [0.7, -1.6, -0.2, -1.2, -0.1, 3.4, 3.7, 0.8, 0.0, 2.0]
SLEEP_2 = [1.9, 0.8, 1.1, 0.1, -0.1, 4.4, 5.5, 1.6, 4.6, 3.4]


def test_exact_test_for_few_discordant_pairs():
    a = _series([1, 1, 1, 0, 1, 0, 1, 1])
    b = _series([0, 0, 1, 0, 1, 1, 0, 1])
    res = mcnemar_pair(a, b, exact_below=25)
    assert (res["b"], res["c"], res["exact"]) == (3, 1, True)
    assert res["pvalue"] == pytest.approx(_mcnemar_exact_by_hand(3, 1))
    assert res["pvalue"] == pytest.approx(0.625)  # 2 (C(4, 0) + C(4, 1)) / 2^4


def test_chi_square_for_many_discordant_pairs():
    rng = np.random.default_rng(0)
    a = _series(rng.integers(0, 2, 400).tolist())
    b = _series(rng.integers(0, 2, 400).tolist())
    res = mcnemar_pair(a, b, exact_below=25)
    assert res["exact"] is False
    x, y = a.to_numpy().astype(bool), b.to_numpy().astype(bool)
    n_b, n_c = int((x & ~y).sum()), int((~x & y).sum())
    assert (res["b"], res["c"]) == (n_b, n_c)
    assert (res["statistic"], res["pvalue"]) == pytest.approx(_mcnemar_chi2_by_hand(n_b, n_c), rel=1e-12)


def test_identical_checkpoints_have_p_one():
    a = _series([1, 0, 1])
    assert mcnemar_pair(a, a, 25)["pvalue"] == 1.0


def test_pairs_join_on_item_id_not_order():
    a = _series([1, 0], ["x", "y"])
    b = _series([0, 1], ["y", "x"])
    assert mcnemar_pair(a, b, 25)["b"] == 0 and mcnemar_pair(a, b, 25)["c"] == 0
    with pytest.raises(ValueError, match="the two checkpoints share no item_id"):
        mcnemar_pair(a, _series([1], ["z"]), 25)


def test_matrix_with_holm_correction():
    rng = np.random.default_rng(1)
    rows = []
    for step, p in ((0, 0.3), (10, 0.5), (20, 0.8)):
        for i, c in enumerate(rng.random(200) < p):
            rows.append({"run": "doc", "step": step, "item_id": f"q{i}", "correct": int(c)})
            rows.append({"run": "control", "step": step, "item_id": f"q{i}", "correct": int(rng.random() < 0.3)})
    correct = pd.DataFrame(rows)
    pairs = checkpoint_pairs([0, 10, 20], "doc") + matched_pairs([0, 10, 20], "doc", "control")
    assert checkpoint_pairs([0, 10, 20], "doc", "control") == pairs
    table = pair_tests(correct, pairs, "mcnemar", "correct", exact_below=25)
    assert list(table.columns) == [
        "run_a",
        "step_a",
        "run_b",
        "step_b",
        "n",
        "mean_a",
        "mean_b",
        "b",
        "c",
        "statistic",
        "pvalue",
        "pvalue_holm",
        "exact",
        "correction",
    ]
    assert [((r.run_a, r.step_a), (r.run_b, r.step_b)) for r in table.itertuples()] == pairs
    assert len(table) == 9 + 3
    diag = table[(table.run_a == table.run_b) & (table.step_a == table.step_b)]
    assert (diag["pvalue"] == 1).all() and (diag["pvalue_holm"] == 1).all()
    assert (table["pvalue_holm"] >= table["pvalue"] - 1e-12).all()
    sym = table[(table.run_a == "doc") & (table.run_b == "doc")].set_index(["step_a", "step_b"])["pvalue_holm"]
    assert sym[(0, 20)] == sym[(20, 0)] < 0.05
    assert set(table["correction"]) == {"holm"}


def test_ttest_pair_equals_the_closed_form_t_distribution_for_each_alternative():
    """t and p against :func:`_paired_t_by_hand` (Abramowitz & Stegun's closed form), at an odd (39) and an
    even (10) number of degrees of freedom."""
    rng = np.random.default_rng(2)
    for n in (40, 11):
        x = rng.normal(-1.0, 0.5, n)
        y = x - rng.normal(0.2, 0.3, n)
        ids = [f"q{i}" for i in range(n)]
        a, b = _series(x.tolist(), ids), _series(y.tolist(), ids)
        for alternative in ("greater", "less", "two-sided"):
            res = ttest_pair(a, b, alternative)
            t, p = _paired_t_by_hand(x.tolist(), y.tolist(), alternative)
            assert res["statistic"] == pytest.approx(t, rel=1e-9)
            assert res["pvalue"] == pytest.approx(p, rel=1e-9)
            assert (res["n"], res["alternative"]) == (n, alternative)
            assert res["mean_diff"] == pytest.approx(np.mean(x - y))
        if n == 40:
            assert ttest_pair(a, b, "greater")["pvalue"] < 0.05 < ttest_pair(b, a, "greater")["pvalue"]


def test_ttest_pair_reproduces_students_sleep_data():
    """The textbook paired t-test (R's printed t = -4.0621, df = 9, p = 0.002833 on ``sleep``, see SLEEP_1):
    to the printed digits, and to the closed form."""
    g1, g2 = _series(SLEEP_1), _series(SLEEP_2)
    res = ttest_pair(g1, g2, "two-sided")
    assert res["n"] == 10 and res["mean_diff"] == pytest.approx(-1.58)
    assert res["statistic"] == pytest.approx(-4.0621, abs=5e-5)
    assert res["pvalue"] == pytest.approx(0.002833, abs=5e-7)
    assert ttest_pair(g2, g1, "greater")["pvalue"] == pytest.approx(0.002833 / 2, abs=5e-7)
    assert ttest_pair(g1, g2, "greater")["pvalue"] == pytest.approx(1 - 0.002833 / 2, abs=5e-7)
    for alternative in ("greater", "less", "two-sided"):
        t, p = _paired_t_by_hand(SLEEP_1, SLEEP_2, alternative)
        assert ttest_pair(g1, g2, alternative)["statistic"] == pytest.approx(t, rel=1e-9)
        assert ttest_pair(g1, g2, alternative)["pvalue"] == pytest.approx(p, rel=1e-9)


def test_ttest_pair_identical_scores_and_joining():
    a = _series([-0.1, -2.0, -0.7])
    same = {"n": 3, "mean_diff": 0.0, "statistic": 0.0, "pvalue": 1.0, "alternative": "greater"}
    assert ttest_pair(a, a, "greater") == same
    shuffled = _series([-0.7, -0.1, -2.0, np.nan], ["q2", "q0", "q1", "q9"])
    assert ttest_pair(a, shuffled, "greater")["pvalue"] == 1.0 and ttest_pair(a, shuffled, "greater")["n"] == 3
    with pytest.raises(ValueError, match="the two checkpoints share no item_id"):
        ttest_pair(a, _series([1.0], ["z"]), "greater")
    with pytest.raises(ValueError, match="alternative must be one of"):
        ttest_pair(a, a, alternative="bigger")


@pytest.fixture
def mcq4_scores(scored_items):
    """The mcq4 rows of ``scored_items`` with gold_logprob_norm as ``score``."""
    return scored_items[scored_items.suite == "mcq4"].rename(columns={"gold_logprob_norm": "score"})


def test_one_sided_ttest_holm_over_ordered_pairs(mcq4_scores):
    pairs = checkpoint_pairs([0, 10, 20], "doc") + matched_pairs([0, 10, 20], "doc", "control")
    table = pair_tests(mcq4_scores, pairs, "ttest", "score", alternative="greater")
    assert list(table.columns) == [
        "run_a",
        "step_a",
        "run_b",
        "step_b",
        "n",
        "mean_a",
        "mean_b",
        "mean_diff",
        "statistic",
        "pvalue",
        "pvalue_holm",
        "alternative",
        "correction",
    ]
    off = (table.run_a != table.run_b) | (table.step_a != table.step_b)
    assert off.sum() == 6 + 3
    expected = _holm_by_hand(table.loc[off, "pvalue"].tolist())
    assert table.loc[off, "pvalue_holm"].to_numpy() == pytest.approx(expected)
    assert (table.loc[~off, ["pvalue", "pvalue_holm"]] == 1.0).all().all()
    cell = table.set_index(["run_a", "step_a", "run_b", "step_b"])["pvalue"]
    assert cell[("doc", 20, "doc", 0)] < 0.01 and cell[("doc", 0, "doc", 20)] > 0.99
    assert cell[("doc", 20, "doc", 0)] + cell[("doc", 0, "doc", 20)] == pytest.approx(1.0)


def test_two_sided_ttest_counts_each_unordered_pair_once(mcq4_scores):
    table = pair_tests(mcq4_scores, checkpoint_pairs([0, 10, 20], "doc"), "ttest", "score", alternative="two-sided")
    upper = table[table.step_a < table.step_b]
    expected = dict(zip(zip(upper.step_a, upper.step_b), _holm_by_hand(upper["pvalue"].tolist())))
    for row in table[table.step_a != table.step_b].itertuples():
        assert row.pvalue_holm == pytest.approx(expected[tuple(sorted((row.step_a, row.step_b)))])


def test_holm_runs_within_each_named_family(mcq4_scores):
    """family=("condition",): one Holm family per condition, each its own step-down."""
    scores = pd.concat(
        [mcq4_scores.assign(condition="x"), mcq4_scores.assign(condition="y", score=mcq4_scores["score"] * 1.01)]
    )
    pairs = [(("doc", s, c), ("control", s, c)) for c in ("x", "y") for s in (0, 10, 20)]
    key_columns = ("run", "step", "condition")
    table = pair_tests(
        scores, pairs, "ttest", "score", alternative="greater", key_columns=key_columns, family=("condition",)
    )
    assert list(table.columns[:6]) == ["run_a", "step_a", "condition_a", "run_b", "step_b", "condition_b"]
    for _, part in table.groupby("condition_a"):
        assert part["pvalue_holm"].to_numpy() == pytest.approx(_holm_by_hand(part["pvalue"].tolist()))
    whole = pair_tests(scores, pairs, "ttest", "score", alternative="greater", key_columns=key_columns)
    assert (whole["pvalue"] == table["pvalue"]).all()
    assert whole["pvalue_holm"].to_numpy() == pytest.approx(_holm_by_hand(whole["pvalue"].tolist()))
    assert (whole["pvalue_holm"] >= table["pvalue_holm"]).all() and (whole["pvalue_holm"] > table["pvalue_holm"]).any()
    assert set(table["correction"]) == {"holm"}
    with pytest.raises(
        ValueError, match=r"family columns \['suite'\] are not key columns \('run', 'step', 'condition'\)"
    ):
        pair_tests(scores, pairs, "ttest", "score", alternative="greater", key_columns=key_columns, family=("suite",))


def test_mcnemar_is_unordered_over_any_key_columns():
    """Keys of one column; McNemar mirrors share one Holm test; means are on the paired items."""
    rng = np.random.default_rng(4)
    rows = pd.DataFrame(
        [
            {"condition": c, "item_id": f"q{i}", "correct": bool(rng.random() < p)}
            for c, p in (("baseline", 0.5), ("in_context", 0.9), ("rag", 0.6))
            for i in range(80)
        ]
    )
    keys = [("baseline",), ("in_context",), ("rag",)]
    table = pair_tests(
        rows, [(a, b) for a in keys for b in keys], "mcnemar", "correct", key_columns=("condition",), exact_below=25
    )
    cell = table.set_index(["condition_a", "condition_b"])
    assert cell.loc[("baseline", "in_context"), "pvalue_holm"] == cell.loc[("in_context", "baseline"), "pvalue_holm"]
    assert cell.loc[("baseline", "in_context"), "pvalue_holm"] < 0.05
    upper = table[table.condition_a < table.condition_b]
    assert upper["pvalue_holm"].to_numpy() == pytest.approx(_holm_by_hand(upper["pvalue"].tolist()))
    assert cell.loc[("baseline", "rag"), "mean_a"] == pytest.approx(rows[rows.condition == "baseline"].correct.mean())
    assert cell.loc[("rag", "baseline"), "mean_a"] == cell.loc[("baseline", "rag"), "mean_b"]
    assert (table["n"] == 80).all() and table["exact"].dtype == bool


@pytest.mark.filterwarnings("ignore:.*encountered in:RuntimeWarning")  # scipy on one paired item
def test_degenerate_cells_and_nan_pvalues():
    """Identical keys: p = 1 and out of the family; a NaN p-value (scipy: one paired item with a
    non-zero difference) stays NaN and is left out of the family."""
    rows = pd.DataFrame(
        {
            "run": ["r"] * 6,
            "step": [0, 0, 1, 1, 2, 2],
            "item_id": ["q0", "q1", "q0", "q1", "q0", "q9"],
            "score": [-1.0, -2.0, -1.0, -2.0, -0.5, -3.0],
        }
    )
    pairs = checkpoint_pairs([0, 1, 2], "r")
    table = pair_tests(rows, pairs, "ttest", "score", alternative="greater").set_index(["step_a", "step_b"])
    assert table.loc[(0, 1), "pvalue"] == 1.0 and table.loc[(0, 1), "statistic"] == 0.0  # every difference 0
    assert np.isnan(table.loc[(2, 0), "pvalue"]) and np.isnan(table.loc[(2, 0), "pvalue_holm"])
    assert table.loc[(2, 0), "n"] == 1
    assert (table.loc[[(0, 0), (1, 1), (2, 2)], ["pvalue", "pvalue_holm"]] == 1.0).all().all()
    # the family is (0, 1) and (1, 0) only, both p = 1
    assert table.loc[(1, 0), "pvalue_holm"] == 1.0
    correct = rows.assign(correct=[1, 0, 1, 0, 1, 1])
    same = pair_tests(correct, pairs, "mcnemar", "correct", exact_below=25).set_index(["step_a", "step_b"])
    assert same.loc[(0, 1), ["b", "c", "pvalue", "pvalue_holm"]].tolist() == [0, 0, 1.0, 1.0]
    assert bool(same.loc[(0, 1), "exact"])


def test_pair_tests_errors():
    rows = pd.DataFrame({"run": ["r", "r", "s"], "step": [0, 1, 0], "item_id": ["q0", "q0", "z"], "score": [0.0] * 3})
    with pytest.raises(ValueError, match="test must be one of"):
        pair_tests(rows, [(("r", 0), ("r", 1))], "wilcoxon", "score")
    with pytest.raises(ValueError, match="alternative must be one of"):
        pair_tests(rows, [(("r", 0), ("r", 1))], "ttest", "score", alternative="bigger")
    with pytest.raises(
        ValueError, match=r"pair_tests needs columns \['item_id', 'acc', 'run', 'step'\]; missing \['acc'\]"
    ):
        pair_tests(rows, [(("r", 0), ("r", 1))], "ttest", "acc", alternative="greater")
    with pytest.raises(ValueError, match="pair_tests got no pairs"):
        pair_tests(rows, [], "ttest", "score", alternative="greater")
    with pytest.raises(ValueError, match="keys must have 2 values"):
        pair_tests(rows, [(("r",), ("r",))], "ttest", "score", alternative="greater")
    with pytest.raises(ValueError, match=r"no rows for keys \[\('r', 7\)\] \(columns \('run', 'step'\)\)"):
        pair_tests(rows, [(("r", 0), ("r", 7))], "ttest", "score", alternative="greater")
    with pytest.raises(ValueError, match=r"\('r', 0\) vs \('s', 0\): the two checkpoints share no item_id"):
        pair_tests(rows, [(("r", 0), ("s", 0))], "mcnemar", "score", exact_below=25)
    with pytest.raises(ValueError, match=r"key \('r', 0\) has 1 repeated item_id \(e\.g\. 'q0'\)"):
        pair_tests(pd.concat([rows, rows]), [(("r", 0), ("r", 1))], "ttest", "score", alternative="greater")


def test_recompute_pvalue_from_item_rows(scored_items, own_choice):
    """Every row of a McNemar / one- and two-sided t-test table recomputes with statsmodels / scipy;
    the test, the value column and the key columns are read from the row unless given.  The variant is
    this test's own choice (McNemar: exact below 25 discordant items, counted from the items; the
    t-test's alternative as asked), not the one saved in the row."""
    mcq4 = scored_items[scored_items.suite == "mcq4"]
    pairs = checkpoint_pairs([0, 10, 20], "doc", "control")
    tables = [
        pair_tests(mcq4, pairs, "mcnemar", "acc", exact_below=25).assign(metric="acc"),
        pair_tests(mcq4, pairs, "ttest", "gold_logprob_norm", alternative="greater").assign(metric="gold_logprob_norm"),
        pair_tests(mcq4, pairs, "ttest", "gold_logprob_norm", alternative="two-sided").assign(
            metric="gold_logprob_norm"
        ),
    ]
    assert tables[0]["exact"].nunique() == 2  # both McNemar variants are checked
    for table, alternative in zip(tables, (None, "greater", "two-sided")):
        for row in table.assign(suite="mcq4").to_dict("records"):
            ours = own_choice(row, scored_items, within=("suite",), alternative=alternative)
            assert recompute_pvalue(ours, scored_items, within=("suite",)) == pytest.approx(row["pvalue"], rel=1e-9)
    row = tables[1].iloc[7]
    bare = {**{k: row[k] for k in ("run_a", "step_a", "run_b", "step_b")}, "alternative": "greater"}
    explicit = recompute_pvalue(bare, mcq4, key_columns=("run", "step"), value="gold_logprob_norm", test="ttest")
    assert explicit == pytest.approx(row["pvalue"], rel=1e-9)
    labelled = tables[0].assign(test="mcnemar", key_columns="run,step")  # SORT's tables name them
    assert recompute_pvalue(own_choice(labelled.iloc[4], mcq4), mcq4) == pytest.approx(
        labelled.iloc[4]["pvalue"], rel=1e-9
    )
    with pytest.raises(ValueError, match="cannot recompute a p-value: metric 'loss' is not a column of the item rows"):
        recompute_pvalue({"metric": "loss", "run_a": "doc", "step_a": 0, "run_b": "doc", "step_b": 0}, scored_items)
    with pytest.raises(ValueError, match=r"cannot recompute a p-value for test None \(one of \('mcnemar', 'ttest'\)\)"):
        recompute_pvalue({"metric": "acc", "run_a": "doc", "step_a": 0, "run_b": "doc", "step_b": 0}, scored_items)
    with pytest.raises(
        ValueError, match="key a of the row has a repeated item_id"
    ):  # the step alone does not tell the runs apart
        recompute_pvalue(dict(tables[0].iloc[0]), mcq4, key_columns=("step",))


def test_direct_pvalue_definitions():
    assert direct_pvalue([1, 0, 1], [1, 0, 1], "mcnemar", exact=True) == 1.0
    assert direct_pvalue([-1.0, -2.0], [-1.0, -2.0], "ttest", alternative="greater") == 1.0
    x, y = [1, 1, 1, 0, 1], [0, 0, 1, 1, 1]  # b = 2, c = 1
    assert direct_pvalue(x, y, "mcnemar", exact=True) == _mcnemar_exact_by_hand(2, 1) == 1.0  # 2 * 4 / 8, capped
    assert direct_pvalue(x, y, "ttest", alternative="two-sided") == pytest.approx(
        _paired_t_by_hand(x, y, "two-sided")[1], rel=1e-9
    )


def test_bootstrap_ci_equals_a_hand_written_percentile_resampler():
    """The interval is :func:`_percentile_bootstrap_by_hand` on the same seed (same index draws), on 0/1 and
    continuous values, at two confidence levels; NaN values are dropped first."""
    values = np.array([1, 0, 1, 1, 0, 1, 1, 1, 0, 1], dtype=float)
    low, high = bootstrap_ci(values, confidence=0.9, n_resamples=200, seed=5)
    assert (low, high) == pytest.approx(_percentile_bootstrap_by_hand((values,), _mean, 200, 5, 0.9)[:2], rel=1e-12)
    assert low <= values.mean() <= high
    once = bootstrap_ci(values, n_resamples=200, seed=5, confidence=0.95)
    assert once == bootstrap_ci(values, n_resamples=200, seed=5, confidence=0.95)
    with_nan = bootstrap_ci(np.append(values, np.nan), confidence=0.9, n_resamples=200, seed=5)
    assert with_nan == pytest.approx((low, high))
    scores = np.random.default_rng(8).normal(-0.7, 0.4, 25)
    for confidence, seed in ((0.95, 0), (0.8, 11)):
        expected = _percentile_bootstrap_by_hand((scores,), _mean, 1000, seed, confidence)[:2]
        assert bootstrap_ci(scores, confidence=confidence, n_resamples=1000, seed=seed) == pytest.approx(
            expected, rel=1e-12
        )


def test_bootstrap_ci_degenerate_inputs():
    assert bootstrap_ci([1.0, 1.0, 1.0], n_resamples=50, seed=0, confidence=0.95) == (1.0, 1.0)
    assert bootstrap_ci([0.25], n_resamples=50, seed=0, confidence=0.95) == (0.25, 0.25)
    assert bootstrap_ci([np.nan, 0.5], n_resamples=50, seed=0, confidence=0.95) == (0.5, 0.5)
    assert all(np.isnan(bootstrap_ci([], n_resamples=50, seed=0, confidence=0.95)))
    assert all(np.isnan(bootstrap_ci([np.nan], n_resamples=50, seed=0, confidence=0.95)))


def test_mcnemar_sample_size_reaches_its_power_in_simulation():
    """At Connor's n, McNemar's test (chi-square with continuity correction, as mcnemar_pair uses above 25
    discordant items; :func:`_mcnemar_chi2_by_hand`) rejects in about ``power`` of simulated studies."""
    p_b, p_c = 0.22, 0.12  # the SORT pilot: in context vs no context, 26 and 14 of 120 items
    n = mcnemar_sample_size(p_b, p_c, alpha=0.05, power=0.8)
    assert 250 < n < 270
    assert mcnemar_sample_size(p_b, p_c, alpha=0.05 / 6, power=0.8) > n  # Holm's first step over 6 pairs
    counts = np.random.default_rng(0).multinomial(n, [p_b, p_c, 1 - p_b - p_c], size=2000)
    rejected = [_mcnemar_chi2_by_hand(b, c)[1] < 0.05 for b, c, _ in counts]
    assert np.mean(rejected) == pytest.approx(0.8, abs=0.04)
    for bad in ((0.1, 0.1), (0.7, 0.5), (-0.1, 0.2)):
        with pytest.raises(ValueError, match="discordant proportions"):
            mcnemar_sample_size(*bad, alpha=0.05, power=0.8)


def test_bootstrap_difference_standard_errors_match_the_textbook_formulas():
    """Paired: SE of a mean difference is sd(d) / sqrt(n); unpaired: sqrt(var_a / n_a + var_b / n_b)
    (plug-in variances, as the bootstrap's), within the bootstrap's own noise at 4000 resamples."""
    rng = np.random.default_rng(3)
    a, b = rng.normal(1.0, 2.0, 300), rng.normal(0.0, 1.0, 300)
    paired = bootstrap_difference(a, b, paired=True, n_resamples=4000, seed=1, confidence=0.95)
    assert paired["effect"] == pytest.approx((a - b).mean())
    assert paired["se"] == pytest.approx(np.std(a - b) / np.sqrt(300), rel=0.06)
    assert paired["ci_low"] < paired["effect"] < paired["ci_high"]
    a2 = rng.normal(1.0, 2.0, 200)
    unpaired = bootstrap_difference(a2, b, paired=False, n_resamples=4000, seed=1, confidence=0.95)
    assert unpaired["effect"] == pytest.approx(a2.mean() - b.mean())
    assert unpaired["se"] == pytest.approx(np.sqrt(np.var(a2) / 200 + np.var(b) / 300), rel=0.06)
    # a normal-theory 95% interval, effect +/- 1.96 SE, and the percentile one nearly agree at this n
    half = 1.959964 * np.sqrt(np.var(a2) / 200 + np.var(b) / 300)
    assert unpaired["ci_low"] == pytest.approx(unpaired["effect"] - half, abs=0.1 * half)
    assert unpaired["ci_high"] == pytest.approx(unpaired["effect"] + half, abs=0.1 * half)


def test_bootstrap_difference_degenerate_and_bad_inputs():
    assert bootstrap_difference([1, 1, 1], [0, 0, 0], n_resamples=50, seed=0, confidence=0.95) == {
        "effect": 1.0,
        "ci_low": 1.0,
        "ci_high": 1.0,
        "se": 0.0,
    }
    assert bootstrap_difference([2.0, 2.0], [1.0], paired=False, n_resamples=50, seed=0, confidence=0.95)["se"] == 0.0
    with pytest.raises(ValueError, match="paired samples differ in length: 2 vs 3"):
        bootstrap_difference([1, 2], [1, 2, 3], n_resamples=50, seed=0, confidence=0.95)
    with pytest.raises(ValueError, match="bootstrap_difference got NaN values; drop the units first"):
        bootstrap_difference([1, np.nan], [1, 2], n_resamples=50, seed=0, confidence=0.95)
    with pytest.raises(ValueError, match="bootstrap_difference needs at least one value in each sample"):
        bootstrap_difference([], [1.0], paired=False, n_resamples=50, seed=0, confidence=0.95)


def test_minimum_detectable_effect_is_z_sum_times_se():
    # z(0.975) = 1.959964, z(0.8) = 0.841621 (normal tables)
    assert minimum_detectable_effect(0.1, 0.05, 0.8) == pytest.approx(0.2801585, rel=1e-6)
    assert minimum_detectable_effect(0.1, alpha=0.01, power=0.9) == pytest.approx(0.1 * (2.575829 + 1.281552), rel=1e-6)
    with pytest.raises(ValueError, match=r"alpha and power must lie in \(0, 1\), got 0\.05, 1\.0"):
        minimum_detectable_effect(0.1, 0.05, power=1.0)
    with pytest.raises(ValueError, match=r"a standard error cannot be negative, got -0\.1"):
        minimum_detectable_effect(-0.1, 0.05, 0.8)


# ---------------------------------------------------------------------------- against independent references


@pytest.mark.parametrize(
    ("pvalues", "expected"),
    [
        ([0.01, 0.04, 0.03, 0.005], [0.03, 0.06, 0.06, 0.02]),  # 4 p, 3 p, 2 p (raised to 0.06), 1 p
        ([0.02, 0.5, 0.02, 0.02], [0.08, 0.5, 0.08, 0.08]),  # ties: equal adjusted values
        ([1.0, 0.001, 1.0], [1.0, 0.003, 1.0]),  # p = 1 stays 1
        ([0.3, 0.4, 0.5], [0.9, 0.9, 0.9]),  # monotone: 0.8 and 0.5 raised to 0.9
        ([0.4, 0.6], [0.8, 0.8]),  # 2 * 0.4; min(1, 0.6) raised to 0.8
        ([0.7, 0.9], [1.0, 1.0]),  # capped at 1
        ([0.2], [0.2]),  # a family of one
        (np.random.default_rng(9).uniform(0, 0.2, 15).round(3).tolist(), None),  # with ties from the rounding
    ],
)
def test_holm_equals_a_hand_written_step_down(pvalues, expected):
    """The library's Holm (``stats._holm``, used by every pair-test table) on one family of distinct ordered
    pairs: :func:`_holm_by_hand`, and the values worked out in the comments."""
    pairs = [(("r", 0), ("r", k + 1)) for k in range(len(pvalues))]
    got = stats._holm(pairs, pvalues, ordered=True, families=[()] * len(pairs))
    assert got == pytest.approx(_holm_by_hand(pvalues), abs=1e-15)
    if expected is not None:
        assert got == pytest.approx(expected, abs=1e-15)


def test_holm_adjust_is_the_step_down_and_statsmodels_numbers_bit_for_bit():
    """``holm_adjust`` (every Holm column and finding) gives the hand-written step-down and, bit for bit,
    statsmodels' ``multipletests(method="holm")``, which it replaces (that branch calls gc.collect())."""
    from statsmodels.stats.multitest import multipletests

    rng = np.random.default_rng(11)
    families = [rng.uniform(0, 0.3, n) for n in (2, 7, 40)] + [rng.uniform(0, 1, 25).round(2), np.array([0.5, 0.5])]
    for pvalues in families:
        got = stats.holm_adjust(pvalues)
        assert got.dtype == np.float64 and got.shape == pvalues.shape
        assert got == pytest.approx(_holm_by_hand(pvalues.tolist()), abs=1e-15)
        assert np.array_equal(got, multipletests(pvalues, method="holm")[1])
    assert stats.holm_adjust([]).shape == (0,)


def test_holm_leaves_nan_and_diagonal_cells_out_of_the_family():
    """A NaN p-value stays NaN and the diagonal stays 1, neither counted in m; mirrored cells of an unordered
    test are one test (m counts it once), of an ordered test two; named families are corrected apart."""
    a, b, c = ("a",), ("b",), ("c",)
    pairs = [(a, b), (a, a), (a, c), (b, c)]
    got = stats._holm(pairs, [0.01, 1.0, np.nan, 0.02], ordered=True, families=[()] * 4)
    assert got[:2] == pytest.approx([0.02, 1.0]) and np.isnan(got[2]) and got[3] == pytest.approx(0.02)  # m = 2
    mirrored = [(a, b), (b, a), (a, c)]
    assert stats._holm(mirrored, [0.01, 0.01, 0.04], ordered=False, families=[()] * 3) == pytest.approx(
        [0.02, 0.02, 0.04]  # m = 2: {a, b} and {a, c}
    )
    assert stats._holm(mirrored, [0.01, 0.01, 0.04], ordered=True, families=[()] * 3) == pytest.approx(
        [0.03, 0.03, 0.04]  # m = 3: 3 * 0.01, max(0.03, 2 * 0.01), 1 * 0.04
    )
    families = ["x", "y", "x", "y"]
    got = stats._holm([(a, b), (a, c), (b, c), (c, a)], [0.01, 0.01, 0.04, 0.2], ordered=True, families=families)
    assert got == pytest.approx([0.02, 0.02, 0.04, 0.2])  # x: {0.01, 0.04}, y: {0.01, 0.2}


@pytest.mark.parametrize(
    ("n_b", "n_c", "expected"),
    [
        (2, 9, 0.0654296875),  # 2 (C(11,0) + C(11,1) + C(11,2)) / 2^11 = 2 * 67 / 2048
        (0, 5, 0.0625),  # every discordant item one way: 2 / 2^5
        (1, 0, 1.0),  # 2 / 2, capped
        (5, 5, 1.0),  # 2 * 638 / 1024 > 1, capped
        (3, 12, 0.03515625),  # 2 (1 + 15 + 105 + 455) / 2^15 = 1152 / 32768
        (24, 0, 2 / 2**24),  # the most discordant items still tested exactly
    ],
)
def test_exact_mcnemar_equals_the_binomial_sum_by_hand(n_b, n_c, expected):
    """mcnemar_pair below 25 discordant items and direct_pvalue: the two-sided binomial sum
    (:func:`_mcnemar_exact_by_hand`, math.comb) and the values worked out in the comments."""
    assert _mcnemar_exact_by_hand(n_b, n_c) == pytest.approx(expected, rel=1e-12)
    a, b = _pairs_of_counts(n_b, n_c)
    res = mcnemar_pair(a, b, 25)
    assert (res["b"], res["c"], res["exact"]) == (n_b, n_c, True)
    assert res["pvalue"] == pytest.approx(expected, rel=1e-12)
    assert res["statistic"] == min(n_b, n_c)  # the binomial test's statistic
    assert direct_pvalue(a, b, "mcnemar", exact=True) == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize(("n_b", "n_c"), [(30, 14), (14, 30), (40, 25), (13, 12), (13, 13), (100, 60)])
def test_chi_square_mcnemar_equals_the_corrected_statistic_by_hand(n_b, n_c):
    """From 25 discordant items: (|b - c| - 1)^2 / (b + c) on one degree of freedom (:func:`_mcnemar_chi2_by_hand`);
    e.g. b = 30, c = 14: x = 15^2 / 44 = 5.1136, p = erfc(sqrt(x / 2)) = 0.02374.  With |b - c| <= 1 the
    textbook formula (as R's ``mcnemar.test``) gives x = 0 (p = 1) or x = 1 / (b + c)."""
    x, p = _mcnemar_chi2_by_hand(n_b, n_c)
    a, b = _pairs_of_counts(n_b, n_c)
    res = mcnemar_pair(a, b, 25)
    assert res["exact"] is False
    assert res["statistic"] == pytest.approx(x, rel=1e-12)
    assert res["pvalue"] == pytest.approx(p, rel=1e-12)
    assert direct_pvalue(a, b, "mcnemar", exact=False) == pytest.approx(p, rel=1e-12)
    if (n_b, n_c) == (30, 14):
        assert (x, p) == pytest.approx((225 / 44, 0.02374), abs=5e-6)


def test_recompute_pvalue_equals_hand_numbers():
    """recompute_pvalue on item rows built to give b = 2, c = 9 (exact McNemar 0.0654296875, worked out above)
    and on Student's sleep data (t-test p = 0.002833 two-sided, half that one-sided)."""
    a, b = _pairs_of_counts(2, 9)
    rows = pd.DataFrame(
        {
            "run": ["x"] * len(a) + ["y"] * len(b),
            "step": 0,
            "item_id": [*a.index, *b.index],
            "acc": [*a, *b],
        }
    )
    row = {"run_a": "x", "step_a": 0, "run_b": "y", "step_b": 0, "metric": "acc", "exact": True}
    assert recompute_pvalue(row, rows) == pytest.approx(0.0654296875, rel=1e-12)
    sleep = pd.DataFrame(
        {
            "condition": ["one"] * 10 + ["two"] * 10,
            "item_id": [f"p{i}" for i in range(10)] * 2,
            "extra": SLEEP_1 + SLEEP_2,
        }
    )
    row = {"condition_a": "two", "condition_b": "one", "metric": "extra", "key_columns": "condition"}
    for alternative, printed in (("two-sided", 0.002833), ("greater", 0.002833 / 2), ("less", 1 - 0.002833 / 2)):
        got = recompute_pvalue({**row, "alternative": alternative}, sleep)
        assert got == pytest.approx(printed, abs=5e-7)
        assert got == pytest.approx(_paired_t_by_hand(SLEEP_2, SLEEP_1, alternative)[1], rel=1e-9)


def test_signed_rank_reproduces_the_textbook_example():
    """signed_rank, exact two-sided: Hollander & Wolfe (1973, p. 29; R's ``?wilcox.test``), Hamilton
    depression scale before (x) and after (y) a tranquilizer, 9 patients: V = 40, one-sided p = 0.01953
    (= 10 / 512: the sign patterns with R- <= 5), so two-sided 20 / 512; and the enumeration by hand."""
    x = [1.83, 0.50, 1.62, 2.48, 1.68, 1.88, 1.55, 3.06, 1.30]
    y = [0.878, 0.647, 0.598, 2.05, 1.06, 1.29, 1.06, 3.14, 1.29]
    got = signed_rank("", _series(x), _series(y), "patient", "score", "").p
    assert _signed_rank_exact_by_hand(x, y) == 20 / 512
    assert got == pytest.approx(20 / 512, rel=1e-12)
    assert got == pytest.approx(2 * 0.01953, abs=1e-5)
    d = np.random.default_rng(6).normal(0.3, 1.0, 11)  # no ties, no zeros: exact, 2^11 sign patterns
    a = _series((d + 5).tolist())
    assert signed_rank("", a, _series([5.0] * 11), "unit", "u", "").p == pytest.approx(
        _signed_rank_exact_by_hand((d + 5).tolist(), [5.0] * 11), rel=1e-12
    )
    assert signed_rank("", a, a, "unit", "u", "").p == 1.0


def test_sort_binomial_tests_equal_the_binomial_sums_by_hand():
    """sort.analysis.binomial_tests: each group's p from :func:`_binomial_p_by_hand` (math.comb), e.g. 15 of 20
    at chance: 2 (C(20,15) + ... + C(20,20)) / 2^20 = 2 * 21700 / 1048576; Holm over the table's rows by hand."""
    from knowlab.sort.analysis import binomial_tests

    counts = {"s15of20": (15, 20), "s3of12": (3, 12), "s10of10": (10, 10), "s5of10": (5, 10), "s7of9": (7, 9)}
    rows = pd.DataFrame([{"group": g, "correct": i < k} for g, (k, n) in counts.items() for i in range(n)]).sample(
        frac=1, random_state=0
    )
    for p, alternative in ((0.5, "two-sided"), (0.5, "greater"), (0.25, "two-sided"), (0.25, "less")):
        table = binomial_tests(rows, ["group"], p=p, alternative=alternative).set_index("group")
        for g, (k, n) in counts.items():
            assert (table.loc[g, "k"], table.loc[g, "n"]) == (k, n)
            assert table.loc[g, "pvalue"] == pytest.approx(_binomial_p_by_hand(k, n, p, alternative), rel=1e-9)
        holm = _holm_by_hand(table["pvalue"].tolist())
        assert table["pvalue_holm"].to_numpy() == pytest.approx(holm, rel=1e-12)
    at_chance = binomial_tests(rows, ["group"]).set_index("group")["pvalue"]
    assert at_chance["s15of20"] == pytest.approx(2 * 21700 / 2**20, rel=1e-12)
    assert at_chance["s10of10"] == pytest.approx(2 / 2**10, rel=1e-12)
    assert at_chance["s5of10"] == 1.0


def test_bootstrap_difference_equals_the_hand_written_resampler_paired_and_unpaired():
    """Paired: the units (index i) are resampled together and the statistic is mean(a[i]) - mean(b[i]), the
    same as the differences passed as ``a`` with ``b=None``; unpaired: a then b resampled on their own.  The
    interval and the standard error are :func:`_percentile_bootstrap_by_hand`'s on the same seed."""
    rng = np.random.default_rng(7)
    a = rng.normal(0.3, 1.0, 30)
    b = a - rng.normal(0.2, 0.5, 30)
    other = rng.normal(0.0, 2.0, 17)
    units = np.arange(30)
    paired = _percentile_bootstrap_by_hand((units,), lambda i: _mean(a[i]) - _mean(b[i]), 500, 3, 0.95)
    unpaired = _percentile_bootstrap_by_hand((a, other), lambda u, v: _mean(u) - _mean(v), 500, 3, 0.9)
    for got, effect, (low, high, se) in (
        (bootstrap_difference(a, b, n_resamples=500, seed=3, confidence=0.95), np.mean(a - b), paired),
        (bootstrap_difference(a - b, n_resamples=500, seed=3, confidence=0.95), np.mean(a - b), paired),
        (
            bootstrap_difference(a, other, paired=False, confidence=0.9, n_resamples=500, seed=3),
            a.mean() - other.mean(),
            unpaired,
        ),
    ):
        assert got["effect"] == pytest.approx(effect, rel=1e-12)
        assert (got["ci_low"], got["ci_high"], got["se"]) == pytest.approx((low, high, se), rel=1e-12, abs=1e-12)


def test_percentile_intervals_cover_the_true_difference_at_about_their_level():
    """Coverage on known distributions (fixed seeds, deterministic): of 200 samples of n = 50, the 95%
    interval covers the true value in 0.90-0.99 of them (the percentile interval undercovers a little at
    this n; the binomial sd of the rate is about 0.015): the mean of Normal(2, 1) (bootstrap_ci), a paired
    difference of 0.3 between strongly correlated scores, an unpaired one of 1.0 (n = 50 and 40)."""
    rng = np.random.default_rng(11)
    covered = {"mean": 0, "paired": 0, "unpaired": 0}
    widths = {"paired": [], "unpaired": []}
    for rep in range(200):
        low, high = bootstrap_ci(rng.normal(2.0, 1.0, 50), n_resamples=500, seed=rep, confidence=0.95)
        covered["mean"] += low <= 2.0 <= high
        unit = rng.normal(0.0, 2.0, 50)  # a per-unit level both scores share
        a, b = unit + 0.3 + rng.normal(0.0, 0.5, 50), unit + rng.normal(0.0, 0.5, 50)
        est = bootstrap_difference(a, b, n_resamples=500, seed=rep, confidence=0.95)
        covered["paired"] += est["ci_low"] <= 0.3 <= est["ci_high"]
        apart = bootstrap_difference(a, b, paired=False, n_resamples=500, seed=rep, confidence=0.95)
        widths["paired"].append(est["ci_high"] - est["ci_low"])
        widths["unpaired"].append(apart["ci_high"] - apart["ci_low"])
        est = bootstrap_difference(
            rng.normal(1.0, 1.0, 50), rng.normal(0.0, 1.5, 40), paired=False, n_resamples=500, seed=rep, confidence=0.95
        )
        covered["unpaired"] += est["ci_low"] <= 1.0 <= est["ci_high"]
    for what, count in covered.items():
        assert 0.90 <= count / 200 <= 0.99, what
    # pairing removes the shared per-unit level: sd(a - b) = 0.71 against sqrt(2 * 4.25) = 2.9 unpaired
    assert np.median(widths["paired"]) < 0.4 * np.median(widths["unpaired"])


def test_a_rule_gets_the_slice_of_the_stats_settings_its_step_reads(stats_settings):
    """``StatsSettings.param(*fields)``: a rule's param ``stats``, only the fields named (in field order);
    the script's record of it holds those, equal on a round trip, and reading any other field raises
    naming the key and where to add it."""
    param = stats_settings.param("seed", "mcnemar_exact_below")
    assert param == {"mcnemar_exact_below": 25, "seed": 0} and list(param) == ["mcnemar_exact_below", "seed"]
    assert stats_settings.param() == {f.name: getattr(stats_settings, f.name) for f in fields(StatsSettings)}
    part = StatsSettings.from_param(param)
    assert part == stats_settings.only("mcnemar_exact_below", "seed") != stats_settings
    assert part.held() == ("mcnemar_exact_below", "seed") and part.param() == param
    assert (part.mcnemar_exact_below, part.seed) == (25, 0) and hash(part) == hash(StatsSettings.from_param(param))
    assert repr(part) == "StatsSettings(mcnemar_exact_below=25, seed=0)"
    assert StatsSettings.from_param(stats_settings.param()) == stats_settings
    with pytest.raises(AttributeError, match=r"stats.confidence is not in this step's slice .* STATS.param"):
        part.confidence
    with pytest.raises(AttributeError, match="stats.bootstrap_resamples is not in this step's slice"):
        part.param("bootstrap_resamples")
    with pytest.raises(AttributeError, match="has no attribute 'resamples'"):
        stats_settings.param("resamples")
    with pytest.raises(TypeError, match=r"StatsSettings has no field\(s\) \['resamples'\]"):
        StatsSettings.from_param({"resamples": 10})
    with pytest.raises(ValueError, match="stats.ttest_alternative must be one of"):
        StatsSettings.from_param({"ttest_alternative": "greater or less"})
    with pytest.raises(FrozenInstanceError):
        part.seed = 1

"""McNemar and paired t-tests against statsmodels/scipy; the one pair-test table (any key columns,
Holm families, ordered/unordered tests); defined degenerate cases; recomputation; bootstrap."""

import numpy as np
import pandas as pd
import pytest
from scipy.stats import bootstrap, ttest_rel
from statsmodels.stats.contingency_tables import mcnemar
from statsmodels.stats.multitest import multipletests

from knowlab.core.stats import (
    bootstrap_difference,
    minimum_detectable_effect,
    bootstrap_ci,
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


def test_exact_test_for_few_discordant_pairs():
    a = _series([1, 1, 1, 0, 1, 0, 1, 1])
    b = _series([0, 0, 1, 0, 1, 1, 0, 1])
    res = mcnemar_pair(a, b, exact_below=25)
    assert (res["b"], res["c"], res["exact"]) == (3, 1, True)
    assert res["pvalue"] == pytest.approx(mcnemar(np.array([[3, 3], [1, 1]]), exact=True).pvalue)


def test_chi_square_for_many_discordant_pairs():
    rng = np.random.default_rng(0)
    a = _series(rng.integers(0, 2, 400).tolist())
    b = _series(rng.integers(0, 2, 400).tolist())
    res = mcnemar_pair(a, b, exact_below=25)
    assert res["exact"] is False
    x, y = a.to_numpy().astype(bool), b.to_numpy().astype(bool)
    table = np.array([[(x & y).sum(), (x & ~y).sum()], [(~x & y).sum(), (~x & ~y).sum()]])
    assert res["pvalue"] == pytest.approx(mcnemar(table, exact=False, correction=True).pvalue)


def test_identical_checkpoints_have_p_one():
    a = _series([1, 0, 1])
    assert mcnemar_pair(a, a)["pvalue"] == 1.0


def test_pairs_join_on_item_id_not_order():
    a = _series([1, 0], ["x", "y"])
    b = _series([0, 1], ["y", "x"])
    assert mcnemar_pair(a, b)["b"] == 0 and mcnemar_pair(a, b)["c"] == 0
    with pytest.raises(ValueError, match="share no item"):
        mcnemar_pair(a, _series([1], ["z"]))


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
    table = pair_tests(correct, pairs, "mcnemar", "correct")
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


def test_ttest_pair_matches_scipy_for_each_alternative():
    rng = np.random.default_rng(2)
    x = rng.normal(-1.0, 0.5, 40)
    y = x - rng.normal(0.2, 0.3, 40)
    ids = [f"q{i}" for i in range(40)]
    a, b = _series(x.tolist(), ids), _series(y.tolist(), ids)
    for alternative in ("greater", "less", "two-sided"):
        res = ttest_pair(a, b, alternative)
        expected = ttest_rel(x, y, alternative=alternative)
        assert res["pvalue"] == pytest.approx(expected.pvalue)
        assert res["statistic"] == pytest.approx(expected.statistic)
        assert (res["n"], res["alternative"]) == (40, alternative)
        assert res["mean_diff"] == pytest.approx(np.mean(x - y))
    assert ttest_pair(a, b)["pvalue"] < 0.05 < ttest_pair(b, a)["pvalue"]


def test_ttest_pair_identical_scores_and_joining():
    a = _series([-0.1, -2.0, -0.7])
    assert ttest_pair(a, a) == {"n": 3, "mean_diff": 0.0, "statistic": 0.0, "pvalue": 1.0, "alternative": "greater"}
    shuffled = _series([-0.7, -0.1, -2.0, np.nan], ["q2", "q0", "q1", "q9"])
    assert ttest_pair(a, shuffled)["pvalue"] == 1.0 and ttest_pair(a, shuffled)["n"] == 3
    with pytest.raises(ValueError, match="share no item"):
        ttest_pair(a, _series([1.0], ["z"]))
    with pytest.raises(ValueError, match="alternative must be one of"):
        ttest_pair(a, a, alternative="bigger")


@pytest.fixture
def mcq4_scores(scored_items):
    """The mcq4 rows of ``scored_items`` with gold_logprob_norm as ``score``."""
    return scored_items[scored_items.suite == "mcq4"].rename(columns={"gold_logprob_norm": "score"})


def test_one_sided_ttest_holm_over_ordered_pairs(mcq4_scores):
    pairs = checkpoint_pairs([0, 10, 20], "doc") + matched_pairs([0, 10, 20], "doc", "control")
    table = pair_tests(mcq4_scores, pairs, "ttest", "score")
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
    expected = multipletests(table.loc[off, "pvalue"], method="holm")[1]
    assert table.loc[off, "pvalue_holm"].to_numpy() == pytest.approx(expected)
    assert (table.loc[~off, ["pvalue", "pvalue_holm"]] == 1.0).all().all()
    cell = table.set_index(["run_a", "step_a", "run_b", "step_b"])["pvalue"]
    assert cell[("doc", 20, "doc", 0)] < 0.01 and cell[("doc", 0, "doc", 20)] > 0.99
    assert cell[("doc", 20, "doc", 0)] + cell[("doc", 0, "doc", 20)] == pytest.approx(1.0)


def test_two_sided_ttest_counts_each_unordered_pair_once(mcq4_scores):
    table = pair_tests(mcq4_scores, checkpoint_pairs([0, 10, 20], "doc"), "ttest", "score", alternative="two-sided")
    upper = table[table.step_a < table.step_b]
    expected = dict(zip(zip(upper.step_a, upper.step_b), multipletests(upper["pvalue"], method="holm")[1]))
    for row in table[table.step_a != table.step_b].itertuples():
        assert row.pvalue_holm == pytest.approx(expected[tuple(sorted((row.step_a, row.step_b)))])


def test_holm_runs_within_each_named_family(mcq4_scores):
    """family=("condition",): one Holm family per condition, each its own multipletests."""
    scores = pd.concat(
        [mcq4_scores.assign(condition="x"), mcq4_scores.assign(condition="y", score=mcq4_scores["score"] * 1.01)]
    )
    pairs = [(("doc", s, c), ("control", s, c)) for c in ("x", "y") for s in (0, 10, 20)]
    key_columns = ("run", "step", "condition")
    table = pair_tests(scores, pairs, "ttest", "score", key_columns=key_columns, family=("condition",))
    assert list(table.columns[:6]) == ["run_a", "step_a", "condition_a", "run_b", "step_b", "condition_b"]
    for _, part in table.groupby("condition_a"):
        assert part["pvalue_holm"].to_numpy() == pytest.approx(multipletests(part["pvalue"], method="holm")[1])
    whole = pair_tests(scores, pairs, "ttest", "score", key_columns=key_columns)
    assert (whole["pvalue"] == table["pvalue"]).all()
    assert whole["pvalue_holm"].to_numpy() == pytest.approx(multipletests(whole["pvalue"], method="holm")[1])
    assert (whole["pvalue_holm"] >= table["pvalue_holm"]).all() and (whole["pvalue_holm"] > table["pvalue_holm"]).any()
    assert set(table["correction"]) == {"holm"}
    with pytest.raises(ValueError, match="not key columns"):
        pair_tests(scores, pairs, "ttest", "score", key_columns=key_columns, family=("suite",))


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
    table = pair_tests(rows, [(a, b) for a in keys for b in keys], "mcnemar", "correct", key_columns=("condition",))
    cell = table.set_index(["condition_a", "condition_b"])
    assert cell.loc[("baseline", "in_context"), "pvalue_holm"] == cell.loc[("in_context", "baseline"), "pvalue_holm"]
    assert cell.loc[("baseline", "in_context"), "pvalue_holm"] < 0.05
    upper = table[table.condition_a < table.condition_b]
    assert upper["pvalue_holm"].to_numpy() == pytest.approx(multipletests(upper["pvalue"], method="holm")[1])
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
    table = pair_tests(rows, pairs, "ttest", "score").set_index(["step_a", "step_b"])
    assert table.loc[(0, 1), "pvalue"] == 1.0 and table.loc[(0, 1), "statistic"] == 0.0  # every difference 0
    assert np.isnan(table.loc[(2, 0), "pvalue"]) and np.isnan(table.loc[(2, 0), "pvalue_holm"])
    assert table.loc[(2, 0), "n"] == 1
    assert (table.loc[[(0, 0), (1, 1), (2, 2)], ["pvalue", "pvalue_holm"]] == 1.0).all().all()
    # the family is (0, 1) and (1, 0) only, both p = 1
    assert table.loc[(1, 0), "pvalue_holm"] == 1.0
    correct = rows.assign(correct=[1, 0, 1, 0, 1, 1])
    same = pair_tests(correct, pairs, "mcnemar", "correct").set_index(["step_a", "step_b"])
    assert same.loc[(0, 1), ["b", "c", "pvalue", "pvalue_holm"]].tolist() == [0, 0, 1.0, 1.0]
    assert bool(same.loc[(0, 1), "exact"])


def test_pair_tests_errors():
    rows = pd.DataFrame({"run": ["r", "r", "s"], "step": [0, 1, 0], "item_id": ["q0", "q0", "z"], "score": [0.0] * 3})
    with pytest.raises(ValueError, match="test must be one of"):
        pair_tests(rows, [(("r", 0), ("r", 1))], "wilcoxon", "score")
    with pytest.raises(ValueError, match="alternative must be one of"):
        pair_tests(rows, [(("r", 0), ("r", 1))], "ttest", "score", alternative="bigger")
    with pytest.raises(ValueError, match="missing"):
        pair_tests(rows, [(("r", 0), ("r", 1))], "ttest", "acc")
    with pytest.raises(ValueError, match="no pairs"):
        pair_tests(rows, [], "ttest", "score")
    with pytest.raises(ValueError, match="keys must have 2 values"):
        pair_tests(rows, [(("r",), ("r",))], "ttest", "score")
    with pytest.raises(ValueError, match="no rows for keys"):
        pair_tests(rows, [(("r", 0), ("r", 7))], "ttest", "score")
    with pytest.raises(ValueError, match="share no item"):
        pair_tests(rows, [(("r", 0), ("s", 0))], "mcnemar", "score")
    with pytest.raises(ValueError, match="repeated item_id"):
        pair_tests(pd.concat([rows, rows]), [(("r", 0), ("r", 1))], "ttest", "score")


def test_recompute_pvalue_from_item_rows(scored_items, own_choice):
    """Every row of a McNemar / one- and two-sided t-test table recomputes with statsmodels / scipy;
    the test, the value column and the key columns are read from the row unless given.  The variant is
    this test's own choice (McNemar: exact below 25 discordant items, counted from the items; the
    t-test's alternative as asked), not the one saved in the row."""
    mcq4 = scored_items[scored_items.suite == "mcq4"]
    pairs = checkpoint_pairs([0, 10, 20], "doc", "control")
    tables = [
        pair_tests(mcq4, pairs, "mcnemar", "acc").assign(metric="acc"),
        pair_tests(mcq4, pairs, "ttest", "gold_logprob_norm").assign(metric="gold_logprob_norm"),
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
    with pytest.raises(ValueError, match="metric"):
        recompute_pvalue({"metric": "loss", "run_a": "doc", "step_a": 0, "run_b": "doc", "step_b": 0}, scored_items)
    with pytest.raises(ValueError, match="test"):
        recompute_pvalue({"metric": "acc", "run_a": "doc", "step_a": 0, "run_b": "doc", "step_b": 0}, scored_items)
    with pytest.raises(ValueError, match="repeated item_id"):  # the step alone does not tell the runs apart
        recompute_pvalue(dict(tables[0].iloc[0]), mcq4, key_columns=("step",))


def test_direct_pvalue_definitions():
    assert direct_pvalue([1, 0, 1], [1, 0, 1], "mcnemar", exact=True) == 1.0
    assert direct_pvalue([-1.0, -2.0], [-1.0, -2.0], "ttest", alternative="greater") == 1.0
    x, y = [1, 1, 1, 0, 1], [0, 0, 1, 1, 1]
    expected = mcnemar(np.array([[2, 2], [1, 0]]), exact=True).pvalue
    assert direct_pvalue(x, y, "mcnemar", exact=True) == pytest.approx(expected)
    assert direct_pvalue(x, y, "ttest", alternative="two-sided") == pytest.approx(
        ttest_rel(x, y, alternative="two-sided").pvalue
    )


def test_bootstrap_ci_matches_scipy_percentile():
    values = np.array([1, 0, 1, 1, 0, 1, 1, 1, 0, 1], dtype=float)
    low, high = bootstrap_ci(values, confidence=0.9, n_resamples=200, seed=5)
    expected = bootstrap(
        (values,), np.mean, confidence_level=0.9, n_resamples=200, method="percentile", rng=np.random.default_rng(5)
    ).confidence_interval
    assert (low, high) == pytest.approx((expected.low, expected.high))
    assert low <= values.mean() <= high
    assert bootstrap_ci(values, n_resamples=200, seed=5) == bootstrap_ci(values, n_resamples=200, seed=5)
    with_nan = bootstrap_ci(np.append(values, np.nan), confidence=0.9, n_resamples=200, seed=5)
    assert with_nan == pytest.approx((low, high))


def test_bootstrap_ci_degenerate_inputs():
    assert bootstrap_ci([1.0, 1.0, 1.0], n_resamples=50) == (1.0, 1.0)
    assert bootstrap_ci([0.25], n_resamples=50) == (0.25, 0.25)
    assert bootstrap_ci([np.nan, 0.5], n_resamples=50) == (0.5, 0.5)
    assert all(np.isnan(bootstrap_ci([], n_resamples=50)))
    assert all(np.isnan(bootstrap_ci([np.nan], n_resamples=50)))


def test_mcnemar_sample_size_reaches_its_power_in_simulation():
    """At Connor's n, McNemar's test (statsmodels, chi-square with continuity correction, as
    mcnemar_pair uses above 25 discordant items) rejects in about ``power`` of simulated studies."""
    p_b, p_c = 0.22, 0.12  # the SORT pilot: in context vs no context, 26 and 14 of 120 items
    n = mcnemar_sample_size(p_b, p_c)
    assert 250 < n < 270
    assert mcnemar_sample_size(p_b, p_c, alpha=0.05 / 6) > n  # Holm's first step over 6 pairs
    counts = np.random.default_rng(0).multinomial(n, [p_b, p_c, 1 - p_b - p_c], size=2000)
    rejected = [mcnemar([[0, b], [c, 0]], exact=False, correction=True).pvalue < 0.05 for b, c, _ in counts]
    assert np.mean(rejected) == pytest.approx(0.8, abs=0.04)
    for bad in ((0.1, 0.1), (0.7, 0.5), (-0.1, 0.2)):
        with pytest.raises(ValueError, match="discordant proportions"):
            mcnemar_sample_size(*bad)


def test_bootstrap_difference_standard_errors_match_the_textbook_formulas():
    """Paired: SE of a mean difference is sd(d) / sqrt(n); unpaired: sqrt(var_a / n_a + var_b / n_b)
    (plug-in variances, as the bootstrap's), within the bootstrap's own noise at 4000 resamples."""
    rng = np.random.default_rng(3)
    a, b = rng.normal(1.0, 2.0, 300), rng.normal(0.0, 1.0, 300)
    paired = bootstrap_difference(a, b, paired=True, n_resamples=4000, seed=1)
    assert paired["effect"] == pytest.approx((a - b).mean())
    assert paired["se"] == pytest.approx(np.std(a - b) / np.sqrt(300), rel=0.06)
    assert paired["ci_low"] < paired["effect"] < paired["ci_high"]
    a2 = rng.normal(1.0, 2.0, 200)
    unpaired = bootstrap_difference(a2, b, paired=False, n_resamples=4000, seed=1)
    assert unpaired["effect"] == pytest.approx(a2.mean() - b.mean())
    assert unpaired["se"] == pytest.approx(np.sqrt(np.var(a2) / 200 + np.var(b) / 300), rel=0.06)
    # a normal-theory 95% interval, effect +/- 1.96 SE, and the percentile one nearly agree at this n
    half = 1.959964 * np.sqrt(np.var(a2) / 200 + np.var(b) / 300)
    assert unpaired["ci_low"] == pytest.approx(unpaired["effect"] - half, abs=0.1 * half)
    assert unpaired["ci_high"] == pytest.approx(unpaired["effect"] + half, abs=0.1 * half)


def test_bootstrap_difference_degenerate_and_bad_inputs():
    assert bootstrap_difference([1, 1, 1], [0, 0, 0]) == {"effect": 1.0, "ci_low": 1.0, "ci_high": 1.0, "se": 0.0}
    assert bootstrap_difference([2.0, 2.0], [1.0], paired=False)["se"] == 0.0
    with pytest.raises(ValueError, match="differ in length"):
        bootstrap_difference([1, 2], [1, 2, 3])
    with pytest.raises(ValueError, match="NaN"):
        bootstrap_difference([1, np.nan], [1, 2])
    with pytest.raises(ValueError, match="at least one value"):
        bootstrap_difference([], [1.0], paired=False)


def test_minimum_detectable_effect_is_z_sum_times_se():
    # z(0.975) = 1.959964, z(0.8) = 0.841621 (normal tables)
    assert minimum_detectable_effect(0.1) == pytest.approx(0.2801585, rel=1e-6)
    assert minimum_detectable_effect(0.1, alpha=0.01, power=0.9) == pytest.approx(0.1 * (2.575829 + 1.281552), rel=1e-6)
    with pytest.raises(ValueError, match="alpha and power"):
        minimum_detectable_effect(0.1, power=1.0)
    with pytest.raises(ValueError, match="negative"):
        minimum_detectable_effect(-0.1)

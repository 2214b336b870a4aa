"""McNemar and paired t-tests against statsmodels/scipy; defined degenerate cases; Holm; bootstrap."""

import numpy as np
import pandas as pd
import pytest
from scipy.stats import bootstrap, ttest_rel
from statsmodels.stats.contingency_tables import mcnemar
from statsmodels.stats.multitest import multipletests

from knowlab.core.stats import (
    bootstrap_ci,
    checkpoint_pairs,
    matched_pairs,
    mcnemar_for_run,
    mcnemar_pair,
    mcnemar_table,
    recompute_pvalue,
    ttest_for_run,
    ttest_pair,
    ttest_table,
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
    table = mcnemar_table(correct, pairs)
    assert len(table) == 9 + 3
    diag = table[(table.run_a == table.run_b) & (table.step_a == table.step_b)]
    assert (diag["pvalue"] == 1).all() and (diag["pvalue_holm"] == 1).all()
    assert (table["pvalue_holm"] >= table["pvalue"] - 1e-12).all()
    sym = table[(table.run_a == "doc") & (table.run_b == "doc")].set_index(["step_a", "step_b"])["pvalue_holm"]
    assert sym[(0, 20)] == sym[(20, 0)] < 0.05
    assert set(table["correction"]) == {"holm"}


def test_mcnemar_for_run_selects_suite_and_control():
    rows = []
    for run in ("doc", "control"):
        for step in (0, 5):
            for i in range(30):
                rows.append(
                    {"run": run, "step": step, "suite": "mcq4", "item_id": f"q{i}", "acc": float((i + step) % 3 == 0)}
                )
                rows.append({"run": run, "step": step, "suite": "fiction_doc", "item_id": f"d{i}", "acc": None})
    items = pd.DataFrame(rows)
    table = mcnemar_for_run(items, "doc", "control", "mcq4")
    assert len(table) == 4 + 2 and set(table["suite"]) == {"mcq4"} and (table["n"] == 30).all()
    alone = mcnemar_for_run(items[items["run"] == "doc"], "doc", "control", "mcq4")
    assert len(alone) == 4


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


def _scores(seed=3, n=60):
    """Item rows of runs doc/control at steps 0, 10, 20: acc and gold_logprob_norm; doc improves."""
    rng = np.random.default_rng(seed)
    rows = []
    for run, gain in (("doc", 0.04), ("control", 0.0)):
        for step in (0, 10, 20):
            for i in range(n):
                logprob = min(-0.01, -1.2 + gain * step + rng.normal(0, 0.3))
                rows.append(
                    {
                        "run": run,
                        "step": step,
                        "suite": "mcq4",
                        "item_id": f"q{i}",
                        "acc": float(logprob > np.log(0.4)),
                        "gold_logprob_norm": logprob,
                    }
                )
                rows.append(
                    {
                        "run": run,
                        "step": step,
                        "suite": "fiction_qa",
                        "item_id": f"f{i}",
                        "acc": None,
                        "gold_logprob_norm": None,
                    }
                )
    return pd.DataFrame(rows)


def test_ttest_table_holm_over_ordered_pairs():
    items = _scores()
    scores = items[items.suite == "mcq4"].rename(columns={"gold_logprob_norm": "score"})
    pairs = checkpoint_pairs([0, 10, 20], "doc") + matched_pairs([0, 10, 20], "doc", "control")
    table = ttest_table(scores, pairs)
    assert list(table.columns) == [
        "run_a",
        "step_a",
        "run_b",
        "step_b",
        "n",
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


def test_two_sided_ttest_table_counts_each_unordered_pair_once():
    items = _scores()
    scores = items[items.suite == "mcq4"].rename(columns={"gold_logprob_norm": "score"})
    table = ttest_table(scores, checkpoint_pairs([0, 10, 20], "doc"), alternative="two-sided")
    upper = table[table.step_a < table.step_b]
    expected = dict(zip(zip(upper.step_a, upper.step_b), multipletests(upper["pvalue"], method="holm")[1]))
    for row in table[table.step_a != table.step_b].itertuples():
        assert row.pvalue_holm == pytest.approx(expected[tuple(sorted((row.step_a, row.step_b)))])


def test_ttest_for_run_selects_suite_metric_and_control():
    items = _scores()
    table = ttest_for_run(items, "doc", "control", "mcq4")
    assert len(table) == 9 + 3 and (table["n"] == 60).all()
    assert set(table["suite"]) == {"mcq4"} and set(table["metric"]) == {"gold_logprob_norm"}
    assert set(table["alternative"]) == {"greater"}
    assert len(ttest_for_run(items[items.run == "doc"], "doc", "control", "mcq4")) == 9


def test_recompute_pvalue_reproduces_every_saved_row():
    items = _scores()
    for table in (
        mcnemar_for_run(items, "doc", "control", "mcq4", exact_below=25),
        ttest_for_run(items, "doc", "control", "mcq4", "greater"),
        ttest_for_run(items, "doc", "control", "mcq4", "two-sided"),
    ):
        for _, row in table.iterrows():
            assert recompute_pvalue(row, items) == pytest.approx(row["pvalue"], rel=1e-9)
    assert mcnemar_for_run(items, "doc", "control", "mcq4")["exact"].nunique() == 2  # both variants checked
    with pytest.raises(ValueError, match="metric"):
        recompute_pvalue({"metric": "loss", "suite": "mcq4"}, items)


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

"""McNemar tests with statsmodels; defined diagonal; Holm correction."""

import numpy as np
import pandas as pd
import pytest
from statsmodels.stats.contingency_tables import mcnemar

from knowlab.stats import checkpoint_pairs, matched_pairs, mcnemar_for_run, mcnemar_pair, mcnemar_table


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
                rows.append({"run": run, "step": step, "suite": "mcq4", "item_id": f"q{i}", "acc": float((i + step) % 3 == 0)})
                rows.append({"run": run, "step": step, "suite": "fiction_doc", "item_id": f"d{i}", "acc": None})
    items = pd.DataFrame(rows)
    table = mcnemar_for_run(items, "doc", "control", "mcq4")
    assert len(table) == 4 + 2 and set(table["suite"]) == {"mcq4"} and (table["n"] == 30).all()
    alone = mcnemar_for_run(items[items["run"] == "doc"], "doc", "control", "mcq4")
    assert len(alone) == 4

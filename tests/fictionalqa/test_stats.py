"""FictionalQA paired-test tables of one run on one suite: items of the suite, the run's checkpoint
matrix and matched steps vs the control, the saved columns; every saved p-value recomputes."""

import pandas as pd
import pytest

from knowlab.core.stats import recompute_pvalue
from knowlab.fictionalqa.stats import mcnemar_for_run, run_pairs, ttest_for_run


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
    assert list(table.columns) == [
        "run_a",
        "step_a",
        "run_b",
        "step_b",
        "n",
        "b",
        "c",
        "statistic",
        "pvalue",
        "pvalue_holm",
        "exact",
        "correction",
        "suite",
        "metric",
    ]
    assert set(table["metric"]) == {"acc"}
    alone = mcnemar_for_run(items[items["run"] == "doc"], "doc", "control", "mcq4")
    assert len(alone) == 4


def test_ttest_for_run_selects_suite_metric_and_control(scored_items):
    table = ttest_for_run(scored_items, "doc", "control", "mcq4")
    assert len(table) == 9 + 3 and (table["n"] == 60).all()
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
        "suite",
        "metric",
    ]
    assert set(table["suite"]) == {"mcq4"} and set(table["metric"]) == {"gold_logprob_norm"}
    assert set(table["alternative"]) == {"greater"}
    assert len(ttest_for_run(scored_items[scored_items.run == "doc"], "doc", "control", "mcq4")) == 9


def test_recompute_pvalue_reproduces_every_saved_row(scored_items, own_choice):
    """Each saved p-value, recomputed with the variant this test chooses (McNemar: exact below 25 discordant
    items, counted from the items; t-test: the alternative asked for), not the one saved in the row."""
    for table, alternative in (
        (mcnemar_for_run(scored_items, "doc", "control", "mcq4", exact_below=25), None),
        (ttest_for_run(scored_items, "doc", "control", "mcq4", "greater"), "greater"),
        (ttest_for_run(scored_items, "doc", "control", "mcq4", "two-sided"), "two-sided"),
    ):
        for _, row in table.iterrows():
            ours = own_choice(row, scored_items, within=("suite",), alternative=alternative)
            assert recompute_pvalue(ours, scored_items, within=("suite",)) == pytest.approx(row["pvalue"], rel=1e-9)
    assert mcnemar_for_run(scored_items, "doc", "control", "mcq4")["exact"].nunique() == 2  # both variants checked
    with pytest.raises(ValueError, match="cannot recompute a p-value: metric 'loss' is not a column of the item rows"):
        recompute_pvalue({"metric": "loss", "suite": "mcq4"}, scored_items, within=("suite",))


def test_run_pairs_matrix_then_control_at_matched_steps(scored_items):
    assert run_pairs(scored_items, "doc", "control") == [
        *[(("doc", a), ("doc", b)) for a in (0, 10, 20) for b in (0, 10, 20)],
        *[(("doc", s), ("control", s)) for s in (0, 10, 20)],
    ]
    assert len(run_pairs(scored_items, "control", "control")) == 9  # the control is not compared with itself
    assert len(run_pairs(scored_items, "doc", None)) == 9
    assert run_pairs(scored_items, "nope", "control") == []
    with pytest.raises(ValueError, match="pair_tests got no pairs"):
        mcnemar_for_run(scored_items, "nope", "control", "mcq4")

"""Grounding tables and across-fine-tuning statistics on hand-made item rows."""

import hashlib

import numpy as np
import pandas as pd
import pytest
from statsmodels.stats.multitest import multipletests

from knowlab.core.stats import direct_pvalue, recompute_pvalue
from knowlab.grounding import analysis
from knowlab.grounding.conditions import select_question_ids
from knowlab.grounding.settings import GroundingConditionSettings, condition_names, condition_spec

CFG = GroundingConditionSettings(
    budget=1024, position="random", sweep_budgets=(512, 1024), sweep_positions=("start", "random")
)


def rows_for(model, condition, f1s, accuracy, popularity):
    return pd.DataFrame(
        {
            "dataset": "kaist",
            "model": model,
            "condition": condition,
            "item_id": [f"Q{i}" for i in range(len(f1s))],
            "precision": f1s,
            "recall": f1s,
            "f1": f1s,
            "answer_accuracy": accuracy,
            "factor_popularity": popularity,
            "context_tokens": 300.0,
            "n_distractors": 0,
        }
    )


@pytest.fixture()
def rows():
    pop = ["high", "high", "low", "low"]
    parts = [
        rows_for("m", "original_gold", [1.0, 0.5, 0.5, 0.0], [1, 1, 0, np.nan], pop),
        rows_for("m", "original_dist", [0.5, 0.5, 0.0, 0.0], [1, 0, 0, np.nan], pop),
        rows_for("m", "conflict_gold", [1.0, 1.0, 0.5, 0.5], [1, 1, 1, np.nan], pop),
        rows_for("m", "conflict_dist", [1.0, 0.0, 0.5, 0.5], [0, 1, 1, np.nan], pop),
        rows_for("m", "no_context", [0.0, 0.0, 0.0, 0.0], [0, 0, 1, np.nan], pop),
    ]
    return pd.concat(parts, ignore_index=True)


def test_conditions_named_once_and_specified():
    names = condition_names(CFG)
    assert names == [
        "original_gold",
        "original_dist",
        "conflict_gold",
        "conflict_dist",
        "no_context",
        "length_512",
        "position_start",
    ]
    budget, position = CFG.budget, CFG.position
    assert condition_spec("conflict_dist", budget, position) == {
        "version": "conflict",
        "budget": 1024,
        "position": "random",
    }
    assert condition_spec("position_start", budget, position) == {
        "version": "original",
        "budget": 1024,
        "position": "start",
    }
    assert condition_spec("no_context", budget, position)["version"] is None
    with pytest.raises(ValueError, match="unknown grounding condition"):
        condition_spec("length_x", budget, position)
    # the Gold conditions read no distractor setting; the others name the one they lack
    assert condition_spec("original_gold", None, None) == {"version": "original", "budget": None, "position": None}
    with pytest.raises(ValueError, match=r"'original_dist' needs grounding\.distractors\.budget"):
        condition_spec("original_dist", None, None)


def test_question_sample_is_seeded_and_order_free():
    items = [{"item_id": f"Q{i}"} for i in range(30)]
    a = select_question_ids(items, 5, seed=1)
    assert a == select_question_ids(items[::-1], 5, seed=1) and len(set(a)) == 5
    assert a != select_question_ids(items, 5, seed=2)
    assert len(select_question_ids(items, None, seed=1)) == 30


def test_question_sample_spreads_over_the_documents_its_findings_are_tested_at():
    """FictionalQA questions share their document (the findings' unit): 12 documents x 4 questions, a
    sample of 10 holds 10 documents, of 30 every document 2 or 3 times; a benchmark question (no
    fiction_id) is its own document, so a plain ranking is left as it was."""
    items = [{"item_id": f"d{d:02d}_q{q}", "extra": {"fiction_id": f"d{d:02d}"}} for d in range(12) for q in range(4)]
    ten = select_question_ids(items, 10, seed=1)
    assert len({i[:3] for i in ten}) == 10 and ten == select_question_ids(items[::-1], 10, seed=1)
    per_document = pd.Series([i[:3] for i in select_question_ids(items, 30, seed=1)]).value_counts()
    assert len(per_document) == 12 and set(per_document) == {2, 3}
    plain = [{"item_id": i["item_id"]} for i in items]
    assert (
        select_question_ids(plain, 10, seed=1)
        == sorted((i["item_id"] for i in plain), key=lambda i: hashlib.sha256(f"1:{i}".encode()).hexdigest())[:10]
    )


def test_table1_table12_reduction_and_factors(rows, stats_settings):
    summary = analysis.summarize(rows, ["dataset", "model", "condition"], stats=stats_settings)
    table1 = analysis.table1(summary)
    assert list(table1.index.get_level_values("condition")) == [
        "Original-Gold",
        "Original-Dist",
        "Conflict-Gold",
        "Conflict-Dist",
    ]
    assert table1.loc[("kaist", "Original-Gold"), "m"] == pytest.approx(50.0)
    table12 = analysis.answer_accuracy_table(summary)  # free-form (NaN) questions are left out
    assert table12.loc[("kaist", "m"), "Original-Gold"] == pytest.approx(200 / 3)
    assert table12.loc[("kaist", "m"), "No context"] == pytest.approx(100 / 3)
    rates = analysis.reduction_rates(summary).set_index("version")
    assert rates.loc["original", "reduction_rate"] == pytest.approx(100 * (50 - 25) / 50)
    assert rates.loc["conflict", "reduction_rate"] == pytest.approx(100 * (75 - 50) / 75)
    factors = analysis.factor_table(rows, "original_gold")
    assert factors.loc[("kaist", "m"), "popularity=high"] == pytest.approx(75.0)
    assert factors.loc[("kaist", "m"), "popularity=low"] == pytest.approx(25.0)


def test_follow_rates_and_mcnemar_against_the_control():
    records = []
    for run, step, responses in [
        ("doc", 4, ["It was Ezra Mott.", "Albert Coyle did.", "Ezra Mott.", "no idea", "Mott, Ezra Mott"]),
        ("control", 4, ["no idea", "no idea", "Ezra Mott.", "Albert Coyle", "none"]),
    ]:
        for i, response in enumerate(responses):
            records.append(
                {
                    "run": run, "step": step, "item_id": f"q{i}", "condition": "conflict_gold", "side": "train" if run == "doc" else None,
                    "response": response, "answer_accuracy": float("ezra mott" in response.lower()), "f1": 0.5,
                }
            )  # fmt: skip
    rows = analysis.follow_rates(pd.DataFrame(records), {f"q{i}": ["Albert Coyle"] for i in range(5)})
    assert list(rows.follows_training[:5]) == [0, 1, 0, 0, 0] and list(rows.follows_context[:5]) == [1, 0, 1, 0, 1]
    rates = analysis.finetune_rates(rows)
    assert rates.loc[(rates.run == "doc"), "follows_context"].item() == pytest.approx(60.0)
    table = analysis.finetune_mcnemar(rows, ["doc"], "control", [4], 25)
    assert set(table.metric) == {"follows_context", "follows_training"} and (table.correction == "holm").all()
    for record in table.to_dict("records"):
        a = rows[rows.run == "doc"][record["metric"]].to_numpy()
        b = rows[rows.run == "control"][record["metric"]].to_numpy()
        exact = bool((a != b).sum() < 25)  # the exact test below 25 discordant items
        assert record["pvalue"] == pytest.approx(direct_pvalue(a, b, "mcnemar", exact)) and record["exact"] == exact


@pytest.mark.slow
def test_finetune_mcnemar_holm_per_run_condition_and_metric(own_choice):
    """Matched steps vs the control on each run's training questions; Holm over the steps of each
    (run, condition, metric); a metric with no value in a condition is left out; no control, no table."""
    rng = np.random.default_rng(0)
    records = []
    for run in ("doc", "event", "control"):
        for step in (0, 6, 12):
            for condition in ("conflict_gold", "original_gold"):
                for i in range(40):
                    records.append(
                        {
                            "run": run, "step": step, "condition": condition, "item_id": f"q{i}",
                            "side": None if run == "control" else ("train" if (i + (run == "event")) % 2 else "val"),
                            "follows_context": float(rng.random() < (0.2 + 0.05 * step if run != "control" else 0.3)),
                            "follows_training": np.nan if condition == "original_gold" else float(rng.random() < 0.5),
                        }
                    )  # fmt: skip
    rows = pd.DataFrame(records)
    table = analysis.finetune_mcnemar(rows, ["doc", "event"], "control", [0, 6, 12], 25)
    assert list(table.columns) == [
        "run_a", "step_a", "run_b", "step_b", "n", "b", "c", "statistic", "pvalue", "pvalue_holm", "exact",
        "correction", "condition", "metric", "decomposer", "evaluator",
    ]  # fmt: skip
    assert set(table.decomposer) == set(table.evaluator) == {"not recorded"}  # rows without the method columns
    families = table.groupby(["run_a", "condition", "metric"], sort=False)
    assert list(families.groups) == [
        ("doc", "conflict_gold", "follows_context"),
        ("doc", "conflict_gold", "follows_training"),
        ("doc", "original_gold", "follows_context"),
        ("event", "conflict_gold", "follows_context"),
        ("event", "conflict_gold", "follows_training"),
        ("event", "original_gold", "follows_context"),
    ]
    for (run, condition, metric), family in families:
        assert family["step_a"].tolist() == family["step_b"].tolist() == [0, 6, 12]
        assert (family["run_b"] == "control").all() and (family["n"] == 20).all()
        assert family["pvalue_holm"].to_numpy() == pytest.approx(multipletests(family["pvalue"], method="holm")[1])
        trained = rows.loc[(rows.run == run) & (rows.side == "train"), "item_id"]
        part = rows[rows.item_id.isin(set(trained))]
        for record in family.to_dict("records"):
            ours = own_choice(record, part, within=("condition",))
            assert recompute_pvalue(ours, part, within=("condition",)) == pytest.approx(record["pvalue"])
    assert (table["pvalue_holm"] < 0.05).any()
    assert analysis.finetune_mcnemar(rows, ["doc"], None, [0, 6, 12], 25).empty


def test_original_answers_of_each_question():
    rows = pd.DataFrame(
        {
            "item_id": ["q0", "q0", "q1", "q0"],
            "condition": ["conflict_gold", "original_gold", "original_gold", "original_gold"],
            "answers": [np.array(["B"]), np.array(["A", "a"]), np.array(["C"]), np.array(["Z"])],
        }
    )
    assert analysis.original_answers(rows) == {"q0": ["A", "a"], "q1": ["C"]}

"""The design planner (knowlab.findings.planner, ``make plan``; issue 56): what each claim's test can reach on a
config, from the config and the corpus alone.  Its agreement with a finished run of config/test.yaml is
tested with that run (tests/workflow/test_pipeline.py)."""

from pathlib import Path

import pandas as pd
import pytest

from knowlab.config import load_config
from knowlab.findings import NOT_TESTED
from knowlab.findings.planner import Assumptions, disagreements, main, plan_design

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def default_plan():
    return plan_design(load_config(), ROOT)


def test_the_default_can_decide_every_fictionalqa_claim_whose_factor_it_has(default_plan):
    """Issue 56: on the default (24 events, checkpoints 16 and 32) every FictionalQA comparison can reach alpha
    after Holm but the model-size trends (one base model); the lines no design can test name the factor
    the embedded data lack."""
    lines = default_plan.findings
    fictionalqa = [f for f in lines if f.study == "FictionalQA"]
    untestable = [f for f in fictionalqa if f.min_p is None or f.min_p >= f.alpha]
    assert [f.claim for f in untestable] == [
        "Larger base models fit the training documents faster",
        "Larger base models gain more MCQ-4 accuracy",
    ]
    missing = [f for f in lines if f.min_p is None]
    assert all(f.status == NOT_TESTED for f in missing) and len(missing) <= 10
    factors = ("base model(s)", "excerpt length", "segment length", "factor_contexts", "factor_answer_type",
               "factor_popularity")  # fmt: skip
    assert all(any(factor in f.detail for factor in factors) for f in missing), [f.detail for f in missing]
    event = next(
        f for f in lines if f.claim == "MCQ-4 accuracy on trained questions above the webtext-only control (event)"
    )
    assert (event.unit, event.n_clusters) == ("event", 16) and event.min_p < 0.001 and event.mde > 0


def test_every_fiction_run_of_the_default_trains_on_each_document_it_is_scored_on(default_plan):
    """Issue 56: the plan replays each fiction run's own sampler; on the default (one style of each event)
    every scored training document is drawn by the last checkpoint, at 1.5 epochs of the Doc split's
    24, 1.1 of the Event split's 32 and 2.25 of the Fictsheets split's 16 (with all five styles the Doc
    run had drawn 5 of its 24 by step 32), and the plan's header says so."""
    exposure = default_plan.exposure.set_index(["run", "step"])
    last = exposure.xs(32, level="step")
    assert (last["scored_trained"] == last["scored_training"]).all()
    assert last["scored_training"].to_dict() == {"doc": 24, "event": 32, "fictsheets": 16}
    assert last["epochs"].to_dict() == pytest.approx({"doc": 1.5, "event": 36 / 32, "fictsheets": 2.25})
    assert (exposure.xs(16, level="step")["epochs"] < last["epochs"]).all()
    assert any(s.startswith("fiction exposure, doc (seed 1234") for s in default_plan.sources)


def test_the_minimum_detectable_effect_follows_the_stated_variance(default_plan):
    """Twice the assumed SD of an accuracy gives twice the MDE of every FictionalQA accuracy line (the same
    draws, scaled; SORT's parametric rows are 0/1, as Tango's interval needs), and the design's counts do
    not move."""
    base = default_plan.assumptions
    wide = Assumptions(sd={**base.sd, "accuracy": 2 * base.sd["accuracy"]})
    one = default_plan.design()
    two = plan_design(load_config(), ROOT, assumptions=wide).design()
    assert disagreements(one, two) == []
    accuracy = (one["scale"] == "accuracy") & one["mde"].notna() & (one["study"] == "FictionalQA")
    assert accuracy.sum() >= 3
    assert two.loc[accuracy, "mde"].to_numpy() == pytest.approx(2 * one.loc[accuracy, "mde"].to_numpy())
    other = one["scale"] != "accuracy"
    assert (two.loc[other, "mde"].fillna(-1) == one.loc[other, "mde"].fillna(-1)).all()


def test_the_command_prints_one_line_per_comparison(tmp_path, capsys):
    out = tmp_path / "design.csv"
    assert (
        main(["--configfile", str(ROOT / "config" / "test.yaml"), "--results", str(tmp_path), "--csv", str(out)]) == 0
    )
    printed = capsys.readouterr().out.splitlines()
    design = pd.read_csv(out)
    assert printed[0].startswith("Design of config/config.yaml + ")
    claims = [line for line in printed if line.startswith(("FictionalQA:", "SORT:", "Grounding"))]
    assert len(claims) == len(design) == 49
    assert printed[-1].startswith("planned in ") and printed[-1].endswith("s, no model run")


def test_a_finished_run_that_ties_may_reach_less_never_more():
    """disagreements: a run's smallest p above the plan's (its values tie) agrees; below it, or another count, not."""
    plan = pd.DataFrame({"study": ["S"], "claim": ["c"], "unit": ["event"], "n_clusters": [24], "n": [240],
                         "seeds": [1], "alpha": [0.05], "min_p": [1e-4]})  # fmt: skip
    assert disagreements(plan, plan.assign(min_p=0.5)) == []
    assert "below the design's" in disagreements(plan, plan.assign(min_p=1e-5))[0]
    assert "n_clusters planned 24, run 23" in disagreements(plan, plan.assign(n_clusters=23))[0]


def test_the_catalogue_names_the_default_where_the_planner_finds_it_can_decide(default_plan):
    """docs/claims.md's "Decided by" (Claim.configs) names the default exactly for the claims of which the
    default's design can test a line."""
    from knowlab.findings import CLAIMS

    testable = {f.claim_id for f in default_plan.findings if f.min_p is not None and f.min_p < f.alpha}
    named = {entry.id for entry in CLAIMS if "default" in entry.configs.replace("not the default", "")}
    assert named == testable


def test_the_plan_agrees_with_the_default_run(default_plan):
    """docs/default-findings-design.csv is the design table of the default run docs/default.md reports
    (issue 56): the plan has its units, values and seeds line by line, and a smallest p the run reached
    or beat where its values tie (every document's exact match 0, grounding F1 equal in most documents).
    It fails when the default's design changes without a new run."""
    run = pd.read_csv(ROOT / "docs" / "default-findings-design.csv")
    assert disagreements(default_plan.design(), run) == []

"""The FictionalQA rules' steps (knowlab.fictionalqa.steps; the skeleton every study shares:
tests/test_skeleton.py): one script per rule, the stats steps write what the statistics compute (the
base model as step 0 of every run) and the figure steps draw from those tables."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from pandas.testing import assert_frame_equal

from knowlab.core.checkpoints import BASE_RUN, with_step0
from knowlab.core.io import read_parquets, write_parquet
from knowlab.core.stats import StatsSettings
from knowlab.fictionalqa.stats import mcnemar_for_run, ttest_for_run
from knowlab.fictionalqa.steps import figures, stats

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = sorted((ROOT / "scripts").glob("fictionalqa_*.py"))


def test_there_are_fictionalqa_scripts():
    """Every FictionalQA rule's script, named after its rule (rules/fictionalqa.smk)."""
    names = {p.stem for p in SCRIPTS}
    assert names == {
        f"fictionalqa_{step}"
        for step in (
            "webtext", "corpus", "rank_distractors", "mcq", "lm_eval_tasks", "real_qa", "split", "evaluate",
            "paired_tests", "summary", "figure", "figure_pvalues", "models", "across_models",
        )
    }  # fmt: skip


def _evaluated_once(scored_items):
    """The item rows as the workflow writes them: the base model's once (run base_model, step 0),
    then each run's later checkpoints."""
    base = scored_items[(scored_items.run == "doc") & (scored_items.step == 0)].assign(run=BASE_RUN)
    return pd.concat([base, scored_items[scored_items.step > 0]], ignore_index=True)


def test_paired_tests_put_the_base_model_at_step_zero_of_every_run(scored_items):
    items = _evaluated_once(scored_items)
    # the slice of rule fictionalqa_paired_tests: McNemar's threshold and the t-test's alternative
    settings = StatsSettings.from_param({"mcnemar_exact_below": 25, "ttest_alternative": "greater"})
    tables = stats.paired_tests(items, ["doc", "control"], "doc", "control", "mcq4", settings)
    rows = with_step0(items, ["doc", "control"])
    assert tables.keys() == {"mcnemar", "ttest"}
    assert_frame_equal(tables["mcnemar"], mcnemar_for_run(rows, "doc", "control", "mcq4", 25), check_exact=True)
    assert_frame_equal(tables["ttest"], ttest_for_run(rows, "doc", "control", "mcq4", "greater"), check_exact=True)
    # the run's step 0 against the control's step 0: the same base-model rows, nothing discordant
    step0 = tables["mcnemar"].query("step_a == 0 and step_b == 0 and run_b == 'control'")
    assert len(step0) == 1 and (step0[["b", "c"]] == 0).all(axis=None)


@pytest.mark.slow
def test_pvalue_figure_draws_the_saved_table(scored_items, tmp_path):
    """The figure rule's path: the stats step's table written and read back, then drawn."""
    from knowlab.core.plotting import read_description

    settings = StatsSettings(
        confidence=0.95, bootstrap_resamples=200, permutation_resamples=99, mcnemar_exact_below=25,
        ttest_alternative="greater", seed=0,
    )  # fmt: skip
    tables = stats.paired_tests(_evaluated_once(scored_items), ["doc", "control"], "doc", "control", "mcq4", settings)
    write_parquet(tmp_path / "mcq4_mcnemar.parquet", tables["mcnemar"])
    pdf, png = tmp_path / "mcq4_mcnemar.pdf", tmp_path / "mcq4_mcnemar.png"
    figures.draw_pvalues(read_parquets([tmp_path / "mcq4_mcnemar.parquet"]), "doc", "mcq4", pdf, png, note="n")
    shown = read_description(png)
    assert shown["title"].startswith("Doc split: MCQ-4") and "McNemar" in shown["title"]
    assert [p["images"] for p in shown["panels"]] == [1, 1] and pdf.read_bytes().startswith(b"%PDF")

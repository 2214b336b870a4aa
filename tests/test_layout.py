"""The results layout (knowlab.layout): each table's path, regex and glob agree, and the job lists a
config expands to are the ones the rules expand."""

import re
from pathlib import Path

import pytest

from knowlab import findings, layout
from knowlab.config import load_config
from knowlab.core.checkpoints import replicate_run, replicated_run, run_seed
from knowlab.layout import Layout, training_model, training_seeds

CONFIG = Path(__file__).resolve().parents[1] / "config"
TABLES = [value for value in vars(layout).values() if isinstance(value, layout.Table)]


@pytest.mark.parametrize("table", TABLES, ids=lambda t: t.template)
def test_a_tables_path_regex_and_glob_agree(table):
    wildcards = {
        name: 7 if name in layout.NUMERIC else f"x_{name}" for name in re.findall(r"\{(\w+)\}", table.template)
    }
    relative = table.relative(**wildcards)
    assert table.path(**wildcards) == f"results/{relative}" and table.smk.startswith("results/")
    assert re.fullmatch(table.regex, relative) and Path(relative).match(table.glob)
    assert not re.fullmatch(table.regex, f"other/{relative}")


def test_a_table_with_a_wildcard_set():
    kaist = layout.GROUNDING_SCORES.fix(dataset="kaist")
    assert kaist.template == "grounding/kaist/scores/{model}.parquet" and kaist.rule == "grounding_score"
    assert re.fullmatch(kaist.regex, "grounding/kaist/scores/m.parquet")
    assert not re.fullmatch(kaist.regex, "grounding/fiction/scores/m.parquet")


def test_the_test_configs_expansions():
    plan = Layout(load_config(CONFIG / "test.yaml"))
    assert plan.runs == ["doc", "event", "fictsheets", "control"] and plan.steps == [0, 6]
    assert plan.ft_models == ["tiny", "tiny-wide"]
    assert plan.trainings == {
        **{
            f"fictionalqa/{model}/finetune/{run}": ["step-6"]
            for model in ("tiny", "tiny-wide")
            for run in ("doc", "event", "fictsheets", "control")
        },
        "sort/parametric/books": ["epoch-1", "epoch-2"],
        "sort/parametric/instructions": ["epoch-1", "epoch-2"],
    }
    assert plan.checkpoints == 2 * 5 and plan.grounding_finetune
    assert plan.run_items("tiny-wide", "doc", "control") == [
        "results/fictionalqa/tiny-wide/evaluate/base_model/step-0.parquet",
        "results/fictionalqa/tiny-wide/evaluate/doc/step-6.parquet",
        "results/fictionalqa/tiny-wide/evaluate/control/step-6.parquet",
    ]
    assert training_model("fictionalqa/tiny-wide/finetune/doc") == "tiny-wide"
    assert training_model("sort/parametric/books") is None
    inputs = plan.findings_inputs("base_model")
    assert {"results/fictionalqa/models.csv", "results/fictionalqa/tiny/evaluate/doc/step-6.parquet"} <= set(inputs)
    assert "results/sort/parametric/books/evaluate/epoch-2_segment_nll.parquet" in inputs
    assert "results/grounding/rows.parquet" in inputs and "results/fictionalqa/splits/event.json" in inputs
    off = Layout(load_config(CONFIG / "test.yaml", {"sort": {"parametric": {"enabled": False}}}))
    assert not off.parametric_runs and all("parametric" not in t for t in off.trainings)


def test_findings_read_only_their_rules_inputs(tmp_path):
    settings = findings.FindingsSettings.from_config(load_config(CONFIG / "test.yaml"))
    declared = Layout(load_config(CONFIG / "test.yaml")).findings_inputs("base_model")
    # every table but the rows the grounding claims read; the others are absent: their claims are not tested
    undeclared = [tmp_path / path for path in declared if "grounding" not in path]
    with pytest.raises(ValueError, match="results/grounding/rows.parquet is not an input of rule findings"):
        findings.collect(tmp_path / "results", settings, model="m", inputs=undeclared)
    found = findings.collect(tmp_path / "results", settings, model="m", inputs=[tmp_path / p for p in declared])
    assert {f.status for f in found} == {findings.NOT_TESTED}


def test_training_seeds_multiply_every_run_and_leave_the_first_seeds_names():
    plan = Layout(load_config(CONFIG / "test.yaml", {"finetune": {"seeds": [5, 7]}}))
    one = Layout(load_config(CONFIG / "test.yaml"))
    assert one.seeds == [load_config(CONFIG / "test.yaml")["seed"]] and one.replicate_runs == []
    assert plan.seeds == [5, 7] and plan.runs == one.runs
    assert plan.replicate_runs == ["doc.seed-7", "event.seed-7", "fictsheets.seed-7", "control.seed-7"]
    assert set(plan.trainings) == set(one.trainings) | {
        f"fictionalqa/{model}/finetune/{run}.seed-7"
        for model in ("tiny", "tiny-wide")
        for run in ("doc", "event", "fictsheets", "control")
    }
    # every seed's checkpoints are evaluated; the probes (probe_models: tiny) read the first seed's
    assert plan.checkpoints == 2 * (1 + 8) and plan.probe_checkpoints == one.probe_checkpoints == 5
    assert "results/fictionalqa/tiny-wide/evaluate/control.seed-7/step-6.parquet" in plan.findings_inputs("base_model")
    assert replicate_run("doc", 5, [5, 7]) == "doc" and replicate_run("doc", 7, [5, 7]) == "doc.seed-7"
    assert replicated_run("style_news.seed-7") == "style_news" and run_seed("doc.seed-7", [5, 7]) == 7
    assert run_seed("doc", [5, 7]) == 5
    with pytest.raises(ValueError, match="training seed 6 is not one of finetune.seeds"):
        replicate_run("doc", 6, [5, 7])
    with pytest.raises(ValueError, match="finetune.seeds lists a seed twice"):
        training_seeds({"seed": 1, "finetune": {"seeds": [3, 3]}})

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
    # tiny-wide trains Doc and no control (finetune.models.tiny-wide.finetune: runs [doc], control false)
    assert plan.model_runs == {"tiny": ["doc", "event", "fictsheets", "control"], "tiny-wide": ["doc"]}
    assert plan.trainings == {
        **{
            f"fictionalqa/{model}/finetune/{run}": ["step-6"]
            for model in ("tiny", "tiny-wide")
            for run in plan.model_runs[model]
        },
        "sort/parametric/books": ["epoch-1", "epoch-2"],
        "sort/parametric/instructions": ["epoch-1", "epoch-2"],
    }
    # the probes: tiny's base model, Doc run and control (finetune.probe_models [tiny], probe_runs)
    assert plan.checkpoints == 5 + 2 and plan.probe_checkpoints == 3 and plan.grounding_finetune
    assert plan.run_items("tiny-wide", "doc", "control") == [
        "results/fictionalqa/tiny-wide/evaluate/base_model/step-0.parquet",
        "results/fictionalqa/tiny-wide/evaluate/doc/step-6.parquet",
        "results/fictionalqa/tiny-wide/evaluate/control/step-6.parquet",
    ]
    assert training_model("fictionalqa/tiny-wide/finetune/doc") == "tiny-wide"
    assert training_model("sort/parametric/books") is None
    named = plan.findings_inputs("base_model")
    assert list(named) == ["sort_rows", "item_tables", "models", "splits", "corpus", "parametric", "grounding_rows"]
    assert named["models"] == ["results/fictionalqa/models.csv"] and named["grounding_rows"] == [
        "results/grounding/rows.parquet"
    ]
    assert "results/fictionalqa/tiny/evaluate/doc/step-6.parquet" in named["item_tables"]
    assert named["parametric"][:2] == [
        "results/sort/parametric/books/evaluate/epoch-2.parquet",
        "results/sort/parametric/books/evaluate/epoch-2_segment_nll.parquet",
    ]
    assert named["splits"] == [f"results/fictionalqa/splits/{run}.json" for run in ("doc", "event", "fictsheets")]
    card = plan.dataset_card_inputs("base_model")
    assert list(card) == [
        "sort_rows", "item_tables", "sort_fiction_rows", "sort_parametric_rows", "sort_parametric_nll",
        "grounding_scores", "grounding_checkpoint_scores",
    ]  # fmt: skip
    assert card["sort_fiction_rows"] == [  # the probed runs (finetune.probe_runs [doc, control])
        "results/sort/fiction/tiny/evaluate/base_model/step-0.parquet",
        "results/sort/fiction/tiny/evaluate/doc/step-6.parquet",
        "results/sort/fiction/tiny/evaluate/control/step-6.parquet",
    ]
    assert card["sort_parametric_nll"][-1] == "results/sort/parametric/base_model/evaluate/epoch-0_segment_nll.parquet"
    off = Layout(load_config(CONFIG / "test.yaml", {"sort": {"parametric": {"enabled": False}}}))
    assert not off.parametric_runs and all("parametric" not in t for t in off.trainings)


def test_findings_read_only_their_rules_inputs(tmp_path):
    settings = findings.FindingsSettings.from_config(load_config(CONFIG / "test.yaml"))
    named = Layout(load_config(CONFIG / "test.yaml")).findings_inputs("base_model")
    declared = [path for paths in named.values() for path in paths]
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
        f"fictionalqa/{model}/finetune/{run}.seed-7" for model in ("tiny", "tiny-wide") for run in one.model_runs[model]
    }
    # every seed's checkpoints are evaluated; the probes (probe_models: tiny) read the first seed's
    assert plan.checkpoints == (1 + 8) + (1 + 2) and plan.probe_checkpoints == one.probe_checkpoints == 3
    assert (
        "results/fictionalqa/tiny-wide/evaluate/doc.seed-7/step-6.parquet"
        in plan.findings_inputs("base_model")["item_tables"]
    )
    assert replicate_run("doc", 5, [5, 7]) == "doc" and replicate_run("doc", 7, [5, 7]) == "doc.seed-7"
    assert replicated_run("style_news.seed-7") == "style_news" and run_seed("doc.seed-7", [5, 7]) == 7
    assert run_seed("doc", [5, 7]) == 5
    with pytest.raises(ValueError, match="training seed 6 is not one of finetune.seeds"):
        replicate_run("doc", 6, [5, 7])
    with pytest.raises(ValueError, match="finetune.seeds lists a seed twice"):
        training_seeds({"seed": 1, "finetune": {"seeds": [3, 3]}})


ROOT = Path(__file__).resolve().parents[1]
WORKFLOW_FILES = [ROOT / "Snakefile", *sorted((ROOT / "rules").glob("*.smk")), *sorted((ROOT / "scripts").glob("*.py"))]


def path_literals(text: str) -> list[str]:
    """The lines of ``text`` that write a path under results/ or resources/ as a string literal
    (a plain, f- or raw string), rather than taking it from :mod:`knowlab.layout`."""
    return [line.strip() for line in text.splitlines() if re.search(r"""[frb]?["'](results|resources)/""", line)]


def test_path_literals_are_found():
    assert path_literals('    log:\n        "results/logs/sort/items.log",\n') == ['"results/logs/sort/items.log",']
    assert path_literals("x = f'resources/models/{name}'") == ["x = f'resources/models/{name}'"]
    assert path_literals("tables=layout.SORT_TABLES.smk  # under results/") == []


def test_no_rule_or_script_names_a_result_path_itself():
    """Every output, log, benchmark and manifest path comes from knowlab.layout (issue 46, item 1)."""
    found = {f"{path.relative_to(ROOT)}: {line}" for path in WORKFLOW_FILES for line in path_literals(path.read_text())}
    assert not found, "paths named outside knowlab.layout:\n" + "\n".join(sorted(found))


def test_a_steps_log_benchmark_and_manifest():
    step = layout.ITEMS_STEP
    assert step.log == "results/logs/fictionalqa/{ft_model}/evaluate/{run}/step-{step}.log"
    assert step.benchmark == "results/benchmarks/fictionalqa/{ft_model}/evaluate/{run}/step-{step}.tsv"
    assert step.manifest == "results/fictionalqa/{ft_model}/evaluate/{run}/step-{step}.manifest.json"
    figure = layout.FQA_FIGURE_STEP.fix(family="fig2")
    assert figure.log == "results/logs/fictionalqa/figures/{ft_model}/fig2.log"
    assert figure.manifest == "results/figures/fictionalqa/{ft_model}/fig2.manifest.json"
    assert layout.BASE_MODEL_STEP.manifest == "resources/base_model.manifest.json"


def test_every_rule_has_its_step():
    """One Step per rule of the workflow as Snakemake defines it (the Step of the rules a loop makes
    names them by their name template, ``fictionalqa_figure_{family}``), and no Step of a rule that
    does not exist."""
    from knowlab.tooling.envs import workflow_rules

    steps = {value.rule for value in vars(layout).values() if isinstance(value, layout.Step)}
    patterns = {step: re.compile(re.sub(r"\\\{\w+\\\}", r"\\w+", re.escape(step))) for step in steps}
    # finetune_last: the run's last checkpoint interval, finetune's files without the training state
    rules = set(workflow_rules(ROOT)) - {"all", "finetune_last"}
    owners = {
        rule: [rule] if rule in steps else [step for step, pattern in patterns.items() if pattern.fullmatch(rule)]
        for rule in rules
    }
    assert {rule: found for rule, found in owners.items() if len(found) != 1} == {}
    assert steps == {found[0] for found in owners.values()}
    assert len(rules) > len(steps)  # the loops' rules: fictionalqa_figure_fig2, ...


def test_a_base_model_trains_the_runs_its_entry_names():
    """finetune.models.<name>.finetune.runs / control (knowlab.layout.model_runs): a subset of finetune.runs, in
    its order, and the control only where finetune.control is on; never the first model's."""
    entry = {"source": "tiny_random", "finetune": {"runs": ["event", "doc"], "control": False}}
    cfg = load_config(CONFIG / "test.yaml", {"finetune": {"models": {"tiny-wide": entry}}})
    plan = Layout(cfg)
    assert plan.model_runs["tiny-wide"] == ["doc", "event"] and plan.model_runs["tiny"] == plan.runs
    assert plan.run_items("tiny-wide", *plan.model_runs["tiny-wide"])[1:] == [
        "results/fictionalqa/tiny-wide/evaluate/doc/step-6.parquet",
        "results/fictionalqa/tiny-wide/evaluate/event/step-6.parquet",
    ]
    assert plan.checkpoints == 5 + 3
    for bad, message in (
        (
            {"tiny-wide": {"finetune": {"runs": ["style_news"]}}},
            r"tiny-wide.finetune.runs: \['style_news'\] are not runs",
        ),
        ({"tiny": {"source": "tiny_random", "finetune": {"control": False}}}, r"the first base model trains every run"),
    ):
        with pytest.raises(ValueError, match=message):
            Layout(load_config(CONFIG / "test.yaml", {"finetune": {"models": bad}}))
    off = load_config(
        CONFIG / "test.yaml", {"finetune": {"control": False, "models": {"tiny-wide": {"finetune": {"control": True}}}}}
    )
    with pytest.raises(ValueError, match="tiny-wide.finetune.control is on but finetune.control is off"):
        Layout(off)

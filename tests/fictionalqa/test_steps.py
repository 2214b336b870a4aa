"""The FictionalQA rules' steps (knowlab.fictionalqa.steps): the scripts import nothing else of
knowlab.fictionalqa but the settings, each steps module imports only what its rules' envs hold, the
stats steps write what the statistics compute (the base model as step 0 of every run) and the figure
steps draw from those tables."""

from __future__ import annotations

import ast
from pathlib import Path

import pandas as pd
import pytest
from pandas.testing import assert_frame_equal

from knowlab.core.checkpoints import BASE_RUN, with_step0
from knowlab.core.io import read_parquets, write_parquet
from knowlab.fictionalqa.settings import PairedTestSettings
from knowlab.fictionalqa.stats import mcnemar_for_run, ttest_for_run
from knowlab.fictionalqa.steps import figures, stats

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = sorted((ROOT / "scripts").glob("fictionalqa_*.py"))
STEPS = ROOT / "src" / "knowlab" / "fictionalqa" / "steps"
ALLOWED = {"knowlab.fictionalqa.steps", "knowlab.fictionalqa.settings"}


def _fictionalqa_imports(path: Path) -> set[str]:
    """The ``knowlab.fictionalqa`` modules a script imports (``from knowlab.fictionalqa import x``
    imports ``knowlab.fictionalqa.x``)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            if node.module == "knowlab.fictionalqa":
                found |= {f"{node.module}.{alias.name}" for alias in node.names}
            else:
                found.add(node.module)
    return {name for name in found if name == "knowlab.fictionalqa" or name.startswith("knowlab.fictionalqa.")}


def _outside(imported: set[str]) -> set[str]:
    return {m for m in imported if not any(m == a or m.startswith(f"{a}.") for a in ALLOWED)}


def test_there_are_fictionalqa_scripts():
    """Every FictionalQA rule's script, named after its rule (rules/fictionalqa.smk)."""
    names = {p.stem for p in SCRIPTS}
    assert names == {
        f"fictionalqa_{step}"
        for step in (
            "webtext", "corpus", "rank_distractors", "mcq", "lm_eval_tasks", "real_qa", "split", "evaluate",
            "paired_tests", "summary", "figure", "figure_pvalues",
        )
    }  # fmt: skip


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.stem)
def test_scripts_import_only_the_steps_and_the_settings(script):
    """A FictionalQA script reads its inputs, calls knowlab.fictionalqa.steps and writes its outputs:
    of knowlab.fictionalqa it imports a steps module and, for its settings record, the settings."""
    imported = _fictionalqa_imports(script)
    assert any(m.startswith("knowlab.fictionalqa.steps") for m in imported), f"{script.name} calls no step"
    outside = _outside(imported)
    assert not outside, f"{script.name} imports {sorted(outside)}: call knowlab.fictionalqa.steps instead"


def test_the_import_check_sees_a_layer_below_the_steps(tmp_path):
    script = tmp_path / "fictionalqa_x.py"
    script.write_text(
        "from knowlab.fictionalqa import summary\nfrom knowlab.fictionalqa.steps import stats\n"
        "import knowlab.fictionalqa.suites\nfrom knowlab.fictionalqa.corpus.mcq import build_mcq\n"
    )
    assert _outside(_fictionalqa_imports(script)) == {
        "knowlab.fictionalqa.summary",
        "knowlab.fictionalqa.suites",
        "knowlab.fictionalqa.corpus.mcq",
    }


def test_the_steps_package_imports_nothing():
    """Importing one steps module runs only its own imports (each kind of rule has its conda env)."""
    tree = ast.parse((STEPS / "__init__.py").read_text())
    assert not [node for node in ast.walk(tree) if isinstance(node, ast.Import | ast.ImportFrom)]


def test_data_and_stats_steps_import_no_plotting():
    """The stats steps load no matplotlib (envs/stats.yaml), the data steps neither."""
    plotting = {"knowlab.fictionalqa.figures", "knowlab.fictionalqa.paper_figures", "knowlab.core.plotting"}
    for name in ("data", "stats"):
        tree = ast.parse((STEPS / f"{name}.py").read_text())
        modules = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
        modules |= {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
        assert not modules & plotting and not any(m.startswith("matplotlib") for m in modules), name


# what each steps module may not import, even indirectly: what the envs of its rules lack
NOT_IN_ENV = {
    "data": {"matplotlib", "scipy", "statsmodels"},  # envs/data.yaml, eval.yaml
    "stats": {"matplotlib", "torch", "yaml"},  # envs/stats.yaml
    "figures": {"torch", "yaml"},  # envs/plot.yaml
}


@pytest.mark.parametrize("step", sorted(NOT_IN_ENV))
def test_a_steps_module_imports_only_what_its_rules_envs_hold(step, tmp_path):
    from knowlab.tooling import envs

    script = tmp_path / f"uses_{step}.py"
    script.write_text(f"from knowlab.fictionalqa.steps import {step}\n")
    rule = envs.Rule(f"uses_{step}", ROOT / "Snakefile", None, script=script)
    reached = {found.top for found in envs.rule_imports(rule, ROOT)}
    assert reached & NOT_IN_ENV[step] == set()


def _evaluated_once(scored_items):
    """The item rows as the workflow writes them: the base model's once (run base_model, step 0),
    then each run's later checkpoints."""
    base = scored_items[(scored_items.run == "doc") & (scored_items.step == 0)].assign(run=BASE_RUN)
    return pd.concat([base, scored_items[scored_items.step > 0]], ignore_index=True)


def test_paired_tests_put_the_base_model_at_step_zero_of_every_run(scored_items):
    items = _evaluated_once(scored_items)
    settings = PairedTestSettings(mcnemar_exact_below=25, ttest_alternative="greater")
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

    settings = PairedTestSettings(mcnemar_exact_below=25, ttest_alternative="greater")
    tables = stats.paired_tests(_evaluated_once(scored_items), ["doc", "control"], "doc", "control", "mcq4", settings)
    write_parquet(tmp_path / "mcq4_mcnemar.parquet", tables["mcnemar"])
    pdf, png = tmp_path / "mcq4_mcnemar.pdf", tmp_path / "mcq4_mcnemar.png"
    figures.draw_pvalues(read_parquets([tmp_path / "mcq4_mcnemar.parquet"]), "doc", "mcq4", pdf, png, note="n")
    shown = read_description(png)
    assert shown["title"].startswith("Doc split: MCQ-4") and "McNemar" in shown["title"]
    assert [p["images"] for p in shown["panels"]] == [1, 1] and pdf.read_bytes().startswith(b"%PDF")

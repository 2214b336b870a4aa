"""The SORT rules' steps (knowlab.sort.steps): the scripts import nothing else of knowlab.sort, each steps
module imports only what its rules' envs hold, the stats steps write what the analysis computes and the
figure steps draw from those tables."""

from __future__ import annotations

import ast
from pathlib import Path

import pandas as pd
import pytest

from knowlab.core.io import read_parquets, write_parquet
from knowlab.sort import analysis
from knowlab.sort.steps import figures, stats

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = sorted((ROOT / "scripts").glob("sort_*.py"))
STEPS = {"data", "stats", "figures"}


def _sort_imports(path: Path) -> list[str]:
    """The ``knowlab.sort`` modules (or ``module:name``) that a script imports."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            found += [alias.name for alias in node.names if alias.name.startswith("knowlab.sort")]
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("knowlab.sort"):
            found += [f"{node.module}:{alias.name}" for alias in node.names]
    return found


def _allowed(name: str) -> bool:
    module, _, imported = name.partition(":")
    if module == "knowlab.sort.settings":
        return True
    if module == "knowlab.sort.steps":
        return imported in STEPS
    return module in {f"knowlab.sort.steps.{step}" for step in STEPS}


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.stem)
def test_scripts_import_only_the_steps_and_settings(script):
    """A SORT script reads its inputs, calls knowlab.sort.steps and writes its outputs: of knowlab.sort
    it imports a steps module and, for its settings record, knowlab.sort.settings; nothing else."""
    imports = _sort_imports(script)
    assert [name for name in imports if not _allowed(name)] == []
    assert any(name.startswith("knowlab.sort.steps") for name in imports), f"{script.name} calls no step"


def test_the_import_check_sees_a_layer_below_the_steps(tmp_path):
    script = tmp_path / "sort_x.py"
    script.write_text(
        "from knowlab.sort import analysis\nfrom knowlab.sort.steps import stats\nimport knowlab.sort.rag\n"
    )
    assert [n for n in _sort_imports(script) if not _allowed(n)] == ["knowlab.sort:analysis", "knowlab.sort.rag"]


# what each steps module may not import, even indirectly: what the envs of its rules lack
NOT_IN_ENV = {
    "data": {"matplotlib", "scipy", "statsmodels"},  # envs/data.yaml, sort.yaml, eval.yaml, train.yaml
    "stats": {"matplotlib", "torch", "yaml"},  # envs/stats.yaml
    "figures": {"torch", "yaml"},  # envs/plot.yaml
}


@pytest.mark.parametrize("step", sorted(NOT_IN_ENV))
def test_a_steps_module_imports_only_what_its_rules_envs_hold(step, tmp_path):
    from knowlab.tooling import envs

    script = tmp_path / f"uses_{step}.py"
    script.write_text(f"from knowlab.sort.steps import {step}\n")
    rule = envs.Rule(f"uses_{step}", ROOT / "Snakefile", None, script=script)
    reached = {found.top for found in envs.rule_imports(rule, ROOT)}
    assert reached & NOT_IN_ENV[step] == set()


def test_condition_stats_write_the_tables_and_return_the_tests(rows, sub, tmp_path):
    base = sub(rows, run="base")
    conditions = ["baseline", "in_context"]
    binomial, tests = stats.condition_stats(
        base, tmp_path / "tables", ["m1", "m2"], conditions, alternative="greater", n_resamples=50, seed=3
    )
    tables = ("table1_baseline_by_segment_length", "table2_in_context_by_excerpt_length")
    names = {p.name for p in (tmp_path / "tables").iterdir()}
    assert names == {f"{table}{ext}" for table in tables for ext in (".csv", ".tex", "_long.csv")}
    assert binomial.equals(analysis.binomial_tests(base, by=list(stats.BINOMIAL_BY)))
    assert len(tests) == 2
    expected = analysis.condition_tests(base, "m2", conditions, "greater")
    assert tests[1].keys() == {"mcnemar", "ttest"} and all(tests[1][t].equals(expected[t]) for t in expected)


def test_parametric_stats_put_the_base_model_at_epoch_zero(rows, sub):
    base = sub(rows, run="base", model="m1")
    base = base[base.condition.isin(["baseline", "in_context"])].drop(columns="epoch")
    tuned = rows[rows.run != "base"]
    out, tests = stats.parametric_stats(base, tuned, "greater")
    assert len(out) == len(base) + len(tuned) and (out.epoch.iloc[: len(base)] == 0.0).all()
    assert out.index.equals(pd.RangeIndex(len(out)))
    assert tests.keys() == {"mcnemar", "ttest"}
    assert tests["ttest"].equals(analysis.parametric_tests(out, "greater")["ttest"])


@pytest.mark.slow
def test_condition_figures_draw_every_figure_from_the_saved_tables(rows, sub, tmp_path):
    """The figure rule's path: the stats step's tables written and read back, then drawn."""
    base = sub(rows, run="base")
    conditions = ["baseline", "in_context", "rag", "oracle_rag"]
    binomial, tests = stats.condition_stats(
        base, tmp_path / "tables", ["m1"], conditions, alternative="greater", n_resamples=20, seed=0
    )
    saved = {}
    for name, table in {"binomial": binomial, **tests[0]}.items():
        write_parquet(tmp_path / f"{name}.parquet", table)
        saved[name] = read_parquets([tmp_path / f"{name}.parquet"])
    names = ("fig3a", "fig3b", "fig4", "fig10", "mcnemar", "ttest")  # rules/sort.smk's SORT_FIGURES
    paths = {f"{name}_{ext}": tmp_path / f"{name}.{ext}" for name in names for ext in ("pdf", "png")}
    figures.condition_figures(base, saved.pop("binomial"), saved, paths, model="m1")
    assert all(path.stat().st_size > 0 for path in paths.values())

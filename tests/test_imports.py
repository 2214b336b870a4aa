"""The library's house rules, checked on its source: no import cycle, imports at module top.

A cycle is searched in the graph of every ``knowlab`` import, at module top or inside a
function (an import inside a function that closes a cycle is still a cycle: it only hides
it from the interpreter).  Imports inside functions are allowed only for heavy optional
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


def _graph() -> dict[str, set[str]]:
    graph = {}
    for name, path in MODULES.items():
        tree = ast.parse(path.read_text(), filename=str(path))
        targets = set()
        for node in ast.walk(tree):
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


# What each package may import besides itself and the core: the studies of FictionalQA runs
# (SORT on the fiction documents, grounding across fine-tuning) read knowlab.fictionalqa.
ALLOWED = {
    "knowlab.core": set(),
    "knowlab.fictionalqa": set(),
    "knowlab.sort": {"knowlab.fictionalqa"},
    "knowlab.grounding": {"knowlab.fictionalqa"},
    "knowlab.fiction_generation": {"knowlab.fictionalqa"},
}


def test_dependencies_go_one_way():
    """The core imports no study; a study imports the core, itself and (where it studies its runs) FictionalQA."""
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

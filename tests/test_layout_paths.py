"""Every ``results/`` and ``resources/`` path in the library comes from :mod:`knowlab.layout`: no module
of ``src/knowlab`` but the layout spells one out, the tooling included (issue 59, item 5).

A path spelled out is a string in the code (docstrings, comments and ``help=`` texts are prose, not
paths): one without spaces that starts with ``results/`` or ``resources/`` (a regular expression's
``^`` before it too), or the bare folder name ``results`` or ``resources`` where a path is made of it
(an operand of ``/``, an argument of ``Path``, a ``default=``, an entry of a literal tuple, list or set
that holds ``results``).  A configuration key of the same name (``finetune.resources``, a rule's
``resources:``) is none of these.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from knowlab import layout

SRC = Path(__file__).resolve().parents[1] / "src"
FOLDERS = (layout.RESULTS, layout.RESOURCES)
_PATH = re.compile(rf"^\^?({'|'.join(map(re.escape, FOLDERS))})/\S*$")
#: known paths spelled out outside the layout, as (file under src/, the string): each one still to move
#: into the layout (issue 59, item 5); the tooling has none
KNOWN: frozenset[tuple[str, str]] = frozenset(
    {
        # the fiction audit's command-line defaults
        ("knowlab/fiction_generation/audit.py", "resources/base_model"),
        ("knowlab/fiction_generation/audit.py", "results/fiction_audit/audit.json"),
        ("knowlab/fiction_generation/audit.py", "results/fiction_audit/requests"),
        # the Hub downloads' folder: the loaders of knowlab.core look there at run time, and core imports no
        # layout (the layout imports core); knowlab.layout.HUB_SNAPSHOT is built from it
        ("knowlab/core/hub.py", "resources/hub"),
    }
)


def _prose(tree: ast.AST) -> set[int]:
    """``id`` of every string node that is prose: docstrings and ``help=`` texts."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                found.add(id(first.value))
        if isinstance(node, ast.keyword) and node.arg == "help":
            found |= {id(n) for n in ast.walk(node.value)}
    return found


def _folder_uses(tree: ast.AST) -> set[int]:
    """``id`` of every string node in a place where a bare folder name makes a path."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
            found |= {id(node.left), id(node.right)}
        elif isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", None)) == "Path":
            found |= {id(arg) for arg in node.args}
        elif isinstance(node, ast.keyword) and node.arg == "default":
            found.add(id(node.value))
        elif isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            if any(isinstance(e, ast.Constant) and e.value == layout.RESULTS for e in node.elts):
                found |= {id(e) for e in node.elts}
    return found


def spelled_out(source: str) -> list[tuple[int, str]]:
    """``(line, string)`` of every results/ or resources/ path spelled out in ``source`` (see the module)."""
    tree = ast.parse(source)
    prose, folder_uses = _prose(tree), _folder_uses(tree)
    found = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Constant) and isinstance(node.value, str)) or id(node) in prose:
            continue
        if _PATH.match(node.value) or (node.value in FOLDERS and id(node) in folder_uses):
            found.append((node.lineno, node.value))
    return sorted(found)


def test_spelled_out_paths_are_found():
    source = (
        '"""Docstring naming results/findings.json."""\n'
        "import re\nfrom pathlib import Path\n"
        'A = "results/x.csv"\n'
        'B = re.compile(r"^results/(logs|benchmarks)/")\n'
        'C = Path("resources")\n'
        'D = base / "results"\n'
        'E = ("results", "resources")\n'
        'F = f"results/{name}"\n'
        'G = config["finetune"]["resources"]\n'
        'H = block.get("resources")\n'
        'I = ("runs", "resources")\n'
        'J = "no results/ folder in it"\n'
        'parser.add_argument("--out", default="results", help="results/out.json, say")\n'
    )
    assert spelled_out(source) == [
        (4, "results/x.csv"),
        (5, "^results/(logs|benchmarks)/"),
        (6, "resources"),
        (7, "results"),
        (8, "resources"),
        (8, "results"),
        (9, "results/"),
        (14, "results"),
    ]


MODULES = sorted(p for p in (SRC / "knowlab").rglob("*.py") if p != SRC / "knowlab" / "layout.py")


@pytest.mark.parametrize("path", MODULES, ids=lambda p: p.relative_to(SRC).as_posix())
def test_no_module_but_the_layout_spells_out_a_results_path(path):
    relative = path.relative_to(SRC).as_posix()
    found = [(line, text) for line, text in spelled_out(path.read_text()) if (relative, text) not in KNOWN]
    assert not found, "\n".join(f"{relative}:{line}: {text!r}: ask knowlab.layout for it" for line, text in found)


def test_the_known_exceptions_are_still_there_and_outside_the_tooling():
    """Each entry of :data:`KNOWN` is still spelled out (else drop it), and none is in the tooling."""
    for relative, text in sorted(KNOWN):
        assert not relative.startswith("knowlab/tooling/"), relative
        assert text in [t for _, t in spelled_out((SRC / relative).read_text())], (relative, text)

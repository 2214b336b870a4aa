"""The documentation's references: README.md, docs/*.md, config/README.md and benchmarks/README.md.

Every relative Markdown link must reach a file (and, into a Markdown file, a heading: GitHub's
anchor slugs); every repository path written in backticks (``src/...``, ``rules/...``, ``tests/...``,
..., ``Snakefile``, ``Makefile``) must exist; every ``knowlab.`` dotted name in backticks must be a
module, or a module and attributes defined in it.  Paths under ``results/`` and ``resources/`` are
outputs of a run and not checked.  Nothing is imported but the ``knowlab`` packages' ``__init__``
(``importlib.util.find_spec`` imports a module's parents): attributes are read from the module's
source, so no test here imports torch.
"""

from __future__ import annotations

import ast
import importlib.util
import re
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

DOCS = sorted(
    {ROOT / "README.md", ROOT / "config" / "README.md", ROOT / "benchmarks" / "README.md"}
    | set((ROOT / "docs").glob("*.md"))
)

PATH_PREFIXES = ("src/", "rules/", "scripts/", "config/", "envs/", "benchmarks/", "tests/", "docs/", "workflow/")
ROOT_FILES = ("Snakefile", "Makefile")

FENCE = re.compile(r"^\s*(```|~~~)")
CODE_SPAN = re.compile(r"(`+)((?:(?!\n[ \t]*\n)[^`])+?)\1")  # within a paragraph, across lines
LINK = re.compile(r"(?<!!)\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
IMAGE = re.compile(r"!\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
MODULE_NAME = re.compile(r"knowlab(?:\.[A-Za-z_]\w*)+")
LINE_SUFFIX = re.compile(r"(?::\d+(?:-\d+)?)+$")


def prose_lines(path: Path) -> list[tuple[int, str]]:
    """(line number, text) of every line outside fenced code blocks."""
    out, fenced = [], False
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if FENCE.match(line):
            fenced = not fenced
            continue
        if not fenced:
            out.append((number, line))
    return out


def prose(path: Path) -> str:
    """The file's text with fenced code blocks blanked (line numbers kept)."""
    lines = path.read_text(encoding="utf-8").splitlines()
    kept = dict(prose_lines(path))
    return "\n".join(kept.get(number, "") for number in range(1, len(lines) + 1))


def slug(heading: str) -> str:
    """GitHub's anchor of a heading: its text, lowercase, punctuation removed, spaces to '-'."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link's text only
    text = re.sub(r"<[^>]+>", "", text)  # inline HTML
    text = text.strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


@cache
def anchors(path: Path) -> frozenset[str]:
    """Every heading anchor of a Markdown file, with GitHub's -1, -2 ... for repeated headings."""
    seen: dict[str, int] = {}
    out = set()
    for _, line in prose_lines(path):
        found = HEADING.match(line)
        if not found:
            continue
        base = slug(found.group(2))
        n = seen.get(base, 0)
        seen[base] = n + 1
        out.add(base if n == 0 else f"{base}-{n}")
    return frozenset(out)


def broken_link(doc: Path, target: str) -> str | None:
    """Why a link target of ``doc`` is broken, or None; external links are not checked."""
    if re.match(r"^[a-zA-Z][\w+.-]*:", target):  # http:, https:, mailto:, ...
        return None
    file_part, _, anchor = target.partition("#")
    linked = (doc.parent / file_part).resolve() if file_part else doc
    if not linked.exists():
        return f"link to {target}: {file_part} does not exist"
    if anchor and linked.suffix == ".md" and anchor not in anchors(linked):
        return f"link to {target}: no heading with anchor #{anchor} in {linked.relative_to(ROOT)}"
    return None


def repository_path(token: str) -> str | None:
    """The repository path a backticked token names, or None when it is no such path."""
    token = token.strip().rstrip(".,;)")
    if not token or any(c in token for c in "{< ") or "://" in token:
        return None
    token = LINE_SUFFIX.sub("", token)
    if token in ROOT_FILES or token.startswith(PATH_PREFIXES):
        return token
    return None


def broken_path(token: str) -> str | None:
    path = repository_path(token)
    if path is None:
        return None
    if "*" in path or "?" in path:
        return None if any(ROOT.glob(path.rstrip("/"))) else f"`{path}`: nothing matches"
    return None if (ROOT / path).exists() else f"`{path}` does not exist"


@cache
def module_tree(origin: str) -> ast.Module:
    return ast.parse(Path(origin).read_text(encoding="utf-8"))


def defines(body: list[ast.stmt], name: str) -> ast.stmt | bool | None:
    """The statement of ``body`` that binds ``name`` at its top level (True for a star import), else None."""
    found: ast.stmt | bool | None = None
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.name == name:
            found = node
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                for sub in ast.walk(target):
                    if isinstance(sub, ast.Name) and sub.id == name:
                        found = node
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                if alias.name == "*":
                    found = found or True
                elif (alias.asname or alias.name.split(".")[0]) == name:
                    found = node
        elif isinstance(node, (ast.If, ast.Try, ast.With)):
            nested = [*node.body, *getattr(node, "orelse", []), *getattr(node, "finalbody", [])]
            for handler in getattr(node, "handlers", []):
                nested += handler.body
            found = defines(nested, name) or found
    return found


def find_module(name: str):
    try:
        return importlib.util.find_spec(name)
    except (ImportError, ValueError):  # a parent that is no package, or missing
        return None


def broken_module(dotted: str) -> str | None:
    """Why a ``knowlab.`` dotted name does not resolve: its longest module prefix, then attributes."""
    parts = dotted.split(".")
    # shortest prefix first, down to the first plain module: find_spec imports only the packages above
    spec, cut = None, 0
    for i in range(1, len(parts) + 1):
        found = find_module(".".join(parts[:i]))
        if found is None:
            break
        spec, cut = found, i
        if found.submodule_search_locations is None:  # a module, not a package: the rest are attributes
            break
    if spec is None:
        return f"`{dotted}`: no module knowlab"
    module, attributes = ".".join(parts[:cut]), parts[cut:]
    if not attributes:
        return None
    if not spec.origin or not spec.origin.endswith(".py"):
        return f"`{dotted}`: {module} has no source to read {attributes[0]} from"
    body = module_tree(spec.origin).body
    for i, attribute in enumerate(attributes):
        node = defines(body, attribute)
        if node is None:
            owner = ".".join([module, *attributes[:i]])
            return f"`{dotted}`: {owner} defines no {attribute}"
        if not isinstance(node, ast.ClassDef):  # a function, value or import: attributes beyond it unchecked
            return None
        body = node.body
    return None


def problems(doc: Path) -> list[str]:
    out = []
    relative = doc.relative_to(ROOT)
    text = prose(doc)

    def where(offset: int) -> str:
        return f"{relative}:{text.count(chr(10), 0, offset) + 1}"

    spans = list(CODE_SPAN.finditer(text))
    # links outside code spans (a span blanked to spaces, newlines kept)
    outside = CODE_SPAN.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), text)
    for found in [*LINK.finditer(outside), *IMAGE.finditer(outside)]:
        if why := broken_link(doc, found.group(1)):
            out.append(f"{where(found.start())}: {why}")
    for found in spans:
        span = " ".join(found.group(2).split())
        tokens = [span] if " " not in span else span.split()
        for token in tokens:
            if why := broken_path(token):
                out.append(f"{where(found.start())}: {why}")
        for dotted in dict.fromkeys(MODULE_NAME.findall(span)):
            if re.search(rf"[\w/]{re.escape(dotted)}|{re.escape(dotted)}\.(?:py|json|jsonl|parquet|csv|yaml)\b", span):
                continue  # part of a file name, not a module
            if why := broken_module(dotted):
                out.append(f"{where(found.start())}: {why}")
    return sorted(out, key=lambda line: int(line.split(":")[1]))


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_references_resolve(doc):
    found = problems(doc)
    assert not found, "broken references:\n" + "\n".join(found)


def test_every_docs_page_is_linked_from_the_readme():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    linked = {(ROOT / t.partition("#")[0]).resolve() for t in LINK.findall(readme)}
    missing = [str(p.relative_to(ROOT)) for p in (ROOT / "docs").glob("*.md") if p.resolve() not in linked]
    assert not missing, f"docs pages the README does not link: {missing}"


def test_slug():
    assert slug("Do the statuses survive a change of dtype, threads or CPU?") == (
        "do-the-statuses-survive-a-change-of-dtype-threads-or-cpu"
    )
    assert slug("On a cluster (SLURM)") == "on-a-cluster-slurm"
    assert slug("Llama-3.2-1B (1,235,814,400 parameters)") == "llama-32-1b-1235814400-parameters"
    assert slug("Architecture: from raw data to figures") == "architecture-from-raw-data-to-figures"

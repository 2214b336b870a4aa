"""Trace: the chain of jobs from one result down to the raw inputs it derives from.

Every job of the workflow writes a JSON manifest beside its outputs (:mod:`knowlab.core.provenance`):
its rule, wildcards, parameters (``config``), seed, code commit, package versions and the sha256 of
every input and output, paths relative to the workflow's working directory (``base``).  This module
joins them into a graph and follows it from a target back to the files no job wrote.

Usage::

    python -m knowlab.tooling.trace TARGET [--base DIR] [--format text|json] [--dot]

``TARGET`` is a file path relative to ``base`` (``results/sort/tables/x.csv``; a file inside a
folder a job recorded as one output resolves to that job), or a finding's claim id
(``fqa.train_below_val_loss``) looked up in ``results/findings.json``.

What is followed
----------------
* A file: the job whose manifest lists it as an output (a file entry, or a folder entry holding
  it), then, for every input of that job, the job that wrote the input, and so on.  An input that
  no manifest lists as an output is a *raw* input (``data/``, a file shipped by a package, a
  shared folder): a leaf, with the sha256 the consuming job recorded (its pin).
* A claim id: every record of ``results/findings.json`` with that ``claim_id`` (one per run or
  model) is a root.  Its children are (1) the job that wrote ``results/findings.json`` (the rule
  ``findings``), followed only through the inputs inside the claim's study folder
  (:data:`STUDY_FOLDERS`: ``fqa.*`` reads ``results/fictionalqa/``, ``sort.*`` ``results/sort/``,
  ``grounding.*`` ``results/grounding/``; a claim id with another prefix follows every input), the
  folder layout of :mod:`knowlab.layout` being the only thing that tells which table a claim
  reads; and (2) the record's ``figure`` (a path relative to ``results/``), traced as a file.
* Each job appears once however many paths reach it: the result is a DAG.

What is checked (a *broken link*, exit status 1)
------------------------------------------------
Only the files on the chain (the inputs of every job reached, and the target) are hashed, each at
most once per call:

* ``no-manifest``: a file under ``results/`` or ``resources/`` (:data:`DERIVED`, the workflow's
  outputs) that no manifest lists as an output;
* ``changed``: a file whose sha256 now differs from the one recorded (by the job that read it, or,
  for the target, by the job that wrote it);
* ``missing``: a recorded file that is gone;
* ``unhashed``: a file recorded without a sha256 (absent when its manifest was written);
* ``stale``: a job read a version of a file other than the one its producing job recorded;
* ``duplicate``: two manifests list the same output.

Depth is the number of jobs (steps) on the longest chain from a root down to a raw input: a
target written by job C, which read B's output, which read A's output, which read a raw file, has
depth 3; a raw file traced by itself has depth 0.

Output: ``text`` (default) indents each job under the one that read its output and writes
``(see above)`` for a job or raw input already shown; ``json`` is one document (:func:`to_json`);
``--dot`` writes Graphviz DOT (:func:`to_dot`).  Exit status: 0 when the chain is whole, 1 when a
link is broken (each named on a ``broken:`` line), 2 when the target is neither a file known to
the manifests or present under ``base`` nor a claim id.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from collections.abc import Callable, Iterable
from html import escape
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from knowlab import layout
from knowlab.core.io import read_json, sha256_file

#: path prefixes (relative to the working directory) of the files the workflow writes: one of
#: them with no manifest is a broken link, never a raw input
DERIVED = tuple(f"{folder}/" for folder in layout.OUTPUT_FOLDERS)
#: the findings table and the prefix of a claim id -> the study folder its numbers come from
FINDINGS = layout.FINDINGS_JSON.path()
STUDY_FOLDERS = {
    prefix: f"{layout.RESULTS}/{study}/"
    for prefix, study in [("fqa", "fictionalqa"), ("sort", "sort"), ("grounding", "grounding")]
}
#: the facts of a finding record shown for a claim's root, in this order
FINDING_FACTS = ("study", "claim", "status", "effect", "ci_low", "ci_high", "p", "n", "test", "source", "figure")

_HEX64 = re.compile(r"^[0-9a-f]{64}$")
#: files Snakemake itself writes into a ``directory()`` output after the job (and its manifest)
#: ends: the jobs that read the folder record them, the job that wrote it cannot; not checked
SNAKEMAKE_MARKERS = (".snakemake_timestamp",)
_IDENTIFIER_KEYS = ("spec", "repo_id", "hub_id", "model_id", "id", "url", "package", "file", "name")


class TraceError(ValueError):
    """The target is neither a file known to the manifests (or present under the base) nor a claim id."""


# ------------------------------------------------------------------ manifests and their index


def norm(path: str) -> str:
    """A manifest path in one spelling: ``os.path.normpath`` with ``/`` (absolute paths stay absolute)."""
    return os.path.normpath(path).replace(os.sep, "/")


def recorded_files(entry: dict[str, Any]) -> list[tuple[str, str | None]]:
    """``(path, sha256)`` of every file an input or output entry records: the file itself, or each
    file of a folder entry (``{"path": dir, "files": {relpath: sha256}}``) as ``dir/relpath``."""
    root = norm(entry["path"])
    if "files" in entry:
        return [(norm(f"{root}/{rel}"), digest) for rel, digest in sorted(entry["files"].items())]
    return [(root, entry.get("sha256"))]


def load_manifests(base: str | os.PathLike = ".") -> dict[str, dict[str, Any]]:
    """Every ``*manifest.json`` under ``base/results`` and ``base/resources``, parsed.

    Returns ``{manifest path relative to base (posix): manifest dict}``, sorted by path; empty when
    neither folder exists.  Raises ``knowlab.core.io``'s errors for a manifest that is not JSON.
    """
    base = Path(base)
    found = {}
    for folder in layout.OUTPUT_FOLDERS:
        if (base / folder).is_dir():
            for path in sorted((base / folder).rglob("*manifest.json")):
                found[path.relative_to(base).as_posix()] = read_json(path)
    return dict(sorted(found.items()))


@dataclass
class Index:
    """Where each recorded output comes from.

    ``files``: output file path -> (manifest path, recorded sha256); ``dirs``: output folder path ->
    manifest path (a file below it resolves to that manifest, with the sha256 of the folder entry);
    ``duplicates``: output path -> every manifest that lists it, when more than one does.
    """

    manifests: dict[str, dict[str, Any]]
    files: dict[str, tuple[str, str | None]] = field(default_factory=dict)
    dirs: dict[str, str] = field(default_factory=dict)
    duplicates: dict[str, list[str]] = field(default_factory=dict)

    def producer(self, path: str) -> tuple[str, str | None] | None:
        """``(manifest, recorded sha256)`` of the job that wrote ``path`` (a file, possibly inside a
        recorded folder), or ``None``.  A folder path itself gives ``(manifest, None)``."""
        path = norm(path)
        if path in self.files:
            return self.files[path]
        if path in self.dirs:
            return self.dirs[path], None
        parent = os.path.dirname(path)
        while parent and parent not in ("/", "."):
            if parent in self.dirs:
                return self.files.get(path, (self.dirs[parent], None))
            parent = os.path.dirname(parent)
        return None


def build_index(manifests: dict[str, dict[str, Any]]) -> Index:
    """The :class:`Index` of the outputs of ``manifests`` (as :func:`load_manifests` returns them)."""
    index = Index(manifests)
    owners: dict[str, list[str]] = {}
    for name, manifest in manifests.items():
        for entry in manifest.get("outputs", []):
            path = norm(entry["path"])
            owners.setdefault(path, []).append(name)
            if "files" in entry:
                index.dirs.setdefault(path, name)
            for file, digest in recorded_files(entry):
                index.files.setdefault(file, (name, digest))
    index.duplicates = {path: names for path, names in owners.items() if len(names) > 1}
    return index


def pins(manifest: dict[str, Any]) -> list[dict[str, Any]]:
    """The model and data pins of a job, read from its ``config`` and ``notes``.

    A pin is a value of a key ``sha256`` or ``<name>_sha256`` that is a 64-hex digest (or a mapping
    of names to such digests), or a non-empty ``revision`` / ``<name>_revision``.  Returns dicts
    ``{"where": dotted key path, "sha256" or "revision": value, "identifier": the spec, id, url or
    file beside it (or the mapping's key), or None}``, in the order found.
    """
    found: list[dict[str, Any]] = []

    def beside(mapping: dict[str, Any], key: str) -> str | None:
        stem = key.rsplit("_", 1)[0] if "_" in key else ""
        names = [f"{stem}_{k}" for k in _IDENTIFIER_KEYS] if stem else list(_IDENTIFIER_KEYS)
        return next((mapping[k] for k in names if isinstance(mapping.get(k), str)), None)

    def walk(value: Any, where: str) -> None:
        if isinstance(value, list):
            for i, item in enumerate(value):
                walk(item, f"{where}[{i}]")
        if not isinstance(value, dict):
            return
        for key, item in value.items():
            here = f"{where}.{key}"
            if key == "sha256" or key.endswith("_sha256"):
                if isinstance(item, str) and _HEX64.match(item):
                    found.append({"where": here, "sha256": item, "identifier": beside(value, key)})
                    continue
                if (
                    isinstance(item, dict)
                    and item
                    and all(isinstance(v, str) and _HEX64.match(v) for v in item.values())
                ):
                    found.extend({"where": f"{here}.{k}", "sha256": v, "identifier": k} for k, v in item.items())
                    continue
            if (key == "revision" or key.endswith("_revision")) and isinstance(item, str) and item:
                found.append({"where": here, "revision": item, "identifier": beside(value, key)})
                continue
            walk(item, here)

    walk(manifest.get("config") or {}, "config")
    walk(manifest.get("notes") or {}, "notes")
    return found


def findings_records(base: str | os.PathLike, claim_id: str) -> list[tuple[int, dict[str, Any]]]:
    """``(position in results/findings.json, record)`` of every finding with ``claim_id`` (empty when
    the file is absent or names no such claim)."""
    return [
        (i, r) for i, r in enumerate(_findings(Path(base))) if isinstance(r, dict) and r.get("claim_id") == claim_id
    ]


# ------------------------------------------------------------------ the trace


@dataclass(frozen=True)
class Broken:
    """One broken link: ``kind`` (see the module docstring), the file's ``path``, a readable
    ``message`` naming it, and the manifests whose record it breaks."""

    kind: str
    path: str
    message: str
    manifests: tuple[str, ...] = ()


@dataclass
class Trace:
    """A traced chain.

    ``nodes``: node id -> facts, in the order found.  Ids are ``file:<path>`` (the target),
    ``finding:<claim_id>#<position in findings.json>``, ``step:<manifest path>`` (one job),
    ``raw:<path>`` (a raw input) and ``unrecorded:<path>`` (a derived file no manifest lists).
    Every node has ``kind`` (``file``, ``finding``, ``step``, ``raw``, ``unrecorded``).  A step has
    ``manifest``, ``rule``, ``wildcards``, ``config``, ``seed``, ``git``, ``packages``, ``python``,
    ``platform``, ``notes``, ``pins`` (:func:`pins`) and ``inputs``/``outputs``: the manifest's
    entries, each with ``status`` (``ok``, ``changed``, ``missing``, ``unhashed``, ``stale``,
    ``no manifest``, ``unlisted``; ``off-chain`` for an output nothing on the chain reads and
    ``not followed`` for an input of the findings job outside the claim's study, neither hashed),
    ``current`` (sha256 now; per file for a folder, with ``file_status``) and, for inputs,
    ``followed``.  A ``raw``, ``unrecorded`` or ``file`` node has ``path``, ``folder``,
    ``recorded`` ({file: {reading manifest: sha256}}), ``current`` ({file: sha256 or None}) and
    ``status`` ({file: status}).  A ``finding`` has ``claim_id`` and :data:`FINDING_FACTS`.
    ``edges``: ``(source id, target id, path)`` in the direction data flows (producer -> consumer).
    ``children``: node id -> the ids it derives from, in input order.  ``roots``: the target's or
    the claim's node ids.  ``depth``: steps on the longest chain (module docstring).
    """

    target: str
    base: str
    roots: list[str]
    nodes: dict[str, dict[str, Any]]
    edges: list[tuple[str, str, str]]
    children: dict[str, list[str]]
    broken: list[Broken]
    depth: int

    @property
    def whole(self) -> bool:
        """No broken link."""
        return not self.broken


class _Hasher:
    """sha256 of files under ``base``, each computed at most once (``None``: no such file)."""

    def __init__(self, base: Path):
        self.base, self.known = base, {}

    def full(self, path: str) -> Path:
        return Path(path) if os.path.isabs(path) else self.base / path

    def prefetch(self, paths: set[str]) -> None:
        todo = sorted(p for p in paths if p not in self.known)
        files = [p for p in todo if self.full(p).is_file()]
        self.known.update({p: None for p in todo})
        # hashlib releases the GIL on large buffers: threads hash the big model files side by side
        with ThreadPoolExecutor(max_workers=max(1, min(4, os.cpu_count() or 1))) as pool:
            self.known.update(zip(files, pool.map(lambda p: sha256_file(self.full(p)), files)))

    def __call__(self, path: str) -> str | None:
        if path not in self.known:
            self.prefetch({path})
        return self.known[path]


@dataclass(frozen=True)
class _Check:
    """One file on the chain: what its reader recorded (``read``) and its writer (``wrote``)."""

    path: str
    read: str | None
    wrote: str | None
    reader: str  # manifest path of the job that read it ("" for the target, a figure, findings.json)
    writer: str  # manifest path of the job that wrote it ("" for a raw or unrecorded file)
    role: str  # "input" | "raw" | "no-manifest" | "unlisted"


class _Tracer:
    def __init__(self, base: Path, index: Index):
        self.base, self.index = base, index
        self.nodes: dict[str, dict[str, Any]] = {}
        self.edges: dict[tuple[str, str, str], None] = {}
        self.children: dict[str, list[str]] = {}
        self.checks: list[_Check] = []

    def link(self, source: str, target: str, path: str) -> None:
        self.edges[(source, target, path)] = None
        if source not in self.children.setdefault(target, []):
            self.children[target].append(source)

    @staticmethod
    def derived(path: str) -> bool:
        return not os.path.isabs(path) and path.startswith(DERIVED)

    def consume(
        self, node: str, path: str, reader: str, read: str | None = None, files: dict[str, str | None] | None = None
    ) -> None:
        """Link what ``node`` read to where it comes from: the file ``path`` (recorded ``read`` sha256
        by the job ``reader``; ``""`` for a root's own file) or, with ``files`` ({relpath: sha256}),
        the folder ``path``.  The source is the job that wrote it, a raw leaf, or an unrecorded node."""
        if files is None:
            listed = {path: read}
        else:
            listed = {
                norm(f"{path}/{rel}"): d
                for rel, d in sorted(files.items())
                if os.path.basename(rel) not in SNAKEMAKE_MARKERS
            }
        produced = self.index.producer(path)
        if produced is None and files is not None and any(self.index.producer(f) for f in listed):
            for file, digest in listed.items():  # a folder several jobs filled: file by file
                self.consume(node, file, reader, digest)
            return
        if produced is not None:
            writer = produced[0]
            self.link(self.step(writer), node, path)
            for file, digest in listed.items():
                mine = self.index.files.get(file)
                if mine is None or mine[0] != writer:
                    self.checks.append(_Check(file, digest, None, reader, writer, "unlisted"))
                else:
                    self.checks.append(_Check(file, digest, mine[1], reader, writer, "input"))
            return
        kind = "unrecorded" if self.derived(path) else "raw"
        source = f"{kind}:{path}"
        facts = self.nodes.setdefault(source, {"kind": kind, "path": path, "folder": files is not None, "recorded": {}})
        self.children.setdefault(source, [])
        self.link(source, node, path)
        for file, digest in listed.items():
            facts["recorded"].setdefault(file, {})[reader] = digest
            self.checks.append(_Check(file, digest, None, reader, "", "no-manifest" if kind == "unrecorded" else "raw"))

    def read(self, node: str, entry: dict[str, Any], reader: str) -> None:
        """:meth:`consume` one input entry of ``reader``'s manifest (a file or a folder entry)."""
        self.consume(node, entry["path"], reader, entry.get("sha256"), entry.get("files"))

    def step(self, manifest_path: str, follow: Callable[[str], bool] | None = None) -> str:
        """The node of one job, its inputs followed (only those ``follow`` accepts, when given)."""
        node = f"step:{manifest_path}"
        if node in self.nodes:
            return node
        m = self.index.manifests[manifest_path]
        facts: dict[str, Any] = {
            "kind": "step",
            "manifest": manifest_path,
            **{k: m.get(k) for k in ("rule", "wildcards", "config", "seed", "git", "packages", "python", "platform")},
            "notes": m.get("notes") or {},
            "pins": pins(m),
            "inputs": [dict(e, path=norm(e["path"])) for e in m.get("inputs", [])],
            "outputs": [dict(e, path=norm(e["path"])) for e in m.get("outputs", [])],
        }
        self.nodes[node] = facts
        self.children[node] = []
        for entry in facts["inputs"]:
            entry["followed"] = follow is None or follow(entry["path"])
            if entry["followed"]:
                self.read(node, entry, manifest_path)
        return node

    def target(self, path: str) -> str:
        """The root node of a file target (a raw file is its own root, depth 0)."""
        if self.index.producer(path) is None and not self.derived(path):
            node = f"raw:{path}"
            self.nodes[node] = {"kind": "raw", "path": path, "folder": False, "recorded": {path: {}}}
            self.children[node] = []
            self.checks.append(_Check(path, None, None, "", "", "raw"))
            return node
        node = f"file:{path}"
        self.nodes[node] = {"kind": "file", "path": path}
        self.children[node] = []
        if path in self.index.dirs:  # a folder output: its files as its writer recorded them
            writer = self.index.dirs[path]
            files = {
                f[len(path) + 1 :]: digest
                for f, (manifest, digest) in self.index.files.items()
                if manifest == writer and f.startswith(path + "/")
            }
            self.nodes[node].update(folder=True, recorded={f"{path}/{rel}": {"": d} for rel, d in files.items()})
            self.consume(node, path, "", files=files)
        else:
            self.consume(node, path, "")
        return node

    def finding(self, position: int, record: dict[str, Any]) -> str:
        """The root node of one finding record: the findings job (through the claim's study folder
        only, :data:`STUDY_FOLDERS`) and the record's figure."""
        claim = record.get("claim_id") or ""
        node = f"finding:{claim}#{position}"
        self.nodes[node] = {"kind": "finding", "claim_id": claim, **{k: record.get(k) for k in FINDING_FACTS}}
        self.children[node] = []
        folder = STUDY_FOLDERS.get(claim.split(".", 1)[0])
        produced = self.index.producer(FINDINGS)
        if produced is not None:
            self.step(produced[0], None if folder is None else (lambda p: p.startswith(folder)))
        self.consume(node, FINDINGS, "")
        if record.get("figure"):
            self.consume(node, norm(f"{layout.RESULTS}/{record['figure']}"), "")
        return node


def _verdicts(tracer: _Tracer, hasher: _Hasher) -> list[Broken]:
    """Hash every file on the chain once, set the status of every entry and leaf, and return the
    broken links (one per kind and path, naming every manifest involved)."""
    hasher.prefetch({c.path for c in tracer.checks})
    broken: dict[tuple[str, str], Broken] = {}

    def report(kind: str, path: str, message: str, *manifests: str) -> None:
        names = {m for m in manifests if m}
        if (kind, path) in broken:
            old = broken[(kind, path)]
            message, names = old.message, names | set(old.manifests)
        broken[(kind, path)] = Broken(kind, path, message, tuple(sorted(names)))

    state: dict[tuple[str, str], str] = {}  # (path, reader manifest or "" for a root's file) -> status
    wrote: dict[tuple[str, str], str] = {}  # (path, writer manifest) -> status of the writer's record
    for c in tracer.checks:
        current = hasher(c.path)
        if c.role == "no-manifest":
            hint = _space_joined_hint(tracer.index, c.path)
            message = f"{c.path}: no manifest under {' or '.join(DERIVED)} lists it as an output{hint}"
            report("no-manifest", c.path, message, c.reader)
            state[(c.path, c.reader)] = "no manifest"
            continue
        if c.role == "unlisted":
            message = f"{c.path}: inside an output folder of {c.writer}, which does not list it among its files"
            report("no-manifest", c.path, message, c.reader, c.writer)
            state[(c.path, c.reader)] = "unlisted"
            continue
        if c.writer:
            mine = "ok" if c.wrote == current else "missing" if current is None else "changed"
            wrote[(c.path, c.writer)] = "unhashed" if c.wrote is None else mine
        if c.reader:  # a job read it: its record is what the chain rests on
            expected, who = c.read, c.reader
        elif c.writer:  # a root's own file (the target, a figure, findings.json): its writer's record
            expected, who = c.wrote, c.writer
        else:  # a raw file traced by itself: nothing recorded to compare
            state[(c.path, c.reader)] = "ok" if current else "missing"
            continue
        status = "ok"
        if expected is None:
            status = "unhashed"
            report("unhashed", c.path, f"{c.path}: recorded without a sha256 by {who}", who)
        elif current is None:
            status = "missing"
            report("missing", c.path, f"{c.path}: recorded by {who} (sha256 {expected}) but gone", who)
        elif current != expected:
            status = "changed"
            report(
                "changed", c.path, f"{c.path}: changed since {who} recorded it (sha256 {expected}, now {current})", who
            )
        if c.reader and c.writer and c.read and c.wrote and c.read != c.wrote:
            status = "stale" if status == "ok" else status
            message = f"{c.path}: {c.reader} read sha256 {c.read} but {c.writer} wrote {c.wrote}"
            report("stale", c.path, message, c.reader, c.writer)
        state[(c.path, c.reader)] = status
    for path, names in tracer.index.duplicates.items():
        if any(c.path == path for c in tracer.checks):
            report("duplicate", path, f"{path}: listed as an output by {len(names)} manifests", *names)

    for node in tracer.nodes.values():
        if node["kind"] == "step":
            for entry in node["inputs"]:
                _set_status(entry, lambda p, m=node["manifest"]: state.get((p, m)), hasher)
            for entry in node["outputs"]:
                _set_status(entry, lambda p, m=node["manifest"]: wrote.get((p, m)), hasher)
        elif node["kind"] in ("raw", "unrecorded", "file"):
            files = node.get("recorded") or {node["path"]: {"": None}}
            node["current"] = {f: hasher(f) for f in files}
            node["status"] = {
                f: _worst(state.get((f, r), "ok") for r in readers or [""]) for f, readers in files.items()
            }
    return sorted(broken.values(), key=lambda b: (b.path, b.kind))


def _worst(states: Iterable[str]) -> str:
    """The first status that is not ``ok`` (``ok`` when all are)."""
    return next((s for s in states if s != "ok"), "ok")


def _set_status(entry: dict[str, Any], status: Callable[[str], str | None], hasher: _Hasher) -> None:
    """Give one manifest entry its ``status`` and ``current`` sha256 (per file for a folder entry:
    ``file_status``); ``not followed`` and ``off-chain`` entries are not hashed."""
    if entry.get("followed") is False:
        entry["status"] = "not followed"
        return
    if "files" in entry:
        files = [rel for rel in entry["files"] if os.path.basename(rel) not in SNAKEMAKE_MARKERS]
        states = {rel: status(norm(f"{entry['path']}/{rel}")) or "off-chain" for rel in files}
        on_chain = [rel for rel, s in states.items() if s != "off-chain"]
        if not on_chain:
            entry["status"] = "off-chain"
            return
        entry["current"] = {rel: hasher(norm(f"{entry['path']}/{rel}")) for rel in on_chain}
        entry["file_status"] = states
        entry["status"] = _worst(states[rel] for rel in on_chain)
        return
    entry["status"] = status(entry["path"]) or "off-chain"
    if entry["status"] != "off-chain":
        entry["current"] = hasher(entry["path"])


def _space_joined_hint(index: Index, path: str) -> str:
    """A hint when a manifest records ``path`` only inside an output entry of several paths joined by
    spaces (a list-valued named output written as one string)."""
    for name, manifest in index.manifests.items():
        for entry in manifest.get("outputs", []):
            if " " in entry["path"] and path in entry["path"].split():
                return (
                    f" ({name} records it only inside the output entry {entry['path']!r}, several paths joined"
                    " by spaces, with no sha256: a list-valued named output)"
                )
    return ""


def _depth(trace_children: dict[str, list[str]], nodes: dict[str, dict[str, Any]], roots: list[str]) -> int:
    memo: dict[str, int] = {}

    def depth(node: str, seen: frozenset[str]) -> int:
        if node in memo:
            return memo[node]
        below = [depth(c, seen | {node}) for c in trace_children.get(node, []) if c not in seen]
        memo[node] = (nodes[node]["kind"] == "step") + max(below, default=0)
        return memo[node]

    return max((depth(r, frozenset()) for r in roots), default=0)


def trace(target: str, base: str | os.PathLike = ".", *, index: Index | None = None, hasher=None) -> Trace:
    """Trace ``target`` (a path relative to ``base`` or absolute, or a claim id) to its raw inputs.

    Reads every manifest under ``base/results`` and ``base/resources`` (or takes ``index``, their
    :func:`build_index`) and hashes each file on the chain once (``hasher``: a ``_Hasher`` shared
    by several traces of one run, :func:`write_pages`).  Returns a :class:`Trace` (its ``broken``
    list is empty when the chain is whole).  Raises :class:`TraceError` when ``target`` is neither
    a file the manifests record or that exists under ``base``, nor a claim id of
    ``base/results/findings.json``.
    """
    base_path = Path(base)
    index = index or build_index(load_manifests(base_path))
    tracer = _Tracer(base_path, index)
    path = target
    if os.path.isabs(path) and os.path.abspath(path).startswith(os.path.abspath(base_path) + os.sep):
        path = os.path.relpath(os.path.abspath(path), os.path.abspath(base_path))
    path = norm(path)
    if path in index.files or path in index.dirs or (base_path / path).exists():
        roots = [tracer.target(path)]
    elif records := findings_records(base_path, target):
        roots = [tracer.finding(position, record) for position, record in records]
    else:
        raise TraceError(
            f"{target}: neither a file under {base_path} or recorded by a manifest there, "
            f"nor a claim id in {base_path / FINDINGS}"
        )
    broken = _verdicts(tracer, hasher or _Hasher(base_path))
    edges = list(tracer.edges)
    return Trace(
        target,
        str(base),
        roots,
        tracer.nodes,
        edges,
        tracer.children,
        broken,
        _depth(tracer.children, tracer.nodes, roots),
    )


# ------------------------------------------------------------------ renderings


def _wildcards(wildcards: dict[str, Any] | None) -> str:
    return " ".join(f"{k}={v}" for k, v in (wildcards or {}).items())


def _step_title(node: dict[str, Any]) -> str:
    wildcards = _wildcards(node.get("wildcards"))
    return f"step {node.get('rule')}{' ' + wildcards if wildcards else ''}  [{node['manifest']}]"


def _entry_line(entry: dict[str, Any], nodes: dict[str, dict[str, Any]], producers: dict[str, str]) -> str:
    if "files" in entry:
        text = f"{entry['path']}/  {len(entry['files'])} files  {entry.get('status', '?')}"
        bad = {rel: s for rel, s in entry.get("file_status", {}).items() if s not in ("ok", "off-chain")}
        text += "".join(f"\n      {entry['path']}/{rel}  {entry['files'][rel]}  {s}" for rel, s in bad.items())
    else:
        text = f"{entry['path']}  {entry.get('sha256')}  {entry.get('status', '?')}"
        if entry.get("status") == "changed":
            text += f" (now {entry.get('current')})"
    source = producers.get(entry["path"])
    if source and source.startswith("step:"):
        node = nodes[source]
        text += f"  <- {node.get('rule')}{' ' + _wildcards(node.get('wildcards')) if node.get('wildcards') else ''}"
    elif source and source.startswith("raw:"):
        text += "  (raw)"
    elif source and source.startswith("unrecorded:"):
        text += "  (NO MANIFEST)"
    return text


def _leaf_lines(node: dict[str, Any], pad: str) -> list[str]:
    """A raw input, unrecorded file or target: each file with its recorded sha256, current status."""
    label = {"raw": "raw", "file": "file", "unrecorded": "unrecorded (no manifest lists it)"}[node["kind"]]
    files = node.get("status") or {}
    head = f"{pad}{label} {node['path']}" + (f"/  {len(files)} files" if node.get("folder") else "")
    lines = [head] if node.get("folder") else []
    for file, status in files.items():
        recorded = sorted({d for d in (node.get("recorded") or {}).get(file, {}).values() if d})
        shown = ", ".join(recorded) or (node.get("current") or {}).get(file) or "-"
        now = (node.get("current") or {}).get(file)
        extra = f" (now {now})" if status == "changed" else ""
        lines.append(
            f"{pad}  {file}  {shown}  {status}{extra}" if node.get("folder") else f"{head}  {shown}  {status}{extra}"
        )
    return lines


def _inputs_by_step(trace: Trace) -> dict[str, dict[str, str]]:
    """step id -> {input path: the node it comes from}."""
    into: dict[str, dict[str, str]] = {}
    for source, target, path in trace.edges:
        into.setdefault(target, {})[path] = source
    return into


def _describe(trace: Trace, node_id: str, into: dict[str, dict[str, str]]) -> tuple[str, list[str]]:
    """One node's title line and the lines of its facts (unindented)."""
    node = trace.nodes[node_id]
    kind = node["kind"]
    if kind == "finding":
        ci = f"[{node.get('ci_low')}, {node.get('ci_high')}]"
        return f"finding {node['claim_id']} [{node.get('status')}] {node.get('study')}: {node.get('claim')}", [
            f"effect {node.get('effect')}  CI {ci}  p {node.get('p')}  n {node.get('n')}",
            f"test {node.get('test')}",
            f"source {node.get('source')}  figure {node.get('figure')}",
        ]
    if kind == "step":
        git = node.get("git") or {}
        dirty = {True: "uncommitted changes", False: "clean", None: "unknown"}[git.get("dirty")]
        packages = ", ".join(f"{k} {v}" for k, v in (node.get("packages") or {}).items() if v)
        lines = [
            f"code {git.get('commit')} ({dirty})  seed {node.get('seed')}",
            f"python {node.get('python')} on {node.get('platform')}",
            f"packages {packages}",
            f"params {json.dumps(node.get('config'), sort_keys=True)}",
        ]
        for pin in node["pins"]:
            value = pin.get("sha256") or f"revision {pin.get('revision')}"
            lines.append(f"pin {pin['where']} {value} ({pin.get('identifier')})")
        if node.get("notes"):
            lines.append(f"notes {json.dumps(node['notes'], sort_keys=True)}")
        lines.append("outputs")
        lines.extend(f"  {_entry_line(e, trace.nodes, {})}" for e in node["outputs"])
        lines.append("inputs")
        lines.extend(f"  {_entry_line(e, trace.nodes, into.get(node_id, {}))}" for e in node["inputs"])
        return _step_title(node), lines
    leaf = _leaf_lines(node, "")
    return (leaf[0], leaf[1:]) if node.get("folder") else (leaf[0] if leaf else f"{kind} {node.get('path')}", [])


def _summary(trace: Trace) -> list[str]:
    steps = sum(n["kind"] == "step" for n in trace.nodes.values())
    raws = sum(n["kind"] == "raw" for n in trace.nodes.values())
    npins = sum(len(n["pins"]) for n in trace.nodes.values() if n["kind"] == "step")
    lines = [f"depth {trace.depth} (steps on the longest chain); {steps} steps, {raws} raw inputs, {npins} pins"]
    lines.extend(f"broken: {b.message}  [{b.kind}; {', '.join(b.manifests) or '-'}]" for b in trace.broken)
    lines.append("trace: the chain is whole" if trace.whole else f"trace: {len(trace.broken)} broken link(s)")
    return lines


def _repeat_title(trace: Trace, node_id: str) -> str:
    node = trace.nodes[node_id]
    title = _step_title(node) if node["kind"] == "step" else f"{node['kind']} {node.get('path', node_id)}"
    return f"{title}  (see above)"


def render_text(trace: Trace) -> str:
    """The trace as indented text (module docstring); ends with the summary and ``broken:`` lines."""
    lines = [f"trace {trace.target}  (base {trace.base})"]
    shown: set[str] = set()
    into = _inputs_by_step(trace)

    def show(node_id: str, indent: int) -> None:
        pad = "  " * indent
        if node_id in shown:
            lines.append(pad + _repeat_title(trace, node_id))
            return
        shown.add(node_id)
        title, facts = _describe(trace, node_id, into)
        lines.append(pad + title)
        lines.extend(f"{pad}  {line}" for line in facts)
        for child in trace.children.get(node_id, []):
            show(child, indent + 1)

    for root in trace.roots:
        show(root, 0)
    return "\n".join(lines + _summary(trace)) + "\n"


def render_html(trace: Trace) -> str:
    """The trace as one self-contained HTML page for the report: the target, the code commit and
    parameters of the job that wrote it, then the chain as nested collapsible blocks (``<details>``,
    one per job, raw input or finding; a repeated node is one line), then the summary and any
    ``broken:`` lines (in red)."""
    into, shown = _inputs_by_step(trace), set()
    parts = []

    def show(node_id: str) -> None:
        if node_id in shown:
            parts.append(f"<div class='seen'>{escape(_repeat_title(trace, node_id))}</div>")
            return
        shown.add(node_id)
        title, facts = _describe(trace, node_id, into)
        kind = trace.nodes[node_id]["kind"]
        parts.append(f"<details class='{kind}'{' open' if node_id in trace.roots else ''}>")
        parts.append(f"<summary>{escape(title)}</summary>")
        if facts:
            parts.append(f"<pre>{escape(chr(10).join(facts))}</pre>")
        for child in trace.children.get(node_id, []):
            show(child)
        parts.append("</details>")

    for root in trace.roots:
        show(root)
    writers = [trace.nodes[c] for r in trace.roots for c in trace.children.get(r, []) if c.startswith("step:")]
    head = [f"<h1>Provenance of {escape(trace.target)}</h1>"]
    for writer in writers[:1]:
        git = writer.get("git") or {}
        head.append(
            f"<p>Written by rule <b>{escape(str(writer.get('rule')))}</b> at commit <code>{escape(str(git.get('commit')))}"
            f"</code>{' (uncommitted changes)' if git.get('dirty') else ''}; parameters:</p>"
            f"<pre>{escape(json.dumps(writer.get('config'), sort_keys=True, indent=1))}</pre>"
        )
    summary = _summary(trace)
    tail = "".join(
        f"<p class='{'broken' if line.startswith('broken:') else 'summary'}'>{escape(line)}</p>" for line in summary
    )
    style = (
        "body{font-family:sans-serif;font-size:14px} details{margin-left:1.2em;border-left:1px solid #ccc;"
        "padding-left:.5em} summary{cursor:pointer;font-family:monospace} pre{font-size:12px;white-space:pre-wrap}"
        " .seen{margin-left:1.2em;font-family:monospace;color:#666} .broken{color:#b00}"
    )
    return (
        f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>Provenance of {escape(trace.target)}</title>"
        f"<style>{style}</style></head><body>{''.join(head)}{''.join(parts)}{tail}</body></html>\n"
    )


#: the outputs that get a trace page in the report (figures as PNG, tables)
PAGE_SUFFIXES = (".png", ".csv", ".tex")


def page_name(path: str) -> str:
    """The file name of ``path``'s trace page: the path with ``/`` as ``__``, then ``.html``
    (``results/figures/sort/fig3a.png`` -> ``results__figures__sort__fig3a.png.html``); the report's
    captions link it by this name (workflow/report/provenance_link.rst)."""
    return norm(path).replace("/", "__") + ".html"


def write_pages(base: str | os.PathLike, out: str | os.PathLike) -> list[Path]:
    """One HTML trace page (:func:`render_html`) in ``out`` for every file under ``results/`` with a
    suffix of :data:`PAGE_SUFFIXES` that a manifest records as an output; the page of
    ``results/findings.csv`` also holds the trace of every claim id of ``results/findings.json``.
    Manifests are read and each file hashed once for all pages.  Returns the pages written, sorted.
    """
    base_path, out_path = Path(base), Path(out)
    out_path.mkdir(parents=True, exist_ok=True)
    index, hasher = build_index(load_manifests(base_path)), _Hasher(base_path)
    targets = sorted(p for p in index.files if p.startswith(f"{layout.RESULTS}/") and p.endswith(PAGE_SUFFIXES))
    claims = sorted({r.get("claim_id") for r in _findings(base_path) if r.get("claim_id")})
    pages = []
    for target in targets:
        html = render_html(trace(target, base_path, index=index, hasher=hasher))
        if target == layout.FINDINGS_TABLE.path():
            per_claim = "".join(
                "<h2>" + claim + "</h2>" + _body(render_html(trace(claim, base_path, index=index, hasher=hasher)))
                for claim in claims
            )
            html = html.replace("</body>", f"<h1>Each finding</h1>{per_claim}</body>")
        page = out_path / page_name(target)
        page.write_text(html, encoding="utf-8")
        pages.append(page)
    return pages


def _body(html: str) -> str:
    return html.split("<body>", 1)[1].rsplit("</body>", 1)[0]


def _findings(base: Path) -> list[dict[str, Any]]:
    path = base / FINDINGS
    return read_json(path) if path.is_file() else []


def to_json(trace: Trace) -> dict[str, Any]:
    """One JSON-able document: ``target``, ``base``, ``roots``, ``depth``, ``whole``, ``nodes`` (list
    of ``{"id", "kind", ...facts}``, see :class:`Trace`), ``edges`` (``{"source", "target",
    "path"}``, data-flow direction) and ``broken`` (``{"kind", "path", "message", "manifests"}``)."""
    return {
        "target": trace.target,
        "base": trace.base,
        "roots": trace.roots,
        "depth": trace.depth,
        "whole": trace.whole,
        "nodes": [{"id": node_id, **facts} for node_id, facts in trace.nodes.items()],
        "edges": [{"source": s, "target": t, "path": p} for s, t, p in trace.edges],
        "broken": [
            {"kind": b.kind, "path": b.path, "message": b.message, "manifests": list(b.manifests)} for b in trace.broken
        ],
    }


def _dot_quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def to_dot(trace: Trace) -> str:
    """Graphviz DOT of the trace: a ``digraph`` whose nodes are the steps (boxes), raw inputs (notes),
    the target (a double octagon), findings (hexagons) and unrecorded files (red notes); edges run
    from producer to consumer, labelled with the file's name.  Broken files' edges and nodes, and
    steps whose record a broken link names, are red."""
    bad_paths = {b.path for b in trace.broken}
    bad_manifests = {m for b in trace.broken for m in b.manifests}
    lines = ["digraph trace {", "  rankdir=LR;", '  node [fontname="Helvetica", fontsize=10];']
    for node_id, node in trace.nodes.items():
        kind = node["kind"]
        red = False
        if kind == "step":
            wildcards = _wildcards(node.get("wildcards"))
            label, shape = f"{node.get('rule')}\n{wildcards}" if wildcards else str(node.get("rule")), "box"
            red = node["manifest"] in bad_manifests
        elif kind == "finding":
            label, shape = f"{node['claim_id']}\n{node.get('status')}", "hexagon"
        else:
            label = node.get("path", node_id)
            shape = {"raw": "note", "file": "doubleoctagon", "unrecorded": "note"}[kind]
            red = kind == "unrecorded" or label in bad_paths
        style = ", color=red, fontcolor=red" if red else ""
        lines.append(f"  {_dot_quote(node_id)} [shape={shape}, label={_dot_quote(label)}{style}];")
    for source, target, path in trace.edges:
        style = ", color=red, fontcolor=red" if path in bad_paths else ""
        lines.append(
            f"  {_dot_quote(source)} -> {_dot_quote(target)} [label={_dot_quote(os.path.basename(path))}{style}];"
        )
    lines.append("}")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("target", help="a file path relative to --base, or a finding's claim id")
    parser.add_argument("--base", default=".", help="the workflow's working directory (default: .)")
    parser.add_argument("--format", choices=("text", "json"), default="text")
    parser.add_argument("--dot", action="store_true", help="write Graphviz DOT instead")
    args = parser.parse_args(argv)
    try:
        result = trace(args.target, args.base)
    except TraceError as err:
        print(f"trace: {err}", file=sys.stderr)
        return 2
    if args.dot:
        sys.stdout.write(to_dot(result))
        for b in result.broken:
            print(f"broken: {b.message}", file=sys.stderr)
    elif args.format == "json":
        print(json.dumps(to_json(result), indent=1, sort_keys=False))
        for b in result.broken:
            print(f"broken: {b.message}", file=sys.stderr)
    else:
        sys.stdout.write(render_text(result))
    return 0 if result.whole else 1


if __name__ == "__main__":
    sys.exit(main())

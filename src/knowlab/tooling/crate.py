"""A Workflow Run RO-Crate of a finished run, built from the jobs' manifests.

Writes ``OUT/ro-crate-metadata.json``: a metadata-only crate (no file is copied) whose data entities
point at the run's files by their path relative to the crate folder (``../fictionalqa/...`` for
``OUT = results/ro-crate``; a file outside the run's folder by its absolute ``file://`` URI), built
with the ``rocrate`` library and following the Provenance Run Crate profile 0.5
(https://w3id.org/ro/wfrun/provenance/0.5), itself a Workflow Run Crate
(https://w3id.org/ro/wfrun/workflow/0.5), Process Run Crate (https://w3id.org/ro/wfrun/process/0.5)
and Workflow RO-Crate (https://w3id.org/workflowhub/workflow-ro-crate/1.0), on RO-Crate 1.1.

Usage::

    python -m knowlab.tooling.crate [--base DIR] [--out results/ro-crate] [--workflow DIR] [--date D] [--validate]

What the crate says (the run's facts from the manifests, :mod:`knowlab.core.provenance`; which
``rules/*.smk`` defines a rule, its conda env and the licence from the workflow folder as it is now,
which may differ from the commit the jobs recorded):

* the root ``./`` has the Snakefile as ``mainEntity``: a ``File``, ``SoftwareSourceCode``,
  ``ComputationalWorkflow`` and ``HowTo`` in Snakemake (``programmingLanguage``), whose ``version`` is
  the code commit most jobs recorded (``-dirty`` when they ran with uncommitted changes);
* one tool per rule (``SoftwareApplication`` ``#rule/<rule>``, a ``hasPart`` of the workflow, part of
  the ``rules/*.smk`` file that defines it), with its ``FormalParameter`` inputs (one per parameter of
  the rule's ``params``, and the input files and folders) and outputs, and its packages and Python as
  ``softwareRequirements``; one ``HowToStep`` per rule (``step`` of the workflow, ``workExample`` the
  tool, ``buildInstructions`` the rule's conda env file);
* one ``CreateAction`` per job (``#job/<manifest path>``): ``instrument`` its rule's tool, ``object``
  its input files and folders (``File`` / ``Dataset`` entities with the recorded ``sha256``; a folder's
  files are its ``hasPart``), its parameters (``PropertyValue``, ``exampleOfWork`` the tool's
  ``FormalParameter``) and the model/data pins of its config and notes (``CreativeWork`` with
  ``identifier`` and ``sha256`` or ``version``); ``result`` its outputs and its manifest; code commit,
  Python, platform, wildcards and notes as ``additionalProperty``;
* the run: a ``CreateAction`` ``#run`` of the workflow (raw inputs in, outputs no job read out), an
  ``OrganizeAction`` ``#organize`` (``instrument`` Snakemake, ``result`` ``#run``) and one
  ``ControlAction`` per job linking its ``HowToStep`` and its ``CreateAction``;
* packages as ``SoftwareApplication`` (``https://pypi.org/project/<name>/<version>/``,
  ``softwareVersion``);
* ``results/findings.json`` as a ``File``, and each of its records as a ``Claim`` (``identifier`` the
  claim id, ``creativeWorkStatus`` its status, ``isBasedOn`` its figure, the numbers as
  ``additionalProperty``);
* ``rules/*.smk``, ``envs/*.yaml`` and ``config/*.yaml`` as files of the root (``hasPart``), not of the
  workflow: the profile requires every ``hasPart`` of the workflow to be a tool some action ran;
* a ``README.md`` written beside the metadata file, saying how to read and check the crate.

Files are identified by path, with the sha256 the job that wrote them recorded (or, for a raw
input, the one the jobs that read it recorded; every value when they disagree).  A recorded path
absent when the crate is built is a contextual entity ``#absent/<path>`` (the availability check
of the validator skips local identifiers).  Terms RO-Crate 1.1's context lacks are added to the
``@context`` (:data:`EXTRA_TERMS`).

Deterministic: the same run gives the same bytes.  No clock is read: ``datePublished`` is the
``--date`` given, else the commit date of the workflow version (``git show`` in the workflow folder),
else (a copy without git) the newest modification time (UTC) of the workflow's code (Snakefile,
rules, scripts, ``src/``), which a copy keeps; entities are sorted by id, lists by value.

Validate with the RO-Crate validator (roc-validator, offline it needs the RO-Crate 1.1 JSON-LD
context in its HTTP cache: ``rocrate-validator cache warm -p provenance-run-crate-0.5`` once online)::

    rocrate-validator validate --offline -p provenance-run-crate-0.5 results/ro-crate

or :func:`validate_crate` (``--validate``).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import subprocess
import sys
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote

from rocrate.rocrate import ROCrate

from knowlab.layout import OUTPUT_FOLDERS, RESULTS, RO_CRATE
from knowlab.tooling.envs import workflow_rules
from knowlab.tooling.trace import FINDINGS, build_index, load_manifests, norm, pins, recorded_files

PROFILES = {
    "https://w3id.org/ro/wfrun/process/0.5": "Process Run Crate",
    "https://w3id.org/ro/wfrun/workflow/0.5": "Workflow Run Crate",
    "https://w3id.org/ro/wfrun/provenance/0.5": "Provenance Run Crate",
    "https://w3id.org/workflowhub/workflow-ro-crate/1.0": "Workflow RO-Crate",
}
#: terms this crate uses that the RO-Crate 1.1 context lacks
EXTRA_TERMS = {
    "sha256": "http://schema.org/sha256",
    "buildInstructions": "https://codemeta.github.io/terms/buildInstructions",
}
VALIDATION_PROFILE = "provenance-run-crate-0.5"
CONDA_ENV_SPEC = "https://docs.conda.io/projects/conda/en/latest/user-guide/tasks/manage-environments.html"
FORMAL_PARAMETER_PROFILE = "https://bioschemas.org/profiles/FormalParameter/1.0-RELEASE"
COMPLETED = "http://schema.org/CompletedActionStatus"  # a text value: the profiles compare strings
#: media types by suffix (a suffix not listed gets no encodingFormat)
MEDIA_TYPES = {
    ".csv": "text/csv",
    ".json": "application/json",
    ".jsonl": "application/jsonl",
    ".parquet": "application/vnd.apache.parquet",
    ".png": "image/png",
    ".pdf": "application/pdf",
    ".txt": "text/plain",
    ".md": "text/markdown",
    ".tex": "application/x-tex",
    ".yaml": "application/yaml",
    ".yml": "application/yaml",
    ".html": "text/html",
    ".safetensors": "application/octet-stream",
    ".smk": "text/x-snakemake",
    ".tsv": "text/tab-separated-values",
    ".gz": "application/gzip",
    ".jinja": "text/plain",
    ".log": "text/plain",
    ".py": "text/x-python",
}
#: the encodingFormat of a file whose suffix :data:`MEDIA_TYPES` does not list
UNKNOWN_MEDIA_TYPE = "application/octet-stream"
#: the numbers of a finding record shown as the Claim's additionalProperty
FINDING_NUMBERS = (
    "effect",
    "ci_low",
    "ci_high",
    "confidence",
    "p",
    "alpha",
    "n",
    "n_clusters",
    "unit",
    "scale",
    "test",
)


class CrateError(ValueError):
    """No manifest under the base, or no Snakefile to be the crate's main entity."""


# ------------------------------------------------------------------ facts gathered from the manifests


def _majority(values: list[Any]) -> Any:
    """The most frequent value (ties: the smallest as text); ``None`` for no values."""
    counts = Counter(json.dumps(v, sort_keys=True) for v in values)
    if not counts:
        return None
    best = max(counts.values())
    return json.loads(min(k for k, n in counts.items() if n == best))


def _type_of(value: Any) -> str:
    """The FormalParameter ``additionalType`` (a schema.org DataType) of one parameter value."""
    if isinstance(value, bool):
        return "Boolean"
    if isinstance(value, int):
        return "Integer"
    if isinstance(value, float):
        return "Float"
    return "Text"


def _param_type(values: list[Any]) -> str:
    kinds = {_type_of(v) for v in values}
    if len(kinds) == 1:
        return kinds.pop()
    return "Number" if kinds <= {"Integer", "Float"} else "Text"


def _value(value: Any, kind: str) -> Any:
    """A parameter value as the PropertyValue's ``value``: itself when its type is the parameter's,
    else JSON text (folders, lists, null)."""
    if kind != "Text" and not isinstance(value, (dict, list)) and value is not None:
        return value
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True)


def rule_sources(workflow: Path) -> dict[str, dict[str, str | None]]:
    """Where each rule is defined: ``{rule: {"file": path relative to workflow, "conda": env file
    relative to workflow or None}}``, as Snakemake defines the rules of ``workflow``
    (:func:`knowlab.tooling.envs.workflow_rules`, which runs Snakemake: the dev venv).  The
    workflow's own run passes the same map from its rule ``provenance`` (``rules/common.smk``)."""
    def rel(path: Path) -> str:
        return os.path.relpath(path, workflow)

    return {
        name: {"file": rel(rule.snakefile), "conda": rel(rule.env) if rule.env else None}
        for name, rule in workflow_rules(workflow).items()
    }


def _commit_date(workflow: Path | None, commit: str | None) -> str | None:
    """The committer date (ISO 8601) of ``commit`` in the git repository at ``workflow``, or None."""
    if workflow is None or not commit:
        return None
    try:
        out = subprocess.run(
            ["git", "-C", str(workflow), "show", "-s", "--format=%cI", commit],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None
    return out or None


def _license(workflow: Path | None) -> dict[str, Any] | str:
    """The licence of the workflow: an SPDX entity for an MIT ``LICENSE``, else its first line."""
    path = workflow / "LICENSE" if workflow else None
    first = path.read_text(encoding="utf-8").strip().splitlines()[0] if path and path.is_file() else ""
    if first.startswith("MIT License"):
        return {"@id": "https://spdx.org/licenses/MIT", "@type": "CreativeWork", "name": "MIT License"}
    return first or "not stated"


# ------------------------------------------------------------------ the crate


class _Builder:
    """The entities of the crate as JSON-LD dicts, before rocrate assembles them."""

    def __init__(self, base: Path, out: Path):
        self.base, self.out = base, out
        self.entities: dict[str, dict[str, Any]] = {}  # contextual entities, by id
        self.data: dict[str, dict[str, Any]] = {}  # data entities (File / Dataset), by id

    # -- ids
    def ident(self, path: str, folder: bool = False) -> str:
        """The crate id of a recorded path: relative to the crate folder inside the base, an absolute
        ``file://`` URI outside it, ``#absent/<path>`` when nothing is there now."""
        full = Path(os.path.normpath(path if os.path.isabs(path) else self.base / path))
        if not full.exists():
            return f"#absent/{quote(norm(path), safe='/')}"
        inside = full == self.base or self.base in full.parents
        if inside:
            ident = quote(os.path.relpath(full, self.out).replace(os.sep, "/"), safe="/")
        else:
            ident = "file://" + quote(full.as_posix(), safe="/")
        return ident.rstrip("/") + "/" if folder else ident

    def add(self, entity: dict[str, Any]) -> str:
        """Add or merge a contextual entity (list-valued properties are unioned); its id."""
        known = self.entities.setdefault(entity["@id"], {})
        for key, value in entity.items():
            if key in known and isinstance(known[key], list):
                known[key] = known[key] + [v for v in _as_list(value) if v not in known[key]]
            else:
                known[key] = value
        return entity["@id"]

    def file(self, path: str, sha: list[str], folder_files: dict[str, list[str]] | None = None) -> str:
        """The data entity of a recorded file (``sha``: its recorded sha256 values) or folder
        (``folder_files``: {relpath: sha256 values}); its id."""
        ident = self.ident(path, folder=folder_files is not None)
        if ident.startswith("#"):
            self.add(
                {
                    "@id": ident,
                    "@type": "CreativeWork",
                    "name": norm(path),
                    "description": f"{norm(path)}: recorded by the run's manifests, absent when this crate was built",
                }
            )
            return ident
        if ident in self.data:
            return ident
        props: dict[str, Any] = {"name": norm(path)}
        if folder_files is not None:
            parts = [self.file(f"{norm(path)}/{rel}", digests) for rel, digests in sorted(folder_files.items())]
            self.data[ident] = {"@type": "Dataset", **props, "hasPart": [{"@id": p} for p in sorted(set(parts))]}
            return ident
        if sha:
            props["sha256"] = sha[0] if len(sha) == 1 else sorted(sha)
            if len(sha) > 1:
                props["description"] = "the run's manifests recorded different sha256 for this file"
        props["encodingFormat"] = MEDIA_TYPES.get(Path(path).suffix, UNKNOWN_MEDIA_TYPE)
        self.data[ident] = {"@type": "File", **props}
        return ident


def _job_params(manifest: dict[str, Any]) -> dict[str, Any]:
    """A job's parameters: its manifest's config slice, and its seed when the slice lacks one."""
    params = dict(manifest.get("config") or {})
    if manifest.get("seed") is not None and "seed" not in params:
        params["seed"] = manifest["seed"]
    return params


def _as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def _ref(ident: str) -> dict[str, str]:
    return {"@id": ident}


def _refs(idents: Any) -> list[dict[str, str]]:
    return [_ref(i) for i in sorted(set(idents))]


def _package_id(name: str, version: str) -> str:
    return f"https://pypi.org/project/{name}/{quote(version, safe='')}/"


def build_crate(
    base: str | os.PathLike = ".",
    out: str | os.PathLike = RO_CRATE.path(),
    *,
    workflow: str | os.PathLike | None = None,
    date_published: str | None = None,
    rules: Mapping[str, Mapping[str, str | None]] | None = None,
) -> Path:
    """Write the Provenance Run Crate of the run in ``base`` to ``out/ro-crate-metadata.json``.

    ``base``: the workflow's working directory (its ``results/`` and ``resources/`` hold the
    manifests); ``out``: the crate folder (relative to ``base`` unless absolute; created);
    ``workflow``: the folder of the ``Snakefile``, ``rules/``, ``envs/`` and ``config/`` (default:
    ``base`` when it has a Snakefile, else the checkout this module belongs to); ``date_published``:
    an ISO 8601 date for the root's ``datePublished`` (default: see the module docstring); ``rules``:
    where each rule is defined, as :func:`rule_sources` returns it (default: read from ``workflow``).
    Returns the path of the metadata file.  Raises :class:`CrateError` when ``base`` holds no
    manifest or no Snakefile is found.
    """
    base_path = Path(os.path.abspath(base))
    out_path = Path(os.path.abspath(out if os.path.isabs(out) else base_path / out))
    manifests = load_manifests(base_path)
    if not manifests:
        folders = " or ".join(f"{base_path}/{top}" for top in OUTPUT_FOLDERS)
        raise CrateError(f"no *manifest.json under {folders}")
    if workflow is None:
        here = Path(__file__).resolve().parents[3]
        workflow = base_path if (base_path / "Snakefile").is_file() else here
    workflow_path = Path(os.path.abspath(workflow))
    if not (workflow_path / "Snakefile").is_file():
        raise CrateError(f"no Snakefile in {workflow_path} (pass workflow=)")
    index = build_index(manifests)
    b = _Builder(base_path, out_path)

    # what each file was recorded as: by the job that wrote it, else by the jobs that read it
    read: dict[str, set[str]] = {}
    for manifest in manifests.values():
        for entry in manifest.get("inputs", []):
            for path, digest in recorded_files(entry):
                if digest:
                    read.setdefault(path, set()).add(digest)

    def digests(path: str) -> list[str]:
        wrote = index.files.get(path)
        if wrote and wrote[1]:
            return [wrote[1]]
        return sorted(read.get(path, set()))

    def entity_of(entry: dict[str, Any]) -> str:
        path = norm(entry["path"])
        if "files" in entry:
            return b.file(path, [], {rel: digests(f"{path}/{rel}") for rel in entry["files"]})
        return b.file(path, digests(path))

    # -- the workflow and its files
    commits = [(m.get("git") or {}).get("commit") for m in manifests.values()]
    dirty = [(m.get("git") or {}).get("dirty") for m in manifests.values()]
    commit = _majority([c for c in commits if c])
    version = f"{commit}-dirty" if commit and _majority(dirty) else commit
    snakemake_version = _majority([(m.get("packages") or {}).get("snakemake") for m in manifests.values()])
    date = date_published or _commit_date(workflow_path, commit)
    if date is None:  # no git: when the workflow's code last changed (the same in every copy of it)
        code = [workflow_path / "Snakefile", *(workflow_path / "rules").glob("*.smk")]
        code += [*(workflow_path / "scripts").glob("*.py"), *(workflow_path / "src").rglob("*.py")]
        newest = max(path.stat().st_mtime for path in code if path.is_file())
        date = dt.datetime.fromtimestamp(int(newest), dt.timezone.utc).isoformat()

    sources = rules if rules is not None else rule_sources(workflow_path)
    snakefile = b.ident(str(workflow_path / "Snakefile"))
    workflow_files = sorted(
        {
            *(p.relative_to(workflow_path).as_posix() for p in (workflow_path / "rules").glob("*.smk")),
            *(p.relative_to(workflow_path).as_posix() for p in (workflow_path / "envs").glob("*.yaml")),
            *(p.relative_to(workflow_path).as_posix() for p in (workflow_path / "config").glob("*.yaml")),
        }
    )
    wf_file_ids = {}
    for rel in workflow_files:
        ident = b.ident(str(workflow_path / rel))
        props: dict[str, Any] = {"@type": "File", "name": rel, "encodingFormat": MEDIA_TYPES[Path(rel).suffix]}
        if rel.startswith("envs/"):
            props["conformsTo"] = _ref(CONDA_ENV_SPEC)
            props["description"] = "conda environment file of the rules that name it"
        elif rel.startswith("config/"):
            props["description"] = "workflow configuration"
        else:
            props["@type"] = ["File", "SoftwareSourceCode"]
            props["programmingLanguage"] = _ref("https://w3id.org/workflowhub/workflow-ro-crate#snakemake")
            props["description"] = "Snakemake rules included by the Snakefile"
            props["url"] = _ref(ident)  # the rules' source, where a reader finds them
            if version:
                props["version"] = version
        b.data[ident] = props
        wf_file_ids[rel] = ident

    # -- packages and Python
    def software(manifest: dict[str, Any]) -> list[str]:
        ids = []
        for name, pkg_version in sorted((manifest.get("packages") or {}).items()):
            if pkg_version:
                ids.append(
                    b.add(
                        {
                            "@id": _package_id(name, pkg_version),
                            "@type": "SoftwareApplication",
                            "name": name,
                            "softwareVersion": pkg_version,
                            "url": _ref(f"https://pypi.org/project/{name}/"),
                        }
                    )
                )
        if manifest.get("python"):
            py = manifest["python"]
            ids.append(
                b.add(
                    {
                        "@id": f"https://www.python.org/downloads/release/python-{py.replace('.', '')}/",
                        "@type": "SoftwareApplication",
                        "name": "Python",
                        "softwareVersion": py,
                        "url": _ref("https://www.python.org/"),
                    }
                )
            )
        return ids

    # -- the jobs
    rules = sorted({m["rule"] for m in manifests.values()})
    consumed: set[str] = set()
    for manifest in manifests.values():
        for entry in manifest.get("inputs", []):
            consumed.add(norm(entry["path"]))
            consumed.update(p for p, _ in recorded_files(entry))
    tool_params: dict[str, dict[str, list[Any]]] = {r: {} for r in rules}
    job_params = {name: _job_params(manifest) for name, manifest in manifests.items()}
    for name, manifest in manifests.items():
        for key, value in job_params[name].items():
            tool_params[manifest["rule"]].setdefault(key, []).append(value)
    param_types = {r: {k: _param_type(v) for k, v in ps.items()} for r, ps in tool_params.items()}
    tool_io: dict[str, set[str]] = {r: set() for r in rules}
    tool_software: dict[str, set[str]] = {r: set() for r in rules}
    tool_commits: dict[str, list[str]] = {r: [] for r in rules}
    jobs, controls, raw_inputs, final_outputs = [], [], set(), set()

    def filled(entry: dict[str, Any], rule: str, role: str) -> str:
        """The entity of a job's input or output entry, linked to its rule's slot for it (Process Run
        Crate: ``exampleOfWork`` of the rule's ``FormalParameter``)."""
        ident = entity_of(entry)
        if not ident.startswith("#"):
            slot = f"#rule/{rule}/{role}/{'folders' if 'files' in entry else 'files'}"
            tool_io[rule].add(slot)
            work = b.data[ident].setdefault("exampleOfWork", [])
            if _ref(slot) not in work:
                work.append(_ref(slot))
        return ident

    for name, manifest in manifests.items():
        rule = manifest["rule"]
        job = f"#job/{quote(name, safe='/')}"
        tool, step = f"#rule/{rule}", f"#step/{rule}"
        objects, results, facts = [], [], []
        for entry in manifest.get("inputs", []):
            ident = filled(entry, rule, "input")
            objects.append(ident)
            if index.producer(entry["path"]) is None:
                raw_inputs.add(ident)
        for entry in manifest.get("outputs", []):
            ident = filled(entry, rule, "output")
            results.append(ident)
            path = norm(entry["path"])
            if path not in consumed and not any(c.startswith(path + "/") for c in consumed):
                final_outputs.add(ident)
        results.append(b.file(name, []))  # the manifest itself
        for key, value in job_params[name].items():
            kind = param_types[rule][key]
            objects.append(
                b.add(
                    {
                        "@id": f"{job}/param/{quote(key, safe='')}",
                        "@type": "PropertyValue",
                        "name": key,
                        "value": _value(value, kind),
                        "exampleOfWork": _ref(f"{tool}/param/{quote(key, safe='')}"),
                    }
                )
            )
        for pin in pins(manifest):
            value = pin.get("sha256") or pin.get("revision")
            entity = {
                "@id": f"#pin/{quote(pin.get('identifier') or pin['where'], safe='')}/{value}",
                "@type": "CreativeWork",
                "name": pin.get("identifier") or pin["where"],
                "description": f"pinned by rule {rule}'s {pin['where']}",
            }
            if pin.get("identifier"):
                entity["identifier"] = pin["identifier"]
            entity["sha256" if "sha256" in pin else "version"] = value
            objects.append(b.add(entity))
        git = manifest.get("git") or {}
        env = {
            "git-commit": git.get("commit"),
            "git-dirty": git.get("dirty"),
            "python": manifest.get("python"),
            "platform": manifest.get("platform"),
        }
        env.update({f"wildcard/{k}": v for k, v in (manifest.get("wildcards") or {}).items()})
        env.update({f"note/{k}": v for k, v in (manifest.get("notes") or {}).items()})
        for key, value in env.items():
            if value is None:
                continue
            facts.append(
                b.add(
                    {
                        "@id": f"{job}/fact/{quote(key, safe='/')}",
                        "@type": "PropertyValue",
                        "propertyID": key.split("/")[0],
                        "name": key,
                        "value": value if isinstance(value, (str, int, float, bool)) else json.dumps(value),
                    }
                )
            )
        tool_software[rule].update(software(manifest))
        if git.get("commit"):
            tool_commits[rule].append(git["commit"])
        wildcards = " ".join(f"{k}={v}" for k, v in (manifest.get("wildcards") or {}).items())
        title = f"{rule}{' ' + wildcards if wildcards else ''}"
        b.add(
            {
                "@id": job,
                "@type": "CreateAction",
                "name": f"job {title}",
                "description": (
                    f"Snakemake job of rule {rule}, recorded by {name}; code {git.get('commit')}"
                    f"{' with uncommitted changes' if git.get('dirty') else ''}; Python {manifest.get('python')}"
                    f" on {manifest.get('platform')}"
                ),
                "instrument": _ref(tool),
                "object": _refs(objects),
                "result": _refs(results),
                "additionalProperty": _refs(facts),
                "actionStatus": COMPLETED,
            }
        )
        control = f"#control/{quote(name, safe='/')}"
        b.add(
            {
                "@id": control,
                "@type": "ControlAction",
                "name": f"orchestrate job {title}",
                "instrument": _ref(step),
                "object": _ref(job),
                "actionStatus": COMPLETED,
            }
        )
        jobs.append(job)
        controls.append(control)

    # -- tools, steps, formal parameters
    for rule in rules:
        tool, step = f"#rule/{rule}", f"#step/{rule}"
        inputs, outputs = [], []
        for key, kind in param_types[rule].items():
            inputs.append(
                b.add(
                    {
                        "@id": f"{tool}/param/{quote(key, safe='')}",
                        "@type": "FormalParameter",
                        "name": key,
                        "description": f"parameter {key} of rule {rule} (params; JSON text when structured)",
                        "additionalType": kind,
                        "conformsTo": _ref(FORMAL_PARAMETER_PROFILE),
                    }
                )
            )
        for slot in sorted(tool_io[rule]):
            direction, what = slot.rsplit("/", 2)[-2:]
            b.add(
                {
                    "@id": slot,
                    "@type": "FormalParameter",
                    "name": f"{direction} {what}",
                    "description": f"the {direction} {what} of a job of rule {rule}",
                    "additionalType": "Dataset" if what == "folders" else "File",
                    "multipleValues": True,
                    "conformsTo": _ref(FORMAL_PARAMETER_PROFILE),
                }
            )
            (inputs if direction == "input" else outputs).append(slot)
        source = sources.get(rule, {})
        tool_entity: dict[str, Any] = {
            "@id": tool,
            "@type": "SoftwareApplication",
            "name": rule,
            "description": f"Snakemake rule {rule}" + (f", defined in {source['file']}" if source.get("file") else ""),
            "input": _refs(inputs),
            "output": _refs(outputs),
            "softwareRequirements": _refs(tool_software[rule]),
        }
        if tool_commits[rule]:
            tool_entity["softwareVersion"] = _majority(tool_commits[rule])
        if source.get("file") in wf_file_ids:
            tool_entity["isPartOf"] = _ref(wf_file_ids[source["file"]])
            tool_entity["url"] = _ref(wf_file_ids[source["file"]])
        else:  # defined in the Snakefile, or in a file it includes under a name made at parse time
            tool_entity["url"] = _ref(snakefile)
        b.add(tool_entity)
        step_entity: dict[str, Any] = {"@id": step, "@type": "HowToStep", "name": rule, "workExample": _ref(tool)}
        if source.get("conda") in wf_file_ids:
            step_entity["buildInstructions"] = _ref(wf_file_ids[source["conda"]])
        b.add(step_entity)

    # -- the engine, the run, the findings
    engine = (
        _package_id("snakemake", snakemake_version)
        if snakemake_version
        else b.add({"@id": "https://snakemake.github.io/", "@type": "SoftwareApplication", "name": "Snakemake"})
    )
    if snakemake_version:
        b.entities[engine]["name"] = "Snakemake"
    b.add(
        {
            "@id": "#run",
            "@type": "CreateAction",
            "name": f"run of the knowlab workflow at {version}",
            "description": (
                f"{len(manifests)} jobs of {len(rules)} rules; code commits recorded: "
                + ", ".join(f"{c} ({n} jobs)" for c, n in sorted(Counter(c for c in commits if c).items()))
            ),
            "instrument": _ref(snakefile),
            "object": _refs(raw_inputs),
            "result": _refs(final_outputs),
            "actionStatus": COMPLETED,
        }
    )
    b.add(
        {
            "@id": "#organize",
            "@type": "OrganizeAction",
            "name": "Snakemake's orchestration of the run",
            "instrument": _ref(engine),
            "object": _refs(controls),
            "result": _ref("#run"),
            "actionStatus": COMPLETED,
        }
    )
    claims = _claims(b, base_path)

    # -- assemble with rocrate
    crate = ROCrate(version="1.1")
    crate.metadata.extra_terms = dict(EXTRA_TERMS)
    language = "https://w3id.org/workflowhub/workflow-ro-crate#snakemake"
    where = {"source": snakefile} if snakefile.startswith("file:") else {"dest_path": unquote(snakefile)}
    types = ["File", "SoftwareSourceCode", "ComputationalWorkflow", "HowTo"]
    workflow_entity = crate.add_workflow(
        main=True, lang="snakemake", lang_version=snakemake_version, properties={"@type": types}, **where
    )
    workflow_entity["name"] = "knowlab"
    workflow_entity["description"] = "Snakemake workflow of the knowlab studies (Snakefile, rules/*.smk)"
    workflow_entity["programmingLanguage"] = _ref(language)
    workflow_entity["url"] = _ref(snakefile)
    workflow_entity["encodingFormat"] = MEDIA_TYPES[".smk"]
    if version:
        workflow_entity["version"] = version
    workflow_entity["hasPart"] = _refs(f"#rule/{r}" for r in rules)
    workflow_entity["step"] = _refs(f"#step/{r}" for r in rules)
    licence = _license(workflow_path)
    if isinstance(licence, dict):
        crate.add_jsonld(dict(licence))
        licence = _ref(licence["@id"])
    workflow_entity["license"] = licence
    crate.root_dataset["license"] = licence
    for ident, props in sorted(b.data.items()):
        adder = crate.add_dataset if props["@type"] == "Dataset" else crate.add_file
        where = {"source": ident} if ident.startswith("file:") else {"dest_path": unquote(ident)}
        entity = adder(**where, properties={"@type": props["@type"]})
        for key, value in props.items():
            if key != "@type":
                entity[key] = value
    for ident, props in sorted(b.entities.items()):
        crate.add_jsonld({"@id": ident, **props})
    for profile, title in PROFILES.items():
        crate.add_jsonld({"@id": profile, "@type": "CreativeWork", "name": title, "version": profile.rsplit("/", 1)[1]})
    root = crate.root_dataset
    root["name"] = "knowlab workflow run: provenance"
    root["description"] = (
        f"Provenance Run Crate of a run of the knowlab Snakemake workflow: {len(manifests)} jobs of {len(rules)} "
        f"rules, code {version}; built from the jobs' manifests by knowlab.tooling.crate"
    )
    root["datePublished"] = date
    root["conformsTo"] = _refs(PROFILES)
    root["mentions"] = _refs([*jobs, "#run", *claims])
    # the crate's own README.md: added to the written graph, not to rocrate's entity map, which keys
    # entities by their id resolved against the crate root, so "README.md" and the run's "../README.md"
    # (results/README.md) would be one entity there
    readme = {
        "@id": "README.md",
        "@type": "File",
        "name": "README.md",
        "about": _ref("./"),
        "encodingFormat": "text/markdown",
    }
    root["hasPart"] = _refs(ident for ident in [*b.data, snakefile, readme["@id"]] if not ident.startswith("#"))
    summary = {
        "jobs": len(manifests),
        "rules": len(rules),
        "files": sum(1 for p in b.data.values() if p["@type"] == "File"),
        "claims": len(claims),
        "version": version,
    }
    return _write(
        crate, out_path, readme, _readme(summary, out_path, base_path), expected=set(b.data) | set(b.entities)
    )


def _readme(summary: dict[str, Any], out: Path, base: Path) -> str:
    """The crate's README.md: what it holds and how to read and check it (no clock, no host)."""
    where = os.path.relpath(base, out).replace(os.sep, "/")
    return (
        "# Provenance of a knowlab workflow run\n\n"
        "`ro-crate-metadata.json` is a metadata-only RO-Crate (Provenance Run Crate 0.5,"
        " https://w3id.org/ro/wfrun/provenance/0.5) of the run in `"
        + where
        + "` (relative to this folder), built by `python -m knowlab.tooling.crate` from the jobs' manifests:"
        f" {summary['jobs']} jobs of {summary['rules']} rules, {summary['files']} files with their recorded sha256,"
        f" {summary['claims']} findings; code {summary['version']}.\n\n"
        "Data entities point at the run's files by their path relative to this folder.  Each job is a"
        " `CreateAction` (`#job/<manifest>`) whose `instrument` is its rule (`#rule/<rule>`), `object` its inputs"
        " and parameters and `result` its outputs.\n\n"
        "Check it: `rocrate-validator validate --offline -p provenance-run-crate-0.5 <this folder>`; follow one"
        " result back to its raw inputs: `python -m knowlab.tooling.trace <path or claim id>`.\n"
    )


def _claims(b: _Builder, base: Path) -> list[str]:
    """A ``Claim`` per record of ``results/findings.json`` (when the run wrote it); their ids."""
    path = base / FINDINGS
    findings = b.ident(FINDINGS)
    if not path.is_file() or findings.startswith("#"):
        return []
    ids = []
    for i, record in enumerate(json.loads(path.read_text(encoding="utf-8"))):
        if not isinstance(record, dict):
            continue
        ident = f"#finding/{i}"
        numbers = []
        for key in FINDING_NUMBERS:
            if record.get(key) is not None:
                numbers.append(
                    b.add(
                        {
                            "@id": f"{ident}/{key}",
                            "@type": "PropertyValue",
                            "propertyID": key,
                            "name": key,
                            "value": record[key],
                        }
                    )
                )
        claim: dict[str, Any] = {
            "@id": ident,
            "@type": "Claim",
            "name": f"{record.get('study')}: {record.get('claim')}",
            "creativeWorkStatus": record.get("status"),
            "isPartOf": _ref(findings),
            "additionalProperty": _refs(numbers),
        }
        for key, prop in (
            ("claim_id", "identifier"),
            ("detail", "description"),
            ("source", "citation"),
            ("quote", "text"),
        ):
            if record.get(key):
                claim[prop] = record[key]
        if record.get("figure"):
            figure = b.ident(f"{RESULTS}/{record['figure']}")
            if figure in b.data:
                claim["isBasedOn"] = _ref(figure)
        ids.append(b.add({k: v for k, v in claim.items() if v is not None}))
    return ids


def _compact(value: Any) -> Any:
    """A singleton list as its one value (RO-Crate 1.1's compacted JSON-LD)."""
    return value[0] if isinstance(value, list) and len(value) == 1 else value


def _write(crate: ROCrate, out: Path, readme: dict[str, Any], text: str, expected: set[str]) -> Path:
    """Write the metadata file (the descriptor and root first, then the entities sorted by id, singleton
    lists as single values) with the ``readme`` entity, and the README (``text``).  Raises
    :class:`CrateError` when an entity of ``expected`` (ids) is missing from the graph."""
    document = crate.metadata.generate()
    document["@graph"].append(readme)
    if lost := expected - {e["@id"] for e in document["@graph"]}:
        raise CrateError(f"entities lost in assembly (ids colliding in rocrate): {sorted(lost)[:5]}")
    document["@graph"] = [{k: _compact(v) for k, v in e.items()} for e in document["@graph"]]
    head = [e for e in document["@graph"] if e["@id"] in ("ro-crate-metadata.json", "./")]
    rest = sorted(
        (e for e in document["@graph"] if e["@id"] not in ("ro-crate-metadata.json", "./")), key=lambda e: e["@id"]
    )
    document["@graph"] = sorted(head, key=lambda e: e["@id"] != "ro-crate-metadata.json") + rest
    out.mkdir(parents=True, exist_ok=True)
    path = out / "ro-crate-metadata.json"
    metadata = json.dumps(document, indent=1, sort_keys=True, ensure_ascii=False) + "\n"
    for target, content in ((out / "README.md", text), (path, metadata)):
        tmp = target.with_name(f".{target.name}.partial")
        tmp.write_text(content, encoding="utf-8")
        os.replace(tmp, target)
    return path


def validate_crate(
    crate: str | os.PathLike,
    profile: str = VALIDATION_PROFILE,
    severity: str = "REQUIRED",
    *,
    offline: bool = True,
    cache_path: str | os.PathLike | None = None,
) -> list[str]:
    """Validate the crate folder ``crate`` with roc-validator against ``profile`` at ``severity``
    (``REQUIRED``, ``RECOMMENDED`` or ``OPTIONAL``; issues of that severity and above count).

    Returns one line per issue (``<check id>: <message> [<entity>]``), empty when the crate is
    valid.  ``offline`` serves remote resources (the RO-Crate JSON-LD context) from the validator's
    HTTP cache only (``cache_path``, default the user cache).  Raises ``ImportError`` when
    roc-validator is not installed.
    """
    from rocrate_validator import services  # deferred: optional, heavy (rdflib, pyshacl)
    from rocrate_validator.models import ValidationSettings  # deferred: optional, heavy (rdflib, pyshacl)

    settings = ValidationSettings(
        rocrate_uri=str(Path(crate).resolve()),
        profile_identifier=profile,
        requirement_severity=severity,
        offline=offline,
        cache_path=Path(cache_path) if cache_path else None,
    )
    result = services.validate(settings)
    return sorted(
        f"{issue.check.identifier}: {issue.message} [{issue.violatingEntity or '-'}]"
        for issue in result.get_issues(min_severity=settings.requirement_severity)
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base", default=".", help="the workflow's working directory (default: .)")
    parser.add_argument("--out", default=RO_CRATE.path(), help="the crate folder, relative to --base")
    parser.add_argument(
        "--workflow", default=None, help="the folder of the Snakefile (default: --base, else this checkout)"
    )
    parser.add_argument(
        "--date", default=None, help="datePublished, ISO 8601 (default: the workflow version's commit date)"
    )
    parser.add_argument("--validate", action="store_true", help=f"validate offline against {VALIDATION_PROFILE}")
    args = parser.parse_args(argv)
    try:
        path = build_crate(args.base, args.out, workflow=args.workflow, date_published=args.date)
    except CrateError as err:
        print(f"crate: {err}", file=sys.stderr)
        return 2
    print(f"crate: wrote {path}")
    if args.validate:
        issues = validate_crate(path.parent)
        for line in issues:
            print(f"invalid: {line}")
        print(f"crate: {len(issues)} issue(s) at the REQUIRED level of {VALIDATION_PROFILE}")
        return 1 if issues else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())

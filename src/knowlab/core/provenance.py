"""Provenance: a manifest beside every rule's outputs, and the per-rule log.

Each workflow script runs its work inside :func:`rule_step`::

    with rule_step(snakemake) as log:
        ...

which sends ``logging`` to the rule's ``log:`` file and, only when the work
succeeds, writes the JSON manifest named by the rule's ``manifest`` output:
inputs and outputs with sha256, the config slice (the rule's ``params``),
package versions, git commit, seed and the job's :func:`record`-ed notes.

A manifest is a pure function of what the job computed from: it holds no time, host or
process id, so an unchanged re-run writes it byte for byte again and the audit tells a real
change from a re-run.  Those volatile facts go to the log.  Snakemake empties a job's
``log:`` file before each attempt, so every record also goes to :func:`attempts_path` beside
it (``<log>.attempts``, appended, each attempt starting with a ``started`` line naming the
host): a retry or a re-run never hides the first failure.
"""

from __future__ import annotations

import contextlib
import gc
import importlib.metadata
import json
import logging
import os
import platform
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from knowlab.core.device import use_compute
from knowlab.core.io import remove_partials, sha256_file, write_json

PACKAGES = (
    "torch",
    "transformers",
    "tokenizers",
    "peft",
    "deepspeed",
    "snakemake",
    "numpy",
    "pandas",
    "pyarrow",
    "scipy",
    "statsmodels",
    "matplotlib",
    "gensim",
    "gguf",
)

log = logging.getLogger("knowlab")

_NOTES: dict[str, Any] = {}


def record(key: str, value: Any) -> None:
    """Add a fact to the running job's manifest, under ``notes[key]`` (JSON-able values).

    For what a job decided that its inputs and config do not show, e.g. a Hub id used
    without a pinned revision, or the sha256 a first download was pinned to.  A second
    call with the same key replaces the value.  Notes are cleared when :func:`rule_step`
    starts a job.
    """
    _NOTES[key] = _jsonable(value)


def package_versions(names: tuple[str, ...] = PACKAGES) -> dict[str, str | None]:
    """Installed version of each named distribution (None when absent)."""
    versions: dict[str, str | None] = {}
    for name in names:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            versions[name] = None
    return versions


def git_commit(root: str | os.PathLike = ".") -> dict[str, Any]:
    """The commit checked out at ``root`` and whether tracked files differ from it."""
    try:
        commit = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True, check=True
        ).stdout.strip()
        dirty = bool(
            subprocess.run(
                ["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
                capture_output=True,
                text=True,
                check=True,
            ).stdout.strip()
        )
    except (OSError, subprocess.CalledProcessError):
        return {"commit": None, "dirty": None}
    return {"commit": commit, "dirty": dirty}


#: the record at the top of a copy of the checkout made from the workflow's source when Snakemake read
#: the workflow from a URL or a git source (knowlab.tooling.source, which writes it under the same name)
SOURCE_RECORD = "knowlab-source.json"


def package_source() -> dict[str, Any]:
    """Where this package's code comes from: in a copy of the checkout made from the workflow's
    source (:data:`SOURCE_RECORD` at its top), that source, its commit (None for a URL; then
    ``dirty`` is None too) and the sha256 of the copied files; else the commit of the git checkout
    the package sits in and whether tracked files differ from it (:func:`git_commit`).

    Raises:
        ValueError: the record is not JSON.
    """
    record = Path(__file__).resolve().parents[3] / SOURCE_RECORD
    if not record.is_file():
        return git_commit(Path(__file__).resolve().parent)
    facts = json.loads(record.read_text(encoding="utf-8"))
    commit = facts.get("commit")
    return {
        "commit": commit,
        "dirty": False if commit else None,
        "source": facts.get("source"),
        "sha256": facts.get("sha256"),
    }


#: the environment variable in which the Snakefile names the checkout (its folder, or the copy of the
#: workflow's source) for the jobs: what relative paths of the config are read from
CHECKOUT_VARIABLE = "KNOWLAB_ROOT"


def checkout_root() -> Path:
    """The workflow's checkout, as the Snakefile names it in :data:`CHECKOUT_VARIABLE`.  A job reads it
    here rather than as a param: the checkout's path cannot change a result (the files a job reads
    from it are its inputs, pinned by sha256), so a run moved with its checkout re-runs nothing.

    Raises:
        RuntimeError: the variable is not set (a job started outside the workflow).
    """
    try:
        return Path(os.environ[CHECKOUT_VARIABLE])
    except KeyError:
        raise RuntimeError(
            f"{CHECKOUT_VARIABLE} is not set: the workflow's Snakefile sets it to its checkout for every job"
        ) from None


def portable(path: str) -> str:
    """An absolute path inside the working directory, relative to it (``"."`` for itself); any
    other string unchanged.  Manifests name files as the workflow does, relative to its working
    directory, so the same job in another clone writes the same manifest."""
    if not os.path.isabs(path):
        return path
    relative = os.path.relpath(path)
    return path if relative == ".." or relative.startswith("../") else relative


def hash_path(path: str | os.PathLike) -> dict[str, Any]:
    """sha256 of a file, or of every file under a folder (sorted relative paths); the path
    as :func:`portable` writes it."""
    path, name = Path(path), portable(str(path))
    if path.is_dir():
        files = sorted(p for p in path.rglob("*") if p.is_file())
        return {
            "path": name,
            "files": {str(p.relative_to(path)): sha256_file(p) for p in files},
        }
    if path.is_file():
        return {"path": name, "sha256": sha256_file(path)}
    return {"path": name, "sha256": None}


def _jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, str):
        return portable(value)
    if isinstance(value, (int, float, bool)) or value is None:
        return value
    return portable(str(value))


def build_manifest(
    *,
    rule: str,
    inputs: list[str],
    outputs: list[str],
    config_slice: dict[str, Any],
    wildcards: dict[str, str],
    seed: int | None,
) -> dict[str, Any]:
    """Assemble the manifest dict (see module docstring for its fields): rule, wildcards,
    inputs and outputs with sha256, config slice, seed, git commit, package versions, Python,
    platform and the :func:`record`-ed notes; no time or host (they go to the log).  ``git`` is
    :func:`package_source`."""
    return {
        "rule": rule,
        "wildcards": wildcards,
        "inputs": [hash_path(p) for p in inputs],
        "outputs": [hash_path(p) for p in outputs],
        "config": _jsonable(config_slice),
        "seed": seed,
        "git": package_source(),
        "packages": package_versions(),
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "notes": dict(sorted(_NOTES.items())),
    }


def attempts_path(log_file: str | os.PathLike) -> Path:
    """``<log_file>.attempts``: every attempt's records of a job, appended (Snakemake leaves it alone)."""
    return Path(f"{log_file}.attempts")


def configure_logging(log_file: str | os.PathLike | None) -> None:
    """Send ``knowlab`` log records to stderr and, with a ``log_file``, to it and to
    :func:`attempts_path` (appended), one readable line each."""
    handlers: list[logging.Handler] = [logging.StreamHandler(sys.stderr)]
    if log_file:
        Path(log_file).parent.mkdir(parents=True, exist_ok=True)
        handlers.append(logging.FileHandler(log_file, mode="a", encoding="utf-8"))
        handlers.append(logging.FileHandler(attempts_path(log_file), mode="a", encoding="utf-8"))
    fmt = logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s", "%Y-%m-%d %H:%M:%S")
    root = logging.getLogger("knowlab")
    root.handlers.clear()
    for handler in handlers:
        handler.setFormatter(fmt)
        root.addHandler(handler)
    root.setLevel(logging.INFO)
    root.propagate = False


@contextlib.contextmanager
def rule_step(smk: Any, seed: int | None = None) -> Iterator[logging.Logger]:
    """Run one Snakemake job's work with logging and a provenance manifest.

    ``smk`` is the ``snakemake`` object of a ``script:``.  The manifest is written
    to ``smk.output.manifest`` after the body succeeds; the other outputs are the
    manifest's ``outputs``.  A failure is logged with its traceback and re-raised,
    so Snakemake removes the job's outputs.  ``params`` are recorded as the config slice; a
    ``seed`` param (or the ``seed`` argument) is recorded as the seed; a ``compute`` param
    (:class:`knowlab.core.device.ComputeSettings`) sets the job's device and precision, with
    ``compute.max_batch_tokens`` read from the job's config (:func:`knowlab.core.device.use_compute`)
    before the body runs, so a GPU that is not there fails the job at once, in its log.  Before
    the body, the temporaries of atomic writes that a killed attempt left beside the outputs are
    removed (:func:`knowlab.core.io.remove_partials`).
    """
    log_file = smk.log[0] if len(smk.log) else None
    configure_logging(log_file)
    _NOTES.clear()
    started = time.time()
    params = dict(smk.params.items())
    log.info(
        "rule %s %s started on %s (pid %d)", smk.rule, dict(smk.wildcards.items()), socket.gethostname(), os.getpid()
    )
    for output in smk.output:  # every output file, flat; what a killed attempt (SIGKILL) left beside them
        for stale in remove_partials(output):
            log.info("removed %s, left by an interrupted attempt", stale)
    try:
        if "compute" in params:  # a rule that runs a model: its device and dtype, and the batch budget
            budget = ((getattr(smk, "config", None) or {}).get("compute") or {}).get("max_batch_tokens")
            compute = params["compute"]
            use_compute({"device": compute.get("device"), "dtype": compute.get("dtype"), "max_batch_tokens": budget})
        yield log
        manifest = build_manifest(  # hashing the outputs can fail too (e.g. one not written)
            rule=smk.rule,
            inputs=[str(p) for p in smk.input],
            # flat: a named output that is a list (expand) is one entry per file
            outputs=[str(p) for p in smk.output if str(p) != str(smk.output.manifest)],
            config_slice=params,
            wildcards=dict(smk.wildcards.items()),
            seed=seed if seed is not None else params.get("seed"),
        )
        write_json(smk.output.manifest, manifest)
    except Exception as err:
        log.error("rule %s failed: %s: %s", smk.rule, type(err).__name__, err, exc_info=True)
        err.knowlab_logged = True  # the rule log has it: knowlab's excepthook skips it
        raise
    log.info("rule %s finished in %.1f s", smk.rule, time.time() - started)
    skip_exit_collection()


def skip_exit_collection() -> None:
    """Let the interpreter exit without a final cyclic garbage collection over what is alive now.

    Called once a job's outputs are written and closed.  ``gc.freeze()`` moves every tracked
    object to the permanent generation, which the collections at interpreter shutdown skip; a
    process that imported torch and transformers spent 1.3 s of its exit in them (measured on a
    2-core CPU; 0.25 s with the freeze), a second of every model job's time.  Reference counting
    still frees objects and ``atexit`` handlers (logging's flush) still run.
    """
    gc.freeze()

"""Verify that the workflow reproduces itself byte for byte, and survives being killed anywhere.

``make verify`` (``python -m knowlab.tooling.verify``) is how a reader checks the workflow before
citing a number from it.  On a config (default ``config/test.yaml``, minutes on a laptop):

1. *Thread count*: the workflow runs in two fresh copies of the repository, once with one
   thread per job (two jobs at a time on two cores) and once with two threads per job; every
   output file (:func:`output_files`: everything under ``results/`` and ``resources/`` but the
   logs, the per-job benchmark files and the report) must be byte-identical between the two.
2. *Faults*: a third copy runs the workflow and is killed with SIGKILL (the whole process
   group: Snakemake and its jobs) shortly after a job of each kind in :data:`KILL_KINDS` starts
   (fine-tuning, evaluation, distractor ranking, SORT, grounding, statistics, figures: each run is
   killed in the first job of a kind not killed yet that the scheduler starts, so the kinds are
   taken in the order the run reaches them; a kind whose jobs had all finished is skipped), re-run
   after each kill
   (``--rerun-incomplete``), and finally run to the end; its outputs must equal the
   uninterrupted run's.

The last line is ``verify: identical=N/N kills=K recovered_identical=True`` (``identical``:
files equal between the two thread counts, out of every output file of either).  A copy is
``git ls-files`` of the repository (what a clone has), so uncommitted files travel only if
tracked.  The folders are kept under ``--work`` for inspection.
"""

from __future__ import annotations

import argparse
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path

from knowlab.core.io import sha256_file
from knowlab.layout import BENCHMARKS, LOGS, OUTPUT_FOLDERS, REPORT

#: kinds of job to kill in: name -> rule-name pattern
KILL_KINDS = {
    "ranking": r"fictionalqa_rank_distractors",
    "fine-tuning": r"finetune(_last)?",
    "evaluation": r"fictionalqa_evaluate",
    "SORT": r"sort_\w+",
    "grounding": r"grounding_\w+",
    "statistics": r"fictionalqa_paired_tests|\w+_stats|fictionalqa_summary",
    "figures": r"fictionalqa_figure_\w+|sort_figures",
}
#: under results/ and resources/, what is not a result: logs and benchmarks (times, hosts) and the report
EXCLUDE = (
    re.compile(f"^({re.escape(LOGS)}|{re.escape(BENCHMARKS)})/"),
    re.compile(f"^{re.escape(REPORT)}$"),
)
_JOB_START = re.compile(r"^\s*(?:local)?rule (\w+):\s*$")


def copy_repository(root: Path, dest: Path) -> Path:
    """Copy the files git tracks in ``root`` to a fresh ``dest`` (removed first) and link ``root``'s
    ``.venv`` there; ``dest``.

    Raises:
        subprocess.CalledProcessError: ``root`` is not a git checkout.
    """
    if dest.exists():
        shutil.rmtree(dest)
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=root, check=True, capture_output=True).stdout
    for name in filter(None, listed.decode().split("\0")):
        source = root / name
        if source.is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, dest / name)
    if (root / ".venv").exists():
        (dest / ".venv").symlink_to((root / ".venv").resolve())
    return dest


def output_files(folder: Path) -> dict[str, str]:
    """``{path relative to folder: sha256}`` of every output under ``results/`` and ``resources/``,
    without :data:`EXCLUDE` (logs, the report)."""
    found = {}
    for top in OUTPUT_FOLDERS:
        for path in sorted((folder / top).rglob("*")):
            name = path.relative_to(folder).as_posix()
            if path.is_file() and not any(rule.search(name) for rule in EXCLUDE):
                found[name] = sha256_file(path)
    return found


def snakemake_command(config: str, threads: int, cores: int) -> list[str]:
    """The workflow's command line: ``config`` laid over the default, ``threads`` per job."""
    return [
        sys.executable, "-m", "snakemake", "--cores", str(cores), "--configfile", config,
        "--config", f"threads={threads}", "--rerun-incomplete", "--nolock",
    ]  # fmt: skip


def own_code(folder: Path) -> dict[str, str]:
    """The environment of a run in the copy ``folder``: its jobs import the copy's ``src/`` (first on
    ``PYTHONPATH``), not the package the shared ``.venv`` installs editable from the original checkout,
    so that each copy runs its own code whatever happens to the checkout meanwhile."""
    return dict(os.environ, PYTHONPATH=str(folder / "src"))


def run_to_end(folder: Path, command: Sequence[str], log_file: Path) -> None:
    """Run ``command`` in ``folder`` to the end, output appended to ``log_file``.

    Raises:
        RuntimeError: the workflow failed (the message names the log).
    """
    with open(log_file, "a") as out:
        code = subprocess.run(
            command, cwd=folder, stdout=out, stderr=subprocess.STDOUT, env=own_code(folder)
        ).returncode
    if code:
        raise RuntimeError(f"the workflow failed in {folder} (exit {code}); see {log_file}")


def run_and_kill(
    folder: Path, command: Sequence[str], kinds: Sequence[str], delay: float, log_file: Path
) -> tuple[str, str] | None:
    """Run ``command`` in ``folder`` and SIGKILL its process group ``delay`` seconds after the first
    job of any of ``kinds`` (keys of :data:`KILL_KINDS`) starts; ``(kind, rule)`` of that job, or None
    if the run ended first.

    Raises:
        RuntimeError: the workflow failed on its own.
    """
    patterns = {kind: re.compile(KILL_KINDS[kind]) for kind in kinds}
    proc = subprocess.Popen(
        command,
        cwd=folder,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
        env=own_code(folder),
    )
    chosen: list[tuple[str, str]] = []  # the kind and rule whose start armed the kill
    killed = threading.Event()

    def kill_later() -> None:
        time.sleep(delay)
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            killed.set()

    with open(log_file, "a") as out:
        for line in proc.stdout:
            out.write(line)
            started = _JOB_START.match(line)
            kind = started and next((k for k, p in patterns.items() if p.fullmatch(started.group(1))), None)
            if kind and not chosen:
                chosen.append((kind, started.group(1)))
                threading.Thread(target=kill_later, daemon=True).start()
    code = proc.wait()
    if killed.is_set():
        return chosen[0]
    if code:
        raise RuntimeError(f"the workflow failed in {folder} (exit {code}); see {log_file}")
    return None


def differing(a: dict[str, str], b: dict[str, str]) -> list[str]:
    """Paths whose hash differs between ``a`` and ``b``, or that only one of them has."""
    return sorted(name for name in a.keys() | b.keys() if a.get(name) != b.get(name))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default="config/test.yaml", help="laid over config/config.yaml")
    parser.add_argument("--work", default="/tmp/knowlab-verify", type=Path, help="where the copies go")
    parser.add_argument("--seed", default=0, type=int, help="draws the kill delays")
    parser.add_argument("--max-delay", default=3.0, type=float, help="seconds after a job starts, at most")
    args = parser.parse_args(argv)
    root = Path.cwd()
    args.work.mkdir(parents=True, exist_ok=True)
    rng = random.Random(args.seed)
    began = time.time()

    hashes = {}
    for threads in (1, 2):
        folder = copy_repository(root, args.work / f"threads-{threads}")
        print(f"run {threads} thread(s) per job in {folder} ...", flush=True)
        run_to_end(folder, snakemake_command(args.config, threads, 2), folder / "verify.log")
        hashes[threads] = output_files(folder)
    names = hashes[1].keys() | hashes[2].keys()
    unequal = differing(hashes[1], hashes[2])
    for name in unequal:
        print(f"  differs between 1 and 2 threads: {name}")

    folder = copy_repository(root, args.work / "killed")
    command = snakemake_command(args.config, 1, 2)
    # each run is killed in the first job of a kind not killed yet, whichever the scheduler starts
    # first: the kinds are killed in the order the run reaches them, and a kind is missed only when
    # all its jobs finished while another kind's job was the one armed
    kills, remaining = [], list(KILL_KINDS)
    while remaining:
        delay = rng.uniform(0, args.max_delay)
        hit = run_and_kill(folder, command, remaining, delay, folder / "verify.log")
        if hit is None:
            break
        kind, rule = hit
        print(f"kill during {kind}: SIGKILL {delay:.1f} s into {rule}", flush=True)
        kills.append(rule)
        remaining.remove(kind)
    for kind in remaining:
        print(f"kill during {kind}: none left to kill", flush=True)
    run_to_end(folder, command, folder / "verify.log")
    recovered = differing(hashes[1], output_files(folder))
    for name in recovered:
        print(f"  differs after the kills: {name}")
    print(f"{time.time() - began:.0f} s; folders under {args.work}")
    print(
        f"verify: identical={len(names) - len(unequal)}/{len(names)} kills={len(kills)} recovered_identical={not recovered}"
    )
    return 0 if not unequal and not recovered and len(kills) >= 5 else 1


if __name__ == "__main__":
    sys.exit(main())

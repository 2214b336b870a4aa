"""Fine-tuning survives SIGKILL: a run killed at random moments and re-run through Snakemake ends
byte-identical to an uninterrupted run.

Runs the workflow on ``config/test.yaml`` with one fine-tuning run (``doc``) of ``--steps``
steps and a checkpoint every ``--every`` steps (a chain of ``steps / every`` jobs, each resuming
from the previous one's training state), in two fresh folders that share the prepared inputs
(corpus, split, webtext, base model):

- *reference*: the run's checkpoints and training log, uninterrupted;
- *killed*: the same targets; the whole Snakemake process group is killed with SIGKILL at a
  random moment (uniform over the reference's duration, seeded by ``--seed``) until ``--kills``
  kills have landed while fine-tuning ran; after each, ``snakemake --unlock`` and a re-run
  with ``--rerun-incomplete``, then a last run to the end.

At each kill, the steps lost are the optimizer steps the running job had logged beyond the
run's last finished checkpoint.  Then every checkpoint's weights, every checkpoint's
training log and the run's whole training log are compared byte for byte.

The last line is ``kills=N resumed_identical=True lost_steps_max=K`` (K at most ``--every``).

Usage (from the repository root)::

    .venv/bin/python benchmarks/resume.py [--kills 5] [--steps 12] [--every 2] [--seed 0] [--keep DIR]
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
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RUN = "results/finetune/doc"
PREPARED = ("resources/base_model", "resources/webtext/train.jsonl", "results/splits/doc.json")


def snakemake_command(args: argparse.Namespace, *targets: str) -> list[str]:
    overrides = [
        f"finetune={{'runs': ['doc'], 'control': False, 'max_steps': {args.steps}, 'checkpoint_every': {args.every}}}"
    ]
    return [
        sys.executable, "-m", "snakemake", "--snakefile", str(ROOT / "Snakefile"),
        "--configfile", str(ROOT / "config/test.yaml"), "--config", *overrides,
        "--cores", "2", "--rerun-incomplete", "--quiet", "all", *targets,
    ]  # fmt: skip


def targets(args: argparse.Namespace) -> list[str]:
    steps = range(args.every, args.steps + 1, args.every)
    return [f"{RUN}/train_log.parquet", *(f"{RUN}/checkpoints/step-{s}" for s in steps)]


def run(command: list[str], cwd: Path) -> None:
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True)
    if done.returncode:
        sys.exit(f"failed in {cwd}: {' '.join(command[:6])} ...\n{done.stdout[-3000:]}{done.stderr[-3000:]}")


def progress(work: Path, every: int) -> tuple[int, int]:
    """(last step logged by a fine-tuning job, last finished checkpoint's step) in ``work``."""
    logged = [0]
    for path in (work / "results/logs/finetune/doc").glob("step-*.log"):
        logged += [int(m) for m in re.findall(r" step (\d+)/\d+ loss", path.read_text(errors="replace"))]
    finished = [0] + [int(p.stem.removeprefix("step-")) for p in (work / RUN / "train_log").glob("step-*.parquet")]
    return max(logged), max(finished)


def outputs(work: Path) -> dict[str, bytes]:
    """Every checkpoint weight file and training log of the run, by relative path."""
    files = sorted((work / RUN / "checkpoints").glob("step-*/model.safetensors"))
    files += sorted((work / RUN / "train_log").glob("*.parquet")) + [work / RUN / "train_log.parquet"]
    return {str(p.relative_to(work)): p.read_bytes() for p in files}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kills", type=int, default=5)
    parser.add_argument("--steps", type=int, default=12)
    parser.add_argument("--every", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--keep", type=Path, default=None, help="keep the two folders here")
    args = parser.parse_args()
    rng = random.Random(args.seed)

    with tempfile.TemporaryDirectory() as tmp:
        base = args.keep or Path(tmp)
        prepared, reference, killed = base / "prepared", base / "reference", base / "killed"
        for folder in (prepared, reference, killed):
            shutil.rmtree(folder, ignore_errors=True)
        prepared.mkdir(parents=True)
        print("preparing the inputs (corpus, split, webtext, base model) ...", flush=True)
        run(snakemake_command(args, *PREPARED), prepared)
        shutil.copytree(prepared, reference, symlinks=True)
        shutil.copytree(prepared, killed, symlinks=True)

        started = time.time()
        run(snakemake_command(args, *targets(args)), reference)
        duration = time.time() - started
        print(f"reference: {args.steps} steps in {args.steps // args.every} jobs, {duration:.0f} s", flush=True)

        lost, attempts = [], 0
        while len(lost) < args.kills and attempts < 4 * args.kills:
            attempts += 1
            job = subprocess.Popen(
                snakemake_command(args, *targets(args)),
                cwd=killed,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,
            )
            delay = rng.uniform(0.05, 0.6) * duration
            try:
                job.wait(timeout=delay)
                print(f"attempt {attempts}: the workflow finished before the kill at {delay:.0f} s")
                break
            except subprocess.TimeoutExpired:
                logged, finished = progress(killed, args.every)
                os.killpg(job.pid, signal.SIGKILL)
                job.wait()
            lost.append(max(0, logged - finished))
            print(
                f"kill {len(lost)} at {delay:.1f} s: trained to step {logged}, last checkpoint step {finished}, "
                f"lost {lost[-1]} steps",
                flush=True,
            )
            run([*snakemake_command(args)[:-1], "--unlock"], killed)
        run(snakemake_command(args, *targets(args)), killed)

        want, got = outputs(reference), outputs(killed)
        identical = want.keys() == got.keys() and all(want[k] == got[k] for k in want)
        for key in sorted(want.keys() | got.keys()):
            if want.get(key) != got.get(key):
                print(f"differs: {key}")
        leftovers = [str(p.relative_to(killed)) for p in (killed / RUN).rglob(".*.partial")]
        if leftovers:
            print(f"left behind: {leftovers}")
        print(f"{len(want)} files compared; every checkpoint interval {args.every} steps")
        print(f"kills={len(lost)} resumed_identical={identical} lost_steps_max={max(lost, default=0)}")


if __name__ == "__main__":
    main()

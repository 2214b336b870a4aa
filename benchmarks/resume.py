"""Fine-tuning survives SIGKILL: a run killed at random moments and re-run through Snakemake ends
byte-identical to an uninterrupted run.

Runs the workflow on ``config/test.yaml`` with one fine-tuning run (``doc``) of ``--steps``
steps and a checkpoint every ``--every`` steps (a chain of ``steps / every`` jobs, each resuming
from the previous one's training state), in two fresh folders that share the prepared inputs
(corpus, split, webtext, base model):

- *reference*: the run's checkpoints and training log, uninterrupted;
- *killed*: the same targets; the whole Snakemake process group is killed with SIGKILL at a
  random moment (uniform over 5-30% of the reference's duration after each start, seeded by ``--seed``) until ``--kills``
  kills have landed while fine-tuning ran; after each, ``snakemake --unlock`` and a re-run
  with ``--rerun-incomplete``, then a last run to the end.

At each kill, the steps lost are the optimizer steps the killed job had logged beyond the
step the re-run resumes from (the checkpoint before the first one a dry run with
``--rerun-incomplete`` would train again: Snakemake re-runs a job whose end it did not record).  Then every checkpoint's weights, every checkpoint's
training log and the run's whole training log are compared byte for byte.

The last line is ``kills=N resumed_identical=True lost_steps_max=K`` (K at most ``--every``).

Usage (from the repository root)::

    .venv/bin/python benchmarks/resume.py [--kills 5] [--steps 20] [--every 2] [--seed 0] [--keep DIR]
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
RUN = "results/fictionalqa/finetune/doc"
PREPARED = ("resources/base_model", "resources/webtext/train.jsonl", "results/fictionalqa/splits/doc.json")


def snakemake_command(args: argparse.Namespace, *targets: str) -> list[str]:
    """Snakemake on config/test.yaml and the overlay ``resume.yaml`` of the folder it runs in."""
    return [
        sys.executable, "-m", "snakemake", "--snakefile", str(ROOT / "Snakefile"),
        "--configfile", str(ROOT / "config/test.yaml"), "resume.yaml",
        "--cores", "2", "--rerun-incomplete", *targets,
    ]  # fmt: skip


def overlay(args: argparse.Namespace) -> str:
    """One fine-tuning run, ``doc``, of ``--steps`` steps with a checkpoint every ``--every``."""
    return f"finetune:\n  runs: [doc]\n  control: false\n  max_steps: {args.steps}\n  checkpoint_every: {args.every}\n"


def targets(args: argparse.Namespace) -> list[str]:
    """The run's training log: it needs every checkpoint job of the chain."""
    return [f"{RUN}/train_log.parquet"]


def run(command: list[str], cwd: Path) -> None:
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True)
    if done.returncode:
        sys.exit(f"failed in {cwd}: {' '.join(command[:6])} ...\n{done.stdout[-3000:]}{done.stderr[-3000:]}")


def trained(work: Path) -> int:
    """The last optimizer step a fine-tuning job of ``work`` has logged."""
    logged = [0]
    for path in (work / "results/logs/fictionalqa/finetune/doc").glob("step-*.log"):
        logged += [int(m) for m in re.findall(r" step (\d+)/\d+ loss", path.read_text(errors="replace"))]
    return max(logged)


def kept(args: argparse.Namespace, work: Path) -> int:
    """The step training resumes from after a kill: the checkpoint before the first one that the
    re-run (a dry run with ``--rerun-incomplete``) would train again."""
    done = subprocess.run([*snakemake_command(args, *targets(args)), "-n"], cwd=work, capture_output=True, text=True)
    again = [int(s) for s in re.findall(r"training=fictionalqa/finetune/doc, checkpoint=step-(\d+)", done.stdout)]
    return min(again) - args.every if again else args.steps


def outputs(work: Path) -> dict[str, bytes]:
    """Every checkpoint weight file and training log of the run, by relative path."""
    files = sorted((work / RUN / "checkpoints").glob("step-*/model.safetensors"))
    files += sorted((work / RUN / "train_log").glob("*.parquet")) + [work / RUN / "train_log.parquet"]
    return {str(p.relative_to(work)): p.read_bytes() for p in files}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kills", type=int, default=5)
    parser.add_argument("--steps", type=int, default=20)
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
        (prepared / "resume.yaml").write_text(overlay(args))
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
            delay = rng.uniform(0.05, 0.3) * duration
            try:
                job.wait(timeout=delay)
                print(f"attempt {attempts}: the workflow finished before the kill at {delay:.0f} s")
                break
            except subprocess.TimeoutExpired:
                os.killpg(job.pid, signal.SIGKILL)
                job.wait()
            logged = trained(killed)
            run([*snakemake_command(args), "--unlock"], killed)
            resumed = kept(args, killed)
            lost.append(max(0, logged - resumed))
            print(
                f"kill {len(lost)} at {delay:.1f} s: trained to step {logged}, resumes from step {resumed}, "
                f"lost {lost[-1]} steps",
                flush=True,
            )
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

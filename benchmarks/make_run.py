"""Time `make run` as a new user runs it: wall time, peak memory of all its processes, job time per study.

Run from a checkout whose venv is installed (`make .venv/.installed`), on an empty `results/`:

    .venv/bin/python benchmarks/make_run.py [--config config/cpu-full.yaml] [--out runtime.md]

It runs `make run [CONFIG=...]`, samples every second the proportional set size (PSS: resident
memory with shared pages split among their users) summed over `make` and all its descendants
(psutil; the peak of that sum is what the machine must hold), then reads each job's wall time
and peak PSS from its Snakemake benchmark file (`results/benchmarks/<x>.tsv`, the rule named by
the first line of its log `results/logs/<x>.log`) and prints, as Markdown: the measurement
(date, machine, wall, peak memory, jobs) and job-minutes and the largest job per study and rule.  A second `make run` is timed
too (it must re-run nothing).  The last line is
`make run: wall=<m>m<s>s peak_memory=<GiB>GiB jobs=<n> rerun_wall=<s>s`.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import platform
import re
import subprocess
import threading
import time
from collections import defaultdict
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parents[1]
RULE = re.compile(r"INFO knowlab: rule (\S+) ")
#: the study of a job, by the first folder of its log under results/logs/ (else FictionalQA: the shared
#: base model, findings and dataset card)
STUDY_OF_LOG_FOLDER = {
    "fictionalqa": "FictionalQA",
    "sort": "SORT",
    "grounding": "Grounding",
    "generate": "fiction generation",
}


def run_make(args: list[str]) -> tuple[float, int, int]:
    """Wall seconds, exit code and peak summed PSS (bytes) of `make <args>` run in ROOT."""
    began = time.perf_counter()
    proc = subprocess.Popen(["make", *args], cwd=ROOT)
    parent = psutil.Process(proc.pid)
    peak = 0
    done = threading.Event()

    def sample() -> None:
        nonlocal peak
        while not done.is_set():
            total = 0
            for p in [parent, *parent.children(recursive=True)]:
                try:
                    total += p.memory_full_info().pss  # shared pages (torch's libraries) counted once
                except psutil.Error:
                    pass
            peak = max(peak, total)
            done.wait(1.0)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    code = proc.wait()
    done.set()
    sampler.join()
    return time.perf_counter() - began, code, peak


def job_times(benchmarks: Path, logs: Path) -> list[tuple[str, str, float, float]]:
    """``(study, rule, wall seconds, peak PSS in MB)`` of every job with a benchmark file under
    ``benchmarks`` (Snakemake's ``benchmark:`` TSV, its last row); the rule from the job's log at
    the same relative path under ``logs`` (a fine-tuning log names no rule: ``finetune``)."""
    out = []
    for path in sorted(benchmarks.rglob("*.tsv")):
        relative = path.relative_to(benchmarks)
        log = (logs / relative).with_suffix(".log")
        found = RULE.search(log.read_text(errors="replace")) if log.is_file() else None
        rule = found.group(1) if found else "finetune"
        header, *rows = [line.split("\t") for line in path.read_text().splitlines()]
        row = dict(zip(header, rows[-1]))
        study = STUDY_OF_LOG_FOLDER.get(relative.parts[0], "FictionalQA")
        out.append((study, rule, float(row["s"]), float(row["max_pss"]) if row["max_pss"] != "-" else 0.0))
    return out


def fictionalqa_table(*summary_csvs: Path) -> list[str]:
    """The FictionalQA table of docs/default.md: per split, step 0 -> last step; the control's last step.

    Several summaries (runs of one config in another dtype, thread count or CPU) give each cell as
    the range of the runs, ``low-high`` (one value when they agree to two decimals).
    """
    # deferred: pandas only for this table
    import pandas as pd

    tables = [pd.read_csv(path) for path in summary_csvs]
    s = tables[0]
    last = int(s["step"].max())

    def value(run: str, step: int, suite: str, side: str, column: str) -> str:
        found = []
        for t in tables:
            rows = t[(t.run == run) & (t.step == step) & (t.suite == suite) & (t.side == side)]
            rows = rows[rows.split == run] if run in set(t.split) else rows
            found.append(f"{float(rows[column].iloc[0]):.2f}")
        low, high = min(found, key=float), max(found, key=float)
        return low if low == high else f"{low}-{high}"

    def change(run: str, suite: str, side: str, column: str) -> str:
        return f"{value(run, 0, suite, side, column)} -> {value(run, last, suite, side, column)}"

    lines = [
        "| split | train-doc loss | val-doc loss | MCQ-4 acc | MCQ-10 acc | nll(answer given question), fiction "
        "| real-world |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for run in [r for r in s["run"].unique() if r != "control"]:
        docs = "fictsheet_doc" if run == "fictsheets" else "fiction_doc"
        lines.append(
            f"| {run}{' (fictsheet loss)' if run == 'fictsheets' else ''} | {change(run, docs, 'train', 'loss')} "
            f"| {change(run, docs, 'val', 'loss')} | {change(run, 'mcq4', 'all', 'acc')} "
            f"| {change(run, 'mcq10', 'all', 'acc')} | {change(run, 'fict_qa_nll', 'all', 'loss')} "
            f"| {change(run, 'real_qa_nll', 'all', 'loss')} |"
        )
    if "control" in set(s["run"]):
        c = {k: value("control", last, k, "all", col) for k, col in
             [("mcq4", "acc"), ("mcq10", "acc"), ("fict_qa_nll", "loss"), ("real_qa_nll", "loss")]}  # fmt: skip
        lines.append(f"| control | | | ({c['mcq4']}) | ({c['mcq10']}) | ({c['fict_qa_nll']}) | ({c['real_qa_nll']}) |")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--config", help="a config file over the default (make run CONFIG=...)")
    parser.add_argument("--out", type=Path, help="also write the Markdown here")
    args = parser.parse_args()
    make_args = ["run", *([f"CONFIG={args.config}"] if args.config else [])]
    wall, code, peak = run_make(make_args)
    if code:
        raise SystemExit(f"make {' '.join(make_args)} failed with exit code {code}")
    rerun, code, _ = run_make(make_args)
    if code:
        raise SystemExit(f"second make {' '.join(make_args)} failed with exit code {code}")

    per_rule: dict[tuple[str, str], list[float]] = defaultdict(list)
    largest: dict[str, float] = defaultdict(float)  # MB
    for study, rule, seconds, pss in job_times(ROOT / "results" / "benchmarks", ROOT / "results" / "logs"):
        per_rule[study, rule].append(seconds)
        largest[study] = max(largest[study], pss)
    per_study: dict[str, float] = defaultdict(float)
    for (study, _), times in per_rule.items():
        per_study[study] += sum(times)
    jobs = sum(len(t) for t in per_rule.values())
    cpu = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                if line.startswith("model name")), platform.processor())  # fmt: skip
    lines = [
        f"Measured {dt.date.today().isoformat()} on {os.cpu_count()} cores ({cpu}), "
        f"{psutil.virtual_memory().total / 2**30:.0f} GiB, `make {' '.join(make_args)}` with the venv installed:",
        "",
        "| wall time | peak memory, all processes | jobs | job time | second `make run` |",
        "| --- | --- | --- | --- | --- |",
        f"| {wall / 60:.1f} min | {peak / 2**30:.1f} GiB | {jobs} | {sum(per_study.values()) / 60:.1f} job-min "
        f"| {rerun:.1f} s |",
        "",
        "| study | jobs | job-minutes | largest job (PSS) | longest jobs (count x minutes) |",
        "| --- | --- | --- | --- | --- |",
    ]
    for study in sorted(per_study, key=per_study.get, reverse=True):
        rules = sorted((key for key in per_rule if key[0] == study), key=lambda key: -sum(per_rule[key]))
        top = ", ".join(
            f"{r} {len(per_rule[s, r])} x {sum(per_rule[s, r]) / len(per_rule[s, r]) / 60:.1f}" for s, r in rules[:4]
        )
        n = sum(len(per_rule[key]) for key in rules)
        lines.append(f"| {study} | {n} | {per_study[study] / 60:.1f} | {largest[study] / 1024:.1f} GiB | {top} |")
    lines += ["", "FictionalQA, step 0 -> the last step (the control's last step in brackets):", ""]
    lines += fictionalqa_table(ROOT / "results" / "fictionalqa" / "summary.csv")
    lines += ["", "```", (ROOT / "results" / "findings.txt").read_text().rstrip(), "```"]
    text = "\n".join(lines)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")
    minutes, seconds = divmod(round(wall), 60)
    print(
        f"make run: wall={minutes}m{seconds:02d}s peak_memory={peak / 2**30:.1f}GiB jobs={jobs} rerun_wall={rerun:.1f}s"
    )


if __name__ == "__main__":
    main()

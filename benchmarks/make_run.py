"""Time `make run` as a new user runs it: wall time, peak memory of all its processes, job time per study.

Run from a checkout whose venv is installed (`make .venv/.installed`), on an empty `results/`:

    .venv/bin/python benchmarks/make_run.py [--config config/cpu-full.yaml] [--out runtime.md]

It runs `make run [CONFIG=...]`, samples every second the resident memory summed over `make`
and all its descendants (psutil; the peak of that sum is what the machine must hold), then reads
each job's own time from its log (`rule <name> ... finished in <s> s`, written by
`knowlab.core.provenance.rule_step`) and prints, as Markdown: the measurement (date, machine,
wall, peak memory, jobs) and job-minutes per study and per rule.  A second `make run` is timed
too (it must re-run nothing).  The last line is
`make run: wall=<m>m<s>s peak_rss=<GiB>GiB jobs=<n> rerun_wall=<s>s`.
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
FINISHED = re.compile(r"INFO knowlab: rule (\S+) finished in ([0-9.]+) s")
#: the study a rule belongs to, by the rule file that defines it
STUDY_OF_FILE = {
    "fictionalqa.smk": "FictionalQA",
    "models.smk": "FictionalQA",
    "sort.smk": "SORT",
    "grounding.smk": "Grounding",
    "findings.smk": "summary",
    "fiction_generation.smk": "fiction generation",
}


def rule_studies() -> dict[str, str]:
    """Rule name -> study, from the `rule <name>:` / `name: f"..."` lines of rules/*.smk."""
    studies = {}
    for path in (ROOT / "rules").glob("*.smk"):
        study = STUDY_OF_FILE.get(path.name, "other")
        text = path.read_text()
        for name in re.findall(r"^rule (\w+):", text, flags=re.M):
            studies[name] = study
        for prefix in re.findall(r'^\s+f"(\w+?)_\{\w+\}"\s*$', text, flags=re.M):
            studies[prefix] = study  # rules named in a loop: figure_{family}
    return studies


def study_of(rule: str, studies: dict[str, str]) -> str:
    if rule in studies:
        return studies[rule]
    return next((s for prefix, s in studies.items() if rule.startswith(prefix + "_")), "other")


def run_make(args: list[str]) -> tuple[float, int, int]:
    """Wall seconds, exit code and peak summed RSS (bytes) of `make <args>` run in ROOT."""
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
                    total += p.memory_info().rss
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


def job_times(logs: Path) -> list[tuple[str, float]]:
    """``(rule, seconds)`` of every job that logged its end under ``logs``."""
    out = []
    for path in sorted(logs.rglob("*.log")):
        for match in FINISHED.finditer(path.read_text(errors="replace")):
            out.append((match.group(1), float(match.group(2))))
    return out


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

    studies = rule_studies()
    per_rule: dict[str, list[float]] = defaultdict(list)
    for rule, seconds in job_times(ROOT / "results" / "logs"):
        per_rule[rule].append(seconds)
    per_study: dict[str, float] = defaultdict(float)
    for rule, times in per_rule.items():
        per_study[study_of(rule, studies)] += sum(times)
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
        "| study | jobs | job-minutes | longest jobs |",
        "| --- | --- | --- | --- |",
    ]
    for study in sorted(per_study, key=per_study.get, reverse=True):
        rules = sorted((r for r in per_rule if study_of(r, studies) == study), key=lambda r: -sum(per_rule[r]))
        top = ", ".join(f"{r} {len(per_rule[r])} x {sum(per_rule[r]) / len(per_rule[r]) / 60:.1f}" for r in rules[:4])
        n = sum(len(per_rule[r]) for r in rules)
        lines.append(f"| {study} | {n} | {per_study[study] / 60:.1f} | {top} |")
    text = "\n".join(lines)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")
    minutes, seconds = divmod(round(wall), 60)
    print(f"make run: wall={minutes}m{seconds:02d}s peak_rss={peak / 2**30:.1f}GiB jobs={jobs} rerun_wall={rerun:.1f}s")


if __name__ == "__main__":
    main()

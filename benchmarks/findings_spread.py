"""Do the findings' statuses survive a change of dtype, thread count or CPU?  Compare the findings of several runs.

Give each run's ``results/findings.json`` (or its results folder) with a label, e.g. the default in
bfloat16 and in float32 on one CPU, or the same config on two CPUs:

    .venv/bin/python benchmarks/findings_spread.py bf16=/tmp/a/results f32=/tmp/b/results

It prints a Markdown table, one row per finding: its status in each run (the same word once when
every run agrees) and the range of its effect, interval and p across the runs; then the claims
whose status differs; given results folders that hold ``fictionalqa/summary.csv``, docs/default.md's
FictionalQA table with each cell's range across the runs (``benchmarks/make_run.py``).  The last line is
``findings spread: runs=<n> findings=<m> equal_status=<k>/<m> supported=<s1>,<s2>,...``.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from make_run import fictionalqa_table


def load(path: Path) -> list[dict]:
    """The records of a ``findings.json`` (a file, or a results folder holding one)."""
    file = path / "findings.json" if path.is_dir() else path
    return json.loads(file.read_text(encoding="utf-8"))


def span(values: list[float | None], fmt: str = "{:+.3g}") -> str:
    """``a`` when every run gives the same value, else ``min .. max``; ``-`` when none has one."""
    present = [v for v in values if v is not None]
    if not present:
        return "-"
    low, high = min(present), max(present)
    return fmt.format(low) if low == high else f"{fmt.format(low)} .. {fmt.format(high)}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+", help="label=path of a findings.json or a results folder")
    args = parser.parse_args()
    labels, paths = [], []
    for item in args.runs:
        label, _, path = item.partition("=")
        labels.append(label if path else Path(label).parent.name)
        paths.append(Path(path or label))
    runs = [load(path) for path in paths]
    keys = [(r["study"], r["claim"]) for r in runs[0]]
    by_run = [{(r["study"], r["claim"]): r for r in records} for records in runs]
    print("| study | claim | status (" + ", ".join(labels) + ") | effect | 95% CI low | 95% CI high | p |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    differing = []
    for key in keys:
        rows = [run.get(key) for run in by_run]
        statuses = [row["status"] if row else "absent" for row in rows]
        same = len(set(statuses)) == 1
        if not same:
            differing.append((key, statuses))
        cells = [span([row and row.get(column) for row in rows]) for column in ("effect", "ci_low", "ci_high")]
        p = span([row and row.get("p") for row in rows], "{:.2g}")
        status = statuses[0] if same else " / ".join(statuses)
        print(f"| {key[0]} | {key[1]} | {status} | {' | '.join(cells)} | {p} |")
    print()
    for (study, claim), statuses in differing:
        print(f"status differs: {study}: {claim}: " + ", ".join(f"{lab} {s}" for lab, s in zip(labels, statuses)))
    summaries = [path / "fictionalqa" / "summary.csv" for path in paths]
    if all(path.is_file() for path in summaries):
        print("\nFictionalQA, step 0 -> the last step (the control's last step in brackets), range across the runs:\n")
        print("\n".join(fictionalqa_table(*summaries)))
        print()
    supported = ",".join(str(sum(r["status"] == "supported" for r in records)) for records in runs)
    print(
        f"findings spread: runs={len(runs)} findings={len(keys)} "
        f"equal_status={len(keys) - len(differing)}/{len(keys)} supported={supported}"
    )


if __name__ == "__main__":
    main()

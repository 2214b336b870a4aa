"""knowlab.tooling.verify: what counts as an output, and a real Snakemake run killed mid-job and recovered."""

from __future__ import annotations

import sys

import pytest

from knowlab.tooling import verify

SNAKEFILE = """
rule all:
    input: "results/figures/x.txt"

rule fictionalqa_figure_x:
    output: "results/figures/x.txt"
    log: "results/logs/fictionalqa_figure_x.log"
    shell: "sleep 4; echo drawn > {output}; date > {log}"
"""


def test_output_files_leave_out_logs_and_the_report(tmp_path):
    for name, text in {
        "results/a.parquet": "a",
        "results/logs/a.log": "time",
        "results/logs/a.log.attempts": "times",
        "results/benchmarks/a.tsv": "s\n1.0",
        "results/report.html": "report",
        "resources/base_model/config.json": "{}",
        "other/b.txt": "b",
    }.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    found = verify.output_files(tmp_path)
    assert sorted(found) == ["resources/base_model/config.json", "results/a.parquet"]
    changed = dict(found, **{"results/a.parquet": "0" * 64})
    assert verify.differing(found, changed) == ["results/a.parquet"]
    assert verify.differing(found, {}) == sorted(found)


@pytest.mark.slow
def test_a_job_killed_with_sigkill_is_rerun_to_the_same_output(tmp_path):
    (tmp_path / "Snakefile").write_text(SNAKEFILE)
    command = [sys.executable, "-m", "snakemake", "--cores", "1", "--rerun-incomplete", "--nolock"]
    log = tmp_path / "verify.log"
    assert verify.run_and_kill(tmp_path, command, "figures", 1.0, log) == "fictionalqa_figure_x"
    assert not (tmp_path / "results/figures/x.txt").exists()  # killed during its sleep
    verify.run_to_end(tmp_path, command, log)
    assert (tmp_path / "results/figures/x.txt").read_text() == "drawn\n"
    # nothing left of that kind to kill: the run ends on its own
    assert verify.run_and_kill(tmp_path, command, "figures", 0.0, log) is None

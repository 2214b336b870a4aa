"""knowlab.tooling.verify: what counts as an output, and a real Snakemake run killed mid-job and recovered."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from knowlab.tooling import verify

SNAKEFILE = """
rule all:
    input: "results/figures/x.txt"

rule sort_stats:
    output: "results/sort/stats.txt"
    shell: "echo tested > {output}"

rule fictionalqa_figure_x:
    input: "results/sort/stats.txt"
    output: "results/figures/x.txt"
    log: "results/logs/fictionalqa_figure_x.log"
    shell: "sleep 4; echo drawn > {output}; date > {log}"
"""
# A figure job as the workflow's are (rule_step, knowlab.core.plotting.save); with HOLD set, the
# figure stops after writing its first file's temporary, for the test to kill it there.
FIGURE_SNAKEFILE = """
rule all:
    input: "results/figures/fig6.png"

rule fictionalqa_figure_fig6:
    output:
        figure=["results/figures/fig6.pdf", "results/figures/fig6.png"],  # a named list, as sort_stats has
        manifest="results/figures/fig6.manifest.json",
    log: "results/logs/fig6.log"
    script: "draw.py"
"""
DRAW = """
import os
import time

from matplotlib.figure import Figure

from knowlab.core import plotting
from knowlab.core.provenance import rule_step

with rule_step(snakemake):
    fig, ax = plotting.plt.subplots()
    ax.plot([0, 1], [1, 0])
    ax.set_title("fig6")
    if os.environ.get("HOLD"):
        savefig = Figure.savefig

        def held(self, *args, **kwargs):
            savefig(self, *args, **kwargs)
            time.sleep(600)

        Figure.savefig = held
    plotting.save(fig, *snakemake.output.figure)
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
    # armed by the first job of any kind asked, whatever the list's order: the statistics; one second
    # later the figure, which starts after it, is in its sleep
    hit = verify.run_and_kill(tmp_path, command, ["figures", "statistics"], 1.0, log)
    assert hit == ("statistics", "sort_stats")
    assert (tmp_path / "results/sort/stats.txt").exists() and not (tmp_path / "results/figures/x.txt").exists()
    verify.run_to_end(tmp_path, command, log)
    assert (tmp_path / "results/figures/x.txt").read_text() == "drawn\n"
    # nothing left of that kind to kill: the run ends on its own
    assert verify.run_and_kill(tmp_path, command, ["figures"], 0.0, log) is None


@pytest.mark.slow
def test_a_figure_job_killed_mid_write_leaves_no_temporary(tmp_path):
    """Issue 43: SIGKILL while a figure's atomic write is under way (its temporary on disk, beside
    the output), then the run to the end: the outputs are whole and no temporary is left."""
    (tmp_path / "Snakefile").write_text(FIGURE_SNAKEFILE)
    (tmp_path / "draw.py").write_text(DRAW)
    command = [sys.executable, "-m", "snakemake", "--cores", "1", "--rerun-incomplete", "--nolock"]
    figures = tmp_path / "results" / "figures"
    held = subprocess.Popen(
        command, cwd=tmp_path, env={**os.environ, "HOLD": "1"}, start_new_session=True,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 120
        while not list(figures.glob(".fig6.pdf.partial-*")) and time.monotonic() < deadline:
            assert held.poll() is None, "the held run ended on its own"
            time.sleep(0.1)
    finally:
        os.killpg(held.pid, signal.SIGKILL)
        held.wait()
    assert [p.name for p in figures.iterdir() if p.name.startswith(".")], "the kill left the temporary"
    assert not (figures / "fig6.pdf").exists()
    verify.run_to_end(tmp_path, command, tmp_path / "verify.log")
    assert sorted(p.name for p in figures.iterdir()) == ["fig6.manifest.json", "fig6.pdf", "fig6.png"]
    assert (figures / "fig6.pdf").read_bytes()[:4] == b"%PDF"
    assert "left by an interrupted attempt" in (tmp_path / "results/logs/fig6.log").read_text()

"""knowlab.tooling.endings: what the Snakefile's onsuccess / onerror hooks print, on a Snakemake log
written by Snakemake 9.27 (two failed jobs, one with two logs, between two jobs that ran well)."""

from __future__ import annotations

from knowlab.tooling import endings

LOG = """\
[Sat Nov 28 00:29:39 2026]
localrule b:
    output: b.txt
    log: logs/b.log
    jobid: 1
    reason: Missing output files: b.txt
RuleException:
CalledProcessError in file "/tmp/errsm/Snakefile", line 7:
Command 'set -euo pipefail;  echo oops > logs/b.log; exit 1' returned non-zero exit status 1.
[Sat Nov 28 00:29:39 2026]
Error in rule b:
    message: None
    jobid: 1
    output: b.txt
    log: logs/b.log (check log file(s) for error details)
    shell:
        echo oops > logs/b.log; exit 1
        (command exited with non-zero exit code)
[Sat Nov 28 00:29:39 2026]
localrule d:
    output: d.txt
    log: logs/d.log
    jobid: 3
Error in rule c:
    message: None
    jobid: 2
    output: c.txt
    log: logs/c.log, logs/c2.log (check log file(s) for error details)
Exiting because a job execution failed. Look above for error messages
"""


def test_failed_jobs_are_the_error_blocks_of_the_log():
    # the job that ran well (d) is not among them, though its log line looks the same
    assert endings.failed_jobs(LOG) == [("b", ["logs/b.log"]), ("c", ["logs/c.log", "logs/c2.log"])]
    assert endings.failed_jobs("Error in rule a:\n    jobid: 1\n") == [("a", [])]


def test_error_message_names_each_failed_rule_and_its_log(tmp_path):
    log = tmp_path / "run.snakemake.log"
    log.write_text(LOG)
    text = endings.error_message([str(log)])  # what onerror receives: a list of paths
    assert text.splitlines() == [
        "The workflow failed: 2 job(s). Read the job's log first:",
        "  rule b: logs/b.log",
        "  rule c: logs/c.log, logs/c2.log",
        f"Snakemake's log of this invocation: {log}",
    ]
    missing = endings.error_message(tmp_path / "gone.log")
    assert missing == f"The workflow failed; Snakemake's log of this invocation: {tmp_path / 'gone.log'}\n"


def test_success_message_prints_the_findings_and_where_the_report_is(tmp_path):
    assert endings.success_message(tmp_path).startswith("No findings yet (results/findings.txt)")
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "findings.txt").write_text("Headline findings of the three papers on this run: 1 of 2\n")
    lines = endings.success_message(tmp_path).splitlines()
    assert lines[0] == "Headline findings of the three papers on this run: 1 of 2"
    assert lines[1].startswith("Report: snakemake --report results/report.html")

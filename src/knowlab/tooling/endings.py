"""What every invocation of the workflow prints at its end, local or on SLURM (the Snakefile's
``onsuccess:`` and ``onerror:`` hooks; Snakemake runs neither on a dry run).

- :func:`success_message`: the findings of the run (``results/findings.txt``, the papers' claims
  decided on its tables), and where the report and the provenance audit are.
- :func:`error_message`: each failed job's rule and its log, read from Snakemake's own log of the
  invocation (the ``Error in rule <name>:`` blocks; the same under every executor).

Both only read files; they import nothing heavy, so that the hooks run in Snakemake's own
environment.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

from knowlab.layout import FINDINGS_TEXT as _FINDINGS_TEXT
from knowlab.layout import REPORT, RESOURCES, RESULTS

#: where the findings of a run are (rule findings)
FINDINGS_TEXT = _FINDINGS_TEXT.path()

_ERROR = re.compile(r"^Error in rule (\S+):$")
_LOG = re.compile(r"^\s+log: (.+?)(?: \(check log file\(s\) for error details\))?$")


def success_message(workdir: str | Path = ".") -> str:
    """The end of a successful invocation: the findings (or why there are none yet), then where the
    report and the audit are.  ``workdir``: the workflow's working directory."""
    findings = Path(workdir, FINDINGS_TEXT)
    if findings.is_file():
        text = findings.read_text(encoding="utf-8").rstrip("\n")
    else:
        text = f"No findings yet ({FINDINGS_TEXT}): this invocation's targets did not include rule findings."
    return (
        f"{text}\n"
        f"Report: snakemake --report {REPORT} (or make report); provenance: "
        f"python -m knowlab.tooling.audit {RESULTS} {RESOURCES}\n"
    )


def failed_jobs(snakemake_log: str) -> list[tuple[str, list[str]]]:
    """``(rule, logs)`` of every ``Error in rule <rule>:`` block of a Snakemake log, in order; ``logs``:
    the job's log files (empty when the rule has none)."""
    failed: list[tuple[str, list[str]]] = []
    inside = False  # within an error block: its lines are indented
    for line in snakemake_log.splitlines():
        if match := _ERROR.match(line):
            failed.append((match.group(1), []))
            inside = True
        elif inside and line.startswith((" ", "\t")):
            if match := _LOG.match(line):
                failed[-1][1].extend(path.strip() for path in match.group(1).split(","))
        else:
            inside = False
    return failed


def error_message(snakemake_log: str | Path | Sequence[str | Path] | None) -> str:
    """The end of a failed invocation: each failed rule and the log to read, from Snakemake's log of
    the invocation (what the ``onerror:`` hook receives: a path, or a list of them; none or
    unreadable: say where to look instead)."""
    logs = [snakemake_log] if isinstance(snakemake_log, (str, Path)) else list(snakemake_log or [])
    text = ""
    for path in logs:
        try:
            text += Path(path).read_text(encoding="utf-8", errors="replace")
        except OSError:
            pass
    where = ", ".join(map(str, logs)) or "none written"
    failed = failed_jobs(text)
    if not failed:
        return f"The workflow failed; Snakemake's log of this invocation: {where}\n"
    lines = [f"The workflow failed: {len(failed)} job(s). Read the job's log first:"]
    for rule, job_logs in failed:
        lines.append(f"  rule {rule}: " + (", ".join(job_logs) if job_logs else "no log (see Snakemake's log)"))
    lines.append(f"Snakemake's log of this invocation: {where}")
    return "\n".join(lines) + "\n"

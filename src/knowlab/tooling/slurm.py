"""A one-node SLURM cluster on this machine, and the workflow's test config run through it.

Two parts, both driven from the repository root:

* ``python -m knowlab.tooling.slurm conf --etc /etc/slurm`` writes the configuration of the local
  cluster (:func:`slurm_conf`, :func:`slurmdbd_conf`, :func:`gres_conf`): one node described by
  ``slurmd -C``, one default partition ``local``, accounting through slurmdbd (MariaDB), two
  GPUs that exist only as generic resources (``--gpus`` requests are scheduled; no device is
  bound, so torch still sees the CPU).  ``tools/slurm_cluster.sh start|stop|status`` calls it and
  manages the daemons.
* ``python -m knowlab.tooling.slurm test`` (``make test-slurm``; the cluster must be up) runs
  config/test.yaml twice, locally and through the project's SLURM profile
  (``workflow/profiles/slurm``, unchanged, with :func:`local_profile` laid over it for this one
  node, and what the rules ask for fitted to it by the config overlay :func:`local_config`), kills
  a running fine-tuning job and a running evaluation job with ``scancel`` (:class:`Canceller`)
  (the profile's ``retries`` re-runs them), then runs one fine-tuning interval with
  ``launcher: srun`` on 2 tasks and one job past its time limit, and checks what
  :func:`main` lists (where each download job ran: :func:`download_sites`).  Its last line is
  :func:`summary_line`.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import secrets
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from knowlab.config import load_config
from knowlab.downloads import DOWNLOAD_RULES
from knowlab.layout import (
    CHECKPOINT,
    CHECKPOINT_TRAIN_LOG,
    FINETUNE_STEP,
    OUTPUT_FOLDERS,
    RESULTS,
    Layout,
    fictionalqa_training,
)
from knowlab.tooling import compare
from knowlab.tooling.envs import workflow_rules
from knowlab.tooling.verify import differing, output_files

ROOT = Path(__file__).resolve().parents[3]
#: the marker on the first line of every file :func:`write_conf` writes: it overwrites only those
MARKER = "# knowlab local SLURM cluster (tools/slurm_cluster.sh)"
CLUSTER = "knowlab"
PARTITION = "local"
ACCOUNT = "knowlab"
#: fake GPUs per node: generic resources without a device file, so that ``--gpus`` is scheduled
FAKE_GPUS = 2
STATE = Path("/var/spool/slurm-knowlab")
RUN = Path("/run/slurm-knowlab")
LOGS = Path("/var/log/slurm-knowlab")
#: the accounting database and its MariaDB user: names of this cluster's own, never SLURM's defaults
#: (``slurm_acct_db``, ``slurm``), so that ``tools/slurm_cluster.sh start`` drops and creates only its
#: own; the user's password is drawn afresh each time the configuration is written
#: (:func:`slurmdbd_conf`) and lives only in ``slurmdbd.conf`` (mode 600, root)
DB_NAME = "knowlab_slurm_acct"
DB_USER = "knowlab_slurmdbd"
#: the tolerance of benchmarks/distributed.py (its --tolerance default): relative, on every
#: step's loss and on the checkpoint's logits, between world size 2 and world size 1
DISTRIBUTED_TOLERANCE = 1e-4
#: what the local-partition overlay gives every rule: one CPU and thread (two jobs at a time on a
#: two-core node), memory capped at this many MB
LOCAL_CPUS = 1
LOCAL_MEM_MB = 4000
#: rules cancelled once while running, by kind: rule-name pattern
CANCEL_KINDS = {"fine-tuning": r"finetune(_last)?", "evaluation": r"fictionalqa_evaluate"}


# ---------------------------------------------------------------------------- cluster configuration


def node_line(slurmd_c: str, gpus: int = FAKE_GPUS) -> str:
    """The ``NodeName=`` line of slurm.conf from the output of ``slurmd -C``, with ``gpus`` fake
    GPUs (``Gres=gpu:N``) and the loopback address.

    Raises:
        ValueError: the output has no ``NodeName=`` line.
    """
    for line in slurmd_c.splitlines():
        if line.startswith("NodeName="):
            return f"{line.strip()} NodeAddr=127.0.0.1" + (f" Gres=gpu:{gpus}" if gpus else "") + " State=UNKNOWN"
    raise ValueError(f"slurmd -C printed no NodeName= line: {slurmd_c!r}")


def node_name(line: str) -> str:
    """The node's name in a ``NodeName=`` line."""
    return line.split()[0].split("=", 1)[1]


def slurm_conf(node: str, gpus: int = FAKE_GPUS) -> str:
    """slurm.conf of the one-node cluster: ``node`` is :func:`node_line`; the node also runs slurmctld.

    Process tracking by parent pid and no task plugin (no cgroups needed), root as SlurmUser,
    cores and memory as consumable resources, jobs kept in slurmctld's memory for 300 s after they
    end (``MinJobAge``: squeue still sees them between status checks), job comments stored in the
    accounting database (the executor plugin puts the rule and wildcards there).
    """
    host = node_name(node)
    lines = [
        MARKER,
        f"ClusterName={CLUSTER}",
        f"SlurmctldHost={host}(127.0.0.1)",
        "SlurmUser=root",
        "SlurmdUser=root",
        "AuthType=auth/munge",
        "CredType=cred/munge",
        "MpiDefault=none",
        "ProctrackType=proctrack/linuxproc",
        "TaskPlugin=task/none",
        "SelectType=select/cons_tres",
        "SelectTypeParameters=CR_Core_Memory",
        "SchedulerType=sched/backfill",
        "ReturnToService=2",
        "MinJobAge=300",
        "KillWait=5",
        "InactiveLimit=0",
        "JobAcctGatherType=jobacct_gather/linux",
        "JobAcctGatherFrequency=10",
        "AccountingStorageType=accounting_storage/slurmdbd",
        "AccountingStorageHost=localhost",
        "AccountingStoreFlags=job_comment",
        "AccountingStorageTRES=gres/gpu",
        "JobCompType=jobcomp/none",
        f"StateSaveLocation={STATE}/ctld",
        f"SlurmdSpoolDir={STATE}/d",
        f"SlurmctldPidFile={RUN}/slurmctld.pid",
        f"SlurmdPidFile={RUN}/slurmd.pid",
        f"SlurmctldLogFile={LOGS}/slurmctld.log",
        f"SlurmdLogFile={LOGS}/slurmd.log",
    ]
    if gpus:
        lines.append("GresTypes=gpu")
    lines += [node, f"PartitionName={PARTITION} Nodes=ALL Default=YES MaxTime=INFINITE State=UP"]
    return "\n".join(lines) + "\n"


def slurmdbd_conf(password: str | None = None) -> str:
    """slurmdbd.conf: accounting in the local MariaDB (:data:`DB_NAME`, user :data:`DB_USER`), whose
    password is ``password`` (None: 32 random hex digits from :mod:`secrets`, a new one each call)."""
    password = password or secrets.token_hex(16)
    return (
        "\n".join(
            [
                MARKER,
                "AuthType=auth/munge",
                "DbdHost=localhost",
                "SlurmUser=root",
                f"PidFile={RUN}/slurmdbd.pid",
                f"LogFile={LOGS}/slurmdbd.log",
                "StorageType=accounting_storage/mysql",
                "StorageHost=localhost",
                f"StorageUser={DB_USER}",
                f"StoragePass={password}",
                f"StorageLoc={DB_NAME}",
            ]
        )
        + "\n"
    )


#: the "device files" of the fake GPUs: slurmd counts a GPU only with a file; these bind nothing
FAKE_GPU_FILES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom")


def gres_conf(node: str, gpus: int = FAKE_GPUS) -> str:
    """gres.conf of ``node`` (:func:`node_line`): ``gpus`` fake GPUs, one character device of
    :data:`FAKE_GPU_FILES` each (slurmd reports a GPU without a ``File`` as count 0, which drains the
    node).  With task/none no device is restricted; jobs get ``CUDA_VISIBLE_DEVICES``, which a CPU
    build of torch ignores.

    Raises:
        ValueError: more GPUs than :data:`FAKE_GPU_FILES`.
    """
    if gpus > len(FAKE_GPU_FILES):
        raise ValueError(f"at most {len(FAKE_GPU_FILES)} fake GPUs")
    host = node_name(node)
    return MARKER + "\n" + "".join(f"NodeName={host} Name=gpu File={f} Count=1\n" for f in FAKE_GPU_FILES[:gpus])


def write_conf(etc: Path, slurmd_c: str, gpus: int = FAKE_GPUS) -> list[Path]:
    """Write slurm.conf, slurmdbd.conf (mode 600) and gres.conf into ``etc``; the paths written.

    Raises:
        FileExistsError: one of them exists and was not written by this module (no :data:`MARKER`):
            a real cluster's configuration is never overwritten.
    """
    etc = Path(etc)
    node = node_line(slurmd_c, gpus)
    files = {"slurm.conf": slurm_conf(node, gpus), "slurmdbd.conf": slurmdbd_conf(), "gres.conf": gres_conf(node, gpus)}
    for name in files:
        path = etc / name
        if path.exists() and not path.read_text().startswith(MARKER):
            raise FileExistsError(f"{path} exists and is not the local test cluster's; not overwriting it")
    etc.mkdir(parents=True, exist_ok=True)
    written = []
    for name, text in files.items():
        path = etc / name
        path.write_text(text)
        path.chmod(0o600 if name == "slurmdbd.conf" else 0o644)
        written.append(path)
    return written


# ---------------------------------------------------------------------------- the profile on this node


def _fit_partitions(entry: str) -> str:
    """A profile ``config:`` entry with every partition of ``cluster.partitions`` :data:`PARTITION`."""
    key, _, value = entry.partition("=")
    if key != "cluster":
        return entry
    cluster = yaml.safe_load(value) or {}
    cluster["partitions"] = {name: PARTITION for name in ("cpu", "gpu")}
    return "cluster=" + yaml.safe_dump(cluster, default_flow_style=True, width=10**6).strip()


def local_profile(profile: Mapping[str, Any], cpus: int = LOCAL_CPUS, mem_mb: int = LOCAL_MEM_MB) -> dict[str, Any]:
    """The user's SLURM profile (``workflow/profiles/slurm/config.yaml``, parsed) fitted to the one
    local node: every partition becomes :data:`PARTITION` (``default-resources``, and the config's
    ``cluster.partitions`` in its ``config:`` entry), the account :data:`ACCOUNT`, every ``cpus_per_task``
    and ``set-threads`` entry ``cpus``, every ``mem_mb`` at most ``mem_mb``; runtimes, retries and
    everything else stay the user's.  What the rules ask for themselves (the config's ``cluster.resources``,
    ``finetune.resources``) is fitted by :func:`local_config`.  Snakemake profiles do not inherit, so the
    overlay is a whole profile written next to the test's runs (:func:`write_profile`).  The plugin polls
    sooner (``slurm-init-seconds-before-status-checks: 2``): test jobs take seconds, not hours.
    """
    out = json.loads(json.dumps(profile))  # a deep copy of plain YAML data

    def fit(resources: Mapping[str, Any]) -> dict[str, Any]:
        fitted = dict(resources)
        if "slurm_partition" in fitted:
            fitted["slurm_partition"] = PARTITION
        if "slurm_account" in fitted:
            fitted["slurm_account"] = ACCOUNT
        if "cpus_per_task" in fitted:
            fitted["cpus_per_task"] = cpus
        if "mem_mb" in fitted:
            fitted["mem_mb"] = min(int(fitted["mem_mb"]), mem_mb)
        return fitted

    out["default-resources"] = fit(out.get("default-resources", {})) | {
        "slurm_partition": PARTITION,
        "slurm_account": ACCOUNT,
    }
    if "set-resources" in out:
        out["set-resources"] = {rule: fit(res) for rule, res in out["set-resources"].items()}
    if "set-threads" in out:
        out["set-threads"] = {rule: cpus for rule in out["set-threads"]}
    entries = [_fit_partitions(entry) for entry in out.get("config", [])]
    if not any(entry.startswith("cluster=") for entry in entries):
        entries.append(_fit_partitions("cluster={}"))
    out["config"] = entries
    out["slurm-init-seconds-before-status-checks"] = 2
    return out


def local_config(config: Mapping[str, Any], cpus: int = LOCAL_CPUS, mem_mb: int = LOCAL_MEM_MB) -> dict[str, Any]:
    """The config overlay that fits what the rules ask for to the one local node: every kind of
    ``cluster.resources`` ``cpus`` CPUs and threads and at most ``mem_mb`` MB, and so is fine-tuning's memory
    (``finetune.resources``, and a base model's own ``resources`` in ``finetune.models``); ``config``: the
    run's config (:func:`knowlab.config.load_config`).  Runtimes, partition classes and GPUs stay."""
    kinds = {
        kind: {"cpus_per_task": cpus, "threads": cpus}
        | ({"mem_mb": min(int(spec["mem_mb"]), mem_mb)} if spec.get("mem_mb") is not None else {})
        for kind, spec in config["cluster"]["resources"].items()
    }
    finetune: dict[str, Any] = {"resources": {"mem_mb": min(int(config["finetune"]["resources"]["mem_mb"]), mem_mb)}}
    models = {
        name: {"resources": {"mem_mb": min(int(entry["resources"]["mem_mb"]), mem_mb)}}
        for name, entry in (config["finetune"].get("models") or {}).items()
        if isinstance(entry, Mapping) and (entry.get("resources") or {}).get("mem_mb") is not None
    }
    if models:
        finetune["models"] = models
    return {"cluster": {"resources": kinds}, "finetune": finetune}


#: what sacct reports of a job's request, by the names of Snakemake's resources
CHECKED_RESOURCES = ("mem_mb", "runtime", "cpus_per_task")


@dataclass(frozen=True)
class PrintedJob:
    """A job as a Snakemake printout shows it (a dry run, or a run's log): its rule, whether it is a local
    rule's (on the submit host), its first output, its threads, its resources (the printed text of each)
    and its inputs."""

    rule: str
    local: bool
    output: str
    threads: int
    resources: dict[str, str]
    inputs: tuple[str, ...] = ()


def printed_jobs(printout: str) -> list[PrintedJob]:
    """Every job block of a Snakemake printout (``rule NAME:`` or ``localrule NAME:`` and its indented
    lines), in order; a retried job once per attempt."""
    jobs = []
    lines = printout.splitlines()
    for at, line in enumerate(lines):
        match = _JOB_START.match(line)
        if not match:
            continue
        fields: dict[str, str] = {}
        for item in lines[at + 1 :]:
            if not item.startswith("    ") or ": " not in item:
                break
            key, _, value = item.strip().partition(": ")
            fields[key] = value
        resources = dict(kv.split("=", 1) for kv in fields["resources"].split(", ")) if "resources" in fields else {}
        jobs.append(
            PrintedJob(
                rule=match.group(2),
                local=bool(match.group(1)),
                output=fields.get("output", "").split(", ")[0],
                threads=int(fields.get("threads", 1)),
                resources=resources,
                inputs=tuple(fields["input"].split(", ")) if fields.get("input") else (),
            )
        )
    return jobs


def requested_resources(printout: str) -> dict[str, list[dict[str, int]]]:
    """What the printout's SLURM jobs (not the local rules') ask for: per rule, each different request of its
    jobs (:data:`CHECKED_RESOURCES`), in order."""
    out: dict[str, list[dict[str, int]]] = {}
    for job in printed_jobs(printout):
        if job.local:
            continue
        request = {key: int(job.resources[key]) for key in CHECKED_RESOURCES}
        if request not in out.setdefault(job.rule, []):
            out[job.rule].append(request)
    return out


def write_profile(folder: Path, profile: Mapping[str, Any]) -> Path:
    """Write ``profile`` as ``folder/config.yaml``; ``folder``."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    header = "# Generated by knowlab.tooling.slurm (local_profile): workflow/profiles/slurm fitted to one local node.\n"
    (folder / "config.yaml").write_text(header + yaml.safe_dump(dict(profile), sort_keys=False))
    return folder


def load_user_profile(root: Path = ROOT) -> dict[str, Any]:
    """The project's SLURM profile, parsed."""
    return yaml.safe_load((Path(root) / "workflow/profiles/slurm/config.yaml").read_text())


# ---------------------------------------------------------------------------- reading the runs back


class LocalRules(frozenset):
    """The workflow's local rules (``localrule: True``, read by
    :func:`knowlab.tooling.envs.workflow_rules`): ``name in LocalRules(root)`` for a rule name of a
    run's log."""

    def __new__(cls, root: Path = ROOT):
        return super().__new__(cls, (name for name, rule in workflow_rules(root).items() if rule.local))


def job_stats_table(log: str) -> tuple[dict[str, int], int | None]:
    """The first ``Job stats:`` table of a Snakemake log or printout: jobs per rule (``all``
    included) and its ``total`` row (None when the table has none).

    Raises:
        ValueError: the log has no such table.
    """
    lines = log.splitlines()
    try:
        start = lines.index("Job stats:")
    except ValueError:
        raise ValueError("no 'Job stats:' table in the Snakemake log") from None
    counts: dict[str, int] = {}
    for line in lines[start + 3 :]:
        parts = line.split()
        if len(parts) != 2 or not parts[1].isdigit():
            break
        if parts[0] == "total":
            return counts, int(parts[1])
        counts[parts[0]] = int(parts[1])
    return counts, None


def job_stats(log: str) -> dict[str, int]:
    """Jobs per rule from the first ``Job stats:`` table of a Snakemake log (``all`` and ``total``
    left out; :func:`job_stats_table`).

    Raises:
        ValueError: the log has no such table.
    """
    counts, _ = job_stats_table(log)
    return {rule: n for rule, n in counts.items() if rule != "all"}


_JOB_START = re.compile(r"^\s*(local)?rule (\w+):\s*$")


def started_rules(log: str) -> tuple[dict[str, int], dict[str, int]]:
    """``(local, submitted)``: jobs per rule that a Snakemake log shows starting as ``localrule`` (on
    the submit host) and as ``rule`` (handed to the executor), retries included."""
    local: dict[str, int] = {}
    remote: dict[str, int] = {}
    for line in log.splitlines():
        match = _JOB_START.match(line)
        if match:
            target = local if match.group(1) else remote
            target[match.group(2)] = target.get(match.group(2), 0) + 1
    return local, remote


def download_sites(
    log: str, rows: Sequence[Mapping[str, str]], rules: Iterable[str] = DOWNLOAD_RULES
) -> tuple[dict[str, dict[str, int]], list[str]]:
    """Where the download jobs of a SLURM run ran (``rules``: the rules that fetch from the network,
    :data:`knowlab.downloads.DOWNLOAD_RULES`): ``(sites, problems)``.  ``sites``: per download rule with a
    job in the run, ``submit_host``, its jobs the log shows starting as ``localrule`` (:func:`started_rules`),
    and ``slurm``, those that ran as SLURM jobs: started as ``rule`` (handed to the executor) in the log,
    or listed by ``rows`` (:func:`parse_sacct` of the run's jobs, read by their comment), whichever counts
    more.  ``problems``: one line per rule with a SLURM job (a compute node may have no network), and one
    when no download job ran at all (then nothing was checked)."""
    rules = tuple(rules)
    local, submitted = started_rules(log)
    in_sacct: dict[str, list[str]] = {}
    for row in rows:
        if row["Comment"].startswith("rule_") and (rule := comment_rule(row["Comment"])[0]) in rules:
            in_sacct.setdefault(rule, []).append(row["JobIDRaw"])
    sites: dict[str, dict[str, int]] = {}
    problems = []
    for rule in rules:
        slurm_jobs = max(submitted.get(rule, 0), len(in_sacct.get(rule, ())))
        if local.get(rule, 0) or slurm_jobs:
            sites[rule] = {"submit_host": local.get(rule, 0), "slurm": slurm_jobs}
        if slurm_jobs:
            problems.append(
                f"download rule {rule}: {slurm_jobs} job(s) ran as SLURM jobs (sacct job ids "
                f"{in_sacct.get(rule, [])}), where a compute node may have no network: it must be a local rule"
            )
    if not sites:
        problems.append(f"no job of a download rule ({', '.join(rules)}) ran: where downloads run was not checked")
    return sites, problems


SACCT_FIELDS = (
    "JobIDRaw", "JobName", "Comment", "State", "ReqMem", "Timelimit", "ReqCPUS", "AllocTRES", "Partition",
    "Account", "NTasks", "Elapsed", "ExitCode",
)  # fmt: skip


def sacct_command(job_ids: Iterable[str] | None = None, name: str | None = None, steps: bool = False) -> list[str]:
    """``sacct`` for jobs by id or by job name (the executor plugin's run id), :data:`SACCT_FIELDS`,
    ``|``-separated, without steps unless ``steps``."""
    cmd = ["sacct", "--parsable2", "--noheader", "--starttime", "2000-01-01", "--format", ",".join(SACCT_FIELDS)]
    if not steps:
        cmd.append("-X")
    if job_ids is not None:
        cmd += ["--jobs", ",".join(job_ids)]
    if name is not None:
        cmd += ["--name", name]
    return cmd


def parse_sacct(text: str) -> list[dict[str, str]]:
    """Rows of ``sacct --parsable2 --noheader`` output in :data:`SACCT_FIELDS` order.

    Raises:
        ValueError: a line with another number of fields.
    """
    rows = []
    for line in text.splitlines():
        if not line.strip():
            continue
        values = line.split("|")
        if len(values) != len(SACCT_FIELDS):
            raise ValueError(f"sacct line with {len(values)} fields, not {len(SACCT_FIELDS)}: {line!r}")
        rows.append(dict(zip(SACCT_FIELDS, values)))
    return rows


def mem_mb(req_mem: str) -> int:
    """MB of a ``ReqMem`` value (``4000M``, ``4G``, ``1T``; an old-style trailing ``n``/``c`` dropped).

    Raises:
        ValueError: not a memory value.
    """
    match = re.fullmatch(r"(\d+(?:\.\d+)?)([KMGT]?)[nc]?", req_mem.strip())
    if not match:
        raise ValueError(f"not a memory value: {req_mem!r}")
    factor = {"K": 1 / 1024, "M": 1, "": 1, "G": 1024, "T": 1024 * 1024}[match.group(2)]
    return round(float(match.group(1)) * factor)


def minutes(limit: str) -> int:
    """Minutes of a SLURM time (``[D-]HH:MM:SS``, ``MM:SS``, ``M``), rounded down.

    Raises:
        ValueError: not a time (``UNLIMITED`` included).
    """
    match = re.fullmatch(r"(?:(\d+)-)?(\d+)(?::(\d+))?(?::(\d+))?", limit.strip())
    if not match:
        raise ValueError(f"not a SLURM time: {limit!r}")
    days = int(match.group(1) or 0)
    parts = [int(p) for p in match.group(2, 3, 4) if p is not None]
    if match.group(1) is not None or len(parts) == 3:
        hours, mins, secs = (parts + [0, 0])[:3]
    elif len(parts) == 2:
        hours, mins, secs = 0, parts[0], parts[1]
    else:
        hours, mins, secs = 0, parts[0], 0
    return (days * 24 + hours) * 60 + mins + secs // 60


def seconds(elapsed: str) -> int:
    """Seconds of a SLURM elapsed time (``[D-][HH:]MM:SS``, as squeue and sacct print it)."""
    match = re.fullmatch(r"(?:(\d+)-)?(?:(\d+):)?(\d+):(\d+)", elapsed.strip())
    if not match:
        raise ValueError(f"not an elapsed time: {elapsed!r}")
    days, hours, mins, secs = (int(g or 0) for g in match.groups())
    return ((days * 24 + hours) * 60 + mins) * 60 + secs


def comment_rule(comment: str) -> tuple[str, str]:
    """``(rule, wildcards)`` of the executor plugin's job comment ``rule_<rule>[_wildcards_<w>]``.

    Raises:
        ValueError: not such a comment.
    """
    if not comment.startswith("rule_"):
        raise ValueError(f"not a Snakemake job comment: {comment!r}")
    rule, _, wildcards = comment[len("rule_") :].partition("_wildcards_")
    return rule, wildcards


def resource_mismatches(
    rows: Sequence[Mapping[str, str]], requested: Mapping[str, Sequence[Mapping[str, int]]], tasks: int = 1
) -> list[str]:
    """One line per SLURM job whose memory, time limit, CPUs (sacct), partition or account differ from what
    Snakemake asked for its rule (``requested``: :func:`requested_resources` of the run's log; CPUs:
    ``cpus_per_task`` x ``tasks``, the jobs' tasks, which sacct does not report for an allocation); a rule
    whose jobs ask for several requests (fine-tuning, per base model) matches any of them."""
    problems = []
    for row in rows:
        rule, wildcards = comment_rule(row["Comment"])
        got = {
            "mem_mb": mem_mb(row["ReqMem"]),
            "runtime": minutes(row["Timelimit"]),
            "cpus_per_task": int(row["ReqCPUS"]) // tasks,
        }
        wants = list(requested.get(rule, ()))
        if not wants:
            problems.append(f"job {row['JobIDRaw']} ({rule} {wildcards}): no request of rule {rule} in the log")
        elif got not in wants:
            want = wants[0]
            problems += [
                f"job {row['JobIDRaw']} ({rule} {wildcards}): {key} {got[key]} != requested {want[key]}"
                for key in want
                if got[key] != want[key]
            ]
        for column, value in (("Partition", PARTITION), ("Account", ACCOUNT)):
            if row[column] != value:
                problems.append(f"job {row['JobIDRaw']} ({rule}): {column} {row[column]} != {value}")
    return problems


def oversized_requests(
    requested: Mapping[str, Sequence[Mapping[str, int]]], cpus: int = LOCAL_CPUS, mem_mb: int = LOCAL_MEM_MB
) -> list[str]:
    """One line per rule whose jobs ask for more than the local node gives (:func:`local_config` fits them)."""
    return [
        f"rule {rule} asks for {request}, over {cpus} CPU(s) and {mem_mb} MB"
        for rule, requests in requested.items()
        for request in requests
        if request["cpus_per_task"] > cpus or request["mem_mb"] > mem_mb
    ]


def summary_line(jobs: int, identical: int, total: int, srun_ranks: int, cancelled: int, recovered: bool) -> str:
    """The last line of ``make test-slurm``."""
    return (
        f"slurm: jobs={jobs} identical={identical}/{total} srun_ranks={srun_ranks} cancelled={cancelled} "
        f"recovered_identical={recovered}"
    )


# ---------------------------------------------------------------------------- running


def snakemake_command(workdir: Path, profile: Path | None, configs: Sequence[Path], *args: str) -> list[str]:
    """The workflow (this checkout's Snakefile) on ``workdir``, with ``configs`` over the default, through
    ``profile`` (None: locally)."""
    cmd = [sys.executable, "-m", "snakemake", "--snakefile", str(ROOT / "Snakefile"), "--directory", str(workdir)]
    if profile is not None:
        cmd += ["--profile", str(profile)]
    # the configs last: --configfile (like --rerun-triggers) takes every word up to the next option
    return cmd + [*args, "--configfile", *map(str, configs)]


class Run:
    """A command in its own process group, output to ``log``; :meth:`wait` returns its exit status,
    :meth:`kill` ends the group (TERM, then KILL after 10 s)."""

    def __init__(self, cmd: Sequence[str], log: Path, env: Mapping[str, str] | None = None):
        self.log = Path(log)
        self._out = open(self.log, "w")
        self.proc = subprocess.Popen(
            list(cmd), stdout=self._out, stderr=subprocess.STDOUT, cwd=ROOT, env=env, start_new_session=True
        )

    def wait(self, timeout: float | None = None) -> int:
        try:
            return self.proc.wait(timeout)
        finally:
            if self.proc.poll() is not None:
                self._out.close()

    def kill(self) -> None:
        if self.proc.poll() is None:
            for sig, grace in ((signal.SIGTERM, 10), (signal.SIGKILL, 5)):
                try:
                    os.killpg(self.proc.pid, sig)
                    self.proc.wait(grace)
                    break
                except (ProcessLookupError, subprocess.TimeoutExpired):
                    continue
        self._out.close()


@dataclass
class Cancelled:
    """A job :class:`Canceller` cancelled: its kind, SLURM id, rule and wildcards, seconds it had run."""

    kind: str
    job_id: str
    rule: str
    wildcards: str
    after_s: int


@dataclass
class Canceller:
    """Watches ``squeue`` and kills the first job of each of ``kinds`` (name -> rule-name pattern) that
    has been running ``delay_s`` seconds, once per kind, with ``scancel --signal TERM``: every process of
    the job's steps gets SIGTERM, the job ends FAILED and the profile's ``retries`` re-run it.

    Not a plain ``scancel`` (nor ``--signal KILL``, which SLURM turns into one): sacct reports such a
    job as ``CANCELLED by <uid>``, a state snakemake-executor-plugin-slurm (2.8.0) does not recognize
    (it compares the whole string with ``CANCELLED``), so Snakemake waits on the job forever (seen on
    this cluster)."""

    kinds: Mapping[str, str]
    delay_s: int = 8
    done: list[Cancelled] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(10)

    def _watch(self) -> None:
        pending = dict(self.kinds)
        while pending and not self._stop.wait(1.0):
            listed = subprocess.run(["squeue", "-h", "-o", "%i|%k|%T|%M"], capture_output=True, text=True)
            for line in listed.stdout.splitlines():
                job_id, comment, state, elapsed = line.split("|")
                if state != "RUNNING" or not comment.startswith("rule_"):
                    continue
                rule, wildcards = comment_rule(comment)
                for kind, pattern in list(pending.items()):
                    if re.fullmatch(pattern, rule) and seconds(elapsed) >= self.delay_s:
                        subprocess.run(["scancel", "--signal", "TERM", job_id], check=False)
                        self.done.append(Cancelled(kind, job_id, rule, wildcards, seconds(elapsed)))
                        print(
                            f"  scancel --signal TERM {job_id} ({rule} {wildcards}) after {elapsed} running", flush=True
                        )
                        del pending[kind]
                        break


def sacct_rows(**query: Any) -> list[dict[str, str]]:
    """:func:`parse_sacct` of :func:`sacct_command` ``(**query)``."""
    return parse_sacct(subprocess.run(sacct_command(**query), check=True, capture_output=True, text=True).stdout)


def run_id(log: str) -> str:
    """The executor plugin's run id (the SLURM job name of every job of one Snakemake run).

    Raises:
        ValueError: the log has none.
    """
    match = re.search(r"^SLURM run ID: (\S+)", log, re.M)
    if not match:
        raise ValueError("no 'SLURM run ID:' in the Snakemake log")
    return match.group(1)


TIMEOUT_SNAKEFILE = """\
# Generated by knowlab.tooling.slurm: one job that outlives its 1-minute SLURM time limit.
rule all:
    input: "slept.txt"

rule sleep_past_limit:
    output: "slept.txt"
    resources: runtime=1
    shell: "sleep 600 && touch {output}"
"""


def checkpoint_logits(folder: Path):
    """Logits of the checkpoint in ``folder`` on tokens 1..32 (float32), as benchmarks/distributed.py
    computes them."""
    # deferred: torch and transformers load only for the srun check (seconds)
    import torch
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32)
    with torch.no_grad():
        return model(torch.arange(1, 33).unsqueeze(0)).logits


def distributed_drift(one: Path, two: Path, checkpoint: str) -> tuple[float, float]:
    """``(loss, logits)``: the largest relative difference of the training loss at any step, and of the
    checkpoint's logits (max |a - b| / max |a|), between the runs under results folders ``one`` and
    ``two`` for ``checkpoint`` (e.g. ``fictionalqa/tiny/finetune/doc/checkpoints/step-6``)."""
    # deferred: pandas only where the training logs are read
    import pandas as pd

    run, _, step = checkpoint.rpartition("/checkpoints/")
    logs = [
        pd.read_parquet(Path(root) / CHECKPOINT_TRAIN_LOG.relative(training=run, checkpoint=step))
        for root in (one, two)
    ]
    loss = float(((logs[1]["loss"] - logs[0]["loss"]).abs() / logs[0]["loss"].abs()).max())
    a, b = (checkpoint_logits(Path(root) / checkpoint) for root in (one, two))
    return loss, float((a - b).abs().max() / a.abs().max())


def copy_run(source: Path, dest: Path) -> Path:
    """Copy a finished run's ``results/`` and ``resources/`` (times kept) into a fresh ``dest``."""
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    for top in OUTPUT_FOLDERS:
        shutil.copytree(Path(source) / top, dest / top, symlinks=True)
    return dest


def leftover_jobs() -> list[str]:
    """Job ids squeue still lists."""
    listed = subprocess.run(["squeue", "-h", "-o", "%i"], capture_output=True, text=True)
    return listed.stdout.split()


# ---------------------------------------------------------------------------- make test-slurm


def srun_checkpoint(config: Path) -> str:
    """The fine-tuning interval re-run with launcher srun on 2 tasks, under ``results/``: the last
    checkpoint of the Doc run of the first base model of ``config`` (laid over config/config.yaml;
    config/test.yaml: its only interval, rule finetune_last)."""
    layout = Layout(load_config(config))
    return CHECKPOINT.relative(
        training=fictionalqa_training(layout.ft_models[0], "doc"), checkpoint=f"step-{layout.steps[-1]}"
    )


SRUN_CONFIG = "finetune:\n  distributed:\n    launcher: srun\n    nodes: 1\n    processes_per_node: 2\n"
_RANK_LINE = re.compile(r"rank (\d+) of (\d+) \(SLURM_PROCID=(\d+)\)")


class Failed(Exception):
    """A check of :func:`run_test` failed."""


def _say(message: str) -> None:
    print(message, flush=True)


def run_test(work: Path, config: Path, timeout_s: int) -> tuple[str, list[str]]:
    """Every run and check of ``make test-slurm`` under ``work`` (the cluster up); ``(last line,
    problems)``: the run is good when ``problems`` is empty.

    Raises:
        Failed: a run could not finish (its log is named).
    """
    began = time.time()
    problems: list[str] = []
    work.mkdir(parents=True, exist_ok=True)
    profile_dir = write_profile(work / "profile", local_profile(load_user_profile()))
    # what the rules ask for (the config's cluster.resources, finetune.resources), fitted to the node: the
    # SLURM runs' config laid over the test's
    fitted = work / "local-cluster.yaml"
    fitted.write_text(yaml.safe_dump(local_config(load_config(config))))
    local_dir, slurm_dir, limit_dir = work / "local", work / "slurm", work / "timelimit"
    for folder in (local_dir, slurm_dir, limit_dir):
        if folder.exists():
            shutil.rmtree(folder)
        folder.mkdir(parents=True)
    (limit_dir / "Snakefile").write_text(TIMEOUT_SNAKEFILE)

    # 1. at once: the local reference run, the SLURM run (with two jobs cancelled while running), and
    # the job past its time limit
    runs = {
        "local": Run(snakemake_command(local_dir, None, [config], "--cores", "2"), work / "local.log"),
        "slurm": Run(snakemake_command(slurm_dir, profile_dir, [config, fitted]), work / "slurm.log"),
        "timelimit": Run(
            [sys.executable, "-m", "snakemake", "--snakefile", str(limit_dir / "Snakefile"), "--directory",
             str(limit_dir), "--profile", str(profile_dir), "--retries", "0"],
            work / "timelimit.log",
        ),
    }  # fmt: skip
    canceller = Canceller(CANCEL_KINDS)
    canceller.start()
    codes = {}
    try:
        for name, run in runs.items():
            left = max(1.0, timeout_s - (time.time() - began))
            codes[name] = run.wait(left)
            _say(f"{name} run: exit {codes[name]} after {time.time() - began:.0f} s ({run.log})")
    except subprocess.TimeoutExpired:
        raise Failed(f"the runs took over {timeout_s} s; logs under {work}") from None
    finally:
        canceller.stop()
        for run in runs.values():
            run.kill()
    if codes["local"] or codes["slurm"]:
        raise Failed(f"a workflow run failed: local exit {codes['local']}, SLURM exit {codes['slurm']}; logs in {work}")

    # 2. outputs: byte for byte (manifests included), then the project's table comparison
    hashes = {name: output_files(folder) for name, folder in (("local", local_dir), ("slurm", slurm_dir))}
    names = hashes["local"].keys() | hashes["slurm"].keys()
    unequal = differing(hashes["local"], hashes["slurm"])
    for name in unequal:
        problems.append(f"differs between the local and the SLURM run: {name}")
    if compare.main([str(local_dir / RESULTS), str(slurm_dir / RESULTS)]):
        problems.append("knowlab.tooling.compare: the results' tables differ")

    # 3. where each job ran, and what SLURM gave it
    log = (work / "slurm.log").read_text()
    stats = job_stats(log)
    local_names = LocalRules()
    ran_local, submitted = started_rules(log)
    rows = sacct_rows(name=run_id(log))
    by_rule: dict[str, list[dict[str, str]]] = {}
    for row in rows:
        by_rule.setdefault(comment_rule(row["Comment"])[0], []).append(row)
    for rule, count in stats.items():
        completed = [r for r in by_rule.get(rule, []) if r["State"] == "COMPLETED"]
        if rule in local_names:
            if ran_local.get(rule, 0) != count or rule in by_rule:
                problems.append(f"localrule {rule}: {ran_local.get(rule, 0)} of {count} on the submit host, "
                                f"{len(by_rule.get(rule, []))} SLURM jobs")  # fmt: skip
        elif len(completed) != count or ran_local.get(rule):
            problems.append(
                f"rule {rule}: {len(completed)} of {count} jobs completed in SLURM, {ran_local.get(rule, 0)} local"
            )
    requested = requested_resources(log)
    problems += oversized_requests(requested) + resource_mismatches(rows, requested)
    # the downloads: each on the submit host, none a SLURM job (compute nodes often have no network)
    sites, misplaced = download_sites(log, rows)
    problems += misplaced
    _say("downloads: " + "; ".join(f"{rule} {n['submit_host']} on the submit host, {n['slurm']} as SLURM jobs"
                                   for rule, n in sites.items()))  # fmt: skip
    gpu_jobs = sum("gres/gpu=" in row["AllocTRES"] for row in rows)
    _say(f"SLURM run: {len(rows)} jobs ({sum(submitted.values())} submitted, {gpu_jobs} with a GPU allocated), "
         f"{sum(ran_local.values())} local jobs; memory, time limit and CPUs checked against the requests")  # fmt: skip

    # 4. cancelled jobs: CANCELLED in sacct, then completed by the profile's retry
    recovered = not unequal
    for job in canceller.done:
        states = {row["JobIDRaw"]: row["State"] for row in rows}
        again = [
            r for r in rows if comment_rule(r["Comment"]) == (job.rule, job.wildcards) and r["State"] == "COMPLETED"
        ]
        ok = states.get(job.job_id, "").startswith(("FAILED", "CANCELLED")) and bool(again)
        _say(f"cancelled {job.kind} job {job.job_id} ({job.rule} {job.wildcards}): {states.get(job.job_id)}, "
             f"retried as {[r['JobIDRaw'] for r in again]}")  # fmt: skip
        if not ok:
            problems.append(f"cancelled job {job.job_id} ({job.rule}) was not recovered")
        recovered &= ok
    if len(canceller.done) < len(CANCEL_KINDS):
        problems.append(f"cancelled {len(canceller.done)} jobs, not one of each of {list(CANCEL_KINDS)}")

    # 5. the time limit: the job fails as TIMEOUT, with the scheduler's reason in its logs
    limit_log = (work / "timelimit.log").read_text()
    limit_rows = sacct_rows(name=run_id(limit_log))
    slurm_logs = "".join(p.read_text(errors="replace") for p in (limit_dir / ".snakemake/slurm_logs").rglob("*.log"))
    timed_out = (
        codes["timelimit"] != 0
        and [r["State"] for r in limit_rows] == ["TIMEOUT"]
        and "TIMEOUT" in limit_log
        and "DUE TO TIME LIMIT" in slurm_logs
    )
    _say(f"time limit: exit {codes['timelimit']}, sacct {[r['State'] for r in limit_rows]}, "
         f"reason in the logs: {'DUE TO TIME LIMIT' in slurm_logs}")  # fmt: skip
    if not timed_out:
        problems.append(
            f"the job past its time limit did not fail as TIMEOUT with the reason logged ({work / 'timelimit.log'})"
        )

    # 6. distributed fine-tuning: one interval again with launcher srun on 2 tasks, in one SLURM job
    srun_dir = copy_run(slurm_dir, work / "srun")
    checkpoint = srun_checkpoint(config)
    target = Path(RESULTS) / checkpoint
    run_root, _, step = checkpoint.rpartition("/checkpoints/")
    finetune_step = FINETUNE_STEP.fix(training=run_root, checkpoint=step)
    for stale in (
        srun_dir / target,
        srun_dir / finetune_step.manifest,
        srun_dir / CHECKPOINT_TRAIN_LOG.path(training=run_root, checkpoint=step),
    ):
        shutil.rmtree(stale) if stale.is_dir() else stale.unlink()
    (work / "srun.yaml").write_text(SRUN_CONFIG)
    srun = Run(
        snakemake_command(
            srun_dir, profile_dir, [config, fitted, work / "srun.yaml"], str(target), "--rerun-triggers", "mtime"
        ),
        work / "srun.log",
    )
    try:
        code = srun.wait(max(600.0, timeout_s - (time.time() - began)))
    except subprocess.TimeoutExpired:
        raise Failed(f"the srun fine-tuning took too long ({work / 'srun.log'})") from None
    finally:
        srun.kill()
    if code:
        raise Failed(f"the srun fine-tuning failed (exit {code}); see {work / 'srun.log'}")
    srun_log = (work / "srun.log").read_text()
    srun_rows = sacct_rows(name=run_id(srun_log))
    job_log = srun_dir / finetune_step.log
    ranks = {
        m.group(3) for m in _RANK_LINE.finditer(job_log.read_text()) if m.group(2) == "2" and m.group(1) == m.group(3)
    }
    steps = sacct_rows(job_ids=[r["JobIDRaw"] for r in srun_rows], steps=True)
    two_task_steps = [r for r in steps if "." in r["JobIDRaw"] and r["NTasks"] == "2"]
    loss_drift, logit_drift = distributed_drift(slurm_dir / RESULTS, srun_dir / RESULTS, checkpoint)
    _say(f"srun fine-tuning: {len(srun_rows)} SLURM job(s) {[r['JobIDRaw'] for r in srun_rows]}, steps with 2 tasks "
         f"{[r['JobIDRaw'] for r in two_task_steps]}, ranks seen {sorted(ranks)}; against world size 1: loss "
         f"{loss_drift:.2e}, logits {logit_drift:.2e} (tolerance {DISTRIBUTED_TOLERANCE:g})")  # fmt: skip
    gloo = "device=cpu" in job_log.read_text()
    if len(srun_rows) != 1 or not two_task_steps or ranks != {"0", "1"} or not gloo:
        problems.append(f"the srun fine-tuning did not run 2 ranks in one SLURM job on the CPU ({job_log})")
    if max(loss_drift, logit_drift) > DISTRIBUTED_TOLERANCE:
        problems.append(f"world size 2 differs from world size 1 by more than {DISTRIBUTED_TOLERANCE:g}")
    problems += [f"srun job: {p}" for p in resource_mismatches(srun_rows, requested_resources(srun_log), tasks=2)]

    left = leftover_jobs()
    if left:
        problems.append(f"jobs left in the queue: {left}")
    _say(f"{time.time() - began:.0f} s; runs under {work}")
    line = summary_line(len(rows), len(names) - len(unequal), len(names), len(ranks), len(canceller.done), recovered)
    return line, problems


def _terminate(signum, frame):
    raise SystemExit(f"stopped by signal {signum}")


def test_main(args: argparse.Namespace) -> int:
    """``make test-slurm``: start the cluster, :func:`run_test`, stop the cluster (also on failure or
    SIGTERM), check that no SLURM process is left, print the problems and the last line."""
    signal.signal(signal.SIGTERM, _terminate)
    script = ROOT / "tools/slurm_cluster.sh"
    env = {**os.environ, "PYTHON": sys.executable}
    began = time.time()
    line, problems = None, ["did not finish"]
    try:
        if not args.keep_cluster:
            subprocess.run([str(script), "start"], check=True, env=env)
        line, problems = run_test(args.work, args.config, args.timeout)
    except (Failed, subprocess.CalledProcessError, SystemExit) as err:
        problems = [str(err)]
    finally:
        if not args.keep_cluster:
            subprocess.run([str(script), "stop"], env=env)
            stepd = [
                p.parent.name for p in Path("/proc").glob("*/comm") if _read(p) in ("slurmstepd", "slurmd", "slurmctld")
            ]
            if stepd:
                problems.append(f"SLURM processes left after stopping the cluster: pids {stepd}")
    for problem in problems:
        _say(f"PROBLEM: {problem}")
    _say(f"make test-slurm: {time.time() - began:.0f} s")
    print(line or summary_line(0, 0, 0, 0, 0, False), flush=True)
    return 0 if not problems else 1


def _read(path: Path) -> str:
    try:
        return path.read_text().strip()
    except OSError:
        return ""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    conf = sub.add_parser("conf", help="write slurm.conf, slurmdbd.conf and gres.conf")
    conf.add_argument("--etc", type=Path, default=Path("/etc/slurm"))
    conf.add_argument("--gpus", type=int, default=FAKE_GPUS)
    prof = sub.add_parser("profile", help="write the profile fitted to the local node")
    prof.add_argument("--out", type=Path, default=Path("workflow/profiles/slurm-local"))
    test = sub.add_parser("test", help="make test-slurm: start the cluster, run and check, stop it")
    test.add_argument("--config", type=Path, default=ROOT / "config/test.yaml")
    test.add_argument("--work", type=Path, default=Path("/tmp/knowlab-slurm"))
    test.add_argument(
        "--timeout", type=int, default=2400, help="seconds for the runs (the srun fine-tuning: 600 at least)"
    )
    test.add_argument("--keep-cluster", action="store_true", help="neither start nor stop the cluster")
    args = parser.parse_args(argv)
    if args.command == "test":
        return test_main(args)
    if args.command == "profile":
        print(f"wrote {write_profile(args.out, local_profile(load_user_profile()))}/config.yaml")
        fitted = args.out / "local-cluster.yaml"
        fitted.write_text(yaml.safe_dump(local_config(load_config())))
        print(f"wrote {fitted}: give it after your configs (--configfile ... {fitted})")
        return 0
    if args.command == "conf":
        slurmd_c = subprocess.run(["slurmd", "-C"], check=True, capture_output=True, text=True).stdout
        try:
            for path in write_conf(args.etc, slurmd_c, args.gpus):
                print(f"wrote {path}")
        except FileExistsError as err:
            print(f"slurm conf: {err}", file=sys.stderr)
            return 1
        return 0
    return 2


if __name__ == "__main__":
    sys.exit(main())

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
  node), cancels a running fine-tuning job and a running evaluation job with ``scancel``
  (the profile's ``retries`` re-runs them), then runs one fine-tuning interval with
  ``launcher: srun`` on 2 tasks and one job past its time limit, and checks what
  :func:`main` lists.  Its last line is :func:`summary_line`.
"""

from __future__ import annotations

import argparse
import json
import os
import re
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
DB_NAME = "slurm_acct_db"
DB_USER = "slurm"
DB_PASS = "knowlab-local"
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


def slurmdbd_conf() -> str:
    """slurmdbd.conf: accounting in the local MariaDB (:data:`DB_NAME`, user :data:`DB_USER`)."""
    return "\n".join(
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
            f"StoragePass={DB_PASS}",
            f"StorageLoc={DB_NAME}",
        ]
    ) + "\n"


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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    conf = sub.add_parser("conf", help="write slurm.conf, slurmdbd.conf and gres.conf")
    conf.add_argument("--etc", type=Path, default=Path("/etc/slurm"))
    conf.add_argument("--gpus", type=int, default=FAKE_GPUS)
    args = parser.parse_args(argv)
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

"""What each job asks a cluster for, by kind of job: the resources and threads the rules declare.

Every rule that runs as a cluster job names its kind (``resources: **job_resources(config, "ranking")``,
``threads: job_threads(config, "ranking")``), and the config says what a job of each kind needs:
``cluster.resources.<kind>`` (``config/schema.yaml``).  The request travels with the rules, so a profile
needs no entry per rule name, and the workflow used as a Snakemake module (``use rule * from knowlab as
knowlab_*``, whose rules have other names) asks for the same.  What a kind gives:

- ``partition``: its partition *class*, ``cpu`` or ``gpu``; the SLURM partition of a class is the config's
  ``cluster.partitions.<class>`` (site-specific: the SLURM profile sets it, ``workflow/profiles/slurm``); a
  class without one (``cpu``, by default) names no partition, so the profile's ``default-resources``
  ``slurm_partition`` applies (else SLURM's default partition);
- ``gpu``, ``mem_mb`` (MB), ``runtime`` (minutes), ``cpus_per_task``: snakemake-executor-plugin-slurm's
  resources (``--gpus``, ``--mem``, ``--time``, ``--cpus-per-task``); a key the kind leaves out is the
  profile's default;
- ``threads``: the jobs' Snakemake ``threads`` (their torch threads), for the rules that set threads; unset
  or null: the config's top-level ``threads``.

Fine-tuning (:func:`finetune_job_resources`) takes its partition and CPUs from its kind (``finetune``) and,
per base model, its GPUs, nodes and tasks from ``finetune.distributed``
(:func:`knowlab.core.train.launch_resources`) and its memory and time from ``finetune.resources``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from knowlab.core.train import launch_resources

#: the resources of a kind, as the executor plugin names them, in the order a job lists them
RESOURCE_KEYS = ("mem_mb", "runtime", "cpus_per_task", "gpu")
#: what fine-tuning takes from ``finetune.resources`` (per base model), never from its kind
FINETUNE_OWN = ("mem_mb", "runtime")


def kind_config(config: Mapping[str, Any], kind: str) -> Mapping[str, Any]:
    """The entry of ``kind`` in ``cluster.resources``.

    Raises:
        KeyError: the config has no such kind (naming the kinds it has).
    """
    kinds = config["cluster"]["resources"]
    if kind not in kinds:
        raise KeyError(f"no kind {kind!r} in cluster.resources (kinds: {', '.join(kinds)})")
    return kinds[kind]


def partition(config: Mapping[str, Any], partition_class: str) -> str | None:
    """The SLURM partition of ``partition_class`` (``cluster.partitions``); None: the profile's default."""
    return (config["cluster"].get("partitions") or {}).get(partition_class)


def job_resources(config: Mapping[str, Any], kind: str) -> dict[str, Any]:
    """The Snakemake resources of a job of ``kind``: ``slurm_partition`` (the partition of its class, where
    :func:`partition` names one), then its ``mem_mb``, ``runtime``, ``cpus_per_task`` and ``gpu``, those
    it gives."""
    spec = kind_config(config, kind)
    out: dict[str, Any] = {}
    name = partition(config, spec["partition"]) if spec.get("partition") else None
    if name is not None:
        out["slurm_partition"] = name
    out.update({key: spec[key] for key in RESOURCE_KEYS if spec.get(key) is not None})
    return out


def job_threads(config: Mapping[str, Any], kind: str) -> int:
    """The Snakemake ``threads`` of a job of ``kind``: its ``threads``, else the top-level ``threads``."""
    threads = kind_config(config, kind).get("threads")
    return int(config["threads"] if threads is None else threads)


def finetune_job_resources(config: Mapping[str, Any], view: Mapping[str, Any]) -> dict[str, Any]:
    """A fine-tuning job's resources: those of kind ``finetune`` (:func:`job_resources` of ``config``), its
    GPUs, nodes and tasks (``launch_resources`` of ``view``'s ``finetune.distributed``) and its memory and
    time (``view``'s ``finetune.resources``); ``view``: the config its run trains with (a base model's,
    :func:`knowlab.config.model_config`).

    Raises:
        ValueError: kind ``finetune`` sets ``mem_mb`` or ``runtime``, which are ``finetune.resources``'.
    """
    own = [key for key in FINETUNE_OWN if kind_config(config, "finetune").get(key) is not None]
    if own:
        raise ValueError(
            f"cluster.resources.finetune sets {', '.join(own)}: a fine-tuning job's memory and time are "
            "finetune.resources (per base model: its own resources in finetune.models)"
        )
    finetune = view["finetune"]
    return job_resources(config, "finetune") | launch_resources(finetune["distributed"]) | dict(finetune["resources"])

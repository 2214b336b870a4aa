"""What each job asks a cluster for (knowlab.cluster): a kind's resources from the config, the partition of its
class, fine-tuning's per base model; and, on the paper's DAG through the SLURM profile, the same request for
every job whether the workflow runs as it is or as a module of another (its rules renamed)."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

from knowlab import cluster
from knowlab.config import load_config, model_config
from knowlab.tooling.slurm import printed_jobs

ROOT = Path(__file__).resolve().parents[1]
PREFIX = "knowlab_"  # tests/conftest.py's MODULE_SNAKEFILE: use rule * from knowlab as knowlab_*


@pytest.fixture(scope="module")
def default():
    return load_config()


@pytest.fixture(scope="module")
def paper():
    return load_config(ROOT / "config" / "paper.yaml")


def test_a_kind_asks_for_its_resources_and_the_partition_of_its_class(default):
    assert cluster.job_resources(default, "long_generation") == {
        "slurm_partition": "gpu",
        "mem_mb": 64000,
        "runtime": 6480,
        "cpus_per_task": 4,
        "gpu": 1,
    }
    # class cpu names no partition by default: the profile's default-resources slurm_partition applies
    assert cluster.job_resources(default, "model_conversion") == {"mem_mb": 48000, "runtime": 30, "cpus_per_task": 2}
    site = load_config({"cluster": {"partitions": {"cpu": "short", "gpu": "a100"}}})
    assert cluster.job_resources(site, "model_conversion")["slurm_partition"] == "short"
    assert cluster.job_resources(site, "ranking")["slurm_partition"] == "a100"
    # a key the kind leaves out is the profile's default
    sparse = copy.deepcopy(default)
    sparse["cluster"]["resources"]["ranking"] = {"partition": "gpu", "runtime": 5}
    assert cluster.job_resources(sparse, "ranking") == {"slurm_partition": "gpu", "runtime": 5}
    with pytest.raises(KeyError, match="no kind 'gpu_job' in cluster.resources \\(kinds: api_generation, "):
        cluster.job_resources(default, "gpu_job")


def test_threads_are_the_kinds_else_the_configs(default, paper):
    assert {cluster.job_threads(default, kind) for kind in default["cluster"]["resources"]} == {default["threads"]}
    # the paper's: the fine-tuning processes 8 (its threads), an evaluation on a GPU 4
    assert cluster.job_threads(paper, "finetune") == paper["threads"] == 8
    assert cluster.job_threads(paper, "checkpoint_evaluation") == cluster.job_threads(paper, "ranking") == 4
    assert cluster.job_threads(paper, "api_generation") == 8


def test_finetune_asks_for_its_kind_its_processes_and_its_base_models_memory_and_time(paper):
    view = model_config(paper, "llama-3.1-8b")
    assert cluster.finetune_job_resources(paper, view) == {
        "slurm_partition": "gpu",
        "cpus_per_task": 8,
        "nodes": 1,
        "gpu": 8,
        "tasks_per_gpu": 1,
        "tasks": 8,
        "mpi": "srun",
        "mem_mb": 128000,
        "runtime": 120,
    }
    assert cluster.finetune_job_resources(paper, paper)["mem_mb"] == 48000  # finetune.resources
    wrong = copy.deepcopy(paper)
    wrong["cluster"]["resources"]["finetune"]["runtime"] = 30
    with pytest.raises(ValueError, match="cluster.resources.finetune sets runtime: a fine-tuning job's memory"):
        cluster.finetune_job_resources(wrong, wrong)


def _requests(printout: str, prefix: str = "") -> dict[tuple[str, str], tuple[int, dict[str, str]]]:
    """(rule without ``prefix``, first output) -> (threads, resources) of every job of a dry run."""
    jobs = {}
    for job in printed_jobs(printout):
        assert job.rule.startswith(prefix), job.rule
        key = (job.rule.removeprefix(prefix), job.output)
        assert key not in jobs, key
        jobs[key] = (job.threads, job.resources)
    return jobs


@pytest.mark.slow
def test_a_module_asks_slurm_for_what_the_plain_workflow_asks(paper_slurm_dry_run, paper_module_slurm_dry_run):
    """config/paper.yaml through workflow/profiles/slurm (tests/conftest.py): every job of the workflow used as
    a module (``use rule * from knowlab as knowlab_*``) asks for the same partition, GPUs, memory, time, CPUs,
    tasks and threads as the same job of the plain run: the profile keys nothing by rule name."""
    plain, module = _requests(paper_slurm_dry_run), _requests(paper_module_slurm_dry_run, PREFIX)
    assert len(plain) > 1900 and plain.keys() == module.keys()
    differ = [f"{key}: {plain[key]} != {module[key]}" for key in plain if plain[key] != module[key]]
    assert not differ, f"{len(differ)} jobs differ, e.g.\n" + "\n".join(differ[:5])
    # the requests are the kinds' (config/paper.yaml), not the profile's defaults
    threads, generate = next(v for (rule, _), v in module.items() if rule == "grounding_generate")
    assert threads == 4 and generate["runtime"] == "6480" and generate["slurm_partition"] == "gpu"
    threads, finetune = next(v for (rule, out), v in module.items() if rule == "finetune" and "llama-3.1-8b" in out)
    assert threads == 8 and finetune["gpu"] == "8" and finetune["mem_mb"] == "128000"

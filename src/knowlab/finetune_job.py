"""One fine-tuning job: one checkpoint interval of one run, in every process of a launch.

The workflow's ``finetune`` rule runs ``<launcher> -m knowlab.finetune_job SPEC`` (the launch
prefix from :func:`knowlab.core.train.launch_command`: the interpreter alone, torchrun, or
``srun`` with one task per GPU) with ``--threads N`` (CPU threads of the whole job, shared
among its processes on a node) and ``--tracking JSON`` (the ``tracking`` config block: where
the live training curves go, :mod:`knowlab.core.tracking`; by default the environment variable
``KNOWLAB_TRACKING``, which the workflow sets, so that where the curves go is no param of the
rule and changing it retrains nothing).  ``SPEC`` is a JSON object:

- ``recipe``: ``fictionalqa`` (:func:`knowlab.fictionalqa.training.finetune_run`) or
  ``sort_parametric`` (:func:`knowlab.sort.finetune.finetune_parametric_run`);
- ``run``, ``checkpoint`` (``step-N`` or ``epoch-E``), ``seed``;
- ``inputs`` and ``outputs``: the rule's named paths (``outputs``: ``checkpoint``,
  ``train_log``, ``manifest`` and, unless it is the run's last checkpoint, ``state``);
- ``finetune`` and ``parametric``: the config blocks the recipe reads.

Every rank trains; rank 0 alone writes the checkpoint, the segment's training log and the
provenance manifest (which hashes the inputs it read, not the resumable state).  Log records
go to stderr, which the rule sends to its log file; ranks above 0 report warnings only.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import shlex
import socket
import time
from collections.abc import Mapping
from dataclasses import fields
from typing import Any

from knowlab.core.io import write_json, write_parquet
from knowlab.core.provenance import build_manifest, configure_logging, skip_exit_collection
from knowlab.core.train import TrainSettings
from knowlab.fictionalqa.training import finetune_run
from knowlab.sort.finetune import finetune_parametric_run

RECIPES = {"fictionalqa": finetune_run, "sort_parametric": finetune_parametric_run}

log = logging.getLogger("knowlab")

#: keys of the ``finetune`` block a job trains by, the only ones its spec carries: the fields of
#: :class:`knowlab.core.train.TrainSettings`, and ``distributed`` (how many processes: the world size sets
#: the order of floating-point reductions, so a loss moves, within 4e-8 relative at world size 2).  A list,
#: not what is left over: a key added to the block retrains nothing until it is added to TrainSettings
#: (tests/test_finetune_job.py checks that every key of the schema's block is here or in RUN_LIST_KEYS)
TRAINING_KEYS = (*(field.name for field in fields(TrainSettings)), "distributed")
#: keys of the ``finetune`` block that say which runs, training seeds and base models exist (or are probed), or
#: what a job asks its scheduler for, not how one trains: not in the spec, so that adding a run, a seed or a
#: base model (each job gets its own model's settings, knowlab.config.model_config, and its own seed) retrains no other
RUN_LIST_KEYS = ("runs", "control", "seeds", "models", "probe_models", "resources")
# keys of the ``finetune`` block the SORT recipe sets itself per epoch (knowlab.sort.finetune):
# left out of its spec, so that changing FictionalQA's schedule retrains no SORT run
PARAMETRIC_SETS = ("fiction_rate", "fiction_warmup_steps", "max_steps", "checkpoint_every")
# keys of the ``sort.parametric`` block the SORT recipe reads (the others build its texts)
PARAMETRIC_READS = ("epochs",)

#: the environment variable holding the ``tracking`` block as JSON (the default of ``--tracking``)
TRACKING_ENV = "KNOWLAB_TRACKING"
#: the environment variables of the job's interpreter and of the checkout's ``src/``, which the
#: workflow's launch command reads (so that neither is part of the rule's params)
PYTHON_ENV, SRC_ENV = "KNOWLAB_PYTHON", "KNOWLAB_SRC"


def recipe_settings(
    recipe: str, finetune_cfg: Mapping[str, Any], parametric_cfg: Mapping[str, Any] | None, seed: int
) -> dict[str, Any]:
    """What a recipe's jobs read from the config, and only that: the ``finetune`` rule's param
    ``settings``, so that a job re-runs exactly when one of them changes (its ``spec`` param, which
    holds the paths too, is derived from the job's input and output, and Snakemake leaves derived
    params out of its check).  FictionalQA: the :data:`TRAINING_KEYS` of ``finetune_cfg``, in its
    order.  SORT: those without the keys the recipe sets per epoch, with
    ``parametric_cfg["finetune"]`` laid over them, and of ``parametric_cfg`` its ``epochs``."""
    finetune = {key: value for key, value in finetune_cfg.items() if key in TRAINING_KEYS}
    parametric = None
    if recipe == "sort_parametric":
        overrides = dict(parametric_cfg.get("finetune") or {})
        finetune = {key: value for key, value in finetune.items() if key not in PARAMETRIC_SETS} | overrides
        parametric = {key: parametric_cfg[key] for key in PARAMETRIC_READS}
    return {"finetune": finetune, "parametric": parametric, "seed": seed}


def job_spec(
    recipe: str,
    run: str,
    checkpoint: str,
    inputs: Mapping[str, Any],
    outputs: Mapping[str, Any],
    finetune_cfg: Mapping[str, Any],
    parametric_cfg: Mapping[str, Any] | None,
    seed: int,
    model: str | None = None,
) -> dict[str, Any]:
    """The job's spec (module docstring): paths as strings and the recipe's settings
    (:func:`recipe_settings`); ``model``: the base model's name in ``finetune.models`` (FictionalQA),
    which names the live curves beside the run."""
    return {
        "recipe": recipe,
        "run": run,
        **({"model": model} if model else {}),
        "checkpoint": checkpoint,
        "inputs": {key: str(path) for key, path in inputs.items()},
        "outputs": {key: str(path) for key, path in outputs.items()},
        **recipe_settings(recipe, finetune_cfg, parametric_cfg, seed),
    }


def job_command(launch: str, spec: Mapping[str, Any], threads: int) -> str:
    """The shell command of one job: ``launch`` (:func:`knowlab.core.train.launch_command`), this
    module, ``--threads`` and the spec as quoted JSON.  The workflow's ``finetune`` rule writes the
    same command from its shell template (``threads`` is Snakemake's, outside the rule's params);
    where the curves go comes from :data:`TRACKING_ENV`."""
    return f"{launch} -m knowlab.finetune_job --threads {threads} {shlex.quote(json.dumps(spec, sort_keys=True))}"


def run_job(spec: dict[str, Any], threads: int = 1, tracking: Mapping[str, Any] | None = None) -> None:
    """Train the segment ``spec`` names (module docstring); rank 0 writes its log and manifest.

    ``tracking`` is the ``tracking`` config block: the run's live curves go to
    ``<dir>/<recipe>/<run>``, or ``<dir>/<recipe>/<model>/<run>`` when the spec names its base model
    (:mod:`knowlab.core.tracking`); ``None``: none.

    Raises:
        KeyError: an unknown recipe.
        knowlab.core.train.TrainingDiverged: the loss became non-finite (nothing saved).
    """
    # deferred: torch loads only in fine-tuning jobs (the train env)
    import torch

    rank = int(os.environ.get("RANK", os.environ.get("SLURM_PROCID", "0")))
    # torchrun: the processes of a node share the job's threads; srun: each task has its own CPUs
    local_processes = int(os.environ.get("LOCAL_WORLD_SIZE", "1"))
    configure_logging(None)
    # every rank, before ranks above 0 go quiet: which process this is, as its launcher numbered it
    log.info(
        "rank %d of %s (SLURM_PROCID=%s) on %s",
        rank, os.environ.get("WORLD_SIZE", os.environ.get("SLURM_NTASKS", "1")),
        os.environ.get("SLURM_PROCID", "-"), socket.gethostname(),
    )  # fmt: skip
    if rank:
        log.setLevel(logging.WARNING)
    torch.set_num_threads(max(1, threads // local_processes))
    started = time.time()
    log.info(
        "fine-tuning %s to %s (%s recipe) on %s (pid %d)",
        spec["run"], spec["checkpoint"], spec["recipe"], socket.gethostname(), os.getpid(),
    )  # fmt: skip
    try:
        train_log = RECIPES[spec["recipe"]](
            spec["run"],
            spec["checkpoint"],
            spec["inputs"],
            spec["outputs"],
            spec["finetune"],
            spec["parametric"],
            spec["seed"],
            tracking=(
                {**tracking, "name": "/".join(filter(None, (spec["recipe"], spec.get("model"), spec["run"])))}
                if tracking
                else None
            ),
        )
    except Exception as err:
        log.error("rank %d failed: %s: %s", rank, type(err).__name__, err, exc_info=True)
        raise
    if rank:
        return
    outputs = spec["outputs"]
    write_parquet(outputs["train_log"], train_log)
    manifest = build_manifest(
        rule="finetune",
        inputs=[path for key, path in spec["inputs"].items() if key != "state"],
        outputs=[outputs["checkpoint"], outputs["train_log"]],
        config_slice={"finetune": spec["finetune"], "parametric": spec["parametric"], "recipe": spec["recipe"]},
        wildcards={"run": spec["run"], "checkpoint": spec["checkpoint"]},
        seed=spec["seed"],
    )
    write_json(outputs["manifest"], manifest)
    log.info("rule finetune %s %s finished in %.1f s", spec["run"], spec["checkpoint"], time.time() - started)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m knowlab.finetune_job", description=__doc__.split("\n\n")[0])
    parser.add_argument("--threads", type=int, default=1, help="CPU threads of the job (all its local processes)")
    parser.add_argument(
        "--tracking",
        type=json.loads,
        default=os.environ.get(TRACKING_ENV),
        help=f"the tracking config block as JSON (live training curves; default: ${TRACKING_ENV})",
    )
    parser.add_argument("spec", type=json.loads, help="the job as a JSON object (see the module docstring)")
    args = parser.parse_args(argv)
    run_job(args.spec, args.threads, args.tracking)
    skip_exit_collection()  # the outputs are written: exit without walking torch's objects


if __name__ == "__main__":
    main()

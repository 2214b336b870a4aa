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
- ``run``, ``checkpoint`` (``step-N`` or ``epoch-E``);
- ``inputs`` and ``outputs``: the rule's named paths (``outputs``: ``checkpoint``,
  ``train_log``, ``manifest`` and, unless it is the run's last checkpoint, ``state``);
- ``settings``: what the recipe trains by, the rule's param ``settings`` as it is
  (:meth:`FinetuneJobSettings.param_from_blocks`), from which the job builds its record
  (:meth:`FinetuneJobSettings.from_spec`).

:class:`FinetuneJobSettings` is the job's settings as one frozen record: the recipe, its
:class:`~knowlab.core.train.TrainSettings` (SORT: :class:`~knowlab.core.train.OptimizationSettings`
and the number of epochs, from which the recipe sets each epoch's schedule), the
:class:`~knowlab.core.train.DistributedSettings` and the training seed.  The rule builds it from the
param when the DAG is built, which checks every value, and the job from the same param in its spec.
The recipes take its parts, never a config mapping.

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
from dataclasses import dataclass, fields
from typing import Any

import pandas as pd

from knowlab.core.io import write_json, write_parquet
from knowlab.core.provenance import build_manifest, configure_logging, skip_exit_collection
from knowlab.core.settings import at_least
from knowlab.core.train import DistributedSettings, OptimizationSettings, TrainSettings
from knowlab.fictionalqa.training import finetune_run
from knowlab.sort.finetune import finetune_parametric_run

#: the fine-tuning recipes and the record each trains by: FictionalQA
#: (:func:`knowlab.fictionalqa.training.finetune_run`) a :class:`~knowlab.core.train.TrainSettings`, SORT
#: (:func:`knowlab.sort.finetune.finetune_parametric_run`) an :class:`~knowlab.core.train.OptimizationSettings`,
#: to which it adds each epoch's schedule; the record's fields are the ``finetune`` keys the recipe reads
RECIPES: dict[str, type[OptimizationSettings]] = {"fictionalqa": TrainSettings, "sort_parametric": OptimizationSettings}

log = logging.getLogger("knowlab")


@dataclass(frozen=True)
class FinetuneJobSettings:
    """What one fine-tuning job trains by, and only that.  Its serialised form is the param of
    :meth:`param_from_blocks`: the fine-tuning rules' param ``settings`` (so that a job re-runs exactly when
    it changes) and, as it is, the ``settings`` of the job's spec, from which the job builds the record
    (:meth:`from_spec`); the rule builds it too, which checks the values when the DAG is built.

    **Which keys.**  A key of the ``finetune`` block is in the param exactly when it is a field of the
    recipe's record (:data:`RECIPES`; and ``distributed``, a field of this one): a key added to
    :class:`~knowlab.core.train.OptimizationSettings` or :class:`~knowlab.core.train.TrainSettings` (and to
    the schema) reaches the param and the job, and retrains every run whose value changes; a key of the
    block that no record has (which runs, seeds and base models exist, what a job asks its scheduler for)
    is in no param, and changing it retrains nothing.

    **Key order.**  Snakemake compares the ``repr`` of a param, and a dict's ``repr`` has an order: the
    param keeps the blocks' own (``snakemake --configfile X`` puts the keys ``X`` names first), with their
    values as the blocks hold them, as the workflow wrote it before this record: a finished run's param
    stays byte for byte the same.  So the param is taken from the blocks, never written back from a
    record, which has no order.

    Not a :class:`~knowlab.core.settings.StepSettings`: it is built per job from its base model's view of the
    config (:func:`knowlab.config.model_config`) and its recipe, not from the config alone.

    Raises:
        ValueError: an unknown recipe, epochs below 1 or given to the FictionalQA recipe.
        TypeError: ``train`` not of the recipe's type, or a seed that is no int.
    """

    recipe: str
    """A key of :data:`RECIPES`: ``fictionalqa`` or ``sort_parametric``."""
    train: OptimizationSettings
    """FictionalQA: the :class:`~knowlab.core.train.TrainSettings` of ``finetune``.  SORT: the
    :class:`~knowlab.core.train.OptimizationSettings` of ``finetune`` with ``sort.parametric.finetune``
    laid over it; the recipe sets the schedule (the fields ``TrainSettings`` adds) per epoch."""
    distributed: DistributedSettings
    """``finetune.distributed``: how many processes train the run (the world size sets the order of
    floating-point reductions, so a loss moves, within 4e-8 relative at world size 2)."""
    seed: int
    """The training seed: a FictionalQA run's own (:func:`knowlab.core.checkpoints.run_seed`), the
    project's ``seed`` for SORT."""
    epochs: int | None = None
    """SORT: ``sort.parametric.epochs``, the run's length in epochs (one checkpoint each); FictionalQA: None."""

    def __post_init__(self) -> None:
        if self.recipe not in RECIPES:
            raise ValueError(f"unknown fine-tuning recipe {self.recipe!r}: expected one of {', '.join(RECIPES)}")
        kind = RECIPES[self.recipe]
        if type(self.train) is not kind:
            raise TypeError(f"the {self.recipe} recipe trains by {kind.__name__}, got {type(self.train).__name__}")
        if self.recipe == "fictionalqa":
            if self.epochs is not None:
                raise ValueError(f"the fictionalqa recipe has no epochs (sort.parametric.epochs), got {self.epochs!r}")
        else:
            at_least(self.epochs, 1, "sort.parametric.epochs")
        if isinstance(self.seed, bool) or not isinstance(self.seed, int):
            raise TypeError(f"the training seed must be an int, got {self.seed!r}")

    @classmethod
    def param_from_blocks(
        cls, recipe: str, finetune: Mapping[str, Any], parametric: Mapping[str, Any] | None, seed: int
    ) -> dict[str, Any]:
        """The settings of a job of ``recipe`` from the config blocks, serialised: the rule's param
        ``settings`` and the spec's ``settings``, checked by building the record (:meth:`from_param`).

        ``{"finetune": F, "parametric": P, "seed": seed}``: ``F``, the keys of ``finetune`` (the job's base
        model's block, :func:`knowlab.config.model_config`) that are fields of the recipe's record, and
        ``distributed``, in the block's order (SORT: with ``parametric["finetune"]`` laid over them);
        ``P``, ``{"epochs": E}`` of ``parametric`` (``sort.parametric``; SORT) or None (FictionalQA reads
        nothing of it).  Values as the blocks hold them: builtins, which Snakemake records.

        Raises:
            ValueError: an unknown recipe; SORT without ``parametric``; a value out of its range.
            TypeError: ``finetune`` lacks a field; ``parametric["finetune"]`` has a key that is no field of
                :class:`~knowlab.core.train.OptimizationSettings`.
            KeyError: SORT without ``parametric["epochs"]``.
        """
        if recipe not in RECIPES:
            raise ValueError(f"unknown fine-tuning recipe {recipe!r}: expected one of {', '.join(RECIPES)}")
        reads = {field.name for field in fields(RECIPES[recipe])} | {"distributed"}
        block = {key: value for key, value in finetune.items() if key in reads}
        if recipe == "sort_parametric":
            if parametric is None:
                raise ValueError("the sort_parametric recipe reads the sort.parametric block, got None")
            block |= dict(parametric.get("finetune") or {})
            parametric = {"epochs": parametric["epochs"]}
        else:
            parametric = None
        param = {"finetune": block, "parametric": parametric, "seed": seed}
        cls.from_param(recipe, param)
        return param

    @classmethod
    def from_blocks(
        cls, recipe: str, finetune: Mapping[str, Any], parametric: Mapping[str, Any] | None, seed: int
    ) -> FinetuneJobSettings:
        """The record of :meth:`param_from_blocks`'s param (raising as it does)."""
        return cls.from_param(recipe, cls.param_from_blocks(recipe, finetune, parametric, seed))

    @classmethod
    def from_param(cls, recipe: str, param: Mapping[str, Any]) -> FinetuneJobSettings:
        """The record of a job of ``recipe`` from its param (:meth:`param_from_blocks`, or its JSON): ``train``
        the recipe's record of ``finetune`` less ``distributed`` (absent: one process), nested records
        rebuilt by their field types.

        Raises:
            TypeError: ``param`` has keys other than ``finetune``, ``parametric`` and ``seed``; ``finetune``
                has a key that is no field of the recipe's record or lacks one; ``parametric`` has keys other
                than ``epochs``.
            ValueError: an unknown recipe; a value out of its range.
        """
        if set(param) != {"finetune", "parametric", "seed"}:
            raise TypeError(
                f"a fine-tuning job's settings have keys finetune, parametric and seed, got {sorted(param)}"
            )
        if recipe not in RECIPES:
            raise ValueError(f"unknown fine-tuning recipe {recipe!r}: expected one of {', '.join(RECIPES)}")
        finetune, parametric = dict(param["finetune"]), param["parametric"]
        if parametric is not None and set(parametric) != {"epochs"}:
            raise TypeError(f"the settings' parametric has keys {sorted(parametric)}, not ['epochs']")
        distributed = DistributedSettings.from_param(finetune.pop("distributed", {}))
        return cls(
            recipe,
            RECIPES[recipe].from_param(finetune),
            distributed,
            param["seed"],
            epochs=None if parametric is None else parametric["epochs"],
        )

    @classmethod
    def from_spec(cls, spec: Mapping[str, Any]) -> FinetuneJobSettings:
        """The settings of the job ``spec`` (module docstring; :func:`job_spec`).

        Raises:
            KeyError: the spec lacks ``recipe`` or ``settings``.
            TypeError, ValueError: as :meth:`from_param`.
        """
        return cls.from_param(spec["recipe"], spec["settings"])

    def run_recipe(
        self,
        run: str,
        checkpoint: str,
        inputs: Mapping[str, str | os.PathLike],
        outputs: Mapping[str, str | os.PathLike],
        tracking: Mapping[str, Any] | None = None,
    ) -> pd.DataFrame:
        """Train one checkpoint interval of ``run`` by the recipe, with these settings; every rank calls it.

        Returns:
            The interval's training log, one row per optimizer step (the recipe's).
        """
        if self.recipe == "fictionalqa":
            return finetune_run(run, checkpoint, inputs, outputs, self.train, self.seed, tracking=tracking)
        return finetune_parametric_run(
            run, checkpoint, inputs, outputs, self.train, self.epochs, self.seed, tracking=tracking
        )


#: the environment variable holding the ``tracking`` block as JSON (the default of ``--tracking``)
TRACKING_ENV = "KNOWLAB_TRACKING"
#: the environment variables of the job's interpreter and of the checkout's ``src/``, which the
#: workflow's launch command reads (so that neither is part of the rule's params)
PYTHON_ENV, SRC_ENV = "KNOWLAB_PYTHON", "KNOWLAB_SRC"


def job_spec(
    recipe: str,
    run: str,
    checkpoint: str,
    inputs: Mapping[str, Any],
    outputs: Mapping[str, Any],
    settings: Mapping[str, Any],
    model: str | None = None,
) -> dict[str, Any]:
    """The job's spec (module docstring): paths as strings and ``settings``, the rule's param
    (:meth:`FinetuneJobSettings.param_from_blocks`), as it is; ``model``: the base model's name in
    ``finetune.models`` (FictionalQA), which names the live curves beside the run."""
    return {
        "recipe": recipe,
        "run": run,
        **({"model": model} if model else {}),
        "checkpoint": checkpoint,
        "inputs": {key: str(path) for key, path in inputs.items()},
        "outputs": {key: str(path) for key, path in outputs.items()},
        "settings": settings,
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
        ValueError: an unknown recipe (:meth:`FinetuneJobSettings.from_spec`).
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
        job = FinetuneJobSettings.from_spec(spec)
        train_log = job.run_recipe(
            spec["run"],
            spec["checkpoint"],
            spec["inputs"],
            spec["outputs"],
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
        # the settings as the spec gives them (the rule's param, in the JSON's sorted key order)
        config_slice={
            "finetune": spec["settings"]["finetune"],
            "parametric": spec["settings"]["parametric"],
            "recipe": spec["recipe"],
        },
        wildcards={"run": spec["run"], "checkpoint": spec["checkpoint"]},
        seed=job.seed,
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

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
- ``finetune``, ``parametric`` and ``seed``: what the recipe trains by, as
  :meth:`FinetuneJobSettings.param` writes it (the rule's param ``settings``), read back by
  :meth:`FinetuneJobSettings.from_spec`.

:class:`FinetuneJobSettings` is the job's settings as one frozen record, built from the config
blocks by :meth:`FinetuneJobSettings.from_blocks`: the recipe, its
:class:`~knowlab.core.train.TrainSettings` (SORT: :class:`~knowlab.core.train.OptimizationSettings`
and the number of epochs, from which the recipe sets each epoch's schedule), the
:class:`~knowlab.core.train.DistributedSettings` and the training seed.  The recipes take its parts,
never a config mapping.

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
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from knowlab.core.io import write_json, write_parquet
from knowlab.core.provenance import build_manifest, configure_logging, skip_exit_collection
from knowlab.core.settings import at_least
from knowlab.core.train import SCHEDULE_KEYS, DistributedSettings, OptimizationSettings, TrainSettings
from knowlab.fictionalqa.training import finetune_run
from knowlab.sort.finetune import finetune_parametric_run

#: the fine-tuning recipes: :func:`knowlab.fictionalqa.training.finetune_run` and
#: :func:`knowlab.sort.finetune.finetune_parametric_run`
RECIPES = ("fictionalqa", "sort_parametric")

log = logging.getLogger("knowlab")

#: keys of the ``finetune`` block a job trains by, the only ones its param and spec carry: the fields of
#: :class:`knowlab.core.train.TrainSettings`, and ``distributed`` (how many processes: the world size sets
#: the order of floating-point reductions, so a loss moves, within 4e-8 relative at world size 2).  Listed, in
#: the schema's order (the param's, where a record has no :attr:`~FinetuneJobSettings.key_order`): a key added
#: to the block has no effect until it is a field of a record and listed here, and
#: :meth:`FinetuneJobSettings.from_blocks` refuses a key that is neither here nor in :data:`RUN_LIST_KEYS`
#: (tests/test_finetune_job.py checks that every key of the schema's block is in one of them)
TRAINING_KEYS = (
    "max_steps",
    "checkpoint_every",
    "fiction_rate",
    "fiction_warmup_steps",
    "micro_batch_size",
    "global_batch_size",
    "seq_len",
    "lr",
    "min_lr",
    "lr_warmup_steps",
    "weight_decay",
    "gradient_clipping",
    "precision",
    "zero_stage",
    "offload",
    "gradient_checkpointing",
    "distributed",
    "lora",
)
#: keys of the ``finetune`` block that say which runs, training seeds and base models exist (or are probed), or
#: what a job asks its scheduler for, not how one trains: not in the spec, so that adding a run, a seed or a
#: base model (each job gets its own model's settings, knowlab.config.model_config, and its own seed) retrains no other
RUN_LIST_KEYS = ("runs", "control", "seeds", "models", "probe_models", "resources")
#: keys of the ``sort.parametric`` block the SORT recipe reads besides its ``finetune`` overrides (the others
#: build its texts)
PARAMETRIC_READS = ("epochs",)


def block_order(block: Mapping[str, Any]) -> tuple[tuple[str, tuple], ...]:
    """The order of ``block``'s keys, and of each nested block's: ``((key, order of its value or ()), ...)``."""
    return tuple((key, block_order(value) if isinstance(value, Mapping) else ()) for key, value in block.items())


def in_order(values: dict[str, Any], order: tuple[tuple[str, tuple], ...]) -> dict[str, Any]:
    """``values`` (nested dicts too) with the keys ``order`` (:func:`block_order`) names first, in its order,
    then the others in their own."""
    nested, rank = dict(order), {key: at for at, (key, _) in enumerate(order)}
    keys = sorted(values, key=lambda key: rank.get(key, len(rank)))  # stable: the others keep their order
    return {
        key: in_order(values[key], nested.get(key, ())) if isinstance(values[key], dict) else values[key]
        for key in keys
    }


@dataclass(frozen=True)
class FinetuneJobSettings:
    """What one fine-tuning job trains by, and only that: the rule's param ``settings`` (:meth:`param`), so
    that a job re-runs exactly when one of them changes (its ``spec`` param, which holds them and the paths,
    is derived from the job's input and output, and Snakemake leaves derived params out of its check).

    Not a :class:`~knowlab.core.settings.StepSettings`: it is built per job from its base model's view of the
    config (:func:`knowlab.config.model_config`) and its recipe, not from the config alone.

    **Key order.**  Snakemake compares the ``repr`` of a param, and a dict's ``repr`` has an order: the order
    of the config block, which is not always the schema's (``snakemake --configfile X`` puts the keys ``X``
    names first, then the rest of ``config/config.yaml``).  So the record keeps the order of the block it was
    built from (:attr:`key_order`, which is no setting: records that differ only in it are equal) and
    :meth:`param` writes the keys in it, as the workflow did before this record: a finished run's param
    stays byte for byte the same, and no run retrains.

    Raises:
        ValueError: an unknown recipe, epochs below 1 or given to the FictionalQA recipe.
        TypeError: ``train`` not of the recipe's type, or a seed that is no int.
    """

    recipe: str
    """A key of :data:`RECIPES`: ``fictionalqa`` or ``sort_parametric``."""
    train: OptimizationSettings
    """FictionalQA: the :class:`~knowlab.core.train.TrainSettings` of ``finetune``.  SORT: the
    :class:`~knowlab.core.train.OptimizationSettings` of ``finetune`` with ``sort.parametric.finetune``
    laid over it; the recipe sets the schedule (:data:`~knowlab.core.train.SCHEDULE_KEYS`) per epoch."""
    distributed: DistributedSettings
    """``finetune.distributed``: how many processes train the run."""
    seed: int
    """The training seed: a FictionalQA run's own (:func:`knowlab.core.checkpoints.run_seed`), the
    project's ``seed`` for SORT."""
    epochs: int | None = None
    """SORT: ``sort.parametric.epochs``, the run's length in epochs (one checkpoint each); FictionalQA: None."""
    key_order: tuple[tuple[str, tuple], ...] = field(default=(), compare=False, repr=False)
    """The order of the ``finetune`` block's keys, nested blocks' included (:func:`block_order`), in which
    :meth:`param` writes them; keys it does not name follow in :data:`TRAINING_KEYS` order."""

    def __post_init__(self) -> None:
        if self.recipe not in RECIPES:
            raise ValueError(f"unknown fine-tuning recipe {self.recipe!r}: expected one of {', '.join(RECIPES)}")
        if self.recipe == "fictionalqa":
            if not isinstance(self.train, TrainSettings):
                raise TypeError(f"the fictionalqa recipe trains by a TrainSettings, got {type(self.train).__name__}")
            if self.epochs is not None:
                raise ValueError(f"the fictionalqa recipe has no epochs (sort.parametric.epochs), got {self.epochs!r}")
        else:
            if type(self.train) is not OptimizationSettings:
                raise TypeError(
                    "the sort_parametric recipe sets its schedule per epoch: it trains by an OptimizationSettings, "
                    f"got {type(self.train).__name__}"
                )
            at_least(self.epochs, 1, "sort.parametric.epochs")
        if isinstance(self.seed, bool) or not isinstance(self.seed, int):
            raise TypeError(f"the training seed must be an int, got {self.seed!r}")

    @classmethod
    def from_blocks(
        cls, recipe: str, finetune: Mapping[str, Any], parametric: Mapping[str, Any] | None, seed: int
    ) -> FinetuneJobSettings:
        """The settings of a job of ``recipe`` from the config blocks: ``finetune`` (the job's base model's,
        :func:`knowlab.config.model_config`; its :data:`RUN_LIST_KEYS` are not read; ``distributed``, when
        absent, is the schema's default, one process), ``parametric`` (``sort.parametric``: SORT reads its
        ``epochs`` and lays its ``finetune`` over the block less :data:`~knowlab.core.train.SCHEDULE_KEYS`;
        FictionalQA reads nothing of it) and the training ``seed``.

        Raises:
            TypeError: ``finetune`` has a key that is neither in :data:`TRAINING_KEYS` nor in
                :data:`RUN_LIST_KEYS`, or lacks a field (:meth:`~knowlab.core.train.OptimizationSettings.from_block`).
            ValueError: an unknown recipe; a value out of its range (the records' checks).
            KeyError: SORT without ``parametric["epochs"]``.
        """
        unknown = set(finetune) - set(TRAINING_KEYS) - set(RUN_LIST_KEYS)
        if unknown:
            raise TypeError(
                f"finetune has key(s) {sorted(unknown)} that are neither training keys nor run-list keys "
                "(knowlab.finetune_job.TRAINING_KEYS, RUN_LIST_KEYS): list each in one of them first"
            )
        training = {key: value for key, value in finetune.items() if key in TRAINING_KEYS and key != "distributed"}
        distributed = DistributedSettings.from_param(finetune.get("distributed") or {})
        if recipe == "sort_parametric":
            if parametric is None:
                raise ValueError("the sort_parametric recipe reads the sort.parametric block, got None")
            overrides = dict(parametric.get("finetune") or {})
            block = {key: value for key, value in training.items() if key not in SCHEDULE_KEYS} | overrides
            train: OptimizationSettings = OptimizationSettings.from_block(block)
            epochs = parametric["epochs"]
        elif recipe == "fictionalqa":
            train, epochs = TrainSettings.from_block(training), None
        else:
            raise ValueError(f"unknown fine-tuning recipe {recipe!r}: expected one of {', '.join(RECIPES)}")
        order = block_order({key: value for key, value in finetune.items() if key in TRAINING_KEYS})
        return cls(recipe, train, distributed, seed, epochs=epochs, key_order=order)

    def param(self) -> dict[str, Any]:
        """The rule's param ``settings`` and the spec's ``finetune``, ``parametric`` and ``seed``: ``finetune``
        holds the :data:`TRAINING_KEYS` the recipe trains by (SORT: less the schedule) in :attr:`key_order`,
        nested records as dicts and ``lora.target_modules`` as a list, as the config gives them;
        ``parametric`` is ``{"epochs": E}`` (SORT) or None; builtins only, so that Snakemake records it."""
        values = self.train.param() | {"distributed": self.distributed.param()}
        values["lora"]["target_modules"] = list(values["lora"]["target_modules"])
        unlisted = set(values) - set(TRAINING_KEYS)
        if unlisted:  # a field added to a record but not to TRAINING_KEYS: it would be left out of the param
            raise TypeError(f"{sorted(unlisted)} are fields of the training settings but not in TRAINING_KEYS")
        return {
            "finetune": in_order({key: values[key] for key in TRAINING_KEYS if key in values}, self.key_order),
            "parametric": None if self.epochs is None else {"epochs": self.epochs},
            "seed": self.seed,
        }

    @classmethod
    def from_param(cls, recipe: str, param: Mapping[str, Any]) -> FinetuneJobSettings:
        """The settings back from :meth:`param`'s dict (or its JSON) for a job of ``recipe``, keeping its key
        order: ``from_param(recipe, p).param() == p``, order included.

        Raises:
            TypeError: ``param`` has a key :meth:`param` does not write, or lacks one.
            ValueError: an unknown recipe; a value out of its range.
        """
        if set(param) != {"finetune", "parametric", "seed"}:
            raise TypeError(
                f"a fine-tuning job's settings have keys finetune, parametric and seed, got {sorted(param)}"
            )
        if recipe not in RECIPES:
            raise ValueError(f"unknown fine-tuning recipe {recipe!r}: expected one of {', '.join(RECIPES)}")
        finetune, parametric = param["finetune"], param["parametric"]
        unknown = set(finetune) - set(TRAINING_KEYS)
        if unknown:
            raise TypeError(f"the settings' finetune has key(s) {sorted(unknown)} not in TRAINING_KEYS")
        if "distributed" not in finetune:
            raise TypeError("the settings' finetune lacks distributed")
        if parametric is not None and set(parametric) != set(PARAMETRIC_READS):
            raise TypeError(f"the settings' parametric has keys {sorted(parametric)}, not {list(PARAMETRIC_READS)}")
        block = {key: value for key, value in finetune.items() if key != "distributed"}
        kind = TrainSettings if recipe == "fictionalqa" else OptimizationSettings
        return cls(
            recipe,
            kind.from_block(block),
            DistributedSettings.from_param(finetune["distributed"]),
            param["seed"],
            epochs=None if parametric is None else parametric["epochs"],
            key_order=block_order(finetune),
        )

    @classmethod
    def from_spec(cls, spec: Mapping[str, Any]) -> FinetuneJobSettings:
        """The settings of the job ``spec`` (module docstring; :func:`job_spec`).

        Raises:
            KeyError: the spec lacks ``recipe``, ``finetune``, ``parametric`` or ``seed``.
            TypeError, ValueError: as :meth:`from_param`.
        """
        return cls.from_param(spec["recipe"], {key: spec[key] for key in ("finetune", "parametric", "seed")})

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
    finetune_cfg: Mapping[str, Any],
    parametric_cfg: Mapping[str, Any] | None,
    seed: int,
    model: str | None = None,
) -> dict[str, Any]:
    """The job's spec (module docstring): paths as strings and the settings of
    :meth:`FinetuneJobSettings.from_blocks` as :meth:`FinetuneJobSettings.param` writes them; ``model``: the
    base model's name in ``finetune.models`` (FictionalQA), which names the live curves beside the run.

    Raises:
        TypeError, ValueError: as :meth:`FinetuneJobSettings.from_blocks`.
    """
    return {
        "recipe": recipe,
        "run": run,
        **({"model": model} if model else {}),
        "checkpoint": checkpoint,
        "inputs": {key: str(path) for key, path in inputs.items()},
        "outputs": {key: str(path) for key, path in outputs.items()},
        **FinetuneJobSettings.from_blocks(recipe, finetune_cfg, parametric_cfg, seed).param(),
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
        # the settings as the spec gives them (job.param(), in the JSON's sorted key order)
        config_slice={"finetune": spec["finetune"], "parametric": spec["parametric"], "recipe": spec["recipe"]},
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

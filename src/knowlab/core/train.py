"""Fine-tuning through DeepSpeed: one process per GPU (NCCL) or per CPU worker (gloo), one code path.

Reads top to bottom like a nanoGPT/litgpt script: set up the process group, load the
base model (optionally wrap it in LoRA adapters with peft), tokenize fiction documents
and webtext paragraphs into one sequence each, let the
:class:`~knowlab.core.mixture.MixtureSampler` pick every sequence of every optimizer
step, and train with AdamW, a cosine schedule from ``lr`` to ``min_lr`` (FictionalQA
paper, App. D.1: 5e-5 to 5e-6) after ``lr_warmup_steps``, gradient clipping, and bf16
where the accelerator supports it.

**Scale.** Every rank trains on its share of the same global list of sequences: the
sampler draws ``global_batch_size`` sequences per optimizer step whatever the world
size, rank ``r`` takes the ``r``-th slice of ``global_batch_size / world_size`` and
accumulates it in micro-batches of ``micro_batch_size``.  DeepSpeed averages the
gradients over micro-batches and ranks, so a step's update (and its logged loss, the
mean over every micro-batch of the step) is the same at any world size, up to the
order of floating-point sums.  ZeRO stages 0-3 shard optimizer state, gradients and
(stage 3) parameters across ranks, optionally offloaded to CPU memory; gradient
checkpointing trades compute for activation memory.  Stage 3 loads the model
partitioned (transformers' ``HfDeepSpeedConfig``) and gathers it on rank 0 to save.

**Segments.** A run is trained as a chain of segments, one per checkpoint interval
(:func:`train_segment`): each starts from the base model or from the full training
state the previous one saved (weights, optimizer, scheduler, sampler position, every
rank's RNG) and ends by saving its checkpoint, which
``AutoModelForCausalLM.from_pretrained`` loads (full fine-tuning: safetensors; LoRA:
the PEFT adapter, whose base is named as the workflow names it, relative to its working
directory), with its own metadata in :data:`CHECKPOINT_META`, and, unless it is the run's
last, its state.  Every step's record goes to the run's training log and, live, to
TensorBoard or W&B (:mod:`knowlab.core.tracking`).  A chain gives the same
weights and log, byte for byte, as training the run in one go; a killed job loses at
most one interval.  Step 0 is the base model itself, never saved into a run.

**Divergence.** A non-finite loss stops the run with :class:`TrainingDiverged` naming
the run and the step; nothing of the segment is saved.

On CPU, DeepSpeed needs ``DS_ACCELERATOR=cpu`` and the launcher variables
RANK/WORLD_SIZE/LOCAL_RANK/MASTER_ADDR/MASTER_PORT; :func:`init_distributed` reads
them from torchrun, from ``srun`` (SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID), or sets
them for a single process with a free port.  The first CPU run compiles DeepSpeed's
small ``deepspeed_shm_comm`` C++ op (about a minute), cached under
``~/.cache/torch_extensions`` (``TORCH_EXTENSIONS_DIR`` overrides).
"""

from __future__ import annotations

import logging
import math
import os
import shutil
import socket
import time
from collections.abc import Mapping
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, Self

import pandas as pd

from knowlab.core.checkpoints import checkpoint_dir, checkpoint_steps
from knowlab.core.device import place
from knowlab.core.io import partial_prefix, read_json, write_json
from knowlab.core.mixture import MixtureSampler
from knowlab.core.models import check_model_dir
from knowlab.core.provenance import portable
from knowlab.core.settings import StepSettings, as_tuple, at_least
from knowlab.core.tracking import open_tracker

log = logging.getLogger(__name__)

STATE_TAG = "state"  # the DeepSpeed checkpoint tag inside a state folder
#: a checkpoint's own metadata (run, step, seed, samples seen per source, base model), beside
#: the files transformers and peft read; not Trainer's ``trainer_state.json``, whose format it lacks
CHECKPOINT_META = "knowlab_checkpoint.json"


class TrainingDiverged(FloatingPointError):
    """The training loss became NaN or infinite; the message names the run and the step."""


PRECISIONS = ("auto", "bf16", "fp32")
LAUNCHERS = ("torchrun", "srun")
ZERO_STAGES = (0, 1, 2, 3)


@dataclass(frozen=True)
class OffloadSettings(StepSettings):
    """ZeRO-Offload to CPU memory (config ``finetune.offload``)."""

    optimizer: bool
    """Keep the optimizer state in CPU memory and step it there (DeepSpeed's CPU Adam; ZeRO stage >= 1)."""
    parameters: bool
    """Keep the parameters in CPU memory (ZeRO stage 3 only)."""


@dataclass(frozen=True)
class LoraSettings(StepSettings):
    """LoRA adapters through peft (config ``finetune.lora``); the other fields matter only when ``enabled``.

    Their defaults are the schema's, for blocks that name ``enabled`` alone."""

    enabled: bool
    """Train LoRA adapters on the frozen base model (checkpoints are PEFT adapters) instead of all weights."""
    r: int = 16
    """Rank of each adapter's update matrices."""
    alpha: float = 32
    """LoRA scaling numerator: the update is scaled by ``alpha / r``."""
    dropout: float = 0.0
    """Dropout probability on an adapter's input, in [0, 1] (its draws come from the run's RNG)."""
    target_modules: tuple[str, ...] = ("q_proj", "k_proj", "v_proj", "o_proj")
    """Names of the modules wrapped in adapters (a YAML or JSON list, here a tuple)."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "target_modules", as_tuple(self.target_modules))
        if self.r < 1:
            raise ValueError(f"finetune.lora.r must be at least 1, got {self.r}")
        if not 0 <= self.dropout <= 1:
            raise ValueError(f"finetune.lora.dropout must be in [0, 1], got {self.dropout}")


@dataclass(frozen=True)
class OptimizationSettings(StepSettings):
    """How every optimizer step of a run trains: the ``finetune`` block's keys that a training reads, less
    the run's schedule (the fields :class:`TrainSettings` adds).  The SORT recipe's settings
    (``finetune`` with ``sort.parametric.finetune`` laid over it), to which it adds the schedule of each
    epoch (:meth:`schedule`).

    Values are kept as the config gives them (numbers are not converted), so that the optimizer,
    schedule, sampler and adapter config see exactly what they saw from the block."""

    micro_batch_size: int
    """Sequences per forward pass per process."""
    global_batch_size: int
    """Sequences per optimizer step, all processes together (paper: 128); a multiple of
    ``micro_batch_size`` x processes (:func:`accumulation_steps`)."""
    seq_len: int
    """Tokens per training sequence: one document or paragraph each, cut (paper: 2048)."""
    lr: float
    """Peak learning rate, after the warmup; the cosine schedule decays it to ``min_lr`` (paper: 5e-5)."""
    min_lr: float
    """Learning rate at ``max_steps``, the end of the cosine schedule (paper: 5e-6)."""
    lr_warmup_steps: int
    """Optimizer steps of linear learning-rate warmup from 0 to ``lr`` (paper: 0)."""
    weight_decay: float
    """AdamW's decoupled weight decay."""
    gradient_clipping: float
    """Maximum global gradient norm (DeepSpeed's ``gradient_clipping``; 0 clips nothing)."""
    precision: str
    """``auto`` (bf16 where the GPU supports it, else fp32), ``bf16`` or ``fp32`` (:func:`use_bf16`)."""
    zero_stage: int
    """DeepSpeed ZeRO stage: 0 (data parallel), 1 (optimizer state sharded), 2 (+ gradients),
    3 (+ parameters)."""
    offload: OffloadSettings
    """ZeRO-Offload of the optimizer state and the parameters to CPU memory."""
    gradient_checkpointing: bool
    """Recompute activations in the backward pass (less memory, about a third more compute)."""
    lora: LoraSettings
    """LoRA adapters instead of full fine-tuning."""

    def __post_init__(self) -> None:
        minima = {
            "micro_batch_size": 1,
            "global_batch_size": 1,
            "seq_len": 8,
            "min_lr": 0,
            "lr_warmup_steps": 0,
            "weight_decay": 0,
            "gradient_clipping": 0,
        }
        for key, least in minima.items():
            if getattr(self, key) < least:
                raise ValueError(f"finetune.{key} must be at least {least}, got {getattr(self, key)}")
        if not self.lr > 0:
            raise ValueError(f"finetune.lr must be above 0, got {self.lr}")
        if self.global_batch_size % self.micro_batch_size:
            raise ValueError(
                f"finetune.global_batch_size ({self.global_batch_size}) must be a multiple of "
                f"finetune.micro_batch_size ({self.micro_batch_size})"
            )
        if self.precision not in PRECISIONS:
            raise ValueError(f"finetune.precision must be one of {', '.join(PRECISIONS)}, got {self.precision!r}")
        if self.zero_stage not in ZERO_STAGES:
            raise ValueError(f"finetune.zero_stage must be 0, 1, 2 or 3, got {self.zero_stage!r}")
        if self.offload.parameters and self.zero_stage != 3:
            raise ValueError(
                "finetune.offload.parameters needs finetune.zero_stage: 3 (only stage 3 partitions parameters)"
            )
        if self.offload.optimizer and self.zero_stage == 0:
            raise ValueError("finetune.offload.optimizer needs finetune.zero_stage 1, 2 or 3 (ZeRO-Offload)")

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> Self:
        """The record of the validated config's ``finetune`` block (:meth:`from_block`)."""
        return cls.from_block(config["finetune"])

    @classmethod
    def from_block(cls, block: Mapping[str, Any]) -> Self:
        """The record of a ``finetune`` block as the config holds it: its keys that are fields of the record.
        The others are not read by it: which runs, seeds and base models exist, how the job's processes start,
        what it asks its scheduler for and, for an :class:`OptimizationSettings`, the run's schedule (a key the
        schema does not name never reaches a validated config; :meth:`from_param` refuses any that is no field).

        Raises:
            TypeError: the block lacks a field.
            ValueError: a value out of its range.
        """
        names = {field.name for field in fields(cls)}
        return cls.from_param({key: value for key, value in block.items() if key in names})

    def schedule(
        self, *, max_steps: int, checkpoint_every: int, fiction_rate: float, fiction_warmup_steps: int
    ) -> TrainSettings:
        """These settings with a run's schedule: the :class:`TrainSettings` a run trains by.

        Raises:
            ValueError: a schedule value out of its range (:class:`TrainSettings`).
        """
        values = {field.name: getattr(self, field.name) for field in fields(OptimizationSettings)}
        return TrainSettings(
            **values,
            max_steps=max_steps,
            checkpoint_every=checkpoint_every,
            fiction_rate=fiction_rate,
            fiction_warmup_steps=fiction_warmup_steps,
        )


@dataclass(frozen=True)
class TrainSettings(OptimizationSettings):
    """What a fine-tuning run trains by: :class:`OptimizationSettings` and the run's schedule (the
    fields below).  FictionalQA's runs: the keys of config ``finetune`` that are its fields;
    the SORT runs: ``sort.parametric.finetune`` laid over it and the schedule set per epoch by
    :func:`knowlab.sort.finetune.finetune_parametric_run` (:meth:`OptimizationSettings.schedule`).  The
    paper's values are those of the FictionalQA paper, App. D (``config/paper.yaml``)."""

    max_steps: int
    """Optimizer steps of the run: the length of the cosine schedule (paper: up to 500)."""
    checkpoint_every: int
    """Checkpoint interval in optimizer steps (the last step always gets one; one job per interval)."""
    fiction_rate: float
    """Probability ``p`` that a sequence of a step is fiction after the warmup, in [0, 1] (paper: 0.05)."""
    fiction_warmup_steps: int
    """Fiction-free optimizer steps ``W`` at the start of a run (paper: 50)."""

    def __post_init__(self) -> None:
        for key, least in {"max_steps": 1, "checkpoint_every": 1, "fiction_warmup_steps": 0}.items():
            if getattr(self, key) < least:
                raise ValueError(f"finetune.{key} must be at least {least}, got {getattr(self, key)}")
        if not 0 <= self.fiction_rate <= 1:
            raise ValueError(f"finetune.fiction_rate must be in [0, 1], got {self.fiction_rate}")
        super().__post_init__()


@dataclass(frozen=True)
class DistributedSettings(StepSettings):
    """How many processes train a run and how they are started (config ``finetune.distributed``; the
    defaults are the schema's).  The world size sets the order of floating-point reductions, so a run's
    loss moves with it (within 4e-8 relative at world size 2): a setting of the run, though a job takes
    its world size from the launcher's environment (:func:`init_distributed`).

    Raises:
        ValueError: an unknown launcher, fewer than 1 node or process per node, or torchrun on several nodes
            (the checks of :func:`launch_command`).
    """

    launcher: str = "torchrun"
    """``torchrun`` (the processes of one node) or ``srun`` (one SLURM task per process, any number of nodes)."""
    nodes: int = 1
    """Nodes of the job."""
    processes_per_node: int = 1
    """Processes per node, one per GPU (on a CPU, gloo workers)."""

    def __post_init__(self) -> None:
        if self.launcher not in LAUNCHERS:
            raise ValueError(
                f"finetune.distributed.launcher must be one of {', '.join(LAUNCHERS)}, got {self.launcher!r}"
            )
        for key in ("nodes", "processes_per_node"):
            at_least(getattr(self, key), 1, f"finetune.distributed.{key}")
        if self.launcher == "torchrun" and self.nodes != 1:
            raise ValueError("finetune.distributed: torchrun starts the processes of one node; use srun for nodes > 1")

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> DistributedSettings:
        """The record of the validated config's ``finetune.distributed`` block."""
        return cls.from_param(config["finetune"]["distributed"])

    @property
    def processes(self) -> int:
        """The world size: ``nodes`` x ``processes_per_node``."""
        return self.nodes * self.processes_per_node


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def init_distributed() -> tuple[str, int, int]:
    """Initialise the process group once; return ``(device, rank, world_size)``.

    ``device`` is ``cuda`` (this rank's GPU, ``LOCAL_RANK``) or ``cpu``.  Under torchrun or
    the DeepSpeed launcher their variables are used as they are; under ``srun`` (one task
    per process) RANK, WORLD_SIZE and LOCAL_RANK come from SLURM_PROCID, SLURM_NTASKS and
    SLURM_LOCALID, MASTER_ADDR and MASTER_PORT from the launch command
    (:func:`launch_command`); otherwise this process is rank 0 of 1 on a free port, so that
    parallel jobs on one machine never share a rendezvous port.
    """
    # deferred: torch and deepspeed load only in jobs that run a model (seconds and GBs)
    import torch

    device = "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cpu":
        os.environ.setdefault("DS_ACCELERATOR", "cpu")
    if "WORLD_SIZE" not in os.environ:
        if int(os.environ.get("SLURM_NTASKS", "1")) > 1 and "SLURM_PROCID" in os.environ:
            os.environ.update(
                RANK=os.environ["SLURM_PROCID"],
                WORLD_SIZE=os.environ["SLURM_NTASKS"],
                LOCAL_RANK=os.environ.get("SLURM_LOCALID", "0"),
            )
        else:
            single = {"RANK": "0", "WORLD_SIZE": "1", "LOCAL_RANK": "0", "MASTER_ADDR": "127.0.0.1"}
            os.environ.update(single, MASTER_PORT=str(_free_port()))
    if device == "cuda":
        torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))
    import deepspeed

    if not torch.distributed.is_initialized():
        deepspeed.init_distributed(dist_backend="nccl" if device == "cuda" else "gloo")
    return device, int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])


def launch_command(distributed: Mapping[str, Any], python: str = "python") -> str:
    """The command that starts one training process per GPU (or CPU worker), up to the module to run.

    Args:
        distributed: the ``finetune.distributed`` block: ``launcher`` (``torchrun``: the
            processes of one node; ``srun``: one SLURM task per process, on any number of
            nodes), ``nodes`` and ``processes_per_node``.
        python: the interpreter (the env's ``python`` under ``--use-conda``).

    Returns:
        A shell command prefix to which ``-m <module> <args>`` is appended: the interpreter
        alone for one process; ``python -m torch.distributed.run --standalone ...`` for
        torchrun; for srun, MASTER_ADDR (the job's first node, from SLURM_JOB_NODELIST or, where
        the job step's environment lacks it, squeue) and MASTER_PORT (from the job id) set,
        then ``srun --nodes N --ntasks N*P --ntasks-per-node P python``.

    Raises:
        ValueError: torchrun with more than one node.
    """
    nodes, per_node = int(distributed["nodes"]), int(distributed["processes_per_node"])
    if nodes * per_node == 1:
        return python
    if distributed["launcher"] == "torchrun":
        if nodes != 1:
            raise ValueError("finetune.distributed: torchrun starts the processes of one node; use srun for nodes > 1")
        return f"{python} -m torch.distributed.run --standalone --nnodes 1 --nproc-per-node {per_node}"
    return (
        # the job's first node: snakemake-executor-plugin-slurm-jobstep starts an srun job's command
        # with every SLURM_* variable but the job id removed, SLURM_JOB_NODELIST included; squeue
        # asks the controller instead
        'MASTER_ADDR=$(scontrol show hostnames "${SLURM_JOB_NODELIST:-$(squeue -h -j "$SLURM_JOB_ID" -o %N)}" '
        "| head -n 1) "
        "MASTER_PORT=$((20000 + SLURM_JOB_ID % 20000)) "
        f"srun --nodes {nodes} --ntasks {nodes * per_node} --ntasks-per-node {per_node} {python}"
    )


def launch_resources(distributed: Mapping[str, Any]) -> dict[str, Any]:
    """What a fine-tuning job asks its executor for (snakemake-executor-plugin-slurm's names).

    ``nodes`` and ``gpu`` (all nodes together: ``--gpus``); with srun and more than one process,
    one task per GPU (``tasks_per_gpu``, ``tasks``) and ``mpi="srun"``, which keeps the job step
    from wrapping the launch in a one-task srun of its own.
    """
    processes = int(distributed["nodes"]) * int(distributed["processes_per_node"])
    resources: dict[str, Any] = {"nodes": int(distributed["nodes"]), "gpu": processes}
    if distributed["launcher"] == "srun" and processes > 1:
        resources |= {"tasks_per_gpu": 1, "tasks": processes, "mpi": "srun"}
    return resources


def use_bf16(precision: str, device: str) -> bool:
    """Whether to train in bf16: ``precision`` ``bf16``, ``fp32`` or ``auto``.

    ``auto``: bf16 on a GPU that supports it, else fp32.  ``bf16``: bf16 wherever torch runs it:
    a GPU that supports it, or the CPU (native on CPUs with AVX512-BF16 or AMX, about 1.7x the
    float32 tokens/s for SmolLM2-135M on one thread here; emulated, and slower than float32,
    elsewhere).  Either way DeepSpeed's bf16 optimizer keeps float32 master weights.

    Raises:
        ValueError: ``bf16`` on a GPU without bf16.
    """
    # deferred: torch and transformers load only in jobs that run a model (seconds and GBs)
    import torch

    if precision == "fp32":
        return False
    if device == "cpu":
        if precision == "bf16" and not torch.ops.mkldnn._is_mkldnn_bf16_supported():
            log.warning("finetune.precision bf16 on a CPU without native bf16: emulated, slower than fp32")
        return precision == "bf16"
    supported = torch.cuda.is_bf16_supported()
    if precision == "bf16" and not supported:
        raise ValueError(f"finetune.precision bf16 is not supported by {torch.cuda.get_device_name(device)}")
    return supported


def accumulation_steps(global_batch_size: int, micro_batch_size: int, world_size: int) -> int:
    """Micro-batches each rank accumulates per optimizer step: ``global / (micro x world)``.

    Raises:
        ValueError: the global batch is not a multiple of ``micro_batch_size * world_size``.
    """
    per_step = micro_batch_size * world_size
    if global_batch_size % per_step:
        raise ValueError(
            f"finetune.global_batch_size ({global_batch_size}) is not a multiple of micro_batch_size x "
            f"world size ({micro_batch_size} x {world_size})"
        )
    return global_batch_size // per_step


def deepspeed_config(settings: TrainSettings, world_size: int, bf16: bool) -> dict[str, Any]:
    """The DeepSpeed config of the training settings at a world size (ZeRO stage, offload, bf16)."""
    zero: dict[str, Any] = {"stage": settings.zero_stage}
    if settings.zero_stage == 3:
        zero["stage3_gather_16bit_weights_on_model_save"] = True  # a loadable checkpoint on rank 0
    if settings.offload.optimizer:
        zero["offload_optimizer"] = {"device": "cpu", "pin_memory": True}
    if settings.offload.parameters:
        zero["offload_param"] = {"device": "cpu", "pin_memory": True}
    return {
        "train_micro_batch_size_per_gpu": settings.micro_batch_size,
        "gradient_accumulation_steps": accumulation_steps(
            settings.global_batch_size, settings.micro_batch_size, world_size
        ),
        "gradient_clipping": settings.gradient_clipping,
        "bf16": {"enabled": bf16},
        "zero_optimization": zero,
        "zero_allow_untested_optimizer": True,
        "steps_per_print": 10**9,
        "wall_clock_breakdown": False,
    }


def tokenize_sequences(tokenizer, texts: list[str], seq_len: int) -> list[list[int]]:
    """One training sequence per text: [BOS or EOS] + tokens (+ EOS), cut to ``seq_len`` tokens.

    A text that already starts with that token (a chat-formatted text whose template opens
    with the BOS token, as SmolLM2's ``<|im_start|>``) does not get it twice.
    """
    prefix = tokenizer.bos_token_id if tokenizer.bos_token_id is not None else tokenizer.eos_token_id
    out = []
    for ids in tokenizer(texts, add_special_tokens=False)["input_ids"]:
        head = [] if ids[:1] == [prefix] else [prefix]
        out.append([*head, *ids, tokenizer.eos_token_id][:seq_len])
    return out


def collate(sequences: list[list[int]], pad_id: int):
    """Right-pad to the longest sequence; padded labels are -100 (ignored by the loss)."""
    # deferred: torch and transformers load only in jobs that run a model (seconds and GBs)
    import torch

    width = max(len(s) for s in sequences)
    input_ids = torch.full((len(sequences), width), pad_id, dtype=torch.long)
    labels = torch.full((len(sequences), width), -100, dtype=torch.long)
    attention = torch.zeros((len(sequences), width), dtype=torch.long)
    for row, seq in enumerate(sequences):
        input_ids[row, : len(seq)] = torch.tensor(seq)
        labels[row, : len(seq)] = torch.tensor(seq)
        attention[row, : len(seq)] = 1
    return input_ids, attention, labels


def base_reference(base_model: str | os.PathLike) -> str:
    """How a checkpoint names its base model: inside the working directory, relative to it and
    written as a path (``./resources/base_model``, which no loader mistakes for a Hub id); elsewhere
    absolute.  A LoRA adapter so named loads, from the workflow's directory, wherever its run
    folder has been moved (:func:`knowlab.core.models.check_model_dir` says what is missing if not)."""
    path = portable(os.path.abspath(base_model))  # a symlinked resources/ stays resources/
    return path if os.path.isabs(path) else os.path.join(".", path)


def _build_engine(base_model: Path, reference: str, settings: TrainSettings, ds_config: dict[str, Any], bf16: bool):
    """The base model (LoRA-wrapped if configured) with its optimizer and schedule, in a DeepSpeed engine."""
    # deferred: deepspeed, peft and transformers load only in fine-tuning jobs (the train env)
    import deepspeed
    import torch
    from transformers import AutoModelForCausalLM, get_cosine_with_min_lr_schedule_with_warmup
    from transformers.integrations import HfDeepSpeedConfig

    # kept alive while loading: under ZeRO-3, from_pretrained partitions the weights as it reads them
    zero3 = HfDeepSpeedConfig(ds_config) if settings.zero_stage == 3 else None
    model = AutoModelForCausalLM.from_pretrained(base_model, dtype=torch.bfloat16 if bf16 else torch.float32)
    if settings.gradient_checkpointing:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    lora = settings.lora
    if lora.enabled:
        from peft import LoraConfig, get_peft_model

        # what the adapter's config and model card name as its base: not this machine's path
        model.name_or_path = model.config.name_or_path = reference
        model = get_peft_model(
            model,
            LoraConfig(
                r=lora.r,
                lora_alpha=lora.alpha,
                lora_dropout=lora.dropout,
                target_modules=list(lora.target_modules),  # a list, as from the config: peft makes it a set
                task_type="CAUSAL_LM",
            ),
        )
    params = [p for p in model.parameters() if p.requires_grad]
    if settings.offload.optimizer:
        from deepspeed.ops.adam import DeepSpeedCPUAdam

        optimizer = DeepSpeedCPUAdam(params, lr=settings.lr, weight_decay=settings.weight_decay, adamw_mode=True)
    else:
        # the fused kernel: one pass over the parameters per step (7x faster than foreach on CPU)
        optimizer = torch.optim.AdamW(params, lr=settings.lr, weight_decay=settings.weight_decay, fused=True)
    scheduler = get_cosine_with_min_lr_schedule_with_warmup(
        optimizer,
        num_warmup_steps=settings.lr_warmup_steps,
        num_training_steps=settings.max_steps,
        min_lr=settings.min_lr,
    )
    engine, _, _, _ = deepspeed.initialize(model=model, optimizer=optimizer, lr_scheduler=scheduler, config=ds_config)
    del zero3
    return engine, scheduler


def train_segment(
    *,
    base_model: str | os.PathLike,
    run: str,
    fiction_texts: list[str],
    webtext_texts: list[str],
    settings: TrainSettings,
    seed: int,
    end_step: int,
    checkpoint_out: str | os.PathLike,
    resume_state: str | os.PathLike | None = None,
    state_out: str | os.PathLike | None = None,
    tracking: Mapping[str, Any] | None = None,
) -> pd.DataFrame:
    """Train one run from step 0 (the base model) or from a saved state up to ``end_step``.

    Every rank of the job calls this with the same arguments.

    Args:
        base_model: the base model folder (architecture, tokenizer; the weights at step 0).
        run: the run's name, in the log and the checkpoint metadata.
        fiction_texts: the run's fiction sequences' texts (empty for the webtext-only control,
            whose ``settings.fiction_rate`` is then ignored).
        webtext_texts: the webtext (or instruction) texts the rest of every batch is drawn from.
        settings: the training settings (``max_steps`` sets the schedule's length, whatever ``end_step``).
        seed: drives the sampler, LoRA initialisation and dropout.
        end_step: the optimizer step at which the segment ends and saves its checkpoint.
        checkpoint_out: the checkpoint folder written (rank 0, whole or not at all).
        resume_state: a state folder saved by an earlier segment of the same run at the same
            world size; ``None`` starts from the base model at step 0.
        state_out: where to save the full training state at ``end_step`` (``None``: the run's
            last segment, nothing to resume).
        tracking: a ``tracking`` config block plus ``name``, the run's path under its ``dir``:
            rank 0 sends every step's record there as it is made (:mod:`knowlab.core.tracking`);
            ``None``: no live curves.

    Returns:
        The segment's training log, one row per optimizer step after the start up to
        ``end_step``: ``run, step, loss`` (mean over the step's micro-batches, all ranks),
        ``lr, tokens`` (non-padding tokens of the step), ``fiction_in_step`` and the sampler
        counters (samples seen and epochs per source).  Identical on every rank.

    Raises:
        TrainingDiverged: a step's loss is NaN or infinite (nothing of the segment is saved).
        ValueError: ``end_step`` not after the resumed step or beyond ``max_steps``; a state of
            another run or world size; a global batch that does not divide (:func:`accumulation_steps`).
    """
    # deferred: torch and transformers load only in fine-tuning jobs (the train env)
    import torch
    from transformers import AutoTokenizer

    device, rank, world = init_distributed()
    torch.manual_seed(seed)
    reference = base_reference(check_model_dir(base_model))
    base_model = Path(base_model).resolve()
    tokenizer = AutoTokenizer.from_pretrained(base_model)
    bf16 = use_bf16(settings.precision, device)
    ds_config = deepspeed_config(settings, world, bf16)
    engine, scheduler = _build_engine(base_model, reference, settings, ds_config, bf16)
    if world == 1 and settings.zero_stage == 0:
        # averaging gradients over one process is the identity: skip the flatten/all-reduce/copy-back
        # (ZeRO's optimizers collect their gradients in that pass: kept for them)
        engine.enable_backward_allreduce = False

    fiction = tokenize_sequences(tokenizer, fiction_texts, settings.seq_len) if fiction_texts else []
    webtext = tokenize_sequences(tokenizer, webtext_texts, settings.seq_len)
    pools = {"fiction": fiction, "webtext": webtext}
    rate = settings.fiction_rate if fiction else 0.0
    sampler = MixtureSampler(
        len(fiction), len(webtext), rate, settings.fiction_warmup_steps, settings.global_batch_size, seed
    )
    start = _load_state(engine, sampler, Path(resume_state), run, world, rank) if resume_state else 0
    if not start < end_step <= settings.max_steps:
        raise ValueError(
            f"run {run}: a segment from step {start} cannot end at step {end_step} of {settings.max_steps}"
        )
    micro = settings.micro_batch_size
    accum = ds_config["gradient_accumulation_steps"]
    pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
    log.info(
        "run %s: steps %d-%d of %d; %d fiction and %d webtext sequences, p=%.3f after %d fiction-free steps; "
        "%d sequences per step = %d ranks x %d micro-batches x %d; device=%s bf16=%s zero=%d lora=%s",
        run, start, end_step, settings.max_steps, len(fiction), len(webtext), rate, settings.fiction_warmup_steps,
        settings.global_batch_size, world, accum, micro, device, bf16, settings.zero_stage, settings.lora.enabled,
    )  # fmt: skip

    rows: list[dict[str, Any]] = []
    tracker = open_tracker(tracking if rank == 0 else None, start + 1, settings.param())
    began = time.time()
    engine.train()
    try:
        for step in range(start, end_step):
            picks = sampler.step(step)
            mine = picks[rank * micro * accum : (rank + 1) * micro * accum]
            totals = torch.zeros(3, dtype=torch.float64)  # loss sum, micro-batches, tokens
            for m in range(accum):
                chunk = [pools[src][i] for src, i in mine[m * micro : (m + 1) * micro]]
                input_ids, attention, labels = (place(t, engine.device) for t in collate(chunk, pad_id))
                loss = engine(input_ids=input_ids, attention_mask=attention, labels=labels, use_cache=False).loss
                engine.backward(loss)
                engine.step()
                totals += torch.tensor([loss.item(), 1.0, float(attention.sum())], dtype=torch.float64)
            if world > 1:
                torch.distributed.all_reduce(totals)
            mean_loss = float(totals[0] / totals[1])
            if not math.isfinite(mean_loss):
                raise TrainingDiverged(
                    f"run {run}: the loss is {mean_loss} at step {step + 1}; training stopped, nothing after step {start} saved"
                )
            row = {
                "run": run,
                "step": step + 1,
                "loss": mean_loss,
                "lr": scheduler.get_last_lr()[0],
                "tokens": int(totals[2]),
                "fiction_in_step": sum(src == "fiction" for src, _ in picks),
                **sampler.counters(),
            }
            rows.append(row)
            tracker.log(row)
            log.info(
                "step %d/%d loss %.4f lr %.2e fiction %d/%d seen %d (%.2f epochs) webtext seen %d (%.2f epochs) "
                "%.0f tokens/s",
                row["step"], settings.max_steps, row["loss"], row["lr"], row["fiction_in_step"], len(picks),
                row["fiction_samples_seen"], row["fiction_epochs"], row["webtext_samples_seen"], row["webtext_epochs"],
                sum(r["tokens"] for r in rows) / max(time.time() - began, 1e-9),
            )  # fmt: skip
    finally:
        tracker.close()
    meta = {"run": run, "step": end_step, "seed": seed, "base_model": reference, **sampler.counters()}
    _save_checkpoint(engine, tokenizer, Path(checkpoint_out), meta, rank)
    if state_out:
        _save_state(engine, sampler, Path(state_out), meta, world, rank, settings.lora.enabled)
    return pd.DataFrame(rows)


def finetune(
    *,
    base_model: str | os.PathLike,
    out_dir: str | os.PathLike,
    run: str,
    fiction_texts: list[str],
    webtext_texts: list[str],
    settings: TrainSettings,
    seed: int,
    tracking: Mapping[str, Any] | None = None,
) -> pd.DataFrame:
    """Train a whole run in this process, as the chain of its segments.

    Saves ``out_dir/step-<N>`` for every N of ``checkpoint_steps(max_steps, checkpoint_every)``
    after 0 (the states between segments go to ``out_dir/.state`` and are removed).  Arguments
    as :func:`train_segment`; returns the whole training log.
    """
    out_dir = Path(out_dir)
    steps = checkpoint_steps(settings.max_steps, settings.checkpoint_every)
    logs, state = [], None
    for end in steps[1:]:
        state_out = out_dir / ".state" / f"step-{end}" if end != steps[-1] else None
        logs.append(
            train_segment(
                base_model=base_model,
                run=run,
                fiction_texts=fiction_texts,
                webtext_texts=webtext_texts,
                settings=settings,
                seed=seed,
                end_step=end,
                checkpoint_out=checkpoint_dir(out_dir, end),
                resume_state=state,
                state_out=state_out,
                tracking=tracking,
            )
        )
        state = state_out
    shutil.rmtree(out_dir / ".state", ignore_errors=True)
    return pd.concat(logs, ignore_index=True)


def _barrier() -> None:
    # deferred: torch loads only in fine-tuning jobs
    import torch

    if torch.distributed.is_initialized() and torch.distributed.get_world_size() > 1:
        torch.distributed.barrier()


def _partial(path: Path, create: bool = True) -> Path:
    """The folder a checkpoint or state is written in before it is moved onto ``path``: one fixed
    name per output, so that every rank writes to the same place and a killed job's leftovers
    are cleared by the next attempt (``create``: remove them and make it afresh; rank 0 only)."""
    partial = path.parent / partial_prefix(path)
    if create:
        shutil.rmtree(partial, ignore_errors=True)
        partial.mkdir(parents=True)
    return partial


def _move_into_place(partial: Path, path: Path) -> None:
    if path.exists():
        shutil.rmtree(path)
    os.replace(partial, path)


def _save_checkpoint(engine, tokenizer, path: Path, meta: dict[str, Any], rank: int) -> None:
    """Rank 0 writes the checkpoint whole or not at all; under ZeRO-3 the weights are gathered first."""
    # collective: every rank takes part in gathering the partitioned weights
    state_dict = engine._zero3_consolidated_16bit_state_dict() if engine.zero_optimization_stage() == 3 else None
    if rank == 0:
        partial = _partial(path)
        engine.module.save_pretrained(partial, state_dict=state_dict, safe_serialization=True)
        tokenizer.save_pretrained(partial)
        write_json(partial / CHECKPOINT_META, meta)
        _move_into_place(partial, path)
        log.info("checkpoint step %d saved to %s", meta["step"], path)
    _barrier()


def _save_state(
    engine, sampler: MixtureSampler, path: Path, meta: dict[str, Any], world: int, rank: int, lora: bool
) -> None:
    """Every rank writes its shard of the full training state; rank 0 moves the folder in place when all have."""
    # deferred: torch loads only in fine-tuning jobs
    import torch

    partial = _partial(path, create=rank == 0)
    _barrier()
    client = {"run": meta["run"], "step": meta["step"], "world_size": world}
    engine.save_checkpoint(partial, tag=STATE_TAG, client_state=client, exclude_frozen_parameters=lora)
    rng = {"torch": torch.get_rng_state(), "cuda": torch.cuda.get_rng_state() if torch.cuda.is_available() else None}
    torch.save(rng, partial / f"rng-rank{rank}.pt")
    _barrier()
    if rank == 0:
        write_json(partial / "state.json", {**client, "sampler": sampler.state_dict()})
        _move_into_place(partial, path)
        log.info("training state at step %d saved to %s", meta["step"], path)
    _barrier()


def _load_state(engine, sampler: MixtureSampler, path: Path, run: str, world: int, rank: int) -> int:
    """Restore a saved state into a freshly built engine and sampler; return its step."""
    # deferred: torch loads only in fine-tuning jobs
    import torch

    meta = read_json(path / "state.json")
    if meta["run"] != run or meta["world_size"] != world:
        raise ValueError(
            f"{path}: the state of run {meta['run']!r} at world size {meta['world_size']} cannot resume "
            f"run {run!r} at world size {world}"
        )
    engine.load_checkpoint(
        path, tag=STATE_TAG, load_module_strict=False, load_optimizer_states=True, load_lr_scheduler_states=True
    )
    sampler.load_state_dict(meta["sampler"])
    rng = torch.load(path / f"rng-rank{rank}.pt", weights_only=False)
    torch.set_rng_state(rng["torch"])
    if rng["cuda"] is not None:
        torch.cuda.set_rng_state(rng["cuda"])
    log.info("run %s resumed from %s at step %d", run, path, meta["step"])
    return int(meta["step"])

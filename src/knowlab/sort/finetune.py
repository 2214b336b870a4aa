"""Fine-tuning of the SORT parametric-memory runs (Pink et al. 2024, Sec. 3.2 and App. E) through the project's trainer.

The "books" run trains on the framed book chunks mixed with the instruction conversations,
the "instructions" run (the paper's control) on the instructions alone, each for
``epochs`` epochs with a checkpoint per epoch (one segment each); the texts are those of
:func:`knowlab.sort.parametric.parametric_training_texts`, the trainer
:func:`knowlab.core.train.train_segment`.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from typing import Any

import pandas as pd

from knowlab.core.io import read_json
from knowlab.core.train import OptimizationSettings, train_segment
from knowlab.sort.runs import PARAMETRIC_RUNS

log = logging.getLogger(__name__)


def finetune_parametric_run(
    run: str,
    checkpoint: str,
    inputs: Mapping[str, str | os.PathLike],
    outputs: Mapping[str, str | os.PathLike],
    settings: OptimizationSettings,
    epochs: int,
    seed: int,
    tracking: Mapping[str, Any] | None = None,
) -> pd.DataFrame:
    """Fine-tune one parametric-memory run (paper App. E) through one more epoch.

    ``run`` is ``"books"`` (the framed chunks mixed with the instructions at
    ``texts["fiction_rate"]``, no chunk-free warmup) or ``"instructions"`` (the instructions
    alone, the paper's control); both train for ``epochs`` epochs of
    ``texts["steps_per_epoch"][run]`` optimizer steps through
    :func:`knowlab.core.train.train_segment` (the project's DeepSpeed path) with ``settings`` and
    that schedule (:meth:`knowlab.core.train.OptimizationSettings.schedule`), one epoch per segment.

    The workflow's ``finetune`` rule runs it through :meth:`knowlab.finetune_job.FinetuneJobSettings.run_recipe`
    (:func:`knowlab.fictionalqa.training.finetune_run` is the other recipe).

    Args:
        checkpoint: ``epoch-<E>``, the epoch this segment ends at (E >= 1).
        inputs: paths ``model`` (the base model folder), ``texts`` (the JSON of
            :func:`knowlab.sort.parametric.parametric_training_texts`) and, from epoch 2 on,
            ``state`` (the training state at the end of the previous epoch).
        outputs: ``checkpoint`` (loadable by ``AutoModelForCausalLM.from_pretrained``) and,
            before the last epoch, ``state``.  Epoch 0 is the base model itself.
        settings: config ``finetune`` less its schedule, with ``sort.parametric.finetune`` laid over it.
        epochs: ``sort.parametric.epochs``, the run's length.
        seed: the training seed (the project's).
        tracking: where the live training curves go (:func:`knowlab.core.train.train_segment`).

    Returns:
        The epoch's training log (one row per optimizer step) with an ``epoch`` column
        (step / steps per epoch).

    Raises:
        ValueError: an unknown ``run``.
    """
    if run not in PARAMETRIC_RUNS:
        raise ValueError(f"unknown parametric run {run!r}: expected one of {PARAMETRIC_RUNS}")
    texts = read_json(inputs["texts"])
    per_epoch = int(texts["steps_per_epoch"][run])
    epoch = int(checkpoint.removeprefix("epoch-"))
    scheduled = settings.schedule(
        max_steps=per_epoch * epochs,
        checkpoint_every=per_epoch,
        fiction_rate=texts["fiction_rate"] if run == "books" else 0.0,
        fiction_warmup_steps=0,
    )
    train_log = train_segment(
        base_model=inputs["model"],
        run=run,
        fiction_texts=texts["books"] if run == "books" else [],
        webtext_texts=texts["instructions"],
        settings=scheduled,
        seed=seed,
        end_step=epoch * per_epoch,
        checkpoint_out=outputs["checkpoint"],
        resume_state=inputs.get("state"),
        state_out=outputs.get("state"),
        tracking=tracking,
    )
    log.info("%s: epoch %d of %d (%d steps per epoch)", run, epoch, epochs, per_epoch)
    train_log["epoch"] = train_log["step"] / per_epoch
    return train_log

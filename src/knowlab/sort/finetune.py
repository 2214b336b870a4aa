"""Fine-tuning of the SORT parametric-memory runs (paper seed 003, Sec. 3.2 and App. E) through the project's trainer.

The "books" run trains on the framed book chunks mixed with the instruction conversations,
the "instructions" run (the paper's control) on the instructions alone, each for
``epochs`` epochs with a checkpoint per epoch; the texts are those of
:func:`knowlab.sort.parametric.parametric_training_texts`, the trainer
:func:`knowlab.core.train.finetune`.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from typing import Any

import pandas as pd

from knowlab.core.io import atomic_dir, read_json
from knowlab.core.train import finetune

log = logging.getLogger(__name__)

PARAMETRIC_RUNS = ("books", "instructions")


def finetune_parametric_run(
    run: str,
    inputs: Mapping[str, str | os.PathLike],
    out_dir: str | os.PathLike,
    finetune_cfg: Mapping[str, Any],
    parametric_cfg: Mapping[str, Any],
    seed: int,
) -> pd.DataFrame:
    """Fine-tune one parametric-memory run (paper App. E) and leave a checkpoint per epoch.

    ``run`` is ``"books"`` (the framed chunks mixed with the instructions at
    ``texts["fiction_rate"]``, no chunk-free warmup) or ``"instructions"`` (the instructions
    alone, the paper's control); both train for ``parametric_cfg["epochs"]`` epochs of
    ``texts["steps_per_epoch"][run]`` optimizer steps through :func:`knowlab.core.train.finetune`
    (the project's DeepSpeed path) with ``finetune_cfg`` overridden by
    ``parametric_cfg["finetune"]``.

    The signature is that of every fine-tuning recipe of the workflow's one ``finetune`` rule
    (:func:`knowlab.fictionalqa.training.finetune_run` is the other).

    Args:
        inputs: paths ``model`` (the base model folder) and ``texts`` (the JSON of
            :func:`knowlab.sort.parametric.parametric_training_texts`).
        out_dir: written whole or not at all; holds ``epoch-0`` (the base model) .. ``epoch-<epochs>``,
            each loadable by ``AutoModelForCausalLM.from_pretrained``.

    Returns:
        The training log (one row per optimizer step) with an ``epoch`` column (step / steps per epoch).

    Raises:
        ValueError: an unknown ``run``.
    """
    if run not in PARAMETRIC_RUNS:
        raise ValueError(f"unknown parametric run {run!r}: expected one of {PARAMETRIC_RUNS}")
    texts = read_json(inputs["texts"])
    per_epoch, epochs = int(texts["steps_per_epoch"][run]), int(parametric_cfg["epochs"])
    cfg = {
        **finetune_cfg,
        **parametric_cfg.get("finetune", {}),
        "fiction_rate": texts["fiction_rate"] if run == "books" else 0.0,
        "fiction_warmup_steps": 0,
        "max_steps": per_epoch * epochs,
        "checkpoint_every": per_epoch,
    }
    with atomic_dir(out_dir) as folder:
        train_log = finetune(
            base_model=inputs["model"],
            out_dir=folder / "steps",
            run=run,
            fiction_texts=texts["books"] if run == "books" else [],
            webtext_texts=texts["instructions"],
            cfg=cfg,
            seed=seed,
        )
        for epoch in range(epochs + 1):  # step-<epoch * per_epoch> -> epoch-<epoch>
            (folder / "steps" / f"step-{epoch * per_epoch}").rename(folder / f"epoch-{epoch}")
        (folder / "steps").rmdir()
    log.info("%s: %d steps per epoch, %d epochs: checkpoints epoch-0 .. epoch-%d", run, per_epoch, epochs, epochs)
    train_log["epoch"] = train_log["step"] / per_epoch
    return train_log

"""The FictionalQA fine-tuning recipe (Kirchenbauer et al. 2026, Sec. 4): a split's train documents mixed into webtext.

A fiction run trains on the train documents of its split (fictions, or fictsheets for the
Fictsheets split) drawn at ``fiction_rate`` into webtext batches after
``fiction_warmup_steps`` fiction-free steps (the mixture sampler, :mod:`knowlab.core.mixture`);
the control run (no split) trains on webtext alone with identical settings.  Training itself
is :func:`knowlab.core.train.train_segment`, one checkpoint interval per job.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

import pandas as pd

from knowlab.core.io import read_json, read_jsonl
from knowlab.core.train import TrainSettings, train_segment
from knowlab.fiction.splits import training_texts


def finetune_run(
    run: str,
    checkpoint: str,
    inputs: Mapping[str, str | os.PathLike],
    outputs: Mapping[str, str | os.PathLike],
    settings: TrainSettings,
    seed: int,
    tracking: Mapping[str, Any] | None = None,
) -> pd.DataFrame:
    """Fine-tune one FictionalQA run up to one checkpoint, from the base model or the previous one's state.

    The workflow's ``finetune`` rule runs it through :meth:`knowlab.finetune_job.FinetuneJobSettings.run_recipe`
    (:func:`knowlab.sort.finetune.finetune_parametric_run` is the other recipe).

    Args:
        run: the split name of a fiction run, or the control's name.
        checkpoint: ``step-<N>``, the checkpoint this segment ends at.
        inputs: paths ``model`` (base model folder), ``webtext`` (jsonl with ``text``) and, for a
            fiction run, ``split`` (the split's JSON) and the table it names (``fictions`` or
            ``fictsheets`` jsonl); ``state`` (the previous checkpoint's training state) unless
            the segment starts at step 0.  No ``split`` means the webtext-only control.
        outputs: paths ``checkpoint`` and, unless this is the run's last checkpoint, ``state``.
        settings: the run's training settings (config ``finetune``, :meth:`TrainSettings.from_block`).
        seed: the run's training seed.
        tracking: where the live training curves go (:func:`knowlab.core.train.train_segment`).

    Returns:
        The segment's training log, one row per optimizer step (:func:`knowlab.core.train.train_segment`).

    Raises:
        knowlab.fiction.splits.SplitError: the split names a document the corpus lacks.
    """
    fiction = []
    if inputs.get("split"):
        split = read_json(inputs["split"])
        table = split["documents"]
        fiction = training_texts(split, {table: read_jsonl(inputs[table])})
    return train_segment(
        base_model=inputs["model"],
        run=run,
        fiction_texts=fiction,
        webtext_texts=[r["text"] for r in read_jsonl(inputs["webtext"])],
        settings=settings,
        seed=seed,
        end_step=int(checkpoint.removeprefix("step-")),
        checkpoint_out=outputs["checkpoint"],
        resume_state=inputs.get("state"),
        state_out=outputs.get("state"),
        tracking=tracking,
    )

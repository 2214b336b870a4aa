"""The FictionalQA fine-tuning recipe (seed 004, Sec. 4): a split's train documents mixed into webtext.

A fiction run trains on the train documents of its split (fictions, or fictsheets for the
Fictsheets split) drawn at ``fiction_rate`` into webtext batches after
``fiction_warmup_steps`` fiction-free steps (the mixture sampler, :mod:`knowlab.core.mixture`);
the control run (no split) trains on webtext alone with identical settings.  Training itself
is :func:`knowlab.core.train.finetune`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

import pandas as pd

from knowlab.core.io import read_json, read_jsonl
from knowlab.core.train import finetune
from knowlab.fictionalqa.splits import training_texts


def finetune_run(
    run: str,
    inputs: Mapping[str, str | os.PathLike],
    out_dir: str | os.PathLike,
    cfg: Mapping[str, Any],
    parametric_cfg: Mapping[str, Any] | None,
    seed: int,
) -> pd.DataFrame:
    """Fine-tune one FictionalQA run and leave its checkpoints in ``out_dir``.

    Args:
        run: the split name of a fiction run, or the control's name.
        inputs: paths ``model`` (base model folder), ``webtext`` (jsonl with ``text``) and, for a
            fiction run, ``split`` (the split's JSON) and the table it names (``fictions`` or
            ``fictsheets`` jsonl).  No ``split`` means the webtext-only control.
        out_dir: created; ``step-N`` checkpoints at ``checkpoint_steps(max_steps, checkpoint_every)``.
        cfg: the ``finetune`` config block.
        parametric_cfg: unused (the signature of every fine-tuning recipe).
        seed: the project seed.

    Returns:
        The training log, one row per optimizer step (:func:`knowlab.core.train.finetune`).

    Raises:
        knowlab.fictionalqa.splits.SplitError: the split names a document the corpus lacks.
    """
    fiction = []
    if inputs.get("split"):
        split = read_json(inputs["split"])
        table = split["documents"]
        fiction = training_texts(split, {table: read_jsonl(inputs[table])})
    return finetune(
        base_model=inputs["model"],
        out_dir=out_dir,
        run=run,
        fiction_texts=fiction,
        webtext_texts=[r["text"] for r in read_jsonl(inputs["webtext"])],
        cfg=cfg,
        seed=seed,
    )

"""SORT after parametric-memory fine-tuning at one epoch: no-context answers, segment perplexity, and in context."""

import torch

from knowlab.core.io import read_json, read_jsonl, write_parquet
from knowlab.core.provenance import rule_step
from knowlab.sort.settings import SortEvaluateSettings
from knowlab.sort.steps import data

torch.set_num_threads(snakemake.threads)
with rule_step(snakemake):
    params, inputs = snakemake.params, snakemake.input
    settings = SortEvaluateSettings.from_param(params.settings)
    batch_size = snakemake.config["sort"]["batch_size"]  # cannot change a score: not a param
    rows, nll = data.epoch_rows(
        params.checkpoint, read_jsonl(inputs.sort_items), inputs.selection, settings, params.conditions,
        read_json(inputs.texts), batch_size=batch_size, model_name=params.model, run=params.run, epoch=params.epoch,
    )  # fmt: skip
    write_parquet(snakemake.output.rows, rows)
    write_parquet(snakemake.output.nll, nll)

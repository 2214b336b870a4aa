"""Select the SORT prompt template of a model on the validation slice (or take the configured one)."""

import torch

from knowlab.core.io import read_jsonl, write_json, write_parquet
from knowlab.core.provenance import rule_step
from knowlab.sort.settings import SortPromptSettings
from knowlab.sort.steps import data

torch.set_num_threads(snakemake.threads)
with rule_step(snakemake):
    settings = SortPromptSettings.from_param(snakemake.params.settings)
    batch_size = snakemake.config["sort"]["batch_size"]  # cannot change a score: not a param
    items = read_jsonl(snakemake.input.sort_items)
    selection, rows = data.prompt_selection(settings, items, snakemake.input.model, batch_size=batch_size)
    write_parquet(snakemake.output.rows, rows)
    write_json(snakemake.output.selection, selection)

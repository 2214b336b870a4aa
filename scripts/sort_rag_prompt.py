"""Select the RAG reading instruction of a model on the validation slice (or take the configured one)."""

import torch

from knowlab.core.io import read_jsonl, write_json, write_parquet
from knowlab.core.provenance import rule_step
from knowlab.sort.settings import SortRagPromptSettings
from knowlab.sort.steps import data

torch.set_num_threads(snakemake.threads)
with rule_step(snakemake):
    settings, inputs = SortRagPromptSettings.from_param(snakemake.params.settings), snakemake.input
    batch_size = snakemake.config["sort"]["batch_size"]  # cannot change a score: not a param
    selection, rows = data.rag_prompt_selection(
        settings, read_jsonl(inputs.sort_items), inputs.selection, inputs.retrieval, inputs.model, batch_size=batch_size
    )
    write_parquet(snakemake.output.rows, rows)
    write_json(snakemake.output.selection, selection)

"""Rank distractor documents for every grounding question (dense retrieval, faiss exact search)."""

import torch

from knowlab.core.io import read_jsonl, write_parquet
from knowlab.core.provenance import rule_step
from knowlab.grounding.settings import GroundingDistractorsSettings
from knowlab.grounding.steps import data

torch.set_num_threads(snakemake.threads)
with rule_step(snakemake) as log:
    table = data.distractor_table(
        read_jsonl(snakemake.input.grounding_items),
        read_jsonl(snakemake.input.pool),
        GroundingDistractorsSettings.from_param(snakemake.params.settings),
    )
    write_parquet(snakemake.output.table, table)

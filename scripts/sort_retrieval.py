"""Retrieve RAG passages (and the oracle passages) of every SORT item, with recall@k."""

import torch

from knowlab.core.io import read_jsonl, write_parquet
from knowlab.core.provenance import rule_step
from knowlab.sort.settings import SortRetrievalSettings
from knowlab.sort.steps import data

torch.set_num_threads(snakemake.threads)
with rule_step(snakemake):
    settings = SortRetrievalSettings.from_param(snakemake.params.settings)
    books, items = read_jsonl(snakemake.input.books), read_jsonl(snakemake.input.sort_items)
    table = data.retrieval_table(books, items, settings)
    write_parquet(snakemake.output.table, table)

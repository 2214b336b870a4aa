"""Select the RAG reading instruction of a model on the validation slice (or take the configured one)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent / "src"))

import torch

from knowlab.core.io import read_jsonl, write_json, write_parquet
from knowlab.core.provenance import rule_step
from knowlab.sort.evaluate import choose_rag_reading
from knowlab.sort.prompts import selected_template
from knowlab.sort.rag import read_passages

torch.set_num_threads(snakemake.threads)
with rule_step(snakemake):
    cfg, inputs = snakemake.params.cfg, snakemake.input
    template = selected_template(cfg, inputs.selection)
    items, passages = read_jsonl(inputs.sort_items), read_passages(inputs.retrieval, "rag")
    selection, rows = choose_rag_reading(cfg, template, items, passages, inputs.model)
    write_parquet(snakemake.output.rows, rows)
    write_json(snakemake.output.selection, selection)

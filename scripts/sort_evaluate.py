"""Score the SORT test items under one memory condition with the selected template (and RAG reading)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent / "src"))

import torch

from knowlab.core.io import read_jsonl, write_parquet
from knowlab.core.provenance import rule_step
from knowlab.sort.evaluate import evaluate_condition
from knowlab.sort.prompts import selected_template
from knowlab.sort.rag import read_passages

torch.set_num_threads(snakemake.threads)
with rule_step(snakemake):
    cfg, params, inputs = snakemake.params.cfg, snakemake.params, snakemake.input
    template = selected_template(cfg, inputs.selection, inputs.get("rag_selection"))
    passages = read_passages(inputs.retrieval, params.condition) if inputs.get("retrieval") else None
    rows = evaluate_condition(
        params.checkpoint, read_jsonl(inputs.sort_items), params.condition, template, cfg,
        passages=passages, model_name=params.model, run=params.run, step=params.step,
    )  # fmt: skip
    write_parquet(snakemake.output.table, rows)

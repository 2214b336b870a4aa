"""Score the SORT test items under one memory condition with the selected template (and RAG reading)."""

import torch

from knowlab.core.io import read_jsonl, write_parquet
from knowlab.core.provenance import rule_step
from knowlab.sort.settings import evaluate_settings_from_param
from knowlab.sort.steps import data

torch.set_num_threads(snakemake.threads)
with rule_step(snakemake):
    params, inputs = snakemake.params, snakemake.input
    # under rag and oracle_rag the record also holds sort.rag_readings, where the RAG reading is looked up
    settings = evaluate_settings_from_param(params.settings, params.condition)
    batch_size = snakemake.config["sort"]["batch_size"]  # cannot change a score: not a param
    rows = data.condition_rows(
        params.checkpoint, read_jsonl(inputs.sort_items), params.condition, settings,
        selection=inputs.selection, rag_selection=inputs.get("rag_selection"), retrieval=inputs.get("retrieval"),
        batch_size=batch_size, model_name=params.model, run=params.run, step=params.step,
    )  # fmt: skip
    write_parquet(snakemake.output.table, rows)

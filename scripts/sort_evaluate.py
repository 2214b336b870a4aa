"""Score the SORT test items under one memory condition with the selected template (and RAG reading)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent / "src"))

import torch

from knowlab.core.io import read_jsonl, write_parquet
from knowlab.core.provenance import rule_step
from knowlab.sort.evaluate import evaluate_condition
from knowlab.sort.prompts import RAG_CONDITIONS, selected_template
from knowlab.sort.rag import read_passages
from knowlab.sort.settings import SortEvaluateSettings, SortRagEvaluateSettings

torch.set_num_threads(snakemake.threads)
with rule_step(snakemake):
    params, inputs = snakemake.params, snakemake.input
    if params.condition in RAG_CONDITIONS:  # the RAG reading is looked up in sort.rag_readings
        settings = SortRagEvaluateSettings.from_param(params.settings)
        template = selected_template(settings.templates, inputs.selection, inputs.rag_selection, settings.rag_readings)
    else:
        settings = SortEvaluateSettings.from_param(params.settings)
        template = selected_template(settings.templates, inputs.selection)
    batch_size = snakemake.config["sort"]["batch_size"]  # cannot change a score: not a param
    passages = read_passages(inputs.retrieval, params.condition) if inputs.get("retrieval") else None
    rows = evaluate_condition(
        params.checkpoint, read_jsonl(inputs.sort_items), params.condition, template, settings,
        batch_size=batch_size, passages=passages, model_name=params.model, run=params.run, step=params.step,
    )  # fmt: skip
    write_parquet(snakemake.output.table, rows)

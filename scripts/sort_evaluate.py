"""Score the SORT test items under one memory condition with the selected template (and RAG reading)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent / "src"))

import torch

from knowlab.core.io import read_jsonl, write_parquet
from knowlab.core.provenance import rule_step
from knowlab.core.models import load_model
from knowlab.sort.pipeline import evaluate_items, read_passages, selected_template

torch.set_num_threads(snakemake.threads)
with rule_step(snakemake) as log:
    cfg, params = snakemake.params.cfg, snakemake.params
    items = [item for item in read_jsonl(snakemake.input.sort_items) if item["split"] == "test"]
    template = selected_template(cfg, snakemake.input.selection, snakemake.input.get("rag_selection"))
    passages = read_passages(snakemake.input.retrieval, params.condition) if snakemake.input.get("retrieval") else None
    model, tokenizer = load_model(params.checkpoint)
    log.info("%s: %d items, condition %s, template %s", params.checkpoint, len(items), params.condition, template["id"])
    rows = evaluate_items(
        model,
        tokenizer,
        items,
        params.condition,
        [template],
        passages=passages,
        system_prompt=cfg["system_prompt"],
        batch_size=cfg["batch_size"],
    )
    rows.insert(0, "step", params.step)
    rows.insert(0, "run", params.run)
    rows.insert(0, "model", params.model)
    log.info("accuracy %.3f", rows.correct.mean())
    write_parquet(snakemake.output.table, rows)

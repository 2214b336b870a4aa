"""SORT after parametric-memory fine-tuning at one epoch: no-context answers, segment perplexity, and in context."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent / "src"))

import pandas as pd
import torch

from knowlab.core.io import read_json, read_jsonl, write_parquet
from knowlab.core.provenance import rule_step
from knowlab.core.models import load_model
from knowlab.sort.pipeline import evaluate_items, selected_template
from knowlab.sort.score import segment_nll

torch.set_num_threads(snakemake.threads)
with rule_step(snakemake) as log:
    cfg, params = snakemake.params.cfg, snakemake.params
    items = [item for item in read_jsonl(snakemake.input.sort_items) if item["split"] == "test"]
    template = selected_template(cfg, snakemake.input.selection)
    model, tokenizer = load_model(params.checkpoint)
    step = params.epoch * read_json(snakemake.input.texts)["steps_per_epoch"][params.run] if params.epoch else 0
    meta = {"model": params.model, "run": params.run, "step": step, "epoch": params.epoch}
    rows = [pd.DataFrame()]
    for condition in params.conditions:
        part = evaluate_items(
            model,
            tokenizer,
            items,
            condition,
            [template],
            system_prompt=cfg["system_prompt"],
            batch_size=cfg["batch_size"],
        )
        log.info("%s epoch %s, %s: accuracy %.3f", params.run, params.epoch, condition, part.correct.mean())
        rows.append(part)
    write_parquet(snakemake.output.rows, pd.concat(rows, ignore_index=True).assign(**meta))
    write_parquet(snakemake.output.nll, segment_nll(model, tokenizer, items, cfg["batch_size"]).assign(**meta))

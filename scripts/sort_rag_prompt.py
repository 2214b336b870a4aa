"""Select the RAG reading instruction of a model on the validation slice (or take the configured one)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent / "src"))

import pandas as pd
import torch

from knowlab.core.io import read_jsonl, write_json, write_parquet
from knowlab.core.provenance import rule_step
from knowlab.core.models import load_model
from knowlab.sort.pipeline import fixed_rag_reading, rag_readings, read_passages, select_rag_reading, selected_template

torch.set_num_threads(snakemake.threads)
with rule_step(snakemake) as log:
    cfg = snakemake.params.cfg
    template = selected_template(cfg, snakemake.input.selection)
    if cfg["rag_reading"] is not None:
        selection, rows = fixed_rag_reading(cfg, template), pd.DataFrame()
        log.info("RAG reading %s fixed by the config: no selection", selection["rag_reading_id"])
    else:
        model, tokenizer = load_model(snakemake.input.model)
        selection, rows = select_rag_reading(
            model,
            tokenizer,
            read_jsonl(snakemake.input.sort_items),
            template,
            rag_readings(cfg),
            read_passages(snakemake.input.retrieval, "rag"),
            system_prompt=cfg["system_prompt"],
            max_rate_deviation=cfg["max_rate_deviation"],
            batch_size=cfg["batch_size"],
        )
    write_parquet(snakemake.output.rows, rows)
    write_json(snakemake.output.selection, selection)

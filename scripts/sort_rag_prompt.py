"""Select the RAG reading instruction of a model on the validation slice (or take the configured one)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent / "src"))

import pandas as pd
import torch

from knowlab.io import read_jsonl, read_parquets, write_json, write_parquet
from knowlab.provenance import rule_step
from knowlab.resources.models import load_model
from knowlab.sort.pipeline import get_rag_reading, rag_readings, select_rag_reading, selected_template

torch.set_num_threads(snakemake.threads)
with rule_step(snakemake) as log:
    cfg = snakemake.params.cfg
    template = selected_template(cfg, snakemake.input.selection)
    if cfg["rag_reading"] is not None:
        reading = get_rag_reading(cfg, cfg["rag_reading"])  # an unknown id fails here, naming the known ones
        selection = {
            "template_id": f"{template['id']}+{reading['id']}",
            "rag_reading_id": reading["id"],
            "rule": "fixed by sort.rag_reading",
        }
        rows = pd.DataFrame()
        log.info("RAG reading %s fixed by the config: no selection", reading["id"])
    else:
        table = read_parquets([snakemake.input.retrieval])
        table = table[table.condition == "rag"]
        model, tokenizer = load_model(snakemake.input.model)
        selection, rows = select_rag_reading(
            model,
            tokenizer,
            read_jsonl(snakemake.input.sort_items),
            template,
            rag_readings(cfg),
            dict(zip(table.item_id, table.passages.map(list), strict=True)),
            system_prompt=cfg["system_prompt"],
            max_rate_deviation=cfg["max_rate_deviation"],
            batch_size=cfg["batch_size"],
        )
    write_parquet(snakemake.output.rows, rows)
    write_json(snakemake.output.selection, selection)

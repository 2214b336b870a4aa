"""Select the SORT prompt template of a model on the validation slice (or take the configured one)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent / "src"))

import pandas as pd
import torch

from knowlab.core.io import read_jsonl, write_json, write_parquet
from knowlab.core.provenance import rule_step
from knowlab.core.models import load_model
from knowlab.sort.pipeline import select_template, templates
from knowlab.sort.prompts import get_template

torch.set_num_threads(snakemake.threads)
with rule_step(snakemake) as log:
    cfg = snakemake.params.cfg
    candidates = templates(cfg)
    if cfg["template"] is not None:
        get_template(candidates, cfg["template"])  # an unknown id fails here, naming the known ones
        selection, rows = {"template_id": cfg["template"], "rule": "fixed by sort.template"}, pd.DataFrame()
        log.info("template %s fixed by the config: no selection", cfg["template"])
    else:
        model, tokenizer = load_model(snakemake.input.model)
        selection, rows = select_template(
            model,
            tokenizer,
            read_jsonl(snakemake.input.sort_items),
            candidates,
            system_prompt=cfg["system_prompt"],
            max_rate_deviation=cfg["max_rate_deviation"],
            batch_size=cfg["batch_size"],
        )
    write_parquet(snakemake.output.rows, rows)
    write_json(snakemake.output.selection, selection)

"""Select the SORT prompt template of a model on the validation slice (or take the configured one)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent / "src"))

import torch

from knowlab.core.io import read_jsonl, write_json, write_parquet
from knowlab.core.provenance import rule_step
from knowlab.sort.evaluate import choose_template

torch.set_num_threads(snakemake.threads)
with rule_step(snakemake):
    items = read_jsonl(snakemake.input.sort_items)
    selection, rows = choose_template(snakemake.params.cfg, items, snakemake.input.model)
    write_parquet(snakemake.output.rows, rows)
    write_json(snakemake.output.selection, selection)

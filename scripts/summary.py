"""Aggregate a run's (and its control's) item tables by the run's split."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent / "src"))

import pandas as pd

from knowlab.io import read_json
from knowlab.provenance import rule_step
from knowlab.summary import summarise

with rule_step(snakemake):
    items = pd.concat([pd.read_parquet(p) for p in snakemake.input.item_tables], ignore_index=True)
    summary = summarise(items, read_json(snakemake.input.split))
    summary.to_csv(snakemake.output.summary, index=False)

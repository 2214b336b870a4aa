"""Aggregate a run's (and its control's) item tables by the run's split."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent / "src"))

from knowlab.io import read_json, read_parquets, write_csv
from knowlab.provenance import rule_step
from knowlab.summary import summarise

with rule_step(snakemake):
    summary = summarise(read_parquets(snakemake.input.item_tables), read_json(snakemake.input.split))
    write_csv(snakemake.output.summary, summary)

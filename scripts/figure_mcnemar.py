"""Heatmap of Holm-corrected McNemar p-values between a run's checkpoints."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent / "src"))

import pandas as pd

from knowlab.figures import plot_mcnemar
from knowlab.provenance import rule_step

with rule_step(snakemake):
    table = pd.read_parquet(snakemake.input.table)
    suite = table["suite"].iloc[0]
    plot_mcnemar(table, f"McNemar tests between checkpoints ({suite} acc)", snakemake.output.pdf, snakemake.output.png)

"""Draw samples seen and epochs completed per source for every run (paper Fig. 2)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent / "src"))

import pandas as pd

from knowlab import figures
from knowlab.provenance import rule_step

with rule_step(snakemake):
    logs = pd.concat([pd.read_parquet(p) for p in snakemake.input.train_logs], ignore_index=True)
    figures.plot_mixture(logs, snakemake.output.pdf, snakemake.output.png)

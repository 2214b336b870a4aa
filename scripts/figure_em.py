"""EM of the last N tokens vs fiction epochs completed (paper Fig. 3, right)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent / "src"))

import pandas as pd

from knowlab.figures import plot_em
from knowlab.provenance import rule_step

with rule_step(snakemake):
    run = snakemake.wildcards.run
    summary, train_log = pd.read_csv(snakemake.input.summary), pd.read_parquet(snakemake.input.train_log)
    plot_em(summary, train_log, run, snakemake.params.em_tokens, snakemake.output.pdf, snakemake.output.png)

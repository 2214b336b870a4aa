"""Fiction loss on train/val documents and held-out webtext loss vs step (paper Figs. 4-5)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent / "src"))

import pandas as pd

from knowlab.figures import plot_loss
from knowlab.provenance import rule_step

with rule_step(snakemake):
    run = snakemake.wildcards.run
    summary = pd.read_csv(snakemake.input.summary)
    plot_loss(summary, run, snakemake.params.control, snakemake.output.pdf, snakemake.output.png)

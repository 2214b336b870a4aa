"""Draw samples seen and epochs completed per source for every run (paper Fig. 2)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent / "src"))

from knowlab import figures
from knowlab.io import read_parquets
from knowlab.provenance import rule_step

with rule_step(snakemake):
    logs = read_parquets(snakemake.input.train_logs)
    figures.plot_mixture(logs, snakemake.output.pdf, snakemake.output.png)

"""MCQ accuracy vs step, train-/val-document questions, fiction run vs control (paper Figs. 7, 10)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent / "src"))

import pandas as pd

from knowlab.figures import plot_mcq
from knowlab.provenance import rule_step

with rule_step(snakemake):
    run, params = snakemake.wildcards.run, snakemake.params
    summary = pd.read_csv(snakemake.input.summary)
    plot_mcq(summary, run, params.control, params.suite, snakemake.output.pdf, snakemake.output.png)

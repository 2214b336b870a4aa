"""Draw the p-value matrix of one paired-test table (McNemar or paired t-test)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent / "src"))

import pandas as pd

from knowlab.core.plotting import plot_pvalue_matrix
from knowlab.core.provenance import rule_step
from knowlab.core.probe import run_name

with rule_step(snakemake):
    table = pd.read_parquet(snakemake.input.table)
    suite = snakemake.wildcards.suite
    title = f"{run_name(snakemake.wildcards.run)}: MCQ-{suite.removeprefix('mcq')}"
    plot_pvalue_matrix(
        table, title, snakemake.output.pdf, snakemake.output.png, note=snakemake.params.note, run_label=run_name
    )

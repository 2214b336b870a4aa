"""Draw the p-value matrix of one paired-test table (McNemar or paired t-test)."""

import pandas as pd

from knowlab.core.provenance import rule_step
from knowlab.fictionalqa.steps import figures

with rule_step(snakemake):
    figures.draw_pvalues(
        pd.read_parquet(snakemake.input.table), snakemake.wildcards.run, snakemake.wildcards.suite,
        snakemake.output.pdf, snakemake.output.png, note=snakemake.params.note,
    )  # fmt: skip

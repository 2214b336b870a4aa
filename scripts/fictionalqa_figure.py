"""Draw one FictionalQA paper figure family from the study summary (and the training logs)."""

import pandas as pd

from knowlab.core.io import read_parquets
from knowlab.core.provenance import rule_step
from knowlab.fictionalqa.steps import figures

with rule_step(snakemake) as log:
    family, params = snakemake.params.family, snakemake.params
    curves = figures.draw_family(
        family, pd.read_csv(snakemake.input.summary), read_parquets(snakemake.input.train_logs),
        snakemake.output.pdf, snakemake.output.png, model=params.model, note=params.note,
    )  # fmt: skip
    log.info("%s: %d points in %d series", family, len(curves), curves["series"].nunique())

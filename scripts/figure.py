"""Draw one FictionalQA paper figure family from the study summary (and the training logs)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent / "src"))

import pandas as pd

from knowlab.core.io import read_parquets
from knowlab.core.provenance import rule_step
from knowlab.fictionalqa.figures import curves_from_summary, curves_from_train_logs, plot_family

with rule_step(snakemake) as log:
    family, params = snakemake.params.family, snakemake.params
    if family == "fig2":
        curves = curves_from_train_logs(read_parquets(snakemake.input.train_logs))
    else:
        curves = curves_from_summary(pd.read_csv(snakemake.input.summary), family, model=params.model)
    plot_family(family, curves, snakemake.output.pdf, snakemake.output.png, note=params.note)
    log.info("%s: %d points in %d series", family, len(curves), curves["series"].nunique())

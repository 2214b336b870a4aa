"""Draw one FictionalQA figure family across the base models, from every model's study summary."""

import pandas as pd

from knowlab.core.provenance import rule_step
from knowlab.fictionalqa.steps import figures

with rule_step(snakemake) as log:
    params = snakemake.params
    summaries = pd.concat(
        [pd.read_csv(path).assign(model=name) for name, path in zip(params.models, snakemake.input.summaries)],
        ignore_index=True,
    )
    curves = figures.draw_across_models(
        params.family, summaries, params.models, snakemake.output.pdf, snakemake.output.png, note=params.note
    )
    log.info("%s across %d models: %d points in %d series", params.family, len(params.models), len(curves),
             curves["series"].nunique())  # fmt: skip

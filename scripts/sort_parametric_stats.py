"""SORT after parametric-memory fine-tuning: McNemar and t-test matrices (Figs. 14-15), Figs. 12, 13, 16."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent / "src"))

import pandas as pd

from knowlab.core.io import read_parquets, write_parquet
from knowlab.core.provenance import rule_step
from knowlab.sort import analysis, plots

FIGURES = {"fig12": "perplexity", "fig13": "accuracy", "fig16": "score"}

with rule_step(snakemake) as log:
    params, out = snakemake.params, snakemake.output
    base = read_parquets(snakemake.input.base).assign(epoch=0.0)
    rows = pd.concat([base, read_parquets(snakemake.input.rows)], ignore_index=True)
    write_parquet(out.rows, rows)
    nll = read_parquets(snakemake.input.nll)
    summary = rows.groupby(["run", "epoch", "condition"])["correct"].agg(["mean", "size"])
    log.info("accuracy by run, epoch and condition:\n%s", summary)
    keys, labels = analysis.finetune_keys(rows, condition="baseline")
    figure = dict(zip(("fig12", "fig13", "fig14", "fig15", "fig16"), range(5)))
    paths = {name: (out.figures[2 * i], out.figures[2 * i + 1]) for name, i in figure.items()}
    for test, fig in (("mcnemar", "fig14"), ("ttest", "fig15")):
        table = analysis.condition_matrix(rows, keys, test, params.alternative, labels=labels)
        write_parquet(getattr(out, test), table)
        name = {"mcnemar": "McNemar's test on correctness", "ttest": "paired t-test on the score"}[test]
        plots.plot_matrix(table, f"SORT without context after fine-tuning: {name}", *paths[fig], model=params.model)
    for name, metric in FIGURES.items():
        plots.plot_across_epochs(
            nll if metric == "perplexity" else rows, *paths[name], metric=metric, model=params.model
        )

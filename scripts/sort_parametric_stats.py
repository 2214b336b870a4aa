"""SORT after parametric-memory fine-tuning: McNemar and t-test matrices (Figs. 14-15), Figs. 12, 13, 16."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent / "src"))

import pandas as pd

from knowlab.core.io import read_parquets, write_parquet
from knowlab.core.provenance import rule_step
from knowlab.sort import analysis
from knowlab.sort.finetune_plots import plot_across_epochs
from knowlab.sort.matrix_plots import plot_matrix
from knowlab.sort.answers import answer_note

MATRICES = {"mcnemar": ("fig14", "McNemar's test on correctness"), "ttest": ("fig15", "paired t-test on the score")}
ACROSS_EPOCHS = {"fig12": "perplexity", "fig13": "accuracy", "fig16": "score"}


def figure(name):
    """The (pdf, png) outputs of figure ``name``."""
    return getattr(snakemake.output, f"{name}_pdf"), getattr(snakemake.output, f"{name}_png")


with rule_step(snakemake) as log:
    params, out = snakemake.params, snakemake.output
    base = read_parquets(snakemake.input.base).assign(epoch=0.0)
    rows = pd.concat([base, read_parquets(snakemake.input.rows)], ignore_index=True)
    write_parquet(out.rows, rows)
    nll = read_parquets(snakemake.input.nll)
    summary = rows.groupby(["run", "epoch", "condition"])["correct"].agg(["mean", "size"])
    log.info("accuracy by run, epoch and condition:\n%s", summary)
    for test, table in analysis.parametric_tests(rows, params.alternative).items():
        write_parquet(getattr(out, test), table)
        name, what = MATRICES[test]
        note = answer_note(rows) if test == "mcnemar" else None  # correctness depends on the answer rule
        title = f"SORT without context after fine-tuning: {what}"
        plot_matrix(table, title, *figure(name), model=params.model, note=note)
    for name, metric in ACROSS_EPOCHS.items():
        plot_across_epochs(
            nll if metric == "perplexity" else rows, *figure(name), metric=metric, model=params.model
        )

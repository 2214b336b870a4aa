"""SORT after parametric-memory fine-tuning: Figs. 12, 13, 16 by epoch and the matrices of Figs. 14-15, drawn from
the stats rule's rows and tables and the segments' perplexity."""

from knowlab.core.io import read_parquets
from knowlab.core.provenance import rule_step
from knowlab.core.stats import StatsSettings
from knowlab.sort.settings import EPOCH_FIGURES
from knowlab.sort.steps import figures

with rule_step(snakemake):
    inputs = snakemake.input
    figures.parametric_figures(
        read_parquets([inputs.rows]),
        read_parquets(inputs.nll),
        {"mcnemar": read_parquets([inputs.mcnemar]), "ttest": read_parquets([inputs.ttest])},
        {name: read_parquets([path]) for name, path in zip(EPOCH_FIGURES, inputs.bands, strict=True)},
        dict(snakemake.output.items()),
        model=snakemake.params.model,
        stats=StatsSettings.from_param(snakemake.params.stats),
    )

"""SORT on the fiction documents: accuracy per checkpoint and train/val side, from the rows of sort_fiction_stats."""

from knowlab.core.io import read_parquets
from knowlab.core.provenance import rule_step
from knowlab.core.stats import StatsSettings
from knowlab.sort.steps import figures

with rule_step(snakemake):
    out = snakemake.output
    params = snakemake.params
    figures.fiction_figure(
        read_parquets([snakemake.input.rows]), read_parquets([snakemake.input.bands]), out.pdf, out.png,
        model=params.model, stats=StatsSettings.from_param(params.stats),
    )  # fmt: skip

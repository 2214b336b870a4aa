"""Grounding tables (Tables 1, 8-12 and the tables of the figures; CSV + LaTeX) of every dataset and model."""

from knowlab.core.io import read_parquets, write_parquet
from knowlab.core.provenance import rule_step
from knowlab.core.stats import StatsSettings
from knowlab.grounding.settings import GroundingTablesSettings
from knowlab.grounding.steps import stats

with rule_step(snakemake, seed=snakemake.params.stats["seed"]) as log:
    rows = read_parquets(snakemake.input.scores)
    write_parquet(snakemake.output.rows, rows)
    stats.tables(
        rows,
        snakemake.output.tables,
        GroundingTablesSettings.from_param(snakemake.params.settings),
        StatsSettings.from_param(snakemake.params.stats),
    )

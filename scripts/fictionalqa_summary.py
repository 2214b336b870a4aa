"""Aggregate every run's item tables by each split's train/val sides (one study table)."""

from knowlab.core.io import read_json, read_parquets, write_csv
from knowlab.core.provenance import rule_step
from knowlab.core.stats import StatsSettings
from knowlab.fictionalqa.steps import stats

with rule_step(snakemake) as log:
    summary = stats.summary(
        read_parquets(snakemake.input.item_tables),
        snakemake.params.runs,
        [read_json(path) for path in snakemake.input.splits],
        read_parquets(snakemake.input.train_logs),
        StatsSettings.from_param(snakemake.params.stats),
    )
    write_csv(snakemake.output.summary, summary)
    log.info("summary: %d rows over %d splits", len(summary), summary["split"].nunique())

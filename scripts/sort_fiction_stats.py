"""SORT on the fiction documents: rows with train/val sides, binomial tests, McNemar / t-test matrices."""

from pathlib import Path

from knowlab.core.io import read_json, read_jsonl, read_parquets, write_parquet
from knowlab.core.provenance import rule_step
from knowlab.core.stats import StatsSettings
from knowlab.sort.steps import stats

with rule_step(snakemake):
    params, inputs, out = snakemake.params, snakemake.input, snakemake.output
    rows, binomial, bands = stats.fiction_stats(
        read_parquets(inputs.rows),
        read_parquets([inputs.base]),
        {Path(p).stem: read_json(p) for p in inputs.splits},  # each run's split, by run
        read_jsonl(inputs.fictions),
        out.tests,
        runs=params.runs,
        control=params.control,
        steps=params.steps,
        stats=StatsSettings.from_param(params.stats),
    )
    write_parquet(out.rows, rows)
    write_parquet(out.binomial, binomial)
    write_parquet(out.bands, bands)

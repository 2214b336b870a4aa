"""SORT tables (paper Tables 1-2), binomial tests against chance, and McNemar / t-test matrices across conditions."""

from knowlab.core.io import read_parquets, write_parquet
from knowlab.core.provenance import rule_step
from knowlab.core.stats import StatsSettings
from knowlab.sort.settings import CONDITION_FIGURES
from knowlab.sort.steps import stats

with rule_step(snakemake):
    params, out = snakemake.params, snakemake.output
    binomial, tests, bands = stats.condition_stats(
        read_parquets(snakemake.input.rows), out.tables, params.models, params.conditions,
        StatsSettings.from_param(params.stats),
    )  # fmt: skip
    write_parquet(out.binomial, binomial)
    for name, path in zip(CONDITION_FIGURES, out.bands, strict=True):  # each banded figure's points
        write_parquet(path, bands[name])
    for model_tests, mcnemar, ttest in zip(tests, out.mcnemar, out.ttest, strict=True):  # one of each per model
        write_parquet(mcnemar, model_tests["mcnemar"])
        write_parquet(ttest, model_tests["ttest"])

"""McNemar and paired t-test tables of one run on one MCQ suite (step 0 of every run is the base model)."""

from knowlab.core.io import read_parquets, write_parquet
from knowlab.core.provenance import rule_step
from knowlab.core.stats import StatsSettings
from knowlab.fictionalqa.steps import stats

with rule_step(snakemake) as log:
    settings = StatsSettings.from_param(snakemake.params.stats)
    run, suite = snakemake.wildcards.run, snakemake.wildcards.suite
    tables = stats.paired_tests(
        read_parquets(snakemake.input.item_tables), snakemake.params.runs, run, snakemake.params.control, suite,
        settings,
    )  # fmt: skip
    for test, table in tables.items():
        write_parquet(snakemake.output[test], table)
        significant = int((table["pvalue_holm"] < 0.05).sum())
        log.info("%s %s on %s: %d pairs, %d with Holm-corrected p < 0.05", test, run, suite, len(table), significant)

"""SORT tables (paper Tables 1-2), binomial tests against chance, and McNemar / t-test matrices across conditions."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent / "src"))

from knowlab.core.io import read_parquets, write_parquet
from knowlab.core.provenance import rule_step
from knowlab.sort.steps import stats

with rule_step(snakemake):
    params, out = snakemake.params, snakemake.output
    binomial, tests = stats.condition_stats(
        read_parquets(snakemake.input.rows), out.tables, params.models, params.conditions,
        alternative=params.alternative, exact_below=params.exact_below, n_resamples=params.bootstrap_resamples,
        seed=params.seed,
    )  # fmt: skip
    write_parquet(out.binomial, binomial)
    for model_tests, mcnemar, ttest in zip(tests, out.mcnemar, out.ttest, strict=True):  # one of each per model
        write_parquet(mcnemar, model_tests["mcnemar"])
        write_parquet(ttest, model_tests["ttest"])

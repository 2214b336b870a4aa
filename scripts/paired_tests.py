"""McNemar and paired t-test tables of one run on one MCQ suite (step 0 of every run is the base model)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent / "src"))

from knowlab.core.checkpoints import with_step0
from knowlab.core.io import read_parquets, write_parquet
from knowlab.core.provenance import rule_step
from knowlab.fictionalqa.settings import PairedTestSettings
from knowlab.fictionalqa.stats import mcnemar_for_run, ttest_for_run

with rule_step(snakemake) as log:
    settings = PairedTestSettings.from_param(snakemake.params.settings)
    run, suite = snakemake.wildcards.run, snakemake.wildcards.suite
    items = with_step0(read_parquets(snakemake.input.item_tables), snakemake.params.runs)
    tables = {
        "mcnemar": mcnemar_for_run(items, run, snakemake.params.control, suite, settings.mcnemar_exact_below),
        "ttest": ttest_for_run(items, run, snakemake.params.control, suite, settings.ttest_alternative),
    }
    for test, table in tables.items():
        write_parquet(snakemake.output[test], table)
        significant = int((table["pvalue_holm"] < 0.05).sum())
        log.info("%s %s on %s: %d pairs, %d with Holm-corrected p < 0.05", test, run, suite, len(table), significant)

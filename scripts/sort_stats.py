"""SORT tables (paper Tables 1-2), binomial tests against chance, and McNemar / t-test matrices across conditions."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent / "src"))

from knowlab.core.io import atomic_dir, read_parquets, write_parquet
from knowlab.core.provenance import rule_step
from knowlab.core.tables import write_table
from knowlab.sort import analysis

with rule_step(snakemake) as log:
    params = snakemake.params
    rows = read_parquets(snakemake.input.rows)
    with atomic_dir(snakemake.output.tables) as folder:
        for table in analysis.tables(rows, params.bootstrap_resamples, params.seed).values():
            write_table(table.wide, folder / f"{table.name}.csv", folder / f"{table.name}.tex", table.caption)
            table.long.to_csv(folder / f"{table.name}_long.csv", index=False)
            log.info("%s\n%s", table.name, table.wide.to_string())
    by = ["model", "condition", "segment_length", "distance_bin"]
    write_parquet(snakemake.output.binomial, analysis.binomial_tests(rows, by=by))
    for model, mcnemar, ttest in zip(params.models, snakemake.output.mcnemar, snakemake.output.ttest, strict=True):
        tables = analysis.condition_tests(rows, model, params.conditions, params.alternative)
        write_parquet(mcnemar, tables["mcnemar"])
        write_parquet(ttest, tables["ttest"])

"""McNemar tests between every pair of a run's checkpoints and against the control at matched steps."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent / "src"))

from knowlab.io import read_parquets, write_parquet
from knowlab.provenance import rule_step
from knowlab.stats import mcnemar_for_run

with rule_step(snakemake) as log:
    params = snakemake.params
    items = read_parquets(snakemake.input.item_tables)
    table = mcnemar_for_run(items, snakemake.wildcards.run, params.control, params.suite, params.cfg["mcnemar_exact_below"])
    write_parquet(snakemake.output.table, table)
    log.info("McNemar: %d pairs, %d with Holm-corrected p < 0.05", len(table), int((table["pvalue_holm"] < 0.05).sum()))

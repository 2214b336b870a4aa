"""The base models FictionalQA fine-tunes, with their parameter counts (one table)."""

from knowlab.core.io import write_csv
from knowlab.core.provenance import rule_step
from knowlab.fictionalqa.steps import data

with rule_step(snakemake) as log:
    table = data.models_table(snakemake.params.names, snakemake.input.models, snakemake.params.sources)
    write_csv(snakemake.output.table, table)
    log.info("base models:\n%s", table.to_string(index=False))

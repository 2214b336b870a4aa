"""Load the fiction corpus (shipped, released or generated), validate it, write it out."""

from knowlab.core.provenance import checkout_root, rule_step
from knowlab.fiction.settings import FictionCorpusSettings
from knowlab.fictionalqa.steps import data

with rule_step(snakemake) as log:
    settings = FictionCorpusSettings.from_param(snakemake.params.settings)
    tables = data.fiction_tables(settings, checkout_root(), snakemake.input)
    data.write_fiction(snakemake.params.outdir, tables)
    log.info("fiction corpus: %s", {k: len(v) for k, v in tables.items()})

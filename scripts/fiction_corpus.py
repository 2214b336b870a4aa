"""Load the fiction corpus (shipped, released or generated), validate it, write it out."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent / "src"))

from knowlab.core.provenance import rule_step
from knowlab.fictionalqa.corpus.fiction import load_fiction
from knowlab.fictionalqa.corpus.schema import write_corpus
from knowlab.fictionalqa.settings import FictionCorpusSettings

with rule_step(snakemake) as log:
    settings = FictionCorpusSettings.from_param(snakemake.params.settings)
    generated = Path(snakemake.input[0]).parent if settings.source == "generate" else None
    tables = load_fiction(settings, snakemake.params.basedir, generated)
    write_corpus(snakemake.params.outdir, tables)
    log.info("fiction corpus: %s", {k: len(v) for k, v in tables.items()})

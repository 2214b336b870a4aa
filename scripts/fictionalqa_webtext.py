"""Verify gensim's packaged Wikipedia and Lee corpora and split their paragraphs."""

from knowlab.core.io import write_jsonl
from knowlab.core.provenance import rule_step
from knowlab.fictionalqa.settings import WebtextSettings
from knowlab.fictionalqa.steps import data

with rule_step(snakemake) as log:
    settings = WebtextSettings.from_param(snakemake.params.settings)
    train, heldout = data.webtext_paragraphs(settings, snakemake.params.seed)
    write_jsonl(snakemake.output.train, train)
    write_jsonl(snakemake.output.heldout, heldout)
    log.info("webtext: %d train, %d held-out paragraphs", len(train), len(heldout))

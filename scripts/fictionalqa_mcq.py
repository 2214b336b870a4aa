"""Build the n-choice MCQ items of every fictional question."""

import pandas as pd

from knowlab.core.io import read_jsonl, write_jsonl
from knowlab.core.provenance import rule_step
from knowlab.fictionalqa.settings import McqSettings
from knowlab.fictionalqa.steps import data

with rule_step(snakemake) as log:
    settings = McqSettings.from_param(snakemake.params.settings)
    ranking = pd.read_parquet(snakemake.input.ranking) if snakemake.input.get("ranking") else None
    items = data.mcq_items(
        read_jsonl(snakemake.input.fict_qa), int(snakemake.wildcards.n), snakemake.params.seed, settings, ranking
    )
    write_jsonl(snakemake.output.mcq, items)
    log.info(
        "MCQ-%s: %d items, %s distractors (gold outside the ranked top n: evict %s)",
        snakemake.wildcards.n, len(items), settings.distractors, settings.evict,
    )  # fmt: skip

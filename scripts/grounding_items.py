"""Grounding items of one dataset (Original and Conflict versions) and its distractor document pool."""

from pathlib import Path

from knowlab.core.io import write_jsonl
from knowlab.core.provenance import rule_step
from knowlab.grounding.settings import GroundingItemsSettings
from knowlab.grounding.steps import data

with rule_step(snakemake, seed=snakemake.params.seed) as log:
    items, pool = data.make_items(
        snakemake.wildcards.dataset,
        GroundingItemsSettings.from_param(snakemake.params.settings),
        dict(snakemake.input.items()),
        snakemake.params.seed,
        cache_dir=Path(snakemake.output.pool).parent / "download",
        timeout=snakemake.config["grounding"]["kaist"]["timeout_s"],  # no result depends on it: in no settings
    )
    write_jsonl(snakemake.output.grounding_items, items)
    write_jsonl(snakemake.output.pool, pool)

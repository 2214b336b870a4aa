"""Atomic facts of every response and their precision / recall / F1 against the gold contexts and facts."""

import torch

from knowlab.core.io import read_jsonl, write_parquet
from knowlab.core.provenance import rule_step
from knowlab.grounding.settings import GroundingScoreSettings
from knowlab.grounding.steps import data

torch.set_num_threads(snakemake.threads)
with rule_step(snakemake) as log:
    server = snakemake.config["grounding"]["decomposer"]["openai"]  # the client's keys: no result depends on them
    rows = data.score(
        read_jsonl(snakemake.input.responses),
        GroundingScoreSettings.from_param(snakemake.params.settings),
        snakemake.input.decomposer,
        snakemake.output.facts,
        snakemake.params.cache,
        snakemake.params.request_cache,
        snakemake.params.model_label,
        client=data.client_options(server),
    )
    write_parquet(snakemake.output.table, rows)

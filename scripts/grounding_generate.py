"""Responses of one model or checkpoint to the grounding questions under each condition's contexts."""

import torch

from knowlab.core.io import read_jsonl, read_parquets, write_jsonl
from knowlab.core.provenance import rule_step
from knowlab.grounding.settings import GroundingGenerateSettings
from knowlab.grounding.steps import data

torch.set_num_threads(snakemake.threads)
with rule_step(snakemake, seed=snakemake.params.seed) as log:
    params = snakemake.params
    path = params.get("checkpoint") or snakemake.input.model
    server = snakemake.config["grounding"]["generation"]["openai"]  # the client's keys: no result depends on them
    records = data.respond(
        path,
        read_jsonl(snakemake.input.grounding_items),
        read_jsonl(snakemake.input.pool),
        read_parquets([snakemake.input.distractors]),
        GroundingGenerateSettings.from_param(params.settings),
        params.seed,
        tags={"model": params.model, "run": params.run, "step": params.step, "checkpoint": str(path)},
        served_key=params.served_key,
        request_cache=params.request_cache,
        client=data.client_options(server),
    )
    write_jsonl(snakemake.output.responses, records)

"""Rank every candidate alternate answer of every question with a model (paper App. C.6).

Finished shards are kept in ``params.shards`` (no rule output, so a killed job keeps them) and
read back by the re-run; the folder is removed once the ranking is written.
"""

import torch

from knowlab.core.io import read_jsonl, write_parquet
from knowlab.core.provenance import rule_step
from knowlab.fictionalqa.settings import RankerSettings
from knowlab.fictionalqa.steps import data

torch.set_num_threads(snakemake.threads)
with rule_step(snakemake) as log:
    settings = RankerSettings.from_param(snakemake.params.settings)
    batch_size = snakemake.config["mcq"]["ranker"]["batch_size"]  # not a result key: not a param
    model_path = snakemake.input.get("model") or settings.model
    log.info(
        "ranker model %s, candidates per question: %s, BOS policy: %s, batch size %d",
        model_path, settings.max_candidates or "every answer", settings.bos, batch_size,
    )  # fmt: skip
    fict_qa = read_jsonl(snakemake.input.fict_qa)
    shards = data.ranking_shards(snakemake.params.shards, model_path, fict_qa, settings, snakemake.params.seed)
    ranking = data.rank_distractors(
        model_path, fict_qa, settings, seed=snakemake.params.seed, batch_size=batch_size, shards=shards
    )
    write_parquet(snakemake.output.ranking, ranking)
    shards.remove()

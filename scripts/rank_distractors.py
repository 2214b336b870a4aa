"""Rank every candidate alternate answer of every question with a model (paper App. C.6).

Finished shards are kept in ``params.shards`` (no rule output, so a killed job keeps them) and
read back by the re-run; the folder is removed once the ranking is written.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent / "src"))

import torch

from knowlab.core.io import read_jsonl, write_parquet
from knowlab.core.models import load_model
from knowlab.core.provenance import rule_step
from knowlab.fictionalqa.corpus.mcq import RANKER_TEMPLATE, rank_candidates, ranking_shards
from knowlab.fictionalqa.settings import RankerSettings

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
    shards = ranking_shards(snakemake.params.shards, model_path, fict_qa, settings, snakemake.params.seed)
    model, tokenizer = load_model(model_path)
    ranking = rank_candidates(
        model,
        tokenizer,
        fict_qa,
        seed=snakemake.params.seed,
        template=settings.template or RANKER_TEMPLATE,
        max_candidates=settings.max_candidates,
        batch_size=batch_size,
        shard_questions=settings.shard_questions,
        shards=shards,
        order=settings.order,
        bos=settings.bos,
    )
    write_parquet(snakemake.output.ranking, ranking)
    shards.remove()

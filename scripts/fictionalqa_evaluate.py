"""Evaluate one checkpoint on every suite; write item-level rows."""

import torch

from knowlab.core.io import read_jsonl, write_parquet
from knowlab.core.provenance import rule_step
from knowlab.fictionalqa.settings import EvaluateSettings
from knowlab.fictionalqa.steps import data

torch.set_num_threads(snakemake.threads)
with rule_step(snakemake) as log:
    settings, params = EvaluateSettings.from_param(snakemake.params.settings), snakemake.params
    log.info("evaluating checkpoint %s", params.checkpoint)
    table = data.checkpoint_rows(
        params.checkpoint,
        settings,
        fictions=read_jsonl(snakemake.input.fictions),
        fictsheets=read_jsonl(snakemake.input.fictsheets),
        webtext=read_jsonl(snakemake.input.webtext),
        fict_qa=read_jsonl(snakemake.input.fict_qa),
        real_qa=read_jsonl(snakemake.input.real_qa),
        mcq=[item for path in snakemake.input.mcq for item in read_jsonl(path)],
        batch_size=snakemake.config["evaluate"]["batch_size"],  # not a result key: not a param
        run=params.run,
        step=params.step,
        model_name=params.model,
    )
    write_parquet(snakemake.output.table, table)

"""Evaluate one checkpoint on every suite; write item-level rows."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent / "src"))

import torch

from knowlab.core.io import read_jsonl, write_parquet
from knowlab.core.models import load_model
from knowlab.core.provenance import rule_step
from knowlab.fictionalqa.settings import EvaluateSettings
from knowlab.fictionalqa.suites import evaluate_checkpoint

torch.set_num_threads(snakemake.threads)
with rule_step(snakemake) as log:
    settings, params = EvaluateSettings.from_param(snakemake.params.settings), snakemake.params
    log.info("evaluating checkpoint %s", params.checkpoint)
    model, tokenizer = load_model(params.checkpoint)
    table = evaluate_checkpoint(
        model,
        tokenizer,
        fictions=read_jsonl(snakemake.input.fictions),
        fictsheets=read_jsonl(snakemake.input.fictsheets),
        webtext=read_jsonl(snakemake.input.webtext),
        fict_qa=read_jsonl(snakemake.input.fict_qa),
        real_qa=read_jsonl(snakemake.input.real_qa),
        mcq=[item for path in snakemake.input.mcq for item in read_jsonl(path)],
        em_tokens=list(settings.em_tokens),
        batch_size=snakemake.config["evaluate"]["batch_size"],  # not a result key: not a param
        mcq_template=settings.mcq_template,
        qa_template=settings.qa_template,
        max_documents=settings.max_documents,
        documents=settings.documents,
    )
    table.insert(0, "checkpoint", str(params.checkpoint))
    table.insert(0, "step", params.step)
    table.insert(0, "run", params.run)
    write_parquet(snakemake.output.table, table)

"""Fine-tune one run (a split's fiction mixed into webtext, or the webtext-only control)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent / "src"))

import torch

from knowlab.core.train import finetune
from knowlab.core.io import read_json, read_jsonl, write_parquet
from knowlab.core.provenance import rule_step
from knowlab.fictionalqa.splits import training_texts

torch.set_num_threads(snakemake.threads)
with rule_step(snakemake):
    fiction = []
    if snakemake.input.get("split"):
        split = read_json(snakemake.input.split)
        table = split["documents"]
        fiction = training_texts(split, {table: read_jsonl(snakemake.input[table])})
    log_table = finetune(
        base_model=snakemake.input.model,
        out_dir=snakemake.output.checkpoints,
        run=snakemake.wildcards.run,
        fiction_texts=fiction,
        webtext_texts=[r["text"] for r in read_jsonl(snakemake.input.webtext)],
        cfg=snakemake.params.cfg,
        seed=snakemake.params.seed,
    )
    write_parquet(snakemake.output.train_log, log_table)

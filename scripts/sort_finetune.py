"""Fine-tune one SORT parametric-memory run (text chunks + instructions, or instructions alone); a checkpoint per epoch."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent / "src"))

import torch

from knowlab.core.io import atomic_dir, read_json, write_parquet
from knowlab.core.provenance import rule_step
from knowlab.sort.parametric import finetune_parametric_run

torch.set_num_threads(snakemake.threads)
with rule_step(snakemake):
    params = snakemake.params
    with atomic_dir(snakemake.output.checkpoints) as folder:
        train_log = finetune_parametric_run(
            snakemake.wildcards.prun,
            read_json(snakemake.input.texts),
            snakemake.input.model,
            folder,
            params.finetune,
            params.cfg,
            params.seed,
        )
    write_parquet(snakemake.output.train_log, train_log)

"""Fine-tune one run through the project's DeepSpeed trainer, by its study's recipe: a FictionalQA
run (a split's fiction mixed into webtext, or the webtext-only control) or a SORT parametric-memory
run (text chunks + instructions, or instructions alone; a checkpoint per epoch)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent / "src"))

import torch

from knowlab.core.io import write_parquet
from knowlab.core.provenance import rule_step
from knowlab.fictionalqa.training import finetune_run
from knowlab.sort.finetune import finetune_parametric_run

RECIPES = {"fictionalqa": finetune_run, "sort_parametric": finetune_parametric_run}

torch.set_num_threads(snakemake.threads)
with rule_step(snakemake):
    params = snakemake.params
    train_log = RECIPES[params.recipe](
        params.run, dict(snakemake.input), snakemake.output.checkpoints, params.cfg, params.parametric, params.seed
    )
    write_parquet(snakemake.output.train_log, train_log)

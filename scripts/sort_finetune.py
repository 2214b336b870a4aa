"""Fine-tune one SORT parametric-memory run (text chunks + instructions, or instructions alone); a checkpoint per epoch."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent / "src"))

import torch

from knowlab.finetune.train import finetune
from knowlab.io import atomic_dir, read_json, write_parquet
from knowlab.provenance import rule_step

torch.set_num_threads(snakemake.threads)
with rule_step(snakemake) as log:
    run, params = snakemake.wildcards.prun, snakemake.params
    texts = read_json(snakemake.input.texts)
    per_epoch = texts["steps_per_epoch"][run]
    cfg = {
        **params.finetune,
        **params.cfg["finetune"],
        "fiction_rate": texts["fiction_rate"] if run == "books" else 0.0,
        "fiction_warmup_steps": 0,
        "max_steps": per_epoch * params.cfg["epochs"],
        "checkpoint_every": per_epoch,
    }
    with atomic_dir(snakemake.output.checkpoints) as folder:
        train_log = finetune(
            base_model=snakemake.input.model,
            out_dir=folder / "steps",
            run=run,
            fiction_texts=texts["books"] if run == "books" else [],
            webtext_texts=texts["instructions"],
            cfg=cfg,
            seed=params.seed,
        )
        for epoch in range(params.cfg["epochs"] + 1):  # step-<epoch * per_epoch> -> epoch-<epoch>
            (folder / "steps" / f"step-{epoch * per_epoch}").rename(folder / f"epoch-{epoch}")
        log.info(
            "%d steps per epoch, %d epochs: checkpoints epoch-0 .. epoch-%d",
            per_epoch,
            params.cfg["epochs"],
            params.cfg["epochs"],
        )
    train_log["epoch"] = train_log["step"] / per_epoch
    write_parquet(snakemake.output.train_log, train_log)

"""A run's training log: its checkpoints' logs, in training order, one row per optimizer step."""

from knowlab.core.io import read_parquets, write_parquet
from knowlab.core.provenance import rule_step

with rule_step(snakemake) as log:
    train_log = read_parquets(snakemake.input.logs)
    write_parquet(snakemake.output.train_log, train_log)
    log.info("%d steps, from %d checkpoints' logs", len(train_log), len(snakemake.input.logs))

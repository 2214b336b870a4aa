"""McNemar tests between every pair of a run's checkpoints and against the control at matched steps."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent / "src"))

import pandas as pd

from knowlab.io import write_parquet
from knowlab.provenance import rule_step
from knowlab.stats import checkpoint_pairs, matched_pairs, mcnemar_table

with rule_step(snakemake) as log:
    run, control, suite = snakemake.wildcards.run, snakemake.params.control, snakemake.params.suite
    items = pd.concat([pd.read_parquet(p) for p in snakemake.input.item_tables], ignore_index=True)
    correct = items[items["suite"] == suite][["run", "step", "item_id", "acc"]].rename(columns={"acc": "correct"})
    steps = sorted(correct["step"].unique().tolist())
    pairs = checkpoint_pairs(steps, run)
    if run != control:
        pairs += matched_pairs(steps, run, control)
    table = mcnemar_table(correct, pairs, snakemake.params.cfg["mcnemar_exact_below"]).assign(suite=suite, metric="acc")
    write_parquet(snakemake.output.table, table)
    log.info("McNemar: %d pairs, %d with Holm-corrected p < 0.05", len(table), int((table["pvalue_holm"] < 0.05).sum()))

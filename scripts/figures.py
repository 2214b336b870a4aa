"""Draw the FictionalQA figures of one fiction run (and its control)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent / "src"))

import pandas as pd

from knowlab import figures
from knowlab.io import read_json
from knowlab.provenance import rule_step
from knowlab.summary import summarise

with rule_step(snakemake):
    run, control = snakemake.wildcards.run, snakemake.params.control
    split = read_json(snakemake.input.split)
    items = pd.concat([pd.read_parquet(p) for p in snakemake.input.item_tables], ignore_index=True)
    summary = summarise(items, split)
    train_log = pd.read_parquet(snakemake.input.train_log)
    out = snakemake.output
    figures.plot_loss(summary, run, control, run, out.loss_pdf, out.loss_png)
    figures.plot_em(summary, train_log, run, run, snakemake.params.em_tokens, out.em_pdf, out.em_png)
    figures.plot_mcq(summary, run, control, run, snakemake.params.suite, out.mcq_pdf, out.mcq_png)
    mcnemar = pd.read_parquet(snakemake.input.mcnemar)
    figures.plot_mcnemar(mcnemar, f"McNemar tests between checkpoints, {snakemake.params.suite} acc", out.mcnemar_pdf, out.mcnemar_png)
    summary.to_csv(out.summary, index=False)

"""Grounding on the fiction set across fine-tuning: rates per checkpoint and side, McNemar vs control, figure."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent / "src"))

import pandas as pd

from knowlab.core.checkpoints import step0_rows
from knowlab.core.io import read_json, read_jsonl, read_parquets, write_csv, write_parquet
from knowlab.core.provenance import rule_step
from knowlab.grounding import analysis, plots
from knowlab.sort.pipeline import with_sides

with rule_step(snakemake) as log:
    params = snakemake.params
    runs = [*params.runs, *([params.control] if params.control else [])]
    base = read_parquets([snakemake.input.base])
    rows = pd.concat([read_parquets(snakemake.input.scores), step0_rows(base, runs)], ignore_index=True)
    events = {d["fiction_id"]: d["event_id"] for d in read_jsonl(snakemake.input.fictions)}
    rows = with_sides(rows, {Path(p).stem: read_json(p) for p in snakemake.input.splits}, events)
    rows = analysis.follow_rates(rows, analysis.original_answers(rows))
    write_parquet(snakemake.output.rows, rows)
    rates = analysis.finetune_rates(rows)
    write_csv(snakemake.output.rates, rates)
    log.info("rates by run, step, side and condition:\n%s", rates.to_string())
    write_parquet(snakemake.output.mcnemar, analysis.finetune_mcnemar(rows, params.runs, params.control, params.steps))
    plots.plot_finetune(rates, snakemake.output.pdf, snakemake.output.png, model=params.model, runs=params.runs)

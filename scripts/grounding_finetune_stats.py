"""Grounding on the fiction set across fine-tuning: rates per checkpoint and side, McNemar vs control, figure."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent / "src"))

from knowlab.core.io import read_json, read_jsonl, read_parquets, write_csv, write_parquet
from knowlab.core.provenance import rule_step
from knowlab.fictionalqa.splits import across_finetuning
from knowlab.grounding import analysis, plots

with rule_step(snakemake) as log:
    params = snakemake.params
    rows = across_finetuning(
        read_parquets(snakemake.input.scores),
        read_parquets([snakemake.input.base]),
        [*params.runs, *([params.control] if params.control else [])],
        {Path(p).stem: read_json(p) for p in snakemake.input.splits},
        read_jsonl(snakemake.input.fictions),
    )
    rows = analysis.follow_rates(rows, analysis.original_answers(rows))
    write_parquet(snakemake.output.rows, rows)
    rates = analysis.finetune_rates(rows)
    write_csv(snakemake.output.rates, rates)
    log.info("rates by run, step, side and condition:\n%s", rates.to_string())
    write_parquet(snakemake.output.mcnemar, analysis.finetune_mcnemar(rows, params.runs, params.control, params.steps))
    plots.plot_finetune(rates, snakemake.output.pdf, snakemake.output.png, model=params.model, runs=params.runs)

"""Grounding on the fiction set across fine-tuning: rows with sides, rates per checkpoint, McNemar vs control."""

from pathlib import Path

from knowlab.core.io import read_json, read_jsonl, read_parquets, write_csv, write_parquet
from knowlab.core.provenance import rule_step
from knowlab.core.stats import StatsSettings
from knowlab.grounding.steps import stats

with rule_step(snakemake) as log:
    params = snakemake.params
    rows = stats.finetune_rows(
        read_parquets(snakemake.input.rows),
        read_parquets([snakemake.input.base]),
        params.runs,
        params.control,
        {Path(p).stem: read_json(p) for p in snakemake.input.splits},
        read_jsonl(snakemake.input.fictions),
    )
    write_parquet(snakemake.output.rows, rows)
    rates = stats.finetune_rates(rows)
    write_csv(snakemake.output.rates, rates)
    log.info("rates by run, step, side and condition:\n%s", rates.to_string())
    write_parquet(
        snakemake.output.mcnemar,
        stats.finetune_mcnemar(
            rows, params.runs, params.control, params.steps, StatsSettings.from_param(params.stats).mcnemar_exact_below
        ),
    )

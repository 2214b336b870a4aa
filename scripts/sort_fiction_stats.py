"""SORT on the fiction documents: rows with train/val sides, binomial tests, McNemar / t-test matrices, figure."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent / "src"))

import pandas as pd

from knowlab.core.checkpoints import step0_rows
from knowlab.core.io import atomic_dir, read_json, read_jsonl, read_parquets, write_parquet
from knowlab.core.provenance import rule_step
from knowlab.sort import analysis, plots
from knowlab.sort.pipeline import with_sides

with rule_step(snakemake) as log:
    params = snakemake.params
    runs = [*params.runs, *([params.control] if params.control else [])]
    base = read_parquets([snakemake.input.base])
    rows = pd.concat([read_parquets(snakemake.input.rows), step0_rows(base, runs)], ignore_index=True)
    events = {d["fiction_id"]: d["event_id"] for d in read_jsonl(snakemake.input.fictions)}
    rows = with_sides(rows, {Path(p).stem: read_json(p) for p in snakemake.input.splits}, events)
    write_parquet(snakemake.output.rows, rows)
    binomial = analysis.binomial_tests(rows.fillna({"side": "all"}), by=["run", "step", "side"])
    write_parquet(snakemake.output.binomial, binomial)
    log.info("accuracy by run, step and side:\n%s", binomial[["run", "step", "side", "n", "accuracy", "pvalue_holm"]])
    tests = analysis.fiction_tests(rows, params.runs, params.steps, params.control, params.alternative)
    with atomic_dir(snakemake.output.tests) as folder:
        for (run, test), table in tests.items():
            write_parquet(folder / f"{run}_{test}.parquet", table)
    plots.plot_fiction_sort(rows, snakemake.output.pdf, snakemake.output.png, model=params.model)

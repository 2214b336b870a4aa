"""SORT on the fiction documents: rows with train/val sides, binomial tests, McNemar / t-test matrices, figure."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent / "src"))

from knowlab.core.io import atomic_dir, read_json, read_jsonl, read_parquets, write_parquet
from knowlab.core.provenance import rule_step
from knowlab.fictionalqa.splits import across_finetuning
from knowlab.sort import analysis
from knowlab.sort.finetune_plots import plot_fiction_sort

with rule_step(snakemake) as log:
    params = snakemake.params
    rows = across_finetuning(
        read_parquets(snakemake.input.rows),
        read_parquets([snakemake.input.base]),
        [*params.runs, *([params.control] if params.control else [])],
        {Path(p).stem: read_json(p) for p in snakemake.input.splits},
        read_jsonl(snakemake.input.fictions),
    )
    write_parquet(snakemake.output.rows, rows)
    binomial = analysis.binomial_tests(rows.fillna({"side": "all"}), by=["run", "step", "side"])
    write_parquet(snakemake.output.binomial, binomial)
    log.info("accuracy by run, step and side:\n%s", binomial[["run", "step", "side", "n", "accuracy", "pvalue_holm"]])
    tests = analysis.fiction_tests(rows, params.runs, params.steps, params.control, params.alternative)
    with atomic_dir(snakemake.output.tests) as folder:
        for (run, test), table in tests.items():
            write_parquet(folder / f"{run}_{test}.parquet", table)
    plot_fiction_sort(rows, snakemake.output.pdf, snakemake.output.png, model=params.model)

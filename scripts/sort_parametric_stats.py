"""SORT after parametric-memory fine-tuning: the rows of every epoch, McNemar and t-test matrices (of Figs. 14-15)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent / "src"))

from knowlab.core.io import read_parquets, write_parquet
from knowlab.core.provenance import rule_step
from knowlab.sort.steps import stats

with rule_step(snakemake):
    out = snakemake.output
    rows, tests = stats.parametric_stats(
        read_parquets(snakemake.input.base),
        read_parquets(snakemake.input.rows),
        snakemake.params.alternative,
        snakemake.params.exact_below,
    )
    write_parquet(out.rows, rows)
    write_parquet(out.mcnemar, tests["mcnemar"])
    write_parquet(out.ttest, tests["ttest"])

"""SORT after parametric-memory fine-tuning: the rows of every epoch, McNemar and t-test matrices (of Figs. 14-15)."""

from knowlab.core.io import read_parquets, write_parquet
from knowlab.core.provenance import rule_step
from knowlab.core.stats import StatsSettings
from knowlab.sort.settings import EPOCH_FIGURES
from knowlab.sort.steps import stats

with rule_step(snakemake):
    out = snakemake.output
    rows, tests, bands = stats.parametric_stats(
        read_parquets(snakemake.input.base),
        read_parquets(snakemake.input.rows),
        read_parquets(snakemake.input.nll),
        StatsSettings.from_param(snakemake.params.stats),
    )
    write_parquet(out.rows, rows)
    for name, path in zip(EPOCH_FIGURES, out.bands, strict=True):  # each banded figure's points
        write_parquet(path, bands[name])
    write_parquet(out.mcnemar, tests["mcnemar"])
    write_parquet(out.ttest, tests["ttest"])

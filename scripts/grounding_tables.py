"""Grounding tables (Tables 1, 8-12; CSV + LaTeX) and figures (Figs. 3c, 4, 5, 15-16, gold position)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent / "src"))

from knowlab.core.io import read_parquets, write_parquet
from knowlab.core.provenance import rule_step
from knowlab.grounding.report import tables_and_figures
from knowlab.grounding.settings import GroundingTablesSettings

with rule_step(snakemake, seed=snakemake.params.seed) as log:
    rows = read_parquets(snakemake.input.scores)
    write_parquet(snakemake.output.rows, rows)
    figures = {k: v for k, v in snakemake.output.items() if k.endswith(("_pdf", "_png"))}
    tables_and_figures(
        rows,
        snakemake.output.tables,
        figures,
        GroundingTablesSettings.from_param(snakemake.params.settings),
        seed=snakemake.params.seed,
    )

"""Step 0 of a run is the base model before any update: reuse its evaluation under the run's name."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent / "src"))

import pandas as pd

from knowlab.core.io import write_parquet
from knowlab.core.provenance import rule_step

with rule_step(snakemake) as log:
    table = pd.read_parquet(snakemake.input.table).assign(run=snakemake.wildcards.run)
    write_parquet(snakemake.output.table, table)
    log.info("step 0 of run %s = the base model's evaluation (%d rows)", snakemake.wildcards.run, len(table))

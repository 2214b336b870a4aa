"""SORT items from the FictionalQA fiction documents."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent / "src"))

from knowlab.core.io import read_jsonl, write_jsonl
from knowlab.core.provenance import rule_step
from knowlab.sort.pipeline import fiction_items

with rule_step(snakemake):
    items = fiction_items(read_jsonl(snakemake.input.fictions), snakemake.params.cfg, snakemake.params.seed)
    write_jsonl(snakemake.output.sort_items, items)

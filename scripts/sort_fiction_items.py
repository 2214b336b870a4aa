"""SORT items from the FictionalQA fiction documents."""

from knowlab.core.io import read_jsonl, write_jsonl
from knowlab.core.provenance import rule_step
from knowlab.sort.settings import SortFictionItemsSettings
from knowlab.sort.steps import data

with rule_step(snakemake):
    settings = SortFictionItemsSettings.from_param(snakemake.params.settings)
    items = data.fiction_items(read_jsonl(snakemake.input.fictions), settings, snakemake.params.seed)
    write_jsonl(snakemake.output.sort_items, items)

"""Download the SORT texts (sort.source), each verified by sha256."""

from knowlab.core.io import atomic_dir
from knowlab.core.provenance import rule_step
from knowlab.sort.settings import SortSourcesSettings
from knowlab.sort.steps import data

with rule_step(snakemake), atomic_dir(snakemake.output.texts) as tmp:
    data.fetch_texts(SortSourcesSettings.from_param(snakemake.params.settings), tmp)

"""Training texts of the SORT parametric-memory runs: framed text chunks and instruction conversations."""

from knowlab.core.io import read_jsonl, write_json
from knowlab.core.provenance import rule_step
from knowlab.sort.settings import SortParametricTextsSettings
from knowlab.sort.steps import data

with rule_step(snakemake):
    settings = SortParametricTextsSettings.from_param(snakemake.params.settings)
    texts = data.training_texts(
        snakemake.input.model,
        read_jsonl(snakemake.input.books),
        read_jsonl(snakemake.input.sort_items),
        snakemake.input.selection,
        settings,
        snakemake.params.seed,
    )
    write_json(snakemake.output.texts, texts)

"""Training texts of the SORT parametric-memory runs: framed text chunks and instruction conversations."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent / "src"))

from transformers import AutoTokenizer

from knowlab.core.io import read_jsonl, write_json
from knowlab.core.provenance import rule_step
from knowlab.sort.parametric import parametric_texts
from knowlab.sort.pipeline import books_from_records
from knowlab.sort.prompts import selected_template
from knowlab.sort.settings import SortParametricTextsSettings

with rule_step(snakemake):
    settings = SortParametricTextsSettings.from_param(snakemake.params.settings)
    texts = parametric_texts(
        AutoTokenizer.from_pretrained(snakemake.input.model),
        books_from_records(read_jsonl(snakemake.input.books)),
        read_jsonl(snakemake.input.sort_items),
        selected_template(settings.templates, snakemake.input.selection),
        settings,
        snakemake.params.seed,
    )
    write_json(snakemake.output.texts, texts)

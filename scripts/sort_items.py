"""Build the Book-SORT items of the configured texts; write the books (their text with its paragraph breaks,
which the RAG passages are cut from) and the items."""

from knowlab.core.io import write_jsonl
from knowlab.core.provenance import rule_step
from knowlab.sort.settings import SortItemsSettings
from knowlab.sort.steps import data

with rule_step(snakemake):
    settings = SortItemsSettings.from_param(snakemake.params.settings)
    books, items = data.books_and_items(settings, snakemake.input.texts, snakemake.params.seed)
    write_jsonl(snakemake.output.books, books)
    write_jsonl(snakemake.output.sort_items, items)

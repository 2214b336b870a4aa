"""Build the Book-SORT items of the configured texts; write the books and the items."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent / "src"))

from knowlab.core.io import write_jsonl
from knowlab.core.provenance import rule_step
from knowlab.sort.pipeline import books_records, load_books, make_items

with rule_step(snakemake) as log:
    cfg = snakemake.params.cfg
    books = [] if cfg["source"] == "release" else load_books(cfg, snakemake.input.texts)
    for book in books:
        log.info("book %s (%s): %d words", book.book_id, book.title, len(book.words))
    write_jsonl(snakemake.output.books, books_records(books))
    write_jsonl(snakemake.output.sort_items, make_items(cfg, books, snakemake.params.seed))

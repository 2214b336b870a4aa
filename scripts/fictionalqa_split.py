"""Build one train/validation split of the fiction corpus as id lists."""

from knowlab.core.io import read_jsonl, write_json
from knowlab.core.provenance import rule_step
from knowlab.fictionalqa.settings import SplitSettings
from knowlab.fictionalqa.steps import data

with rule_step(snakemake) as log:
    split = data.split(
        snakemake.wildcards.split,
        read_jsonl(snakemake.input.fictions),
        read_jsonl(snakemake.input.fict_qa),
        snakemake.params.seed,
        SplitSettings.from_param(snakemake.params.settings),
    )
    write_json(snakemake.output.split, split)
    log.info(
        "split %s: %d/%d train/val documents, %d/%d train/val questions",
        split["split"], len(split["train_documents"]), len(split["val_documents"]),
        len(split["train_questions"]), len(split["val_questions"]),
    )  # fmt: skip

"""Real-world Q&A for nll(answer | question): the shipped set or TriviaQA (paper App. C.7)."""

from knowlab.core.io import write_jsonl
from knowlab.core.provenance import checkout_root, rule_step
from knowlab.fictionalqa.settings import RealQASettings
from knowlab.fictionalqa.steps import data

with rule_step(snakemake) as log:
    settings = RealQASettings.from_param(snakemake.params.settings)
    records = data.real_qa_records(settings, checkout_root(), snakemake.params.seed)
    write_jsonl(snakemake.output.real_qa, records)
    log.info("%d real-world questions from %s", len(records), settings.source)

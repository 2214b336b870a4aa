"""Write every MCQ suite as an lm-evaluation-harness task (results/fictionalqa/lm_eval/, relative paths only)."""

from knowlab.core.io import atomic_dir, read_jsonl
from knowlab.core.provenance import rule_step
from knowlab.fictionalqa.steps import data

with rule_step(snakemake) as log:
    suites = {data.task_name(path): read_jsonl(path, allow_empty=False) for path in snakemake.input.mcq}
    with atomic_dir(snakemake.output.tasks) as folder:
        data.export_tasks(suites, folder, snakemake.params.template, snakemake.params.models)
    log.info("lm-eval tasks: %s", ", ".join(f"{name} ({len(items)} items)" for name, items in suites.items()))

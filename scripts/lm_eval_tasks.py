"""Write every MCQ suite as an lm-evaluation-harness task (results/lm_eval/, relative paths only)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parent / "src"))

from knowlab.core.io import atomic_dir, read_jsonl
from knowlab.core.provenance import rule_step
from knowlab.fictionalqa.lm_eval_export import export_mcq_suites, task_name

with rule_step(snakemake) as log:
    suites = {task_name(path): read_jsonl(path, allow_empty=False) for path in snakemake.input.mcq}
    with atomic_dir(snakemake.output.tasks) as folder:
        export_mcq_suites(suites, folder, snakemake.params.template)
    log.info("lm-eval tasks: %s", ", ".join(f"{name} ({len(items)} items)" for name, items in suites.items()))

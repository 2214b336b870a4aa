"""The run's provenance: a trace page per figure and table of the report, and its Workflow Run RO-Crate."""

from pathlib import Path

from knowlab.core.provenance import rule_step
from knowlab.tooling import crate, trace

with rule_step(snakemake) as log:
    pages = trace.write_pages(".", snakemake.output.pages)
    log.info("%d trace pages in %s", len(pages), snakemake.output.pages)
    workflow = Path(snakemake.scriptdir).parent
    metadata = crate.build_crate(".", snakemake.output.crate, workflow=workflow, rules=snakemake.params.rules)
    log.info("Workflow Run RO-Crate: %s", metadata)

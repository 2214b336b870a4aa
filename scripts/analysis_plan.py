"""The analysis plan every finding cites (knowlab.findings.plan), written before any model job."""

from knowlab.core.io import write_json
from knowlab.core.provenance import rule_step
from knowlab.findings.plan import PlanSettings, analysis_plan

with rule_step(snakemake) as log:
    plan = analysis_plan(PlanSettings.from_param(snakemake.params.settings))
    write_json(snakemake.output.plan, plan)
    log.info("analysis plan: %d claims, deviations %s", len(plan["claims"]), plan["deviations"] or "none")

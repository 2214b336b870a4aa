"""The three papers' headline findings on this run's result tables (knowlab.findings): JSON records and text."""

from knowlab import findings, layout
from knowlab.core.io import atomic_path, write_csv, write_json
from knowlab.core.provenance import rule_step

with rule_step(snakemake) as log:
    params = snakemake.params
    settings = findings.FindingsSettings.from_param(params.settings)
    checked = findings.collect(
        layout.RESULTS, settings, model=params.model, inputs=snakemake.input, plan=snakemake.input.plan
    )
    text = findings.render(checked, params.report)
    write_json(snakemake.output.json, findings.to_records(checked))
    write_csv(snakemake.output.table, findings.report_table(checked))
    write_csv(snakemake.output.design, findings.design_table(checked))
    with atomic_path(snakemake.output.txt) as tmp:
        tmp.write_text(text, encoding="utf-8")
    log.info("findings:\n%s", text)

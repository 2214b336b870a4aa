# Provenance a reviewer can follow: every figure and table of the report with its trace (the chain
# of jobs down to the raw inputs, knowlab.tooling.trace; the captions link it), and the run as a
# Workflow Run RO-Crate (Provenance Run Crate profile, knowlab.tooling.crate), both read from the
# jobs' manifests. Re-made only when a result changes.

PROVENANCE_OUTPUTS = [layout.PROVENANCE_PAGES.smk, layout.RO_CRATE.smk]


rule provenance:
    input:
        FICTIONALQA_OUTPUTS,
        SORT_OUTPUTS,
        GROUNDING_OUTPUTS,
        FINDINGS_OUTPUTS,
    output:
        pages=report(
            directory(layout.PROVENANCE_PAGES.smk),
            patterns=["{page}.html"],
            caption="../workflow/report/provenance.rst",
            category="Provenance",
            labels={"output": "{page}"},
        ),
        crate=directory(layout.RO_CRATE.smk),
        manifest=layout.PROVENANCE_STEP.manifest,
    log:
        layout.PROVENANCE_STEP.log,
    benchmark:
        layout.PROVENANCE_STEP.benchmark
    localrule: True
    conda:
        "../envs/stats.yaml"
    params:
        # where each rule is defined and its env: the crate's tools (knowlab.tooling.crate)
        rules=rule_sources,
    script:
        "../scripts/provenance.py"

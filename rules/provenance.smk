# Provenance a reviewer can follow: every figure and table of the report with its trace (the chain
# of jobs down to the raw inputs, knowlab.tooling.trace; the captions link it), and the run as a
# Workflow Run RO-Crate (Provenance Run Crate profile, knowlab.tooling.crate), both read from the
# jobs' manifests. Re-made only when a result changes.

PROVENANCE_OUTPUTS = [layout.PROVENANCE_PAGES.smk, layout.RO_CRATE.smk]


step_rule(
    layout.PROVENANCE_STEP,
    "stats",
    unnamed_input=[
        FICTIONALQA_OUTPUTS,
        SORT_OUTPUTS,
        GROUNDING_OUTPUTS,
        FINDINGS_OUTPUTS,
    ],
    output={
        "pages": report(
            directory(layout.PROVENANCE_PAGES.smk),
            patterns=["{page}.html"],
            caption="../workflow/report/provenance.rst",
            category="Provenance",
            labels={"output": "{page}"},
        ),
        "crate": directory(layout.RO_CRATE.smk),
    },
    # where each rule is defined and its env: the crate's tools (knowlab.tooling.crate)
    params={"rules": rule_sources},
)

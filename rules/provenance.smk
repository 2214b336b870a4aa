# Provenance a reviewer can follow: every figure and table of the report with its trace (the chain
# of jobs down to the raw inputs, knowlab.tooling.trace; the captions link it), and the run as a
# Workflow Run RO-Crate (Provenance Run Crate profile, knowlab.tooling.crate), both read from the
# jobs' manifests. Re-made only when a result changes.

PROVENANCE_OUTPUTS = ["results/provenance", "results/ro-crate"]


rule provenance:
    input:
        FICTIONALQA_OUTPUTS,
        SORT_OUTPUTS,
        GROUNDING_OUTPUTS,
        FINDINGS_OUTPUTS,
    output:
        pages=report(
            directory("results/provenance"),
            patterns=["{page}.html"],
            caption="../workflow/report/provenance.rst",
            category="Provenance",
            labels={"output": "{page}"},
        ),
        crate=directory("results/ro-crate"),
        manifest="results/provenance.manifest.json",
    log:
        "results/logs/provenance.log",
    benchmark:
        "results/benchmarks/provenance.tsv"
    localrule: True
    conda:
        "../envs/stats.yaml"
    script:
        "../scripts/provenance.py"

# The three papers' headline findings, checked on the result tables of the studies the config
# enables (knowlab.findings); every invocation that runs ends by printing results/findings.txt (the
# Snakefile's onsuccess). And the dataset card that shares the item tables of every study (rule
# dataset_card, results/README.md).

FINDINGS_OUTPUTS = [
    layout.FINDINGS_TEXT.smk,
    layout.FINDINGS_JSON.smk,
    layout.FINDINGS_DESIGN.smk,
    layout.FINDINGS_TABLE.smk,
    layout.DATASET_CARD.smk,
]


# The analysis plan every finding cites (knowlab.findings.plan): from the catalogue and the config
# alone, first of all jobs (its priority), before any model job.
rule analysis_plan:
    output:
        plan=layout.ANALYSIS_PLAN.smk,
        manifest=layout.ANALYSIS_PLAN_STEP.manifest,
    log:
        layout.ANALYSIS_PLAN_STEP.log,
    benchmark:
        layout.ANALYSIS_PLAN_STEP.benchmark
    priority: 100
    localrule: True
    conda:
        "../envs/stats.yaml"
    params:
        settings=PlanSettings.from_config(config).param(),
    script:
        "../scripts/analysis_plan.py"


rule findings:
    input:
        # the tables knowlab.findings.collect reads, by name (knowlab.layout.Layout.findings_inputs)
        **LAYOUT.findings_inputs(BASE.evaluated_as),
        plan=layout.ANALYSIS_PLAN.smk,
    output:
        txt=layout.FINDINGS_TEXT.smk,
        json=layout.FINDINGS_JSON.smk,
        table=report(
            layout.FINDINGS_TABLE.smk,
            caption="../workflow/report/findings.rst",
            category="Findings",
        ),
        design=report(
            layout.FINDINGS_DESIGN.smk,
            caption="../workflow/report/findings_design.rst",
            category="Findings",
        ),
        manifest=layout.FINDINGS_STEP.manifest,
    log:
        layout.FINDINGS_STEP.log,
    benchmark:
        layout.FINDINGS_STEP.benchmark
    localrule: True
    conda:
        "../envs/stats.yaml"
    params:
        settings=FindingsSettings.from_config(config).param(),
        model=BASE.name,
        report=layout.REPORT,
    script:
        "../scripts/findings.py"


# The item-level tables of every study the config enables, shared as one dataset: a Hugging Face
# dataset card at the root of results/ (knowlab.dataset_card), so that the tables load with
# datasets.load_dataset("results", "<config>"). The step-0 row tables serve as step 0 of every run;
# knowlab.dataset_card.LEFT_OUT says which tables are left out and why.
rule dataset_card:
    input:
        # the tables, by name (knowlab.layout.Layout.dataset_card_inputs)
        **LAYOUT.dataset_card_inputs(BASE.evaluated_as),
    output:
        card=layout.DATASET_CARD.smk,
        manifest=layout.DATASET_CARD_STEP.manifest,
    log:
        layout.DATASET_CARD_STEP.log,
    benchmark:
        layout.DATASET_CARD_STEP.benchmark
    localrule: True
    conda:
        "../envs/data.yaml"
    params:
        model=BASE.name,
        seed=config["seed"],
        settings=FIGURE_NOTE,
        eval_models=[eval_model_label(name) for name in EVAL_MODELS],
        ft_models=FT_MODELS,
    script:
        "../scripts/dataset_card.py"

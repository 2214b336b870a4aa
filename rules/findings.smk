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
step_rule(
    layout.ANALYSIS_PLAN_STEP,
    "stats",
    output={"plan": layout.ANALYSIS_PLAN.smk},
    params={"settings": PlanSettings.from_config(config).param()},
    priority=100,
)

step_rule(
    layout.FINDINGS_STEP,
    "stats",
    input={
        # the tables knowlab.findings.collect reads, by name (knowlab.layout.Layout.findings_inputs)
        **LAYOUT.findings_inputs(BASE.evaluated_as),
        "plan": layout.ANALYSIS_PLAN.smk,
    },
    output={
        "txt": layout.FINDINGS_TEXT.smk,
        "json": layout.FINDINGS_JSON.smk,
        "table": report(
            layout.FINDINGS_TABLE.smk,
            caption="../workflow/report/findings.rst",
            category="Findings",
        ),
        "design": report(
            layout.FINDINGS_DESIGN.smk,
            caption="../workflow/report/findings_design.rst",
            category="Findings",
        ),
    },
    params={
        "settings": FindingsSettings.from_config(config).param(),
        "model": BASE.name,
        "report": layout.REPORT,
    },
)


# The item-level tables of every study the config enables, shared as one dataset: a Hugging Face
# dataset card at the root of results/ (knowlab.dataset_card), so that the tables load with
# datasets.load_dataset("results", "<config>"). The step-0 row tables serve as step 0 of every run;
# knowlab.dataset_card.LEFT_OUT says which tables are left out and why.
step_rule(
    layout.DATASET_CARD_STEP,
    "data",
    # the tables, by name (knowlab.layout.Layout.dataset_card_inputs)
    input=LAYOUT.dataset_card_inputs(BASE.evaluated_as),
    output={"card": layout.DATASET_CARD.smk},
    params={
        "model": BASE.name,
        "seed": config["seed"],
        "settings": FIGURE_NOTE,
        "eval_models": [eval_model_label(name) for name in EVAL_MODELS],
        "ft_models": FT_MODELS,
    },
)

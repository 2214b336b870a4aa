# The three papers' headline findings, checked on the result tables of the studies the config
# enables (knowlab.findings); every invocation that runs ends by printing results/findings.txt (the
# Snakefile's onsuccess). And the dataset card that shares the item tables of every study (rule
# dataset_card, results/README.md).

FINDINGS_OUTPUTS = [
    "results/findings.txt",
    "results/findings.json",
    "results/findings_design.csv",
    "results/findings.csv",
    "results/README.md",
]

# the tables knowlab.findings.collect reads (knowlab.layout.Layout.findings_inputs)
FINDINGS_INPUTS = LAYOUT.findings_inputs(BASE_EVAL)


rule findings:
    input:
        FINDINGS_INPUTS,
    output:
        txt="results/findings.txt",
        json="results/findings.json",
        table=report(
            "results/findings.csv",
            caption="../workflow/report/findings.rst",
            category="Findings",
        ),
        design=report(
            "results/findings_design.csv",
            caption="../workflow/report/findings_design.rst",
            category="Findings",
        ),
        manifest="results/findings.manifest.json",
    log:
        "results/logs/findings.log",
    benchmark:
        "results/benchmarks/findings.tsv"
    localrule: True
    conda:
        "../envs/stats.yaml"
    params:
        settings=FindingsSettings.from_config(config).param(),
        model=MODEL_NAME,
        report="results/report.html",
    script:
        "../scripts/findings.py"


# The item-level tables of every study the config enables, shared as one dataset: a Hugging Face
# dataset card at the root of results/ (knowlab.dataset_card), so that the tables load with
# datasets.load_dataset("results", "<config>"). The tables are the inputs of the rules that read
# them (the step-0 row tables serve as step 0 of every run); knowlab.dataset_card.LEFT_OUT says
# which tables are left out and why.
DATASET_CARD_INPUTS = list(rules.sort_stats.input.rows)
if FICTION_RUNS:
    for ft_model in FT_MODELS:
        DATASET_CARD_INPUTS += run_items(ft_model, *RUNS)
    DATASET_CARD_INPUTS += expand(
        rules.sort_fiction_stats.input.base, ft_model=PROBE_MODELS
    )
    DATASET_CARD_INPUTS += expand(
        rules.sort_fiction_stats.input.rows, ft_model=PROBE_MODELS
    )
if config["sort"]["parametric"]["enabled"]:
    DATASET_CARD_INPUTS += rules.sort_parametric_stats.input.rows
    DATASET_CARD_INPUTS += rules.sort_parametric_figures.input.nll
if GROUNDING_DATASETS:
    DATASET_CARD_INPUTS += rules.grounding_tables.input.scores
if GROUNDING_FINETUNE:
    DATASET_CARD_INPUTS += expand(
        rules.grounding_finetune_stats.input.base, ft_model=PROBE_MODELS
    )
    DATASET_CARD_INPUTS += expand(
        rules.grounding_finetune_stats.input.rows, ft_model=PROBE_MODELS
    )


rule dataset_card:
    input:
        DATASET_CARD_INPUTS,
    output:
        card="results/README.md",
        manifest="results/README.manifest.json",
    log:
        "results/logs/dataset_card.log",
    benchmark:
        "results/benchmarks/dataset_card.tsv"
    localrule: True
    conda:
        "../envs/data.yaml"
    params:
        model=MODEL_NAME,
        seed=config["seed"],
        settings=FIGURE_NOTE,
        eval_models=[eval_model_label(name) for name in EVAL_MODELS],
        ft_models=FT_MODELS,
    script:
        "../scripts/dataset_card.py"

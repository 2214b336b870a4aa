# The three papers' headline findings, checked on the result tables of the studies the config
# enables (knowlab.findings); `make run` prints results/findings.txt at the end. And the dataset
# card that shares the item tables of every study (rule dataset_card, results/README.md).

FINDINGS_OUTPUTS = [
    "results/findings.txt",
    "results/findings.json",
    "results/README.md",
]

# the tables knowlab.findings.collect reads: every checkpoint of every run (Event's claim takes the
# minimum validation loss over them), the splits; the base model's SORT items in each condition
# and, when on, the parametric runs' last-epoch items and segment nll; the grounding rows
FINDINGS_INPUTS = expand(
    f"{SORT}/evaluate/{BASE_EVAL}/{{condition}}.parquet", condition=SORT_CONDITIONS
)
if FICTION_RUNS:
    FINDINGS_INPUTS += [f"results/evaluate/{BASE_RUN}/step-0.parquet"]
    FINDINGS_INPUTS += expand(
        "results/evaluate/{run}/step-{step}.parquet", run=RUNS, step=STEPS[1:]
    )
    FINDINGS_INPUTS += expand("results/splits/{run}.json", run=FICTION_RUNS)
if config["sort"]["parametric"]["enabled"]:
    FINDINGS_INPUTS += expand(
        f"{SORT}/parametric/{{prun}}/evaluate/epoch-{SORT_EPOCHS}{{table}}.parquet",
        prun=PARAMETRIC_RUNS,
        table=["", "_segment_nll"],
    )
if GROUNDING_DATASETS:
    FINDINGS_INPUTS += [f"{GROUNDING}/rows.parquet"]


rule findings:
    input:
        FINDINGS_INPUTS,
    output:
        txt="results/findings.txt",
        json="results/findings.json",
        manifest="results/findings.manifest.json",
    log:
        "results/logs/findings.log",
    benchmark:
        "results/benchmarks/findings.tsv"
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
    DATASET_CARD_INPUTS += run_items(*RUNS)
    DATASET_CARD_INPUTS += [rules.sort_fiction_stats.input.base]
    DATASET_CARD_INPUTS += rules.sort_fiction_stats.input.rows
if config["sort"]["parametric"]["enabled"]:
    DATASET_CARD_INPUTS += rules.sort_parametric_stats.input.rows
    DATASET_CARD_INPUTS += rules.sort_parametric_stats.input.nll
if GROUNDING_DATASETS:
    DATASET_CARD_INPUTS += rules.grounding_tables.input.scores
if GROUNDING_FINETUNE:
    DATASET_CARD_INPUTS += [rules.grounding_finetune_stats.input.base]
    DATASET_CARD_INPUTS += rules.grounding_finetune_stats.input.scores


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
    conda:
        "../envs/data.yaml"
    params:
        model=MODEL_NAME,
        seed=config["seed"],
        settings=FIGURE_NOTE,
        eval_models=[eval_model_label(name) for name in EVAL_MODELS],
    script:
        "../scripts/dataset_card.py"

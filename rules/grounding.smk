# Grounding (Lee et al. 2024): items -> ranked distractors -> responses -> atomic facts and scores
# -> tables -> figures; and the fiction set at every FictionalQA checkpoint (step 0 is
# the base model, run `base_model`). Statistics and figures are separate rules: a figures rule
# reads the tables of its stats rule and computes no statistic (knowlab.grounding.steps).

from knowlab.grounding.settings import (
    GroundingCheckpointGenerateSettings,
    GroundingDistractorsSettings,
    GroundingGenerateSettings,
    GroundingItemsSettings,
    GroundingScoreSettings,
    GroundingTablesSettings,
)

# figures of rule grounding_figures (knowlab.grounding.plots), the keys of its outputs
GROUNDING_FIGURES = ("fig3c", "fig4", "fig5", "fig15_16", "position")

# each step's settings (knowlab.grounding.settings): the config keys it reads, its rules' param
# `settings`, so that a changed key re-runs the jobs that read it (config/README.md)
# (items: per dataset, for_dataset; generation: per model, for_served)
GROUNDING_ITEMS = GroundingItemsSettings.from_config(config)
GROUNDING_DISTRACTORS = GroundingDistractorsSettings.from_config(config).param()
GROUNDING_GENERATE = GroundingGenerateSettings.from_config(config)
GROUNDING_CHECKPOINT_GENERATE = GroundingCheckpointGenerateSettings.from_config(config)
GROUNDING_SCORE = GroundingScoreSettings.from_config(config).param()
GROUNDING_TABLES = GroundingTablesSettings.from_config(config).param()


rule grounding_items:
    input:
        unpack(grounding_item_inputs),
    output:
        grounding_items=f"{GROUNDING}/{{dataset}}/items.jsonl",
        pool=f"{GROUNDING}/{{dataset}}/pool.jsonl",
        manifest=f"{GROUNDING}/{{dataset}}/items.manifest.json",
    log:
        "results/logs/grounding/{dataset}/items.log",
    benchmark:
        "results/benchmarks/grounding/{dataset}/items.tsv"
    localrule: True
    conda:
        "../envs/data.yaml"
    params:
        # the KAIST release's keys for dataset kaist; the fiction set reads the seed
        settings=lambda wildcards: GROUNDING_ITEMS.for_dataset(
            wildcards.dataset
        ).param(),
        seed=lambda wildcards: (
            config["seed"] if wildcards.dataset == "fiction" else None
        ),
    script:
        "../scripts/grounding_items.py"


rule grounding_distractors:
    input:
        grounding_items=f"{GROUNDING}/{{dataset}}/items.jsonl",
        pool=f"{GROUNDING}/{{dataset}}/pool.jsonl",
    output:
        table=f"{GROUNDING}/{{dataset}}/distractors.parquet",
        manifest=f"{GROUNDING}/{{dataset}}/distractors.manifest.json",
    log:
        "results/logs/grounding/{dataset}/distractors.log",
    benchmark:
        "results/benchmarks/grounding/{dataset}/distractors.tsv"
    conda:
        "../envs/grounding.yaml"
    threads: config["threads"]
    params:
        compute=COMPUTE,
        settings=GROUNDING_DISTRACTORS,
    script:
        "../scripts/grounding_distractors.py"


rule grounding_generate:
    input:
        grounding_items=f"{GROUNDING}/{{dataset}}/items.jsonl",
        pool=f"{GROUNDING}/{{dataset}}/pool.jsonl",
        distractors=f"{GROUNDING}/{{dataset}}/distractors.parquet",
        model=lambda wildcards: eval_model_dir(wildcards.model),
    output:
        responses=f"{GROUNDING}/{{dataset}}/responses/{{model}}.jsonl",
        manifest=f"{GROUNDING}/{{dataset}}/responses/{{model}}.manifest.json",
    log:
        "results/logs/grounding/{dataset}/responses/{model}.log",
    benchmark:
        "results/benchmarks/grounding/{dataset}/responses/{model}.tsv"
    conda:
        "../envs/eval.yaml"
    threads: config["threads"]
    resources:
        gpu=1,
    params:
        compute=COMPUTE,
        # backend openai: only this model's entry of grounding.generation.openai.models
        settings=lambda wildcards: GROUNDING_GENERATE.for_served(
            wildcards.model
        ).param(),
        seed=config["seed"],
        model=lambda wildcards: eval_model_label(wildcards.model),
        run=BASE_RUN,
        step=0,
        # backend openai: the key of grounding.generation.openai.models, and the request cache
        served_key=lambda wildcards: wildcards.model,
        request_cache=lambda wildcards: f"{GROUNDING}/cache/requests/{wildcards.dataset}/{wildcards.model}",
    script:
        "../scripts/grounding_generate.py"


rule grounding_score:
    input:
        responses=f"{GROUNDING}/{{dataset}}/responses/{{model}}.jsonl",
        decomposer=BASE_MODEL,
    output:
        table=GROUNDING_SCORES.smk,
        facts=f"{GROUNDING}/{{dataset}}/scores/{{model}}_facts.json",
        manifest=f"{GROUNDING}/{{dataset}}/scores/{{model}}.manifest.json",
    log:
        "results/logs/grounding/{dataset}/scores/{model}.log",
    benchmark:
        "results/benchmarks/grounding/{dataset}/scores/{model}.tsv"
    conda:
        "../envs/grounding.yaml"
    threads: config["threads"]
    resources:
        gpu=1,
    params:
        compute=COMPUTE,
        settings=GROUNDING_SCORE,
        cache=lambda wildcards: f"{GROUNDING}/cache/facts/{wildcards.dataset}/{wildcards.model}.json",
        request_cache=f"{GROUNDING}/cache/requests/decomposer",  # decomposer backend openai
        model_label=MODEL_NAME,  # the base model in the rows' decomposer / evaluator columns
    script:
        "../scripts/grounding_score.py"


rule grounding_tables:
    input:
        scores=expand(
            GROUNDING_SCORES.smk,
            dataset=GROUNDING_DATASETS,
            model=EVAL_MODELS,
        ),
    output:
        rows=GROUNDING_ROWS.smk,
        tables=report(
            directory(f"{GROUNDING}/tables"),
            patterns=["{table}.csv"],
            caption="../workflow/report/grounding_tables.rst",
            category="Grounding",
            subcategory="Tables",
            labels={"table": "{table}"},
        ),
        manifest=f"{GROUNDING}/tables.manifest.json",
    log:
        "results/logs/grounding/tables.log",
    benchmark:
        "results/benchmarks/grounding/tables.tsv"
    conda:
        "../envs/stats.yaml"
    params:
        settings=GROUNDING_TABLES,
        stats=STATS,
        # read by the report's caption (workflow/report/grounding_tables.rst)
        models=[eval_model_label(name) for name in EVAL_MODELS],
    script:
        "../scripts/grounding_tables.py"


rule grounding_figures:
    input:
        tables=f"{GROUNDING}/tables",
    output:
        **{
            f"{name}_{ext}": (
                report(
                    f"results/figures/grounding/{name}.{ext}",
                    caption=f"../workflow/report/grounding_{name}.rst",
                    category="Grounding",
                    subcategory="Paper figures",
                    labels={
                        "figure": {
                            "fig3c": "Fig. 3c: F1 by question and context factors",
                            "fig4": "Fig. 4: F1 against input length",
                            "fig5": "Fig. 5: F1 reduction from Gold to Dist",
                            "fig15_16": "Figs. 15-16: precision and recall",
                            "position": "F1 by gold-context position",
                        }[name]
                    },
                )
                if ext == "png"
                else f"results/figures/grounding/{name}.{ext}"
            )
            for name in GROUNDING_FIGURES
            for ext in ("pdf", "png")
        },
        manifest="results/figures/grounding/manifest.json",
    log:
        "results/logs/grounding/figures.log",
    benchmark:
        "results/benchmarks/grounding/figures.tsv"
    localrule: True
    conda:
        "../envs/plot.yaml"
    params:
        # read by the report's captions (workflow/report/grounding_<figure>.rst)
        models=[eval_model_label(name) for name in EVAL_MODELS],
    script:
        "../scripts/grounding_figures.py"


rule grounding_checkpoint_generate:
    input:
        grounding_items=f"{GROUNDING}/fiction/items.jsonl",
        pool=f"{GROUNDING}/fiction/pool.jsonl",
        distractors=f"{GROUNDING}/fiction/distractors.parquet",
        model=checkpoint_input,
    output:
        responses=f"{GROUNDING}/finetune/{{ft_model}}/responses/{{run}}/step-{{step}}.jsonl",
        manifest=f"{GROUNDING}/finetune/{{ft_model}}/responses/{{run}}/step-{{step}}.manifest.json",
    log:
        "results/logs/grounding/finetune/{ft_model}/responses/{run}/step-{step}.log",
    benchmark:
        "results/benchmarks/grounding/finetune/{ft_model}/responses/{run}/step-{step}.tsv"
    wildcard_constraints:
        run=PROBE_RUNS,
    conda:
        "../envs/eval.yaml"
    threads: config["threads"]
    resources:
        gpu=1,
    params:
        **PROBE_PARAMS,
        compute=ft_compute,
        settings=lambda wildcards: GROUNDING_CHECKPOINT_GENERATE.for_served(
            f"{wildcards.ft_model}/{wildcards.run}/step-{wildcards.step}"
        ).param(),
        seed=config["seed"],
        model=lambda wildcards: wildcards.ft_model,
        served_key=lambda wildcards: f"{wildcards.ft_model}/{wildcards.run}/step-{wildcards.step}",
        request_cache=lambda wildcards: f"{GROUNDING}/cache/requests/finetune/{wildcards.ft_model}/{wildcards.run}/step-{wildcards.step}",
    script:
        "../scripts/grounding_generate.py"


rule grounding_checkpoint_score:
    input:
        responses=f"{GROUNDING}/finetune/{{ft_model}}/responses/{{run}}/step-{{step}}.jsonl",
        decomposer=BASE_MODEL,
    output:
        table=GROUNDING_CHECKPOINT_SCORES.smk,
        facts=f"{GROUNDING}/finetune/{{ft_model}}/scores/{{run}}/step-{{step}}_facts.json",
        manifest=f"{GROUNDING}/finetune/{{ft_model}}/scores/{{run}}/step-{{step}}.manifest.json",
    log:
        "results/logs/grounding/finetune/{ft_model}/scores/{run}/step-{step}.log",
    benchmark:
        "results/benchmarks/grounding/finetune/{ft_model}/scores/{run}/step-{step}.tsv"
    wildcard_constraints:
        run=PROBE_RUNS,
    conda:
        "../envs/grounding.yaml"
    threads: config["threads"]
    resources:
        gpu=1,
    params:
        compute=COMPUTE,
        settings=GROUNDING_SCORE,
        cache=lambda wildcards: f"{GROUNDING}/cache/facts/finetune/{wildcards.ft_model}/{wildcards.run}/step-{wildcards.step}.json",
        request_cache=f"{GROUNDING}/cache/requests/decomposer",  # decomposer backend openai
        model_label=MODEL_NAME,  # the base model in the rows' decomposer / evaluator columns
    script:
        "../scripts/grounding_score.py"


rule grounding_finetune_stats:
    input:
        **probe_inputs(GROUNDING_CHECKPOINT_SCORES.smk),
    output:
        rows=f"{GROUNDING}/finetune/{{ft_model}}/rows.parquet",
        rates=report(
            f"{GROUNDING}/finetune/{{ft_model}}/rates.csv",
            caption="../workflow/report/grounding_finetune_rates.rst",
            category="Grounding",
            subcategory="Across fine-tuning",
            labels={
                "item": "rates.csv: F1 and follow rates per checkpoint",
                "base model": "{ft_model}",
            },
        ),
        mcnemar=f"{GROUNDING}/finetune/{{ft_model}}/mcnemar.parquet",
        manifest=f"{GROUNDING}/finetune/{{ft_model}}/manifest.json",
    log:
        "results/logs/grounding/finetune/{ft_model}/stats.log",
    benchmark:
        "results/benchmarks/grounding/finetune/{ft_model}/stats.tsv"
    localrule: True
    conda:
        "../envs/stats.yaml"
    params:
        runs=FICTION_RUNS,
        control=CONTROL_RUN if config["finetune"]["control"] else None,
        steps=STEPS,
        stats=STATS,
        note=lambda wildcards: FT_NOTES[wildcards.ft_model],  # read by the report's caption (workflow/report/grounding_finetune_rates.rst)
    script:
        "../scripts/grounding_finetune_stats.py"


rule grounding_finetune_figures:
    input:
        rates=f"{GROUNDING}/finetune/{{ft_model}}/rates.csv",
    output:
        pdf="results/figures/grounding/finetune/{ft_model}.pdf",
        png=report(
            "results/figures/grounding/finetune/{ft_model}.png",
            caption="../workflow/report/grounding_finetune.rst",
            category="Grounding",
            subcategory="Across fine-tuning",
            labels={
                "item": "figure: F1 and follow rates per checkpoint",
                "base model": "{ft_model}",
            },
        ),
        manifest="results/figures/grounding/finetune/{ft_model}.manifest.json",
    log:
        "results/logs/grounding/finetune/{ft_model}/figures.log",
    benchmark:
        "results/benchmarks/grounding/finetune/{ft_model}/figures.tsv"
    localrule: True
    conda:
        "../envs/plot.yaml"
    params:
        runs=FICTION_RUNS,
        model=lambda wildcards: wildcards.ft_model,
        # read by the report's caption (workflow/report/grounding_finetune.rst)
        note=lambda wildcards: FT_NOTES[wildcards.ft_model],
        control=CONTROL_RUN if config["finetune"]["control"] else None,
        steps=STEPS,
    script:
        "../scripts/grounding_finetune_figures.py"


# the stats rules' manifests and the figures (as SORT_OUTPUTS): the files rule all asked for
# when one rule wrote both
GROUNDING_OUTPUTS = [f"{GROUNDING}/tables.manifest.json"]
GROUNDING_OUTPUTS += expand(
    "results/figures/grounding/{name}.{ext}", name=GROUNDING_FIGURES, ext=("pdf", "png")
)
if GROUNDING_FINETUNE:
    GROUNDING_OUTPUTS += expand(
        f"{GROUNDING}/finetune/{{ft_model}}/manifest.json", ft_model=PROBE_MODELS
    )
    GROUNDING_OUTPUTS += expand(
        "results/figures/grounding/finetune/{ft_model}.{ext}",
        ft_model=PROBE_MODELS,
        ext=("pdf", "png"),
    )

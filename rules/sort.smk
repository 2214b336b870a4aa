# SORT (sequence order recall, Pink et al. 2024): texts -> items -> passages -> prompt selection
# -> the base model's conditions -> tables and figures; SORT on the FictionalQA documents
# at every checkpoint; parametric memory: training texts -> (fine-tuning, rules/models.smk)
# -> SORT per epoch -> tests and figures.  Step 0 (epoch 0) is the base model.

from knowlab.sort.settings import (
    SortEvaluateSettings,
    SortFictionItemsSettings,
    SortItemsSettings,
    SortParametricTextsSettings,
    SortPromptSettings,
    SortRagPromptSettings,
    SortRetrievalSettings,
    SortSourcesSettings,
    evaluate_settings,
)

# the param `settings` of each SORT rule: the config keys its step reads (knowlab.sort.settings);
# sort.batch_size, which cannot change a score, is read by the scripts from the config
SORT_SOURCES_SETTINGS = SortSourcesSettings.from_config(config).param()
SORT_ITEMS_SETTINGS = SortItemsSettings.from_config(config).param()
SORT_RETRIEVAL_SETTINGS = SortRetrievalSettings.from_config(config).param()
SORT_PROMPT_SETTINGS = SortPromptSettings.from_config(config).param()
SORT_RAG_PROMPT_SETTINGS = SortRagPromptSettings.from_config(config).param()
SORT_EVALUATE_SETTINGS = SortEvaluateSettings.from_config(config).param()
SORT_FICTION_ITEMS_SETTINGS = SortFictionItemsSettings.from_config(config).param()
SORT_PARAMETRIC_TEXTS_SETTINGS = SortParametricTextsSettings.from_config(config).param()

# figures of the base model (knowlab.sort.condition_plots, matrix_plots), the keys of rule sort_figures' outputs
SORT_FIGURES = ("fig3a", "fig3b", "fig4", "fig10", "mcnemar", "ttest")
# figures across parametric fine-tuning, the keys of rule sort_parametric_figures' outputs
SORT_PARAMETRIC_FIGURES = ("fig12", "fig13", "fig14", "fig15", "fig16")
# the segments' nll of every parametric epoch, the base model's at epoch 0 (Fig. 12's points)
PARAMETRIC_NLL = expand(
    SORT_PARAMETRIC_NLL.smk, prun=PARAMETRIC_RUNS, epoch=range(1, SORT_EPOCHS + 1)
) + [SORT_PARAMETRIC_NLL.path(prun=BASE_RUN, epoch=0)]


rule sort_sources:
    output:
        texts=directory(f"resources/sort/{config['sort']['source']}"),
        manifest=f"resources/sort/{config['sort']['source']}.manifest.json",
    log:
        "results/logs/sort/sources.log",
    benchmark:
        "results/benchmarks/sort/sources.tsv"
    localrule: True
    conda:
        "../envs/data.yaml"
    params:
        settings=SORT_SOURCES_SETTINGS,
    script:
        "../scripts/sort_sources.py"


rule sort_items:
    input:
        texts=rules.sort_sources.output.texts,
    output:
        books=f"{SORT}/books.jsonl",
        sort_items=f"{SORT}/items.jsonl",
        manifest=f"{SORT}/items.manifest.json",
    log:
        "results/logs/sort/items.log",
    benchmark:
        "results/benchmarks/sort/items.tsv"
    localrule: True
    conda:
        "../envs/data.yaml"
    params:
        settings=SORT_ITEMS_SETTINGS,
        seed=config["seed"],
    script:
        "../scripts/sort_items.py"


rule sort_retrieval:
    input:
        books=f"{SORT}/books.jsonl",
        sort_items=f"{SORT}/items.jsonl",
    output:
        table=f"{SORT}/retrieval.parquet",
        manifest=f"{SORT}/retrieval.manifest.json",
    log:
        "results/logs/sort/retrieval.log",
    benchmark:
        "results/benchmarks/sort/retrieval.tsv"
    conda:
        "../envs/sort.yaml"
    threads: config["threads"]
    params:
        compute=COMPUTE,
        settings=SORT_RETRIEVAL_SETTINGS,
    script:
        "../scripts/sort_retrieval.py"


rule sort_prompt:
    input:
        sort_items=f"{SORT}/items.jsonl",
        model=lambda wildcards: eval_model_dir(wildcards.model),
    output:
        selection=f"{SORT}/prompt/{{model}}/selection.json",
        rows=f"{SORT}/prompt/{{model}}/validation.parquet",
        manifest=f"{SORT}/prompt/{{model}}/manifest.json",
    log:
        "results/logs/sort/prompt/{model}.log",
    benchmark:
        "results/benchmarks/sort/prompt/{model}.tsv"
    conda:
        "../envs/eval.yaml"
    threads: config["threads"]
    resources:
        gpu=1,
    params:
        compute=COMPUTE,
        settings=SORT_PROMPT_SETTINGS,
    script:
        "../scripts/sort_prompt.py"


rule sort_rag_prompt:
    input:
        sort_items=f"{SORT}/items.jsonl",
        retrieval=f"{SORT}/retrieval.parquet",
        selection=f"{SORT}/prompt/{{model}}/selection.json",
        model=lambda wildcards: eval_model_dir(wildcards.model),
    output:
        selection=f"{SORT}/prompt/{{model}}/rag_selection.json",
        rows=f"{SORT}/prompt/{{model}}/rag_validation.parquet",
        manifest=f"{SORT}/prompt/{{model}}/rag_manifest.json",
    log:
        "results/logs/sort/prompt/{model}_rag.log",
    benchmark:
        "results/benchmarks/sort/prompt/{model}_rag.tsv"
    conda:
        "../envs/eval.yaml"
    threads: config["threads"]
    resources:
        gpu=1,
    params:
        compute=COMPUTE,
        settings=SORT_RAG_PROMPT_SETTINGS,
    script:
        "../scripts/sort_rag_prompt.py"


rule sort_evaluate_base:
    input:
        unpack(sort_condition_inputs),
        model=lambda wildcards: eval_model_dir(wildcards.model),
    output:
        table=SORT_ROWS.smk,
        manifest=f"{SORT}/evaluate/{{model}}/{{condition}}.manifest.json",
    log:
        "results/logs/sort/evaluate/{model}/{condition}.log",
    benchmark:
        "results/benchmarks/sort/evaluate/{model}/{condition}.tsv"
    conda:
        "../envs/eval.yaml"
    threads: config["threads"]
    resources:
        gpu=1,
    params:
        compute=COMPUTE,
        # the RAG reading instructions only under rag and oracle_rag
        settings=lambda wildcards: evaluate_settings(
            config, wildcards.condition
        ).param(),
        checkpoint=lambda wildcards, input: input.model,
        condition=lambda wildcards: wildcards.condition,
        model=lambda wildcards: eval_model_label(wildcards.model),
        run=BASE_RUN,
        step=0,
    script:
        "../scripts/sort_evaluate.py"


rule sort_stats:
    input:
        rows=expand(
            SORT_ROWS.smk,
            model=EVAL_MODELS,
            condition=SORT_CONDITIONS,
        ),
    output:
        tables=report(
            directory(f"{SORT}/tables"),
            patterns=["{table}.csv"],
            caption="../workflow/report/sort_tables.rst",
            category="SORT",
            subcategory="Tables",
            labels={"table": "{table}"},
        ),
        binomial=f"{SORT}/stats/binomial.parquet",
        mcnemar=expand(
            f"{SORT}/stats/{{model}}/mcnemar_conditions.parquet", model=EVAL_MODELS
        ),
        ttest=expand(
            f"{SORT}/stats/{{model}}/ttest_conditions.parquet", model=EVAL_MODELS
        ),
        bands=expand(f"{SORT}/stats/bands/{{name}}.parquet", name=CONDITION_FIGURES),
        manifest=f"{SORT}/stats/manifest.json",
    log:
        "results/logs/sort/stats.log",
    benchmark:
        "results/benchmarks/sort/stats.tsv"
    localrule: True
    conda:
        "../envs/stats.yaml"
    params:
        conditions=SORT_CONDITIONS,
        models=[eval_model_label(name) for name in EVAL_MODELS],
        stats=STATS,
    script:
        "../scripts/sort_stats.py"


rule sort_figures:
    input:
        unpack(sort_figure_inputs),
        binomial=f"{SORT}/stats/binomial.parquet",
        mcnemar=f"{SORT}/stats/{BASE_EVAL}/mcnemar_conditions.parquet",
        ttest=f"{SORT}/stats/{BASE_EVAL}/ttest_conditions.parquet",
        bands=expand(f"{SORT}/stats/bands/{{name}}.parquet", name=CONDITION_FIGURES),
    output:
        **{
            f"{name}_{ext}": (
                report(
                    f"results/figures/sort/{name}.{ext}",
                    caption=f"../workflow/report/sort_{name}.rst",
                    category="SORT",
                    subcategory="Memory conditions (base model)",
                    labels={
                        "figure": {
                            "fig3a": "Fig. 3a: in-context accuracy by excerpt length",
                            "fig3b": "Fig. 3b: in-context accuracy by distance",
                            "fig4": "Fig. 4: RAG and oracle RAG accuracy by distance",
                            "fig10": "Fig. 10: baseline accuracy by distance",
                            "mcnemar": "McNemar matrix across conditions",
                            "ttest": "Paired t-test matrix across conditions",
                        }[name]
                    },
                )
                if ext == "png"
                else f"results/figures/sort/{name}.{ext}"
            )
            for name in SORT_FIGURES
            for ext in ("pdf", "png")
        },
        manifest="results/figures/sort/manifest.json",
    log:
        "results/logs/sort/figures.log",
    benchmark:
        "results/benchmarks/sort/figures.tsv"
    localrule: True
    conda:
        "../envs/plot.yaml"
    params:
        model=MODEL_NAME,
        # the bands' level and resamples, which the footnotes name
        stats=STATS,
    script:
        "../scripts/sort_figures.py"


rule sort_fiction_items:
    input:
        fictions=f"{FICTION}/fictions.jsonl",
    output:
        sort_items=f"{SORT}/fiction/items.jsonl",
        manifest=f"{SORT}/fiction/items.manifest.json",
    log:
        "results/logs/sort/fiction/items.log",
    benchmark:
        "results/benchmarks/sort/fiction/items.tsv"
    localrule: True
    conda:
        "../envs/data.yaml"
    params:
        settings=SORT_FICTION_ITEMS_SETTINGS,
        seed=config["seed"],
    script:
        "../scripts/sort_fiction_items.py"


rule sort_fiction_evaluate:
    input:
        sort_items=f"{SORT}/fiction/items.jsonl",
        selection=f"{SORT}/prompt/{BASE_EVAL}/selection.json",
        model=checkpoint_input,
    output:
        table=SORT_FICTION_ROWS.smk,
        manifest=f"{SORT}/fiction/{{ft_model}}/evaluate/{{run}}/step-{{step}}.manifest.json",
    log:
        "results/logs/sort/fiction/{ft_model}/evaluate/{run}/step-{step}.log",
    benchmark:
        "results/benchmarks/sort/fiction/{ft_model}/evaluate/{run}/step-{step}.tsv"
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
        settings=SORT_EVALUATE_SETTINGS,
        condition="baseline",
        model=lambda wildcards: wildcards.ft_model,
    script:
        "../scripts/sort_evaluate.py"


rule sort_fiction_stats:
    input:
        **probe_inputs(SORT_FICTION_ROWS.smk),
    output:
        rows=f"{SORT}/fiction/{{ft_model}}/rows.parquet",
        binomial=f"{SORT}/fiction/{{ft_model}}/stats/binomial.parquet",
        tests=directory(f"{SORT}/fiction/{{ft_model}}/stats/tests"),
        bands=f"{SORT}/fiction/{{ft_model}}/stats/bands.parquet",
        manifest=f"{SORT}/fiction/{{ft_model}}/stats/manifest.json",
    log:
        "results/logs/sort/fiction/{ft_model}/stats.log",
    benchmark:
        "results/benchmarks/sort/fiction/{ft_model}/stats.tsv"
    localrule: True
    conda:
        "../envs/stats.yaml"
    params:
        runs=FICTION_RUNS,
        control=CONTROL_RUN if config["finetune"]["control"] else None,
        steps=STEPS,
        stats=STATS,
    script:
        "../scripts/sort_fiction_stats.py"


rule sort_fiction_figures:
    input:
        rows=f"{SORT}/fiction/{{ft_model}}/rows.parquet",
        bands=f"{SORT}/fiction/{{ft_model}}/stats/bands.parquet",
    output:
        pdf="results/figures/sort/fiction/{ft_model}/fiction_sort.pdf",
        png=report(
            "results/figures/sort/fiction/{ft_model}/fiction_sort.png",
            caption="../workflow/report/sort_fiction_sort.rst",
            category="SORT",
            subcategory="FictionalQA documents across fine-tuning",
            labels={
                "figure": "SORT on the FictionalQA documents per checkpoint",
                "base model": "{ft_model}",
            },
        ),
        manifest="results/figures/sort/fiction/{ft_model}/fiction_sort.manifest.json",
    log:
        "results/logs/sort/fiction/{ft_model}/figures.log",
    benchmark:
        "results/benchmarks/sort/fiction/{ft_model}/figures.tsv"
    localrule: True
    conda:
        "../envs/plot.yaml"
    params:
        model=lambda wildcards: wildcards.ft_model,
        # read by the report's caption (workflow/report/sort_fiction_sort.rst)
        note=lambda wildcards: FT_NOTES[wildcards.ft_model],
        runs=FICTION_RUNS,
        control=CONTROL_RUN if config["finetune"]["control"] else None,
        steps=STEPS,
        stats=STATS,
    script:
        "../scripts/sort_fiction_figures.py"


rule sort_parametric_texts:
    input:
        books=f"{SORT}/books.jsonl",
        sort_items=f"{SORT}/items.jsonl",
        selection=f"{SORT}/prompt/{BASE_EVAL}/selection.json",
        model=BASE_MODEL,
    output:
        texts=f"{SORT}/parametric/texts.json",
        manifest=f"{SORT}/parametric/texts.manifest.json",
    log:
        "results/logs/sort/parametric/texts.log",
    benchmark:
        "results/benchmarks/sort/parametric/texts.tsv"
    conda:
        "../envs/train.yaml"
    params:
        settings=SORT_PARAMETRIC_TEXTS_SETTINGS,
        seed=config["seed"],
    script:
        "../scripts/sort_parametric_texts.py"


rule sort_parametric_evaluate:
    input:
        sort_items=f"{SORT}/items.jsonl",
        selection=f"{SORT}/prompt/{BASE_EVAL}/selection.json",
        texts=f"{SORT}/parametric/texts.json",
        model=checkpoint_input,
    output:
        rows=SORT_PARAMETRIC_ROWS.smk,
        nll=SORT_PARAMETRIC_NLL.smk,
        manifest=f"{SORT}/parametric/{{prun}}/evaluate/epoch-{{epoch}}.manifest.json",
    log:
        "results/logs/sort/parametric/{prun}/evaluate/epoch-{epoch}.log",
    benchmark:
        "results/benchmarks/sort/parametric/{prun}/evaluate/epoch-{epoch}.tsv"
    wildcard_constraints:
        prun="|".join([BASE_RUN, *PARAMETRIC_RUNS]),
    conda:
        "../envs/eval.yaml"
    threads: config["threads"]
    resources:
        gpu=1,
    params:
        compute=COMPUTE,
        settings=SORT_EVALUATE_SETTINGS,
        checkpoint=checkpoint_path,
        # no-context SORT at every epoch; in context (App. E.4) after the last one; at epoch 0
        # only segment perplexity (the base model's SORT rows are those of sort_evaluate_base)
        conditions=lambda wildcards: (
            []
            if int(wildcards.epoch) == 0
            else ["baseline"]
            + (["in_context"] if int(wildcards.epoch) == SORT_EPOCHS else [])
        ),
        model=MODEL_NAME,
        run=lambda wildcards: wildcards.prun,
        epoch=lambda wildcards: int(wildcards.epoch),
    script:
        "../scripts/sort_parametric_evaluate.py"


rule sort_parametric_stats:
    input:
        base=expand(
            f"{SORT}/evaluate/{BASE_EVAL}/{{condition}}.parquet",
            condition=["baseline", "in_context"],
        ),
        rows=expand(
            SORT_PARAMETRIC_ROWS.smk,
            prun=PARAMETRIC_RUNS,
            epoch=range(1, SORT_EPOCHS + 1),
        ),
        nll=PARAMETRIC_NLL,
    output:
        rows=f"{SORT}/parametric/rows.parquet",
        mcnemar=f"{SORT}/parametric/stats/mcnemar.parquet",
        ttest=f"{SORT}/parametric/stats/ttest.parquet",
        bands=expand(
            f"{SORT}/parametric/stats/bands/{{name}}.parquet", name=EPOCH_FIGURES
        ),
        manifest=f"{SORT}/parametric/stats/manifest.json",
    log:
        "results/logs/sort/parametric/stats.log",
    benchmark:
        "results/benchmarks/sort/parametric/stats.tsv"
    localrule: True
    conda:
        "../envs/stats.yaml"
    params:
        stats=STATS,
    script:
        "../scripts/sort_parametric_stats.py"


rule sort_parametric_figures:
    input:
        rows=f"{SORT}/parametric/rows.parquet",
        mcnemar=f"{SORT}/parametric/stats/mcnemar.parquet",
        ttest=f"{SORT}/parametric/stats/ttest.parquet",
        bands=expand(
            f"{SORT}/parametric/stats/bands/{{name}}.parquet", name=EPOCH_FIGURES
        ),
        nll=PARAMETRIC_NLL,
    output:
        **{
            f"{name}_{ext}": (
                report(
                    f"results/figures/sort/{name}.{ext}",
                    caption=f"../workflow/report/sort_{name}.rst",
                    category="SORT",
                    subcategory="Parametric memory (fine-tuning)",
                    labels={
                        "figure": {
                            "fig12": "Fig. 12: segment perplexity by epoch",
                            "fig13": "Fig. 13: accuracy by epoch",
                            "fig14": "Fig. 14: McNemar matrix across checkpoints",
                            "fig15": "Fig. 15: paired t-test matrix across checkpoints",
                            "fig16": "Fig. 16: score of the correct answer by epoch",
                        }[name]
                    },
                )
                if ext == "png"
                else f"results/figures/sort/{name}.{ext}"
            )
            for name in SORT_PARAMETRIC_FIGURES
            for ext in ("pdf", "png")
        },
        manifest="results/figures/sort/parametric.manifest.json",
    log:
        "results/logs/sort/parametric/figures.log",
    benchmark:
        "results/benchmarks/sort/parametric/figures.tsv"
    localrule: True
    conda:
        "../envs/plot.yaml"
    params:
        model=MODEL_NAME,
        stats=STATS,
    script:
        "../scripts/sort_parametric_figures.py"


SORT_OUTPUTS = [f"{SORT}/tables", f"{SORT}/stats/manifest.json"]
SORT_OUTPUTS += expand(
    "results/figures/sort/{name}.{ext}", name=SORT_FIGURES, ext=("pdf", "png")
)
if FICTION_RUNS:
    SORT_OUTPUTS += expand(
        f"{SORT}/fiction/{{ft_model}}/stats/manifest.json", ft_model=PROBE_MODELS
    )
    SORT_OUTPUTS += expand(
        "results/figures/sort/fiction/{ft_model}/fiction_sort.{ext}",
        ft_model=PROBE_MODELS,
        ext=("pdf", "png"),
    )
if config["sort"]["parametric"]["enabled"]:
    SORT_OUTPUTS += [f"{SORT}/parametric/stats/manifest.json"]
    SORT_OUTPUTS += expand(
        "results/figures/sort/{name}.{ext}",
        name=SORT_PARAMETRIC_FIGURES,
        ext=("pdf", "png"),
    )
    SORT_OUTPUTS += expand(
        f"{SORT}/parametric/{{prun}}/train_log.parquet", prun=PARAMETRIC_RUNS
    )

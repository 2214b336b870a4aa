# FictionalQA (Kirchenbauer et al. 2026): webtext and the fiction corpus -> MCQ items -> splits ->
# (fine-tuning, rules/models.smk) -> checkpoint evaluation -> paired tests -> summary
# -> the paper's figures.  Step 0 of every run is the base model, evaluated once as run
# `base_model` (knowlab.core.checkpoints).  Results under results/fictionalqa/ (FICTIONALQA),
# figures under results/figures/fictionalqa/; each script calls knowlab.fictionalqa.steps.

# the paper's figure families drawn by the workflow (knowlab.fictionalqa.figures.FAMILIES
# also holds fig9 and fig10, which paper_figures draws from the paper's own numbers)
FIGURE_FAMILIES = ("fig2", "fig3", "fig4", "fig5", "fig6", "fig7", "fig8", "fig10_11")
# the figures across the base models (knowlab.fictionalqa.figures.ACROSS_MODELS): one series per
# model, in one colour per model in every figure, each model's control beside it
ACROSS_MODEL_FAMILIES = ("fig4", "fig7", "fig9", "fig10", "fig10_11")


rule fictionalqa_webtext:
    output:
        train="resources/webtext/train.jsonl",
        heldout="resources/webtext/heldout.jsonl",
        manifest="resources/webtext/manifest.json",
    log:
        f"{FICTIONALQA_LOGS}/webtext.log",
    benchmark:
        f"{FICTIONALQA_BENCHMARKS}/webtext.tsv"
    localrule: True
    conda:
        "../envs/data.yaml"
    params:
        settings=WebtextSettings.from_config(config).param(),
        seed=config["seed"],
    script:
        "../scripts/fictionalqa_webtext.py"


rule fictionalqa_corpus:
    input:
        fiction_files,
    output:
        seeds=f"{FICTION}/seeds.jsonl",
        fictsheets=f"{FICTION}/fictsheets.jsonl",
        fictions=f"{FICTION}/fictions.jsonl",
        fict_qa=f"{FICTION}/fict_qa.jsonl",
        manifest=f"{FICTION}/manifest.json",
    log:
        f"{FICTIONALQA_LOGS}/corpus.log",
    benchmark:
        f"{FICTIONALQA_BENCHMARKS}/corpus.tsv"
    localrule: True
    conda:
        "../envs/data.yaml"
    params:
        settings=FictionCorpusSettings.from_config(config).param(),
        basedir=BASEDIR,
        outdir=lambda wildcards, output: Path(output.seeds).parent,
    script:
        "../scripts/fictionalqa_corpus.py"


rule fictionalqa_rank_distractors:
    input:
        unpack(ranker_inputs),
    output:
        ranking=RANKED,
        manifest=f"{MCQ_DIR}/ranked_candidates.manifest.json",
    log:
        f"{FICTIONALQA_LOGS}/mcq/rank_distractors.log",
    benchmark:
        f"{FICTIONALQA_BENCHMARKS}/mcq/rank_distractors.tsv"
    priority: 20
    conda:
        "../envs/eval.yaml"
    threads: config["threads"]
    resources:
        gpu=1,
    params:
        compute=COMPUTE,
        # evict is read by rule fictionalqa_mcq (the choices from the ranking), batch_size by the
        # script (not a result key): changing either re-ranks nothing
        settings=RankerSettings.from_config(config).param(),
        seed=config["seed"],
        shards=f"{MCQ_DIR}/ranking_shards",  # kept by a killed job, read by its re-run
    script:
        "../scripts/fictionalqa_rank_distractors.py"


rule fictionalqa_mcq:
    input:
        unpack(mcq_inputs),
    output:
        mcq=f"{MCQ_DIR}/mcq{{n}}.jsonl",
        manifest=f"{MCQ_DIR}/mcq{{n}}.manifest.json",
    log:
        f"{FICTIONALQA_LOGS}/mcq/mcq{{n}}.log",
    benchmark:
        f"{FICTIONALQA_BENCHMARKS}/mcq/mcq{{n}}.tsv"
    conda:
        "../envs/data.yaml"
    params:
        settings=McqSettings.from_config(config).param(),
        seed=config["seed"],
    script:
        "../scripts/fictionalqa_mcq.py"


# the MCQ suites as lm-evaluation-harness tasks (knowlab.fictionalqa.lm_eval_export): a folder that
# names no absolute path: `lm_eval --include_path <the folder>` runs them from any directory
rule fictionalqa_lm_eval_tasks:
    input:
        mcq=MCQ,
    output:
        tasks=directory(LM_EVAL),
        manifest=f"{LM_EVAL}.manifest.json",
    log:
        f"{FICTIONALQA_LOGS}/lm_eval_tasks.log",
    benchmark:
        f"{FICTIONALQA_BENCHMARKS}/lm_eval_tasks.tsv"
    localrule: True
    conda:
        "../envs/eval.yaml"
    params:
        template=lambda wildcards: config["evaluate"]["mcq_template"],  # "{question}": no expansion
        # the base models whose checkpoints the README points to
        models={ft_model: ft_model_dir(ft_model) for ft_model in FT_MODELS},
    script:
        "../scripts/fictionalqa_lm_eval_tasks.py"


rule fictionalqa_real_qa:
    input:
        lambda wildcards: (
            [f"{BASEDIR}/{config['real_qa']['shipped']}"]
            if config["real_qa"]["source"] == "shipped"
            else []
        ),
    output:
        real_qa=REAL_QA,
        manifest=f"{FICTIONALQA}/corpus/real_qa.manifest.json",
    log:
        f"{FICTIONALQA_LOGS}/real_qa.log",
    benchmark:
        f"{FICTIONALQA_BENCHMARKS}/real_qa.tsv"
    conda:
        "../envs/data.yaml"
    params:
        settings=RealQASettings.from_config(config).param(),
        basedir=BASEDIR,
        seed=config["seed"],
    script:
        "../scripts/fictionalqa_real_qa.py"


rule fictionalqa_split:
    input:
        fictions=f"{FICTION}/fictions.jsonl",
        fict_qa=f"{FICTION}/fict_qa.jsonl",
    output:
        split=SPLIT.smk,
        manifest=f"{FICTIONALQA}/splits/{{split}}.manifest.json",
    log:
        f"{FICTIONALQA_LOGS}/splits/{{split}}.log",
    benchmark:
        f"{FICTIONALQA_BENCHMARKS}/splits/{{split}}.tsv"
    localrule: True
    conda:
        "../envs/data.yaml"
    params:
        settings=SplitSettings.from_config(config).param(),
        seed=config["seed"],
    script:
        "../scripts/fictionalqa_split.py"


rule fictionalqa_evaluate:
    input:
        **SUITE_INPUTS,
        model=checkpoint_input,
    output:
        table=ITEMS.smk,
        manifest=f"{FICTIONALQA}/{{ft_model}}/evaluate/{{run}}/step-{{step}}.manifest.json",
    log:
        f"{FICTIONALQA_LOGS}/{{ft_model}}/evaluate/{{run}}/step-{{step}}.log",
    benchmark:
        f"{FICTIONALQA_BENCHMARKS}/{{ft_model}}/evaluate/{{run}}/step-{{step}}.tsv"
    wildcard_constraints:
        run="|".join(re.escape(run) for run in [BASE_RUN, *RUNS, *REPLICATE_RUNS]),
    priority: 5
    conda:
        "../envs/eval.yaml"
    threads: config["threads"]
    resources:
        gpu=1,
    params:
        compute=ft_compute,
        # evaluate.batch_size is read by the script (not a result key)
        settings=lambda wildcards: EvaluateSettings.from_config(
            config, replicated_run(wildcards.run)
        ).param(),
        checkpoint=checkpoint_path,
        model=lambda wildcards: wildcards.ft_model,
        run=lambda wildcards: wildcards.run,
        step=lambda wildcards: int(wildcards.step),
    script:
        "../scripts/fictionalqa_evaluate.py"


rule fictionalqa_paired_tests:
    input:
        item_tables=compared_items,
    output:
        mcnemar=PAIRED_TESTS.fix(test="mcnemar").smk,
        ttest=PAIRED_TESTS.fix(test="ttest").smk,
        manifest=f"{FICTIONALQA}/{{ft_model}}/stats/{{run}}/{{suite}}.manifest.json",
    log:
        f"{FICTIONALQA_LOGS}/{{ft_model}}/stats/{{run}}/{{suite}}.log",
    benchmark:
        f"{FICTIONALQA_BENCHMARKS}/{{ft_model}}/stats/{{run}}/{{suite}}.tsv"
    localrule: True
    conda:
        "../envs/stats.yaml"
    params:
        stats=STATS,
        control=CONTROL_RUN,
        runs=compared_runs,
    script:
        "../scripts/fictionalqa_paired_tests.py"


rule fictionalqa_summary:
    input:
        item_tables=lambda wildcards: run_items(wildcards.ft_model, *RUNS),
        splits=expand(SPLIT.smk, split=FICTION_RUNS),
        train_logs=lambda wildcards: expand(
            TRAIN_LOG.smk, training=FICTIONALQA_TRAININGS[wildcards.ft_model]
        ),
    output:
        summary=report(
            SUMMARY.smk,
            caption="../workflow/report/fictionalqa_summary.rst",
            category="FictionalQA",
            subcategory="Summary table",
            labels={
                "table": "summary.csv: every metric per split, run, step and side",
                "base model": "{ft_model}",
            },
        ),
        manifest=f"{FICTIONALQA}/{{ft_model}}/summary.manifest.json",
    log:
        f"{FICTIONALQA_LOGS}/{{ft_model}}/summary.log",
    benchmark:
        f"{FICTIONALQA_BENCHMARKS}/{{ft_model}}/summary.tsv"
    conda:
        "../envs/stats.yaml"
    params:
        note=lambda wildcards: FT_NOTES[wildcards.ft_model],
        runs=RUNS,
        stats=STATS,
    script:
        "../scripts/fictionalqa_summary.py"


for family in FIGURE_FAMILIES:

    rule:
        name:
            f"fictionalqa_figure_{family}"
        input:
            summary=SUMMARY.smk,
            train_logs=lambda wildcards: expand(
                TRAIN_LOG.smk, training=FICTIONALQA_TRAININGS[wildcards.ft_model]
            ),
        output:
            pdf=f"{FICTIONALQA_FIGURES}/{{ft_model}}/{family}.pdf",
            png=report(
                f"{FICTIONALQA_FIGURES}/{{ft_model}}/{family}.png",
                caption=f"../workflow/report/fictionalqa_{family}.rst",
                category="FictionalQA",
                subcategory="Paper figures",
                labels={
                    "figure": {
                        "fig2": "Fig. 2: samples seen and epochs per source",
                        "fig3": "Fig. 3: verbatim memorization (Doc split)",
                        "fig4": "Fig. 4: document loss, Doc and Event splits",
                        "fig5": "Fig. 5: fictsheet loss and held-out webtext loss",
                        "fig6": "Fig. 6: nll(answer | question)",
                        "fig7": "Fig. 7: MCQ-4 accuracy",
                        "fig8": "Fig. 8: MCQ-4 accuracy, train vs val questions",
                        "fig10_11": "Figs. 10-11: MCQ-4 vs MCQ-10 accuracy",
                    }[family],
                    "base model": "{ft_model}",
                },
            ),
            manifest=f"{FICTIONALQA_FIGURES}/{{ft_model}}/{family}.manifest.json",
        log:
            f"{FICTIONALQA_LOGS}/figures/{{ft_model}}/{family}.log",
        benchmark:
            f"{FICTIONALQA_BENCHMARKS}/figures/{{ft_model}}/{family}.tsv"
        localrule: True
        conda:
            "../envs/plot.yaml"
        params:
            family=family,
            model=lambda wildcards: wildcards.ft_model,
            note=lambda wildcards: FT_NOTES[wildcards.ft_model],
        script:
            "../scripts/fictionalqa_figure.py"


rule fictionalqa_figure_pvalues:
    input:
        table=PAIRED_TESTS.smk,
    output:
        pdf=f"{FICTIONALQA_FIGURES}/{{ft_model}}/stats/{{run}}/{{suite}}_{{test}}.pdf",
        png=report(
            f"{FICTIONALQA_FIGURES}/{{ft_model}}/stats/{{run}}/{{suite}}_{{test}}.png",
            caption="../workflow/report/fictionalqa_pvalues.rst",
            category="FictionalQA",
            subcategory="Paired tests",
            labels={
                "base model": "{ft_model}",
                "run": "{run}",
                "suite": "{suite}",
                "test": "{test}",
            },
        ),
        manifest=f"{FICTIONALQA_FIGURES}/{{ft_model}}/stats/{{run}}/{{suite}}_{{test}}.manifest.json",
    log:
        f"{FICTIONALQA_LOGS}/figures/{{ft_model}}/stats/{{run}}/{{suite}}_{{test}}.log",
    benchmark:
        f"{FICTIONALQA_BENCHMARKS}/figures/{{ft_model}}/stats/{{run}}/{{suite}}_{{test}}.tsv"
    localrule: True
    conda:
        "../envs/plot.yaml"
    params:
        note=lambda wildcards: FT_NOTES[wildcards.ft_model],
    script:
        "../scripts/fictionalqa_figure_pvalues.py"


# the base models: name, source, parameter count (the model-size finding, the dataset card)
rule fictionalqa_models:
    input:
        models=[ft_model_dir(ft_model) for ft_model in FT_MODELS],
    output:
        table=MODELS.smk,
        manifest=f"{FICTIONALQA}/models.manifest.json",
    log:
        f"{FICTIONALQA_LOGS}/models.log",
    benchmark:
        f"{FICTIONALQA_BENCHMARKS}/models.tsv"
    localrule: True
    conda:
        "../envs/eval.yaml"
    params:
        names=FT_MODELS,
        sources=[model_source(FT_CONFIGS[ft_model]) for ft_model in FT_MODELS],
    script:
        "../scripts/fictionalqa_models.py"


for family in ACROSS_MODEL_FAMILIES:

    rule:
        name:
            f"fictionalqa_across_models_{family}"
        input:
            summaries=expand(SUMMARY.smk, ft_model=FT_MODELS),
        output:
            pdf=f"{FICTIONALQA_FIGURES}/across_models/{family}.pdf",
            png=report(
                f"{FICTIONALQA_FIGURES}/across_models/{family}.png",
                caption=f"../workflow/report/fictionalqa_across_models_{family}.rst",
                category="FictionalQA",
                subcategory="Across base models",
                labels={"figure": f"{family} across base models"},
            ),
            manifest=f"{FICTIONALQA_FIGURES}/across_models/{family}.manifest.json",
        log:
            f"{FICTIONALQA_LOGS}/figures/across_models/{family}.log",
        benchmark:
            f"{FICTIONALQA_BENCHMARKS}/figures/across_models/{family}.tsv"
        localrule: True
        conda:
            "../envs/plot.yaml"
        params:
            family=family,
            models=FT_MODELS,
            note=ACROSS_MODELS_NOTE,
        script:
            "../scripts/fictionalqa_across_models.py"


FICTIONALQA_OUTPUTS = expand(SPLIT.smk, split=SPLITS)
FICTIONALQA_OUTPUTS += [LM_EVAL]
if FICTION_RUNS:
    FICTIONALQA_OUTPUTS += expand(
        f"{FICTIONALQA_FIGURES}/{{ft_model}}/{{family}}.{{ext}}",
        ft_model=FT_MODELS,
        family=FIGURE_FAMILIES,
        ext=("pdf", "png"),
    )
    FICTIONALQA_OUTPUTS += expand(
        f"{FICTIONALQA_FIGURES}/across_models/{{family}}.{{ext}}",
        family=ACROSS_MODEL_FAMILIES,
        ext=("pdf", "png"),
    )
    FICTIONALQA_OUTPUTS += expand(
        f"{FICTIONALQA_FIGURES}/{{ft_model}}/stats/{{run}}/{{suite}}_{{test}}.{{ext}}",
        ft_model=FT_MODELS,
        run=FICTION_RUNS,
        suite=STATS_SUITES,
        test=TESTS,
        ext=("pdf", "png"),
    )

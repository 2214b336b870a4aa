# FictionalQA (Kirchenbauer et al. 2026): webtext and the fiction corpus -> MCQ items -> splits ->
# (fine-tuning, rules/models.smk) -> checkpoint evaluation -> paired tests -> summary
# -> the paper's figures.  Step 0 of every run is the base model, evaluated once as run
# `base_model` (knowlab.core.checkpoints).  Results under results/fictionalqa/, figures under
# results/figures/fictionalqa/ (every path: knowlab.layout); each script calls knowlab.fictionalqa.steps.

# the paper's figure families drawn by the workflow per base model, family -> title in the report, and
# across the base models (knowlab.fictionalqa.settings; their drawing: knowlab.fictionalqa.figures)
from knowlab.fictionalqa.settings import FIGURES as FIGURE_FAMILIES
from knowlab.fictionalqa.settings import ACROSS_MODEL_FIGURES as ACROSS_MODEL_FAMILIES


rule fictionalqa_webtext:
    output:
        train=layout.WEBTEXT_TRAIN,
        heldout=layout.WEBTEXT_HELDOUT,
        manifest=layout.WEBTEXT_STEP.manifest,
    log:
        layout.WEBTEXT_STEP.log,
    benchmark:
        layout.WEBTEXT_STEP.benchmark
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
        **{table: layout.CORPUS.path(table=table) for table in TABLES},
        manifest=layout.CORPUS_STEP.manifest,
    log:
        layout.CORPUS_STEP.log,
    benchmark:
        layout.CORPUS_STEP.benchmark
    localrule: True
    conda:
        "../envs/data.yaml"
    params:
        settings=FictionCorpusSettings.from_config(config).param(),
        outdir=lambda wildcards, output: Path(output.seeds).parent,
    script:
        "../scripts/fictionalqa_corpus.py"


rule fictionalqa_rank_distractors:
    input:
        unpack(ranker_inputs),
    output:
        ranking=layout.RANKED_CANDIDATES.smk,
        manifest=layout.RANK_DISTRACTORS_STEP.manifest,
    log:
        layout.RANK_DISTRACTORS_STEP.log,
    benchmark:
        layout.RANK_DISTRACTORS_STEP.benchmark
    priority: 20
    conda:
        "../envs/eval.yaml"
    threads: job_threads(config, "ranking")
    resources:
        **job_resources(config, "ranking"),
    params:
        compute=COMPUTE,
        # evict is read by rule fictionalqa_mcq (the choices from the ranking), batch_size by the
        # script (not a result key): changing either re-ranks nothing
        settings=RankerSettings.from_config(config).param(),
        seed=config["seed"],
        shards=layout.RANKING_SHARDS.smk,  # kept by a killed job, read by its re-run
    script:
        "../scripts/fictionalqa_rank_distractors.py"


rule fictionalqa_mcq:
    input:
        unpack(mcq_inputs),
    output:
        mcq=layout.MCQ.smk,
        manifest=layout.MCQ_STEP.manifest,
    log:
        layout.MCQ_STEP.log,
    benchmark:
        layout.MCQ_STEP.benchmark
    conda:
        "../envs/data.yaml"
    resources:
        **job_resources(config, "cpu_step"),
    params:
        settings=McqSettings.from_config(config).param(),
        seed=config["seed"],
    script:
        "../scripts/fictionalqa_mcq.py"


# the MCQ suites as lm-evaluation-harness tasks (knowlab.fictionalqa.lm_eval_export): a folder that
# names no absolute path: `lm_eval --include_path <the folder>` runs them from any directory
rule fictionalqa_lm_eval_tasks:
    input:
        mcq=MCQ_FILES,
    output:
        tasks=directory(layout.LM_EVAL_TASKS.smk),
        manifest=layout.LM_EVAL_TASKS_STEP.manifest,
    log:
        layout.LM_EVAL_TASKS_STEP.log,
    benchmark:
        layout.LM_EVAL_TASKS_STEP.benchmark
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
            [checkout_path(config["real_qa"]["shipped"])]
            if config["real_qa"]["source"] == "shipped"
            else []
        ),
    output:
        real_qa=layout.REAL_QA.smk,
        manifest=layout.REAL_QA_STEP.manifest,
    log:
        layout.REAL_QA_STEP.log,
    benchmark:
        layout.REAL_QA_STEP.benchmark
    # it downloads (real_qa.source triviaqa): on the submit host, whose network a cluster job may lack;
    # a seeded sample of real_qa.triviaqa.n questions, seconds
    localrule: True
    conda:
        "../envs/data.yaml"
    params:
        settings=RealQASettings.from_config(config).param(),
        seed=config["seed"],
    script:
        "../scripts/fictionalqa_real_qa.py"


rule fictionalqa_split:
    input:
        fictions=layout.CORPUS.path(table="fictions"),
        fict_qa=layout.CORPUS.path(table="fict_qa"),
    output:
        split=layout.SPLIT.smk,
        manifest=layout.SPLIT_STEP.manifest,
    log:
        layout.SPLIT_STEP.log,
    benchmark:
        layout.SPLIT_STEP.benchmark
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
        table=layout.ITEMS.smk,
        manifest=layout.ITEMS_STEP.manifest,
    log:
        layout.ITEMS_STEP.log,
    benchmark:
        layout.ITEMS_STEP.benchmark
    wildcard_constraints:
        run="|".join(re.escape(run) for run in [BASE.run, *RUNS, *REPLICATE_RUNS]),
    priority: 5
    conda:
        "../envs/eval.yaml"
    threads: job_threads(config, "checkpoint_evaluation")
    resources:
        **job_resources(config, "checkpoint_evaluation"),
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
        mcnemar=layout.PAIRED_TESTS.fix(test="mcnemar").smk,
        ttest=layout.PAIRED_TESTS.fix(test="ttest").smk,
        manifest=layout.PAIRED_TESTS_STEP.manifest,
    log:
        layout.PAIRED_TESTS_STEP.log,
    benchmark:
        layout.PAIRED_TESTS_STEP.benchmark
    localrule: True
    conda:
        "../envs/stats.yaml"
    params:
        stats=STATS.param("mcnemar_exact_below", "ttest_alternative"),
        control=CONTROL_RUN,
        runs=compared_runs,
    script:
        "../scripts/fictionalqa_paired_tests.py"


rule fictionalqa_summary:
    input:
        item_tables=lambda wildcards: run_items(
            wildcards.ft_model, *MODEL_RUNS[wildcards.ft_model]
        ),
        splits=expand(layout.SPLIT.smk, split=FICTION_RUNS),
        train_logs=lambda wildcards: expand(
            layout.TRAIN_LOG.smk, training=FICTIONALQA_TRAININGS[wildcards.ft_model]
        ),
    output:
        summary=report(
            layout.SUMMARY.smk,
            caption="../workflow/report/fictionalqa_summary.rst",
            category="FictionalQA",
            subcategory="Summary table",
            labels={
                "table": "summary.csv: every metric per split, run, step and side",
                "base model": "{ft_model}",
            },
        ),
        manifest=layout.SUMMARY_STEP.manifest,
    log:
        layout.SUMMARY_STEP.log,
    benchmark:
        layout.SUMMARY_STEP.benchmark
    conda:
        "../envs/stats.yaml"
    resources:
        **job_resources(config, "cpu_step"),
    params:
        note=lambda wildcards: FT_NOTES[wildcards.ft_model],
        runs=lambda wildcards: MODEL_RUNS[wildcards.ft_model],
        stats=STATS.param("confidence", "bootstrap_resamples", "seed"),
    script:
        "../scripts/fictionalqa_summary.py"


for family in FIGURE_FAMILIES:

    rule:
        name:
            f"fictionalqa_figure_{family}"
        input:
            summary=layout.SUMMARY.smk,
            train_logs=lambda wildcards: expand(
                layout.TRAIN_LOG.smk,
                training=FICTIONALQA_TRAININGS[wildcards.ft_model],
            ),
        output:
            **figure_outputs(
                layout.FQA_FIGURE.fix(family=family),
                f"fictionalqa_{family}",
                "FictionalQA",
                "Paper figures",
                {"figure": FIGURE_FAMILIES[family], "base model": "{ft_model}"},
            ),
            manifest=layout.FQA_FIGURE_STEP.fix(family=family).manifest,
        log:
            layout.FQA_FIGURE_STEP.fix(family=family).log,
        benchmark:
            layout.FQA_FIGURE_STEP.fix(family=family).benchmark
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
        table=layout.PAIRED_TESTS.smk,
    output:
        **figure_outputs(
            layout.FQA_PVALUES_FIGURE,
            "fictionalqa_pvalues",
            "FictionalQA",
            "Paired tests",
            {
                "base model": "{ft_model}",
                "run": "{run}",
                "suite": "{suite}",
                "test": "{test}",
            },
        ),
        manifest=layout.FQA_PVALUES_FIGURE_STEP.manifest,
    log:
        layout.FQA_PVALUES_FIGURE_STEP.log,
    benchmark:
        layout.FQA_PVALUES_FIGURE_STEP.benchmark
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
        table=layout.MODELS.smk,
        manifest=layout.MODELS_STEP.manifest,
    log:
        layout.MODELS_STEP.log,
    benchmark:
        layout.MODELS_STEP.benchmark
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
            summaries=expand(layout.SUMMARY.smk, ft_model=FT_MODELS),
        output:
            **figure_outputs(
                layout.ACROSS_MODELS_FIGURE.fix(family=family),
                f"fictionalqa_across_models_{family}",
                "FictionalQA",
                "Across base models",
                {"figure": f"{family} across base models"},
            ),
            manifest=layout.ACROSS_MODELS_FIGURE_STEP.fix(family=family).manifest,
        log:
            layout.ACROSS_MODELS_FIGURE_STEP.fix(family=family).log,
        benchmark:
            layout.ACROSS_MODELS_FIGURE_STEP.fix(family=family).benchmark
        localrule: True
        conda:
            "../envs/plot.yaml"
        params:
            family=family,
            models=FT_MODELS,
            note=ACROSS_MODELS_NOTE,
        script:
            "../scripts/fictionalqa_across_models.py"


FICTIONALQA_OUTPUTS = expand(layout.SPLIT.smk, split=SPLITS)
FICTIONALQA_OUTPUTS += [layout.LM_EVAL_TASKS.smk]
if FICTION_RUNS:
    FICTIONALQA_OUTPUTS += expand(
        layout.FQA_FIGURE.smk,
        ft_model=FT_MODELS,
        family=FIGURE_FAMILIES,
        ext=("pdf", "png"),
    )
    FICTIONALQA_OUTPUTS += expand(
        layout.ACROSS_MODELS_FIGURE.smk,
        family=ACROSS_MODEL_FAMILIES,
        ext=("pdf", "png"),
    )
    FICTIONALQA_OUTPUTS += [
        path
        for ft_model in FT_MODELS
        for path in expand(
            layout.FQA_PVALUES_FIGURE.smk,
            ft_model=ft_model,
            run=[run for run in MODEL_RUNS[ft_model] if run != CONTROL_RUN],
            suite=STATS_SUITES,
            test=TESTS,
            ext=("pdf", "png"),
        )
    ]

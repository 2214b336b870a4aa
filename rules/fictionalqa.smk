# FictionalQA (Kirchenbauer et al. 2026): webtext and the fiction corpus -> MCQ items -> splits ->
# (fine-tuning, rules/models.smk) -> checkpoint evaluation -> paired tests -> summary
# -> the paper's figures.  Step 0 of every run is the base model, evaluated once as run
# `base_model` (knowlab.core.checkpoints).  Results under results/fictionalqa/ (FICTIONALQA),
# figures under results/figures/fictionalqa/; each script calls knowlab.fictionalqa.steps.

# the paper's figure families drawn by the workflow (knowlab.fictionalqa.figures.FAMILIES
# also holds fig9 and fig10, which paper_figures draws from the paper's own numbers)
FIGURE_FAMILIES = ("fig2", "fig3", "fig4", "fig5", "fig6", "fig7", "fig8", "fig10_11")


rule fictionalqa_webtext:
    output:
        train="resources/webtext/train.jsonl",
        heldout="resources/webtext/heldout.jsonl",
        manifest="resources/webtext/manifest.json",
    log:
        f"{FICTIONALQA_LOGS}/webtext.log",
    benchmark:
        f"{FICTIONALQA_BENCHMARKS}/webtext.tsv"
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
    conda:
        "../envs/eval.yaml"
    params:
        template=lambda wildcards: config["evaluate"]["mcq_template"],  # "{question}": no expansion
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
        manifest=f"{FICTIONALQA}/evaluate/{{run}}/step-{{step}}.manifest.json",
    log:
        f"{FICTIONALQA_LOGS}/evaluate/{{run}}/step-{{step}}.log",
    benchmark:
        f"{FICTIONALQA_BENCHMARKS}/evaluate/{{run}}/step-{{step}}.tsv"
    wildcard_constraints:
        run="|".join([BASE_RUN, *RUNS]),
    priority: 5
    conda:
        "../envs/eval.yaml"
    threads: config["threads"]
    resources:
        gpu=1,
    params:
        compute=COMPUTE,
        # evaluate.batch_size is read by the script (not a result key)
        settings=lambda wildcards: EvaluateSettings.from_config(
            config, wildcards.run
        ).param(),
        checkpoint=checkpoint_path,
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
        manifest=f"{FICTIONALQA}/stats/{{run}}/{{suite}}.manifest.json",
    log:
        f"{FICTIONALQA_LOGS}/stats/{{run}}/{{suite}}.log",
    benchmark:
        f"{FICTIONALQA_BENCHMARKS}/stats/{{run}}/{{suite}}.tsv"
    conda:
        "../envs/stats.yaml"
    params:
        settings=PairedTestSettings.from_config(config).param(),
        control=CONTROL_RUN,
        runs=compared_runs,
    script:
        "../scripts/fictionalqa_paired_tests.py"


rule fictionalqa_summary:
    input:
        item_tables=run_items(*RUNS),
        splits=expand(SPLIT.smk, split=FICTION_RUNS),
        train_logs=expand(TRAIN_LOG.smk, training=FICTIONALQA_TRAININGS),
    output:
        summary=report(
            SUMMARY.smk,
            caption="../workflow/report/fictionalqa_summary.rst",
            category="FictionalQA",
            subcategory="Summary table",
            labels={
                "table": "summary.csv: every metric per split, run, step and side"
            },
        ),
        manifest=f"{FICTIONALQA}/summary.manifest.json",
    log:
        f"{FICTIONALQA_LOGS}/summary.log",
    benchmark:
        f"{FICTIONALQA_BENCHMARKS}/summary.tsv"
    conda:
        "../envs/stats.yaml"
    params:
        note=FIGURE_NOTE,
        runs=RUNS,
        seed=config["seed"],
        resamples=config["stats"]["bootstrap_resamples"],
    script:
        "../scripts/fictionalqa_summary.py"


for family in FIGURE_FAMILIES:

    rule:
        name:
            f"fictionalqa_figure_{family}"
        input:
            summary=SUMMARY.smk,
            train_logs=expand(TRAIN_LOG.smk, training=FICTIONALQA_TRAININGS),
        output:
            pdf=f"{FICTIONALQA_FIGURES}/{family}.pdf",
            png=report(
                f"{FICTIONALQA_FIGURES}/{family}.png",
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
                    }[family]
                },
            ),
            manifest=f"{FICTIONALQA_FIGURES}/{family}.manifest.json",
        log:
            f"{FICTIONALQA_LOGS}/figures/{family}.log",
        benchmark:
            f"{FICTIONALQA_BENCHMARKS}/figures/{family}.tsv"
        conda:
            "../envs/plot.yaml"
        params:
            family=family,
            model=MODEL_NAME,
            note=FIGURE_NOTE,
        script:
            "../scripts/fictionalqa_figure.py"


rule fictionalqa_figure_pvalues:
    input:
        table=PAIRED_TESTS.smk,
    output:
        pdf=f"{FICTIONALQA_FIGURES}/stats/{{run}}/{{suite}}_{{test}}.pdf",
        png=report(
            f"{FICTIONALQA_FIGURES}/stats/{{run}}/{{suite}}_{{test}}.png",
            caption="../workflow/report/fictionalqa_pvalues.rst",
            category="FictionalQA",
            subcategory="Paired tests",
            labels={"run": "{run}", "suite": "{suite}", "test": "{test}"},
        ),
        manifest=f"{FICTIONALQA_FIGURES}/stats/{{run}}/{{suite}}_{{test}}.manifest.json",
    log:
        f"{FICTIONALQA_LOGS}/figures/stats/{{run}}/{{suite}}_{{test}}.log",
    benchmark:
        f"{FICTIONALQA_BENCHMARKS}/figures/stats/{{run}}/{{suite}}_{{test}}.tsv"
    conda:
        "../envs/plot.yaml"
    params:
        note=FIGURE_NOTE,
    script:
        "../scripts/fictionalqa_figure_pvalues.py"


FICTIONALQA_OUTPUTS = expand(SPLIT.smk, split=SPLITS)
FICTIONALQA_OUTPUTS += [LM_EVAL]
if FICTION_RUNS:
    FICTIONALQA_OUTPUTS += expand(
        f"{FICTIONALQA_FIGURES}/{{family}}.{{ext}}",
        family=FIGURE_FAMILIES,
        ext=("pdf", "png"),
    )
    FICTIONALQA_OUTPUTS += expand(
        f"{FICTIONALQA_FIGURES}/stats/{{run}}/{{suite}}_{{test}}.{{ext}}",
        run=FICTION_RUNS,
        suite=STATS_SUITES,
        test=TESTS,
        ext=("pdf", "png"),
    )

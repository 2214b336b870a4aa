# FictionalQA (Kirchenbauer et al. 2026): webtext and the fiction corpus -> MCQ items -> splits ->
# (fine-tuning, rules/models.smk) -> checkpoint evaluation -> paired tests -> summary
# -> the paper's figures.  Step 0 of every run is the base model, evaluated once as run
# `base_model` (knowlab.core.checkpoints).

# the paper's figure families drawn by the workflow (knowlab.fictionalqa.figures.FAMILIES
# also holds fig9 and fig10, which paper_figures draws from the paper's own numbers)
FIGURE_FAMILIES = ("fig2", "fig3", "fig4", "fig5", "fig6", "fig7", "fig8", "fig10_11")


rule webtext:
    output:
        train="resources/webtext/train.jsonl",
        heldout="resources/webtext/heldout.jsonl",
        manifest="resources/webtext/manifest.json",
    log:
        "results/logs/webtext.log",
    benchmark:
        "results/benchmarks/webtext.tsv"
    conda:
        "../envs/data.yaml"
    params:
        settings=WebtextSettings.from_config(config).param(),
        seed=config["seed"],
    script:
        "../scripts/webtext.py"


rule fiction_corpus:
    input:
        fiction_files,
    output:
        seeds=f"{FICTION}/seeds.jsonl",
        fictsheets=f"{FICTION}/fictsheets.jsonl",
        fictions=f"{FICTION}/fictions.jsonl",
        fict_qa=f"{FICTION}/fict_qa.jsonl",
        manifest=f"{FICTION}/manifest.json",
    log:
        "results/logs/fiction_corpus.log",
    benchmark:
        "results/benchmarks/fiction_corpus.tsv"
    conda:
        "../envs/data.yaml"
    params:
        settings=FictionCorpusSettings.from_config(config).param(),
        basedir=BASEDIR,
        outdir=lambda wildcards, output: Path(output.seeds).parent,
    script:
        "../scripts/fiction_corpus.py"


rule rank_distractors:
    input:
        unpack(ranker_inputs),
    output:
        ranking=RANKED,
        manifest="results/corpus/mcq/ranked_candidates.manifest.json",
    log:
        "results/logs/mcq/rank_distractors.log",
    benchmark:
        "results/benchmarks/mcq/rank_distractors.tsv"
    priority: 20
    conda:
        "../envs/eval.yaml"
    threads: config["threads"]
    resources:
        gpu=1,
    params:
        compute=COMPUTE,
        # evict is read by rule mcq (the choices from the ranking), batch_size by the script (not a
        # result key): changing either re-ranks nothing
        settings=RankerSettings.from_config(config).param(),
        seed=config["seed"],
        shards="results/corpus/mcq/ranking_shards",  # kept by a killed job, read by its re-run
    script:
        "../scripts/rank_distractors.py"


rule mcq:
    input:
        unpack(mcq_inputs),
    output:
        mcq="results/corpus/mcq/mcq{n}.jsonl",
        manifest="results/corpus/mcq/mcq{n}.manifest.json",
    log:
        "results/logs/mcq/mcq{n}.log",
    benchmark:
        "results/benchmarks/mcq/mcq{n}.tsv"
    conda:
        "../envs/data.yaml"
    params:
        settings=McqSettings.from_config(config).param(),
        seed=config["seed"],
    script:
        "../scripts/mcq.py"


# the MCQ suites as lm-evaluation-harness tasks (knowlab.fictionalqa.lm_eval_export): a folder that
# names no absolute path: `lm_eval --include_path <the folder>` runs them from any directory
rule lm_eval_tasks:
    input:
        mcq=MCQ,
    output:
        tasks=directory("results/lm_eval"),
        manifest="results/lm_eval.manifest.json",
    log:
        "results/logs/lm_eval_tasks.log",
    benchmark:
        "results/benchmarks/lm_eval_tasks.tsv"
    conda:
        "../envs/eval.yaml"
    params:
        template=lambda wildcards: config["evaluate"]["mcq_template"],  # "{question}": no expansion
    script:
        "../scripts/lm_eval_tasks.py"


rule real_qa:
    input:
        lambda wildcards: (
            [f"{BASEDIR}/{config['real_qa']['shipped']}"]
            if config["real_qa"]["source"] == "shipped"
            else []
        ),
    output:
        real_qa=REAL_QA,
        manifest="results/corpus/real_qa.manifest.json",
    log:
        "results/logs/real_qa.log",
    benchmark:
        "results/benchmarks/real_qa.tsv"
    conda:
        "../envs/data.yaml"
    params:
        settings=RealQASettings.from_config(config).param(),
        basedir=BASEDIR,
        seed=config["seed"],
    script:
        "../scripts/real_qa.py"


rule split:
    input:
        fictions=f"{FICTION}/fictions.jsonl",
        fict_qa=f"{FICTION}/fict_qa.jsonl",
    output:
        split=SPLIT.smk,
        manifest="results/splits/{split}.manifest.json",
    log:
        "results/logs/splits/{split}.log",
    benchmark:
        "results/benchmarks/splits/{split}.tsv"
    conda:
        "../envs/data.yaml"
    params:
        settings=SplitSettings.from_config(config).param(),
        seed=config["seed"],
    script:
        "../scripts/split.py"


rule evaluate:
    input:
        **SUITE_INPUTS,
        model=checkpoint_input,
    output:
        table=ITEMS.smk,
        manifest="results/evaluate/{run}/step-{step}.manifest.json",
    log:
        "results/logs/evaluate/{run}/step-{step}.log",
    benchmark:
        "results/benchmarks/evaluate/{run}/step-{step}.tsv"
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
        "../scripts/evaluate.py"


rule paired_tests:
    input:
        item_tables=compared_items,
    output:
        mcnemar=PAIRED_TESTS.fix(test="mcnemar").smk,
        ttest=PAIRED_TESTS.fix(test="ttest").smk,
        manifest="results/stats/{run}/{suite}.manifest.json",
    log:
        "results/logs/stats/{run}/{suite}.log",
    benchmark:
        "results/benchmarks/stats/{run}/{suite}.tsv"
    conda:
        "../envs/stats.yaml"
    params:
        settings=PairedTestSettings.from_config(config).param(),
        control=CONTROL_RUN,
        runs=compared_runs,
    script:
        "../scripts/paired_tests.py"


rule summary:
    input:
        item_tables=run_items(*RUNS),
        splits=expand(SPLIT.smk, split=FICTION_RUNS),
        train_logs=expand(TRAIN_LOG.smk, training=[f"finetune/{run}" for run in RUNS]),
    output:
        summary=report(
            SUMMARY.smk,
            caption="../workflow/report/fictionalqa_summary.rst",
            category="FictionalQA",
            subcategory="Summary table",
            labels={
                "table": "fictionalqa.csv: every metric per split, run, step and side"
            },
        ),
        manifest="results/summary/fictionalqa.manifest.json",
    log:
        "results/logs/summary.log",
    benchmark:
        "results/benchmarks/summary.tsv"
    conda:
        "../envs/stats.yaml"
    params:
        note=FIGURE_NOTE,
        runs=RUNS,
        seed=config["seed"],
        resamples=config["stats"]["bootstrap_resamples"],
    script:
        "../scripts/summary.py"


for family in FIGURE_FAMILIES:

    rule:
        name:
            f"figure_{family}"
        input:
            summary=SUMMARY.smk,
            train_logs=expand(
                TRAIN_LOG.smk, training=[f"finetune/{run}" for run in RUNS]
            ),
        output:
            pdf=f"results/figures/{family}.pdf",
            png=report(
                f"results/figures/{family}.png",
                caption=f"../workflow/report/{family}.rst",
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
            manifest=f"results/figures/{family}.manifest.json",
        log:
            f"results/logs/figures/{family}.log",
        benchmark:
            f"results/benchmarks/figures/{family}.tsv"
        conda:
            "../envs/plot.yaml"
        params:
            family=family,
            model=MODEL_NAME,
            note=FIGURE_NOTE,
        script:
            "../scripts/figure.py"


rule figure_pvalues:
    input:
        table=PAIRED_TESTS.smk,
    output:
        pdf="results/figures/stats/{run}/{suite}_{test}.pdf",
        png=report(
            "results/figures/stats/{run}/{suite}_{test}.png",
            caption="../workflow/report/pvalues.rst",
            category="FictionalQA",
            subcategory="Paired tests",
            labels={"run": "{run}", "suite": "{suite}", "test": "{test}"},
        ),
        manifest="results/figures/stats/{run}/{suite}_{test}.manifest.json",
    log:
        "results/logs/figures/stats/{run}/{suite}_{test}.log",
    benchmark:
        "results/benchmarks/figures/stats/{run}/{suite}_{test}.tsv"
    conda:
        "../envs/plot.yaml"
    params:
        note=FIGURE_NOTE,
    script:
        "../scripts/figure_pvalues.py"


FICTIONALQA_OUTPUTS = expand(SPLIT.smk, split=SPLITS)
FICTIONALQA_OUTPUTS += ["results/lm_eval"]
if FICTION_RUNS:
    FICTIONALQA_OUTPUTS += expand(
        "results/figures/{family}.{ext}", family=FIGURE_FAMILIES, ext=("pdf", "png")
    )
    FICTIONALQA_OUTPUTS += expand(
        "results/figures/stats/{run}/{suite}_{test}.{ext}",
        run=FICTION_RUNS,
        suite=STATS_SUITES,
        test=TESTS,
        ext=("pdf", "png"),
    )

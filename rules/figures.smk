# The study's summary table and the FictionalQA paper's figures (PDF and PNG),
# one rule per figure family; p-value matrices of the paired tests per run.


rule summary:
    input:
        item_tables=expand(
            "results/evaluate/{run}/step-{step}.parquet", run=RUNS, step=STEPS
        ),
        splits=expand("results/splits/{split}.json", split=FICTION_RUNS),
        train_logs=expand("results/finetune/{run}/train_log.parquet", run=RUNS),
    output:
        summary="results/summary/fictionalqa.csv",
        manifest="results/summary/fictionalqa.manifest.json",
    log:
        "results/logs/summary.log",
    conda:
        "../envs/stats.yaml"
    params:
        seed=config["seed"],
        resamples=config["stats"]["bootstrap_resamples"],
    script:
        "../scripts/summary.py"


for family in FIGURE_FAMILIES:

    rule:
        name:
            f"figure_{family}"
        input:
            summary="results/summary/fictionalqa.csv",
            train_logs=expand("results/finetune/{run}/train_log.parquet", run=RUNS),
        output:
            pdf=f"results/figures/{family}.pdf",
            png=report(
                f"results/figures/{family}.png",
                caption=f"../workflow/report/{family}.rst",
                category="FictionalQA",
                subcategory="Paper figures",
            ),
            manifest=f"results/figures/{family}.manifest.json",
        log:
            f"results/logs/figures/{family}.log",
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
        table="results/stats/{run}/{suite}_{test}.parquet",
    output:
        pdf="results/figures/stats/{run}/{suite}_{test}.pdf",
        png=report(
            "results/figures/stats/{run}/{suite}_{test}.png",
            caption="../workflow/report/pvalues.rst",
            category="FictionalQA",
            subcategory="Paired tests",
        ),
        manifest="results/figures/stats/{run}/{suite}_{test}.manifest.json",
    log:
        "results/logs/figures/stats/{run}/{suite}_{test}.log",
    conda:
        "../envs/plot.yaml"
    params:
        note=FIGURE_NOTE,
    script:
        "../scripts/figure_pvalues.py"

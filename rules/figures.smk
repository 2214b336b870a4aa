# Aggregates and figures (PDF and PNG) of the FictionalQA study, one rule per figure family.


rule summary:
    input:
        item_tables=compared_runs,
        split="results/splits/{run}.json",
    output:
        summary="results/summary/{run}.csv",
        manifest="results/summary/{run}.manifest.json",
    log:
        "results/logs/summary/{run}.log",
    conda:
        "../envs/plot.yaml"
    script:
        "../scripts/summary.py"


rule figure_loss:
    input:
        summary="results/summary/{run}.csv",
    output:
        pdf="results/figures/{run}/loss.pdf",
        png=report(
            "results/figures/{run}/loss.png",
            caption="../workflow/report/loss.rst",
            category="FictionalQA",
            subcategory="{run} split",
        ),
        manifest="results/figures/{run}/loss.manifest.json",
    log:
        "results/logs/figures/{run}/loss.log",
    conda:
        "../envs/plot.yaml"
    params:
        control=CONTROL,
    script:
        "../scripts/figure_loss.py"


rule figure_em:
    input:
        summary="results/summary/{run}.csv",
        train_log="results/finetune/{run}/train_log.parquet",
    output:
        pdf="results/figures/{run}/em.pdf",
        png=report(
            "results/figures/{run}/em.png",
            caption="../workflow/report/em.rst",
            category="FictionalQA",
            subcategory="{run} split",
        ),
        manifest="results/figures/{run}/em.manifest.json",
    log:
        "results/logs/figures/{run}/em.log",
    conda:
        "../envs/plot.yaml"
    params:
        em_tokens=config["evaluate"]["em_tokens"],
    script:
        "../scripts/figure_em.py"


rule figure_mcq:
    input:
        summary="results/summary/{run}.csv",
    output:
        pdf="results/figures/{run}/mcq.pdf",
        png=report(
            "results/figures/{run}/mcq.png",
            caption="../workflow/report/mcq.rst",
            category="FictionalQA",
            subcategory="{run} split",
        ),
        manifest="results/figures/{run}/mcq.manifest.json",
    log:
        "results/logs/figures/{run}/mcq.log",
    conda:
        "../envs/plot.yaml"
    params:
        control=CONTROL,
        suite=MCNEMAR_SUITE,
    script:
        "../scripts/figure_mcq.py"


rule figure_mcnemar:
    input:
        table="results/stats/{run}/mcnemar.parquet",
    output:
        pdf="results/figures/{run}/mcnemar.pdf",
        png=report(
            "results/figures/{run}/mcnemar.png",
            caption="../workflow/report/mcnemar.rst",
            category="FictionalQA",
            subcategory="{run} split",
        ),
        manifest="results/figures/{run}/mcnemar.manifest.json",
    log:
        "results/logs/figures/{run}/mcnemar.log",
    conda:
        "../envs/plot.yaml"
    script:
        "../scripts/figure_mcnemar.py"


rule figure_mixture:
    input:
        train_logs=expand("results/finetune/{run}/train_log.parquet", run=RUNS),
    output:
        pdf="results/figures/mixture.pdf",
        png=report(
            "results/figures/mixture.png",
            caption="../workflow/report/mixture.rst",
            category="FictionalQA",
        ),
        manifest="results/figures/mixture.manifest.json",
    log:
        "results/logs/figures/mixture.log",
    conda:
        "../envs/plot.yaml"
    script:
        "../scripts/figure_mixture.py"

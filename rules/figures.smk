# Figures (PDF and PNG) of the FictionalQA study.


rule figures:
    input:
        item_tables=compared_runs,
        split="results/splits/{run}.json",
        train_log="results/finetune/{run}/train_log.parquet",
        mcnemar="results/stats/{run}/mcnemar.parquet",
    output:
        loss_pdf="results/figures/{run}/loss.pdf",
        loss_png=report(
            "results/figures/{run}/loss.png",
            caption="../workflow/report/loss.rst",
            category="FictionalQA",
            subcategory="{run} split",
        ),
        em_pdf="results/figures/{run}/em.pdf",
        em_png=report(
            "results/figures/{run}/em.png",
            caption="../workflow/report/em.rst",
            category="FictionalQA",
            subcategory="{run} split",
        ),
        mcq_pdf="results/figures/{run}/mcq.pdf",
        mcq_png=report(
            "results/figures/{run}/mcq.png",
            caption="../workflow/report/mcq.rst",
            category="FictionalQA",
            subcategory="{run} split",
        ),
        mcnemar_pdf="results/figures/{run}/mcnemar.pdf",
        mcnemar_png=report(
            "results/figures/{run}/mcnemar.png",
            caption="../workflow/report/mcnemar.rst",
            category="FictionalQA",
            subcategory="{run} split",
        ),
        summary="results/figures/{run}/summary.csv",
        manifest="results/figures/{run}/manifest.json",
    log:
        "results/logs/figures/{run}.log",
    conda:
        "../envs/plot.yaml"
    params:
        control=CONTROL,
        suite=MCNEMAR_SUITE,
        em_tokens=config["evaluate"]["em_tokens"],
    script:
        "../scripts/figures.py"


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

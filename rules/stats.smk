# Paired statistics over item tables.


rule mcnemar:
    input:
        item_tables=compared_runs,
    output:
        table="results/stats/{run}/mcnemar.parquet",
        manifest="results/stats/{run}/mcnemar.manifest.json",
    log:
        "results/logs/stats/{run}/mcnemar.log",
    conda:
        "../envs/stats.yaml"
    params:
        cfg=config["stats"],
        control=CONTROL,
        suite=MCNEMAR_SUITE,
    script:
        "../scripts/mcnemar.py"

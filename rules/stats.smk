# Paired tests over item tables: McNemar on per-question correctness and paired
# t-tests on the normalised gold log-probability, checkpoint x checkpoint of a run
# and the run vs the control at matched steps, Holm-corrected.


rule paired_tests:
    input:
        item_tables=compared_runs,
    output:
        mcnemar="results/stats/{run}/{suite}_mcnemar.parquet",
        ttest="results/stats/{run}/{suite}_ttest.parquet",
        manifest="results/stats/{run}/{suite}.manifest.json",
    log:
        "results/logs/stats/{run}/{suite}.log",
    conda:
        "../envs/stats.yaml"
    params:
        cfg=config["stats"],
        control=CONTROL,
    script:
        "../scripts/paired_tests.py"

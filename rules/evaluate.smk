# Checkpoint evaluation: one job per (run, checkpoint), item-level rows.


rule evaluate:
    input:
        checkpoints="results/finetune/{run}/checkpoints",
        fictions=f"{FICTION}/fictions.jsonl",
        webtext="resources/webtext/heldout.jsonl",
        mcq=MCQ,
    output:
        table="results/evaluate/{run}/step-{step}.parquet",
        manifest="results/evaluate/{run}/step-{step}.manifest.json",
    log:
        "results/logs/evaluate/{run}/step-{step}.log",
    conda:
        "../envs/eval.yaml"
    threads: config["threads"]
    resources:
        gpu=1,
    params:
        cfg=config["evaluate"],
    script:
        "../scripts/evaluate.py"

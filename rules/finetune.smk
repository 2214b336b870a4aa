# Fine-tuning through DeepSpeed: one run per split, plus the webtext-only control.


rule finetune:
    input:
        unpack(finetune_inputs),
    output:
        checkpoints=directory("results/finetune/{run}/checkpoints"),
        train_log="results/finetune/{run}/train_log.parquet",
        manifest="results/finetune/{run}/manifest.json",
    log:
        "results/logs/finetune/{run}.log",
    conda:
        "../envs/train.yaml"
    threads: config["threads"]
    resources:
        gpu=1,
    params:
        cfg=config["finetune"],
        seed=config["seed"],
    script:
        "../scripts/finetune.py"

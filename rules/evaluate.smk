# Checkpoint evaluation: one job per (run, checkpoint), item-level rows.
# Step 0 of every run is the base model: it is evaluated once and shared.


rule evaluate_base:
    input:
        **SUITE_INPUTS,
        model="resources/base_model",
    output:
        table="results/evaluate/base_model.parquet",
        manifest="results/evaluate/base_model.manifest.json",
    log:
        "results/logs/evaluate/base_model.log",
    conda:
        "../envs/eval.yaml"
    threads: config["threads"]
    resources:
        gpu=1,
    params:
        cfg=config["evaluate"],
        checkpoint=lambda wildcards, input: input.model,
        run="base_model",
        step=0,
    script:
        "../scripts/evaluate.py"


rule evaluate:
    input:
        **SUITE_INPUTS,
        checkpoints="results/finetune/{run}/checkpoints",
    output:
        table="results/evaluate/{run}/step-{step}.parquet",
        manifest="results/evaluate/{run}/step-{step}.manifest.json",
    log:
        "results/logs/evaluate/{run}/step-{step}.log",
    wildcard_constraints:
        step="[1-9][0-9]*",
    conda:
        "../envs/eval.yaml"
    threads: config["threads"]
    resources:
        gpu=1,
    params:
        cfg=config["evaluate"],
        checkpoint=lambda wildcards, input: f"{input.checkpoints}/step-{wildcards.step}",
        run=lambda wildcards: wildcards.run,
        step=lambda wildcards: int(wildcards.step),
    script:
        "../scripts/evaluate.py"


rule evaluate_step0:
    input:
        table="results/evaluate/base_model.parquet",
    output:
        table="results/evaluate/{run}/step-0.parquet",
        manifest="results/evaluate/{run}/step-0.manifest.json",
    log:
        "results/logs/evaluate/{run}/step-0.log",
    conda:
        "../envs/eval.yaml"
    script:
        "../scripts/evaluate_step0.py"

# Models shared by the studies: the base model (pinned by sha256), models evaluated as
# they are, and fine-tuning: one rule for every run of every study, the recipe chosen
# by the output folder (a FictionalQA run, or a SORT parametric-memory run).


rule base_model:
    input:
        unpack(base_model_inputs),
    output:
        model=directory(BASE_MODEL),
        manifest="resources/base_model.manifest.json",
    log:
        "results/logs/base_model.log",
    conda:
        "../envs/train.yaml"
    params:
        cfg=config["model"],
        seed=config["seed"],
    script:
        "../scripts/base_model.py"


rule eval_model:
    """A model evaluated as it is (eval_models): a Hub id or a local folder, saved as safetensors."""
    output:
        model=directory("resources/models/{model}"),
        manifest="resources/models/{model}.manifest.json",
    log:
        "results/logs/models/{model}.log",
    conda:
        "../envs/train.yaml"
    params:
        spec=lambda wildcards: config["eval_models"][wildcards.model],
    script:
        "../scripts/eval_model.py"


rule finetune:
    input:
        unpack(finetune_inputs),
    output:
        checkpoints=directory("results/{training}/checkpoints"),
        train_log="results/{training}/train_log.parquet",
        manifest="results/{training}/manifest.json",
    log:
        "results/logs/{training}.log",
    wildcard_constraints:
        training="|".join(
            [f"finetune/{run}" for run in RUNS]
            + [f"sort/parametric/{prun}" for prun in PARAMETRIC_RUNS]
        ),
    conda:
        "../envs/train.yaml"
    threads: config["threads"]
    resources:
        gpu=1,
    params:
        recipe=finetune_recipe,
        run=lambda wildcards: wildcards.training.split("/")[-1],
        cfg=config["finetune"],
        # only the SORT runs read (and rerun on a change of) sort.parametric
        parametric=lambda wildcards: (
            config["sort"]["parametric"]
            if finetune_recipe(wildcards) == "sort_parametric"
            else None
        ),
        seed=config["seed"],
    script:
        "../scripts/finetune.py"

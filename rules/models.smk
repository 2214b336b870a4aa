# Models shared by the studies: the base model (pinned by sha256), the other base models
# FictionalQA fine-tunes (finetune.models), models evaluated as they are, and fine-tuning: one rule for every run of every study, the recipe chosen
# by the output folder (a FictionalQA run, or a SORT parametric-memory run), one job per
# checkpoint, each launched as one process per GPU (finetune.distributed).


rule base_model:
    input:
        unpack(base_model_inputs),
    output:
        model=directory(BASE_MODEL),
        manifest="resources/base_model.manifest.json",
    log:
        "results/logs/base_model.log",
    benchmark:
        "results/benchmarks/base_model.tsv"
    # every model job waits on it: start it first
    priority: 30
    conda:
        "../envs/train.yaml"
    params:
        settings=BaseModelSettings.from_config(config).param(),
        seed=config["seed"],
    script:
        "../scripts/base_model.py"


use rule base_model as finetune_base_model with:
    output:
        model=directory("resources/base_models/{ft_model}"),
        manifest="resources/base_models/{ft_model}.manifest.json",
    log:
        "results/logs/base_models/{ft_model}.log",
    benchmark:
        "results/benchmarks/base_models/{ft_model}.tsv"
    params:
        settings=lambda wildcards: BaseModelSettings.from_config(
            FT_CONFIGS[wildcards.ft_model]
        ).param(),
        seed=config["seed"],


rule eval_model:
    """A model evaluated as it is (eval_models): a Hub id or a local folder, saved as safetensors."""
    output:
        model=directory("resources/models/{model}"),
        manifest="resources/models/{model}.manifest.json",
    log:
        "results/logs/models/{model}.log",
    benchmark:
        "results/benchmarks/models/{model}.tsv"
    conda:
        "../envs/train.yaml"
    params:
        compute=COMPUTE,
        spec=lambda wildcards: config["eval_models"][wildcards.model],
    script:
        "../scripts/eval_model.py"


rule finetune:
    """One checkpoint interval of one run: from the previous checkpoint's training state (or the
    base model) to this checkpoint, which it saves with the state the next interval resumes from.
    The state is temporary: Snakemake deletes it once the next interval has finished."""
    input:
        unpack(finetune_inputs),
    output:
        checkpoint=directory("results/{training}/checkpoints/{checkpoint}"),
        state=temp(directory("results/{training}/state/{checkpoint}")),
        train_log="results/{training}/train_log/{checkpoint}.parquet",
        manifest="results/{training}/checkpoints/{checkpoint}.manifest.json",
    log:
        "results/logs/{training}/{checkpoint}.log",
    benchmark:
        "results/benchmarks/{training}/{checkpoint}.tsv"
    wildcard_constraints:
        training="|".join(TRAININGS),
        checkpoint=INNER_CHECKPOINTS,
    # fine-tuning and the distractor ranking start first: every checkpoint evaluation waits on both
    priority: 10
    conda:
        "../envs/train.yaml"
    threads: config["threads"]
    resources:
        **FINETUNE_RESOURCES,
    params:
        launch=finetune_launch,
        # what the recipe reads: the spec below holds it too, but it is derived from the job's
        # paths, and Snakemake checks only params that are not for a change
        settings=finetune_settings,
        spec=finetune_spec,
    # the log, and every attempt appended beside it (knowlab.core.provenance.attempts_path);
    # where the live curves go comes from KNOWLAB_TRACKING (rules/common.smk): not a param, so
    # that changing it retrains nothing
    shell:
        "{params.launch} -m knowlab.finetune_job --threads {threads} {params.spec:q} 2>&1 "
        "| tee -a {log}.attempts > {log}"


use rule finetune as finetune_last with:
    output:
        checkpoint=directory("results/{training}/checkpoints/{checkpoint}"),
        train_log="results/{training}/train_log/{checkpoint}.parquet",
        manifest="results/{training}/checkpoints/{checkpoint}.manifest.json",
    wildcard_constraints:
        training="|".join(TRAININGS),
        checkpoint=LAST_CHECKPOINTS,


rule train_log:
    """A run's training log, one row per optimizer step, from its checkpoints' logs."""
    input:
        logs=lambda wildcards: train_logs(wildcards.training),
    output:
        train_log=TRAIN_LOG.smk,
        manifest="results/{training}/train_log.manifest.json",
    log:
        "results/logs/{training}/train_log.log",
    benchmark:
        "results/benchmarks/{training}/train_log.tsv"
    wildcard_constraints:
        training="|".join(TRAININGS),
    localrule: True
    conda:
        "../envs/data.yaml"
    script:
        "../scripts/train_log.py"

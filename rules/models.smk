# Models shared by the studies: the Hub repositories the config names (downloaded on the submit
# host), the base model (pinned by sha256), the other base models
# FictionalQA fine-tunes (finetune.models), models evaluated as they are, and fine-tuning: one rule for every run of every study, the recipe chosen
# by the output folder (a FictionalQA run, or a SORT parametric-memory run), one job per
# checkpoint, each launched as one process per GPU (finetune.distributed).


# A Hub repository at its revision (HUB_SNAPSHOTS: a model, or a dataset), its files as they are,
# downloaded where Snakemake runs. A local rule, so that on a cluster it runs on the submit host, which
# has a network, and the jobs that read the repository (listing its folder among their inputs,
# knowlab.downloads) load it from there on nodes without one; no model is loaded here (knowlab.core.hub).
step_rule(
    layout.HUB_SNAPSHOT_STEP,
    "data",
    output={"snapshot": directory(layout.HUB_SNAPSHOT)},
    params={"settings": lambda wildcards: HUB_SNAPSHOTS[wildcards.snapshot].param()},
    # the base models' conversions wait on it
    priority=40,
    constraints={
        "snapshot": "|".join(re.escape(key) for key in HUB_SNAPSHOTS) or "(?!)"
    },
)

# the project's base model, then FictionalQA's other base models (finetune.models), each with the
# settings of its own config; every model job waits on them: started first
BASE_MODEL_RULES = [
    (layout.BASE_MODEL_STEP, BASE.path, BaseModelSettings.from_config(config).param()),
    (
        layout.FT_BASE_MODEL_STEP,
        layout.FT_BASE_MODEL,
        lambda wildcards: BaseModelSettings.from_config(
            FT_CONFIGS[wildcards.ft_model]
        ).param(),
    ),
]
for step, folder, settings in BASE_MODEL_RULES:
    step_rule(
        step,
        "train",
        unnamed_input=[unpack(base_model_inputs)],
        output={"model": directory(folder)},
        params={"settings": settings, "seed": config["seed"]},
        kind="model_conversion",
        threads=1,
        priority=30,
        script_path="../scripts/base_model.py",
    )

# A model evaluated as it is (eval_models): a Hub id (from its download) or a local folder, saved as
# safetensors.
step_rule(
    layout.EVAL_MODEL_STEP,
    "train",
    unnamed_input=[unpack(eval_model_inputs)],
    output={"model": directory(layout.EVAL_MODEL)},
    params={
        "compute": COMPUTE,
        "spec": lambda wildcards: config["eval_models"][wildcards.model],
    },
    kind="eval_model_conversion",
    threads=1,
)


rule finetune:
    """One checkpoint interval of one run: from the previous checkpoint's training state (or the
    base model) to this checkpoint, which it saves with the state the next interval resumes from.
    The state is temporary: Snakemake deletes it once the next interval has finished."""
    input:
        unpack(finetune_inputs),
    output:
        checkpoint=directory(layout.CHECKPOINT.smk),
        state=temp(directory(layout.TRAINING_STATE.smk)),
        train_log=layout.CHECKPOINT_TRAIN_LOG.smk,
        manifest=layout.FINETUNE_STEP.manifest,
    log:
        layout.FINETUNE_STEP.log,
    benchmark:
        layout.FINETUNE_STEP.benchmark
    wildcard_constraints:
        training="|".join(TRAININGS),
        checkpoint=INNER_CHECKPOINTS,
    # fine-tuning and the distractor ranking start first: every checkpoint evaluation waits on both
    priority: 10
    conda:
        "../envs/train.yaml"
    threads: job_threads(config, "finetune")
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
        checkpoint=directory(layout.CHECKPOINT.smk),
        train_log=layout.CHECKPOINT_TRAIN_LOG.smk,
        manifest=layout.FINETUNE_STEP.manifest,
    wildcard_constraints:
        training="|".join(TRAININGS),
        checkpoint=LAST_CHECKPOINTS,


# A run's training log, one row per optimizer step, from its checkpoints' logs.
step_rule(
    layout.TRAIN_LOG_STEP,
    "data",
    input={"logs": lambda wildcards: train_logs(wildcards.training)},
    output={"train_log": layout.TRAIN_LOG.smk},
    constraints={"training": "|".join(TRAININGS)},
)

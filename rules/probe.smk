# A probe at every FictionalQA checkpoint: the rule template of SORT on the fiction documents
# (rules/sort.smk) and of grounding across fine-tuning (rules/grounding.smk).  Both probe every
# checkpoint of every base model of PROBE_MODELS with their own items (knowlab.core.probe):
#   evaluate  a job per checkpoint (the base model once, as run base_model at step 0), on the GPU
#   stats     one job across them all per base model ({ft_model}), with each item's side
#   figures   the figure of the stats job's tables
# checkpoint_probe writes these three rules of a probe from what differs between the probes, so
# the two expand, constrain and name their checkpoints, read their splits and take their shared
# params the same way.  A study's own rules between evaluate and stats (grounding_checkpoint_score)
# constrain {run} with PROBE_RUNS.
# The template is a function, not a loop over the probes (Snakemake's procedural rules): a rule's
# script and params are evaluated when its job runs, and each call's closures keep their own probe,
# where a loop's would all see its last one.
def checkpoint_probe(evaluate, table, stats, figures):
    """Write the three rules of a probe of every checkpoint, each given as a ProbeRule
    (rules/common.smk): ``evaluate``, per checkpoint, in envs/eval.yaml, its inputs with ``model``
    (the checkpoint), a cluster job of its ``kind``; ``stats``, across the checkpoints of ``table``
    (a per-checkpoint output path with {ft_model}, {run} and {step}), in envs/stats.yaml;
    ``figures``, in envs/plot.yaml.
    """

    rule:
        name:
            evaluate.step.rule
        input:
            **evaluate.input,
            model=checkpoint_input,
        output:
            **evaluate.output,
            manifest=evaluate.step.manifest,
        log:
            evaluate.step.log,
        benchmark:
            evaluate.step.benchmark
        wildcard_constraints:
            run=PROBE_RUNS,
        conda:
            "../envs/eval.yaml"
        threads: job_threads(config, evaluate.kind)
        resources:
            **job_resources(config, evaluate.kind),
        params:
            **evaluate.params,
            checkpoint=checkpoint_path,
            run=lambda wildcards: wildcards.run,
            step=lambda wildcards: int(wildcards.step),
            compute=ft_compute,
            model=lambda wildcards: wildcards.ft_model,
        script:
            evaluate.script

    rule:
        name:
            stats.step.rule
        input:
            **probe_inputs(table),
        output:
            **stats.output,
            manifest=stats.step.manifest,
        log:
            stats.step.log,
        benchmark:
            stats.step.benchmark
        localrule: True
        conda:
            "../envs/stats.yaml"
        params:
            **stats.params,
            runs=fiction_runs_of,
            control=control_of,
            steps=STEPS,
        script:
            stats.script

    rule:
        name:
            figures.step.rule
        input:
            **figures.input,
        output:
            **figures.output,
            manifest=figures.step.manifest,
        log:
            figures.step.log,
        benchmark:
            figures.step.benchmark
        localrule: True
        conda:
            "../envs/plot.yaml"
        params:
            **figures.params,
            model=lambda wildcards: wildcards.ft_model,
            # read by the report's captions (workflow/report/)
            note=lambda wildcards: FT_NOTES[wildcards.ft_model],
            runs=fiction_runs_of,
            control=control_of,
            steps=STEPS,
        script:
            figures.script

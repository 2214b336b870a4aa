# A probe at every FictionalQA checkpoint: the rule template of SORT on the fiction documents
# (rules/sort.smk) and of grounding across fine-tuning (rules/grounding.smk).  Both probe every
# checkpoint of the probed runs (PROBED_RUNS) of every base model of PROBE_MODELS with their own
# items (knowlab.core.probe):
#   evaluate  a job per checkpoint (the base model once, as run base_model at step 0), on the GPU
#   stats     one job across them all per base model ({ft_model}), with each item's side
#   figures   the figure of the stats job's tables
# checkpoint_probe writes these three rules of a probe from what differs between the probes, so
# the two expand, constrain and name their checkpoints, read their splits and take their shared
# params the same way.  A study's own rules between evaluate and stats (grounding_checkpoint_score)
# constrain {run} with PROBE_RUNS.
def checkpoint_probe(evaluate, table, stats, figures):
    """Write the three rules of a probe of every checkpoint (step_rule, rules/step.smk), each given
    as a ProbeRule (rules/common.smk): ``evaluate``, per checkpoint, in envs/eval.yaml, its inputs
    with ``model`` (the checkpoint), a cluster job of its ``kind``; ``stats``, across the checkpoints
    of ``table`` (a per-checkpoint output path with {ft_model}, {run} and {step}), in envs/stats.yaml;
    ``figures``, in envs/plot.yaml.
    """
    step_rule(
        evaluate.step,
        "eval",
        input={**evaluate.input, "model": checkpoint_input},
        output=evaluate.output,
        params={
            **evaluate.params,
            "checkpoint": checkpoint_path,
            "run": lambda wildcards: wildcards.run,
            "step": lambda wildcards: int(wildcards.step),
            "compute": ft_compute,
            "model": lambda wildcards: wildcards.ft_model,
        },
        kind=evaluate.kind,
        script_path=evaluate.script,
        constraints={"run": PROBE_RUNS},
    )
    across = {"runs": probed_fiction_runs, "control": probed_control, "steps": STEPS}
    step_rule(
        stats.step,
        "stats",
        input=probe_inputs(table),
        output=stats.output,
        params={**stats.params, **across},
        script_path=stats.script,
    )
    step_rule(
        figures.step,
        "plot",
        input=figures.input,
        output=figures.output,
        params={
            **figures.params,
            "model": lambda wildcards: wildcards.ft_model,
            # read by the report's captions (workflow/report/)
            "note": lambda wildcards: FT_NOTES[wildcards.ft_model],
            **across,
        },
        script_path=figures.script,
    )

# The rule template of a step (Snakemake's procedural rules, as rules/probe.smk): every rule writes its
# outputs, a manifest, a log and a benchmark named by its knowlab.layout.Step, runs in one conda env
# under envs/, and is either a local rule (no cluster kind: bookkeeping, tables, figures) or a cluster
# job of a kind (knowlab.cluster: its threads and its SLURM request).  step_rule writes that part once;
# a study's rule file gives only what its step reads and writes.  Snakemake names the file of the
# `rule:` keyword as the rule's file (here); RULE_FILES keeps the file each rule is written in, the one a
# reader opens (the RO-Crate's rule files, rule_sources of rules/common.smk).
import inspect

RULE_FILES = {}


def step_rule(
    step,
    env,
    input={},
    output={},
    params={},
    kind=None,
    threads=None,
    unnamed_input=(),
    script_path=None,
    priority=0,
    constraints={},
):
    """Write the rule of ``step`` (a knowlab.layout.Step: its name, log, benchmark and manifest).

    ``env`` names its conda env (envs/<env>.yaml); ``input``, ``output`` and ``params`` are its
    named inputs, outputs (besides ``manifest``) and params; ``unnamed_input``, the inputs
    before them without a name (paths, lists of paths, input functions; one that returns a dict
    wrapped in Snakemake's unpack). ``kind`` is the cluster kind of its jobs
    (knowlab.cluster.job_threads and job_resources); without one the rule is a local rule.
    ``threads`` overrides the kind's (1: a one-thread step that still runs as a cluster job);
    ``constraints``, its wildcard constraints.
    ``script_path`` is its script relative to rules/ (default: scripts/<rule>.py).

    The job's run function, which the rule block below writes inside this function, calls
    Snakemake's ``script`` with the global ``config``: no local here may take either name.
    """
    RULE_FILES[step.rule] = inspect.currentframe().f_back.f_code.co_filename

    rule:
        name:
            step.rule
        input:
            *unnamed_input,
            **input,
        output:
            **output,
            manifest=step.manifest,
        log:
            step.log,
        benchmark:
            step.benchmark
        wildcard_constraints:
            **constraints,
        priority: priority
        localrule: kind is None
        conda:
            f"../envs/{env}.yaml"
        threads: threads or (job_threads(config, kind) if kind else 1)
        resources:
            **(job_resources(config, kind) if kind else {}),
        params:
            **params,
        script:
            script_path or f"../scripts/{step.rule}.py"

# The names the rules expand over, wildcard constraints and input functions; every path comes
# from knowlab.layout (`layout.X`).
# Cross-field config checks are knowlab.config.check_config (called by the Snakefile).
import json
import os
import re
from typing import NamedTuple

from snakemake.settings.types import DeploymentMethod

from knowlab.cluster import finetune_job_resources, job_resources, job_threads
from knowlab.config import model_config, model_source, settings_note
from knowlab.core.checkpoints import CONTROL_RUN, replicated_run, run_seed
from knowlab.core.device import ComputeSettings
from knowlab.core.models import BaseModelSettings
from knowlab.core.provenance import portable
from knowlab.core.stats import StatsSettings
from knowlab.downloads import (
    eval_model_snapshot,
    reader_snapshots,
    model_snapshot,
    snapshot_inputs,
    snapshots,
)
from knowlab.core.train import launch_command
from knowlab.fiction_generation.settings import ATTEMPT_KINDS
from knowlab.fictionalqa.settings import (
    EvaluateSettings,
    McqSettings,
    RankerSettings,
    RealQASettings,
    SplitSettings,
    WebtextSettings,
)
from knowlab.fiction.schema import TABLES
from knowlab.fiction.settings import FictionCorpusSettings
from knowlab.findings import FindingsSettings
from knowlab.findings.plan import PlanSettings
from knowlab.finetune_job import (
    PYTHON_ENV,
    SRC_ENV,
    TRACKING_ENV,
    FinetuneJobSettings,
    job_spec,
)
from knowlab import layout
from knowlab.layout import (
    Layout,
    Step,
    fictionalqa_training,
    finetune_models,
    parametric_training,
    training_model,
)
from knowlab.sort.settings import CONDITION_FIGURES, EPOCH_FIGURES
from knowlab.sort.runs import PARAMETRIC_RUNS
from knowlab.sort.prompts import RAG_CONDITIONS
from knowlab.tooling.source import relative_source

# the checkout (the Snakefile's KNOWLAB_CHECKOUT: its folder, or the copy of the package's files made
# when Snakemake reads the workflow from a URL or a git source): the workflow's own data, prompts and
# src/, also when another workflow uses it as a module (there, workflow.basedir is that workflow's folder)
BASEDIR = KNOWLAB_CHECKOUT
# the names this config expands over and the job lists built from them (knowlab.layout)
LAYOUT = Layout(config)
# the project's base model under its names (knowlab.layout.BaseModel): its folder (path), its
# name in item rows and figures (name), its key of eval_models (evaluated_as; its SORT prompt
# selection also serves the fiction and parametric SORT runs), the run label of step 0 (run)
BASE = LAYOUT.base_model
# the settings line under every figure
FIGURE_NOTE = settings_note(config)

# the param `compute` of the jobs that run a model (the compute keys that can change a result)
COMPUTE = ComputeSettings.from_config(config).param()
# the statistics settings (knowlab.core.stats.StatsSettings): each rule that tests or draws an interval
# takes as its param `stats` only the fields its step reads, STATS.param(<field>, ...)
STATS = StatsSettings.from_config(config)

# The base models FictionalQA fine-tunes (finetune.models; knowlab.layout.finetune_models): the
# {ft_model} level of FictionalQA's results and of SORT's and grounding's probes of its checkpoints.
# Each sees the config with its own source, training and compute settings (knowlab.config.model_config).
FT_MODELS = LAYOUT.ft_models
# the base models whose checkpoints SORT and grounding probe (finetune.probe_models; null: all)
PROBE_MODELS = LAYOUT.probe_models
FT_CONFIGS = {name: model_config(config, name) for name in FT_MODELS}
FT_COMPUTE = {
    name: ComputeSettings.from_config(view).param() for name, view in FT_CONFIGS.items()
}
# the settings line under each base model's figures, and under the figures across them
FT_NOTES = {name: settings_note(view, name) for name, view in FT_CONFIGS.items()}
ACROSS_MODELS_NOTE = settings_note(config, "")


# Every Hub repository a job of this config reads (knowlab.downloads), by its folder under resources/hub:
# the local rule hub_download downloads each on the submit host, and the jobs that read it list it among
# their inputs, so that no cluster job needs a network (docs/cluster.md, "Downloads: on the submit host")
HUB_SNAPSHOTS = snapshots(config)
# the Hub inputs of the rules that read an embedder, the grounding evaluator or the instruction data
# (none: {})
READER_SNAPSHOTS = reader_snapshots(config)
SORT_EMBEDDER_INPUTS = snapshot_inputs(embedder=READER_SNAPSHOTS["sort_embedder"])
GROUNDING_RETRIEVER_INPUTS = snapshot_inputs(
    retriever=READER_SNAPSHOTS["grounding_retriever"]
)
GROUNDING_EVALUATOR_INPUTS = snapshot_inputs(
    evaluator=READER_SNAPSHOTS["grounding_evaluator"]
)
NEAR_DUPLICATES_INPUTS = snapshot_inputs(
    embedder=READER_SNAPSHOTS["near_duplicates_embedder"]
)
INSTRUCTIONS_INPUTS = snapshot_inputs(instructions=READER_SNAPSHOTS["instructions"])


# each base model's folder: the project's (``base``), else its own under resources/base_models
FT_DIRS = {
    name: (BASE.path if spec == "base" else layout.FT_BASE_MODEL.format(ft_model=name))
    for name, spec in finetune_models(config).items()
}


def ft_model_dir(ft_model):
    """A base model's folder (FT_DIRS)."""
    return FT_DIRS[ft_model]


def ft_compute(wildcards):
    """The param `compute` of a job that runs one of base model {ft_model}'s checkpoints."""
    return FT_COMPUTE[wildcards.ft_model]


# FictionalQA (Kirchenbauer et al. 2026)
# the MCQ suites' items, one file per number of choices
MCQ_FILES = [layout.MCQ.path(n=n) for n in config["mcq"]["n_choices"]]
FICTION_RUNS = LAYOUT.fiction_runs
RUNS = LAYOUT.runs
# the training seeds (finetune.seeds) and the other seeds' runs (doc.seed-7): trained and evaluated
# at every checkpoint for the findings; figures, tables and probes read the first seed's RUNS
SEEDS = LAYOUT.seeds
REPLICATE_RUNS = LAYOUT.replicate_runs
# each base model's runs: all of RUNS unless its finetune.models entry names fewer (knowlab.layout.model_runs)
MODEL_RUNS = LAYOUT.model_runs
# the fine-tuning folders of every base model's runs under results/ (knowlab.layout.fictionalqa_training)
FICTIONALQA_TRAININGS = {
    ft_model: [fictionalqa_training(ft_model, run) for run in MODEL_RUNS[ft_model]]
    for ft_model in FT_MODELS
}


def control_of(wildcards):
    """The control run when base model {ft_model} trains it, else None."""
    return CONTROL_RUN if CONTROL_RUN in MODEL_RUNS[wildcards.ft_model] else None


STEPS = LAYOUT.steps
SPLITS = sorted(set(config["splits"]["names"]) | set(FICTION_RUNS))
STATS_SUITES = config["stats"]["suites"]
TESTS = ("mcnemar", "ttest")
# What every checkpoint evaluation reads besides the checkpoint (knowlab.fictionalqa.suites).
SUITE_INPUTS = {
    **{
        table: layout.CORPUS.path(table=table)
        for table in ("fictions", "fictsheets", "fict_qa")
    },
    "real_qa": layout.REAL_QA.path(),
    "webtext": layout.WEBTEXT_HELDOUT,
    "mcq": MCQ_FILES,
}

# models evaluated as they are (SORT prompt selection and conditions, grounding)
EVAL_MODELS = LAYOUT.eval_models


# SORT (Pink et al. 2024)
SORT_CONDITIONS = LAYOUT.sort_conditions
SORT_EPOCHS = LAYOUT.sort_epochs  # 0 when sort.parametric is off

# Grounding (Lee et al. 2024)
GROUNDING_DATASETS = LAYOUT.grounding_datasets
GROUNDING_FINETUNE = LAYOUT.grounding_finetune


wildcard_constraints:
    ft_model="|".join(re.escape(name) for name in FT_MODELS),
    run="|".join(
        re.escape(run) for run in [*FICTION_RUNS, CONTROL_RUN, *REPLICATE_RUNS]
    ),
    split="[a-z_]+",
    suite="mcq[0-9]+",
    test="|".join(TESTS),
    step=r"\d+",
    condition="|".join(SORT_CONDITIONS),
    prun="|".join(PARAMETRIC_RUNS),
    epoch=r"\d+",
    n=r"\d+",
    dataset="fiction|kaist",
    model="|".join(EVAL_MODELS),
    kind="|".join(ATTEMPT_KINDS),


# ----------------------------------------------------------------- checkpoints
# Step 0 of every run is the base model (knowlab.core.checkpoints): it is evaluated
# once, as run `base_model`, and its rows serve as step 0 of every run.
# Fine-tuning runs as a chain of jobs, one per checkpoint (knowlab.core.train): the job of
# checkpoint N resumes from the training state the job of the previous one saved.

# every fine-tuning run's folder under results/ and its checkpoints after 0, in training order
TRAININGS = LAYOUT.trainings


def _alternatives(names):
    """A wildcard regex matching exactly ``names`` (one that matches nothing when empty)."""
    return "|".join(sorted(set(names))) or "(?!)"


# the last checkpoint of a run saves no training state (nothing resumes from it)
LAST_CHECKPOINTS = _alternatives(ckpts[-1] for ckpts in TRAININGS.values())
INNER_CHECKPOINTS = _alternatives(c for ckpts in TRAININGS.values() for c in ckpts[:-1])


def _step(wildcards):
    return int(wildcards.get("step", wildcards.get("epoch", -1)))


def checkpoint_input(wildcards):
    """The base model at step (or epoch) 0 (FictionalQA's {ft_model}, else the project's), else the
    run's checkpoint folder of that step."""
    if "prun" in wildcards.keys():
        if _step(wildcards) == 0:
            return BASE.path
        training = parametric_training(wildcards.prun)
        return layout.CHECKPOINT.path(
            training=training, checkpoint=f"epoch-{wildcards.epoch}"
        )
    if _step(wildcards) == 0:
        return ft_model_dir(wildcards.ft_model)
    training = fictionalqa_training(wildcards.ft_model, wildcards.run)
    return layout.CHECKPOINT.path(
        training=training, checkpoint=f"step-{wildcards.step}"
    )


def checkpoint_path(wildcards, input):
    """The folder the evaluation loads (the base model at step 0, else the checkpoint)."""
    return input.model


# ----------------------------------------------------------------- a probe at every checkpoint
# SORT on the fiction documents and grounding across fine-tuning: the pieces of their rule
# template, checkpoint_probe (rules/probe.smk)


class ProbeRule(NamedTuple):
    """What the template of rules/probe.smk does not write itself, for each of a probe's rules.

    ``step`` gives its name, log, benchmark and manifest (knowlab.layout.Step); ``input``,
    ``output`` and ``params`` are the named inputs, outputs and params besides the template's;
    ``script`` is its path relative to rules/; ``kind``, the cluster kind of its jobs
    (knowlab.cluster; the per-checkpoint rule's, the others are local rules).
    """

    step: Step
    script: str
    input: dict = {}
    output: dict = {}
    params: dict = {}
    kind: str | None = None


# each probed base model's probed runs (finetune.probe_runs), and the run wildcard of a probe's
# per-checkpoint job
PROBED_RUNS = LAYOUT.probe_runs
PROBE_RUNS = "|".join(
    [BASE.run, *dict.fromkeys(run for runs in PROBED_RUNS.values() for run in runs)]
)


def probed_fiction_runs(wildcards):
    """Base model {ft_model}'s probed fiction runs (a param of a probe's tables and figures)."""
    return [run for run in PROBED_RUNS[wildcards.ft_model] if run != CONTROL_RUN]


def probed_control(wildcards):
    """The control run when base model {ft_model}'s probes take it, else None."""
    return CONTROL_RUN if CONTROL_RUN in PROBED_RUNS[wildcards.ft_model] else None


def probe_inputs(table):
    """The inputs of a probe's job across checkpoints, its per-checkpoint ``table`` (a path with
    ``{ft_model}``, ``{run}`` and ``{step}``; {ft_model} stays the job's wildcard): ``base`` (the
    base model's, step 0), ``rows`` (its probed runs' later checkpoints), and the runs' splits and the
    fictions (each item's side, knowlab.core.probe).
    """
    return {
        "base": expand(table, run=BASE.run, step=0, allow_missing=True)[0],
        "rows": lambda wildcards: expand(
            table,
            ft_model=wildcards.ft_model,
            run=PROBED_RUNS[wildcards.ft_model],
            step=STEPS[1:],
        ),
        "splits": expand(layout.SPLIT.smk, split=FICTION_RUNS),
        "fictions": layout.CORPUS.path(table="fictions"),
    }


def checkpoint_key(wildcards):
    """A checkpoint's key, {ft_model}/{run}/step-{step}: the served model of its grounding
    responses, and their request and atomic-fact caches under finetune/."""
    return f"{wildcards.ft_model}/{wildcards.run}/step-{wildcards.step}"


def rule_sources(wildcards):
    """The file each of the workflow's rules is written in (RULE_FILES of rules/step.smk for a
    step's rule, whose `rule:` keyword is the template's; else the file Snakemake names) and their
    conda env files, relative to the checkout (or to the URL or git source Snakemake reads the
    workflow from) (knowlab.tooling.crate.rule_sources; the paths: relative_source of
    knowlab.tooling.source)."""
    return {
        each.name: {
            "file": relative_source(
                KNOWLAB_SOURCE, RULE_FILES.get(each.name, each.snakefile)
            ),
            "conda": (
                relative_source(KNOWLAB_SOURCE, each.basedir, each.conda_env)
                if isinstance(each.conda_env, str)
                else None
            ),
        }
        for each in workflow.rules
    }


def train_logs(*trainings):
    """The per-checkpoint training logs of runs, in training order."""
    return [
        layout.CHECKPOINT_TRAIN_LOG.path(training=training, checkpoint=ckpt)
        for training in trainings
        for ckpt in TRAININGS[training]
    ]


run_items = LAYOUT.run_items


def compared_runs(wildcards):
    """A fiction run is compared with the control (when base model {ft_model} trains one)."""
    if control_of(wildcards) and wildcards.run != CONTROL_RUN:
        return [wildcards.run, CONTROL_RUN]

    return [wildcards.run]


def compared_items(wildcards):
    """Item tables of the compared runs' checkpoints (of base model {ft_model})."""
    return run_items(wildcards.ft_model, *compared_runs(wildcards))


# ----------------------------------------------------------------- input functions


def checkout_path(relative):
    """A file of the checkout (``relative`` to it) as a rule's input, named as manifests name files
    (knowlab.core.provenance.portable): relative to the working directory when that holds it
    (``make run``), else absolute, so that a run moved with its checkout re-runs nothing.
    """
    return portable(os.path.join(BASEDIR, relative))


def fiction_files(wildcards):
    """What fictionalqa_corpus reads, shipped files (pinned by sha256) or
    generated; none for the release (read from its path or the Hub)."""
    source = config["fiction"]["source"]
    if source == "shipped":
        folder = config["fiction"]["shipped"]["dir"]
        return [checkout_path(f"{folder}/{table}.jsonl") for table in TABLES]
    if source == "generate":
        return [layout.GENERATED.path(stage=table) for table in TABLES]
    return []


def generation_inputs(wildcards):
    """The prompts file, and the base model when the transformers backend uses it."""
    cfg = config["fiction"]["generate"]
    inputs = {"prompts": checkout_path(cfg["prompts"])}
    if cfg["backend"] == "transformers" and not cfg["transformers"]["path"]:
        inputs["model"] = BASE.path
    return inputs


def generate_params(stage, settings):
    """The params of the rule of a generation stage (seeds, fictsheets, fictions, fict_qa,
    attempts, grades; scripts/generate_stage.py): its name and ``settings`` with the shared ones.
    """
    return {
        "compute": COMPUTE,
        "stage": stage,
        "settings": settings,
        "seed": config["seed"],
    }


def ranker_inputs(wildcards):
    """The ranker model: the project's base model unless the config names another."""
    inputs = {"fict_qa": layout.CORPUS.path(table="fict_qa")}
    if config["mcq"]["ranker"]["model"] == "base_model":
        inputs["model"] = BASE.path
    return inputs


def mcq_inputs(wildcards):
    inputs = {"fict_qa": layout.CORPUS.path(table="fict_qa")}
    if config["mcq"]["distractors"] == "model_ranked":
        inputs["ranking"] = layout.RANKED_CANDIDATES.path()
    return inputs


def real_qa_files(wildcards):
    """The shipped real questions (real_qa.source shipped), else none: a local rule, since
    real_qa.source triviaqa downloads (on the submit host, whose network a cluster job may lack).
    """
    return (
        [checkout_path(config["real_qa"]["shipped"])]
        if config["real_qa"]["source"] == "shipped"
        else []
    )


def train_logs_of(wildcards):
    """The training logs of base model {ft_model}'s runs."""
    return expand(
        layout.TRAIN_LOG.smk, training=FICTIONALQA_TRAININGS[wildcards.ft_model]
    )


def base_model_inputs(wildcards):
    """The tiny random model trains its tokenizer on the run's own text (the project's base model,
    or FictionalQA's base model {ft_model}); a Hub model is read from its download (hub_download).
    """
    view = FT_CONFIGS[wildcards.ft_model] if "ft_model" in wildcards.keys() else config
    if view["model"]["source"] != "tiny_random":
        return snapshot_inputs(model=model_snapshot(view))
    return {
        "fictions": layout.CORPUS.path(table="fictions"),
        "webtext": layout.WEBTEXT_TRAIN,
    }


def eval_model_inputs(wildcards):
    """A model evaluated as it is, from the Hub: its download (hub_download)."""
    return snapshot_inputs(model=eval_model_snapshot(config, wildcards.model))


def finetune_recipe(wildcards):
    """``fictionalqa`` (fiction of a split mixed into webtext, or the control) or
    ``sort_parametric`` (text chunks + instructions, or instructions alone)."""
    return (
        "sort_parametric" if wildcards.training.startswith("sort/") else "fictionalqa"
    )


def finetune_inputs(wildcards):
    """The base model, the recipe's data and, after the first checkpoint, the previous one's state."""
    ft_model = training_model(wildcards.training)
    inputs = {"model": ft_model_dir(ft_model) if ft_model else BASE.path}
    checkpoints = TRAININGS[wildcards.training]
    at = checkpoints.index(wildcards.checkpoint)
    if at:
        inputs["state"] = layout.TRAINING_STATE.path(
            training=wildcards.training, checkpoint=checkpoints[at - 1]
        )
    if finetune_recipe(wildcards) == "sort_parametric":
        inputs["texts"] = layout.SORT_PARAMETRIC_TEXTS.path()
        return inputs
    run = replicated_run(Path(wildcards.training).name)
    inputs["webtext"] = layout.WEBTEXT_TRAIN
    if run != CONTROL_RUN:
        inputs["split"] = layout.SPLIT.path(split=run)
        inputs["fictions"] = layout.CORPUS.path(table="fictions")
        inputs["fictsheets"] = layout.CORPUS.path(table="fictsheets")
    return inputs


# One process per GPU (or CPU worker): the launch command and the job's SLURM request.
# Outside conda envs the workflow's own interpreter runs the job (a venv need not be active).
_PYTHON = (
    "python"
    if DeploymentMethod.CONDA in workflow.deployment_settings.deployment_method
    else sys.executable
)


def training_config(training):
    """The config a fine-tuning folder trains with: its base model's (knowlab.config.model_config)
    for a FictionalQA run, else the config (SORT's parametric runs, on the project's base model).
    """
    ft_model = training_model(training)
    return FT_CONFIGS[ft_model] if ft_model else config


# The interpreter and the checkout's src/ reach the job through its environment, not through the
# launch param: where the checkout sits, or whether snakemake started as .venv/bin/snakemake or
# python -m snakemake, must not retrain anything.
os.environ[PYTHON_ENV] = _PYTHON
os.environ[SRC_ENV] = f"{BASEDIR}/src"


def finetune_launch(wildcards):
    """The launch command of the job's processes (knowlab.core.train.launch_command)."""
    distributed = training_config(wildcards.training)["finetune"]["distributed"]
    prefix = f'PYTHONPATH="${SRC_ENV}${{PYTHONPATH:+:$PYTHONPATH}}" '
    return prefix + launch_command(distributed, f'"${PYTHON_ENV}"')


def _finetune_resources(training):
    return finetune_job_resources(config, training_config(training))


# The job's request (knowlab.cluster.finetune_job_resources: partition and CPUs from its kind,
# cluster.resources.finetune; nodes, GPUs, tasks from finetune.distributed; memory and time from
# finetune.resources), per base model; a key that one training lacks (tasks, mpi: srun over
# several processes) gets the value of a one-process job.
_ONE_PROCESS = {"tasks_per_gpu": 1, "tasks": 1, "mpi": ""}
FINETUNE_RESOURCES = {
    key: (
        lambda wildcards, key=key: _finetune_resources(wildcards.training).get(
            key, _ONE_PROCESS.get(key)
        )
    )
    for key in dict.fromkeys(k for t in TRAININGS for k in _finetune_resources(t))
}
# where fine-tuning jobs send their live curves (knowlab.core.tracking): in the environment every
# job inherits (the launchers pass it on to every process), not in a param, so that changing it
# retrains nothing
os.environ[TRACKING_ENV] = json.dumps(config["tracking"], sort_keys=True)


def training_seed(training):
    """The seed a fine-tuning folder trains with: a FictionalQA run's training seed (its replicate's,
    knowlab.core.checkpoints.run_seed), else (SORT's parametric runs) the project's."""
    return (
        run_seed(Path(training).name, SEEDS)
        if training_model(training)
        else config["seed"]
    )


def finetune_settings(wildcards):
    """What the job's recipe reads from the config, serialised: the param of its settings
    record (knowlab.finetune_job.FinetuneJobSettings.param_from_blocks; checked)."""
    return FinetuneJobSettings.param_from_blocks(
        finetune_recipe(wildcards),
        training_config(wildcards.training)["finetune"],
        config["sort"]["parametric"],
        training_seed(wildcards.training),
    )


def finetune_spec(wildcards, input, output):
    """The job's JSON argument (knowlab.finetune_job.job_spec): the paths and the param
    settings as it is, from which the job builds its record (.from_spec)."""
    spec = job_spec(
        finetune_recipe(wildcards),
        Path(wildcards.training).name,
        wildcards.checkpoint,
        input,
        output,
        finetune_settings(wildcards),
        model=training_model(wildcards.training),
    )
    return json.dumps(spec, sort_keys=True)


def eval_model_dir(name):
    """``eval_models``: ``base`` is the base model, anything else is fetched to resources/models."""
    spec = config["eval_models"][name]
    return BASE.path if spec == "base" else layout.EVAL_MODEL.format(model=name)


def eval_model_input(wildcards):
    """The folder of model {model} (eval_model_dir), an input of the rules that evaluate it."""
    return eval_model_dir(wildcards.model)


def eval_model_label(name):
    """The model's name in item rows and figures: the base model's own name, else the eval_models key."""
    return BASE.name if config["eval_models"][name] == "base" else name


def sort_condition_inputs(wildcards):
    """A SORT evaluation's items and selected template, plus passages and RAG reading for the RAG conditions."""
    inputs = {
        "sort_items": layout.SORT_ITEMS.path(),
        "selection": layout.SORT_SELECTION.path(model=wildcards.model),
    }
    if wildcards.condition in RAG_CONDITIONS:
        inputs["retrieval"] = layout.SORT_RETRIEVAL.path()
        inputs["rag_selection"] = layout.SORT_RAG_SELECTION.path(model=wildcards.model)
    return inputs


def sort_figure_inputs(wildcards):
    """Every evaluated model's SORT rows, plus retrieval recall when RAG is scored."""
    inputs = {
        "rows": expand(
            layout.SORT_ROWS.smk,
            model=EVAL_MODELS,
            condition=SORT_CONDITIONS,
        )
    }
    if set(SORT_CONDITIONS) & set(RAG_CONDITIONS):
        inputs["retrieval"] = layout.SORT_RETRIEVAL.path()
    return inputs


def sort_parametric_conditions(wildcards):
    """No-context SORT at every epoch; in context (App. E.4) after the last one; at epoch 0 only
    segment perplexity (the base model's SORT rows are those of sort_evaluate_base)."""
    epoch = int(wildcards.epoch)
    return (
        []
        if epoch == 0
        else ["baseline"] + (["in_context"] if epoch == SORT_EPOCHS else [])
    )


def grounding_item_inputs(wildcards):
    """The fiction set is derived from the validated corpus; the KAIST release is read by the rule."""
    if wildcards.dataset == "fiction":
        return {
            table: layout.CORPUS.path(table=table) for table in ("fictions", "fict_qa")
        }

    return {}


def grounding_score_params(scored):
    """The params of a scoring rule; ``scored(wildcards)``: the key of its atomic-fact cache."""
    return {
        "compute": COMPUTE,
        "settings": GROUNDING_SCORE,
        "cache": lambda wildcards: layout.GROUNDING_FACTS_CACHE.path(
            scored=scored(wildcards)
        ),
        "request_cache": DECOMPOSER_REQUESTS,  # decomposer backend openai
        "model_label": BASE.name,  # the base model in the rows' decomposer / evaluator columns
    }


# ----------------------------------------------------------------- figures in the report


def tables_output(folder, category):
    """A stats rule's folder of tables (a knowlab.layout.Table), each CSV in the report under
    ``category``/Tables with the caption workflow/report/<study>_tables.rst."""
    return report(
        directory(folder.smk),
        patterns=["{table}.csv"],
        caption=f"../workflow/report/{category.lower()}_tables.rst",
        category=category,
        subcategory="Tables",
        labels={"table": "{table}"},
    )


def figure_outputs(figure, caption, category, subcategory, labels={}, titles=None):
    """The outputs of a figure rule: each figure as PDF and as PNG, the PNG in the report.

    ``figure`` is the figures' knowlab.layout.Table, with {ext} (and {name} with ``titles``);
    ``caption`` the caption file's name under workflow/report/ without .rst (with {name}:
    each figure's); ``labels`` the report's labels of every figure (a value may name a wildcard,
    "{ft_model}"). Without ``titles``, the outputs are ``pdf`` and ``png``; with ``titles``
    ({name: title}, a study's FIGURES), ``<name>_pdf`` and ``<name>_png`` in its order, each
    labelled ``figure``: its title, before ``labels``.
    """
    outputs = {}
    for name, title in (titles or {None: None}).items():
        names = {"name": name} if titles else {}
        key = f"{name}_" if titles else ""
        outputs[f"{key}pdf"] = figure.fix(ext="pdf", **names).smk
        outputs[f"{key}png"] = report(
            figure.fix(ext="png", **names).smk,
            caption=f"../workflow/report/{caption.format(**names)}.rst",
            category=category,
            subcategory=subcategory,
            labels=({"figure": title} if titles else {}) | labels,
        )
    return outputs


def sort_figure_outputs(subcategory, titles):
    """A SORT figure rule's figures ({name: title}), in the report under SORT/``subcategory``."""
    return figure_outputs(
        layout.SORT_FIGURE, "sort_{name}", "SORT", subcategory, titles=titles
    )

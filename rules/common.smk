# Shared definitions and input functions.
import sys
from pathlib import Path

# The library lives in src/; the Snakefile imports it from the checkout, and so
# does every script (first line), in the venv, in conda envs and on SLURM nodes.
sys.path.insert(0, str(Path(workflow.basedir) / "src"))

from knowlab.fictionalqa.corpus.mcq import check_candidate_budget
from knowlab.fictionalqa.corpus.schema import TABLES
from knowlab.core.train import checkpoint_steps
from knowlab.fiction_generation.stages import ATTEMPT_KINDS
from knowlab.grounding.pipeline import FINETUNE_CONDITIONS, condition_names
from knowlab.sort.parametric import PARAMETRIC_RUNS
from knowlab.sort.pipeline import get_rag_reading
from knowlab.sort.pipeline import rag_readings as sort_rag_readings
from knowlab.sort.pipeline import templates as sort_templates
from knowlab.sort.prompts import get_template

BASEDIR = workflow.basedir
if config["mcq"]["distractors"] == "model_ranked":
    check_candidate_budget(
        config["mcq"]["n_choices"], config["mcq"]["ranker"]["max_candidates"]
    )
CONTROL = "control"
EVAL_MODELS = list(config["eval_models"])
# the base model's name among eval_models: its SORT prompt selection also serves the
# fiction and parametric SORT runs
BASE_EVAL = next((n for n, s in config["eval_models"].items() if s == "base"), None)
if BASE_EVAL is None:
    raise ValueError(
        "eval_models must name the base model (a key with the value `base`, e.g. "
        "base_model: base): the fiction and parametric SORT runs use its prompt selection"
    )
FICTION_RUNS = list(config["finetune"]["runs"])
RUNS = FICTION_RUNS + ([CONTROL] if config["finetune"]["control"] else [])
STEPS = checkpoint_steps(
    config["finetune"]["max_steps"], config["finetune"]["checkpoint_every"]
)
SPLITS = sorted(set(config["splits"]["names"]) | set(FICTION_RUNS))
MCQ = [f"results/corpus/mcq/mcq{n}.jsonl" for n in config["mcq"]["n_choices"]]
RANKED = "results/corpus/mcq/ranked_candidates.parquet"
REAL_QA = "results/corpus/real_qa.jsonl"
FICTION = "results/corpus/fiction"
GENERATE = "results/generate"
_generate = config["fiction"].get("generate")
if config["fiction"]["source"] == "generate":
    if _generate is None:
        raise ValueError(
            "fiction.source is generate but fiction.generate is not configured"
        )
    if (
        _generate["backend"] == "transformers"
        and not _generate["transformers"]["path"]
        and config["model"]["source"] == "tiny_random"
    ):
        raise ValueError(
            "fiction.generate.backend transformers with transformers.path null generates with the "
            "base model, but model.source tiny_random trains its tokenizer on the fictions: name a "
            "model folder in fiction.generate.transformers.path"
        )
# What every checkpoint evaluation reads besides the checkpoint (knowlab.fictionalqa.suites).
SUITE_INPUTS = {
    "fictions": f"{FICTION}/fictions.jsonl",
    "fictsheets": f"{FICTION}/fictsheets.jsonl",
    "fict_qa": f"{FICTION}/fict_qa.jsonl",
    "real_qa": REAL_QA,
    "webtext": "resources/webtext/heldout.jsonl",
    "mcq": MCQ,
}
STATS_SUITES = config["stats"]["suites"]
if unbuilt := [s for s in STATS_SUITES if int(s[3:]) not in config["mcq"]["n_choices"]]:
    raise ValueError(
        f"stats.suites {unbuilt} are not built: add their sizes to mcq.n_choices"
    )
TESTS = ("mcnemar", "ttest")
SORT = "results/sort"
SORT_CONDITIONS = config["sort"]["conditions"]
RAG_CONDITIONS = ("rag", "oracle_rag")
for key in ("sort", "sort.fiction"):
    part = config["sort"] if key == "sort" else config["sort"]["fiction"]
    if too_long := [
        (s, e)
        for s in part["segment_lengths"]
        for e in part["excerpt_lengths"]
        if s >= e
    ]:
        raise ValueError(
            f"{key}.segment_lengths must be below every {key}.excerpt_lengths: "
            f"(segment, excerpt) {too_long}"
        )
if config["sort"]["template"] is not None:
    try:
        get_template(sort_templates(config["sort"]), config["sort"]["template"])
    except ValueError as err:
        raise ValueError(f"sort.template: {err}") from None
try:
    sort_rag_readings(config["sort"])
except ValueError as err:
    raise ValueError(f"sort.rag_readings: {err}") from None
if config["sort"]["rag_reading"] is not None:
    try:
        get_rag_reading(config["sort"], config["sort"]["rag_reading"])
    except ValueError as err:
        raise ValueError(f"sort.rag_reading: {err}") from None
# SORT figures of the base model (knowlab.sort.plots), the keys of rule sort_figures' outputs
SORT_FIGURES = ("fig3a", "fig3b", "fig4", "fig10", "mcnemar", "ttest")
# parametric memory (App. E): text chunks + instructions vs instructions alone
SORT_EPOCHS = config["sort"]["parametric"]["epochs"]
if config["sort"]["source"] == "release" and set(SORT_CONDITIONS) & set(RAG_CONDITIONS):
    raise ValueError(
        "sort.conditions rag/oracle_rag need the books' text, which sort.source: release "
        "does not have: use shakespeare or gutenberg, or drop them from sort.conditions"
    )
# Figure families of the FictionalQA paper (knowlab.fictionalqa.figures): one rule each.
FIGURE_FAMILIES = ("fig2", "fig3", "fig4", "fig5", "fig6", "fig7", "fig8", "fig10_11")
# Printed under every figure: which model and settings produced it.
MODEL_NAME = {
    "gguf_package": Path(config["model"]["gguf_package"]["file"]).stem,
    "hub": str(config["model"]["hub"]["id"]),
    "tiny_random": "tiny random Llama (test)",
}[config["model"]["source"]]
FIGURE_NOTE = (
    f"{MODEL_NAME}; seed {config['seed']}; "
    f"{config['finetune']['max_steps']} steps of "
    f"{config['finetune']['micro_batch_size'] * config['finetune']['gradient_accumulation_steps']} sequences, "
    f"fiction rate {config['finetune']['fiction_rate']}; MCQ distractors: {config['mcq']['distractors']}"
)


wildcard_constraints:
    run="|".join([*FICTION_RUNS, CONTROL]),
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


def fiction_files(wildcards):
    """What fiction_corpus reads, shipped files (pinned by sha256) or
    generated; none for the release (read from its path or the Hub)."""
    source = config["fiction"]["source"]
    if source == "shipped":
        folder = Path(BASEDIR) / config["fiction"]["shipped"]["dir"]
        return [str(folder / f"{table}.jsonl") for table in TABLES]
    if source == "generate":
        return [f"{GENERATE}/{table}.jsonl" for table in TABLES]
    return []


def generation_inputs(wildcards):
    """The prompts file, and the base model when the transformers backend uses it."""
    cfg = config["fiction"]["generate"]
    inputs = {"prompts": str(Path(BASEDIR) / cfg["prompts"])}
    if cfg["backend"] == "transformers" and not cfg["transformers"]["path"]:
        inputs["model"] = "resources/base_model"
    return inputs


def ranker_inputs(wildcards):
    """The ranker model: the project's base model unless the config names another."""
    inputs = {"fict_qa": f"{FICTION}/fict_qa.jsonl"}
    if config["mcq"]["ranker"]["model"] == "base_model":
        inputs["model"] = "resources/base_model"
    return inputs


def mcq_inputs(wildcards):
    inputs = {"fict_qa": f"{FICTION}/fict_qa.jsonl"}
    if config["mcq"]["distractors"] == "model_ranked":
        inputs["ranking"] = RANKED
    return inputs


def base_model_inputs(wildcards):
    """The tiny random model trains its tokenizer on the run's own text."""
    if config["model"]["source"] != "tiny_random":
        return {}
    return {
        "fictions": f"{FICTION}/fictions.jsonl",
        "webtext": "resources/webtext/train.jsonl",
    }


def finetune_inputs(wildcards):
    inputs = {
        "model": "resources/base_model",
        "webtext": "resources/webtext/train.jsonl",
    }
    if wildcards.run != CONTROL:
        inputs["split"] = f"results/splits/{wildcards.run}.json"
        inputs["fictions"] = f"{FICTION}/fictions.jsonl"
        inputs["fictsheets"] = f"{FICTION}/fictsheets.jsonl"
    return inputs


def run_items(run):
    """Item tables of every checkpoint of ``run``."""
    return expand("results/evaluate/{run}/step-{step}.parquet", run=run, step=STEPS)


def compared_runs(wildcards):
    """A fiction run is compared with the control (when there is one)."""
    runs = [wildcards.run]
    if config["finetune"]["control"] and wildcards.run != CONTROL:
        runs.append(CONTROL)
    return [p for r in runs for p in run_items(r)]


GROUNDING = "results/grounding"
GROUNDING_DATASETS = config["grounding"]["datasets"]
GROUNDING_CONDITIONS = condition_names(config["grounding"])
GROUNDING_FINETUNE_CONDITIONS = list(FINETUNE_CONDITIONS)
# figures of rule grounding_tables (knowlab.grounding.plots), the keys of its outputs
GROUNDING_FIGURES = ("fig3c", "fig4", "fig5", "fig15_16", "position")
GROUNDING_FINETUNE = (
    config["grounding"]["finetune"]["enabled"]
    and bool(FICTION_RUNS)
    and "fiction" in GROUNDING_DATASETS
)


def grounding_item_inputs(wildcards):
    """The fiction set is derived from the validated corpus; the KAIST release is read by the rule."""
    if wildcards.dataset == "fiction":
        return {
            "fictions": f"{FICTION}/fictions.jsonl",
            "fict_qa": f"{FICTION}/fict_qa.jsonl",
        }
    return {}


def eval_model_dir(name):
    """``eval_models``: ``base`` is the base model, anything else is fetched to resources/models."""
    spec = config["eval_models"][name]
    return "resources/base_model" if spec == "base" else f"resources/models/{name}"


def eval_model_label(name):
    """The model's name in item rows and figures: the base model's own name, else the eval_models key."""
    return MODEL_NAME if config["eval_models"][name] == "base" else name


def grounding_checkpoint_dir(wildcards):
    if wildcards.run == "base_model":
        return "resources/base_model"
    return f"results/finetune/{wildcards.run}/checkpoints"


def grounding_checkpoint_path(wildcards, input):
    if wildcards.run == "base_model":
        return input.model
    return f"{input.model}/step-{wildcards.step}"


def all_outputs():
    outputs = expand("results/splits/{split}.json", split=SPLITS)
    outputs += [f"{SORT}/tables", f"{SORT}/stats/manifest.json"]
    if FICTION_RUNS:
        outputs += [f"{SORT}/fiction/stats/manifest.json"]
    if config["sort"]["parametric"]["enabled"]:
        outputs += [f"{SORT}/parametric/stats/manifest.json"]
    outputs += expand(
        "results/figures/sort/{name}.{ext}", name=SORT_FIGURES, ext=("pdf", "png")
    )
    outputs += [f"{GROUNDING}/tables.manifest.json"]
    if GROUNDING_FINETUNE:
        outputs += [f"{GROUNDING}/finetune/manifest.json"]
    if not FICTION_RUNS:
        return outputs
    outputs += expand(
        "results/figures/{family}.{ext}", family=FIGURE_FAMILIES, ext=("pdf", "png")
    )
    outputs += expand(
        "results/figures/stats/{run}/{suite}_{test}.{ext}",
        run=FICTION_RUNS,
        suite=STATS_SUITES,
        test=TESTS,
        ext=("pdf", "png"),
    )
    return outputs


def sort_condition_inputs(wildcards):
    """A SORT evaluation's items and selected template, plus passages and RAG reading for the RAG conditions."""
    inputs = {
        "sort_items": f"{SORT}/items.jsonl",
        "selection": f"{SORT}/prompt/{wildcards.model}/selection.json",
    }
    if wildcards.condition in RAG_CONDITIONS:
        inputs["retrieval"] = f"{SORT}/retrieval.parquet"
        inputs["rag_selection"] = f"{SORT}/prompt/{wildcards.model}/rag_selection.json"
    return inputs


def sort_figure_inputs(wildcards):
    """Every evaluated model's SORT rows, plus retrieval recall when RAG is scored."""
    inputs = {
        "rows": expand(
            f"{SORT}/evaluate/{{model}}/{{condition}}.parquet",
            model=EVAL_MODELS,
            condition=SORT_CONDITIONS,
        )
    }
    if set(SORT_CONDITIONS) & set(RAG_CONDITIONS):
        inputs["retrieval"] = f"{SORT}/retrieval.parquet"
    return inputs

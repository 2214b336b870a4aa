# Shared definitions and input functions.
import sys
from pathlib import Path

# The library lives in src/; the Snakefile imports it from the checkout, and so
# does every script (first line), in the venv, in conda envs and on SLURM nodes.
sys.path.insert(0, str(Path(workflow.basedir) / "src"))

from knowlab.corpus.schema import TABLES
from knowlab.finetune.train import checkpoint_steps

BASEDIR = workflow.basedir
CONTROL = "control"
FICTION_RUNS = list(config["finetune"]["runs"])
RUNS = FICTION_RUNS + ([CONTROL] if config["finetune"]["control"] else [])
STEPS = checkpoint_steps(
    config["finetune"]["max_steps"], config["finetune"]["checkpoint_every"]
)
SPLITS = sorted(set(config["splits"]["names"]) | set(FICTION_RUNS))
MCQ = [f"results/corpus/mcq/mcq{n}.jsonl" for n in config["mcq"]["n_choices"]]
FICTION = "results/corpus/fiction"
MCNEMAR_SUITE = config["stats"]["mcnemar_suite"]


wildcard_constraints:
    run="|".join([*FICTION_RUNS, CONTROL]),
    split="[a-z_]+",
    step=r"\d+",
    n=r"\d+",


def shipped_fiction_files(wildcards):
    """The shipped corpus files (pinned by sha256), so the rule re-runs when they change."""
    if config["fiction"]["source"] != "shipped":
        return []
    folder = Path(BASEDIR) / config["fiction"]["shipped"]["dir"]
    return [str(folder / f"{table}.jsonl") for table in TABLES]


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


FIGURES = ("loss", "em", "mcq", "mcnemar")


def all_outputs():
    outputs = expand(
        "results/figures/{run}/{figure}.{ext}",
        run=FICTION_RUNS,
        figure=FIGURES,
        ext=("pdf", "png"),
    )
    if RUNS:
        outputs += expand("results/figures/mixture.{ext}", ext=("pdf", "png"))
    outputs += expand("results/splits/{split}.json", split=SPLITS)
    return outputs

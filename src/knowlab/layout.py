"""Where the workflow writes its results, and which jobs a config expands to: named once.

Two halves, both read by the rules (``rules/common.smk``), the findings (:mod:`knowlab.findings`),
the dataset card (:mod:`knowlab.dataset_card`) and the capacity plan
(:mod:`knowlab.tooling.capacity`):

- :class:`Table`: a kind of result table, its path under ``results/`` with the wildcards the rule
  that writes it expands (``fictionalqa/{ft_model}/evaluate/{run}/step-{step}.parquet``), as a Snakemake path, a path
  for given wildcards, a regular expression and a glob.
- :class:`Layout`: the names a config expands over (the base models FictionalQA fine-tunes, runs,
  checkpoint steps, trainings, evaluated models,
  conditions, datasets) and the job lists built from them (the item tables of a run's
  checkpoints, the tables the findings read).

Every FictionalQA result of a fine-tuned model sits under the base model it fine-tunes:
``{ft_model}``, a key of ``finetune.models`` (:func:`finetune_models`); so do SORT's
and grounding's probes of its checkpoints.  (``{model}`` is a model evaluated as it is,
``eval_models``.)  The corpus, the MCQ items and the splits are shared by every base model.

It sits above the studies (like :mod:`knowlab.config`) because it names all of their outputs; it
imports only their constants, so that the findings' env (``envs/stats.yaml``) can import it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from knowlab.core.checkpoints import BASE_RUN, CONTROL_RUN, checkpoint_steps, replicate_run
from knowlab.sort.finetune import PARAMETRIC_RUNS

RESULTS = "results"
# wildcards whose values are integers (their regex is \d+)
NUMERIC = ("step", "epoch", "n")


def model_slug(model: Mapping[str, Any]) -> str:
    """The name of a config's one base model when ``finetune.models`` is null: the GGUF file's stem
    (``SmolLM2-135M-Instruct.Q4_1``), the last part of the Hub id or folder (``Llama-3.2-1B``), or
    ``tiny-random``; characters outside ``[A-Za-z0-9_.-]`` become ``-``."""
    source = model["source"]
    if source == "gguf_package":
        name = Path(model["gguf_package"]["file"]).stem
    elif source == "hub":
        name = str(model["hub"]["id"] or "hub").rstrip("/").rsplit("/", 1)[-1]
    else:
        name = "tiny-random"
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", name).strip("-.") or "model"


def finetune_models(config: Mapping[str, Any]) -> dict[str, Any]:
    """The base models FictionalQA fine-tunes (Kirchenbauer et al. 2026 Sec. 5, App. D.1), in config
    order: ``finetune.models`` (name -> ``"base"``, the ``model`` block, or a block of its own), or,
    when it is null, the one model of ``model`` named by :func:`model_slug`."""
    models = config["finetune"].get("models")
    return dict(models) if models else {model_slug(config["model"]): "base"}


def training_seeds(config: Mapping[str, Any]) -> list[int]:
    """The training seeds every FictionalQA run is trained with (``finetune.seeds``; null: the
    project's ``seed`` alone).  The first seed's run keeps the run's name; every other seed's is a
    replicate, ``<run>.seed-<seed>`` (:func:`knowlab.core.checkpoints.replicate_run`).

    Raises:
        ValueError: a seed is listed twice.
    """
    seeds = config["finetune"].get("seeds") or [config["seed"]]
    if len(set(seeds)) != len(seeds):
        raise ValueError(f"finetune.seeds lists a seed twice: {list(seeds)}")
    return [int(seed) for seed in seeds]


@dataclass(frozen=True)
class Table:
    """A kind of result table: ``template`` under ``results/`` (wildcards in braces) and the rule
    that writes it."""

    template: str
    rule: str

    @property
    def smk(self) -> str:
        """The path with its wildcards, as a rule's output or input names it (``results/...``)."""
        return f"{RESULTS}/{self.template}"

    def relative(self, **wildcards: Any) -> str:
        """The path under ``results/`` for given wildcard values."""
        return self.template.format(**wildcards)

    def path(self, **wildcards: Any) -> str:
        """The path from the working directory (``results/...``) for given wildcard values."""
        return f"{RESULTS}/{self.relative(**wildcards)}"

    @property
    def regex(self) -> str:
        """A regular expression every such path under ``results/`` matches as a whole."""
        parts = re.split(r"\{(\w+)\}", self.template)
        return "".join(
            (r"\d+" if part in NUMERIC else "[^/]+") if i % 2 else re.escape(part) for i, part in enumerate(parts)
        )

    @property
    def glob(self) -> str:
        """The same paths as a glob under ``results/``."""
        return re.sub(r"\{\w+\}", "*", self.template)

    def fix(self, **wildcards: Any) -> Table:
        """The table with some wildcards set (``GROUNDING_SCORES.fix(dataset="kaist")``)."""
        return Table(re.sub(r"\{(\w+)\}", lambda m: str(wildcards.get(m[1], m[0])), self.template), self.rule)


# FictionalQA (Kirchenbauer et al. 2026)
SPLIT = Table("fictionalqa/splits/{split}.json", "fictionalqa_split")
ITEMS = Table("fictionalqa/{ft_model}/evaluate/{run}/step-{step}.parquet", "fictionalqa_evaluate")
PAIRED_TESTS = Table("fictionalqa/{ft_model}/stats/{run}/{suite}_{test}.parquet", "fictionalqa_paired_tests")
SUMMARY = Table("fictionalqa/{ft_model}/summary.csv", "fictionalqa_summary")
# the fiction corpus's tables ({table}: fictions, fict_qa, ...): documents, their events and styles, questions
CORPUS = Table("fictionalqa/corpus/fiction/{table}.jsonl", "fictionalqa_corpus")
# every base model: its name, source, parameter count (knowlab.fictionalqa.models)
MODELS = Table("fictionalqa/models.csv", "fictionalqa_models")
# a fine-tuning run's training log; {training}: its folder (Layout.trainings)
TRAIN_LOG = Table("{training}/train_log.parquet", "train_log")
# SORT (Pink et al. 2024)
SORT_ROWS = Table("sort/evaluate/{model}/{condition}.parquet", "sort_evaluate_base")
SORT_FICTION_ROWS = Table("sort/fiction/{ft_model}/evaluate/{run}/step-{step}.parquet", "sort_fiction_evaluate")
SORT_PARAMETRIC_ROWS = Table("sort/parametric/{prun}/evaluate/epoch-{epoch}.parquet", "sort_parametric_evaluate")
SORT_PARAMETRIC_NLL = Table(
    "sort/parametric/{prun}/evaluate/epoch-{epoch}_segment_nll.parquet", "sort_parametric_evaluate"
)
# Grounding (Lee et al. 2024)
GROUNDING_SCORES = Table("grounding/{dataset}/scores/{model}.parquet", "grounding_score")
GROUNDING_CHECKPOINT_SCORES = Table(
    "grounding/finetune/{ft_model}/scores/{run}/step-{step}.parquet", "grounding_checkpoint_score"
)
GROUNDING_ROWS = Table("grounding/rows.parquet", "grounding_tables")


def fictionalqa_training(ft_model: str, run: str) -> str:
    """The folder under ``results/`` of FictionalQA run ``run`` of base model ``ft_model`` (a key of
    :attr:`Layout.trainings`)."""
    return f"fictionalqa/{ft_model}/finetune/{run}"


def training_model(training: str) -> str | None:
    """The base model of a fine-tuning folder of :attr:`Layout.trainings`: ``ft_model`` of a
    FictionalQA run, None for SORT's parametric runs (the project's base model)."""
    parts = training.split("/")
    return parts[1] if parts[0] == "fictionalqa" else None


class Layout:
    """The names the validated workflow ``config`` expands over, and the job lists built from them."""

    def __init__(self, config: Mapping[str, Any]):
        finetune, sort, grounding = config["finetune"], config["sort"], config["grounding"]
        #: the base models FictionalQA fine-tunes, in config order (``finetune.models``)
        self.ft_models: list[str] = list(finetune_models(config))
        #: the base models whose checkpoints SORT and grounding probe (``finetune.probe_models``; null: all)
        self.probe_models: list[str] = [
            name for name in self.ft_models if finetune.get("probe_models") is None or name in finetune["probe_models"]
        ]
        #: FictionalQA's fine-tuning runs on fiction (``finetune.runs``)
        self.fiction_runs: list[str] = list(finetune["runs"])
        #: every FictionalQA run: the fiction runs and the webtext-only control when it is on
        self.runs: list[str] = self.fiction_runs + ([CONTROL_RUN] if finetune["control"] else [])
        #: the training seeds of every run (``finetune.seeds``), the first the runs' own
        self.seeds: list[int] = training_seeds(config)
        #: the runs of the other seeds, run by run (``doc.seed-7``): trained and evaluated at every
        #: checkpoint for the findings; the figures, tables and probes read the first seed's runs
        self.replicate_runs: list[str] = [
            replicate_run(run, seed, self.seeds) for run in self.runs for seed in self.seeds[1:]
        ]
        #: checkpoint steps, 0 (the base model, evaluated once as run ``base_model``) first
        self.steps: list[int] = checkpoint_steps(finetune["max_steps"], finetune["checkpoint_every"])
        #: models evaluated as they are (``eval_models``)
        self.eval_models: list[str] = list(config["eval_models"])
        self.sort_conditions: list[str] = list(sort["conditions"])
        #: SORT parametric-memory epochs (0: off)
        self.sort_epochs: int = int(sort["parametric"]["epochs"]) if sort["parametric"]["enabled"] else 0
        self.parametric_runs: list[str] = list(PARAMETRIC_RUNS) if self.sort_epochs else []
        self.grounding_datasets: list[str] = list(grounding["datasets"])
        #: grounding at every FictionalQA checkpoint
        self.grounding_finetune: bool = (
            bool(grounding["finetune"]["enabled"]) and bool(self.fiction_runs) and "fiction" in self.grounding_datasets
        )

    @property
    def trainings(self) -> dict[str, list[str]]:
        """Every fine-tuning run's folder under results/ -> its checkpoints after 0, in training order."""
        return {
            **{
                fictionalqa_training(ft_model, run): [f"step-{s}" for s in self.steps[1:]]
                for ft_model in self.ft_models
                for run in self.runs + self.replicate_runs
            },
            **{
                f"sort/parametric/{prun}": [f"epoch-{e}" for e in range(1, self.sort_epochs + 1)]
                for prun in self.parametric_runs
            },
        }

    @property
    def checkpoints(self) -> int:
        """Checkpoint evaluations of FictionalQA: per base model, the base model once, then every run's
        checkpoints, every training seed's."""
        return len(self.ft_models) * (self._checkpoints_per_model + len(self.replicate_runs) * (len(self.steps) - 1))

    @property
    def probe_checkpoints(self) -> int:
        """The checkpoints SORT and grounding probe: those of the first training seed's runs of the
        base models of :attr:`probe_models`."""
        return len(self.probe_models) * self._checkpoints_per_model

    @property
    def _checkpoints_per_model(self) -> int:
        """The base model once, then every run's checkpoints after 0."""
        return 1 + len(self.runs) * (len(self.steps) - 1)

    def run_items(self, ft_model: str, *runs: str) -> list[str]:
        """Item tables of every checkpoint of base model ``ft_model``'s ``runs``: step 0 is the base
        model's, listed once."""
        return list(
            dict.fromkeys(
                ITEMS.path(ft_model=ft_model, run=BASE_RUN if step == 0 else run, step=step)
                for run in runs
                for step in self.steps
            )
        )

    def findings_inputs(self, base_eval: str) -> list[str]:
        """The tables :func:`knowlab.findings.collect` reads: every checkpoint of every run (every
        training seed's) of every base model (Event's claim takes the minimum validation loss over
        them; the model-size claim compares
        the base models), the base models' table, the splits, the corpus's documents and questions
        (their events: the unit of FictionalQA's claims); the base model's
        (``base_eval``) SORT items in each condition and, when on, the parametric runs' last-epoch
        items and segment nll; the grounding rows."""
        inputs = [SORT_ROWS.path(model=base_eval, condition=c) for c in self.sort_conditions]
        if self.fiction_runs:
            for ft_model in self.ft_models:
                inputs += self.run_items(ft_model, *self.runs, *self.replicate_runs)
            inputs += [MODELS.path()]
            inputs += [SPLIT.path(split=run) for run in self.fiction_runs]
            inputs += [CORPUS.path(table=table) for table in ("fictions", "fict_qa")]
        for prun in self.parametric_runs:
            inputs += [SORT_PARAMETRIC_ROWS.path(prun=prun, epoch=self.sort_epochs)]
            inputs += [SORT_PARAMETRIC_NLL.path(prun=prun, epoch=self.sort_epochs)]
        if self.grounding_datasets:
            inputs += [GROUNDING_ROWS.path()]
        return inputs

"""Where the workflow writes its results, and which jobs a config expands to: named once.

Two halves, both read by the rules (``rules/common.smk``), the findings (:mod:`knowlab.findings`),
the dataset card (:mod:`knowlab.dataset_card`) and the tooling (:mod:`knowlab.tooling`: the capacity
plan, tracing, verification, the RO-Crate), which asks it for every path it reads (the top folders
:data:`RESULTS` and :data:`RESOURCES` among them):

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
from knowlab.core.hub import FOLDER as HUB_FOLDER
from knowlab.sort.runs import PARAMETRIC_RUNS

RESULTS = "results"
# the folders under results/ of the jobs' logs and of their Snakemake benchmarks
LOGS_FOLDER = "logs"
BENCHMARKS_FOLDER = "benchmarks"
LOGS = f"{RESULTS}/{LOGS_FOLDER}"
BENCHMARKS = f"{RESULTS}/{BENCHMARKS_FOLDER}"
# the models and data the workflow fetches or builds (no results of a study)
RESOURCES = "resources"
# every folder the workflow writes, under its working directory: a run is these two
OUTPUT_FOLDERS = (RESULTS, RESOURCES)
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


def model_name(model: Mapping[str, Any]) -> str:
    """A ``model`` block's display name in item rows and figures: the GGUF file's stem, the Hub id,
    or "tiny random Llama (test)"."""
    return {
        "gguf_package": lambda: Path(model["gguf_package"]["file"]).stem,
        "hub": lambda: str(model["hub"]["id"]),
        "tiny_random": lambda: "tiny random Llama (test)",
    }[model["source"]]()


@dataclass(frozen=True)
class BaseModel:
    """The project's base model (the config's ``model`` block) under every name the workflow gives it."""

    #: its name among the base models FictionalQA fine-tunes when ``finetune.models`` is null (:func:`model_slug`)
    slug: str
    #: its display name in item rows and figures (:func:`model_name`)
    name: str
    #: its key of ``eval_models`` (the value ``base``; None when no key is, which the config check refuses):
    #: its SORT prompt selection also serves the fiction and parametric SORT runs
    evaluated_as: str | None
    #: its folder (the rule ``base_model`` writes it)
    path: str = f"{RESOURCES}/base_model"
    #: the run label of its rows: step 0 of every run, evaluated once (:mod:`knowlab.core.checkpoints`)
    run: str = BASE_RUN

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> BaseModel:
        evaluated_as = next((key for key, spec in config["eval_models"].items() if spec == "base"), None)
        return cls(model_slug(config["model"]), model_name(config["model"]), evaluated_as)


def finetune_models(config: Mapping[str, Any]) -> dict[str, Any]:
    """The base models FictionalQA fine-tunes (Kirchenbauer et al. 2026 Sec. 5, App. D.1), in config
    order: ``finetune.models`` (name -> ``"base"``, the ``model`` block, or a block of its own), or,
    when it is null, the one model of ``model`` named by :func:`model_slug`."""
    models = config["finetune"].get("models")
    return dict(models) if models else {model_slug(config["model"]): "base"}


def model_runs(config: Mapping[str, Any], name: str) -> list[str]:
    """The FictionalQA runs base model ``name`` (a key of :func:`finetune_models`) trains, in
    ``finetune.runs`` order, then the control: its entry's ``finetune.runs`` (default: all of
    ``finetune.runs``) and ``finetune.control`` (default: ``finetune.control``).  The paper trains the
    control on one model only (Kirchenbauer et al. 2026, Figs. 9 and 11: "Base Webtext" is
    Llama-3.2-1B's), and its other models on the splits their figures show.

    Raises:
        ValueError: the entry names a run outside ``finetune.runs``, turns the control on where
            ``finetune.control`` is off, or is the first model's (the reference of the single-model
            claims trains every run).
    """
    finetune = config["finetune"]
    spec = finetune_models(config)[name]
    own = dict((spec.get("finetune") or {}) if isinstance(spec, Mapping) else {})
    if {"runs", "control"} & set(own) and name == next(iter(finetune_models(config))):
        raise ValueError(
            f"finetune.models.{name}.finetune: the first base model trains every run of finetune.runs (the "
            "reference model of the single-model claims); set runs or control on another model"
        )
    runs = list(own.get("runs", finetune["runs"]))
    if unknown := [run for run in runs if run not in finetune["runs"]]:
        raise ValueError(f"finetune.models.{name}.finetune.runs: {unknown} are not runs of finetune.runs")
    control = bool(own.get("control", finetune["control"]))
    if control and not finetune["control"]:
        raise ValueError(f"finetune.models.{name}.finetune.control is on but finetune.control is off")
    return [run for run in finetune["runs"] if run in runs] + ([CONTROL_RUN] if control else [])


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


@dataclass(frozen=True)
class Step:
    """The files every job of a rule writes besides its results, named from one ``key`` under
    ``results/`` (wildcards in braces, the rule's): its log ``results/logs/<key>.log``, its
    benchmark ``results/benchmarks/<key>.tsv`` and its provenance manifest, by default
    ``results/<key>.manifest.json`` (``manifest``: another path from the working directory)."""

    rule: str
    key: str
    manifest_path: str | None = None

    @property
    def log(self) -> str:
        return f"{LOGS}/{self.key}.log"

    @property
    def benchmark(self) -> str:
        return f"{BENCHMARKS}/{self.key}.tsv"

    @property
    def manifest(self) -> str:
        return self.manifest_path or f"{RESULTS}/{self.key}.manifest.json"

    def fix(self, **wildcards: Any) -> Step:
        """The step with some wildcards set (a rule made in a loop: ``FQA_FIGURE_STEP.fix(family=family)``)."""

        def fill(template: str) -> str:
            return re.sub(r"\{(\w+)\}", lambda m: str(wildcards.get(m[1], m[0])), template)

        return Step(fill(self.rule), fill(self.key), self.manifest_path and fill(self.manifest_path))


# Models (rules/models.smk): the base model, the other base models FictionalQA fine-tunes, the
# models evaluated as they are, and every fine-tuning run's checkpoints under {training}
# (Layout.trainings)
BASE_MODEL_STEP = Step("base_model", "base_model", f"{BaseModel.path}.manifest.json")
FT_BASE_MODEL = f"{RESOURCES}/base_models/{{ft_model}}"
FT_BASE_MODEL_STEP = Step("finetune_base_model", "base_models/{ft_model}", f"{FT_BASE_MODEL}.manifest.json")
EVAL_MODEL = f"{RESOURCES}/models/{{model}}"
EVAL_MODEL_STEP = Step("eval_model", "models/{model}", f"{EVAL_MODEL}.manifest.json")
# a Hub repository at a revision as it is, downloaded on the submit host by the local rule hub_download
# for the jobs that read it ({snapshot}: knowlab.core.hub.HubSnapshot.key, under knowlab.core.hub.FOLDER,
# which the loaders in knowlab.core read at run time and which cannot import the layout: the one place
# that spells it out, tests/test_layout_paths.py)
HUB_SNAPSHOT = f"{HUB_FOLDER}/{{snapshot}}"
HUB_SNAPSHOT_STEP = Step("hub_download", "hub/{snapshot}", f"{HUB_SNAPSHOT}.manifest.json")
CHECKPOINT = Table("{training}/checkpoints/{checkpoint}", "finetune")
# the training state the next checkpoint interval resumes from (temporary)
TRAINING_STATE = Table("{training}/state/{checkpoint}", "finetune")
CHECKPOINT_TRAIN_LOG = Table("{training}/train_log/{checkpoint}.parquet", "finetune")
FINETUNE_STEP = Step(
    "finetune", "{training}/{checkpoint}", f"{RESULTS}/{{training}}/checkpoints/{{checkpoint}}.manifest.json"
)
# a run's training log, one row per optimizer step
TRAIN_LOG = Table("{training}/train_log.parquet", "train_log")
TRAIN_LOG_STEP = Step("train_log", "{training}/train_log")

# Fiction generation (Kirchenbauer et al. 2026, Sec. 3; rules/fiction_generation.smk): {stage} is
# seeds, fictsheets, fictions, fict_qa_raw, attempts_<kind>, grades_<kind>, fict_qa_annotated, fict_qa
GENERATED = Table("generate/{stage}.jsonl", "generate_*")
GENERATE_SEEDS_STEP = Step("generate_seeds", "generate/seeds")
GENERATE_FICTSHEETS_STEP = Step("generate_fictsheets", "generate/fictsheets")
GENERATE_FICTIONS_STEP = Step("generate_fictions", "generate/fictions")
GENERATE_FICT_QA_STEP = Step("generate_fict_qa", "generate/fict_qa", f"{RESULTS}/generate/fict_qa_raw.manifest.json")
GENERATE_ATTEMPTS_STEP = Step("generate_attempts", "generate/attempts_{kind}")
GENERATE_GRADES_STEP = Step("generate_grades", "generate/grades_{kind}")
GENERATION_SUMMARY = Table("generate/summary.csv", "generate_annotate")
GENERATE_ANNOTATE_STEP = Step("generate_annotate", "generate/annotate", f"{RESULTS}/generate/fict_qa.manifest.json")

# FictionalQA (Kirchenbauer et al. 2026; rules/fictionalqa.smk)
WEBTEXT_TRAIN = f"{RESOURCES}/webtext/train.jsonl"
WEBTEXT_HELDOUT = f"{RESOURCES}/webtext/heldout.jsonl"
WEBTEXT_STEP = Step("fictionalqa_webtext", "fictionalqa/webtext", f"{RESOURCES}/webtext/manifest.json")
# the fiction corpus's tables ({table}: fictions, fict_qa, ...): documents, their events and styles, questions
CORPUS = Table("fictionalqa/corpus/fiction/{table}.jsonl", "fictionalqa_corpus")
CORPUS_STEP = Step("fictionalqa_corpus", "fictionalqa/corpus", f"{RESULTS}/fictionalqa/corpus/fiction/manifest.json")
RANKED_CANDIDATES = Table("fictionalqa/corpus/mcq/ranked_candidates.parquet", "fictionalqa_rank_distractors")
# the ranking's shards: kept by a killed job, read by its re-run (no output of the rule)
RANKING_SHARDS = Table("fictionalqa/corpus/mcq/ranking_shards", "fictionalqa_rank_distractors")
RANK_DISTRACTORS_STEP = Step(
    "fictionalqa_rank_distractors",
    "fictionalqa/mcq/rank_distractors",
    f"{RESULTS}/fictionalqa/corpus/mcq/ranked_candidates.manifest.json",
)
MCQ = Table("fictionalqa/corpus/mcq/mcq{n}.jsonl", "fictionalqa_mcq")
MCQ_STEP = Step("fictionalqa_mcq", "fictionalqa/mcq/mcq{n}", f"{RESULTS}/fictionalqa/corpus/mcq/mcq{{n}}.manifest.json")
# the MCQ suites as lm-evaluation-harness tasks (a folder)
LM_EVAL_TASKS = Table("fictionalqa/lm_eval", "fictionalqa_lm_eval_tasks")
LM_EVAL_TASKS_STEP = Step(
    "fictionalqa_lm_eval_tasks", "fictionalqa/lm_eval_tasks", f"{RESULTS}/fictionalqa/lm_eval.manifest.json"
)
REAL_QA = Table("fictionalqa/corpus/real_qa.jsonl", "fictionalqa_real_qa")
REAL_QA_STEP = Step("fictionalqa_real_qa", "fictionalqa/real_qa", f"{RESULTS}/fictionalqa/corpus/real_qa.manifest.json")
SPLIT = Table("fictionalqa/splits/{split}.json", "fictionalqa_split")
SPLIT_STEP = Step("fictionalqa_split", "fictionalqa/splits/{split}")
ITEMS = Table("fictionalqa/{ft_model}/evaluate/{run}/step-{step}.parquet", "fictionalqa_evaluate")
ITEMS_STEP = Step("fictionalqa_evaluate", "fictionalqa/{ft_model}/evaluate/{run}/step-{step}")
PAIRED_TESTS = Table("fictionalqa/{ft_model}/stats/{run}/{suite}_{test}.parquet", "fictionalqa_paired_tests")
PAIRED_TESTS_STEP = Step("fictionalqa_paired_tests", "fictionalqa/{ft_model}/stats/{run}/{suite}")
SUMMARY = Table("fictionalqa/{ft_model}/summary.csv", "fictionalqa_summary")
SUMMARY_STEP = Step("fictionalqa_summary", "fictionalqa/{ft_model}/summary")
# the paper's figures of one base model ({family}: fig2, ...; {ext}: pdf, png), a rule per family
FQA_FIGURE = Table("figures/fictionalqa/{ft_model}/{family}.{ext}", "fictionalqa_figure_{family}")
FQA_FIGURE_STEP = Step(
    "fictionalqa_figure_{family}",
    "fictionalqa/figures/{ft_model}/{family}",
    f"{RESULTS}/figures/fictionalqa/{{ft_model}}/{{family}}.manifest.json",
)
FQA_PVALUES_FIGURE = Table(
    "figures/fictionalqa/{ft_model}/stats/{run}/{suite}_{test}.{ext}", "fictionalqa_figure_pvalues"
)
FQA_PVALUES_FIGURE_STEP = Step(
    "fictionalqa_figure_pvalues",
    "fictionalqa/figures/{ft_model}/stats/{run}/{suite}_{test}",
    f"{RESULTS}/figures/fictionalqa/{{ft_model}}/stats/{{run}}/{{suite}}_{{test}}.manifest.json",
)
# every base model: its name, source, parameter count (knowlab.fictionalqa.models)
MODELS = Table("fictionalqa/models.csv", "fictionalqa_models")
MODELS_STEP = Step("fictionalqa_models", "fictionalqa/models")
ACROSS_MODELS_FIGURE = Table("figures/fictionalqa/across_models/{family}.{ext}", "fictionalqa_across_models_{family}")
ACROSS_MODELS_FIGURE_STEP = Step(
    "fictionalqa_across_models_{family}",
    "fictionalqa/figures/across_models/{family}",
    f"{RESULTS}/figures/fictionalqa/across_models/{{family}}.manifest.json",
)

# SORT (Pink et al. 2024; rules/sort.smk)
SORT_SOURCE = f"{RESOURCES}/sort/{{source}}"
SORT_SOURCES_STEP = Step("sort_sources", "sort/sources", f"{SORT_SOURCE}.manifest.json")
SORT_BOOKS = Table("sort/books.jsonl", "sort_items")
SORT_ITEMS = Table("sort/items.jsonl", "sort_items")
SORT_ITEMS_STEP = Step("sort_items", "sort/items")
SORT_RETRIEVAL = Table("sort/retrieval.parquet", "sort_retrieval")
SORT_RETRIEVAL_STEP = Step("sort_retrieval", "sort/retrieval")
SORT_SELECTION = Table("sort/prompt/{model}/selection.json", "sort_prompt")
SORT_VALIDATION = Table("sort/prompt/{model}/validation.parquet", "sort_prompt")
SORT_PROMPT_STEP = Step("sort_prompt", "sort/prompt/{model}", f"{RESULTS}/sort/prompt/{{model}}/manifest.json")
SORT_RAG_SELECTION = Table("sort/prompt/{model}/rag_selection.json", "sort_rag_prompt")
SORT_RAG_VALIDATION = Table("sort/prompt/{model}/rag_validation.parquet", "sort_rag_prompt")
SORT_RAG_PROMPT_STEP = Step(
    "sort_rag_prompt", "sort/prompt/{model}_rag", f"{RESULTS}/sort/prompt/{{model}}/rag_manifest.json"
)
SORT_ROWS = Table("sort/evaluate/{model}/{condition}.parquet", "sort_evaluate_base")
SORT_ROWS_STEP = Step("sort_evaluate_base", "sort/evaluate/{model}/{condition}")
SORT_TABLES = Table("sort/tables", "sort_stats")
SORT_BINOMIAL = Table("sort/stats/binomial.parquet", "sort_stats")
SORT_MCNEMAR = Table("sort/stats/{model}/mcnemar_conditions.parquet", "sort_stats")
SORT_TTEST = Table("sort/stats/{model}/ttest_conditions.parquet", "sort_stats")
SORT_BANDS = Table("sort/stats/bands/{name}.parquet", "sort_stats")
SORT_STATS_STEP = Step("sort_stats", "sort/stats", f"{RESULTS}/sort/stats/manifest.json")
# SORT's figures of the base model and across parametric fine-tuning ({name}: fig3a, ..., fig16)
SORT_FIGURE = Table("figures/sort/{name}.{ext}", "sort_figures")
SORT_FIGURES_STEP = Step("sort_figures", "sort/figures", f"{RESULTS}/figures/sort/manifest.json")
SORT_FICTION_ITEMS = Table("sort/fiction/items.jsonl", "sort_fiction_items")
SORT_FICTION_ITEMS_STEP = Step("sort_fiction_items", "sort/fiction/items")
SORT_FICTION_ROWS = Table("sort/fiction/{ft_model}/evaluate/{run}/step-{step}.parquet", "sort_fiction_evaluate")
SORT_FICTION_ROWS_STEP = Step("sort_fiction_evaluate", "sort/fiction/{ft_model}/evaluate/{run}/step-{step}")
SORT_FICTION_ALL_ROWS = Table("sort/fiction/{ft_model}/rows.parquet", "sort_fiction_stats")
SORT_FICTION_BINOMIAL = Table("sort/fiction/{ft_model}/stats/binomial.parquet", "sort_fiction_stats")
SORT_FICTION_TESTS = Table("sort/fiction/{ft_model}/stats/tests", "sort_fiction_stats")
SORT_FICTION_BANDS = Table("sort/fiction/{ft_model}/stats/bands.parquet", "sort_fiction_stats")
SORT_FICTION_STATS_STEP = Step(
    "sort_fiction_stats", "sort/fiction/{ft_model}/stats", f"{RESULTS}/sort/fiction/{{ft_model}}/stats/manifest.json"
)
SORT_FICTION_FIGURE = Table("figures/sort/fiction/{ft_model}/fiction_sort.{ext}", "sort_fiction_figures")
SORT_FICTION_FIGURES_STEP = Step(
    "sort_fiction_figures",
    "sort/fiction/{ft_model}/figures",
    f"{RESULTS}/figures/sort/fiction/{{ft_model}}/fiction_sort.manifest.json",
)
SORT_PARAMETRIC_TEXTS = Table("sort/parametric/texts.json", "sort_parametric_texts")
SORT_PARAMETRIC_TEXTS_STEP = Step("sort_parametric_texts", "sort/parametric/texts")
SORT_PARAMETRIC_ROWS = Table("sort/parametric/{prun}/evaluate/epoch-{epoch}.parquet", "sort_parametric_evaluate")
SORT_PARAMETRIC_NLL = Table(
    "sort/parametric/{prun}/evaluate/epoch-{epoch}_segment_nll.parquet", "sort_parametric_evaluate"
)
SORT_PARAMETRIC_EVALUATE_STEP = Step("sort_parametric_evaluate", "sort/parametric/{prun}/evaluate/epoch-{epoch}")
SORT_PARAMETRIC_ALL_ROWS = Table("sort/parametric/rows.parquet", "sort_parametric_stats")
SORT_PARAMETRIC_MCNEMAR = Table("sort/parametric/stats/mcnemar.parquet", "sort_parametric_stats")
SORT_PARAMETRIC_TTEST = Table("sort/parametric/stats/ttest.parquet", "sort_parametric_stats")
SORT_PARAMETRIC_BANDS = Table("sort/parametric/stats/bands/{name}.parquet", "sort_parametric_stats")
SORT_PARAMETRIC_STATS_STEP = Step(
    "sort_parametric_stats", "sort/parametric/stats", f"{RESULTS}/sort/parametric/stats/manifest.json"
)
SORT_PARAMETRIC_FIGURES_STEP = Step(
    "sort_parametric_figures", "sort/parametric/figures", f"{RESULTS}/figures/sort/parametric.manifest.json"
)

# Grounding (Lee et al. 2024; rules/grounding.smk)
GROUNDING_ITEMS = Table("grounding/{dataset}/items.jsonl", "grounding_items")
GROUNDING_POOL = Table("grounding/{dataset}/pool.jsonl", "grounding_items")
GROUNDING_ITEMS_STEP = Step("grounding_items", "grounding/{dataset}/items")
GROUNDING_DISTRACTORS = Table("grounding/{dataset}/distractors.parquet", "grounding_distractors")
GROUNDING_DISTRACTORS_STEP = Step("grounding_distractors", "grounding/{dataset}/distractors")
GROUNDING_RESPONSES = Table("grounding/{dataset}/responses/{model}.jsonl", "grounding_generate")
GROUNDING_RESPONSES_STEP = Step("grounding_generate", "grounding/{dataset}/responses/{model}")
# the request caches of the OpenAI-compatible backends ({served}: the dataset and model, a checkpoint,
# or the decomposer) and the atomic facts' cache of a scoring job: no rule's outputs
GROUNDING_REQUESTS = Table("grounding/cache/requests/{served}", "grounding_generate")
GROUNDING_FACTS_CACHE = Table("grounding/cache/facts/{scored}.json", "grounding_score")
GROUNDING_SCORES = Table("grounding/{dataset}/scores/{model}.parquet", "grounding_score")
GROUNDING_FACTS = Table("grounding/{dataset}/scores/{model}_facts.json", "grounding_score")
GROUNDING_SCORES_STEP = Step("grounding_score", "grounding/{dataset}/scores/{model}")
GROUNDING_ROWS = Table("grounding/rows.parquet", "grounding_tables")
GROUNDING_TABLES = Table("grounding/tables", "grounding_tables")
GROUNDING_TABLES_STEP = Step("grounding_tables", "grounding/tables")
GROUNDING_FIGURE = Table("figures/grounding/{name}.{ext}", "grounding_figures")
GROUNDING_FIGURES_STEP = Step("grounding_figures", "grounding/figures", f"{RESULTS}/figures/grounding/manifest.json")
GROUNDING_CHECKPOINT_RESPONSES = Table(
    "grounding/finetune/{ft_model}/responses/{run}/step-{step}.jsonl", "grounding_checkpoint_generate"
)
GROUNDING_CHECKPOINT_RESPONSES_STEP = Step(
    "grounding_checkpoint_generate", "grounding/finetune/{ft_model}/responses/{run}/step-{step}"
)
GROUNDING_CHECKPOINT_SCORES = Table(
    "grounding/finetune/{ft_model}/scores/{run}/step-{step}.parquet", "grounding_checkpoint_score"
)
GROUNDING_CHECKPOINT_FACTS = Table(
    "grounding/finetune/{ft_model}/scores/{run}/step-{step}_facts.json", "grounding_checkpoint_score"
)
GROUNDING_CHECKPOINT_SCORES_STEP = Step(
    "grounding_checkpoint_score", "grounding/finetune/{ft_model}/scores/{run}/step-{step}"
)
GROUNDING_FINETUNE_ROWS = Table("grounding/finetune/{ft_model}/rows.parquet", "grounding_finetune_stats")
GROUNDING_FINETUNE_RATES = Table("grounding/finetune/{ft_model}/rates.csv", "grounding_finetune_stats")
GROUNDING_FINETUNE_MCNEMAR = Table("grounding/finetune/{ft_model}/mcnemar.parquet", "grounding_finetune_stats")
GROUNDING_FINETUNE_STATS_STEP = Step(
    "grounding_finetune_stats",
    "grounding/finetune/{ft_model}/stats",
    f"{RESULTS}/grounding/finetune/{{ft_model}}/manifest.json",
)
GROUNDING_FINETUNE_FIGURE = Table("figures/grounding/finetune/{ft_model}.{ext}", "grounding_finetune_figures")
GROUNDING_FINETUNE_FIGURES_STEP = Step(
    "grounding_finetune_figures",
    "grounding/finetune/{ft_model}/figures",
    f"{RESULTS}/figures/grounding/finetune/{{ft_model}}.manifest.json",
)

# The findings, the dataset card and provenance (rules/findings.smk, rules/provenance.smk)
FINDINGS_TEXT = Table("findings.txt", "findings")
FINDINGS_JSON = Table("findings.json", "findings")
FINDINGS_TABLE = Table("findings.csv", "findings")
FINDINGS_DESIGN = Table("findings_design.csv", "findings")
FINDINGS_STEP = Step("findings", "findings")
ANALYSIS_PLAN = Table("analysis_plan.json", "analysis_plan")
ANALYSIS_PLAN_STEP = Step("analysis_plan", "analysis_plan")
DATASET_CARD = Table("README.md", "dataset_card")
DATASET_CARD_STEP = Step("dataset_card", "dataset_card", f"{RESULTS}/README.manifest.json")
PROVENANCE_PAGES = Table("provenance", "provenance")
RO_CRATE = Table("ro-crate", "provenance")
PROVENANCE_STEP = Step("provenance", "provenance")
# the report (snakemake --report), which no rule writes
REPORT = f"{RESULTS}/report.html"


def fictionalqa_training(ft_model: str, run: str) -> str:
    """The folder under ``results/`` of FictionalQA run ``run`` of base model ``ft_model`` (a key of
    :attr:`Layout.trainings`)."""
    return f"fictionalqa/{ft_model}/finetune/{run}"


def parametric_training(prun: str) -> str:
    """The folder under ``results/`` of SORT's parametric-memory run ``prun`` (a key of
    :attr:`Layout.trainings`)."""
    return f"sort/parametric/{prun}"


def training_model(training: str) -> str | None:
    """The base model of a fine-tuning folder of :attr:`Layout.trainings`: ``ft_model`` of a
    FictionalQA run, None for SORT's parametric runs (the project's base model)."""
    parts = training.split("/")
    return parts[1] if parts[0] == "fictionalqa" else None


class Layout:
    """The names the validated workflow ``config`` expands over, and the job lists built from them."""

    def __init__(self, config: Mapping[str, Any]):
        finetune, sort, grounding = config["finetune"], config["sort"], config["grounding"]
        #: the project's base model and its names
        self.base_model = BaseModel.from_config(config)
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
        #: each base model's runs (:func:`model_runs`): all of :attr:`runs` unless its entry names fewer
        self.model_runs: dict[str, list[str]] = {name: model_runs(config, name) for name in self.ft_models}
        #: each probed base model's runs whose checkpoints SORT and grounding probe, in :attr:`model_runs`
        #: order (``finetune.probe_runs``; null: all of them)
        probed = finetune.get("probe_runs")
        self.probe_runs: dict[str, list[str]] = {
            name: [run for run in self.model_runs[name] if probed is None or run in probed]
            for name in self.probe_models
        }
        #: the training seeds of every run (``finetune.seeds``), the first the runs' own
        self.seeds: list[int] = training_seeds(config)
        #: the runs of the other seeds, run by run (``doc.seed-7``): trained and evaluated at every
        #: checkpoint for the findings; the figures, tables and probes read the first seed's runs
        self.replicate_runs: list[str] = self.replicates(self.runs)
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

    def replicates(self, runs: list[str]) -> list[str]:
        """The other training seeds' runs of ``runs``, run by run (``doc.seed-7``)."""
        return [replicate_run(run, seed, self.seeds) for run in runs for seed in self.seeds[1:]]

    def model_trainings(self, ft_model: str) -> list[str]:
        """Base model ``ft_model``'s runs (:attr:`model_runs`), then their other seeds' runs."""
        return self.model_runs[ft_model] + self.replicates(self.model_runs[ft_model])

    @property
    def trainings(self) -> dict[str, list[str]]:
        """Every fine-tuning run's folder under results/ -> its checkpoints after 0, in training order."""
        return {
            **{
                fictionalqa_training(ft_model, run): [f"step-{s}" for s in self.steps[1:]]
                for ft_model in self.ft_models
                for run in self.model_trainings(ft_model)
            },
            **{
                parametric_training(prun): [f"epoch-{e}" for e in range(1, self.sort_epochs + 1)]
                for prun in self.parametric_runs
            },
        }

    @property
    def checkpoints(self) -> int:
        """Checkpoint evaluations of FictionalQA: per base model, the base model once, then every run's
        checkpoints, every training seed's."""
        return sum(1 + len(self.model_trainings(m)) * (len(self.steps) - 1) for m in self.ft_models)

    @property
    def probe_checkpoints(self) -> int:
        """The checkpoints SORT and grounding probe: those of the first training seed's runs of
        :attr:`probe_runs`, and each probed base model's step 0."""
        return sum(1 + len(self.probe_runs[m]) * (len(self.steps) - 1) for m in self.probe_models)

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

    def findings_inputs(self, base_eval: str) -> dict[str, list[str]]:
        """The tables :func:`knowlab.findings.collect` reads, by name (the findings rule's named
        inputs; a name whose study or run is off is left out): ``sort_rows``, the base model's
        (``base_eval``) SORT items in each condition; ``item_tables``, every checkpoint of every run (every
        training seed's) of every base model (Event's claim takes the minimum validation loss over
        them; the model-size claim compares the base models); ``models``, the base models' table;
        ``splits``; ``corpus``, the documents and questions (their events: the unit of FictionalQA's
        claims); ``parametric``, when on, each parametric run's last-epoch items and segment nll;
        ``grounding_rows``."""
        inputs = {"sort_rows": [SORT_ROWS.path(model=base_eval, condition=c) for c in self.sort_conditions]}
        if self.fiction_runs:
            inputs["item_tables"] = [
                path
                for ft_model in self.ft_models
                for path in self.run_items(ft_model, *self.model_trainings(ft_model))
            ]
            inputs["models"] = [MODELS.path()]
            inputs["splits"] = [SPLIT.path(split=run) for run in self.fiction_runs]
            inputs["corpus"] = [CORPUS.path(table=table) for table in ("fictions", "fict_qa")]
        if self.parametric_runs:
            inputs["parametric"] = [
                table.path(prun=prun, epoch=self.sort_epochs)
                for prun in self.parametric_runs
                for table in (SORT_PARAMETRIC_ROWS, SORT_PARAMETRIC_NLL)
            ]
        if self.grounding_datasets:
            inputs["grounding_rows"] = [GROUNDING_ROWS.path()]
        return inputs

    def probe_tables(self, table: Table) -> dict[str, list[str]]:
        """A checkpoint probe's per-checkpoint tables (``table``: SORT on the fiction documents, or
        grounding across fine-tuning) of every base model of :attr:`probe_models`: ``base``, the base
        model's (step 0), and ``rows``, the later checkpoints of its :attr:`probe_runs`."""
        return {
            "base": [table.path(ft_model=m, run=BASE_RUN, step=0) for m in self.probe_models],
            "rows": [
                table.path(ft_model=m, run=run, step=step)
                for run in self.runs
                for step in self.steps[1:]
                for m in self.probe_models
                if run in self.probe_runs[m]
            ],
        }

    def dataset_card_inputs(self, base_eval: str) -> dict[str, list[str]]:
        """The item-level tables the dataset card shares (:mod:`knowlab.dataset_card`), by name: every
        evaluated model's SORT items per condition; every FictionalQA checkpoint's items (the first
        seed's runs), SORT's on the fiction documents; the parametric runs' items and segment nll
        (the base model's, ``base_eval``, at epoch 0); the grounding scores, of the evaluated models
        and across fine-tuning."""
        inputs = {
            "sort_rows": [SORT_ROWS.path(model=m, condition=c) for m in self.eval_models for c in self.sort_conditions]
        }
        if self.fiction_runs:
            inputs["item_tables"] = [
                path for ft_model in self.ft_models for path in self.run_items(ft_model, *self.model_runs[ft_model])
            ]
            probes = self.probe_tables(SORT_FICTION_ROWS)
            inputs["sort_fiction_rows"] = probes["base"] + probes["rows"]
        if self.parametric_runs:
            epochs = range(1, self.sort_epochs + 1)
            inputs["sort_parametric_rows"] = [
                SORT_PARAMETRIC_ROWS.path(prun=prun, epoch=e) for prun in self.parametric_runs for e in epochs
            ]
            inputs["sort_parametric_nll"] = self.parametric_nll()
        if self.grounding_datasets:
            inputs["grounding_scores"] = [
                GROUNDING_SCORES.path(dataset=d, model=m) for d in self.grounding_datasets for m in self.eval_models
            ]
        if self.grounding_finetune:
            probes = self.probe_tables(GROUNDING_CHECKPOINT_SCORES)
            inputs["grounding_checkpoint_scores"] = probes["base"] + probes["rows"]
        return inputs

    def parametric_nll(self) -> list[str]:
        """The segments' nll of every parametric run's epochs, then the base model's at epoch 0 (Fig. 12's
        points)."""
        return [
            SORT_PARAMETRIC_NLL.path(prun=prun, epoch=e)
            for prun in self.parametric_runs
            for e in range(1, self.sort_epochs + 1)
        ] + [SORT_PARAMETRIC_NLL.path(prun=BASE_RUN, epoch=0)]

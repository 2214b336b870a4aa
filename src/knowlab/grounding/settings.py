"""The settings of each grounding step (``rules/grounding.smk``): the config keys it reads, as frozen records.

Lee et al. 2024, "How Well Do Large Language Models Truly Ground?".  One record per step
(:class:`knowlab.core.settings.StepSettings`: ``from_config`` of the validated workflow config,
``param()`` for the rule's ``params``, ``from_param`` in the script):

- :class:`GroundingItemsSettings`: rule ``grounding_items`` (the KAIST release's source and pins;
  dataset ``kaist`` only, :meth:`GroundingItemsSettings.for_dataset`).
- :class:`GroundingDistractorsSettings`: rule ``grounding_distractors`` (retriever, ``k``).
- :class:`GroundingConditionSettings`: the conditions the config asks for
  (:func:`condition_names`; ``GROUNDING_CONDITIONS`` of rules/common.smk).
- :class:`GroundingGenerateSettings`: rule ``grounding_generate`` (conditions, question sample,
  packing of the distractor contexts, :class:`GroundingGenerationSettings`);
  :class:`GroundingCheckpointGenerateSettings`: rule ``grounding_checkpoint_generate``.
- :class:`GroundingScoreSettings`: rules ``grounding_score`` and ``grounding_checkpoint_score``
  (:class:`GroundingDecomposerSettings`, :class:`GroundingEvaluatorSettings`).
- :class:`GroundingTablesSettings`: rule ``grounding_tables``.

Keys that cannot change a result are in no record (config/README.md, "What re-runs when a key
changes"): ``grounding.kaist.timeout_s`` (seconds per download request; the files are checked
against ``grounding.kaist.sha256``), and ``api_key_env``, ``max_retries``, ``timeout_s`` and
``concurrency`` of ``grounding.generation.openai`` and ``grounding.decomposer.openai`` (how the
client reaches the server: :class:`knowlab.grounding.generate.ClientOptions`, which
:func:`knowlab.grounding.steps.data.client_options` builds from the config).  A server block
(``openai``) is in a record only under backend ``openai``, the only backend that reads it.

What the records are built from, and the other grounding modules share with them, is here too, so that
no import goes back up (:mod:`knowlab.grounding.conditions` imports this module, and this module the
method names of :mod:`knowlab.grounding.methods`): the condition names (:data:`GOLD_CONDITIONS`,
:data:`NO_CONTEXT`, :data:`FINETUNE_CONDITIONS`), what each condition reads (:func:`condition_spec`),
the conditions a config asks for (:func:`condition_names`), and the labels that name a decomposer and
an M_eval in every row, table and figure footnote (:func:`decomposer_label`, :func:`evaluator_label`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from knowlab.core.settings import StepSettings, as_tuple, at_least
from knowlab.grounding.distractors import POSITIONS
from knowlab.grounding.methods import (
    DECOMPOSER_BACKENDS,
    DEFAULTS,
    EVALUATOR_KEYS,
    GENERATION_BACKENDS,
    SENTENCE_LEVEL,
    WINDOWS,
)

# ------------------------------------------------------------------------------ condition names

GOLD_CONDITIONS = ("original_gold", "original_dist", "conflict_gold", "conflict_dist")
NO_CONTEXT = "no_context"
#: the figures of rule ``grounding_figures`` (:mod:`knowlab.grounding.plots`): name -> its title in
#: the report, whose caption is ``workflow/report/grounding_<name>.rst``
FIGURES = {
    "fig3c": "Fig. 3c: F1 by question and context factors",
    "fig4": "Fig. 4: F1 against input length",
    "fig5": "Fig. 5: F1 reduction from Gold to Dist",
    "fig15_16": "Figs. 15-16: precision and recall",
    "position": "F1 by gold-context position",
}
# across fine-tuning (issue: "the fiction-derived set with Gold and Conflict contexts")
FINETUNE_CONDITIONS = ("original_gold", "conflict_gold")


def condition_names(settings: GroundingConditionSettings) -> list[str]:
    """Every condition the ``grounding`` config asks for (``settings``: ``grounding.distractors.budget``
    and ``position``, ``grounding.sweep.budgets`` and ``positions``), in table order (the conditions are
    defined in :mod:`knowlab.grounding.conditions`)."""
    budget, position = settings.budget, settings.position
    names = [*GOLD_CONDITIONS, NO_CONTEXT]
    names += [f"length_{n}" for n in sorted(settings.sweep_budgets) if n != budget]
    names += [f"position_{p}" for p in settings.sweep_positions if p != position]
    return names


def condition_spec(condition: str, budget: int | None, position: str | None) -> dict[str, Any]:
    """``{"version", "budget", "position"}`` of a condition; ``budget`` None means gold contexts only,
    and ``version`` None the question alone.

    ``budget`` and ``position`` are ``grounding.distractors.budget`` and ``position`` (the
    ``*_dist`` contexts); None where the caller reads no distractor setting (the Gold conditions
    of the fine-tuning checkpoints), which only the Gold and no-context conditions allow.

    Raises:
        ValueError: an unknown condition name, or a condition that needs ``budget`` or
            ``position`` given None.
    """
    if condition == NO_CONTEXT:
        return {"version": None, "budget": None, "position": None}
    if condition in GOLD_CONDITIONS:
        version, kind = condition.split("_")
        spec = {"version": version, "budget": budget if kind == "dist" else None, "position": position}
        needs = ("budget", "position") if kind == "dist" else ()
    else:
        kind, _, value = condition.partition("_")
        if kind == "length" and value.isdigit():
            spec, needs = {"version": "original", "budget": int(value), "position": position}, ("position",)
        elif kind == "position" and value in ("start", "middle", "end", "random"):
            spec, needs = {"version": "original", "budget": budget, "position": value}, ("budget",)
        else:
            raise ValueError(f"unknown grounding condition {condition!r}")
    given = {"budget": budget, "position": position}
    if missing := [key for key in needs if given[key] is None]:
        raise ValueError(f"grounding condition {condition!r} needs grounding.distractors.{missing[0]}")
    return spec


# ------------------------------------------------------------------------------ records


@dataclass(frozen=True)
class GroundingItemsSettings(StepSettings):
    """Rule ``grounding_items``: where the KAIST release comes from (config ``grounding.kaist``).

    Read for dataset ``kaist`` only: the fiction set is derived from the corpus and the run's
    seed (the rule's ``seed`` param), so its record is the empty one (:meth:`for_dataset`).
    ``grounding.kaist.timeout_s`` (seconds per download request) is in no record: the files
    are checked against their pins whatever the time they took."""

    kaist_path: str | None = None
    """``grounding.kaist.path``: a folder holding the release's data files (Lee et al. 2024's
    release, github.com/kaistAI/How-Well-Do-LLMs-Truly-Ground, ``data/``); None: download from ``kaist_url``."""
    kaist_url: str | None = None
    """``grounding.kaist.url``: the base URL the release files are downloaded from when ``kaist_path`` is None."""
    kaist_sha256: dict[str, str] | None = None
    """``grounding.kaist.sha256``: ``{file (relative path): sha256}`` pins of the release's files
    (downloads, cached copies and a local ``kaist_path`` are checked); None: the release's own
    (:data:`knowlab.grounding.kaist.KAIST_SHA256`)."""

    def __post_init__(self) -> None:
        if self.kaist_sha256 is not None:
            if not isinstance(self.kaist_sha256, Mapping):
                raise ValueError(f"grounding.kaist.sha256 must map a file to its sha256, got {self.kaist_sha256!r}")
            object.__setattr__(self, "kaist_sha256", dict(self.kaist_sha256))

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> GroundingItemsSettings:
        kaist = config["grounding"]["kaist"]
        return cls(kaist_path=kaist["path"], kaist_url=kaist["url"], kaist_sha256=dict(kaist["sha256"]))

    def for_dataset(self, dataset: str) -> GroundingItemsSettings:
        """The settings dataset ``dataset`` reads: these for ``kaist``, the empty record for the others."""
        return self if dataset == "kaist" else GroundingItemsSettings()


@dataclass(frozen=True)
class GroundingDistractorsSettings(StepSettings):
    """Rule ``grounding_distractors``: the ranked distractors of every question (Lee et al. 2024 Sec. 3.2 Step 5)."""

    retriever: str = "packaged:all-MiniLM-L6-v2"
    """``grounding.retriever``: the sentence embedder that ranks the pool by similarity to the
    question (:func:`knowlab.core.retrieval.load_embedder`; the paper: Contriever)."""
    k: int = 32
    """``grounding.distractors.k``: ranked distractor documents kept per question (enough to fill
    the largest budget)."""

    def __post_init__(self) -> None:
        at_least(self.k, 1, "grounding.distractors.k")

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> GroundingDistractorsSettings:
        grounding = config["grounding"]
        return cls(retriever=grounding["retriever"], k=grounding["distractors"]["k"])


@dataclass(frozen=True)
class GroundingConditionSettings(StepSettings):
    """The conditions the config asks for (:func:`condition_names`;
    Lee et al. 2024 Sec. 3.2, Figs. 4-5, Sec. 4.2): the ``*_dist`` budget and gold position and the sweeps."""

    budget: int = 1024
    """``grounding.distractors.budget``: tokens (of the answering model's tokenizer) of the
    ``*_dist`` contexts, gold contexts and ranked distractors together."""
    position: str = "random"
    """``grounding.distractors.position``: where the gold contexts go among the distractors
    (``start``, ``middle``, ``end`` or ``random``)."""
    sweep_budgets: tuple[int, ...] = ()
    """``grounding.sweep.budgets``: context budgets (tokens) of Fig. 4's length curve (Original version)."""
    sweep_positions: tuple[str, ...] = ()
    """``grounding.sweep.positions``: gold-context positions of the position analysis (Original
    version, at ``budget``)."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "sweep_budgets", as_tuple(self.sweep_budgets))
        object.__setattr__(self, "sweep_positions", as_tuple(self.sweep_positions))
        at_least(self.budget, 1, "grounding.distractors.budget")
        if self.position not in POSITIONS:
            raise ValueError(f"grounding.distractors.position must be one of {POSITIONS}, got {self.position!r}")
        for budget in self.sweep_budgets:
            at_least(budget, 1, "every grounding.sweep.budgets entry")
        if unknown := [p for p in self.sweep_positions if p not in POSITIONS]:
            raise ValueError(f"grounding.sweep.positions must be among {POSITIONS}, got {unknown}")

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> GroundingConditionSettings:
        grounding = config["grounding"]
        return cls(
            budget=grounding["distractors"]["budget"],
            position=grounding["distractors"]["position"],
            sweep_budgets=as_tuple(grounding["sweep"]["budgets"]),
            sweep_positions=as_tuple(grounding["sweep"]["positions"]),
        )


@dataclass(frozen=True)
class GroundingGenerationSettings(StepSettings):
    """How responses are generated (config ``grounding.generation``; Lee et al. 2024 App. C.2-C.3).

    The defaults are those of :func:`knowlab.grounding.generate.generate_responses` (the
    config's are in config/config.yaml).  ``openai_base_url`` and ``openai_models`` are read by
    backend ``openai`` only, and are None under ``transformers``; the client keys of
    ``grounding.generation.openai`` (``api_key_env``, ``max_retries``, ``timeout_s``,
    ``concurrency``) are in no record (:class:`knowlab.grounding.generate.ClientOptions`)."""

    backend: str = "transformers"
    """``grounding.generation.backend``: ``transformers`` (the model in the job) or ``openai`` (a served model)."""
    max_new_tokens: int = 256
    """``grounding.generation.max_new_tokens``: tokens generated at most per response (App. C.3: 2048)."""
    max_input_tokens: int = 2048
    """``grounding.generation.max_input_tokens``: tokens of the rendered prompt at most; longer
    prompts lose context tokens from the end (:func:`knowlab.grounding.generate.fit_prompt`; App. C.3: 2048)."""
    do_sample: bool = False
    """``grounding.generation.do_sample``: sample (True) or decode greedily (False)."""
    temperature: float = 1.0
    """``grounding.generation.temperature``: sampling temperature (``do_sample`` only)."""
    top_k: int | None = None
    """``grounding.generation.top_k``: sample from the k most likely tokens (None: all; ``do_sample`` only)."""
    top_p: float | None = None
    """``grounding.generation.top_p``: nucleus sampling mass (None: 1; ``do_sample`` only)."""
    seed: int = 0
    """``grounding.generation.seed``: the sampling seed."""
    batch_size: int = 8
    """``grounding.generation.batch_size``: prompts per generate call (backend ``transformers``;
    padded batches, which can change greedy outputs, hence a setting that can change a result)."""
    system_prompt: str | None = None
    """``grounding.generation.system_prompt``: the system turn of every prompt (None: none)."""
    openai_base_url: str | None = None
    """``grounding.generation.openai.base_url``: the server (None: api.openai.com); backend ``openai`` only."""
    openai_models: dict[str, Any] | None = None
    """``grounding.generation.openai.models``: ``{eval_models name or <run>/step-<n>: served name or
    {model, base_url}}`` (free-form; :func:`knowlab.grounding.generate.served_model`); backend
    ``openai`` only, and in a rule's params only the job's own entry
    (:meth:`GroundingGenerateSettings.for_served`)."""

    def __post_init__(self) -> None:
        if self.backend not in GENERATION_BACKENDS:
            raise ValueError(f"grounding.generation.backend must be one of {GENERATION_BACKENDS}, got {self.backend!r}")
        at_least(self.max_new_tokens, 1, "grounding.generation.max_new_tokens")
        at_least(self.max_input_tokens, 1, "grounding.generation.max_input_tokens")
        at_least(self.batch_size, 1, "grounding.generation.batch_size")
        if self.openai_models is not None:
            object.__setattr__(self, "openai_models", dict(self.openai_models))

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> GroundingGenerationSettings:
        gen = config["grounding"]["generation"]
        served = gen["backend"] == "openai"
        return cls(
            backend=gen["backend"],
            max_new_tokens=gen["max_new_tokens"],
            max_input_tokens=gen["max_input_tokens"],
            do_sample=gen["do_sample"],
            temperature=gen["temperature"],
            top_k=gen["top_k"],
            top_p=gen["top_p"],
            seed=gen["seed"],
            batch_size=gen["batch_size"],
            system_prompt=gen["system_prompt"],
            openai_base_url=gen["openai"]["base_url"] if served else None,
            openai_models=dict(gen["openai"]["models"] or {}) if served else None,
        )


@dataclass(frozen=True)
class GroundingGenerateSettings(StepSettings):
    """Rule ``grounding_generate``: the responses of one model to the grounding questions under every
    condition (:func:`knowlab.grounding.steps.data.respond`; Lee et al. 2024 Sec. 4, App. C.2-C.3)."""

    #: the config key of ``max_items`` (in messages)
    MAX_ITEMS_KEY: ClassVar[str] = "grounding.max_items"

    conditions: tuple[str, ...] = ()
    """The conditions answered, in table order: :func:`condition_names`
    of ``grounding.distractors`` and ``grounding.sweep`` (:class:`GroundingConditionSettings`)."""
    max_items: int | None = None
    """``grounding.max_items``: questions per dataset, a seeded sample
    (:func:`knowlab.grounding.conditions.select_question_ids`); None: all."""
    budget: int | None = None
    """``grounding.distractors.budget``: tokens of the contexts with distractors (``*_dist`` and
    ``position_*`` conditions); None where no condition packs distractors to it."""
    position: str | None = None
    """``grounding.distractors.position``: the gold contexts' place among the distractors
    (``*_dist`` and ``length_*`` conditions); None where no condition reads it."""
    generation: GroundingGenerationSettings = field(default_factory=GroundingGenerationSettings)
    """``grounding.generation``: how the responses are generated."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "conditions", as_tuple(self.conditions))
        at_least(self.max_items, 1, self.MAX_ITEMS_KEY, allow_none=True)
        at_least(self.budget, 1, "grounding.distractors.budget", allow_none=True)
        if self.position is not None and self.position not in POSITIONS:
            raise ValueError(f"grounding.distractors.position must be one of {POSITIONS}, got {self.position!r}")
        for condition in self.conditions:  # an unknown name, or one that needs a key left out, fails here
            condition_spec(condition, self.budget, self.position)

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> GroundingGenerateSettings:
        grounding = config["grounding"]
        return cls(
            conditions=as_tuple(condition_names(GroundingConditionSettings.from_config(config))),
            max_items=grounding["max_items"],
            budget=grounding["distractors"]["budget"],
            position=grounding["distractors"]["position"],
            generation=GroundingGenerationSettings.from_config(config),
        )

    def for_served(self, key: str) -> GroundingGenerateSettings:
        """These settings with ``generation.openai_models`` cut to the entry of ``key`` (the job's
        ``eval_models`` name or ``<run>/step-<n>``), the only one the job reads; unchanged under
        backend ``transformers``."""
        models = self.generation.openai_models
        if models is None:
            return self
        own = {key: models[key]} if key in models else {}
        return dataclasses.replace(self, generation=dataclasses.replace(self.generation, openai_models=own))


@dataclass(frozen=True)
class GroundingCheckpointGenerateSettings(GroundingGenerateSettings):
    """Rule ``grounding_checkpoint_generate``: the fiction set at every fine-tuning checkpoint, in
    the Gold conditions of both versions only
    (:data:`FINETUNE_CONDITIONS`), so no distractor setting is read."""

    MAX_ITEMS_KEY: ClassVar[str] = "grounding.finetune.max_items"

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> GroundingCheckpointGenerateSettings:
        return cls(
            conditions=as_tuple(FINETUNE_CONDITIONS),
            max_items=config["grounding"]["finetune"]["max_items"],
            generation=GroundingGenerationSettings.from_config(config),
        )


@dataclass(frozen=True)
class GroundingDecomposerSettings(StepSettings):
    """The atomic-fact decomposer (config ``grounding.decomposer``; Lee et al. 2024 Sec. 3.1,
    footnote 4, App. A.3; :func:`knowlab.grounding.facts.decompose_responses`).

    The defaults are the library's (config/config.yaml has its own).  ``openai_base_url`` and
    ``openai_model`` are read by a served decomposer only (kind ``llm``, backend ``openai``), and
    are None otherwise; the client keys of ``grounding.decomposer.openai`` are in no record."""

    kind: str = "sentences"
    """``grounding.decomposer.kind``: ``llm`` (an instruct model, prompted per sentence) or
    ``sentences`` (pysbd sentences stand in for atomic facts: sentence-level numbers)."""
    backend: str = "transformers"
    """``grounding.decomposer.backend``: ``transformers`` (the base model in the job) or ``openai`` (a served model)."""
    max_new_tokens: int = 96
    """``grounding.decomposer.max_new_tokens``: tokens generated at most per sentence (kind ``llm``)."""
    batch_size: int = 8
    """``grounding.decomposer.batch_size``: prompts per generate call (kind ``llm``, backend
    ``transformers``; padded batches, which can change greedy outputs)."""
    min_support: float | None = None
    """``grounding.decomposer.min_support``: drop a fact unless this share (0-1) of its content
    words is in its sentence (:func:`knowlab.grounding.facts.support`); None: no filter."""
    demos: str | None = None
    """``grounding.decomposer.demos``: a demonstrations file in FActScore's ``demons.json`` format
    (Min et al. 2023), read when the job runs; None: the project's prompt."""
    n_demos: int | None = None
    """``grounding.decomposer.n_demos``: the first n demonstrations in every prompt; None: all."""
    k_demos: int = 0
    """``grounding.decomposer.k_demos``: then the k demonstrations most similar to the sentence by BM25."""
    openai_base_url: str | None = None
    """``grounding.decomposer.openai.base_url``: the server (None: api.openai.com); a served decomposer only."""
    openai_model: str | None = None
    """``grounding.decomposer.openai.model``: the served name (None: the base model folder as given,
    the name ``vllm serve`` gives it); a served decomposer only."""
    name: str | None = None
    """Not a config key (the workflow leaves it None): the model's name in the cache key and the
    label instead of the model's own (callers outside the workflow, e.g. tests with a stand-in model)."""

    def __post_init__(self) -> None:
        if self.kind not in ("llm", "sentences"):
            raise ValueError(f"grounding.decomposer.kind must be 'llm' or 'sentences', got {self.kind!r}")
        if self.backend not in DECOMPOSER_BACKENDS:
            raise ValueError(f"grounding.decomposer.backend must be one of {DECOMPOSER_BACKENDS}, got {self.backend!r}")
        at_least(self.max_new_tokens, 1, "grounding.decomposer.max_new_tokens")
        at_least(self.batch_size, 1, "grounding.decomposer.batch_size")
        for key, allow_none in (("n_demos", True), ("k_demos", False)):
            value = getattr(self, key)
            count = isinstance(value, int) and not isinstance(value, bool) and value >= 0
            if not (count or (value is None and allow_none)):
                expected = "null or an int >= 0" if allow_none else "an int >= 0"
                raise ValueError(f"grounding.decomposer.{key} must be {expected}, got {value!r}")
        if self.demos is not None and not (isinstance(self.demos, str) and self.demos.strip()):
            raise ValueError(f"grounding.decomposer.demos must be null or a file path, got {self.demos!r}")

    @property
    def served(self) -> bool:
        """Kind ``llm`` on backend ``openai``: the decomposer is a served model."""
        return self.kind == "llm" and self.backend == "openai"

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> GroundingDecomposerSettings:
        dec = config["grounding"]["decomposer"]
        served = dec["kind"] == "llm" and dec["backend"] == "openai"
        return cls(
            kind=dec["kind"],
            backend=dec["backend"],
            max_new_tokens=dec["max_new_tokens"],
            batch_size=dec["batch_size"],
            min_support=dec["min_support"],
            demos=dec["demos"],
            n_demos=dec["n_demos"],
            k_demos=dec["k_demos"],
            openai_base_url=dec["openai"]["base_url"] if served else None,
            openai_model=dec["openai"]["model"] if served else None,
        )


@dataclass(frozen=True)
class GroundingEvaluatorSettings(StepSettings):
    """The evaluation model M_eval (config ``grounding.evaluator``; Lee et al. 2024 Sec. 3.3, App. B.2;
    :func:`knowlab.grounding.evaluator.load_evaluator`)."""

    kind: str = "bi_encoder"
    """``grounding.evaluator.kind``: ``bi_encoder``, ``cross_encoder`` (the paper's M_eval) or ``llm_judge``."""
    model: str | None = None
    """``grounding.evaluator.model``: the evaluator's model; None: the kind's default (bi-encoder:
    packaged all-MiniLM-L6-v2; cross-encoder: cross-encoder/ms-marco-MiniLM-L-12-v2; LLM judge: the base model)."""
    threshold: float | None = None
    """``grounding.evaluator.threshold``: a fact is supported above it; None: the paper's (App. B.2:
    bi-encoder cosine >= 0.4, cross-encoder logit > 6, judge log-odds > 0)."""
    window: str = "max"
    """``grounding.evaluator.window``: a text longer than the evaluator's input: ``max`` over its
    passages, or ``truncate`` to its first 512 tokens (the released scorer, ``src/cal_f1.py``)."""

    def __post_init__(self) -> None:
        if self.kind not in EVALUATOR_KEYS:
            raise ValueError(f"grounding.evaluator.kind must be one of {sorted(EVALUATOR_KEYS)}, got {self.kind!r}")
        if self.window not in WINDOWS:
            raise ValueError(f"grounding.evaluator.window must be one of {WINDOWS}, got {self.window!r}")

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> GroundingEvaluatorSettings:
        ev = config["grounding"]["evaluator"]
        return cls(kind=ev["kind"], model=ev["model"], threshold=ev["threshold"], window=ev["window"])


@dataclass(frozen=True)
class GroundingScoreSettings(StepSettings):
    """Rules ``grounding_score`` and ``grounding_checkpoint_score``: atomic facts of every response
    and their precision / recall / F1 (:func:`knowlab.grounding.steps.data.score`; Lee et al. 2024 Sec. 3.3)."""

    decomposer: GroundingDecomposerSettings = field(default_factory=GroundingDecomposerSettings)
    """``grounding.decomposer``: how responses and gold contexts become atomic facts."""
    evaluator: GroundingEvaluatorSettings = field(default_factory=GroundingEvaluatorSettings)
    """``grounding.evaluator``: whether a fact's knowledge is in a text."""

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> GroundingScoreSettings:
        return cls(
            decomposer=GroundingDecomposerSettings.from_config(config),
            evaluator=GroundingEvaluatorSettings.from_config(config),
        )


@dataclass(frozen=True)
class GroundingTablesSettings(StepSettings):
    """Rule ``grounding_tables``: the tables (:func:`knowlab.grounding.report.write_tables`; Lee et al. 2024
    Tables 1, 8-12, and those of Figs. 3c, 4, 5, 15-16 and Sec. 4.2, which rule ``grounding_figures``
    draws from them)."""

    position: str = "random"
    """``grounding.distractors.position``: the gold position of the ``*_dist`` conditions, the
    position table's column for it (Sec. 4.2, "Impact of gold contexts position")."""
    decomposer_label: str = "sentences (sentence-level, not atomic facts)"
    """The label of ``grounding.decomposer`` (:func:`decomposer_label`),
    for rows scored before rows named their decomposer."""
    evaluator_label: str = "bi_encoder:packaged:all-MiniLM-L6-v2@0.4"
    """The label of ``grounding.evaluator`` (:func:`evaluator_label`),
    for rows scored before rows named their evaluator."""

    def __post_init__(self) -> None:
        if self.position not in POSITIONS:
            raise ValueError(f"grounding.distractors.position must be one of {POSITIONS}, got {self.position!r}")

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> GroundingTablesSettings:
        return cls(
            position=config["grounding"]["distractors"]["position"],
            decomposer_label=decomposer_label(GroundingDecomposerSettings.from_config(config)),
            evaluator_label=evaluator_label(GroundingEvaluatorSettings.from_config(config)),
        )


# ------------------------------------------------------------------------------ method labels


def decomposer_label(settings: GroundingDecomposerSettings, model: str | None = None) -> str:
    """The decomposer as the grounding tables' ``decomposer`` column and the figures' footnotes name it.

    ``"sentences (sentence-level, not atomic facts)"`` for ``kind == "sentences"`` (pysbd sentences
    stand in for atomic facts, :data:`~knowlab.grounding.methods.SENTENCE_LEVEL`); for ``kind == "llm"``
    ``"llm:<name>"``, ``name`` being ``settings.name``, else the served model name
    (backend ``openai``: ``settings.openai_model``), else ``model`` (the local model's display
    name, e.g. the base model's Hub id), else ``"unknown"``.  The few-shot prompt (paper Sec. 3.1,
    footnote 4; App. A.3) is :data:`~knowlab.grounding.facts.DECOMPOSE_INSTRUCTION` +
    :data:`~knowlab.grounding.facts.DECOMPOSE_DEMOS`, or FActScore's with the demonstrations of
    ``grounding.decomposer.demos`` (:class:`~knowlab.grounding.facts.Demonstrations`).
    """
    if settings.kind == "sentences":
        return f"sentences ({SENTENCE_LEVEL})"
    served = settings.openai_model if settings.backend == "openai" else None
    return f"llm:{settings.name or served or model or 'unknown'}"


def evaluator_label(settings: GroundingEvaluatorSettings, judge_model: str | None = None) -> str:
    """M_eval as the grounding tables' ``evaluator`` column and the figures' footnotes name it:
    ``"<kind>:<model>@<threshold>"``, e.g. ``"bi_encoder:packaged:all-MiniLM-L6-v2@0.4"``
    (cosine, supported when ``>=``) or ``"cross_encoder:cross-encoder/ms-marco-MiniLM-L-12-v2@6"``
    (raw logit, ``>``; the paper's App. B.2 choice), followed by ``" (window: truncate)"``
    when ``settings.window`` is ``truncate`` (the released scorer's first 512 tokens; nothing for
    ``max``, the default, whose labels are those of earlier versions).

    ``model`` and ``threshold`` of ``settings`` (``grounding.evaluator``) where set, else the
    kind's constructor defaults (:data:`~knowlab.grounding.methods.DEFAULTS`, the paper's thresholds,
    App. B.2); the LLM judge's model is ``settings.model``, else ``judge_model`` (the base model's display name),
    else ``"unknown"``.  No model is loaded.
    """
    kind = settings.kind
    default_model, default_threshold = DEFAULTS[kind]
    model = settings.model or (judge_model if kind == "llm_judge" else default_model) or "unknown"
    threshold = settings.threshold
    threshold = default_threshold if threshold is None else threshold
    window = settings.window or "max"
    return f"{kind}:{model}@{float(threshold):g}" + ("" if window == "max" else f" (window: {window})")

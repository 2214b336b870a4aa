"""The settings of each fiction generation step (``rules/fiction_generation.smk``): the config keys it reads.

FictionalQA, Kirchenbauer et al. 2026, Sec. 3 and App. C.  One record per step
(:class:`knowlab.core.settings.StepSettings`: ``from_config`` of the validated workflow config,
``param()`` for the rule's ``params``, ``from_param`` in the script):

- :class:`FictionGenerationSeedsSettings` (rule ``generate_seeds``),
  :class:`FictionGenerationFictsheetsSettings` (``generate_fictsheets``),
  :class:`FictionGenerationFictionsSettings` (``generate_fictions``),
  :class:`FictionGenerationFictQaSettings` (``generate_fict_qa``),
  :class:`FictionGenerationAttemptsSettings` (``generate_attempts``, both kinds) and
  :class:`FictionGenerationGradesSettings` (``generate_grades``, both kinds): the keys every
  stage reads (:class:`FictionGenerationStageSettings`: model, backend, prompts, parse retries)
  with the stage's own temperature and token limit and the stage's other keys;
  :data:`STAGE_SETTINGS` maps a stage to its record, :func:`stage_settings` builds them all.
- :class:`FictionGenerationAnnotateSettings` (rule ``generate_annotate``): the near-duplicate keys.

The run's seed (config ``seed``) is the rules' ``seed`` param.  Keys that cannot change a result
are in no record (config/README.md, "What re-runs when a key changes"): ``fiction.generate.cache_dir``
(where the request cache lives: it is content-addressed, a request is answered the same from
any folder) and the client keys of ``fiction.generate.openai`` (``api_key_env``,
``max_retries``, ``timeout_s``, ``concurrency``, ``poll_interval_s``:
:class:`knowlab.fiction_generation.steps.data.ClientOptions`); the scripts read them from the
config.  A backend's own keys are in a record only under that backend (``openai.base_url``:
``openai`` and ``openai_batch``; ``transformers.path`` and ``batch_size``: ``transformers``;
``replay.path``: ``replay``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from knowlab.core.settings import StepSettings, as_tuple, at_least
from knowlab.fiction.schema import STYLES

#: the two kinds of fiction attempts graded against each other (rule fiction_generation_attempts)
ATTEMPT_KINDS = ("blind", "informed")

#: the backends of ``fiction.generate.backend`` (:data:`knowlab.core.llm.backends.BACKENDS`, which
#: takes seconds to import: the rules read this module when the DAG is built)
BACKENDS = ("openai", "openai_batch", "transformers", "replay")


@dataclass(frozen=True, kw_only=True)
class FictionGenerationStageSettings(StepSettings):
    """The keys every generation stage reads (config ``fiction.generate``); a stage's record adds its own.

    ``temperature`` and ``max_tokens`` are the stage's entries (:attr:`STAGE`) of
    ``fiction.generate.temperature`` and ``max_tokens``: a stage's requests carry them, and its
    items' sampling seeds (:func:`knowlab.fiction_generation.stages.item_seed`), in their cache keys."""

    #: the stage (:data:`knowlab.fiction_generation.steps.data.STAGE_INPUTS`), the request's ``stage``
    STAGE: ClassVar[str] = ""

    backend: str
    """``fiction.generate.backend``: ``openai``, ``openai_batch`` (the Batch API), ``transformers``
    (a local model in the job) or ``replay`` (recorded responses, by request key)."""
    model: str
    """``fiction.generate.model``: the model sent to the server; part of every request's cache key."""
    prompts: str
    """``fiction.generate.prompts``: the prompt templates (YAML), relative to the workflow's folder
    (the file is also the rules' input ``prompts``; App. C's prompts in this project's words)."""
    max_parse_retries: int
    """``fiction.generate.max_parse_retries``: re-requests, with a new sampling seed, of an answer
    that does not parse, before the item is dropped."""
    temperature: float
    """``fiction.generate.temperature.<stage>``: the stage's sampling temperature (the paper's,
    config/paper.yaml: seeds 1.0, fictsheets 0.7, fictions 1.0, fict_qa / attempts / grades 0.1)."""
    max_tokens: int
    """``fiction.generate.max_tokens.<stage>``: tokens generated at most per answer of the stage."""
    openai_base_url: str | None = None
    """``fiction.generate.openai.base_url``: the server (None: api.openai.com); backends ``openai``
    and ``openai_batch`` only."""
    transformers_path: str | None = None
    """``fiction.generate.transformers.path``: the model folder, relative to the workflow's folder
    (None: the project's base model); backend ``transformers`` only."""
    transformers_batch_size: int | None = None
    """``fiction.generate.transformers.batch_size``: prompts per generate call (padded batches,
    which can change the answers); backend ``transformers`` only."""
    replay_path: str | None = None
    """``fiction.generate.replay.path``: a folder with ``batch_results/`` of recorded responses;
    backend ``replay`` only."""

    def __post_init__(self) -> None:
        if self.backend not in BACKENDS:
            raise ValueError(f"fiction.generate.backend must be one of {BACKENDS}, got {self.backend!r}")
        if not isinstance(self.model, str) or not self.model:
            raise ValueError(f"fiction.generate.model must name the model, got {self.model!r}")
        at_least(self.max_parse_retries, 0, "fiction.generate.max_parse_retries")
        value = self.temperature
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
            raise ValueError(f"fiction.generate.temperature.{self.STAGE} must be a number >= 0, got {value!r}")
        at_least(self.max_tokens, 1, f"fiction.generate.max_tokens.{self.STAGE}")
        if self.transformers_batch_size is not None:
            at_least(self.transformers_batch_size, 1, "fiction.generate.transformers.batch_size")

    @classmethod
    def _common(cls, config: Mapping[str, Any]) -> dict[str, Any]:
        """The fields of :class:`FictionGenerationStageSettings` for this stage, from the config."""
        generate = config["fiction"]["generate"]
        backend = generate["backend"]
        local = backend == "transformers"
        return {
            "backend": backend,
            "model": generate["model"],
            "prompts": generate["prompts"],
            "max_parse_retries": generate["max_parse_retries"],
            "temperature": generate["temperature"][cls.STAGE],
            "max_tokens": generate["max_tokens"][cls.STAGE],
            "openai_base_url": generate["openai"]["base_url"] if backend in ("openai", "openai_batch") else None,
            "transformers_path": generate["transformers"]["path"] if local else None,
            "transformers_batch_size": generate["transformers"]["batch_size"] if local else None,
            "replay_path": generate["replay"]["path"] if backend == "replay" else None,
        }

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> FictionGenerationStageSettings:
        return cls(**cls._common(config))


@dataclass(frozen=True, kw_only=True)
class FictionGenerationSeedsSettings(FictionGenerationStageSettings):
    """Rule ``generate_seeds``: seed events from a year and inspiration words each (App. C.2)."""

    STAGE: ClassVar[str] = "seeds"

    n_seeds: int
    """``fiction.generate.n_seeds``: seed events (the paper: 100)."""
    years: tuple[int, int]
    """``fiction.generate.years``: the first and last year (inclusive) an event's year is drawn from."""
    inspiration_words: int
    """``fiction.generate.inspiration_words``: random English words per seed prompt."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "years", as_tuple(self.years))
        super().__post_init__()
        at_least(self.n_seeds, 1, "fiction.generate.n_seeds")
        at_least(self.inspiration_words, 0, "fiction.generate.inspiration_words")
        if len(self.years) != 2 or not all(isinstance(y, int) for y in self.years) or self.years[0] > self.years[1]:
            raise ValueError(f"fiction.generate.years must be [first, last] years, first <= last, got {self.years!r}")

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> FictionGenerationSeedsSettings:
        generate = config["fiction"]["generate"]
        return cls(
            **cls._common(config),
            n_seeds=generate["n_seeds"],
            years=as_tuple(generate["years"]),
            inspiration_words=generate["inspiration_words"],
        )


@dataclass(frozen=True, kw_only=True)
class FictionGenerationFictsheetsSettings(FictionGenerationStageSettings):
    """Rule ``generate_fictsheets``: a fictsheet per seed event (App. C.3)."""

    STAGE: ClassVar[str] = "fictsheets"


@dataclass(frozen=True, kw_only=True)
class FictionGenerationFictionsSettings(FictionGenerationStageSettings):
    """Rule ``generate_fictions``: documents per event and style (App. C.4)."""

    STAGE: ClassVar[str] = "fictions"

    styles: dict[str, int]
    """``fiction.generate.styles``: documents per event of each style, in this order (the paper:
    news 5, social 3, encyclopedia 2, corporate 3, blog 2)."""
    fiction_words: int
    """``fiction.generate.fiction_words``: words of its fictsheet each document is asked to use."""

    def __post_init__(self) -> None:
        super().__post_init__()
        if unknown := [style for style in self.styles if style not in STYLES]:
            raise ValueError(f"fiction.generate.styles: unknown style(s) {unknown}; styles are {STYLES}")
        for style, count in self.styles.items():
            at_least(count, 0, f"fiction.generate.styles.{style}")
        object.__setattr__(self, "styles", dict(self.styles))
        at_least(self.fiction_words, 0, "fiction.generate.fiction_words")

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> FictionGenerationFictionsSettings:
        generate = config["fiction"]["generate"]
        return cls(**cls._common(config), styles=dict(generate["styles"]), fiction_words=generate["fiction_words"])


@dataclass(frozen=True, kw_only=True)
class FictionGenerationFictQaSettings(FictionGenerationStageSettings):
    """Rule ``generate_fict_qa``: fictional questions and answers per document (App. C.5)."""

    STAGE: ClassVar[str] = "fict_qa"


@dataclass(frozen=True, kw_only=True)
class FictionGenerationAttemptsSettings(FictionGenerationStageSettings):
    """Rule ``generate_attempts``: blind and informed answer attempts (Sec. 3); both kinds read these."""

    STAGE: ClassVar[str] = "attempts"


@dataclass(frozen=True, kw_only=True)
class FictionGenerationGradesSettings(FictionGenerationStageSettings):
    """Rule ``generate_grades``: grades of the attempts (Sec. 3); both kinds read these."""

    STAGE: ClassVar[str] = "grades"


#: stage -> its settings record, in pipeline order
STAGE_SETTINGS: dict[str, type[FictionGenerationStageSettings]] = {
    cls.STAGE: cls
    for cls in (
        FictionGenerationSeedsSettings,
        FictionGenerationFictsheetsSettings,
        FictionGenerationFictionsSettings,
        FictionGenerationFictQaSettings,
        FictionGenerationAttemptsSettings,
        FictionGenerationGradesSettings,
    )
}


def stage_settings(config: Mapping[str, Any]) -> dict[str, FictionGenerationStageSettings]:
    """Every stage's settings of the validated workflow config (the whole chain,
    :func:`knowlab.fiction_generation.steps.data.run_chain`)."""
    return {stage: cls.from_config(config) for stage, cls in STAGE_SETTINGS.items()}


@dataclass(frozen=True, kw_only=True)
class FictionGenerationAnnotateSettings(StepSettings):
    """Rule ``generate_annotate``: near-duplicate questions (an annotation; the kept questions are
    those not exact duplicates and wrong when blind; :func:`knowlab.fiction_generation.steps.data.run_annotation`)."""

    embedder: str
    """``fiction.generate.near_duplicates.embedder``: the sentence embedder of the questions
    (:func:`knowlab.core.retrieval.load_embedder`)."""
    distance_threshold: float
    """``fiction.generate.near_duplicates.distance_threshold``: questions whose average cosine
    distance is below it are near duplicates (0-2; pair agreement with the authors' groups: README)."""

    def __post_init__(self) -> None:
        value = self.distance_threshold
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= 2:
            raise ValueError(f"fiction.generate.near_duplicates.distance_threshold must be in (0, 2], got {value!r}")

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> FictionGenerationAnnotateSettings:
        near = config["fiction"]["generate"]["near_duplicates"]
        return cls(embedder=near["embedder"], distance_threshold=near["distance_threshold"])

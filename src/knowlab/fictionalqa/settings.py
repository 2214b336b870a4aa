"""What each FictionalQA step reads from the config (:mod:`knowlab.core.settings`).

One frozen record per step, built from the validated config by ``from_config``; a rule's params
carry ``record.param()`` and its script rebuilds the record.  Keys a step reads but that cannot
change its result (``evaluate.batch_size``, ``mcq.ranker.batch_size``: batch sizes of float32
forward passes, which the scoring engine checks give the scores of one request at a time) are read
by the script from the config, outside the params (config/README.md, "What re-runs when a key
changes").
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from knowlab.core.checkpoints import BASE_RUN, CONTROL_RUN
from knowlab.core.settings import StepSettings, as_tuple


@dataclass(frozen=True)
class WebtextSettings(StepSettings):
    """Rule ``fictionalqa_webtext``: the pinned gensim corpora and how their paragraphs are split
    (config ``webtext``)."""

    files: dict[str, dict[str, str]]
    """``wiki`` and ``lee`` -> ``{"name": <file in gensim's test_data>, "sha256": <pin>}``."""
    min_words: int
    """Paragraphs shorter than this many words are dropped."""
    heldout_size: int
    """Paragraphs held out for the webtext loss (the paper's held-out webtext, Sec. 4)."""

    def __post_init__(self) -> None:
        if self.min_words < 1:
            raise ValueError(f"webtext.min_words must be at least 1, got {self.min_words}")
        if self.heldout_size < 1:
            raise ValueError(f"webtext.heldout_size must be at least 1, got {self.heldout_size}")

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> WebtextSettings:
        block = config["webtext"]
        files = {kind: dict(spec) for kind, spec in block["files"].items()}
        return cls(files=files, min_words=int(block["min_words"]), heldout_size=int(block["heldout_size"]))


@dataclass(frozen=True)
class RealQASettings(StepSettings):
    """Rule ``fictionalqa_real_qa``: the real-world questions of nll(answer | question) (config ``real_qa``;
    paper App. C.7)."""

    source: str
    """``shipped`` (a file in the repository) or ``triviaqa`` (the Hub dataset)."""
    shipped: str | None = None
    """``shipped`` only: the file, relative to the checkout."""
    triviaqa: dict[str, Any] | None = None
    """``triviaqa`` only: ``{"hub_id", "config", "split", "n", "revision"}``."""

    def __post_init__(self) -> None:
        if self.source not in ("shipped", "triviaqa"):
            raise ValueError(f"real_qa.source must be one of ('shipped', 'triviaqa'), got {self.source!r}")

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> RealQASettings:
        block = config["real_qa"]
        if block["source"] == "shipped":
            return cls(source="shipped", shipped=str(block["shipped"]))
        return cls(source=block["source"], triviaqa=dict(block.get("triviaqa") or {}))


#: which ranked candidate the gold answer replaces when it is not among the top ``n_choices``
#: (config ``mcq.ranker.evict``; :func:`knowlab.fictionalqa.corpus.mcq.select_alternates`)
EVICT_POLICIES = ("lowest", "released")


def check_candidate_budget(n_choices: Sequence[int], max_candidates: int | None, evict: str = "lowest") -> None:
    """Fail before any ranking when ``max_candidates`` cannot supply the alternates.

    ``k = n - 1`` alternates per question; with ``evict="released"`` one more, as a sampled pool
    never holds the gold, so the top-ranked candidate is evicted (:func:`knowlab.fictionalqa.corpus.mcq.select_alternates`).

    Raises:
        ValueError: ``max(n_choices) - 1 > max_candidates`` (``max(n_choices) > max_candidates``
            under ``released``), naming the config keys; an unknown ``evict``.
    """
    if evict not in EVICT_POLICIES:
        raise ValueError(f"mcq.ranker.evict must be one of {EVICT_POLICIES}, got {evict!r}")
    k = max(n_choices) - 1
    need = k + 1 if evict == "released" else k
    if max_candidates is not None and need > max_candidates:
        extra = " (k + 1 under mcq.ranker.evict: released, which evicts the top-ranked one)" if need > k else ""
        raise ValueError(
            f"mcq.n_choices {max(n_choices)} needs k={k} alternates per question{extra}, but "
            f"mcq.ranker.max_candidates={max_candidates} ranks only {max_candidates} candidates: raise it to >= {need}"
        )


@dataclass(frozen=True)
class RankerSettings(StepSettings):
    """Rule ``fictionalqa_rank_distractors``: the model ranking of candidate distractors (config ``mcq.ranker``;
    App. C.6).

    ``mcq.ranker.evict`` is not here: rule ``fictionalqa_mcq`` reads it (which ranked candidate the gold evicts)."""

    model: str
    """``base_model`` (the project's base model) or a model folder or Hub id."""
    template: str | None
    """The verdict prompt (``None``: :data:`knowlab.fictionalqa.corpus.mcq.RANKER_TEMPLATE`)."""
    max_candidates: int | None
    """Candidates ranked per question (``None``: every other answer of the corpus)."""
    shard_questions: int
    """Questions per resumable shard (part of the shards' fingerprint)."""
    order: str
    """How candidates are ordered by their verdict losses (e.g. ``loss_ratio``)."""
    bos: str
    """BOS policy of the scored texts (:data:`knowlab.core.scoring.BOS_POLICIES`)."""

    def __post_init__(self) -> None:
        if self.max_candidates is not None and self.max_candidates < 1:
            raise ValueError(f"mcq.ranker.max_candidates must be at least 1 or null, got {self.max_candidates}")
        if self.shard_questions < 1:
            raise ValueError(f"mcq.ranker.shard_questions must be at least 1, got {self.shard_questions}")

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> RankerSettings:
        block = config["mcq"]["ranker"]
        return cls(
            model=str(block["model"]),
            template=block["template"],
            max_candidates=block["max_candidates"],
            shard_questions=int(block["shard_questions"]),
            order=str(block["order"]),
            bos=str(block["bos"]),
        )


@dataclass(frozen=True)
class McqSettings(StepSettings):
    """Rule ``fictionalqa_mcq``: how the distractors of an n-choice item are drawn (config ``mcq``; App. C.6)."""

    distractors: str
    """:data:`knowlab.fictionalqa.corpus.mcq.DISTRACTOR_METHODS`."""
    evict: str
    """``model_ranked`` only: which ranked candidate the gold answer displaces (``mcq.ranker.evict``)."""

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> McqSettings:
        return cls(distractors=str(config["mcq"]["distractors"]), evict=str(config["mcq"]["ranker"]["evict"]))


@dataclass(frozen=True)
class SplitSettings(StepSettings):
    """Rule ``fictionalqa_split``: the train/validation split of the documents and questions (config ``splits``;
    Sec. 3.2)."""

    event_train_fraction: float
    """Share of events whose documents train (Event and Fictsheets splits)."""

    def __post_init__(self) -> None:
        if not 0 < self.event_train_fraction < 1:
            raise ValueError(f"splits.event_train_fraction must be in (0, 1), got {self.event_train_fraction}")

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> SplitSettings:
        return cls(event_train_fraction=float(config["splits"]["event_train_fraction"]))


#: the document-loss suites: the fiction documents and the fictsheets (:mod:`knowlab.fictionalqa.suites`)
DOCUMENT_SUITES = ("fiction_doc", "fictsheet_doc")
#: the families drawn across the base models (the keys of :data:`knowlab.fictionalqa.figures.ACROSS_MODELS`):
#: one series per model; caption ``workflow/report/fictionalqa_across_models_<family>.rst``
ACROSS_MODEL_FIGURES = ("fig4", "fig7", "fig9", "fig10", "fig10_11")
#: the figure families the workflow draws per base model (:data:`knowlab.fictionalqa.figures.FAMILIES`,
#: which also holds fig9 and fig10, drawn by paper_figures from the paper's own numbers): family ->
#: its title in the report, whose caption is ``workflow/report/fictionalqa_<family>.rst``.  Here, not
#: in the figures module, because building the workflow's DAG imports no plotting library
FIGURES = {
    "fig2": "Fig. 2: samples seen and epochs per source",
    "fig3": "Fig. 3: verbatim memorization (Doc split)",
    "fig4": "Fig. 4: document loss, Doc and Event splits",
    "fig5": "Fig. 5: fictsheet loss and held-out webtext loss",
    "fig6": "Fig. 6: nll(answer | question)",
    "fig7": "Fig. 7: MCQ-4 accuracy",
    "fig8": "Fig. 8: MCQ-4 accuracy, train vs val questions",
    "fig10_11": "Figs. 10-11: MCQ-4 vs MCQ-10 accuracy",
}


def document_suites(run: str, other_documents: bool) -> tuple[str, ...]:
    """The document-loss suites a checkpoint of ``run`` scores (config ``evaluate.other_documents``).

    With ``other_documents`` (the paper's evaluation) every checkpoint scores both
    :data:`DOCUMENT_SUITES`.  Without it a fiction run scores only the documents of its own
    split, the suite its figures and findings read: ``fictsheet_doc`` for the Fictsheets split,
    ``fiction_doc`` for the document splits (Doc, Event, Style); the base model and the
    webtext-only control, which every run is compared with, score both.
    """
    if other_documents or run in (BASE_RUN, CONTROL_RUN):
        return DOCUMENT_SUITES
    return ("fictsheet_doc",) if run == "fictsheets" else ("fiction_doc",)


@dataclass(frozen=True)
class EvaluateSettings(StepSettings):
    """Rule ``fictionalqa_evaluate``: what one checkpoint is scored on (config ``evaluate``; Sec. 4 and App. C)."""

    em_tokens: tuple[int, ...]
    """Prefix lengths (tokens) of verbatim exact match (Sec. 4.1, Fig. 3)."""
    mcq_template: str
    """The MCQ prompt; ``{question}`` is the question (App. C.6)."""
    qa_template: str
    """The prompt of nll(answer | question); ``{question}`` is the question (Sec. 4.2)."""
    max_documents: int | None
    """Fiction documents scored per checkpoint, whole (event, style) pairs (:func:`knowlab.fiction.splits.scored_documents`; ``None``: all)."""
    documents: tuple[str, ...]
    """The document-loss suites of this run (:func:`document_suites`)."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "em_tokens", as_tuple(self.em_tokens))
        object.__setattr__(self, "documents", as_tuple(self.documents))
        if any(n < 1 for n in self.em_tokens):
            raise ValueError(f"evaluate.em_tokens must all be at least 1, got {list(self.em_tokens)}")
        if self.max_documents is not None and self.max_documents < 1:
            raise ValueError(f"evaluate.max_documents must be at least 1 or null, got {self.max_documents}")

    @classmethod
    def from_config(cls, config: Mapping[str, Any], run: str = "") -> EvaluateSettings:
        """The settings of a checkpoint of ``run`` (its document suites follow ``evaluate.other_documents``)."""
        block = config["evaluate"]
        return cls(
            em_tokens=block["em_tokens"],
            mcq_template=str(block["mcq_template"]),
            qa_template=str(block["qa_template"]),
            max_documents=block["max_documents"],
            documents=document_suites(run, bool(block["other_documents"])),
        )

"""The names of the grounding methods, without their model code: the backends of generation and of
the decomposer, the M_eval kinds with their defaults, keys and windows, and the labels that name a
decomposer and an M_eval in every row, table and figure footnote.

:mod:`knowlab.grounding.settings` checks the config against these, and rule ``grounding_tables``
labels its tables with them, so they import nothing heavy (no tqdm, torch or OpenAI client):
the rules that only need the names run in envs without the models' packages
(``tests/workflow/test_envs.py``).  The models are :mod:`knowlab.grounding.generate`,
:mod:`knowlab.grounding.facts` and :mod:`knowlab.grounding.evaluator`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the settings module imports this one
    from knowlab.grounding.settings import GroundingDecomposerSettings, GroundingEvaluatorSettings

#: the backends of ``grounding.generation.backend`` (:mod:`knowlab.grounding.generate`)
GENERATION_BACKENDS = ("transformers", "openai")
#: the backends of ``grounding.decomposer.backend`` (:mod:`knowlab.grounding.facts`)
DECOMPOSER_BACKENDS = ("transformers", "openai")

#: said wherever numbers of the sentence decomposer appear (tables, figure footnotes, README):
#: its "facts" are whole sentences, so precision and F1 are not the paper's atomic-fact ones
SENTENCE_LEVEL = "sentence-level, not atomic facts"

#: ``grounding.evaluator.window``: ``max`` (a long text's passages, the maximum of their scores) or
#: ``truncate`` (the released scorer: the text's first
#: :data:`~knowlab.grounding.evaluator.TRUNCATE_TOKENS` tokens, scored once)
WINDOWS = ("max", "truncate")

#: default model and threshold of each M_eval kind (the paper's, App. B.2): bi-encoder cosine
#: >= 0.4, cross-encoder raw logit > 6; the LLM judge's model is the base model
DEFAULTS: dict[str, tuple[str | None, float]] = {
    "bi_encoder": ("packaged:all-MiniLM-L6-v2", 0.4),
    "cross_encoder": ("cross-encoder/ms-marco-MiniLM-L-12-v2", 6.0),
    "llm_judge": (None, 0.0),
}

#: the ``grounding.evaluator`` keys of each M_eval kind (:func:`knowlab.grounding.evaluator.load_evaluator`)
EVALUATOR_KEYS = {
    "bi_encoder": {
        "model",
        "threshold",
        "sentences_per_passage",
        "batch_size",
        "max_passage_tokens",
        "device",
        "cache_size",
        "window",
    },
    "cross_encoder": {"model", "threshold", "batch_size", "max_passage_tokens", "device", "window"},
    "llm_judge": {"model", "threshold", "batch_size", "max_passage_tokens", "window"},
}


def decomposer_label(settings: GroundingDecomposerSettings, model: str | None = None) -> str:
    """The decomposer as the grounding tables' ``decomposer`` column and the figures' footnotes name it.

    ``"sentences (sentence-level, not atomic facts)"`` for ``kind == "sentences"`` (pysbd
    sentences stand in for atomic facts, :data:`SENTENCE_LEVEL`); for ``kind == "llm"``
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
    kind's constructor defaults (:data:`DEFAULTS`, the paper's thresholds, App. B.2); the LLM
    judge's model is ``settings.model``, else ``judge_model`` (the base model's display name),
    else ``"unknown"``.  No model is loaded.
    """
    kind = settings.kind
    default_model, default_threshold = DEFAULTS[kind]
    model = settings.model or (judge_model if kind == "llm_judge" else default_model) or "unknown"
    threshold = settings.threshold
    threshold = default_threshold if threshold is None else threshold
    window = settings.window or "max"
    return f"{kind}:{model}@{float(threshold):g}" + ("" if window == "max" else f" (window: {window})")

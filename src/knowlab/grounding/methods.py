"""The names of the grounding methods, without their model code: the backends of generation and of
the decomposer, and the M_eval kinds with their defaults, keys and windows.

:mod:`knowlab.grounding.settings` checks the config against these and builds from them the labels that
name a decomposer and an M_eval (:func:`~knowlab.grounding.settings.decomposer_label`,
:func:`~knowlab.grounding.settings.evaluator_label`), with which rule ``grounding_tables`` labels its
tables, so they import nothing heavy (no tqdm, torch or OpenAI client):
the rules that only need the names run in envs without the models' packages
(``tests/workflow/test_envs.py``).  The models are :mod:`knowlab.grounding.generate`,
:mod:`knowlab.grounding.facts` and :mod:`knowlab.grounding.evaluator`.
"""

from __future__ import annotations

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

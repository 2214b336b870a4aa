"""The data and model steps of the grounding rules (``rules/grounding.smk``: ``grounding_items``,
``grounding_distractors``, ``grounding_generate``, ``grounding_score`` and their
``grounding_checkpoint_*`` twins; :mod:`knowlab.grounding.steps`).

Lee et al. 2024, "How Well Do Large Language Models Truly Ground?": items of both versions
(Sec. 3), ranked distractors (Sec. 3.2 Step 5), responses under each condition (Sec. 4, App.
C.2-C.3; conditions in :mod:`knowlab.grounding.conditions`) and their atomic-fact metrics
(Sec. 3.3).  The tables are :mod:`knowlab.grounding.steps.stats`, the figures
:mod:`knowlab.grounding.steps.figures`.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import pandas as pd

from knowlab.core.io import read_jsonl, write_json
from knowlab.core.llm.cache import RequestCache
from knowlab.core.llm.local import count_tokens
from knowlab.core.models import check_model_dir, load_model
from knowlab.core.retrieval import load_embedder
from knowlab.grounding.conditions import condition_records, select_question_ids
from knowlab.grounding.distractors import fiction_pool, rank_distractors
from knowlab.grounding.evaluator import load_evaluator
from knowlab.grounding.facts import Demonstrations, FactCache, decompose_responses
from knowlab.grounding.fiction import fiction_grounding_items
from knowlab.grounding.generate import ClientOptions, chat_backend, generate_responses, served_model
from knowlab.grounding.kaist import load_kaist_release
from knowlab.grounding.metrics import score_responses
from knowlab.grounding.schema import check_items
from knowlab.grounding.settings import decomposer_label, evaluator_label

if TYPE_CHECKING:
    from knowlab.grounding.settings import (
        GroundingDistractorsSettings,
        GroundingGenerateSettings,
        GroundingItemsSettings,
        GroundingScoreSettings,
    )

log = logging.getLogger(__name__)


def make_items(
    dataset: str,
    settings: GroundingItemsSettings,
    inputs: Mapping[str, str],
    seed: int | None,
    cache_dir: str | None = None,
    timeout: float = 60.0,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Items of both versions and the document pool of ``dataset`` (``fiction`` or ``kaist``).

    ``fiction``: :func:`knowlab.grounding.fiction.fiction_grounding_items` on ``inputs["fictions"]``
    and ``inputs["fict_qa"]`` with ``seed`` (config ``seed``); the pool is every fiction
    document (distractor ranking leaves out the question's own event).  ``kaist``:
    :func:`knowlab.grounding.kaist.load_kaist_release` from ``settings.kaist_path``
    (``grounding.kaist.path``), or from ``settings.kaist_url`` into ``cache_dir``, checked
    against ``settings.kaist_sha256``; ``timeout``: seconds per download request
    (``grounding.kaist.timeout_s``, no result depends on it).  Items are checked with
    :func:`knowlab.grounding.schema.check_items`.

    Raises:
        ValueError: an unknown dataset, or ``kaist`` without a path or URL; as the loaders.
    """
    if dataset == "fiction":
        fictions = read_jsonl(inputs["fictions"])
        original, conflict, report = fiction_grounding_items(fictions, read_jsonl(inputs["fict_qa"]), seed)
        pool = fiction_pool(fictions)
        log.info("fiction grounding set: %d questions kept; left out by reason: %s", len(original), report)
    elif dataset == "kaist":
        root = settings.kaist_path or settings.kaist_url
        if not root:
            raise ValueError("grounding dataset kaist needs grounding.kaist.path or grounding.kaist.url")
        original, conflict, pool = load_kaist_release(root, cache_dir, sha256s=settings.kaist_sha256, timeout=timeout)
    else:
        raise ValueError(f"unknown grounding dataset {dataset!r}")
    items = [*original, *conflict]
    check_items(items)
    log.info(
        "%s: %d items (%d questions x 2 versions), %d pool documents", dataset, len(items), len(original), len(pool)
    )
    return items, pool


def distractor_table(
    items: Sequence[Mapping[str, Any]], pool: Sequence[Mapping[str, Any]], settings: GroundingDistractorsSettings
):
    """Ranked distractors of every question: a frame ``item_id, rank, doc_id`` (rank 0 = most similar),
    ``settings.k`` per question (``grounding.distractors.k``: enough to fill the largest token
    budget), ranked by the embedder ``settings.retriever`` (``grounding.retriever``)."""
    questions = [item for item in items if item["version"] == "original"]
    ranked = rank_distractors(questions, pool, load_embedder(settings.retriever), settings.k)
    rows = [{"item_id": i, "rank": r, "doc_id": d} for i, docs in ranked.items() for r, d in enumerate(docs)]
    return pd.DataFrame(rows, columns=["item_id", "rank", "doc_id"])


def load_tokenizer(path: str):
    """The tokenizer of a checked model folder (:func:`knowlab.core.models.check_model_dir`), without its weights.

    Raises:
        CheckpointError: the folder lacks a file it needs.
    """
    # deferred: transformers loads only in jobs that run a model
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(check_model_dir(path))


def respond(
    model_path: str,
    items: Sequence[Mapping[str, Any]],
    pool: Sequence[Mapping[str, Any]],
    distractors: pd.DataFrame,
    settings: GroundingGenerateSettings,
    seed: int,
    tags: Mapping[str, Any],
    served_key: str | None = None,
    request_cache: str | None = None,
    client: ClientOptions | None = None,
) -> list[dict[str, Any]]:
    """Generate every (question, condition) response of one model or checkpoint.

    Backend ``settings.generation.backend`` (``grounding.generation.backend``): ``transformers``
    loads the model from ``model_path`` (:func:`knowlab.core.models.load_model`, on the job's
    device); ``openai`` loads only its tokenizer (prompt fitting) and sends the requests to the
    served model :func:`knowlab.grounding.generate.served_model` names for ``served_key`` (the
    ``eval_models`` name, or ``<run>/step-<step>``), through a request cache in folder
    ``request_cache`` when given (a re-run sends only the requests it lacks), the client as
    ``client`` says (``grounding.generation.openai``'s client keys; default
    :class:`~knowlab.grounding.generate.ClientOptions`).
    Questions: :func:`knowlab.grounding.conditions.select_question_ids` (``settings.max_items``,
    ``seed``); contexts: :func:`knowlab.grounding.conditions.condition_records` of
    ``settings.conditions`` with token counts of the model's tokenizer, distractors from
    ``distractors`` (:func:`distractor_table`); generation:
    :func:`knowlab.grounding.generate.generate_responses` with ``settings.generation``.

    Returns:
        the response records, each followed by the fields of ``tags`` (model, run, step,
        checkpoint).

    Raises:
        ValueError: an unknown generation setting; BackendError: a failed request (``openai``).
    """
    gen = settings.generation
    served = backend = cache = None
    if gen.backend == "openai":
        model, tokenizer = None, load_tokenizer(model_path)
        served, base_url = served_model(gen, served_key, model_path)
        backend = chat_backend(served, base_url, client)
        cache = RequestCache(request_cache) if request_cache else None
        log.info("generating with %r, served model %r; request cache %s", backend, served, request_cache)
    else:
        model, tokenizer = load_model(model_path)
    ranked = {i: list(g.sort_values("rank").doc_id) for i, g in distractors.groupby("item_id")}
    by_id = {doc["doc_id"]: doc for doc in pool}
    qids = select_question_ids(items, settings.max_items, seed)
    records = condition_records(items, qids, ranked, by_id, settings, lambda text: count_tokens(tokenizer, text), seed)
    log.info("%d questions x %d conditions = %d responses", len(qids), len(settings.conditions), len(records))
    responses = generate_responses(model, tokenizer, records, gen, backend=backend, served=served, cache=cache)
    return [{**r, **tags} for r in responses]


def score(
    records: Sequence[Mapping[str, Any]],
    settings: GroundingScoreSettings,
    decomposer_path: str,
    facts_path: str,
    cache_path: str,
    request_cache: str | None = None,
    model_label: str | None = None,
    client: ClientOptions | None = None,
):
    """Atomic facts of every response (:mod:`knowlab.grounding.facts`) and their metrics
    (:func:`knowlab.grounding.metrics.score_responses`) against the *gold* contexts and facts.

    Models: the LLM decomposer (``grounding.decomposer`` kind ``llm``) is the base model at
    ``decomposer_path`` (backend ``transformers``, loaded on the job's device) or a served
    model (backend ``openai``: ``grounding.decomposer.openai.model``, by default
    ``decomposer_path`` as given, the name ``vllm serve`` gives that folder; its requests go
    through a request cache in folder ``request_cache`` when given, the client as ``client``
    says: ``grounding.decomposer.openai``'s client keys, default
    :data:`knowlab.grounding.facts.DECOMPOSER_CLIENT`).  The LLM judge
    (``grounding.evaluator`` kind ``llm_judge``) always runs locally on the base model: it
    needs the exact log-probabilities of both labels, which a chat-completions server does
    not give (at most the top-20 of the tokens it generates).

    Precision is taken against the gold contexts only, also in the ``*_dist`` conditions: a
    fact that only a distractor supports is not grounded in the knowledge the question needs
    (the issue's definition; the paper's Sec. 3.1 writes the contexts C).  ``facts_path``
    receives the decomposition of every response (response id -> facts and method);
    ``cache_path`` is the decomposer's cache (:class:`knowlab.grounding.facts.FactCache`, keyed
    by decomposer and response text), kept across re-runs so that a changed evaluator does not
    decompose again.

    Every row also names how it was scored: ``decomposer``
    (:func:`knowlab.grounding.settings.decomposer_label`, e.g. ``"llm:<model>"`` or ``"sentences
    (sentence-level, not atomic facts)"``) and ``evaluator``
    (:func:`knowlab.grounding.settings.evaluator_label`, ``"<kind>:<model>@<threshold>"``, with
    ``" (window: truncate)"`` under ``grounding.evaluator.window: truncate``);
    ``model_label`` is the base model's display name in both (local decomposer, LLM judge).
    ``settings.evaluator`` (``grounding.evaluator``: ``kind``, ``model``, ``threshold``,
    ``window``) goes to :func:`knowlab.grounding.evaluator.load_evaluator`,
    ``settings.decomposer`` (``grounding.decomposer``, with ``demos``, ``n_demos``,
    ``k_demos``) to :func:`knowlab.grounding.facts.decompose_responses`, which reads a
    demonstrations file before any model call; the job's manifest records both (the rule's
    ``settings`` param).

    Raises:
        FileNotFoundError, DataError: kind ``llm``: ``grounding.decomposer.demos`` is missing
            or malformed (checked before the model loads).
    """
    decomposer = settings.decomposer
    served = decomposer.served
    if served:
        decomposer = dataclasses.replace(decomposer, openai_model=decomposer.openai_model or str(decomposer_path))
    if decomposer.kind == "llm":  # a missing or malformed demonstrations file fails before the model loads
        Demonstrations.from_settings(decomposer)
    model = tokenizer = None
    if (decomposer.kind == "llm" and not served) or settings.evaluator.kind == "llm_judge":  # the base model
        model, tokenizer = load_model(decomposer_path)
    cache = FactCache(cache_path)
    decomposed = decompose_responses(
        [r["response"] for r in records],
        decomposer,
        model,
        tokenizer,
        cache,
        request_cache=RequestCache(request_cache) if served and request_cache else None,
        client=client,
    )
    cache.save()
    facts = {r["response_id"]: d["facts"] for r, d in zip(records, decomposed, strict=True)}
    write_json(facts_path, {r["response_id"]: d for r, d in zip(records, decomposed, strict=True)})
    evaluator = load_evaluator(settings.evaluator, model, tokenizer)
    gold = [{**r, "contexts": r["gold_contexts"]} for r in records]
    rows = score_responses(gold, facts, evaluator)
    extra = [
        {
            "model": r["model"],
            "run": r["run"],
            "step": r["step"],
            "dataset": r["source"],
            "condition": r["condition"],
            "response": r["response"],
            "answers": list(r["answers"]),
            "context_tokens": r["context_tokens"],
            "n_distractors": r["n_distractors"],
            "n_truncated_tokens": r["n_truncated_tokens"],
            "document_id": r.get("extra", {}).get("fiction_id"),
            "response_id": r["response_id"],
        }
        for r in records
    ]
    base = model_label or (str(decomposer_path) if decomposer_path else None)
    extra = pd.DataFrame(extra).assign(
        decomposer=decomposer_label(decomposer, base), evaluator=evaluator_label(settings.evaluator, base)
    )
    return pd.concat([rows.drop(columns=[c for c in extra.columns if c in rows.columns]), extra], axis=1)


def client_options(server: Mapping[str, Any]) -> ClientOptions:
    """The ``openai`` client of a config server block (``grounding.generation.openai`` or
    ``grounding.decomposer.openai``): its ``api_key_env``, ``max_retries``, ``timeout_s`` and
    ``concurrency``, in no settings record (no result depends on them)."""
    return ClientOptions(server["api_key_env"], server["max_retries"], server["timeout_s"], server["concurrency"])

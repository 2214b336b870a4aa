"""SORT evaluation of a model: item-level rows under a memory condition, and the per-model prompt choice.

Paper: "Assessing Episodic Memory in LLMs with Sequence Order Recall Tasks" (Pink et al. 2024),
Sec. 3.2 (memory conditions), App. B.3 (prompt selection on the validation slice) and
App. B.4.2-B.4.3 (the RAG reading instruction, chosen the same way under RAG).

- :func:`evaluate_items`: answers (forced choice or the greedy token, config ``sort.answer``)
  and continuous scores of items under one memory condition and each prompt template
  (:mod:`knowlab.sort.score`), one row per item;
- :func:`select_template`: every template on the validation slice, the per-model choice;
  :func:`choose_template`: that, or the template fixed by ``sort.template``;
- :func:`select_rag_reading`: every RAG reading instruction in the chosen template, under
  RAG on the validation slice, the per-model choice; :func:`choose_rag_reading`: that, or
  the reading fixed by ``sort.rag_reading``;
- :func:`evaluate_condition`: the test items of a checkpoint under one condition (the base
  model's conditions, and SORT on the fiction documents at every checkpoint);
- :func:`evaluate_epoch`: the test items after parametric-memory fine-tuning at one epoch,
  with the segments' perplexity.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import pandas as pd

from knowlab.core.models import load_model
from knowlab.sort.prompts import (
    RAG_CONDITIONS,
    fixed_rag_reading,
    get_template,
    rag_readings,
    render_prompt,
    with_rag_reading,
)
from knowlab.sort.prompts import templates as configured_templates
from knowlab.sort.score import score_items, segment_nll, select_prompt

if TYPE_CHECKING:
    from knowlab.sort.settings import SortEvaluateSettings, SortPromptSettings, SortRagPromptSettings

log = logging.getLogger(__name__)

# item columns carried into every result row (the rest of an item is text)
ITEM_COLUMNS = ("item_id", "book_id", "excerpt_length", "segment_length", "distance_bin", "distance", "split")


def evaluate_items(
    model,
    tokenizer,
    items: Sequence[Mapping[str, Any]],
    condition: str,
    templates: Sequence[Mapping[str, Any]],
    *,
    passages: Mapping[str, Sequence[str]] | None = None,
    system_prompt: str | None,
    batch_size: int,
    answer: str = "forced_choice",
) -> pd.DataFrame:
    """Score ``items`` under one memory condition with each template; one row per (template, item).

    All prompts go to the engine in one call, so prompts that share a long prefix (the
    templates of one reading instruction over the same excerpt) encode it once
    (:func:`knowlab.core.scoring.score_token_ids`).

    Args:
        condition: ``baseline`` (no source text), ``in_context`` (the excerpt), ``rag`` or
            ``oracle_rag`` (``passages[item_id]``, in prompt order).
        templates: prompt templates (:mod:`knowlab.sort.prompts`).
        answer: the answer rule (``sort.answer``: ``forced_choice`` or ``greedy``;
            :func:`knowlab.sort.score.score_items`).

    Returns:
        :data:`ITEM_COLUMNS` plus ``condition, template_id`` and the columns of
        :func:`knowlab.sort.score.score_items` (``prediction``, ``correct``, ``score`` in nats...).

    Raises:
        KeyError: a RAG condition and an item without passages.
        ValueError: an unknown ``answer`` rule.
    """
    rag = condition in RAG_CONDITIONS
    pairs = [(template, item) for template in templates for item in items]
    contexts = [
        render_prompt(
            tokenizer,
            template,
            item,
            condition,
            passages=passages[item["item_id"]] if rag else None,
            system_prompt=system_prompt,
        )
        for template, item in pairs
    ]
    scored = score_items(
        model, tokenizer, contexts, [item["answer"] for _, item in pairs], batch_size=batch_size, answer=answer
    )
    meta = pd.DataFrame(
        [
            {**{k: item[k] for k in (*ITEM_COLUMNS, "document_id") if k in item}, "template_id": template["id"]}
            for template, item in pairs
        ]
    )
    meta.insert(len(meta.columns) - 1, "condition", condition)
    return pd.concat([meta, scored], axis=1)


def select_template(
    model,
    tokenizer,
    items: Sequence[Mapping[str, Any]],
    templates: Sequence[Mapping[str, Any]],
    *,
    system_prompt: str | None,
    max_rate_deviation: float,
    batch_size: int,
    answer: str = "forced_choice",
) -> tuple[dict[str, Any], pd.DataFrame]:
    """Every template on the validation items, in context; the chosen template (paper App. B.3).

    ``answer``: the answer rule the items are read with (``sort.answer``), as in the evaluation.

    Returns:
        the selection of :func:`knowlab.sort.score.select_prompt` (``template_id``,
        ``accuracy``, ``a_rate``, the per-template ``table`` and the ``rule``) and the rows.

    Raises:
        ValueError: no validation items.
    """
    validation = [item for item in items if item["split"] == "validation"]
    if not validation:
        raise ValueError("no validation items to select a prompt on: set sort.n_validation >= 1")
    rows = evaluate_items(
        model,
        tokenizer,
        validation,
        "in_context",
        templates,
        system_prompt=system_prompt,
        batch_size=batch_size,
        answer=answer,
    )
    selection = select_prompt(rows, max_rate_deviation=max_rate_deviation)
    log.info(
        "selected template %s: accuracy %.3f, A rate %.3f over %d validation items",
        selection["template_id"], selection["accuracy"], selection["a_rate"], len(validation),
    )  # fmt: skip
    return selection, rows


def select_rag_reading(
    model,
    tokenizer,
    items: Sequence[Mapping[str, Any]],
    template: Mapping[str, Any],
    readings: Sequence[Mapping[str, str]],
    passages: Mapping[str, Sequence[str]],
    *,
    system_prompt: str | None,
    max_rate_deviation: float,
    batch_size: int,
    answer: str = "forced_choice",
) -> tuple[dict[str, Any], pd.DataFrame]:
    """The RAG reading instruction of a model: each of ``readings`` in ``template``, under RAG.

    Paper App. B.4.3: the reading instruction of the model's best prompt is replaced by each
    RAG reading instruction (Table 9) and the variants are swept on the validation items with
    retrieved passages; the most accurate wins.  The same rule as :func:`select_template`
    applies (:func:`knowlab.sort.score.select_prompt`: variants whose A rate is farther than
    ``max_rate_deviation`` from 0.5 are rejected first).

    Args:
        template: the selected template (:func:`knowlab.sort.prompts.selected_template`).
        readings: ``{"id", "reading"}`` dicts (:func:`knowlab.sort.prompts.rag_readings`).
        passages: retrieved passages by item id, in prompt order
            (:func:`knowlab.sort.rag.retrieval_rows`, condition ``rag``).
        answer: the answer rule (``sort.answer``), as in the evaluation.

    Returns:
        the selection (``template_id`` is ``"<template>+<reading>"``, ``rag_reading_id`` the
        reading's id, plus ``accuracy``, ``a_rate``, ``table`` and ``rule``) and the rows.

    Raises:
        ValueError: no validation items, or no readings.
        KeyError: a validation item without retrieved passages.
    """
    validation = [item for item in items if item["split"] == "validation"]
    if not validation:
        raise ValueError("no validation items to select a RAG reading on: set sort.n_validation >= 1")
    if not readings:
        raise ValueError("no RAG reading instructions to select from (sort.rag_readings is empty)")
    variants = [with_rag_reading(template, reading) for reading in readings]
    reading_of = {variant["id"]: reading["id"] for variant, reading in zip(variants, readings, strict=True)}
    rows = evaluate_items(
        model,
        tokenizer,
        validation,
        "rag",
        variants,
        passages=passages,
        system_prompt=system_prompt,
        batch_size=batch_size,
        answer=answer,
    )
    selection = select_prompt(rows, max_rate_deviation=max_rate_deviation)
    selection["rag_reading_id"] = reading_of[selection["template_id"]]
    log.info(
        "selected RAG reading %s: accuracy %.3f, A rate %.3f over %d validation items",
        selection["rag_reading_id"], selection["accuracy"], selection["a_rate"], len(validation),
    )  # fmt: skip
    return selection, rows


def choose_template(
    settings: SortPromptSettings,
    items: Sequence[Mapping[str, Any]],
    model_dir: str | os.PathLike,
    *,
    batch_size: int,
) -> tuple[dict[str, Any], pd.DataFrame]:
    """The prompt template of a model: fixed by ``sort.template``, else :func:`select_template` (paper App. B.3).

    Args:
        settings: ``sort.template``, ``sort.templates`` and, for a selected template, its
            ``selection`` (``system_prompt``, ``max_rate_deviation``, ``answer``).
        items: the SORT items (the validation ones are used).
        model_dir: the model, loaded only when the template is selected.
        batch_size: prompts per forward pass (``sort.batch_size``).

    Returns:
        the selection record and the validation rows (an empty frame for a fixed template).

    Raises:
        ValueError: an unknown fixed template id (the message lists the known ids); as
            :func:`select_template`.
    """
    candidates = configured_templates(settings.templates)
    if settings.template is not None:
        get_template(candidates, settings.template)  # an unknown id fails here, naming the known ones
        log.info("template %s fixed by the config: no selection", settings.template)
        return {"template_id": settings.template, "rule": "fixed by sort.template"}, pd.DataFrame()
    model, tokenizer = load_model(model_dir)
    return select_template(
        model,
        tokenizer,
        items,
        candidates,
        system_prompt=settings.selection.system_prompt,
        max_rate_deviation=settings.selection.max_rate_deviation,
        batch_size=batch_size,
        answer=settings.selection.answer,
    )


def choose_rag_reading(
    settings: SortRagPromptSettings,
    template: Mapping[str, Any],
    items: Sequence[Mapping[str, Any]],
    passages: Mapping[str, Sequence[str]],
    model_dir: str | os.PathLike,
    *,
    batch_size: int,
) -> tuple[dict[str, Any], pd.DataFrame]:
    """The RAG reading instruction of a model: fixed by ``sort.rag_reading``
    (:func:`knowlab.sort.prompts.fixed_rag_reading`), else :func:`select_rag_reading` (paper App. B.4.3).

    Args:
        settings: ``sort.rag_reading``, ``sort.rag_readings`` and, for a selected reading, its
            ``selection`` (``system_prompt``, ``max_rate_deviation``, ``answer``).
        template: the model's selected template.
        items: the SORT items (the validation ones are used).
        passages: retrieved passages by item id (:func:`knowlab.sort.rag.read_passages`, ``rag``).
        model_dir: the model, loaded only when the reading is selected.
        batch_size: prompts per forward pass (``sort.batch_size``).

    Returns:
        the selection record and the validation rows (an empty frame for a fixed reading).

    Raises:
        ValueError: an unknown fixed reading id; as :func:`select_rag_reading`.
    """
    if settings.rag_reading is not None:
        selection = fixed_rag_reading(settings.rag_readings, settings.rag_reading, template)
        log.info("RAG reading %s fixed by the config: no selection", selection["rag_reading_id"])
        return selection, pd.DataFrame()
    model, tokenizer = load_model(model_dir)
    return select_rag_reading(
        model,
        tokenizer,
        items,
        template,
        rag_readings(settings.rag_readings),
        passages,
        system_prompt=settings.selection.system_prompt,
        max_rate_deviation=settings.selection.max_rate_deviation,
        batch_size=batch_size,
        answer=settings.selection.answer,
    )


def evaluate_condition(
    checkpoint: str | os.PathLike,
    items: Sequence[Mapping[str, Any]],
    condition: str,
    template: Mapping[str, Any],
    settings: SortEvaluateSettings,
    *,
    batch_size: int,
    passages: Mapping[str, Sequence[str]] | None = None,
    model_name: str,
    run: str,
    step: int,
) -> pd.DataFrame:
    """The test items of one checkpoint under one memory condition with the selected template.

    Args:
        checkpoint: the model folder.
        items: SORT items; only the ``test`` split is scored.
        condition: ``baseline``, ``in_context``, ``rag`` or ``oracle_rag``.
        template: the selected template (with its RAG reading for the RAG conditions).
        settings: ``sort.system_prompt`` and ``sort.answer`` (``templates`` is read by the caller,
            :func:`knowlab.sort.prompts.selected_template`).
        batch_size: prompts per forward pass (``sort.batch_size``).
        passages: for the RAG conditions, the passages by item id (:func:`knowlab.sort.rag.read_passages`).
        model_name, run, step: the labels of the rows.

    Returns:
        ``model, run, step`` followed by the columns of :func:`evaluate_items`, one row per test item.
    """
    items = [item for item in items if item["split"] == "test"]
    model, tokenizer = load_model(checkpoint)
    log.info("%s: %d items, condition %s, template %s", checkpoint, len(items), condition, template["id"])
    rows = evaluate_items(
        model,
        tokenizer,
        items,
        condition,
        [template],
        passages=passages,
        system_prompt=settings.system_prompt,
        batch_size=batch_size,
        answer=settings.answer,
    )
    rows.insert(0, "step", step)
    rows.insert(0, "run", run)
    rows.insert(0, "model", model_name)
    log.info("accuracy %.3f (answer: %s)", rows.correct.mean(), settings.answer)
    return rows


def evaluate_epoch(
    checkpoint: str | os.PathLike,
    items: Sequence[Mapping[str, Any]],
    template: Mapping[str, Any],
    settings: SortEvaluateSettings,
    conditions: Sequence[str],
    texts: Mapping[str, Any],
    *,
    batch_size: int,
    model_name: str,
    run: str,
    epoch: int,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """SORT after parametric-memory fine-tuning at one epoch (paper Sec. 3.2, App. E): the test
    items under each of ``conditions`` and the segments' perplexity.

    Args:
        checkpoint: the model folder of run ``run`` at epoch ``epoch`` (epoch 0: the base model).
        items: SORT items; only the ``test`` split is scored.
        template: the selected template.
        settings: ``sort.system_prompt`` and ``sort.answer`` (``templates`` is read by the caller,
            :func:`knowlab.sort.prompts.selected_template`).
        conditions: memory conditions (``baseline``, ``in_context``); may be empty.
        texts: the training texts (:func:`knowlab.sort.parametric.parametric_training_texts`): the
            step of epoch ``e`` is ``e * texts["steps_per_epoch"][run]`` (epoch 0 is step 0).
        batch_size: prompts (and segments) per forward pass (``sort.batch_size``).
        model_name, run, epoch: the labels of the rows.

    Returns:
        ``(rows, nll)``: the rows of :func:`evaluate_items` for each condition in turn and the
        rows of :func:`knowlab.sort.score.segment_nll`, both with ``model, run, step, epoch``.
    """
    items = [item for item in items if item["split"] == "test"]
    model, tokenizer = load_model(checkpoint)
    step = epoch * texts["steps_per_epoch"][run] if epoch else 0
    meta = {"model": model_name, "run": run, "step": step, "epoch": epoch}
    rows = [pd.DataFrame()]
    for condition in conditions:
        part = evaluate_items(
            model,
            tokenizer,
            items,
            condition,
            [template],
            system_prompt=settings.system_prompt,
            batch_size=batch_size,
            answer=settings.answer,
        )
        log.info("%s epoch %s, %s: accuracy %.3f", run, epoch, condition, part.correct.mean())
        rows.append(part)
    nll = segment_nll(model, tokenizer, items, batch_size).assign(**meta)
    return pd.concat(rows, ignore_index=True).assign(**meta), nll

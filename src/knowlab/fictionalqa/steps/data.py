"""The steps of the FictionalQA rules that make its data and score its checkpoints
(:mod:`knowlab.fictionalqa.steps`; scripts ``fictionalqa_webtext``, ``fictionalqa_corpus``,
``fictionalqa_rank_distractors``, ``fictionalqa_mcq``, ``fictionalqa_real_qa``, ``fictionalqa_split``,
``fictionalqa_evaluate``, ``fictionalqa_lm_eval_tasks``).

- :func:`webtext_paragraphs`: the packaged gensim paragraphs, verified and split into train and held-out
  (:mod:`knowlab.fictionalqa.webtext`);
- :func:`fiction_tables`, :func:`write_fiction`: the fiction corpus (shipped, released or
  generated), validated, and its tables written (:mod:`knowlab.fictionalqa.corpus`);
- :func:`ranking_shards`, :func:`rank_distractors`: every candidate alternate answer of every
  question ranked by a model, shard by shard (paper App. C.6, :mod:`knowlab.fictionalqa.corpus.mcq`);
- :func:`mcq_items`: the n-choice MCQ items (:func:`knowlab.fictionalqa.corpus.mcq.build_mcq`);
- :func:`real_qa_records`: the real-world Q&A (paper App. C.7, :mod:`knowlab.fictionalqa.corpus.real_qa`);
- :func:`split`: one train/validation split as id lists (:mod:`knowlab.fiction.splits`);
- :func:`checkpoint_rows`: the item rows of one checkpoint on every suite
  (:mod:`knowlab.fictionalqa.suites`);
- :func:`task_name`, :func:`export_tasks`: the MCQ suites as lm-evaluation-harness tasks
  (:mod:`knowlab.fictionalqa.lm_eval_export`).
- :func:`models_table`: the base models FictionalQA fine-tunes, with their parameter counts.

Nothing here imports matplotlib, scipy or statsmodels (their rules' envs lack them): the tests and
the summary are :mod:`knowlab.fictionalqa.steps.stats`, the figures
:mod:`knowlab.fictionalqa.steps.figures`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from knowlab.core.models import count_parameters, load_model
from knowlab.core.shards import ShardStore
from knowlab.fiction.corpus import load_fiction
from knowlab.fiction.settings import FictionCorpusSettings
from knowlab.fiction.schema import write_corpus
from knowlab.fiction.splits import make_split
from knowlab.fictionalqa.corpus.mcq import RANKER_TEMPLATE, build_mcq, rank_candidates
from knowlab.fictionalqa.corpus.mcq import ranking_shards as _ranking_shards
from knowlab.fictionalqa.corpus.real_qa import load_real_qa
from knowlab.fictionalqa.lm_eval_export import export_mcq_suites
from knowlab.fictionalqa.lm_eval_export import task_name as _task_name
from knowlab.fictionalqa.suites import evaluate_checkpoint
from knowlab.fictionalqa.webtext import build_webtext

if TYPE_CHECKING:
    from knowlab.fictionalqa.settings import (
        EvaluateSettings,
        McqSettings,
        RankerSettings,
        RealQASettings,
        SplitSettings,
        WebtextSettings,
    )


def webtext_paragraphs(settings: WebtextSettings, seed: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The ``(train, heldout)`` webtext paragraphs (:func:`knowlab.fictionalqa.webtext.build_webtext`).

    Raises:
        HashMismatchError: a packaged file differs from its pin.
    """
    return build_webtext(settings, seed)


def fiction_tables(
    settings: FictionCorpusSettings, basedir: str | os.PathLike, inputs: Sequence[str | os.PathLike]
) -> dict[str, list[dict[str, Any]]]:
    """The configured fiction corpus, validated (:func:`knowlab.fiction.corpus.load_fiction`):
    ``{table: records}``.  ``inputs``: the rule's input files (for ``fiction.source: generate``, the
    generated tables, read from their folder); relative paths are taken from ``basedir``.

    Raises:
        as :func:`~knowlab.fiction.corpus.load_fiction` (a shipped file that differs from
        its pin, a malformed record, a generated corpus that kept no question).
    """
    generated = Path(inputs[0]).parent if settings.source == "generate" else None
    return load_fiction(settings, basedir, generated)


def write_fiction(folder: str | os.PathLike, tables: Mapping[str, list[dict[str, Any]]]) -> None:
    """Write the corpus tables of :func:`fiction_tables` into ``folder``
    (:func:`knowlab.fiction.schema.write_corpus`)."""
    write_corpus(folder, tables)


def ranking_shards(
    folder: str | os.PathLike,
    model_dir: str | os.PathLike,
    fict_qa: Sequence[dict[str, Any]],
    settings: RankerSettings,
    seed: int,
) -> ShardStore:
    """The shard store of a ranking job in ``folder`` (:func:`knowlab.fictionalqa.corpus.mcq.ranking_shards`):
    a killed job's finished shards are read back when the ranker, questions, seed and settings are
    unchanged; remove it once the ranking is written."""
    return _ranking_shards(folder, model_dir, fict_qa, settings, seed)


def rank_distractors(
    model_dir: str | os.PathLike,
    fict_qa: Sequence[dict[str, Any]],
    settings: RankerSettings,
    *,
    seed: int,
    batch_size: int,
    shards: ShardStore,
) -> pd.DataFrame:
    """Every candidate alternate answer of every question ranked by the model of ``model_dir``
    (:func:`knowlab.fictionalqa.corpus.mcq.rank_candidates`; paper App. C.6), shard by shard in
    ``shards`` (:func:`ranking_shards`); ``batch_size``: ``mcq.ranker.batch_size``."""
    model, tokenizer = load_model(model_dir)
    return rank_candidates(
        model,
        tokenizer,
        fict_qa,
        seed=seed,
        template=settings.template or RANKER_TEMPLATE,
        max_candidates=settings.max_candidates,
        batch_size=batch_size,
        shard_questions=settings.shard_questions,
        shards=shards,
        order=settings.order,
        bos=settings.bos,
    )


def mcq_items(
    fict_qa: Sequence[dict[str, Any]], n_choices: int, seed: int, settings: McqSettings, ranking: pd.DataFrame | None
) -> list[dict[str, Any]]:
    """The ``n_choices``-way MCQ item of every question (:func:`knowlab.fictionalqa.corpus.mcq.build_mcq`)
    with the configured distractors (``ranking``: the table of :func:`rank_distractors` for
    ``model_ranked``, else None)."""
    return build_mcq(fict_qa, n_choices, seed, distractors=settings.distractors, ranking=ranking, evict=settings.evict)


def real_qa_records(settings: RealQASettings, basedir: str | os.PathLike, seed: int) -> list[dict[str, Any]]:
    """The real-world Q&A: the shipped set or a TriviaQA subsample keyed by ``seed``
    (:func:`knowlab.fictionalqa.corpus.real_qa.load_real_qa`; paper App. C.7)."""
    return load_real_qa(settings, basedir, seed=seed)


def split(
    name: str,
    fictions: Sequence[dict[str, Any]],
    fict_qa: Sequence[dict[str, Any]],
    seed: int,
    settings: SplitSettings,
) -> dict[str, Any]:
    """Split ``name`` of the fiction corpus as id lists (:func:`knowlab.fiction.splits.make_split`)."""
    return make_split(name, fictions, fict_qa, seed, settings.event_train_fraction)


def checkpoint_rows(
    checkpoint: str | os.PathLike,
    settings: EvaluateSettings,
    *,
    fictions: Sequence[dict[str, Any]],
    fictsheets: Sequence[dict[str, Any]],
    webtext: Sequence[dict[str, Any]],
    fict_qa: Sequence[dict[str, Any]],
    real_qa: Sequence[dict[str, Any]],
    mcq: Sequence[dict[str, Any]],
    batch_size: int,
    run: str,
    step: int,
    model_name: str | None = None,
) -> pd.DataFrame:
    """The item rows of the model in folder ``checkpoint`` on every suite
    (:func:`knowlab.fictionalqa.suites.evaluate_checkpoint`), led by the columns ``model`` (``model_name``:
    the base model fine-tuned, a key of ``finetune.models``; when given), ``run``, ``step`` and ``checkpoint``;
    ``batch_size``: ``evaluate.batch_size``."""
    model, tokenizer = load_model(checkpoint)
    table = evaluate_checkpoint(
        model,
        tokenizer,
        fictions=fictions,
        fictsheets=fictsheets,
        webtext=webtext,
        fict_qa=fict_qa,
        real_qa=real_qa,
        mcq=mcq,
        em_tokens=list(settings.em_tokens),
        batch_size=batch_size,
        mcq_template=settings.mcq_template,
        qa_template=settings.qa_template,
        max_documents=settings.max_documents,
        documents=settings.documents,
    )
    table.insert(0, "checkpoint", str(checkpoint))
    table.insert(0, "step", step)
    table.insert(0, "run", run)
    if model_name is not None:
        table.insert(0, "model", model_name)
    return table


def task_name(mcq_path: str | os.PathLike) -> str:
    """The harness task of an MCQ suite file (:func:`knowlab.fictionalqa.lm_eval_export.task_name`)."""
    return _task_name(mcq_path)


def export_tasks(
    suites: Mapping[str, Sequence[dict[str, Any]]],
    folder: str | os.PathLike,
    template: str,
    models: Mapping[str, str] | None = None,
) -> list[Path]:
    """Write ``{task_name: items}`` as lm-evaluation-harness tasks into ``folder``, relative paths only
    (:func:`knowlab.fictionalqa.lm_eval_export.export_mcq_suites`; ``models``: base model name -> its
    folder, listed in the README); the files written."""
    return export_mcq_suites(suites, folder, template, models)


def models_table(names: Sequence[str], folders: Sequence[str | os.PathLike], sources: Sequence[str]) -> pd.DataFrame:
    """One row per base model (``finetune.models``, in config order): ``model`` (its name, the
    ``{ft_model}`` level of the results), ``source`` (:func:`knowlab.config.model_source`) and
    ``n_parameters`` (:func:`knowlab.core.models.count_parameters` of its folder in ``folders``).

    Raises:
        ValueError: the three sequences differ in length.
        FileNotFoundError: a folder holds no safetensors weights.
    """
    if not len(names) == len(folders) == len(sources):
        raise ValueError(f"{len(names)} names, {len(folders)} folders and {len(sources)} sources")
    return pd.DataFrame(
        {
            "model": list(names),
            "source": list(sources),
            "n_parameters": [count_parameters(folder) for folder in folders],
        }
    )

"""Multiple-choice questions from the fictional Q&A (Kirchenbauer et al. 2026, Sec. 5 and App. C.6).

Each question becomes an ``n_choices``-way item: its natural answer (the gold) and
``k = n_choices - 1`` alternates (distractors).  Two constructions, named in each
record's ``distractors`` field (:data:`DISTRACTOR_METHODS`):

``model_ranked`` (the paper, App. C.6, "Stage 5: Ranking Alternate Answers for MCQ"):
    every answer of the corpus is a candidate alternate for every question.
    :func:`rank_candidates` fills :data:`RANKER_TEMPLATE` with the question, its
    true answer and the candidate, and a ranker LM scores the verdict
    continuations " Yes" and " No" by their loss (negative log-likelihood, nats).
    Candidates are sorted by ``loss(Yes) / loss(No)`` ascending (the lower, the
    more confidently the model says Yes); :func:`build_mcq` keeps the top k.  The
    gold answer itself is in the pool, as in the paper; if it ranks in the top k
    it is dropped and the next candidate taken (the paper inserts the gold and
    evicts the lowest-ranked alternate: the same k alternates).

``random_other_event`` (model-free; no ranker needed):
    - candidates are the natural answers of questions from *other* events, never an
      answer to any question of the question's own event, so no distractor can be a
      true answer about that event;
    - candidates of the gold answer's coarse kind (year, other number, text) are
      preferred, so a year question is not answered by spotting the only year;
    - the order among candidates is drawn at random.

Both: answers are compared by :func:`normalise` (case, whitespace, surrounding
punctuation), so a choice never duplicates the gold or another choice; the
randomness comes from generators keyed by (seed, ...) via sha256
(:func:`knowlab.core.rng.keyed_rng`), never ``hash()``; the gold position is balanced:
positions ``i % n_choices`` over the questions in a seeded permutation, so each
position holds the gold answer equally often (+-1).
"""

from __future__ import annotations

import logging
import os
import re
import time
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
from tqdm.auto import tqdm

from knowlab.core.io import DataError
from knowlab.core.rng import keyed_rng
from knowlab.core.scoring import encode_pair, score_token_ids
from knowlab.core.shards import ShardStore, fingerprint, folder_stamp

log = logging.getLogger(__name__)

DISTRACTOR_METHODS = ("model_ranked", "random_other_event")
# the paper's ranking prompt (App. C.6), line breaks ours
RANKER_TEMPLATE = (
    "Question: {question}\n"
    "True Answer: {true_answer}\n"
    "Alternate Answer: {alternate_answer}\n"
    "Does the Alternate Answer roughly match the True Answer in terms of parts of speech and grammatical form? "
    "Give a verdict as a Yes or No only.\n"
    "Verdict:"
)
VERDICTS = (" Yes", " No")  # the continuations scored after the prompt
RANKER_ORDERS = ("loss_ratio", "released")
_YEAR = re.compile(r"^(1[5-9]\d\d|20\d\d)$")
_NUMBER = re.compile(r"\d")


def normalise(answer: str) -> str:
    """Lower-case, collapse whitespace, strip surrounding punctuation."""
    return " ".join(answer.lower().split()).strip(" .,;:!?\"'")


def answer_kind(answer: str) -> str:
    """Coarse kind of an answer: ``year``, ``number`` (contains a digit) or ``text``."""
    text = normalise(answer)
    if _YEAR.match(text):
        return "year"
    if _NUMBER.search(text):
        return "number"
    return "text"


MCQ_FIELDS = ("question_id", "event_id", "fiction_id", "question", "natural_answer")


def check_questions(fict_qa: Sequence[dict[str, Any]], fields: Sequence[str] = MCQ_FIELDS) -> None:
    """Check the Q&A records MCQ items are built from (or ranked for) before any work.

    Args:
        fict_qa: Q&A records (the ``fict_qa`` table).
        fields: the fields each record needs, as non-empty strings.

    Raises:
        DataError: no record; a record missing a field of ``fields`` or with an empty or
            non-string value (naming its ``question_id``, else its position); a repeated
            ``question_id`` (naming it).
    """
    if not fict_qa:
        raise DataError("no fictional question to build MCQ items from (the fict_qa table is empty)")
    seen: set[str] = set()
    for i, record in enumerate(fict_qa):
        name = record.get("question_id") if isinstance(record.get("question_id"), str) else f"record {i}"
        for field in fields:
            value = record.get(field)
            if not isinstance(value, str) or not value.strip():
                raise DataError(f"fict_qa question {name}: field {field!r} must be a non-empty string, got {value!r}")
        if record["question_id"] in seen:
            raise DataError(f"fict_qa: duplicate question_id {record['question_id']!r}")
        seen.add(record["question_id"])


def answer_pool(fict_qa: Sequence[dict[str, Any]]) -> dict[str, str]:
    """The corpus's distinct answers: ``{normalise(answer): first surface form}``, questions in id order."""
    pool: dict[str, str] = {}
    for record in sorted(fict_qa, key=lambda r: r["question_id"]):
        pool.setdefault(normalise(record["natural_answer"]), record["natural_answer"].strip())
    return pool


def check_candidate_budget(n_choices: Sequence[int], max_candidates: int | None) -> None:
    """Fail before any ranking when ``max_candidates`` cannot supply ``k = n - 1`` alternates.

    Raises:
        ValueError: ``max(n_choices) - 1 > max_candidates``, naming both config keys.
    """
    k = max(n_choices) - 1
    if max_candidates is not None and k > max_candidates:
        raise ValueError(
            f"mcq.n_choices {max(n_choices)} needs k={k} alternates per question, but "
            f"mcq.ranker.max_candidates={max_candidates} ranks only {max_candidates} candidates: raise it to >= {k}"
        )


def rank_candidates(
    model,
    tokenizer,
    fict_qa: Sequence[dict[str, Any]],
    *,
    seed: int,
    template: str = RANKER_TEMPLATE,
    max_candidates: int | None = None,
    batch_size: int = 8,
    shard_questions: int = 64,
    shards: ShardStore | None = None,
    min_shared_prefix: int = 1,
    order: str = "loss_ratio",
) -> pd.DataFrame:
    """Rank candidate alternate answers of every question with a ranker LM (App. C.6).

    For each question and candidate, ``template`` (fields ``{question}``, ``{true_answer}``,
    ``{alternate_answer}``) is the context and ``loss_yes`` / ``loss_no`` are the losses
    (-log p, nats) of the continuations " Yes" and " No" after it, harness pairing.  Both come
    from one forward pass (:func:`~knowlab.core.scoring.next_token_logprobs`) when they
    are single tokens after the prompt, else from two
    (:func:`~knowlab.core.scoring.loglikelihood`).

    Questions are ranked in shards of ``shard_questions`` (in ``question_id`` order), so only
    one shard's prompts are in memory at once; with ``shards`` (a
    :class:`knowlab.core.shards.ShardStore`) each finished shard is kept, and a re-run of a
    killed job reads those and ranks the rest.  A question's prompts share everything up to
    the candidate, so the scoring engine packs them into shared rows where its cost model says
    that pays (``min_shared_prefix`` 1; the engine's default of 32 tokens packs only the
    prompts of long questions: on SmolLM2-135M, CPU, 2.7x fewer prompts/s with 16 sampled
    candidates, 1.1x with every answer a candidate; ``benchmarks/ranker.py``).  Results do not
    depend on the shard size; packing changes losses only by float rounding (about 1e-5 nats).

    Args:
        model, tokenizer: the ranker (a causal LM and its tokenizer).
        fict_qa: Q&A records with ``question_id``, ``question`` and ``natural_answer``.
        seed: keys the candidate sample when ``max_candidates`` is set.
        max_candidates: ``None`` (the paper): every distinct answer of the corpus
            (:func:`answer_pool`), the question's own gold answer included.  An int: the
            laptop budget, a sample of that many candidates (all if fewer) from the pool
            without the gold, drawn by ``keyed_rng(seed, "ranker-pool", question_id)``.
            The full ranking is ``n_questions * n_answers`` prompts: 240 x 224 with the
            shipped corpus, about 70 SmolLM2 tokens each.
        batch_size: rows per forward pass (a packed row holds many prompts).
        shard_questions: questions per shard.
        shards: where finished shards are kept (None: nowhere).
        min_shared_prefix: passed to :func:`~knowlab.core.scoring.score_token_ids`.
        order: one of :data:`RANKER_ORDERS`: ``loss_ratio`` (the paper's text, App. C.6: by
            ``loss_yes / loss_no`` ascending) or ``released`` (the authors' released ranking code,
            ``score_cbqas_for_mcq.py``: by ``yes_accuracy`` descending, then by the loss ratio).

    Returns:
        One row per (question, candidate), sorted by ``question_id`` and ``rank``: columns
        ``question_id``, ``candidate`` (surface form), ``loss_yes``, ``loss_no`` (nats),
        ``yes_accuracy`` (share of the " Yes" tokens greedy decoding reproduces after the
        prompt: 1 or 0 for a one-token verdict), ``score = loss_yes / loss_no`` and ``rank``
        (0 = best under ``order``; ties keep the pool order).

    Raises:
        ValueError: an unknown ``order``.
        DataError: ``fict_qa`` is empty, a record lacks ``question_id``, ``question`` or
            ``natural_answer``, or a ``question_id`` repeats (:func:`check_questions`).
    """
    if order not in RANKER_ORDERS:
        raise ValueError(f"mcq.ranker.order must be one of {RANKER_ORDERS}, got {order!r}")
    check_questions(fict_qa, ("question_id", "question", "natural_answer"))
    questions = sorted(fict_qa, key=lambda r: r["question_id"])
    pool = answer_pool(questions)
    starts = range(0, len(questions), shard_questions)
    tables = []
    for index, start in enumerate(tqdm(starts, desc="ranking shards", mininterval=10)):
        part = questions[start : start + shard_questions]
        table = shards.get(index) if shards is not None else None
        if table is None:
            began = time.perf_counter()
            table = _rank_shard(
                model,
                tokenizer,
                part,
                pool,
                seed,
                template,
                max_candidates,
                batch_size,
                min_shared_prefix,
                desc=f"shard {index + 1}/{len(starts)}",
            )
            if shards is not None:
                shards.put(index, table)
            log.info(
                "shard %d/%d: questions %d-%d/%d, %d prompts, %.1f prompts/s",
                index + 1,
                len(starts),
                start + 1,
                start + len(part),
                len(questions),
                len(table),
                len(table) / (time.perf_counter() - began),
            )
        tables.append(table)
    table = pd.concat(tables, ignore_index=True)
    table["score"] = table["loss_yes"] / table["loss_no"]
    keys = ["question_id", "score"] if order == "loss_ratio" else ["question_id", "yes_accuracy", "score"]
    ascending = [True, True] if order == "loss_ratio" else [True, False, True]
    table = table.sort_values(keys, ascending=ascending, kind="stable", ignore_index=True)
    table["rank"] = table.groupby("question_id").cumcount()
    return table.sort_values(["question_id", "rank"], ignore_index=True)


def ranking_fingerprint(model_dir: str | os.PathLike, fict_qa: Sequence[dict[str, Any]], **settings) -> str:
    """What a ranking's shards are computed from: the ranker folder's files, the questions and ``settings``
    (:func:`knowlab.core.shards.fingerprint`)."""
    questions = [(r["question_id"], r["question"], r["natural_answer"]) for r in fict_qa]
    return fingerprint({"model": folder_stamp(model_dir), "questions": sorted(questions), **settings})


def ranking_shards(folder: str | os.PathLike, model_dir: str | os.PathLike, fict_qa, cfg, seed: int) -> ShardStore:
    """The shard store of a ranking job (config ``mcq.ranker`` = ``cfg``): keyed by the ranker folder,
    the questions, ``seed`` and every ``cfg`` key that changes a shard (:func:`ranking_fingerprint`)."""
    settings = {key: cfg[key] for key in ("template", "max_candidates", "shard_questions", "order")}
    return ShardStore(folder, ranking_fingerprint(model_dir, fict_qa, seed=seed, **settings))


def _rank_shard(
    model, tokenizer, questions, pool, seed, template, max_candidates, batch_size, min_shared_prefix, desc
) -> pd.DataFrame:
    """Verdict losses of one shard's (question, candidate) pairs: columns question_id, candidate, loss_yes, loss_no."""
    rows, prompts = [], []
    for record in questions:
        gold = record["natural_answer"].strip()
        candidates = list(pool.values())
        if max_candidates is not None:
            others = [answer for key, answer in pool.items() if key != normalise(gold)]
            rng = keyed_rng(seed, "ranker-pool", record["question_id"])
            chosen = set(rng.sample(range(len(others)), min(max_candidates, len(others))))
            candidates = [answer for i, answer in enumerate(others) if i in chosen]
        rows += [(record["question_id"], candidate) for candidate in candidates]
        prompts += [
            template.format(question=record["question"], true_answer=gold, alternate_answer=c) for c in candidates
        ]
    table = pd.DataFrame(rows, columns=["question_id", "candidate"])
    table[["loss_yes", "loss_no", "yes_accuracy"]] = _verdict_scores(
        model, tokenizer, prompts, batch_size, min_shared_prefix, desc
    )
    return table


def _verdict_scores(
    model, tokenizer, prompts: list[str], batch_size: int, min_shared_prefix: int, desc: str
) -> np.ndarray:
    """Per prompt: losses (nats) of " Yes" and " No" after it, and the share of " Yes" tokens that greedy
    decoding reproduces (the released code's token accuracy); shape (len(prompts), 3).

    One engine call (:func:`~knowlab.core.scoring.score_token_ids`, harness pairing): where the
    verdicts are single tokens, both come from one forward pass over the prompt.
    """
    pairs = [encode_pair(tokenizer, prompt, verdict) for prompt in prompts for verdict in VERDICTS]
    scores = score_token_ids(model, pairs, batch_size=batch_size, desc=desc, min_shared_prefix=min_shared_prefix)
    losses = -np.array([s.logprobs.sum() for s in scores]).reshape(len(prompts), len(VERDICTS))
    accuracy = np.array([s.greedy.mean() for s in scores[:: len(VERDICTS)]])
    return np.column_stack([losses, accuracy])


def _other_event_candidates(questions: Sequence[dict[str, Any]]):
    """``random_other_event``: a function (record, rng) -> preference-ordered candidate alternates."""
    surface = answer_pool(questions)
    events: dict[str, set[str]] = {}  # normalised answer -> events it answers a question of
    for record in questions:
        events.setdefault(normalise(record["natural_answer"]), set()).add(record["event_id"])

    def candidates(record, rng) -> list[str]:
        gold_key = normalise(record["natural_answer"])
        others = [key for key in sorted(surface) if record["event_id"] not in events[key] and key != gold_key]
        kind = answer_kind(gold_key)
        same = [surface[key] for key in others if answer_kind(key) == kind]
        rest = [surface[key] for key in others if answer_kind(key) != kind]
        rng.shuffle(same)
        rng.shuffle(rest)
        return same + rest

    return candidates


def _ranked_candidates(ranking: pd.DataFrame):
    """``model_ranked``: a function (record, rng) -> candidates by rank, without the gold and duplicates."""
    ranked = ranking.sort_values(["question_id", "rank"], kind="stable")
    by_question = ranked.groupby("question_id")["candidate"].agg(list).to_dict()

    def candidates(record, rng) -> list[str]:
        seen = {normalise(record["natural_answer"])}
        kept = []
        for candidate in by_question.get(record["question_id"], []):
            if normalise(candidate) not in seen:
                seen.add(normalise(candidate))
                kept.append(candidate.strip())
        return kept

    return candidates


def build_mcq(
    fict_qa: Sequence[dict[str, Any]],
    n_choices: int,
    seed: int,
    distractors: str = "random_other_event",
    ranking: pd.DataFrame | None = None,
) -> list[dict[str, Any]]:
    """Build one ``n_choices``-way MCQ item per question (App. C.6; module docstring).

    Args:
        fict_qa: Q&A records with ``question_id``, ``event_id``, ``fiction_id``, ``question``,
            ``natural_answer``.
        n_choices: choices per item; ``k = n_choices - 1`` alternates (paper: 4 and 10).
        seed: keys the gold positions and the order of the alternates.
        distractors: one of :data:`DISTRACTOR_METHODS`.
        ranking: for ``model_ranked``, the table of :func:`rank_candidates` (columns
            ``question_id``, ``candidate``, ``rank`` are used); the top k candidates by rank
            that are neither the gold nor a duplicate (by :func:`normalise`) are the alternates.

    Returns:
        Records ``{question_id, event_id, fiction_id, question, choices, gold, n_choices,
        distractors}`` ordered by ``question_id``; ``choices[gold]`` is the natural answer and
        ``distractors`` names the method.

    Raises:
        ValueError: an unknown method; ``model_ranked`` without ``ranking``; a question with
            fewer than k candidates once the gold and duplicates are removed.
        DataError: ``fict_qa`` is empty, a record lacks a field of :data:`MCQ_FIELDS`, or a
            ``question_id`` repeats (:func:`check_questions`).
    """
    if distractors not in DISTRACTOR_METHODS:
        raise ValueError(f"unknown distractor method {distractors!r}; choose one of {DISTRACTOR_METHODS}")
    check_questions(fict_qa)
    if distractors == "model_ranked":
        if ranking is None:
            raise ValueError("distractors='model_ranked' needs the ranking table of rank_candidates()")
        candidates = _ranked_candidates(ranking)
    else:
        candidates = _other_event_candidates(fict_qa)
    questions = sorted(fict_qa, key=lambda r: r["question_id"])
    k = n_choices - 1
    positions = [i % n_choices for i in range(len(questions))]
    keyed_rng(seed, "mcq-gold-positions", n_choices).shuffle(positions)
    items = []
    for record, gold_pos in zip(questions, positions):
        gold = record["natural_answer"].strip()
        rng = keyed_rng(seed, "mcq", n_choices, record["question_id"])
        pool = candidates(record, rng)
        if len(pool) < k:
            raise ValueError(
                f"question {record['question_id']}: {n_choices} choices need k={k} alternates but the "
                f"{distractors} candidate pool has only {len(pool)} once the gold answer is removed"
            )
        alternates = pool[:k]
        rng.shuffle(alternates)
        items.append(
            {
                "question_id": record["question_id"],
                "event_id": record["event_id"],
                "fiction_id": record["fiction_id"],
                "question": record["question"],
                "choices": alternates[:gold_pos] + [gold] + alternates[gold_pos:],
                "gold": gold_pos,
                "n_choices": n_choices,
                "distractors": distractors,
            }
        )
    return items

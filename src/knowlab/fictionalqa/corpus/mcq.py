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
    more confidently the model says Yes); :func:`build_mcq` takes the top
    ``n_choices`` ("top-k" in the paper and the released code, k the number of
    choices) and makes sure the gold is among them (:func:`select_alternates`,
    :data:`EVICT_POLICIES`).  The gold answer itself is in the pool when every
    answer is a candidate, as in the paper, and ranks first for almost every
    question.  When it is among the top ``n_choices`` those are the choices (the
    gold and the ``k`` others), under both policies.  When it is not, it is
    inserted and one ranked candidate evicted: the lowest-ranked (``lowest``, the
    paper's text, App. C.6; the choices are the gold and ranks 1..k) or the
    top-ranked (``released``, the authors' notebook
    ``template_scored_qas_as_mcq.ipynb``: ``[correct_choice] + raw_topk_choices[1:]``;
    the gold and ranks 2..k+1), ranks counted over the distinct candidates other than
    the gold.  A sampled pool (``mcq.ranker.max_candidates``) leaves the gold out, so
    it is never in the top ``n_choices``: ``released`` then evicts the top-ranked
    candidate of every question (``lowest`` keeps the top k, as always).

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
from knowlab.fictionalqa.settings import EVICT_POLICIES, RankerSettings, check_candidate_budget  # noqa: F401

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
#: BOS policies of the ranker's prompts (config ``mcq.ranker.bos``; :data:`knowlab.core.scoring.BOS_POLICIES`):
#: ``tokenizer`` (what the tokenizer adds by default, as lm-evaluation-harness) or ``double`` (one more
#: BOS before those, as the authors' released ranker ``score_cbqas_for_mcq.py``)
RANKER_BOS = ("tokenizer", "double")
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
    bos: str = "tokenizer",
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
        bos: one of :data:`RANKER_BOS`, the special tokens before each prompt
            (:func:`~knowlab.core.scoring.encode_pair`): ``tokenizer`` (the tokenizer's default, as
            lm-evaluation-harness: nothing on SmolLM2, ``<|begin_of_text|>`` on Llama-3) or
            ``double`` (a BOS before those, as the released ranker, which prepends one to the
            tokenizer's own: one BOS on SmolLM2, two on Llama-3).

    Returns:
        One row per (question, candidate), sorted by ``question_id`` and ``rank``: columns
        ``question_id``, ``candidate`` (surface form), ``loss_yes``, ``loss_no`` (nats),
        ``yes_accuracy`` (share of the " Yes" tokens greedy decoding reproduces after the
        prompt: 1 or 0 for a one-token verdict), ``score = loss_yes / loss_no`` and ``rank``
        (0 = best under ``order``; ties keep the pool order).

    Raises:
        ValueError: an unknown ``order`` or ``bos``; ``bos="double"`` with a tokenizer without a
            BOS token.
        DataError: ``fict_qa`` is empty, a record lacks ``question_id``, ``question`` or
            ``natural_answer``, or a ``question_id`` repeats (:func:`check_questions`).
    """
    if order not in RANKER_ORDERS:
        raise ValueError(f"mcq.ranker.order must be one of {RANKER_ORDERS}, got {order!r}")
    if bos not in RANKER_BOS:
        raise ValueError(f"mcq.ranker.bos must be one of {RANKER_BOS}, got {bos!r}")
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
                bos=bos,
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


def ranking_shards(
    folder: str | os.PathLike, model_dir: str | os.PathLike, fict_qa, settings: RankerSettings, seed: int
) -> ShardStore:
    """The shard store of a ranking job (config ``mcq.ranker``: ``settings``): keyed by the ranker folder,
    the questions, ``seed`` and every setting that changes a shard (:func:`ranking_fingerprint`)."""
    keys = {key: getattr(settings, key) for key in ("template", "max_candidates", "shard_questions", "order", "bos")}
    return ShardStore(folder, ranking_fingerprint(model_dir, fict_qa, seed=seed, **keys))


def _rank_shard(
    model, tokenizer, questions, pool, seed, template, max_candidates, batch_size, min_shared_prefix, desc, bos
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
        model, tokenizer, prompts, batch_size, min_shared_prefix, desc, bos
    )
    return table


def _verdict_scores(
    model, tokenizer, prompts: list[str], batch_size: int, min_shared_prefix: int, desc: str, bos: str = "tokenizer"
) -> np.ndarray:
    """Per prompt: losses (nats) of " Yes" and " No" after it, and the share of " Yes" tokens that greedy
    decoding reproduces (the released code's token accuracy); shape (len(prompts), 3).

    One engine call (:func:`~knowlab.core.scoring.score_token_ids`, harness pairing, the special
    tokens of BOS policy ``bos`` before each prompt): where the verdicts are single tokens, both
    come from one forward pass over the prompt.
    """
    pairs = [encode_pair(tokenizer, prompt, verdict, bos) for prompt in prompts for verdict in VERDICTS]
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


def select_alternates(ranked: Sequence[str], gold: str, n_choices: int, evict: str = "lowest") -> list[str]:
    """The ``k = n_choices - 1`` alternates of one question from its candidates in rank order (App. C.6).

    The "top-k" of the paper and of the authors' notebook (``template_scored_qas_as_mcq.ipynb``,
    ``extract_and_correct_choices_list``) is the first ``n_choices`` distinct candidates of the
    ranking, the gold answer included where it was ranked (candidates are compared by
    :func:`normalise`; repeats are dropped).  Where the gold is among them, the alternates are
    the other ``k`` (both policies: the released ``topk_choices = raw_topk_choices``).  Where it
    is not (it ranks lower, or it was no candidate, as with a sampled pool,
    ``mcq.ranker.max_candidates``), the gold is inserted and one candidate evicted:

    - ``lowest`` (the paper's text: "insert the correct answer ... and evict the lowest ranked
      alternate"): the alternates are ranks 1..k of the candidates other than the gold;
    - ``released`` (the notebook: ``[correct_choice] + raw_topk_choices[1:]``, which evicts the
      *top*-ranked one): ranks 2..k+1.

    Args:
        ranked: one question's candidates, best first (may hold the gold and repeats).
        gold: its natural answer.
        n_choices: choices per item.
        evict: one of :data:`EVICT_POLICIES`.

    Returns:
        the ``k`` alternates in rank order (surface forms, stripped).

    Raises:
        ValueError: an unknown ``evict``; fewer than ``k`` distinct candidates other than the gold
            (``k + 1`` where ``released`` evicts the top-ranked one).
    """
    if evict not in EVICT_POLICIES:
        raise ValueError(f"mcq.ranker.evict must be one of {EVICT_POLICIES}, got {evict!r}")
    k = n_choices - 1
    others, gold_rank = _others_and_gold_rank(ranked, gold)
    start = 1 if evict == "released" and not _gold_in_top(gold_rank, n_choices) else 0
    if len(others) < start + k:
        evicted = ": released evicts the top-ranked one, as the gold is not in the top n_choices" if start else ""
        raise ValueError(
            f"{n_choices} choices need k={k} alternates{evicted} but the model_ranked candidate pool has only "
            f"{len(others)} once the gold answer is removed"
        )
    return others[start : start + k]


def _others_and_gold_rank(ranked: Sequence[str], gold: str) -> tuple[list[str], int | None]:
    """The distinct candidates other than the gold, in rank order, and the gold's 0-based rank among the
    distinct candidates (None: not ranked)."""
    gold_key = normalise(gold)
    seen: set[str] = set()
    others: list[str] = []
    gold_rank = None
    for candidate in ranked:
        key = normalise(candidate)
        if key == gold_key:
            gold_rank = len(others) if gold_rank is None else gold_rank
        elif key not in seen:
            seen.add(key)
            others.append(candidate.strip())
    return others, gold_rank


def _gold_in_top(gold_rank: int | None, n_choices: int) -> bool:
    return gold_rank is not None and gold_rank < n_choices


def _ranked_candidates(ranking: pd.DataFrame, n_choices: int, evict: str):
    """``model_ranked``: a function (record, rng) -> the alternates by rank (:func:`select_alternates`),
    and the list it fills with the ids of the questions whose gold was not in the top ``n_choices``."""
    ranked = ranking.sort_values(["question_id", "rank"], kind="stable")
    by_question = ranked.groupby("question_id")["candidate"].agg(list).to_dict()
    inserted: list[str] = []

    def candidates(record, rng) -> list[str]:
        ranked = by_question.get(record["question_id"], [])
        if not _gold_in_top(_others_and_gold_rank(ranked, record["natural_answer"])[1], n_choices):
            inserted.append(record["question_id"])
        try:
            return select_alternates(ranked, record["natural_answer"], n_choices, evict)
        except ValueError as err:
            raise ValueError(f"question {record['question_id']}: {err}") from None

    return candidates, inserted


def build_mcq(
    fict_qa: Sequence[dict[str, Any]],
    n_choices: int,
    seed: int,
    distractors: str = "random_other_event",
    ranking: pd.DataFrame | None = None,
    evict: str = "lowest",
) -> list[dict[str, Any]]:
    """Build one ``n_choices``-way MCQ item per question (App. C.6; module docstring).

    Args:
        fict_qa: Q&A records with ``question_id``, ``event_id``, ``fiction_id``, ``question``,
            ``natural_answer``.
        n_choices: choices per item; ``k = n_choices - 1`` alternates (paper: 4 and 10).
        seed: keys the gold positions and the order of the alternates.
        distractors: one of :data:`DISTRACTOR_METHODS`.
        ranking: for ``model_ranked``, the table of :func:`rank_candidates` (columns
            ``question_id``, ``candidate``, ``rank`` are used); the alternates are those of
            :func:`select_alternates` (the top ``n_choices`` by rank with the gold, no duplicate by
            :func:`normalise`).
        evict: ``model_ranked`` only (config ``mcq.ranker.evict``): which ranked candidate the gold
            replaces when it is not among the top ``n_choices``, ``lowest`` (the paper's text, App.
            C.6) or ``released`` (the top-ranked one, as the authors' notebook does);
            :func:`select_alternates`.

    Returns:
        Records ``{question_id, event_id, fiction_id, question, choices, gold, n_choices,
        distractors}`` ordered by ``question_id``; ``choices[gold]`` is the natural answer and
        ``distractors`` names the method.

    Raises:
        ValueError: an unknown method or ``evict``; ``model_ranked`` without ``ranking``; a
            question with fewer than k candidates once the gold and duplicates are removed (k + 1
            where ``released`` evicts the top-ranked one).
        DataError: ``fict_qa`` is empty, a record lacks a field of :data:`MCQ_FIELDS`, or a
            ``question_id`` repeats (:func:`check_questions`).
    """
    if distractors not in DISTRACTOR_METHODS:
        raise ValueError(f"unknown distractor method {distractors!r}; choose one of {DISTRACTOR_METHODS}")
    if evict not in EVICT_POLICIES:
        raise ValueError(f"mcq.ranker.evict must be one of {EVICT_POLICIES}, got {evict!r}")
    check_questions(fict_qa)
    if distractors == "model_ranked":
        if ranking is None:
            raise ValueError("distractors='model_ranked' needs the ranking table of rank_candidates()")
        candidates, inserted = _ranked_candidates(ranking, n_choices, evict)
    else:
        candidates, inserted = _other_event_candidates(fict_qa), []
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
    if distractors == "model_ranked" and inserted:
        log.info(
            "MCQ-%d: the gold answer is not among the top %d ranked candidates of %d of %d questions: inserted, "
            "evicting the %s-ranked candidate (mcq.ranker.evict: %s)%s",
            n_choices, n_choices, len(inserted), len(questions), "lowest" if evict == "lowest" else "top", evict,
            "; a sampled pool (mcq.ranker.max_candidates) never holds the gold" if evict == "released" else "",
        )  # fmt: skip
    return items

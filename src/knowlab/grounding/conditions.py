"""Grounding conditions: which contexts each item is answered from (paper Sec. 3.2, Fig. 2, Figs. 4-5).

Conditions (names used in every table, figure and row):

- ``original_gold`` / ``conflict_gold``: the gold contexts of the Original / Conflict version.
- ``original_dist`` / ``conflict_dist``: the same gold contexts with ranked distractors packed
  to ``grounding.distractors.budget`` tokens (of the answering model's tokenizer), the gold
  contexts placed at ``grounding.distractors.position``.  Both versions get the same
  distractors in the same arrangement (ranking is by the question, which the two versions
  share; the random placement is seeded by the item), so they differ only in the gold text.
- ``no_context``: the question alone (answer accuracy only; Table 12).
- ``length_<N>``: Original gold contexts with distractors packed to ``N`` tokens, for
  ``N`` in ``grounding.sweep.budgets`` other than the ``*_dist`` budget (Fig. 4; the
  ``*_dist`` budget is ``original_dist``, zero distractors is ``original_gold``).
- ``position_<p>``: Original gold contexts at position ``p`` among the distractors at the
  ``*_dist`` budget, for ``p`` in ``grounding.sweep.positions`` other than the ``*_dist``
  position (Sec. 4.2, "Impact of gold contexts position"; that position is ``original_dist``).

The names, what each condition reads (:func:`~knowlab.grounding.settings.condition_spec`) and the
conditions a config asks for (:func:`~knowlab.grounding.settings.condition_names`) are in
:mod:`knowlab.grounding.settings`, whose records are built from them; this module samples the
questions and builds each condition's contexts.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from knowlab.core.rng import keyed_rng
from knowlab.grounding.distractors import document_text, pack_contexts
from knowlab.grounding.settings import GroundingGenerateSettings, condition_spec


def _rank(seed: int, item_id: str) -> str:
    return hashlib.sha256(f"{seed}:{item_id}".encode()).hexdigest()


def select_question_ids(items: Sequence[Mapping[str, Any]], max_items: int | None, seed: int) -> list[str]:
    """A seeded sample of ``max_items`` question ids (all when None), the same for every model and checkpoint,
    spread over the documents the questions are about.

    Questions are ranked by ``sha256(f"{seed}:{item_id}")``, which does not depend on the order of
    the file or on Python's ``hash``, and taken in rounds: each document's best-ranked question
    first (documents in the order of those questions), then each one's second, and so on; the first
    ``max_items`` are kept, returned in that order.  A FictionalQA question's document is its
    ``extra["fiction_id"]``, the unit its findings are tested at (its questions share it as gold
    context, :mod:`knowlab.findings.grounding`), so a sample of n questions holds
    min(n, documents) units rather than as many as a plain draw happens to hit (the default's 32 of
    its 192 questions: 23 documents before); a benchmark question (no ``fiction_id``) is its own
    document, which leaves the plain ranking.
    """
    ranked = sorted({item["item_id"]: item for item in items}.values(), key=lambda item: _rank(seed, item["item_id"]))
    seen: dict[str, int] = {}
    rounds = []  # per ranked question: how many of its document's questions rank above it
    for item in ranked:
        document = (item.get("extra") or {}).get("fiction_id", item["item_id"])
        rounds.append(seen.get(document, 0))
        seen[document] = rounds[-1] + 1
    ids = [ranked[k]["item_id"] for k in sorted(range(len(ranked)), key=lambda k: (rounds[k], k))]
    return ids if max_items is None else ids[:max_items]


def condition_records(
    items: Sequence[Mapping[str, Any]],
    question_ids: Sequence[str],
    ranked: Mapping[str, Sequence[str]],
    pool: Mapping[str, Mapping[str, Any]],
    settings: GroundingGenerateSettings,
    count_tokens: Callable[[str], int],
    seed: int,
) -> list[dict[str, Any]]:
    """One record per (question, condition): the item of the condition's version and its ordered contexts.

    Args:
        items: grounding items of both versions (schema in :mod:`knowlab.grounding.schema`).
        question_ids: which questions (:func:`select_question_ids`).
        ranked: item id -> distractor doc ids, best first (:func:`knowlab.grounding.distractors.rank_distractors`).
        pool: doc id -> pool document (``doc_id``, ``title``, ``text``).
        settings: the conditions (``settings.conditions``, in that order for each question) and
            the packing of their distractor contexts (``settings.budget``, ``settings.position``;
            :func:`condition_spec`).
        count_tokens: token count of a context in the answering model's tokenizer.

    Returns:
        Records with the item's fields (``contexts`` replaced by the condition's contexts,
        gold ones kept as ``gold_contexts``), ``condition``, ``n_distractors`` and
        ``context_tokens``.

    Raises:
        KeyError: a question without an item of a condition's version.
    """
    by_key = {(item["item_id"], item["version"]): item for item in items}
    records = []
    for qid in question_ids:
        for condition in settings.conditions:
            spec = condition_spec(condition, settings.budget, settings.position)
            item = by_key[(qid, spec["version"] or "original")]
            gold = list(item["contexts"])
            if spec["version"] is None:
                contexts = []
            elif spec["budget"] is None:
                contexts = gold
            else:
                distractors = [document_text(pool[d]) for d in ranked.get(qid, [])]
                # the same placement for both versions and every budget of one question
                rng = keyed_rng(seed, qid, "gold position")
                contexts = pack_contexts(gold, distractors, spec["budget"], count_tokens, spec["position"], rng)
            records.append(
                {
                    **item,
                    "gold_contexts": gold,
                    "contexts": contexts,
                    "condition": condition,
                    "n_distractors": sum(c not in gold for c in contexts),
                    "context_tokens": sum(count_tokens(c) for c in contexts),
                }
            )
    return records

"""Grounding items built from the fiction corpus: an Original and a Conflict version of each Q&A.

Paper: "How Well Do Large Language Models Truly Ground?" (Lee et al. 2024), Sec. 3: the analogue of
Original-Gold / Conflict-Gold on the fiction corpus, the Conflict version made automatically
by answer substitution (:mod:`knowlab.grounding.answers`).  Items follow the schema of
:mod:`knowlab.grounding.schema`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from knowlab.core.io import DataError
from knowlab.core.rng import keyed_rng
from knowlab.grounding.answers import (
    FOLD_CASE_KINDS,
    answer_entity,
    occurs,
    substituter,
    substitutes,
    substitution_pairs,
)


def fiction_grounding_items(
    fictions: Sequence[Mapping[str, Any]], fict_qa: Sequence[Mapping[str, Any]], seed: int
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], dict[str, Any]]:
    """Grounding items from the fiction corpus: an Original version and a Conflict version by answer substitution.

    The analogue of the paper's Original-Gold / Conflict-Gold (Sec. 3, Step 4 "Modify Context":
    the knowledge needed to answer is changed in the context; done here automatically).  For
    each Q&A of ``fict_qa`` (fields question_id, fiction_id, fict, question, natural_answer):

    - original item: ``contexts = [the fiction_id document]``, ``atomic_facts = [fict]``,
      ``answers = [natural_answer]``, ``factors = {"contexts": "single", "answer_type":
      "definite", "style": style}``, ``gold_doc_ids = [fiction_id]``, ``extra = {event_id,
      fiction_id, style, kind}``.
    - entity = the :func:`~knowlab.grounding.answers.split_answer` core of the answer
      (``"the Corn Exchange"`` -> ``"Corn Exchange"``), kind =
      :func:`~knowlab.grounding.answers.answer_kind`
      (:func:`~knowlab.grounding.answers.answer_entity`).  For the kinds number, ordinal and
      other the first letter matches either case (``"Six"`` is ``"six"`` mid-sentence); the
      entity's own form is then the lower-case one when that occurs in its document.
    - conflict item: every occurrence of the entity in the document, the fict, the answer and
      the question (only where it occurs there, normally not) is replaced by one substitute.
      Occurrences are whole words/phrases (regex word boundaries where the entity starts or
      ends with a word character; never inside a bigger number); a sentence-initial
      occurrence gets a capitalised substitute; a preceding ``a``/``an`` is fixed.
    - the substitute is drawn with ``knowlab.core.rng.keyed_rng(seed, question_id)`` from the
      entities of OTHER questions of the same kind that occur neither in the document nor in
      the fict or question, preferring "close" ones when there are any: numbers and ordinals
      replace only the numeric token, by one written the same way (digits or words), digits
      within a factor of 10 and both integer or both decimal, so that currency and unit stay
      (``"620 yards"`` -> ``"94 yards"``); dates, times and codes of the same token shape
      (``"April 1912"`` -> ``"July 2057"``); places, names and other answers that had the
      same leading article (places: also the same head-word class, street/water/land/
      settlement/building; other: also the same word count)
      (:func:`~knowlab.grounding.answers.substitutes`).  For persons the surname
      standing alone (``"Coyle said"``) is replaced by the substitute's surname too
      (case-sensitive), and that surname must not occur in the texts either.
    - a Q&A whose entity does not occur in both the document and the fict
      (``"answer_not_in_document"`` / ``"answer_not_in_fact"``), or that has no substitute
      (``"no_substitute"``), is left out of BOTH versions, so the versions pair by item_id.

    ``extra["substitution"]`` of a conflict item = ``{"original": entity, "substitute": new,
    "kind": kind, "close": bool, "pairs": [[old, new], ...]}`` (``close``: the substitute was
    one of the close ones; ``pairs``: every replaced string, surname included).

    Returns:
        ``(original_items, conflict_items, report)`` in ``fict_qa`` order; ``report`` =
        ``{"n_qa", "n_items", "dropped": {reason: n}, "kinds": {kind: n kept}}``.
        On the shipped corpus (240 Q&A) 236 items survive with seed 0 (see the tests).

    Raises:
        DataError: a Q&A lacking a field or naming a fiction_id absent from ``fictions`` (the
            message names the question_id).
    """
    docs = {f["fiction_id"]: f for f in fictions}
    entries = []
    for n, qa in enumerate(fict_qa):
        qid = qa.get("question_id", f"#{n}")
        for key in ("question_id", "fiction_id", "fict", "question", "natural_answer"):
            if not isinstance(qa.get(key), str) or not qa[key].strip():
                raise DataError(f"fict_qa record {qid}: missing or empty field {key!r}")
        if qa["fiction_id"] not in docs:
            raise DataError(f"fict_qa record {qid}: fiction_id {qa['fiction_id']!r} not among the fictions")
        entity = answer_entity(qid, qa["natural_answer"], qa["question"], docs[qa["fiction_id"]]["fiction"])
        entries.append({**entity, "qa": qa})

    originals, conflicts = [], []
    dropped: Counter[str] = Counter()
    kinds: Counter[str] = Counter()
    for entry in entries:
        qa, form, kind = entry["qa"], entry["form"], entry["kind"]
        doc = docs[qa["fiction_id"]]
        fold = kind in FOLD_CASE_KINDS
        if not occurs(form, doc["fiction"], fold):
            dropped["answer_not_in_document"] += 1
            continue
        if not occurs(form, qa["fict"], fold):
            dropped["answer_not_in_fact"] += 1
            continue
        valid, close = substitutes(entry, entries, (doc["fiction"], qa["fict"], qa["question"]))
        if not valid:
            dropped["no_substitute"] += 1
            continue
        new = keyed_rng(seed, qa["question_id"]).choice(valid)
        pairs = substitution_pairs(form, new, kind)
        substitute = substituter(pairs, fold)
        factors = {"contexts": "single", "answer_type": "definite", "style": str(doc.get("style", ""))}
        extra = {
            "event_id": qa.get("event_id", doc.get("event_id")),
            "fiction_id": qa["fiction_id"],
            "style": doc.get("style"),
            "kind": kind,
        }
        base = {"item_id": qa["question_id"], "source": "fiction", "gold_doc_ids": [qa["fiction_id"]]}
        originals.append(
            {
                **base,
                "version": "original",
                "question": qa["question"],
                "answers": [qa["natural_answer"]],
                "contexts": [doc["fiction"]],
                "atomic_facts": [qa["fict"]],
                "factors": factors,
                "extra": extra,
            }
        )
        conflicts.append(
            {
                **base,
                "version": "conflict",
                "question": substitute(qa["question"]),
                "answers": [substitute(qa["natural_answer"])],
                "contexts": [substitute(doc["fiction"])],
                "atomic_facts": [substitute(qa["fict"])],
                "factors": dict(factors),
                "extra": {
                    **extra,
                    "substitution": {
                        "original": form,
                        "substitute": new,
                        "kind": kind,
                        "close": close,
                        "pairs": [list(p) for p in pairs.items()],
                    },
                },
            }
        )
        kinds[kind] += 1
    report = {"n_qa": len(entries), "n_items": len(originals), "dropped": dict(dropped), "kinds": dict(kinds)}
    return originals, conflicts, report

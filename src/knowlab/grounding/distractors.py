"""Distractor contexts: dense retrieval of relevant non-gold documents and packing them around the gold contexts.

Paper: "How Well Do Large Language Models Truly Ground?" (Lee et al. 2024), Sec. 3.2 Step 5 "Add
Distractor Contexts" and App. A.9 (Contriever retrieves the top 40 contexts most similar to
each question from the benchmark's corpus, excluding contexts of the Wikipedia documents that
hold gold atomic facts), App. D.5 / Fig. 4 (distractors are added in rank order up to an input
length) and "Impact of gold contexts position" (gold contexts at the start, end, middle or a
random place among the distractors).

The retriever here is any sentence-transformers embedder (the packaged all-MiniLM-L6-v2 by
default, :func:`knowlab.core.retrieval.load_embedder`) with exact inner-product search (faiss
``IndexFlatIP``) on L2-normalised vectors, i.e. cosine similarity; the query is the question
alone, as with Contriever in the paper.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from knowlab.core.retrieval import embed
from knowlab.grounding.kaist import context_title, render_kaist_doc

POSITIONS = ("start", "end", "middle", "random")


def document_text(doc: Mapping[str, Any]) -> str:
    """The text of a pool document as it is embedded and shown in a prompt.

    KAIST documents (with ``url``) take the form of an original gold context,
    ``"Title: <title> [<url>]\\n\\n<text>"`` (:func:`knowlab.grounding.kaist.render_kaist_doc`);
    fiction documents are their text alone, like a fiction gold context.
    """
    return render_kaist_doc(doc)


def normalise(text: str) -> str:
    """Text for duplicate detection: a leading ``"Title: ... [...]"`` line dropped, whitespace collapsed."""
    if context_title(text) is not None:
        text = text.split("\n", 1)[1] if "\n" in text else ""
    return " ".join(text.split())


def fiction_pool(fictions: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The distractor pool of the fiction items: one document per fiction.

    Returns:
        ``[{"doc_id": fiction_id, "title": event_id, "text": fiction, "style": style}, ...]``.
        The title is the EVENT id: all documents of one event describe the same fictional
        event (and hold its facts), so :func:`rank_distractors`' same-title rule excludes
        every document of the question's own event, as the paper excludes every context of a
        gold Wikipedia article; distractors come from the other events.  Note that the
        substitutes of the fiction conflict items are entities of other events, so a
        distractor may mention the substitute (in its own, unrelated event).
    """
    return [
        {"doc_id": f["fiction_id"], "title": f["event_id"], "text": f["fiction"], "style": f.get("style")}
        for f in fictions
    ]


def _excluded(group: Sequence[Mapping[str, Any]], pool: Sequence[Mapping[str, Any]], by_id: Mapping[str, int]):
    """(pool rows to skip, normalised gold texts) of the items sharing one item_id."""
    gold_ids = {doc_id for item in group for doc_id in item["gold_doc_ids"]}
    titles = {pool[by_id[d]]["title"] for d in gold_ids if d in by_id}
    titles |= {t for item in group for c in item["contexts"] if (t := context_title(c)) is not None}
    rows = {i for i, doc in enumerate(pool) if doc["doc_id"] in gold_ids or doc["title"] in titles}
    gold_texts = {normalise(c) for item in group for c in item["contexts"]}
    return rows, gold_texts


def rank_distractors(
    items: Sequence[Mapping[str, Any]],
    pool: Sequence[Mapping[str, Any]],
    embedder,
    k: int,
    batch_size: int = 32,
    pool_vectors: np.ndarray | None = None,
) -> dict[str, list[str]]:
    """The top-``k`` distractor documents of each item, most similar to its question first
    (paper Sec. 3.2 Step 5, App. A.9).

    The pool is embedded once (:func:`document_text`), each question once per item_id (the
    first item with that id gives the question; original and conflict share their
    distractors), and the pool is searched exactly by cosine similarity.  A pool document is
    skipped when it is

    - a gold document of any item with that id (``gold_doc_ids``);
    - of the same title as a gold document or gold context (another chunk of the gold
      article, which may hold or contradict the gold atomic facts; for the fiction pool the
      title is the event, see :func:`fiction_pool`);
    - a duplicate: its normalised text (:func:`normalise`) equals that of a gold context or of a
      distractor already chosen (the KAIST pool holds 29 repeated texts).

    Args:
        items: schema items (``item_id``, ``question``, ``contexts``, ``gold_doc_ids``).
        pool: ``[{"doc_id", "title", "text", ...}]`` (:func:`knowlab.grounding.kaist.read_pool`
            or :func:`fiction_pool`).
        embedder: a SentenceTransformer (:func:`knowlab.core.retrieval.load_embedder`).
        k: distractors per item (fewer when the pool runs out).
        pool_vectors: the pool's embeddings, ``embed([document_text(d) for d in pool], embedder)``
            (float32, ``(len(pool), dim)``, L2-normalised), when already computed; else computed here.

    Returns:
        ``{item_id: [doc_id, ...]}`` in rank order (decreasing similarity).

    Raises:
        ValueError: ``k < 1``, an empty pool, or ``pool_vectors`` of the wrong length.
    """
    # deferred: faiss is loaded only by the jobs that rank distractors
    import faiss

    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    if not pool:
        raise ValueError("empty distractor pool")
    groups: dict[str, list[Mapping[str, Any]]] = {}
    for item in items:
        groups.setdefault(item["item_id"], []).append(item)
    if not groups:
        return {}
    if pool_vectors is None:
        pool_vectors = embed([document_text(doc) for doc in pool], embedder, batch_size)
    vectors = np.ascontiguousarray(pool_vectors, dtype=np.float32)
    if vectors.shape[0] != len(pool):
        raise ValueError(f"pool_vectors has {vectors.shape[0]} rows for {len(pool)} documents")
    index = faiss.IndexFlatIP(vectors.shape[1])
    index.add(vectors)
    queries = embed([group[0]["question"] for group in groups.values()], embedder, batch_size)
    by_id = {doc["doc_id"]: i for i, doc in enumerate(pool)}
    texts = [normalise(doc["text"]) for doc in pool]

    out: dict[str, list[str]] = {}
    for row, (item_id, group) in enumerate(groups.items()):
        skip, seen = _excluded(group, pool, by_id)
        depth = min(index.ntotal, k + len(skip) + 32)
        while True:
            _, ids = index.search(queries[row : row + 1], depth)
            chosen: list[str] = []
            taken = set(seen)
            for j in ids[0]:
                if j < 0 or j in skip or texts[j] in taken:
                    continue
                chosen.append(pool[j]["doc_id"])
                taken.add(texts[j])
                if len(chosen) == k:
                    break
            if len(chosen) == k or depth == index.ntotal:
                break
            depth = min(index.ntotal, depth * 2)
        out[item_id] = chosen
    return out


def pack_contexts(
    gold: Sequence[str],
    distractors: Sequence[str],
    budget_tokens: int | None,
    count_tokens: Callable[[str], int],
    position: str,
    rng: random.Random | None = None,
) -> list[str]:
    """The ordered input contexts of a *-Dist item: gold contexts placed among ranked distractors.

    Distractors are taken in rank order (most distracting first, paper App. D.5 / Fig. 4)
    while the token count of the gold contexts plus the distractors taken stays within
    ``budget_tokens``; the first distractor that does not fit ends the packing.  The gold
    contexts are always kept, and so is the top-ranked distractor (when there is one), even
    over the budget: a *-Dist input always holds at least one distractor, or it would be the
    Gold condition again.  ``budget_tokens=None`` takes every given distractor (e.g. all top-k).  Only the
    context texts are counted (``count_tokens(text)``, e.g. ``len(tokenizer(text).input_ids)``),
    not the separators or instructions of a prompt.

    Gold contexts keep their order and are placed (paper Sec. 4, "gold contexts position"):
    ``"start"`` before the distractors, ``"end"`` after them, ``"middle"`` after the first
    ``len(taken) // 2`` distractors, ``"random"`` each at an insertion point drawn uniformly
    from ``0..len(taken)`` with ``rng`` (points sorted, so the gold order stays).

    Returns:
        the context strings in prompt order.

    Raises:
        ValueError: an unknown ``position``, or ``"random"`` without ``rng``.
    """
    if position not in POSITIONS:
        raise ValueError(f"position must be one of {POSITIONS}, got {position!r}")
    if position == "random" and rng is None:
        raise ValueError("position 'random' needs an rng")
    total = sum(count_tokens(text) for text in gold)
    taken: list[str] = []
    for text in distractors:
        cost = count_tokens(text)
        if taken and budget_tokens is not None and total + cost > budget_tokens:
            break
        taken.append(text)
        total += cost
    if position == "start":
        return [*gold, *taken]
    if position == "end":
        return [*taken, *gold]
    if position == "middle":
        half = len(taken) // 2
        return [*taken[:half], *gold, *taken[half:]]
    points = sorted(rng.randint(0, len(taken)) for _ in gold)
    out: list[str] = []
    start = 0
    for point, text in zip(points, gold):
        out.extend(taken[start:point])
        out.append(text)
        start = point
    out.extend(taken[start:])
    return out

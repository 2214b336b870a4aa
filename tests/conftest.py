"""Shared fixtures: repository paths, the shipped corpus, and a tiny model built in the session."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
SHARED = ROOT.parent / "shared"


@pytest.fixture(scope="session")
def corpus():
    from knowlab.corpus.schema import read_corpus

    return read_corpus(ROOT / "data" / "fiction")


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory, corpus):
    """A 2-layer random Llama with a BPE tokenizer trained on the shipped fiction."""
    from knowlab.resources.models import build_tiny_model

    out = tmp_path_factory.mktemp("tiny") / "model"
    arch = {
        "vocab_size": 400,
        "hidden_size": 32,
        "intermediate_size": 64,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "max_position_embeddings": 512,
    }
    build_tiny_model([r["fiction"] for r in corpus["fictions"]], out, arch, seed=0)
    return out

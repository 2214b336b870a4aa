"""Base models and checkpoints: loadable folders, clear errors for missing files."""

import pytest

from knowlab.core.io import HashMismatchError
from knowlab.core.models import CheckpointError, check_model_dir, convert_gguf, load_model


def test_tiny_model_loads(tiny_model_dir):
    model, tok = load_model(tiny_model_dir)
    assert model.config.num_hidden_layers == 2
    assert tok("event").input_ids


@pytest.mark.parametrize("missing", ["config.json", "model.safetensors", "tokenizer.json"])
def test_checkpoint_folder_missing_a_file(tiny_model_dir, tmp_path, missing):
    import shutil

    broken = tmp_path / "step-10"
    shutil.copytree(tiny_model_dir, broken)
    (broken / missing).unlink()
    with pytest.raises(CheckpointError, match=f"{broken}.*{missing.split('.')[0]}"):
        check_model_dir(broken)


def test_missing_checkpoint_folder(tmp_path):
    with pytest.raises(CheckpointError, match="not found"):
        check_model_dir(tmp_path / "step-99")


def test_gguf_hash_is_checked_before_loading(tmp_path):
    fake = tmp_path / "SmolLM2-135M-Instruct.Q4_1.gguf"
    fake.write_bytes(b"GGUF but not the pinned file")
    with pytest.raises(HashMismatchError, match="SmolLM2-135M-Instruct.Q4_1.gguf"):
        convert_gguf(fake, "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53", tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_hub_loader_with_a_local_folder(tiny_model_dir, tmp_path):
    # the Hub path of prepare_base_model; offline, from_pretrained takes a local folder the same way
    from knowlab.core.models import prepare_base_model

    prepare_base_model({"source": "hub", "hub": {"id": str(tiny_model_dir), "revision": None}}, tmp_path / "m", seed=0)
    model, _ = load_model(tmp_path / "m")
    assert model.config.hidden_size == 32
    with pytest.raises(ValueError, match="model.source"):
        prepare_base_model({"source": "ftp"}, tmp_path / "x", seed=0)

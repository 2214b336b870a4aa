"""Backends of knowlab.core.llm.backends: replay of recorded responses, the backends' cache identities."""

import json
import shutil

import pytest

from knowlab.core.io import DataError
from knowlab.core.llm.backends import ReplayBackend, TransformersBackend, model_folder_sha256


def test_replay_rejects_a_failed_recording(tmp_path):
    (tmp_path / "batch_results").mkdir()
    line = {"custom_id": "event_000_style_news_num_000", "response": {"status_code": 500, "body": {}}, "error": None}
    (tmp_path / "batch_results" / "fictions.jsonl").write_text(json.dumps(line) + "\n")
    with pytest.raises(DataError, match=r"fictions\.jsonl:1: no response\.body\.choices\[0\]\.message\.content"):
        ReplayBackend(tmp_path)
    with pytest.raises(FileNotFoundError, match="replay folder has no batch_results/: .*/nowhere/batch_results"):
        ReplayBackend(tmp_path / "nowhere")


def _recording(folder, content):
    (folder / "batch_results").mkdir(parents=True, exist_ok=True)
    body = {"model": "gpt-4o", "choices": [{"message": {"content": content}, "finish_reason": "stop"}]}
    line = {"custom_id": "event_000_style_news_num_000", "response": {"status_code": 200, "body": body}}
    (folder / "batch_results" / "fictions.jsonl").write_text(json.dumps(line) + "\n")
    return ReplayBackend(folder)


def test_replay_identity_is_the_recording(tmp_path):
    first = _recording(tmp_path / "a", "A story.")
    assert set(first.cache_identity) == {"backend", "recording_sha256"} and first.cache_identity["backend"] == "replay"
    assert _recording(tmp_path / "b", "A story.").cache_identity == first.cache_identity  # same files, other folder
    assert _recording(tmp_path / "a", "Another story.").cache_identity != first.cache_identity


def test_model_folder_sha256(tmp_path):
    folder = tmp_path / "model"
    (folder / "optimizer_state").mkdir(parents=True)
    (folder / "config.json").write_text("{}")
    (folder / "model.safetensors").write_bytes(b"weights")
    digest = model_folder_sha256(folder)
    (folder / "optimizer_state" / "big.pt").write_bytes(b"x")  # subfolders are not part of it
    assert model_folder_sha256(folder) == digest and len(digest) == 64
    (folder / "model.safetensors").write_bytes(b"other weights")
    assert model_folder_sha256(folder) != digest
    with pytest.raises(FileNotFoundError, match="model folder not found: .*/nowhere"):
        model_folder_sha256(tmp_path / "nowhere")


def test_transformers_identity_is_the_model_folder(tiny_model_dir, tmp_path):
    backend = TransformersBackend(tiny_model_dir)
    assert backend.cache_identity == {
        "backend": "transformers",
        "model_sha256": model_folder_sha256(tiny_model_dir),
        "dtype": str(backend.model.dtype),
    }
    copy = tmp_path / "copy"
    shutil.copytree(tiny_model_dir, copy)
    assert model_folder_sha256(copy) == backend.cache_identity["model_sha256"]  # a copy is the same model
    config = json.loads((copy / "config.json").read_text())
    (copy / "config.json").write_text(json.dumps({**config, "rms_norm_eps": 1e-3}))
    assert model_folder_sha256(copy) != backend.cache_identity["model_sha256"]

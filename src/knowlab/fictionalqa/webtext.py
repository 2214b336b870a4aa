"""Webtext: real English paragraphs standing in for the paper's generic webtext mixture.

The FictionalQA runs mix fiction into a webtext stream (Kirchenbauer et al. 2026, Sec. 4: batches
are 95% webtext).  Offline, the stand-in is the English text that gensim 4.4.0
ships in its wheel as test data: a shortened Wikipedia dump (parsed with
``gensim.corpora.wikicorpus.extract_pages`` and ``filter_wiki``) and the Lee
news corpus (300 ABC news documents, one per line).  Paragraphs of at least
``min_words`` words are kept; a seeded shuffle holds out ``heldout_size`` of them
for the held-out webtext loss.
"""

from __future__ import annotations

import bz2
import logging
import random
import re
from pathlib import Path
from typing import Any

from knowlab.core.io import DataError, read_text, verify_sha256
from knowlab.fictionalqa.settings import WebtextSettings

log = logging.getLogger(__name__)

_QUOTE_MARKUP = re.compile(r"'{2,}")
_SPACES = re.compile(r"[ \t]+")


def wiki_paragraphs(path: str | Path, min_words: int) -> list[dict[str, Any]]:
    """Paragraphs of a MediaWiki XML dump (bz2) with at least ``min_words`` words.

    Returns records ``{"webtext_id": "wiki_<pageid>_<k>", "source": "wiki", "title", "text"}``.
    Redirect pages and list/table lines are skipped; bold/italic quote markup is removed.

    Raises:
        FileNotFoundError: no such file.
        DataError: the dump is not bz2 or not well-formed UTF-8 XML (naming the file, and the
            line and column the XML parser reports), or it yields no paragraph of ``min_words``
            words (an empty or foreign file).
    """
    # deferred: gensim only where webtext is built (the data env)
    from gensim.corpora.wikicorpus import extract_pages, filter_wiki

    try:
        records = _wiki_records(path, min_words, extract_pages, filter_wiki)
    except FileNotFoundError:
        raise
    except (OSError, EOFError, ValueError, SyntaxError) as err:  # bz2, and the XML parser (ParseError: line, column)
        raise DataError(f"{path}: not a bz2-compressed UTF-8 MediaWiki XML dump: {type(err).__name__}: {err}") from None
    if not records:
        raise DataError(f"{path}: no paragraph of at least {min_words} words (an empty dump, or not a MediaWiki dump)")
    return records


def _wiki_records(path, min_words, extract_pages, filter_wiki) -> list[dict[str, Any]]:
    """The paragraphs of :func:`wiki_paragraphs`, with gensim's two functions passed in."""
    records = []
    with bz2.open(path) as handle:
        for title, text, page_id in extract_pages(handle):
            if not text or text.lstrip().lower().startswith("#redirect"):
                continue
            k = 0
            for para in filter_wiki(text).split("\n"):
                para = _SPACES.sub(" ", _QUOTE_MARKUP.sub("", para)).strip()
                if para[:1] in "*#:;|!{" or len(para.split()) < min_words:
                    continue
                records.append({"webtext_id": f"wiki_{page_id}_{k}", "source": "wiki", "title": title, "text": para})
                k += 1
    return records


def lee_documents(path: str | Path, min_words: int) -> list[dict[str, Any]]:
    """Documents of the Lee news corpus (one per line) with at least ``min_words`` words.

    Returns records ``{"webtext_id": "lee_<line index>", "source": "lee", "title": "", "text"}``.

    Raises:
        DataError: a line is not UTF-8 (naming the file, line and byte offset), or the file
            holds no document of ``min_words`` words (an empty file).
    """
    records = []
    for i, line in enumerate(read_text(path, allow_empty=False).splitlines()):
        text = _SPACES.sub(" ", line).strip()
        if len(text.split()) >= min_words:
            records.append({"webtext_id": f"lee_{i}", "source": "lee", "title": "", "text": text})
    if not records:
        raise DataError(f"{path}: no document of at least {min_words} words")
    return records


def gensim_test_data() -> Path:
    """The ``gensim/test/test_data`` folder of the installed gensim wheel."""
    # deferred: gensim only where webtext is built (the data env)
    import gensim

    return Path(gensim.__file__).parent / "test" / "test_data"


def build_webtext(settings: WebtextSettings, seed: int):
    """Verify the pinned gensim files and split their paragraphs into train and held-out.

    ``settings.files`` maps ``wiki`` and ``lee`` to ``{"name": <file in gensim test_data>, "sha256": ...}``;
    paragraphs under ``settings.min_words`` words are dropped.  Returns ``(train, heldout)`` lists of
    records; the held-out slice is the first ``settings.heldout_size`` records of a
    ``random.Random(seed)`` shuffle.

    Raises:
        HashMismatchError: a file differs from its pin.
    """
    files, min_words, heldout_size = settings.files, settings.min_words, settings.heldout_size
    folder = gensim_test_data()
    records: list[dict[str, Any]] = []
    for kind, reader in (("wiki", wiki_paragraphs), ("lee", lee_documents)):
        path = folder / files[kind]["name"]
        verify_sha256(path, files[kind]["sha256"])
        part = reader(path, min_words)
        log.info("webtext: %d paragraphs of >= %d words from %s", len(part), min_words, path.name)
        records.extend(part)
    if heldout_size >= len(records):
        raise ValueError(f"webtext.heldout_size={heldout_size} leaves no training paragraphs (have {len(records)})")
    order = list(range(len(records)))
    random.Random(seed).shuffle(order)
    heldout_idx = set(order[:heldout_size])
    train = [r for i, r in enumerate(records) if i not in heldout_idx]
    heldout = [r for i, r in enumerate(records) if i in heldout_idx]
    return train, heldout

"""Book-SORT item construction: excerpts, distance-binned segment pairs, counterbalanced answers.

Source: Pink et al., "Assessing Episodic Memory in LLMs with Sequence Order Recall Tasks"
(Pink et al. 2024), Sec. 3 (formal task), Sec. 4.1 (Book-SORT creation) and App. A.2 / Table 4
(distance bins).  For every book and every combination of excerpt length L_E and
segment length L_S the paper samples 110 excerpts (100 test + 10 validation, used for
prompt selection), all starting at a sentence boundary; inside each excerpt it samples
one pair of non-overlapping L_S-word segments, each starting at a sentence boundary,
for each of 4 distance bins; and it counterbalances which label (A or B) the earlier
segment gets.  Lengths and distances are counted in words of the ``str.split()`` word
array (paper App. A).

Item schema (one dict per SORT trial, keys in this order, see :data:`ITEM_KEYS`):

- ``item_id`` (str): ``f"{book_id}|E{L_E}|S{L_S}|x{excerpt_index:03d}|b{bin}"``, stable;
- ``book_id``, ``title`` (str); ``excerpt_length`` = L_E, ``segment_length`` = L_S (words);
- ``excerpt_index`` (int, 0-based within the (book, L_E, L_S) cell); ``split``:
  ``"validation"`` for the first ``n_validation`` excerpts of a cell, else ``"test"``;
- ``excerpt_start`` (int, word offset in the book); ``excerpt`` (str, the excerpt's
  L_E words joined by single spaces);
- ``distance_bin`` (int, 0..3); ``distance`` (int, words) = ``second_start - first_start``;
- ``first_start`` < ``second_start`` (int, word offsets in the book of the segment that
  comes first / second in the text);
- ``segment_a``, ``segment_b`` (str, the L_S-word segments shown under labels A and B);
- ``answer`` (``"A"`` or ``"B"``): the label of the segment that appears first.

:func:`items_from_documents` adds ``document_id`` (= ``book_id``).  Items loaded from the
released data (:func:`knowlab.sort.release.load_booksort_release`) have the same keys.
"""

from __future__ import annotations

import logging
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from knowlab.core.io import DataError
from knowlab.core.rng import keyed_rng
from knowlab.sort.books import Book
from knowlab.sort.settings import BIN_RULES

log = logging.getLogger(__name__)

ITEM_KEYS = (
    "item_id",
    "book_id",
    "title",
    "excerpt_length",
    "segment_length",
    "excerpt_index",
    "split",
    "excerpt_start",
    "excerpt",
    "distance_bin",
    "distance",
    "first_start",
    "second_start",
    "segment_a",
    "segment_b",
    "answer",
)
DOCUMENT_KEYS = (*ITEM_KEYS, "document_id")
LABELS = ("A", "B")
SPLITS = ("validation", "test")
N_BINS = 4
# The released code switches from the standard to the extended bin row at L_E = 5000.
RELEASE_EXTENDED_FROM = 5000


def excerpt_id(item_id: str) -> str:
    """The excerpt of a SORT item: its ``item_id`` without the distance bin
    (``"macbeth|E120|S10|x001|b0"`` -> ``"macbeth|E120|S10|x001"``).  The items of one excerpt
    share its text, and their segments may overlap, so the excerpt is the unit that SORT's findings
    test at.

    Raises:
        ValueError: an id not of the form ``<book>|E<L_E>|S<L_S>|x<k>|b<bin>``.
    """
    head, _, tail = item_id.rpartition("|")
    if not head or not tail.startswith("b") or head.count("|") < 3:
        raise ValueError(f"not a SORT item id (<book>|E<L_E>|S<L_S>|x<k>|b<bin>): {item_id!r}")
    return head


# ----------------------------------------------------------------------------- distance bins


def release_right_edges(excerpt_length: int) -> list[int]:
    """Uncapped right edges of the 4 bins as the released Book-SORT data labels them (words).

    ``[L_E//4, L_E//3, L_E//2, 4*L_E//5]`` for L_E < 5000 and ``[1000, L_E//4, L_E//2,
    4*L_E//5]`` otherwise, e.g. ``[62, 83, 125, 200]`` for L_E = 250 (the values in the
    release's ``distance_bin`` column).  See :func:`distance_bins`.
    """
    if excerpt_length < RELEASE_EXTENDED_FROM:
        return [excerpt_length // 4, excerpt_length // 3, excerpt_length // 2, 4 * excerpt_length // 5]
    return [1000, excerpt_length // 4, excerpt_length // 2, 4 * excerpt_length // 5]


def distance_bins(excerpt_length: int, segment_length: int, *, rule: str = "release") -> list[tuple[int, int]]:
    """The 4 segment-distance bins of Book-SORT as half-open word intervals ``[left, right)``.

    Paper App. A.2 / Table 4: distance = start of the second segment minus start of the
    first (words); the minimum distance is L_S (adjacent, non-overlapping segments);
    bin k spans from the previous bin's right edge (bin 0 from L_S) to its own right
    edge.  Right edges:

    ============  =======  ======  ======  =========
    row           Bin0     Bin1    Bin2    Bin3
    L_E <= 2500   L_E/4    L_E/3   L_E/2   L_E/0.8
    L_E >= 10000  1000     L_E/4   L_E/2   L_E/0.8
    ============  =======  ======  ======  =========

    Bin 3 read literally (L_E/0.8 = 1.25 L_E) exceeds the excerpt, in which both segments
    must lie.  Two readings are offered:

    - ``rule="release"`` (default): what the released data does.  Its generator uses
      ``int(L_E // 1.25)`` = 0.8 L_E as bin 3's right edge (the release's bin-3 label for
      L_E = 250 is 200, and its distances stay below it), which also matches the paper's
      "distance between segments (up to 16k words)" for L_E = 20000 (Sec. 1).  It
      switches to the extended row at L_E >= 5000, so every L_E has bins (the paper's
      grid, 250..2500 and 10000..20000, is unaffected).  Edges are floored to integers:
      ``[L_E//4, L_E//3, L_E//2, 4*L_E//5]`` or ``[1000, L_E//4, L_E//2, 4*L_E//5]``.
    - ``rule="table"``: Table 4 literally, bin 3's right edge ``floor(L_E/0.8)``; lengths
      2500 < L_E < 10000 are outside the table and raise ``ValueError``.

    Under both rules every right edge is then capped at ``L_E - L_S + 1``: the second
    segment must end inside the excerpt, so the largest possible distance is
    ``L_E - L_S`` (inclusive).  With the literal table this cap always binds bin 3.

    Args:
        excerpt_length: L_E in words.
        segment_length: L_S in words.
        rule: ``"release"`` or ``"table"``.

    Returns:
        4 ``(left, right)`` tuples of ints, ``left < right``; bin k holds distances d
        with ``left <= d < right``.

    Raises:
        ValueError: non-positive lengths, ``segment_length >= excerpt_length``, an
            unknown rule, L_E between 2500 and 10000 under ``"table"``, or an empty bin
            (L_S too large for L_E); the message names both lengths.
    """
    le, ls = int(excerpt_length), int(segment_length)
    if le <= 0 or ls <= 0:
        raise ValueError(f"excerpt length ({le}) and segment length ({ls}) must be positive")
    if ls >= le:
        raise ValueError(f"segment length ({ls}) must be smaller than excerpt length ({le})")
    if rule == "release":
        rights = release_right_edges(le)
    elif rule == "table":
        if le <= 2500:
            rights = [le // 4, le // 3, le // 2, 5 * le // 4]
        elif le >= 10000:
            rights = [1000, le // 4, le // 2, 5 * le // 4]
        else:
            raise ValueError(
                f"excerpt length {le} (segment length {ls}) lies between the two rows of the paper's Table 4 "
                "(L_E <= 2500 and L_E >= 10000); use rule='release' or an excerpt length in those ranges"
            )
    else:
        raise ValueError(f"unknown distance-bin rule {rule!r}; expected one of {BIN_RULES}")
    cap = le - ls + 1
    rights = [min(r, cap) for r in rights]
    lefts = [ls, *rights[:-1]]
    bins = list(zip(lefts, rights, strict=True))
    empty = [k for k, (lo, hi) in enumerate(bins) if lo >= hi]
    if empty:
        raise ValueError(
            f"distance bins {empty} are empty for excerpt length {le} and segment length {ls} "
            f"(bins {bins}): the segment length is too large for this excerpt length"
        )
    return bins


# ----------------------------------------------------------------------------- sentences

_CLOSERS = "\"'\u2019\u201d)]\u00bb_*"
_OPENERS = "\"'\u201c\u2018\u00ab([_*"
_SENTENCE_END_RE = re.compile(rf"[.!?][{re.escape(_CLOSERS)}]*$")
_INITIAL_RE = re.compile(r"^[A-Z]\.$")
ABBREVIATIONS = frozenset(
    [
        "mr.",
        "mrs.",
        "ms.",
        "messrs.",
        "mme.",
        "mlle.",
        "dr.",
        "prof.",
        "rev.",
        "st.",
        "mt.",
        "jr.",
        "sr.",
        "capt.",
        "col.",
        "gen.",
        "lt.",
        "sgt.",
        "gov.",
        "hon.",
        "vs.",
        "e.g.",
        "i.e.",
        "cf.",
        "viz.",
        "vol.",
        "pp.",
        "ch.",
    ]
)


def _ends_sentence(word: str) -> bool:
    if not _SENTENCE_END_RE.search(word):
        return False
    core = word.lstrip(_OPENERS).rstrip(_CLOSERS)
    if core.lower() in ABBREVIATIONS:
        return False
    return not (_INITIAL_RE.match(core) and core != "I.")


def _begins_sentence(word: str) -> bool:
    first = word[:1]
    return bool(first) and (first.isupper() or first.isdigit() or first in _OPENERS)


def sentence_starts(words: Sequence[str]) -> np.ndarray:
    """Word indices that begin a sentence (SORT samples excerpts and segments only there).

    Paper Sec. 4.1: "All excerpts and segments began at a sentence boundary"; the paper
    does not define a boundary, so this rule is used.  Index 0 always starts a sentence;
    index ``i > 0`` does when

    - word ``i-1`` ends a sentence: its last character other than closing quotes,
      brackets and emphasis marks (``" ' ’ ” ) ] » _ *``) is ``.``, ``!`` or ``?``, and
      it is not an abbreviation: ``Mr. Mrs. Ms. Messrs. Mme. Mlle. Dr. Prof. Rev. St.
      Mt. Jr. Sr. Capt. Col. Gen. Lt. Sgt. Gov. Hon. vs. e.g. i.e. cf. viz. vol. pp.
      ch.`` (any case, after stripping opening quotes) or a single upper-case initial
      such as ``M.`` or ``J.`` (``I.`` does end a sentence); and
    - word ``i`` begins with an upper-case letter, a digit, or an opening quote, bracket
      or emphasis mark (``" ' “ ‘ « ( [ _ *``).

    In plays the speaker label (``Ber.``) counts as a sentence, so each speech starts a
    sentence.

    Args:
        words: the book's word array.

    Returns:
        Sorted int64 array of indices (empty for an empty array).
    """
    n = len(words)
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    starts = [0]
    previous_ends = _ends_sentence(words[0])
    for i in range(1, n):
        word = words[i]
        if previous_ends and _begins_sentence(word):
            starts.append(i)
        previous_ends = _ends_sentence(word)
    return np.asarray(starts, dtype=np.int64)


# ----------------------------------------------------------------------------- sampling


def _balanced_labels(n_excerpts: int, n_validation: int, rng) -> list[str]:
    """Answer labels for one (book, L_E, L_S, bin) cell: A/B counts differ by <= 1 per split and overall."""
    n_test = n_excerpts - n_validation
    validation = [LABELS[0], LABELS[1]] * (n_validation // 2)
    test = [LABELS[0], LABELS[1]] * (n_test // 2)
    extra = None
    if n_validation % 2:
        extra = rng.choice(LABELS)
        validation.append(extra)
    if n_test % 2:
        test.append(rng.choice(LABELS) if extra is None else LABELS[1 - LABELS.index(extra)])
    rng.shuffle(validation)
    rng.shuffle(test)
    return validation + test


def _pair_options(rel: np.ndarray, bins: Sequence[tuple[int, int]]) -> list[tuple[np.ndarray, np.ndarray]] | None:
    """For each bin, (first index of a valid partner, number of partners) per candidate start; None if a bin
    is empty."""
    options = []
    for lo, hi in bins:
        j0 = np.searchsorted(rel, rel + lo, side="left")
        counts = np.searchsorted(rel, rel + hi, side="left") - j0
        if int(counts.sum()) == 0:
            return None
        options.append((j0, counts))
    return options


def _draw_pair(rel: np.ndarray, j0: np.ndarray, counts: np.ndarray, rng) -> tuple[int, int]:
    """One pair drawn uniformly among all valid (first, second) start pairs of a bin."""
    cumulative = np.cumsum(counts)
    r = rng.randrange(int(cumulative[-1]))
    i = int(np.searchsorted(cumulative, r, side="right"))
    offset = r - int(cumulative[i] - counts[i])
    return int(rel[i]), int(rel[j0[i] + offset])


def _build_cell(
    book: Book,
    starts: np.ndarray,
    excerpt_length: int,
    segment_length: int,
    bins: list[tuple[int, int]],
    n_excerpts: int,
    n_validation: int,
    seed: int,
    max_attempts: int,
) -> tuple[list[dict[str, Any]] | None, str]:
    """Items of one (book, L_E, L_S) cell, or ``(None, reason)`` when the book cannot supply them."""
    words = book.words
    le, ls = excerpt_length, segment_length
    candidates = starts[starts + le <= len(words)].tolist()
    if len(candidates) < n_excerpts:
        return None, (
            f"only {len(candidates)} sentence starts leave room for a {le}-word excerpt in {len(words)} words "
            f"(need {n_excerpts} distinct excerpts)"
        )
    excerpt_rng = keyed_rng(seed, "sort-excerpts", book.book_id, le, ls)
    excerpt_rng.shuffle(candidates)
    accepted: list[tuple[int, np.ndarray, list]] = []
    tried = 0
    for start in candidates[:max_attempts]:
        tried += 1
        lo = int(np.searchsorted(starts, start, side="left"))
        hi = int(np.searchsorted(starts, start + le - ls, side="right"))
        rel = starts[lo:hi] - start
        options = _pair_options(rel, bins)
        if options is not None:
            accepted.append((start, rel, options))
            if len(accepted) == n_excerpts:
                break
    if len(accepted) < n_excerpts:
        return None, (
            f"found {len(accepted)} of {n_excerpts} excerpts with a valid segment pair in every distance bin "
            f"{bins} after {tried} sampled excerpt starts (limit {max_attempts}); sentence starts are too sparse "
            "for these bins"
        )
    pair_rng = keyed_rng(seed, "sort-pairs", book.book_id, le, ls)
    labels = [
        _balanced_labels(n_excerpts, n_validation, keyed_rng(seed, "sort-labels", book.book_id, le, ls, b))
        for b in range(len(bins))
    ]
    items = []
    for k, (start, rel, options) in enumerate(accepted):
        excerpt = " ".join(words[start : start + le])
        split = SPLITS[0] if k < n_validation else SPLITS[1]
        for b, (j0, counts) in enumerate(options):
            p1, p2 = _draw_pair(rel, j0, counts, pair_rng)
            first, second = start + p1, start + p2
            first_text = " ".join(words[first : first + ls])
            second_text = " ".join(words[second : second + ls])
            answer = labels[b][k]
            items.append(
                {
                    "item_id": f"{book.book_id}|E{le}|S{ls}|x{k:03d}|b{b}",
                    "book_id": book.book_id,
                    "title": book.title,
                    "excerpt_length": le,
                    "segment_length": ls,
                    "excerpt_index": k,
                    "split": split,
                    "excerpt_start": start,
                    "excerpt": excerpt,
                    "distance_bin": b,
                    "distance": second - first,
                    "first_start": first,
                    "second_start": second,
                    "segment_a": first_text if answer == "A" else second_text,
                    "segment_b": second_text if answer == "A" else first_text,
                    "answer": answer,
                }
            )
    return items, ""


def _check_counts(n_excerpts: int, n_validation: int) -> None:
    if int(n_excerpts) < 1:
        raise ValueError(f"n_excerpts must be at least 1, got {n_excerpts}")
    if not 0 <= int(n_validation) <= int(n_excerpts):
        raise ValueError(f"n_validation must lie in [0, n_excerpts={n_excerpts}], got {n_validation}")


def _build(
    books: Sequence[Book],
    excerpt_lengths: Sequence[int],
    segment_lengths: Sequence[int],
    n_excerpts: int,
    n_validation: int,
    seed: int,
    bin_rule: str,
    max_attempts: int | None,
    on_shortfall: str,
    skipped: list[dict[str, Any]],
) -> list[dict[str, Any]]:
    _check_counts(n_excerpts, n_validation)
    if on_shortfall not in ("raise", "skip"):
        raise ValueError(f"on_shortfall must be 'raise' or 'skip', got {on_shortfall!r}")
    if not books:
        raise ValueError("no books given")
    if not excerpt_lengths or not segment_lengths:
        raise ValueError("excerpt_lengths and segment_lengths must be non-empty")
    ids = [b.book_id for b in books]
    duplicates = sorted({i for i in ids if ids.count(i) > 1})
    if duplicates:
        raise ValueError(f"duplicate book ids {duplicates}")
    cells = {
        (int(le), int(ls)): distance_bins(le, ls, rule=bin_rule) for le in excerpt_lengths for ls in segment_lengths
    }
    attempts = int(max_attempts) if max_attempts is not None else 20 * int(n_excerpts)
    items: list[dict[str, Any]] = []
    for book in books:
        starts = sentence_starts(book.words)
        for (le, ls), bins in cells.items():
            if len(book.words) < le:
                reason = f"text too short: {len(book.words)} words < excerpt length {le}"
            else:
                built, reason = _build_cell(
                    book, starts, le, ls, bins, int(n_excerpts), int(n_validation), seed, attempts
                )
                if built is not None:
                    items.extend(built)
                    continue
                if on_shortfall == "raise":
                    raise DataError(f"book {book.book_id!r}, excerpt length {le}, segment length {ls}: {reason}")
            skipped.append({"book_id": book.book_id, "excerpt_length": le, "segment_length": ls, "reason": reason})
    if not items:
        longest = max(len(b.words) for b in books)
        raise DataError(
            f"text too short for any excerpt: {len(books)} text(s) of at most {longest} words gave no items for "
            f"excerpt lengths {sorted({le for le, _ in cells})} and segment lengths {sorted({ls for _, ls in cells})}"
        )
    return items


def build_items(
    books: Sequence[Book],
    excerpt_lengths: Sequence[int],
    segment_lengths: Sequence[int],
    n_excerpts: int = 110,
    n_validation: int = 10,
    seed: int = 0,
    *,
    bin_rule: str = "release",
    max_attempts: int | None = None,
    on_shortfall: str = "raise",
    skipped: list[dict[str, Any]] | None = None,
) -> list[dict[str, Any]]:
    """Build Book-SORT items for every book x excerpt length x segment length (paper Sec. 4.1).

    For each (book, L_E, L_S) cell: the candidate excerpt starts are the book's
    :func:`sentence_starts` ``s`` with ``s + L_E <= len(words)``; they are shuffled
    (without replacement) and taken in turn, and an excerpt is accepted when every one
    of the 4 :func:`distance_bins` holds at least one valid pair; the first
    ``n_excerpts`` accepted excerpts get ``excerpt_index`` 0, 1, ... in that order.  A
    valid pair is two sentence starts ``first < second`` inside the excerpt with
    ``second + L_S <= excerpt_start + L_E`` (both segments inside the excerpt) and
    ``second - first`` in the bin (at least L_S, so the segments never overlap); for
    each excerpt and bin one pair is drawn uniformly among all valid pairs.  Excerpts
    are resampled at most ``max_attempts`` times per cell; then the cell fails.

    Answers are counterbalanced (Sec. 4.1): within each (book, L_E, L_S, bin) cell a
    balanced list of labels (A/B counts differing by at most 1 within the validation
    excerpts, within the test excerpts and overall) is permuted and assigned to the
    excerpts; label A goes to the earlier segment when the answer is A.  The first
    ``n_validation`` excerpts of a cell form the validation split (paper: 10 of 110,
    used for prompt selection), the rest the test split.

    Randomness: ``knowlab.core.rng.keyed_rng(seed, <purpose>, book_id, L_E, L_S[, bin])``
    streams, so a book's items do not change when other books, lengths or cells are
    added; the same inputs always give identical items.

    Args:
        books: the texts (unique ``book_id``).
        excerpt_lengths: L_E values in words (paper: 250, 1000, 2500, 10000, 20000).
        segment_lengths: L_S values in words (paper: 20, 50).
        n_excerpts: excerpts per cell (paper: 110).
        n_validation: how many of them are validation (paper: 10).
        seed: the base seed.
        bin_rule: ``"release"`` or ``"table"`` (see :func:`distance_bins`).
        max_attempts: excerpt starts tried per cell before giving up (default
            ``20 * n_excerpts``).
        on_shortfall: ``"raise"`` (default) fails when a long-enough book cannot supply
            ``n_excerpts`` valid excerpts; ``"skip"`` skips that cell like a short book.
        skipped: if given, a record ``{book_id, excerpt_length, segment_length, reason}``
            is appended for every skipped cell.

    Returns:
        Items with the keys of :data:`ITEM_KEYS` (module docstring), ordered by book (input
        order), L_E, L_S (input order), excerpt_index, distance_bin.  A cell yields
        ``4 * n_excerpts`` items.

    Raises:
        ValueError: bad counts or lengths (see :func:`distance_bins`), duplicate book ids.
        DataError: a cell cannot be filled (with ``on_shortfall="raise"``; the message
            names the book, both lengths and the reason), or no book is long enough for
            any excerpt ("text too short for any excerpt", naming the lengths).

    Books shorter than an excerpt length are skipped for that length with a logged
    warning (``logging.getLogger("knowlab.sort.build")``).
    """
    records: list[dict[str, Any]] = []
    items = _build(
        list(books),
        excerpt_lengths,
        segment_lengths,
        n_excerpts,
        n_validation,
        seed,
        bin_rule,
        max_attempts,
        on_shortfall,
        records,
    )
    for record in records:
        log.warning(
            "skipping book %s for excerpt length %d, segment length %d: %s",
            record["book_id"],
            record["excerpt_length"],
            record["segment_length"],
            record["reason"],
        )
    if skipped is not None:
        skipped.extend(records)
    return items


def documents_as_books(
    documents: Iterable[Mapping[str, Any]], text_key: str, id_key: str, title_key: str | None = None
) -> list[Book]:
    """Wrap short documents as :class:`Book` objects (words = ``text.split()``; no heading removal).

    Args:
        documents: records holding the text, an id and optionally a title.
        text_key, id_key: field names of the text and the id (e.g. ``"fiction"`` and
            ``"fiction_id"`` in ``data/fiction/fictions.jsonl``).
        title_key: field name of the title; ``None`` uses the id as the title.

    Raises:
        DataError: a missing or non-string field, an empty text, or a duplicate id
            (the message gives the 0-based document index).
    """
    books, seen = [], set()
    for i, doc in enumerate(documents):
        keys = [text_key, id_key] + ([title_key] if title_key else [])
        for key in keys:
            if key not in doc:
                raise DataError(f"document {i}: missing field {key!r}")
        text = doc[text_key]
        if not isinstance(text, str) or not text.split():
            raise DataError(f"document {i}: field {text_key!r} must be a non-empty string")
        doc_id = str(doc[id_key])
        if doc_id in seen:
            raise DataError(f"document {i}: duplicate id {doc_id!r}")
        seen.add(doc_id)
        title = str(doc[title_key]) if title_key else doc_id
        books.append(Book(book_id=doc_id, title=title, words=text.split()))
    return books


def items_from_documents(
    documents: Iterable[Mapping[str, Any]],
    text_key: str,
    id_key: str,
    title_key: str | None,
    excerpt_lengths: Sequence[int],
    segment_lengths: Sequence[int],
    n_excerpts: int,
    seed: int,
    *,
    n_validation: int = 0,
    bin_rule: str = "release",
    max_attempts: int | None = None,
) -> list[dict[str, Any]]:
    """SORT items from short documents (e.g. FictionalQA fiction documents of a few hundred words).

    Each document is a "book" (:func:`documents_as_books`) and goes through the
    :func:`build_items` procedure with the same distance-bin rule (for small L_E, the
    paper's L_E <= 2500 row).  With excerpts nearly as long as the document only a few
    distinct excerpt starts exist, so a document is skipped for a (L_E, L_S) cell when
    it is shorter than L_E or cannot supply ``n_excerpts`` distinct excerpts with a
    valid pair in every bin; the numbers of skipped documents are logged (warning) per
    cell.  Items carry an extra key ``document_id`` (= ``book_id``).

    Args:
        documents, text_key, id_key, title_key: see :func:`documents_as_books`.
        excerpt_lengths: L_E values in words (e.g. 100-200).
        segment_lengths: L_S values in words (e.g. 10-20).
        n_excerpts: excerpts per document and cell.
        seed: the base seed.
        n_validation: excerpts per document and cell assigned to the validation split.
        bin_rule, max_attempts: as in :func:`build_items`.

    Returns:
        Items with the keys of :data:`DOCUMENT_KEYS`.

    Raises:
        DataError: malformed documents, or no document gives any item ("text too short
            for any excerpt").
        ValueError: bad lengths or counts.
    """
    books = documents_as_books(documents, text_key, id_key, title_key)
    records: list[dict[str, Any]] = []
    items = _build(
        books,
        excerpt_lengths,
        segment_lengths,
        n_excerpts,
        n_validation,
        seed,
        bin_rule,
        max_attempts,
        "skip",
        records,
    )
    by_cell: dict[tuple[int, int], Counter] = {}
    for record in records:
        kind = "shorter than the excerpt" if record["reason"].startswith("text too short") else "too few valid excerpts"
        by_cell.setdefault((record["excerpt_length"], record["segment_length"]), Counter())[kind] += 1
    for (le, ls), counts in by_cell.items():
        log.warning(
            "excerpt length %d, segment length %d: skipped %d of %d documents (%s)",
            le,
            ls,
            sum(counts.values()),
            len(books),
            ", ".join(f"{n} {kind}" for kind, n in sorted(counts.items())),
        )
    for item in items:
        item["document_id"] = item["book_id"]
    return items


# ----------------------------------------------------------------------------- checking


def check_items(
    items: Iterable[Mapping[str, Any]],
    books: Iterable[Book] | Mapping[str, Book],
    *,
    bin_rule: str = "release",
) -> None:
    """Verify the invariants of built items against their books; raise on the first violation.

    Checked per item: the keys are those of :data:`ITEM_KEYS` (plus ``document_id`` equal
    to ``book_id``, if present; order not checked); ``item_id`` is unique and matches its fields; ``split`` and
    ``answer`` are valid; the book exists and the title matches; the excerpt starts at a
    sentence start, fits in the book and its text equals the book's words; both
    segments start at sentence starts, do not overlap (``second_start - first_start >=
    L_S``), lie inside the excerpt, and their texts under A/B equal the book's words in
    the order given by ``answer``; ``distance`` equals ``second_start - first_start`` and
    lies in its :func:`distance_bins` bin.  Per (book, L_E, L_S, bin) cell, and per
    cell and split, the A and B answer counts differ by at most 1.

    Args:
        items: built items.
        books: the books they were built from (a sequence or an id -> book mapping).
        bin_rule: the rule the items were built with.

    Raises:
        ValueError: a violated invariant; the message names the ``item_id`` (or the cell).
    """
    book_map = dict(books) if isinstance(books, Mapping) else {b.book_id: b for b in books}
    starts_cache: dict[str, set[int]] = {}
    bins_cache: dict[tuple[int, int], list[tuple[int, int]]] = {}
    seen: set[str] = set()
    balance: Counter = Counter()
    for item in items:
        item_id = item.get("item_id")
        keys = set(item)
        if keys not in (set(ITEM_KEYS), set(DOCUMENT_KEYS)):
            raise ValueError(f"item {item_id}: keys {sorted(keys)} differ from the item schema {list(ITEM_KEYS)}")
        if "document_id" in item and item["document_id"] != item["book_id"]:
            raise ValueError(f"item {item_id}: document_id {item['document_id']!r} != book_id {item['book_id']!r}")
        if item_id in seen:
            raise ValueError(f"item {item_id}: duplicate item_id")
        seen.add(item_id)
        book_id, le, ls = item["book_id"], int(item["excerpt_length"]), int(item["segment_length"])
        b, k = int(item["distance_bin"]), int(item["excerpt_index"])
        expected_id = f"{book_id}|E{le}|S{ls}|x{k:03d}|b{b}"
        if item_id != expected_id:
            raise ValueError(f"item {item_id}: item_id does not match its fields (expected {expected_id})")
        if item["split"] not in SPLITS:
            raise ValueError(f"item {item_id}: split {item['split']!r} not in {SPLITS}")
        if item["answer"] not in LABELS:
            raise ValueError(f"item {item_id}: answer {item['answer']!r} not in {LABELS}")
        book = book_map.get(book_id)
        if book is None:
            raise ValueError(f"item {item_id}: unknown book {book_id!r}")
        if item["title"] != book.title:
            raise ValueError(f"item {item_id}: title {item['title']!r} differs from the book's {book.title!r}")
        words = book.words
        if book_id not in starts_cache:
            starts_cache[book_id] = set(sentence_starts(words).tolist())
        starts = starts_cache[book_id]
        if (le, ls) not in bins_cache:
            bins_cache[(le, ls)] = distance_bins(le, ls, rule=bin_rule)
        bins = bins_cache[(le, ls)]
        es, first, second = item["excerpt_start"], item["first_start"], item["second_start"]
        if not isinstance(es, (int, np.integer)) or es < 0 or es + le > len(words):
            raise ValueError(f"item {item_id}: excerpt [{es}, {es}+{le}) does not fit in the book ({len(words)} words)")
        if es not in starts:
            raise ValueError(f"item {item_id}: excerpt_start {es} is not at a sentence start")
        if item["excerpt"] != " ".join(words[es : es + le]):
            raise ValueError(f"item {item_id}: excerpt text differs from the book's words at {es}")
        if not first < second:
            raise ValueError(f"item {item_id}: first_start {first} is not before second_start {second}")
        if second - first < ls:
            raise ValueError(f"item {item_id}: segments overlap (distance {second - first} < segment length {ls})")
        if first < es or second + ls > es + le:
            raise ValueError(f"item {item_id}: a segment lies outside the excerpt [{es}, {es + le})")
        for pos, name in ((first, "first"), (second, "second")):
            if pos not in starts:
                raise ValueError(f"item {item_id}: {name} segment at {pos} is not at a sentence start")
        if item["distance"] != second - first:
            raise ValueError(f"item {item_id}: distance {item['distance']} != second_start - first_start")
        if not 0 <= b < len(bins):
            raise ValueError(f"item {item_id}: distance_bin {b} outside 0..{len(bins) - 1}")
        lo, hi = bins[b]
        if not lo <= item["distance"] < hi:
            raise ValueError(f"item {item_id}: distance {item['distance']} outside bin {b} [{lo}, {hi})")
        first_text = " ".join(words[first : first + ls])
        second_text = " ".join(words[second : second + ls])
        shown = (first_text, second_text) if item["answer"] == "A" else (second_text, first_text)
        if (item["segment_a"], item["segment_b"]) != shown:
            raise ValueError(f"item {item_id}: segment texts do not match the book in the order implied by answer")
        balance[(book_id, le, ls, b, None, item["answer"])] += 1
        balance[(book_id, le, ls, b, item["split"], item["answer"])] += 1
    cells = {key[:5] for key in balance}
    for cell in sorted(cells, key=str):
        n_a, n_b = balance[(*cell, "A")], balance[(*cell, "B")]
        if abs(n_a - n_b) > 1:
            where = "overall" if cell[4] is None else f"split {cell[4]}"
            raise ValueError(
                f"answers unbalanced in cell book={cell[0]} L_E={cell[1]} L_S={cell[2]} bin={cell[3]} ({where}): "
                f"{n_a} A vs {n_b} B"
            )

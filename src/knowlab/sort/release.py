"""The released Book-SORT data (Hub id ``memari/booksort``, or local files in the same layout) as SORT items.

Source: Pink et al., "Assessing Episodic Memory in LLMs with Sequence Order Recall Tasks"
(Pink et al. 2024), Sec. 4.1 and App. A.2; the release format is described in
:func:`load_booksort_release`, which maps it to the item schema of :mod:`knowlab.sort.build`
(:data:`knowlab.sort.build.ITEM_KEYS`; distance bins by
:func:`knowlab.sort.build.release_right_edges`).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from knowlab.core.io import DataError
from knowlab.core.models import hub_error, pinned_hub_id
from knowlab.sort.build import release_right_edges

BOOKSORT_HUB_ID = "memari/booksort"
#: books of Book-SORT (Pink et al. 2024, Sec. 4.1: nine books from Project Gutenberg, published after the models' training)
BOOKSORT_BOOKS = 9


def _unwrap(text: Any) -> str:
    """Normalise a released text cell: trim, drop one ``*...*`` wrapper, single-space the words."""
    value = str(text).strip()
    if len(value) >= 2 and value.startswith("*") and value.endswith("*"):
        value = value[1:-1]
    return " ".join(value.split())


def _first(row: Mapping[str, Any], *keys: str, default: Any = None) -> Any:
    for key in keys:
        if key in row and row[key] is not None:
            return row[key]
    return default


def _read_csv_triplets(folder: Path) -> list[tuple[str | None, dict[str, Any]]]:
    """Merge the GitHub release layout ``{books,excerpts,segments}_<LE>-s<LS>-n<N>.csv`` into rows."""
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
    path_or_hub_id: str | os.PathLike, config: str | None, cache_dir: str | None, revision: str | None = None
) -> list[tuple[str | None, dict[str, Any]]]:
    path = Path(path_or_hub_id)
    if path.is_dir() and any(path.glob("segments_*.csv")):
        return _read_csv_triplets(path)
    # deferred: the datasets library only when the config names the release (a Hub id or its files)
    import datasets

    if path.is_file():
        builder = {".parquet": "parquet", ".json": "json", ".jsonl": "json", ".csv": "csv"}.get(path.suffix.lower())
        if builder is None:
            raise DataError(f"{path}: unsupported Book-SORT file type (expected .parquet, .json, .jsonl or .csv)")
        loaded = datasets.load_dataset(builder, data_files=str(path), cache_dir=cache_dir)
    elif path.exists():
        loaded = datasets.load_dataset(str(path), cache_dir=cache_dir)
    else:
        key = "sort.release.path"
        hub_id, revision = pinned_hub_id(str(path_or_hub_id), revision, key)
        try:
            loaded = datasets.load_dataset(hub_id, config, cache_dir=cache_dir, revision=revision)
        except OSError as err:  # connection errors and "dataset not found" are OSErrors
            raise hub_error(key, hub_id, revision, err) from err
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
    revision: str | None = None,
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

    Accepted inputs: a Hub id (default ``memari/booksort``, config ``config``), pinned to a
    commit as ``"memari/booksort@<commit>"`` (config ``sort.release.path``) or by ``revision``;
    an unpinned id is a WARNING in the rule log and a manifest note
    (:func:`knowlab.core.models.note_hub_revision`); a local
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
        revision: Hub revision (a commit sha) when not given as ``<id>@<revision>``.

    Returns:
        Items sorted by ``item_id``, each with exactly the keys of
        :data:`knowlab.sort.build.ITEM_KEYS`.

    Raises:
        DataError: a required column is missing, a row fails verification, an
            ``item_id`` repeats, or the input holds no rows (messages name the row).
        knowlab.core.models.HubUnreachableError: the Hub could not be reached, or has no such
            dataset or revision (names ``sort.release.path`` and the id).
    """
    rows = _read_release_rows(path_or_hub_id, config, cache_dir, revision)
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
        edges = release_right_edges(cell[0])
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

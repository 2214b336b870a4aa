"""A probe at every fine-tuning checkpoint: the rows of a study's items across a run's checkpoints
(the base model as step 0) and the side of each item (did the run train on its document?).

FictionalQA evaluates its own suites this way; SORT on the FictionalQA documents
(:mod:`knowlab.sort.steps.stats`) and grounding across fine-tuning (:mod:`knowlab.grounding.steps.stats`)
probe the same checkpoints with their own items, so the probe lives here, below every study.
A run's split is a mapping with ``train_documents`` (document ids), and ``documents: fictsheets`` for a
split over events' fictsheets (the JSON of :func:`knowlab.fiction.splits.make_split`; the runs' display
names are :func:`knowlab.fiction.splits.run_name`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import pandas as pd

from knowlab.core.checkpoints import step0_rows


def with_sides(rows: pd.DataFrame, splits: Mapping[str, Mapping[str, Any]], events: Mapping[str, str]) -> pd.DataFrame:
    """Add ``side``: ``train`` if the run trained on the item's document, else ``val``.

    ``splits`` maps run name -> split (:func:`knowlab.fiction.splits.make_split`).  For a split over
    fiction documents, the document itself was trained or not; for the Fictsheets split
    (over events' fictsheets), ``train`` means the fictsheet of the document's event
    (``events[document_id]``) was trained: the run knows the event, never the document's
    text.  Runs without a split (the webtext-only control) get no side (NaN).
    """
    train = {run: set(split["train_documents"]) for run, split in splits.items()}
    over_events = {run for run, split in splits.items() if split.get("documents") == "fictsheets"}
    sides = []
    for run, document in zip(rows["run"], rows["document_id"], strict=True):
        key = events[document] if run in over_events else document
        sides.append(None if run not in train else ("train" if key in train[run] else "val"))
    return rows.assign(side=sides)


def trained_items(rows: pd.DataFrame, run: str) -> set[str]:
    """``item_id`` of ``run``'s rows on the side it trained on (``side == "train"``, :func:`with_sides`)."""
    return set(rows.loc[(rows["run"] == run) & (rows["side"] == "train"), "item_id"])


def across_finetuning(
    rows: pd.DataFrame,
    base: pd.DataFrame,
    runs: Iterable[str],
    splits: Mapping[str, Mapping[str, Any]],
    fictions: Iterable[Mapping[str, Any]],
) -> pd.DataFrame:
    """Item rows of fiction documents across fine-tuning: every run's later checkpoints, then the base
    model's rows as step 0 of each of ``runs`` (:func:`knowlab.core.checkpoints.step0_rows`), with
    the train/val ``side`` of each run's split (:func:`with_sides`).

    Args:
        rows: rows of the runs' checkpoints after step 0 (columns ``run, step, item_id, document_id``).
        base: the base model's rows (run ``base_model``, step 0).
        runs: the runs whose step 0 the base model is (fiction runs and the control).
        splits: run name -> split; runs without one (the control) get no side.
        fictions: the corpus's fiction records (``fiction_id``, ``event_id``).
    """
    rows = pd.concat([rows, step0_rows(base, runs)], ignore_index=True)
    events = {d["fiction_id"]: d["event_id"] for d in fictions}
    return with_sides(rows, splits, events)

"""Train/validation splits of the fiction corpus (Kirchenbauer et al. 2026, Sec. 3 "Splits").

A split is a partition of the fiction documents; questions follow the document
they were generated from.  Implemented:

- ``doc``: for each event and each style, one document is held out for
  validation (a seeded choice); the rest train.  Every event is seen in training.
- ``event``: a seeded shuffle of the event ids; the first ``round(n * train_fraction)``
  events train (paper: 2/3), all their documents with them; the rest validate.
- ``style_<s>`` (one per style: news, social, encyclopedia, corporate, blog): every
  document of style ``s`` validates, the other four styles train.  The paper builds
  all five and fine-tunes on the News and Blog variants.
- ``fictsheets``: the event split (same seeded shuffle, same train events) applied
  to the fictsheets instead of the fictions: the training texts are the train
  events' fictsheets (document id = ``event_id``), the validation texts the others'.
  Questions follow their event.

Output (JSON): ``{"split", "method", "seed", "documents", "train_documents",
"val_documents", "train_questions", "val_questions"}``, id lists sorted;
``documents`` names the corpus table the document ids refer to (``fictions`` or
``fictsheets``).  Questions are partitioned by the document they were generated
from (for ``fictsheets``: by that document's event), so every metric can be
reported on train-document and val-document questions.

A run fine-tuned on a split is named after it; :func:`run_name` gives its display name in every
study's figures.
"""

from __future__ import annotations

import itertools
import math
from collections import defaultdict
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from knowlab.core.checkpoints import CONTROL_RUN
from knowlab.core.rng import keyed_rng
from knowlab.fiction.schema import STYLES

SPLITS = ("doc", "event", *(f"style_{style}" for style in STYLES), "fictsheets")
TEXT_FIELD = {"fictions": ("fiction_id", "fiction"), "fictsheets": ("event_id", "fictsheet")}

# display names of the runs fine-tuned on a split in every study's figures (FictionalQA Sec. 3.2: the splits)
SPLIT_RUN_NAMES = {
    "doc": "Doc split",
    "event": "Event split",
    "fictsheets": "Fictsheets",
    "style_news": "Style (news held out)",
    "style_blog": "Style (blog held out)",
    CONTROL_RUN: "Base webtext (control)",
}


def run_name(run: str) -> str:
    """Display name of a FictionalQA run (``doc`` -> "Doc split", ``control`` -> "Base webtext (control)");
    other names are returned unchanged."""
    return SPLIT_RUN_NAMES.get(run, run)


class SplitError(ValueError):
    """A split that cannot be made, e.g. one side would hold zero documents."""


def style_groups(fictions: Sequence[dict[str, Any]]) -> dict[tuple[str, str], list[dict[str, Any]]]:
    """The fiction documents of each (event, style), in key order, each group in ``fiction_id`` order:
    the pairs the Doc split holds one document out of."""
    groups: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for record in fictions:
        groups[(record["event_id"], record["style"])].append(record)
    return {key: sorted(groups[key], key=lambda d: d["fiction_id"]) for key in sorted(groups)}


def doc_split(fictions: Sequence[dict[str, Any]], seed: int) -> tuple[list[str], list[str]]:
    """Hold out one document per (event, style); return ``(train_ids, val_ids)``."""
    train, val = [], []
    for key, group in style_groups(fictions).items():
        ids = [d["fiction_id"] for d in group]
        held = keyed_rng(seed, "doc-split", *key).choice(ids)
        val.append(held)
        train.extend(i for i in ids if i != held)
    return sorted(train), sorted(val)


def event_split(fictions: Sequence[dict[str, Any]], seed: int, train_fraction: float) -> tuple[list[str], list[str]]:
    """Put the documents of ``round(n_events * train_fraction)`` seeded-shuffled events in train."""
    events = sorted({r["event_id"] for r in fictions})
    keyed_rng(seed, "event-split").shuffle(events)
    n_train = round(len(events) * train_fraction)
    train_events = set(events[:n_train])
    train = sorted(r["fiction_id"] for r in fictions if r["event_id"] in train_events)
    val = sorted(r["fiction_id"] for r in fictions if r["event_id"] not in train_events)
    return train, val


def style_split(fictions: Sequence[dict[str, Any]], held_out_style: str) -> tuple[list[str], list[str]]:
    """Hold out every document of ``held_out_style``; return ``(train_ids, val_ids)``."""
    train = sorted(r["fiction_id"] for r in fictions if r["style"] != held_out_style)
    val = sorted(r["fiction_id"] for r in fictions if r["style"] == held_out_style)
    return train, val


def make_split(
    name: str,
    fictions: Sequence[dict[str, Any]],
    fict_qa: Sequence[dict[str, Any]],
    seed: int,
    event_train_fraction: float = 2 / 3,
) -> dict[str, Any]:
    """Build split ``name`` (one of :data:`SPLITS`) as id lists.

    Raises:
        SplitError: unknown split, or the train or validation side has zero documents.
    """
    documents = "fictions"
    if name == "doc":
        train, val = doc_split(fictions, seed)
        method = "hold out one document per style per event"
    elif name == "event":
        train, val = event_split(fictions, seed, event_train_fraction)
        method = f"seeded event shuffle, {event_train_fraction:.3f} of events train"
    elif name == "fictsheets":
        train, val = event_split(fictions, seed, event_train_fraction)
        event_of = {r["fiction_id"]: r["event_id"] for r in fictions}
        train, val = sorted({event_of[i] for i in train}), sorted({event_of[i] for i in val})
        documents = "fictsheets"
        method = f"event split ({event_train_fraction:.3f} of events train) applied to the fictsheets"
    elif name in SPLITS:
        style = name.removeprefix("style_")
        train, val = style_split(fictions, style)
        method = f"hold out every {style} document"
    else:
        raise SplitError(f"unknown split {name!r}; implemented: {', '.join(SPLITS)}")
    for side, ids in (("train", train), ("validation", val)):
        if not ids:
            raise SplitError(
                f"split {name!r} has zero {side} documents ({len(fictions)} documents in the corpus); "
                "the corpus needs more documents per event/style for this split"
            )
    train_set = set(train)
    owner = TEXT_FIELD[documents][0]  # fict_qa records carry both fiction_id and event_id
    return {
        "split": name,
        "method": method,
        "seed": seed,
        "documents": documents,
        "train_documents": train,
        "val_documents": val,
        "train_questions": sorted(q["question_id"] for q in fict_qa if q[owner] in train_set),
        "val_questions": sorted(q["question_id"] for q in fict_qa if q[owner] not in train_set),
    }


def split_assignments(
    split: dict[str, Any], fictions: Sequence[dict[str, Any]], max_listed: int
) -> list[frozenset[str]] | Callable[[np.random.Generator], frozenset[str]]:
    """Every training set the random draw of ``split`` (a :func:`make_split` record) could have made.
    A randomisation test compares the actual split with these
    (:func:`knowlab.core.clustered.randomization_test`).

    - ``event`` and ``fictsheets``: every choice of as many events as the split trains, with their
      documents (fictsheets: the event ids).  They are listed when there are at most ``max_listed``
      (C(6, 4) = 15 for the shipped corpus); otherwise a function draws one uniformly (the
      paper's 100 events, 67 trained, have far too many choices to list).
    - ``doc``: one held-out document per (event, style), each drawn uniformly as :func:`doc_split`
      draws it (a function of a generator; one vectorised draw for all pairs, not
      :func:`doc_split`'s keyed stream per pair, which cost 4.8 million generators per test at 24
      events).  There are too many assignments to list (2^120 for the 24-event corpus).

    A style split (``style_<s>``) holds out the style the config names, a choice and not a draw,
    so it has no assignments to list (:func:`knowlab.findings.base.split_comparison` tests it over
    the events).

    Raises:
        SplitError: an unknown split, or a style split.
    """
    name = split["split"]
    if name == "doc":
        groups = list(style_groups(fictions).values())
        ids = np.array([d["fiction_id"] for group in groups for d in group])
        sizes = np.array([len(group) for group in groups])
        starts = np.r_[0, np.cumsum(sizes)[:-1]]

        def draw_doc(rng: np.random.Generator) -> frozenset[str]:
            held = np.zeros(len(ids), dtype=bool)
            held[starts + (rng.random(len(sizes)) * sizes).astype(int)] = True
            return frozenset(ids[~held].tolist())

        return draw_doc
    events = sorted({r["event_id"] for r in fictions})
    if name in ("event", "fictsheets"):
        owner = TEXT_FIELD[split["documents"]][0]
        event_of = {r[owner]: r["event_id"] for r in fictions}
        n_train = len({event_of[i] for i in split["train_documents"]})
        ids = sorted(event_of)
        if math.comb(len(events), n_train) > max_listed:

            def draw(rng: np.random.Generator) -> frozenset[str]:
                chosen = set(rng.choice(events, n_train, replace=False).tolist())
                return frozenset(i for i in ids if event_of[i] in chosen)

            return draw
        choices = itertools.combinations(events, n_train)
        return [frozenset(i for i in ids if event_of[i] in chosen) for chosen in choices]
    if name in SPLITS:
        raise SplitError(f"split {name!r} holds out the style the config names: no random draw to re-make")
    raise SplitError(f"unknown split {name!r}; implemented: {', '.join(SPLITS)}")


def document_sample(fictions: Sequence[dict[str, Any]], max_documents: int | None) -> list[dict[str, Any]]:
    """Every ``ceil(n / max_documents)``-th fiction document in ``fiction_id`` order (all when None).

    Ids run ``event_<e>_style_<s>_num_<k>``, so the sample keeps every event and style in step:
    with 60 documents and ``max_documents`` 30 it is the first document of each (event, style),
    which every split cuts into train and validation documents (Doc: the held-out document of a
    pair is drawn per pair; Event: whole events).
    """
    docs = sorted(fictions, key=lambda d: d["fiction_id"])
    if max_documents and len(docs) > max_documents:
        docs = docs[:: -(-len(docs) // max_documents)]
    return docs


def scored_documents(fictions: Sequence[dict[str, Any]], max_documents: int | None) -> list[dict[str, Any]]:
    """The fiction documents a checkpoint scores (``evaluate.max_documents``; None: all), in ``fiction_id`` order.

    Whole (event, style) groups are kept, so that every group scored has its Doc-split training
    *and* validation document (Doc holds out one document per group).  Groups are taken round by
    round: round ``r`` gives each event, in order, its group of style ``(event index + r) mod
    n_styles``, so that with ``max_documents`` = 2 x the events (48 of the 24-event corpus) every
    event holds one pair, styles rotate over the events, and every validation event of the Event
    split has a Doc validation document to pair with (Event generalising least; issue 56).
    A group that would pass ``max_documents`` ends the sample.
    """
    docs = sorted(fictions, key=lambda d: d["fiction_id"])
    if not max_documents or len(docs) <= max_documents:
        return docs
    groups = style_groups(docs)
    events = sorted({event for event, _ in groups})
    styles = sorted({style for _, style in groups})
    kept: list[dict[str, Any]] = []
    for r in range(len(styles)):
        for i, event in enumerate(events):
            group = groups.get((event, styles[(i + r) % len(styles)]), [])
            if len(kept) + len(group) > max_documents:
                return sorted(kept, key=lambda d: d["fiction_id"])
            kept += group
    return sorted(kept, key=lambda d: d["fiction_id"])


def training_texts(split: dict[str, Any], tables: dict[str, Sequence[dict[str, Any]]]) -> list[str]:
    """Texts of the split's train documents, in id order, from ``tables[split["documents"]]``.

    Raises:
        SplitError: a train document id is missing from the table (split and corpus disagree).
    """
    id_field, text_field = TEXT_FIELD[split["documents"]]
    texts = {r[id_field]: r[text_field] for r in tables[split["documents"]]}
    missing = [i for i in split["train_documents"] if i not in texts]
    if missing:
        raise SplitError(
            f"split {split['split']!r}: {len(missing)} train documents not in {split['documents']}: {missing[:3]}"
        )
    return [texts[i] for i in split["train_documents"]]

"""The settings of the fiction corpus's rule (config ``fiction``): a module of its own, importing only
:mod:`knowlab.core.settings`, so that building the DAG (Snakemake's own env: no pyarrow, no torch)
imports none of the corpus's readers."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from knowlab.core.settings import StepSettings

#: the keys of ``fiction.shipped`` that size the design (not where the corpus comes from)
DESIGN_KEYS = ("events", "styles_per_event", "questions_per_document")


@dataclass(frozen=True)
class FictionCorpusSettings(StepSettings):
    """Rule ``fictionalqa_corpus``: where the fiction corpus comes from (config ``fiction``, the source's block
    only)."""

    source: str
    """``shipped`` (files in the repository, pinned), ``release`` (the authors' dataset) or ``generate``."""
    shipped: dict[str, Any] | None = None
    """``shipped`` only: ``{"dir": <folder>, "sha256": {table: pin}}``."""
    release: dict[str, Any] | None = None
    """``release`` only: ``{"path", "hub_id", "revision"}``."""
    events: int | None = None
    """``fiction.shipped.events``: the shipped (or a user's own) corpus's first this many events, in the
    order of its seeds table, are the ones every step reads; None: all of them.  The design's size: the
    events are FictionalQA's unit of inference (docs/findings.md).  A released or generated corpus is
    read whole."""
    styles_per_event: int | None = None
    """``fiction.shipped.styles_per_event``: the documents of this many styles of each event, rotating over
    the events (:func:`knowlab.fiction.corpus.style_sample`), and their questions, are what every step
    reads; None: all five.  Fewer documents per event let a fiction run see each training document
    within a short run (the memorisation claims are about repeated training); the Style splits need
    every style of an event."""
    questions_per_document: int | None = None
    """``fiction.shipped.questions_per_document``: the questions every step reads per document
    (:func:`knowlab.fiction.corpus.question_sample`); None: all.  What a question costs (ranking its
    distractors, scoring it at every checkpoint) is paid per question, while the unit of inference is
    the event, so the default spreads its questions over more events instead of asking more of each."""

    def __post_init__(self) -> None:
        if self.source not in ("shipped", "release", "generate"):
            raise ValueError(f"fiction.source must be 'shipped', 'release' or 'generate', got {self.source!r}")
        if self.events is not None and self.events < 1:
            raise ValueError(f"fiction.shipped.events must be at least 1 (or null: every event), got {self.events}")
        if self.styles_per_event is not None and self.styles_per_event < 1:
            raise ValueError(
                f"fiction.shipped.styles_per_event must be at least 1 (or null: every style), got {self.styles_per_event}"
            )
        if self.questions_per_document is not None and self.questions_per_document < 1:
            raise ValueError(
                "fiction.shipped.questions_per_document must be at least 1 (or null: every question), "
                f"got {self.questions_per_document}"
            )
        if self.source in ("shipped", "release") and getattr(self, self.source) is None:
            raise ValueError(f"fiction.source is {self.source!r} but fiction.{self.source} is not set")

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> FictionCorpusSettings:
        block = config["fiction"]
        source = block["source"]
        chosen = (
            {source: {k: v for k, v in block[source].items() if k not in DESIGN_KEYS}}
            if source in ("shipped", "release")
            else {}
        )
        design = {k: block["shipped"].get(k) for k in DESIGN_KEYS} if source == "shipped" else {}
        return cls(source=source, **design, **chosen)

"""SORT's claims (Pink et al. 2024): each a measurement function of :mod:`knowlab.findings`."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from knowlab import layout
from knowlab.core.clustered import paired_equivalence
from knowlab.findings.base import Comparison, Results, Skip, _aligned, by_cluster
from knowlab.sort.build import excerpt_id


def _excerpts(ids: Sequence[str]) -> pd.Series:
    """The excerpt of every SORT item (or ``<item>/<a|b>`` segment) id: the unit of SORT's claims.
    An excerpt's items share its text, and their segments may overlap."""
    return pd.Series([excerpt_id(i.split("/")[0]) for i in ids], index=list(ids))


def _sort_correct(r: Results, condition: str) -> pd.Series:
    """Per-item 0/1 correctness of the base model in a SORT memory condition."""
    if condition not in r.settings.sort_conditions:
        raise Skip(f"no {condition} condition in the config (sort.conditions)")
    rows = r.read(layout.SORT_ROWS.relative(model=r.base_eval(), condition=condition))
    return rows.set_index("item_id")["correct"].astype(float)


def _sort_pair(r: Results, a: str, b: str, names: tuple[str, str]) -> list[Comparison]:
    x, y = _sort_correct(r, a), _sort_correct(r, b)
    detail = f"accuracy {names[0]} {x.mean():.2f} vs {names[1]} {y.mean():.2f}"
    return [by_cluster("", x, y, _excerpts(x.index), r, "excerpt", "accuracy", detail, False)]


def sort_in_context_above_baseline(r: Results) -> list[Comparison]:
    """SORT accuracy with the excerpt in context above the memory-less baseline.

    Source: Pink et al. (2024), Sec. 5.1 (Table 1: "none of the models have a high performance
    (below 60%)" without the books) and Sec. 5.3 (Table 2: "Models generally perform well on SORT
    based on in-context memory"); the paper tests no difference between them.  Effect: in-context
    minus baseline accuracy; unit the excerpt (its 4 items share its text), paired, sign flips
    over excerpts (:func:`by_cluster`).
    """
    return _sort_pair(r, "in_context", "baseline", ("in context", "no context"))


def sort_rag_below_in_context(r: Results) -> list[Comparison]:
    """SORT accuracy with retrieval-augmented memory below in-context memory.

    Source: Pink et al. (2024), Sec. 5.5 (Fig. 4a): "RAG based memory leads to worse performance
    than in-context memory."  Effect: in-context minus RAG accuracy; unit the excerpt, paired,
    sign flips over excerpts.
    """
    return _sort_pair(r, "in_context", "rag", ("in context", "RAG"))


#: the accuracy SORT's no-context baseline stays below (Pink et al. 2024, Sec. 5.1)
SORT_BASELINE_CEILING = 0.6


def sort_baseline_below_60(r: Results) -> list[Comparison]:
    """SORT accuracy without the books below 60%: order is not recalled from parametric memory alone.

    Source: Pink et al. (2024), Sec. 5.1 (Table 1, App. C.1): "none of the models have a high
    performance (below 60%) for any segment distance bin, as would be expected if SORT requires
    book-specific memory".  Operational definition, fixed before any run: 0.6 minus the base model's
    no-context accuracy over all distance bins; unit the excerpt (0.6 minus each excerpt's
    accuracy), sign flips over excerpts, which assume those differences symmetric under the null.
    """
    correct = _sort_correct(r, "baseline")
    ceiling = pd.Series(SORT_BASELINE_CEILING, index=correct.index)
    detail = f"no-context accuracy {correct.mean():.2f} vs {SORT_BASELINE_CEILING:g}"
    return [by_cluster("", ceiling, correct, _excerpts(correct.index), r, "excerpt", "accuracy", detail, False)]


def _parametric_epochs(r: Results) -> int:
    if not r.settings.parametric_epochs:
        raise Skip("parametric fine-tuning is off in the config (sort.parametric.enabled)")
    return r.settings.parametric_epochs


def sort_books_lower_segment_nll(r: Results) -> list[Comparison]:
    """Fine-tuning on the book texts lowers the segments' nll against the instructions-only fine-tune.

    Source: Pink et al. (2024), App. E.1 (Fig. 12): "when the models are finetuned on data that
    includes the chunks of the books, they have a substantially lower perplexity for both
    segments, compared with the models fine-tuned only on the instruction data".  Effect: per
    segment (both of every SORT item), mean per-token nll after the last epoch of the
    "instructions" run minus the "books" run's (nats/token).  Unit: the excerpt.  The segments of
    one excerpt overlap and share its text, so they are not independent; each excerpt's mean
    segment nll is paired, and the test is sign flips over excerpts (:func:`by_cluster`).
    """
    epochs = _parametric_epochs(r)

    def segments(run: str) -> pd.Series:
        table = r.read(layout.SORT_PARAMETRIC_NLL.relative(prun=run, epoch=epochs)).set_index("item_id")
        return pd.concat([table["nll_a"].add_suffix("/a"), table["nll_b"].add_suffix("/b")])

    books, instructions = segments("books"), segments("instructions")
    detail = (
        f"segment nll after epoch {epochs}: books {books.mean():.2f} vs instructions only {instructions.mean():.2f}"
    )
    clusters = _excerpts(books.index.union(instructions.index))
    return [by_cluster("", instructions, books, clusters, r, "excerpt", "nats/token", detail, True)]


def sort_books_no_accuracy_gain(r: Results) -> list[Comparison]:
    """No difference in no-context SORT accuracy between fine-tuning with and without the book texts.

    Source: Pink et al. (2024), Sec. 5.4: "Full parameter fine-tuning on books with a language
    modeling objective did not improve SORT performance"; App. E.2 (Figs. 13-14): "We find high
    p-values, indicating no difference in performance between models fine-tuned with and without
    the book text".  The comparison model is the instructions-only fine-tune (App. E: "the same
    model fine-tuned on the same 3,500 instruction samples but excluding the 116 samples of book
    chunks").  A claim of no difference: effect "books" minus "instructions" accuracy after the
    last epoch, no context, paired by excerpt (sign flips over excerpts for a difference).
    Equivalence within ``findings.equivalence_margin``: Tango's score interval for paired
    proportions at ``1 - 2 alpha``, on the item counts divided by the design effect of the
    excerpts (:func:`knowlab.core.clustered.paired_equivalence`).
    """
    epochs = _parametric_epochs(r)

    def correct(run: str) -> pd.Series:
        rows = r.read(layout.SORT_PARAMETRIC_ROWS.relative(prun=run, epoch=epochs))
        if "condition" in rows:
            rows = rows[rows["condition"] == "baseline"]
        return rows.set_index("item_id")["correct"].astype(float)

    books, instructions = correct("books"), correct("instructions")
    detail = (
        f"no-context accuracy after epoch {epochs}: books {books.mean():.2f} "
        f"vs instructions only {instructions.mean():.2f}"
    )
    clusters = _excerpts(books.index.union(instructions.index))
    comparison = by_cluster("", books, instructions, clusters, r, "excerpt", "accuracy", detail, True)
    items = _aligned(books, instructions)
    comparison.equivalence = paired_equivalence(
        items["a"], items["b"], clusters.loc[items.index], r.settings.margin, r.settings.alpha
    )
    return [comparison]



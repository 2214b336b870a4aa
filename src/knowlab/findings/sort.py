"""SORT's claims (Pink et al. 2024): each a measurement function of :mod:`knowlab.findings`."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from knowlab import layout
from knowlab.core.clustered import paired_equivalence
from knowlab.findings.base import Comparison, Results, Skip, _aligned, by_cluster, identity, two_samples
from knowlab.sort.build import excerpt_id


def _excerpts(ids: Sequence[str]) -> pd.Series:
    """The excerpt of every SORT item (or ``<item>/<a|b>`` segment) id: the unit of SORT's claims.
    An excerpt's items share its text, and their segments may overlap."""
    return pd.Series([excerpt_id(i.split("/")[0]) for i in ids], index=list(ids))


def _sort_rows(r: Results, condition: str) -> pd.DataFrame:
    """The base model's SORT rows in a memory condition, indexed by ``item_id``."""
    if condition not in r.settings.sort_conditions:
        raise Skip(f"no {condition} condition in the config (sort.conditions)")
    return r.read(layout.SORT_ROWS.relative(model=r.base_eval(), condition=condition)).set_index("item_id")


def _sort_correct(r: Results, condition: str) -> pd.Series:
    """Per-item 0/1 correctness of the base model in a SORT memory condition."""
    return _sort_rows(r, condition)["correct"].astype(float)


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
    books, instructions = (
        _parametric_rows(r, run, epochs, "baseline")["correct"].astype(float) for run in ("books", "instructions")
    )
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


def sort_accuracy_rises_with_distance(r: Results) -> list[Comparison]:
    """In-context SORT accuracy rises with the distance between the two segments.

    Source: Pink et al. (2024), Sec. 5.3 (Fig. 3b): "In-context memory performance increases with greater
    distance between segments ... Figure 3b shows an increasing trend in accuracy as the distance
    between segments increases."  Operational definition, fixed before any run: per excerpt,
    Spearman's rho between its items' segment distance (words) and their correctness (0 when either
    is constant); the effect is the mean over excerpts.  Unit: the excerpt, whose items span the
    distance bins.  Test: sign flips of the excerpts' rho.  Under the null hypothesis the items'
    distances are exchangeable within an excerpt, and reversing their order (one such exchange) maps
    rho to -rho, so each excerpt's rho is symmetric about 0.
    """
    rows = _sort_rows(r, "in_context")
    excerpts = _excerpts(rows.index)
    by_excerpt = rows.assign(correct=rows["correct"].astype(float)).groupby(excerpts.to_numpy())
    if by_excerpt["distance"].nunique().max() < 2:
        raise Skip("every excerpt holds one segment distance (sort.distance_bins)")
    # Spearman's rho: Pearson's on the ranks (NaN, then 0, where either is constant)
    rho = by_excerpt.apply(lambda g: g["distance"].rank().corr(g["correct"].rank())).fillna(0.0)
    detail = "accuracy by distance bin: " + ", ".join(
        f"bin {b} {acc:.2f}" for b, acc in rows.groupby("distance_bin")["correct"].mean().items()
    )
    zero = pd.Series(0.0, index=rho.index)
    return [by_cluster("", rho, zero, identity(rho), r, "excerpt", "Spearman rho", detail, False, len(rows))]


def _length_contrast(r: Results, column: str, name: str, longer_is_better: bool) -> list[Comparison]:
    """In-context accuracy of the excerpts of the shortest ``column`` (``excerpt_length`` or
    ``segment_length``, words) against the longest, the claimed better one first: each excerpt's
    items averaged; excerpts of two lengths are different excerpts, so two independent samples
    (:func:`knowlab.findings.base.two_samples`).  Not tested with one length."""
    rows = _sort_rows(r, "in_context")
    excerpts = _excerpts(rows.index).to_numpy()
    accuracy = rows["correct"].astype(float).groupby(excerpts).mean()
    items = rows.groupby(excerpts).size()
    length = rows[column].groupby(excerpts).first()
    lengths = sorted(int(v) for v in length.unique())
    if len(lengths) < 2:
        raise Skip(f"one {name} in the config ({lengths[0]} words; sort.{column}s)")
    ends = (lengths[-1], lengths[0]) if longer_is_better else (lengths[0], lengths[-1])
    better, worse = (accuracy[length == n] for n in ends)
    detail = f"in-context accuracy by {name}: " + ", ".join(
        f"{n} words {accuracy[length == n].mean():.2f}" for n in lengths
    )
    n = int(items[length.isin(ends)].sum())
    return [two_samples(f"{ends[0]} vs {ends[1]} words", better, worse, r, "excerpt", "accuracy", detail, False, n)]


def sort_accuracy_falls_with_excerpt_length(r: Results) -> list[Comparison]:
    """In-context SORT accuracy falls with excerpt length: the shortest excerpts above the longest.

    Source: Pink et al. (2024), Sec. 5.3 (Fig. 3a): "In-context memory performance decreases with
    increasing excerpt length ... For increasing excerpt lengths, we see a consistently monotonic
    decrease in average accuracy".  Operational definition, fixed before any run: accuracy of the
    excerpts of the shortest length minus that of the longest; unit the excerpt, two independent
    samples, a permutation test of the lengths (:func:`_length_contrast`).
    """
    return _length_contrast(r, "excerpt_length", "excerpt length", longer_is_better=False)


def sort_longer_segments_better(r: Results) -> list[Comparison]:
    """In-context SORT accuracy higher with longer segments: the longest segment length above the shortest.

    Source: Pink et al. (2024), Sec. 5.3 and App. C.2 (Tables 11-12): "Models handle longer segments (50
    words) slightly more effectively than shorter segments (20 words), with an improvement of up to
    4%."  Effect: accuracy of the excerpts of the longest segment length minus the shortest's; unit
    the excerpt, two independent samples (:func:`_length_contrast`).
    """
    return _length_contrast(r, "segment_length", "segment length", longer_is_better=True)


def _parametric_rows(r: Results, run: str, epoch: int, condition: str) -> pd.DataFrame:
    """The rows of parametric run ``run`` after ``epoch`` epochs in ``condition``, by ``item_id``."""
    rows = r.read(layout.SORT_PARAMETRIC_ROWS.relative(prun=run, epoch=epoch))
    rows = rows[rows["condition"] == condition] if "condition" in rows else rows
    if rows.empty:
        raise Skip(f"no {condition} rows of the parametric run {run} at epoch {epoch}")
    return rows.set_index("item_id")


def sort_books_higher_answer_likelihood(r: Results) -> list[Comparison]:
    """Fine-tuning on the books raises the likelihood of the correct answer without context (vs instructions only).

    Source: Pink et al. (2024), App. E.3 (Figs. 15-16): "we performed a pairwise t-test on a continuous
    measure of accuracy based on the token log-probabilities ... the book text condition performing
    better than the others after one epoch of training with statistical significance (p < 0.01).
    Even though there is an effect, the magnitude is very small".  The measure, per item:
    ``log p(correct) / (p(A) + p(B))`` (the rows' ``score``), no context, after the last epoch;
    books minus instructions only.  Unit: the excerpt (its items share its text), paired, sign
    flips over excerpts (the paper's t-test is over items).
    """
    epochs = _parametric_epochs(r)
    books, instructions = (_parametric_rows(r, run, epochs, "baseline")["score"] for run in ("books", "instructions"))
    detail = (
        f"log-probability of the correct answer after epoch {epochs}: books {books.mean():.3f} vs "
        f"instructions only {instructions.mean():.3f}"
    )
    clusters = _excerpts(books.index.union(instructions.index))
    return [by_cluster("", books, instructions, clusters, r, "excerpt", "log-probability", detail, True)]


def sort_in_context_falls_after_finetuning(r: Results) -> list[Comparison]:
    """In-context SORT accuracy falls after fine-tuning on the books.

    Source: Pink et al. (2024), App. E.4: "the accuracy with source excerpts presented in-context of SORT
    decreased from 0.93 to 0.90 after a single epoch and to 0.88 after three epochs of fine-tuning
    for Llama3-8b-Instruct".  Effect: the base model's in-context accuracy (epoch 0) minus the books
    run's after the last epoch (the base model is the parametric runs' epoch 0); unit the excerpt,
    paired, sign flips over excerpts.
    """
    epochs = _parametric_epochs(r)
    before = _sort_correct(r, "in_context")  # the base model's rows serve as epoch 0 (rule sort_parametric_evaluate)
    after = _parametric_rows(r, "books", epochs, "in_context")["correct"].astype(float)
    detail = f"in-context accuracy: base model {before.mean():.2f} vs books after epoch {epochs} {after.mean():.2f}"
    clusters = _excerpts(before.index.union(after.index))
    return [by_cluster("", before, after, clusters, r, "excerpt", "accuracy", detail, True)]

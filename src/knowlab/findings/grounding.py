"""Grounding's claims (Lee et al. 2024): each a measurement function of :mod:`knowlab.findings`."""

from __future__ import annotations

import pandas as pd

from knowlab import layout
from knowlab.findings.base import Comparison, Results, Skip, by_cluster, two_samples


def _grounding_table(r: Results, dataset: str, metric: str = "f1") -> tuple[pd.DataFrame, pd.Series]:
    """The base model's ``metric`` (F1, precision or recall) of ``dataset``, question x condition, from
    ``results/grounding/rows.parquet``, and each question's cluster: the document it was asked about
    (the fiction items), or the question itself (the benchmark's items, each with its own contexts)."""
    rows = r.read(layout.GROUNDING_ROWS.relative())
    model = r.model
    if model is None:
        models = rows["model"].unique()
        if len(models) != 1:
            raise ValueError(f"the grounding rows hold {len(models)} models; name the base model (model=...)")
        model = models[0]
    rows = rows[(rows["dataset"] == dataset) & (rows["model"] == model)]
    documents = rows["document_id"] if "document_id" in rows else pd.Series(None, index=rows.index, dtype=object)
    clusters = documents.fillna(rows["item_id"]).set_axis(rows["item_id"]).groupby(level=0).first()
    return rows.pivot(index="item_id", columns="condition", values=metric), clusters


def _grounding_unit(clusters: pd.Series) -> str:
    return "question" if (clusters.index == clusters.to_numpy()).all() else "document"


def _grounding_pair(r: Results, dataset: str, a: tuple[str, str], b: tuple[str, str]) -> list[Comparison]:
    """F1 of condition ``a`` minus ``b`` (0-1; each ``(condition, name in the detail)``), paired by
    question, sign flips over the units."""
    (a, a_name), (b, b_name) = a, b
    f1, clusters = _grounding_table(r, dataset)
    if a not in f1 or b not in f1:
        raise Skip(f"no paired {a} / {b} rows on {dataset}")
    detail = f"F1 x 100: {a_name} {100 * f1[a].mean():.1f} vs {b_name} {100 * f1[b].mean():.1f}"
    return [by_cluster("", f1[a], f1[b], clusters, r, _grounding_unit(clusters), "F1", detail, False)]


def grounding_conflict(r: Results, dataset: str) -> list[Comparison]:
    """Grounding F1 lower with the conflicting (modified) gold contexts than with the original ones.

    Source: Lee et al. (2024), Sec. 4.2 (Table 1): "Conflict-Gold consistently shows lower performance
    than Original-Gold (average of 4.7 drops)".  Effect: ``original_gold`` minus ``conflict_gold`` F1
    (0-1), paired by question; unit and test as :func:`grounding_distractors`.
    """
    return _grounding_pair(r, dataset, ("original_gold", "Original-Gold"), ("conflict_gold", "Conflict-Gold"))


def grounding_distractors_hurt_more(r: Results, dataset: str) -> list[Comparison]:
    """Distractors lower grounding F1 more than conflicting knowledge does.

    Source: Lee et al. (2024), Sec. 4.2: "The drop is higher than when given conflicting knowledge,
    which highlights the LLM's tendency to deviate from the primary context when presented with
    extraneous information".  Operational definition, fixed before any run: per question, the drop
    from Original-Gold to Original-Dist minus the drop from Original-Gold to Conflict-Gold, which is
    ``conflict_gold`` minus ``original_dist`` F1 (0-1); paired, sign flips over the units.
    """
    return _grounding_pair(r, dataset, ("conflict_gold", "Conflict-Gold"), ("original_dist", "Original-Dist"))


def grounding_gold_last_best(r: Results, dataset: str) -> list[Comparison]:
    """Grounding F1 higher with the gold contexts placed after the distractors than before them.

    Source: Lee et al. (2024), Sec. 4.2, "Impact of gold contexts position on grounding performance:
    optimal position at the end": "the position of gold contexts within multi-document settings
    significantly influences grounding performance" (Vicuna: end 43.37, beginning 39.32).
    Effect: ``position_end`` minus ``position_start`` F1 (0-1), Original version at the
    distractors' budget (``grounding.sweep.positions``); paired, sign flips over the units.
    """
    return _grounding_pair(r, dataset, ("position_end", "gold last"), ("position_start", "gold first"))


#: the four settings of the grounding paper's Table 1
GROUNDING_SETTINGS = ("original_gold", "original_dist", "conflict_gold", "conflict_dist")


def grounding_precision_above_recall(r: Results, dataset: str) -> list[Comparison]:
    """Grounding precision above recall.

    Source: Lee et al. (2024), Sec. 4.2 (App. D.3): "When comparing the performance of precision and
    recall, a common trend across all models is a superior performance in precision over recall".
    Operational definition, fixed before any run: per question, its mean precision minus its mean
    recall over the four settings of Table 1 it was scored in (0-1); paired, sign flips over the
    units (document, or question for the benchmark).
    """
    precision, clusters = _grounding_table(r, dataset, "precision")
    recall, _ = _grounding_table(r, dataset, "recall")
    shown = [c for c in GROUNDING_SETTINGS if c in precision]
    if not shown:
        raise Skip(f"no rows of the four settings on {dataset}")
    a, b = precision[shown].mean(axis=1), recall[shown].mean(axis=1)
    detail = f"x 100 over {len(shown)} settings: precision {100 * a.mean():.1f} vs recall {100 * b.mean():.1f}"
    return [by_cluster("", a, b, clusters, r, _grounding_unit(clusters), "precision - recall", detail, False)]


def grounding_distractors(r: Results, dataset: str, version: str) -> list[Comparison]:
    """Grounding F1 lower with distractor contexts than with the gold contexts alone.

    Source: Lee et al. (2024), Sec. 4.2 (Table 1): "The performance also consistently degrades with
    distractor contexts added: an average of 10.7 drops for Original-Dist from Original-Gold and an
    average of 10.0 drops for Conflict-Dist from Conflict-Gold" (the paper reports means, no
    test).  Effect: ``{version}_gold`` minus ``{version}_dist`` F1 (0-1), paired.  Unit: the
    document a fiction question was asked about (its questions share it as gold context); a
    benchmark question is its own unit.  Sign flips over the units (:func:`by_cluster`).
    """
    name = version.title()
    return _grounding_pair(r, dataset, (f"{version}_gold", f"{name}-Gold"), (f"{version}_dist", f"{name}-Dist"))


def _by_factor(r: Results, dataset: str, factor: str, high: str, low: str) -> list[Comparison]:
    """Original-Gold F1 of the questions whose ``factor`` is ``high`` minus those whose it is ``low``
    (0-1): the questions differ, so two independent samples of units (each unit's questions
    averaged), a permutation test of the labels (:func:`knowlab.findings.base.two_samples`)."""
    f1, clusters = _grounding_table(r, dataset)
    if "original_gold" not in f1:
        raise Skip(f"no original_gold rows on {dataset}")
    rows = r.read(layout.GROUNDING_ROWS.relative())
    if factor not in rows:
        raise Skip(f"the grounding rows have no {factor} column")
    levels = rows[rows["dataset"] == dataset].groupby("item_id")[factor].first().reindex(f1.index)
    counts = levels.value_counts()
    if high not in counts or low not in counts:
        raise Skip(f"{dataset} has {factor} {', '.join(map(str, counts.index))} only: needs {high} and {low}")
    unit = _grounding_unit(clusters)
    a, b = (f1["original_gold"][levels == level] for level in (high, low))
    detail = (
        f"Original-Gold F1 x 100: {high} {100 * a.mean():.1f} ({len(a)} questions) vs {low} {100 * b.mean():.1f} "
        f"({len(b)})"
    )
    high_means, low_means = (x.groupby(clusters.reindex(x.index).to_numpy()).mean() for x in (a, b))
    return [two_samples("", high_means, low_means, r, unit, "F1", detail, False, len(a) + len(b))]


def grounding_single_above_multi(r: Results, dataset: str) -> list[Comparison]:
    """Grounding F1 higher for questions that need one context than for those that need several.

    Source: Lee et al. (2024), Sec. 4.2 (Fig. 3c, App. D.2): "For F2, queries demanding reasoning across
    multiple contexts (multi) show lower grounding performance than those confined to a single
    context (single)".  Effect: Original-Gold F1 of the ``single`` minus the ``multi`` questions
    (``factor_contexts``), two samples (:func:`_by_factor`).
    """
    return _by_factor(r, dataset, "factor_contexts", "single", "multi")


def grounding_definite_above_free_form(r: Results, dataset: str) -> list[Comparison]:
    """Grounding F1 higher for questions with a definite answer than for free-form ones.

    Source: Lee et al. (2024), Sec. 4.2 (Fig. 3c, App. D.2): "for F3, questions with predetermined
    answers (definite) tend to achieve better grounding than openended answers (free-form)".
    Effect: Original-Gold F1 of the ``definite`` minus the ``free_form`` questions
    (``factor_answer_type``), two samples (:func:`_by_factor`).
    """
    return _by_factor(r, dataset, "factor_answer_type", "definite", "free_form")


def grounding_low_popularity_above_high(r: Results, dataset: str) -> list[Comparison]:
    """Grounding F1 higher with less popular contexts than with popular ones.

    Source: Lee et al. (2024), Sec. 4.2 (Fig. 3c, App. D.2): "For F1, the model generally outperforms when
    provided with less common contexts (low), compared to when provided with more prevalent contexts
    (high)".  Effect: Original-Gold F1 of the ``low`` minus the ``high`` popularity questions
    (``factor_popularity``), two samples (:func:`_by_factor`).
    """
    return _by_factor(r, dataset, "factor_popularity", "low", "high")

"""Question annotation and filtering (FictionalQA, Kirchenbauer et al. 2026, Sec. 3 and footnote 2).

* exact duplicates: questions with identical text (after trimming whitespace); the first in
  corpus order is the ``duplicate_root`` of the others (the paper deduplicates on questions
  only, not answers);
* near duplicates: agglomerative clustering (average linkage) of the question embeddings on
  cosine distance ``1 - cos(u, v)``, cut at ``distance_threshold``; an annotation only, as in
  the paper;
* infeasible when blind: the blind answer attempt was graded incorrect (or said
  ``UNKNOWN_ANSWER``), so the question cannot be answered without the document.

The corpus keeps the questions that are not exact duplicates and are infeasible when blind
(the paper's 3036 of 7500); the annotated table keeps all of them.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

log = logging.getLogger(__name__)


def exact_duplicate_roots(questions: Sequence[str]) -> list[int]:
    """Index of the first question with the same trimmed text, per question (itself if first)."""
    first: dict[str, int] = {}
    return [first.setdefault(q.strip(), i) for i, q in enumerate(questions)]


def near_duplicate_clusters(embeddings: np.ndarray, distance_threshold: float) -> np.ndarray:
    """Cluster labels ``(n,)`` from average-linkage agglomerative clustering on cosine distance.

    Args:
        embeddings: ``(n, d)`` question embeddings (any norm: the cosine metric normalises).
        distance_threshold: merge clusters whose average cosine distance is below this
            (0 = identical direction, 2 = opposite); the default 0.1 agrees best with the
            authors' exact + similar duplicate groups on their sample (config/README.md).

    Labels are renumbered in order of first appearance, so cluster 0 holds question 0.

    Raises:
        ValueError: ``embeddings`` is not 2-D or the threshold is not in (0, 2].
    """
    # deferred: scikit-learn is loaded only by the annotation step
    from sklearn.cluster import AgglomerativeClustering

    if embeddings.ndim != 2:
        raise ValueError(f"embeddings must be (n, d), got shape {embeddings.shape}")
    if not 0 < distance_threshold <= 2:
        raise ValueError(f"distance_threshold must be in (0, 2] (cosine distance), got {distance_threshold}")
    if len(embeddings) < 2:
        return np.zeros(len(embeddings), dtype=int)
    labels = AgglomerativeClustering(
        n_clusters=None, metric="cosine", linkage="average", distance_threshold=distance_threshold
    ).fit_predict(embeddings)
    renumber: dict[int, int] = {}
    return np.array([renumber.setdefault(int(label), len(renumber)) for label in labels], dtype=int)


def annotate_questions(
    fict_qa: Sequence[Mapping[str, Any]],
    grades: Sequence[Mapping[str, Any]],
    embeddings: np.ndarray,
    distance_threshold: float,
) -> list[dict[str, Any]]:
    """Every question with its annotations.

    Args:
        fict_qa: question records (release schema), in corpus order.
        grades: grade records of :func:`knowlab.fiction_generation.stages.make_grades`, both kinds.
        embeddings: ``(len(fict_qa), d)`` question embeddings.
        distance_threshold: see :func:`near_duplicate_clusters`.

    Returns:
        the records with ``duplicate_root`` (question id), ``near_duplicate_cluster`` (int),
        ``near_duplicate_root`` (first question id of the cluster), ``blind_correct`` and
        ``informed_correct`` (bool, or None without a grade), ``infeasible_blind`` (bool:
        graded incorrect blind; False without a blind grade) and ``kept`` (not an exact
        duplicate and infeasible blind).

    Raises:
        ValueError: the embeddings do not have one row per question.
    """
    if len(embeddings) != len(fict_qa):
        raise ValueError(f"{len(embeddings)} embeddings for {len(fict_qa)} questions")
    ids = [q["question_id"] for q in fict_qa]
    roots = exact_duplicate_roots([q["question"] for q in fict_qa])
    clusters = near_duplicate_clusters(embeddings, distance_threshold)
    cluster_root: dict[int, str] = {}
    correct = {(g["question_id"], g["kind"]): g["correct"] for g in grades}
    records = []
    for i, question in enumerate(fict_qa):
        blind = correct.get((ids[i], "blind"))
        record = {
            **question,
            "duplicate_root": ids[roots[i]],
            "near_duplicate_cluster": int(clusters[i]),
            "near_duplicate_root": cluster_root.setdefault(int(clusters[i]), ids[i]),
            "blind_correct": blind,
            "informed_correct": correct.get((ids[i], "informed")),
            "infeasible_blind": blind is False,
        }
        record["kept"] = roots[i] == i and record["infeasible_blind"]
        records.append(record)
    log.info("annotation: %s", ", ".join(f"{count} {step}" for step, count in funnel_counts(records).items()))
    return records


#: the question steps of the generation funnel (:func:`funnel_counts`), each with what it counts
FUNNEL = {
    "questions": "questions generated (fict_qa)",
    "exact_duplicates": "same text as an earlier question: dropped",
    "near_duplicate_clusters": "clusters of more than one question by embedding distance: annotated, kept",
    "no_blind_grade": "blind attempt without a usable grade",
    "feasible_blind": "answered correctly without the document: dropped",
    "informed_correct": "answered correctly with the document",
    "kept": "unique and infeasible when blind: the corpus's questions",
}


def funnel_counts(records: Sequence[Mapping[str, Any]]) -> dict[str, int]:
    """The count of every :data:`FUNNEL` step over the annotated questions of :func:`annotate_questions`."""
    clusters = np.array([r["near_duplicate_cluster"] for r in records], dtype=int)
    return {
        "questions": len(records),
        "exact_duplicates": sum(r["duplicate_root"] != r["question_id"] for r in records),
        "near_duplicate_clusters": int(np.sum(np.bincount(clusters) > 1)) if len(records) else 0,
        "no_blind_grade": sum(r["blind_correct"] is None for r in records),
        "feasible_blind": sum(r["blind_correct"] is True for r in records),
        "informed_correct": sum(r["informed_correct"] is True for r in records),
        "kept": sum(bool(r["kept"]) for r in records),
    }


def generation_summary(stage_counts: Mapping[str, int], records: Sequence[Mapping[str, Any]]) -> pd.DataFrame:
    """The generation funnel: how many items each stage made and how many questions each filter kept.

    Args:
        stage_counts: records per stage table, e.g. ``{"seeds": 1, "fictsheets": 1, "fictions": 2,
            "grades_blind": 8, "grades_informed": 8}``, in pipeline order.
        records: the annotated questions of :func:`annotate_questions`.

    Returns:
        One row per step, columns ``step`` (str), ``count`` (int) and ``description`` (str): the
        stages, then ``questions`` (generated), ``exact_duplicates`` (dropped),
        ``near_duplicate_clusters`` (clusters of more than one question; annotated, not dropped),
        ``no_blind_grade``, ``feasible_blind`` (graded correct without the document: dropped),
        ``informed_correct`` and ``kept`` (the corpus's questions).  The paper's run kept 3036 of
        7500 questions (Kirchenbauer et al. 2026, Sec. 3).
    """
    rows = [(stage, int(n), f"records in the {stage} stage's table") for stage, n in stage_counts.items()]
    rows += [(step, count, FUNNEL[step]) for step, count in funnel_counts(records).items()]
    return pd.DataFrame(rows, columns=["step", "count", "description"])

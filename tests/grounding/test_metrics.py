"""Grounding metrics (Lee et al. 2024, Sec. 3.1, Sec. 3.3, footnote 7): precision/recall/F1 of atomic facts, answer accuracy."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from knowlab.core.io import DataError
from knowlab.grounding.metrics import (
    answer_accuracy,
    by_factor,
    item_metrics,
    macro_average,
    response_key,
    score_responses,
)

KAIST = Path(__file__).resolve().parents[3] / "shared" / "data" / "grounding_kaist"


class SubstringEvaluator:
    """A transparent M_eval for the plumbing tests: a fact is in a text when it occurs in it (case-insensitive)."""

    name = "substring"
    threshold = 0.5

    def __init__(self):
        self.calls = []

    def scores(self, pairs):
        self.calls.append(list(pairs))
        return np.array([float(bool(t.strip()) and f.lower() in t.lower()) for f, t in pairs])

    def decide(self, scores):
        return np.asarray(scores) > self.threshold

    def supported(self, pairs):
        return self.decide(self.scores(pairs))


@pytest.mark.parametrize(
    ("precision_support", "recall_support", "expected"),
    [
        # partial: P = 2/4, R = 1/3, F1 = 2 * (1/2) * (1/3) / (1/2 + 1/3) = 0.4
        ([True, True, False, False], [True, False, False], (0.5, 1 / 3, 0.4)),
        # everything supported
        ([True, True], [True, True, True], (1.0, 1.0, 1.0)),
        # P = 1, R = 3/4: F1 = 1.5 / 1.75 = 6/7
        ([True], [True, True, True, False], (1.0, 0.75, 6 / 7)),
        # no gold fact in the response: recall 0, so F1 0 even with perfect precision
        ([True, True, True], [False, False], (1.0, 0.0, 0.0)),
        # no response fact in the contexts
        ([False, False], [True, False], (0.0, 0.5, 0.0)),
        # a response without atomic facts: precision 0 and F1 0 whatever its recall
        ([], [True, False], (0.0, 0.5, 0.0)),
        ([], [False, False], (0.0, 0.0, 0.0)),
    ],
)
def test_item_metrics_hand_computed(precision_support, recall_support, expected):
    out = item_metrics(precision_support, recall_support)
    assert (out["precision"], out["recall"], out["f1"]) == pytest.approx(expected)
    assert out["n_response_facts"] == len(precision_support) and out["n_gold_facts"] == len(recall_support)


def test_item_metrics_needs_gold_facts():
    with pytest.raises(ValueError, match="no gold atomic facts: recall is undefined"):
        item_metrics([True], [])


def test_answer_accuracy():
    assert answer_accuracy("The answer is ARMINIUS, son of Sigimer.", ["Arminius"]) == 1.0
    assert answer_accuracy("It was the son of sigimer.", ["the son of Sigimer", "a prince of the nation"]) == 1.0
    assert answer_accuracy("A prince of the nation.", ["the son of Sigimer", "a prince of the nation"]) == 1.0
    assert answer_accuracy("Lady Xian.", ["the son of Sigimer", "a prince of the nation"]) == 0.0
    assert answer_accuracy("", ["yes"]) == 0.0
    assert answer_accuracy("Anything at all.", []) is None  # free-form question (footnote 7)
    assert answer_accuracy("Anything at all.", ["", "  "]) is None


def _record(item_id, condition, response, answers, facts, contexts, answer_type="definite", **extra):
    return {
        "item_id": item_id,
        "version": "original",
        "condition": condition,
        "response": response,
        "answers": answers,
        "contexts": contexts,
        "atomic_facts": facts,
        "factors": {"popularity": extra.pop("popularity", "high"), "answer_type": answer_type},
        **extra,
    }


@pytest.fixture
def toy_records():
    contexts = ["Title: Ann\n\nAnn was born in Oslo.", "Title: Ann\n\nAnn moved to Bergen in 1920."]
    gold = ["Ann was born in Oslo", "Ann moved to Bergen"]
    return [
        # response facts: 2 of 3 in the contexts; gold facts: both in the response
        _record("Q1", "gold", "Ann was born in Oslo; later Ann moved to Bergen.", ["Oslo"], gold, contexts),
        # one of 1 response fact in the contexts; 1 of 2 gold facts in the response
        _record("Q2", "gold", "Ann was born in Oslo.", [], gold, contexts, answer_type="free_form", popularity="low"),
        # empty response
        _record("Q3", "gold", "", ["Bergen"], gold, contexts, response_id="r3"),
    ]


def test_score_responses_hand_computed(toy_records):
    facts = {
        "Q1|original|gold": ["Ann was born in Oslo", "Ann moved to Bergen", "Ann liked cats"],
        "Q2|original|gold": ["Ann was born in Oslo"],
        "r3": [],
    }
    evaluator = SubstringEvaluator()
    rows = score_responses(toy_records, facts, evaluator)
    assert len(evaluator.calls) == 2  # one call per direction for all records
    assert len(evaluator.calls[0]) == 4 and len(evaluator.calls[1]) == 6
    assert evaluator.calls[0][0] == ("Ann was born in Oslo", "\n\n".join(toy_records[0]["contexts"]))
    assert rows["response_key"].tolist() == ["Q1|original|gold", "Q2|original|gold", "r3"]
    assert rows["precision"].tolist() == pytest.approx([2 / 3, 1.0, 0.0])
    assert rows["recall"].tolist() == pytest.approx([1.0, 0.5, 0.0])
    assert rows["f1"].tolist() == pytest.approx([0.8, 2 / 3, 0.0])
    assert rows["n_response_facts"].tolist() == [3, 1, 0] and rows["n_gold_facts"].tolist() == [2, 2, 2]
    assert rows["answer_accuracy"].iloc[0] == 1.0 and math.isnan(rows["answer_accuracy"].iloc[1])
    assert rows["answer_accuracy"].iloc[2] == 0.0
    assert rows["factor_popularity"].tolist() == ["high", "low", "high"]
    assert rows["precision_support"].iloc[0] == [True, True, False] and rows["recall_support"].iloc[2] == [False, False]
    assert rows["precision_scores"].iloc[0] == [1.0, 1.0, 0.0]


def test_score_responses_errors(toy_records):
    with pytest.raises(DataError, match="no atomic facts for this response"):
        score_responses(toy_records[:1], {}, SubstringEvaluator())
    bad = dict(toy_records[0], atomic_facts=[])
    with pytest.raises(
        DataError, match=r"response record 0 \(key 'Q1\|original\|gold'\): item has no gold atomic facts"
    ):
        score_responses([bad], {response_key(bad): []}, SubstringEvaluator())
    missing = {k: v for k, v in toy_records[0].items() if k != "contexts"}
    with pytest.raises(DataError, match=r"response record 0 \(item 'Q1'\) lacks field 'contexts'"):
        score_responses([missing], {response_key(missing): []}, SubstringEvaluator())


def test_macro_average_is_the_mean_of_item_values_not_pooled():
    rows = pd.DataFrame(
        {
            "condition": ["gold", "gold", "dist"],
            "factor_popularity": ["high", "low", "high"],
            "precision": [1.0, 0.0, 0.5],
            "recall": [1.0, 0.5, 0.5],
            "f1": [1.0, 0.0, 0.5],
            "answer_accuracy": [1.0, np.nan, 0.0],
            "n_response_facts": [1, 9, 2],  # 1 of 1 supported, 0 of 9 supported
            "n_gold_facts": [2, 2, 2],
        }
    )
    table = macro_average(rows).set_index("condition")
    assert table.loc["gold", "precision"] == 0.5  # mean of 1/1 and 0/9
    micro = (1.0 * 1 + 0.0 * 9) / (1 + 9)  # pooled facts: 1 of 10
    assert micro == pytest.approx(0.1) and table.loc["gold", "precision"] != pytest.approx(micro)
    assert table.loc["gold", "answer_accuracy"] == 1.0 and table.loc["gold", "n_answer_accuracy"] == 1
    assert table.loc["gold", "n"] == 2 and table.loc["dist", "f1"] == 0.5
    long = by_factor(rows)
    assert list(long.columns[:3]) == ["condition", "factor", "level"]
    high = long[(long.condition == "gold") & (long.level == "high")].iloc[0]
    assert high["factor"] == "popularity" and high["recall"] == 1.0 and high["n"] == 1
    assert len(long) == 3


def _kaist_records(every: int = 8):
    if not (KAIST / "original_version.json").is_file():
        pytest.skip(f"KAIST grounding release not found at {KAIST}")
    data = json.loads((KAIST / "original_version.json").read_text())
    meta = json.loads((KAIST / "metadata" / "qId2metaInfo.json").read_text())
    records = []
    for qid in sorted(data, key=lambda q: int(q[1:]))[::every]:
        item = data[qid]
        records.append(
            {
                "item_id": qid,
                "version": "original",
                "answers": [a.strip() for a in item["answer"].split("|") if a.strip()],
                "contexts": item["context_list"],
                "atomic_facts": item["atomic_texts"],
                "factors": {
                    "popularity": meta[qid]["pop"],
                    "contexts": "multi" if meta[qid]["has_multi"] else "single",
                    "answer_type": "definite" if meta[qid]["has_answer"] else "free_form",
                },
            }
        )
    return records


@pytest.fixture(scope="module")
def bi_encoder():
    from knowlab.grounding.evaluator import load_evaluator
    from knowlab.grounding.settings import GroundingEvaluatorSettings

    try:
        return load_evaluator(GroundingEvaluatorSettings(kind="bi_encoder"))
    except ModuleNotFoundError as err:
        pytest.skip(f"packaged all-MiniLM-L6-v2 not installed: {err}")


@pytest.mark.slow
def test_kaist_gold_contexts_as_response_and_empty_response(bi_encoder):
    """Default bi-encoder on 60 KAIST questions: the gold contexts as the response recall (nearly) every gold fact;
    an empty response scores 0; a fact at the end of a response longer than the window is still found."""
    items = _kaist_records()
    assert len(items) == 60
    gold = [dict(r, condition="gold_as_response", response="\n\n".join(r["contexts"])) for r in items]
    empty = [dict(r, condition="empty", response="") for r in items]
    # long responses: the contexts of 4 other questions (past the 254-token window), then the gold contexts
    long = [
        dict(
            r,
            condition="long",
            response="\n\n".join([*(c for o in items[i + 1 : i + 5] for c in o["contexts"]), gold[i]["response"]]),
        )
        for i, r in enumerate(items[:8])
    ]
    facts = {response_key(r): r["atomic_facts"] for r in gold + long} | {response_key(r): [] for r in empty}
    rows = score_responses(gold + empty + long, facts, bi_encoder)
    table = macro_average(rows).set_index("condition")
    # measured: 0.948 on this subset (0.976 on all 480 questions)
    assert table.loc["gold_as_response", "recall"] >= 0.9
    assert table.loc["gold_as_response", "precision"] == table.loc["gold_as_response", "recall"]  # same pairs
    # measured 0.73 (27 of 37 definite questions): the misses are "yes"/"no" answers, numbers
    # written otherwise, and answers of several parts joined by " & " (not a substring)
    assert table.loc["gold_as_response", "answer_accuracy"] >= 0.6
    assert (rows.loc[rows.condition == "empty", ["precision", "recall", "f1"]] == 0).all().all()
    assert (rows.loc[rows.condition == "empty", "answer_accuracy"].dropna() == 0).all()
    # the long responses keep every gold fact the gold-only response had: max over more passages
    tokenizer = bi_encoder.tokenizer
    assert all(len(tokenizer.tokenize(r["response"])) > 2 * bi_encoder.window for r in long)
    by_item = rows[rows.condition == "gold_as_response"].set_index("item_id")["recall_support"]
    for _, row in rows[rows.condition == "long"].iterrows():
        assert all(l or not g for l, g in zip(row["recall_support"], by_item[row["item_id"]]))
    assert {"factor_popularity", "factor_contexts", "factor_answer_type"} <= set(rows.columns)
    factors = by_factor(rows)
    assert set(factors["factor"]) == {"popularity", "contexts", "answer_type"}
    counts = factors.groupby(["condition", "factor"])["n"].sum()
    assert counts.loc["gold_as_response"].eq(60).all() and counts.loc["long"].eq(8).all()

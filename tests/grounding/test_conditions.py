"""Grounding conditions: the contexts each (question, condition) record is answered from."""

from __future__ import annotations

import dataclasses
import re

import pytest

from knowlab.grounding.conditions import condition_records
from knowlab.grounding.settings import GroundingConditionSettings, GroundingGenerateSettings, condition_names

CFG = GroundingConditionSettings(
    budget=12, position="random", sweep_budgets=(6, 12), sweep_positions=("start", "random")
)
SETTINGS = GroundingGenerateSettings(conditions=condition_names(CFG), budget=12, position="random")


def _item(version: str, gold: str) -> dict:
    return {
        "item_id": "q1",
        "version": version,
        "source": "fiction",
        "question": "Who?",
        "answers": ["x"],
        "contexts": [gold],
        "atomic_facts": ["f"],
        "factors": {},
        "gold_doc_ids": ["g"],
        "extra": {},
    }


def test_condition_records_contexts_per_condition():
    items = [_item("original", "gold one two"), _item("conflict", "gold one three")]
    pool = {f"d{i}": {"doc_id": f"d{i}", "title": f"t{i}", "text": f"distractor {i} text"} for i in range(4)}
    ranked = {"q1": ["d2", "d0", "d3", "d1"]}
    words = lambda text: len(text.split())
    records = condition_records(items, ["q1"], ranked, pool, SETTINGS, words, seed=5)
    by = {r["condition"]: r for r in records}
    assert (
        list(by)
        == condition_names(CFG)
        == [
            "original_gold",
            "original_dist",
            "conflict_gold",
            "conflict_dist",
            "no_context",
            "length_6",
            "position_start",
        ]
    )
    assert by["original_gold"]["contexts"] == ["gold one two"] and by["original_gold"]["n_distractors"] == 0
    assert by["conflict_gold"]["contexts"] == ["gold one three"] and by["conflict_gold"]["version"] == "conflict"
    assert by["no_context"]["contexts"] == [] and by["no_context"]["context_tokens"] == 0
    assert by["no_context"]["gold_contexts"] == ["gold one two"]
    # budget 12 words: gold (3) + three distractors of 3 words, in rank order
    dist = by["original_dist"]["contexts"]
    assert sorted(dist) == sorted(["gold one two", "distractor 2 text", "distractor 0 text", "distractor 3 text"])
    assert by["original_dist"]["n_distractors"] == 3 and by["original_dist"]["context_tokens"] == 12
    # both versions get the same distractors in the same arrangement; only the gold text differs
    assert [c.replace("three", "two") for c in by["conflict_dist"]["contexts"]] == dist
    assert sorted(by["length_6"]["contexts"]) == ["distractor 2 text", "gold one two"]  # 6 words: the top one
    assert by["position_start"]["contexts"] == [
        "gold one two",
        "distractor 2 text",
        "distractor 0 text",
        "distractor 3 text",
    ]
    # q1 has no conflict-version item: the KeyError names the (question, version) missing
    with pytest.raises(KeyError, match=re.escape("('q1', 'conflict')")):
        only_conflict = dataclasses.replace(SETTINGS, conditions=["conflict_gold"])
        condition_records(items[:1], ["q1"], ranked, pool, only_conflict, words, seed=5)

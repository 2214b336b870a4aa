"""Grounding items from the fiction corpus: Original and Conflict versions by answer substitution."""

from __future__ import annotations

import re

import pytest

from knowlab.core.io import DataError
from knowlab.grounding.fiction import fiction_grounding_items
from knowlab.grounding.schema import check_items



@pytest.fixture(scope="module")
def fiction(corpus):
    """The grounding items of the corpus the default reads (its first ``fiction.shipped.events`` events)."""
    fictions, fict_qa = corpus["fictions"], corpus["fict_qa"]
    return fictions, fict_qa, fiction_grounding_items(fictions, fict_qa, seed=0)


def _absent(entity: str, kind: str, text: str) -> bool:
    """No whole-word occurrence of ``entity`` (first letter either case for number/ordinal/other)."""
    variants = {entity}
    if kind in ("number", "ordinal", "other"):
        variants |= {entity[:1].upper() + entity[1:], entity[:1].lower() + entity[1:]}
    return not any(re.search(rf"(?<![\w£$€]){re.escape(v)}(?![\w])", text) for v in variants)


def test_fiction_items_counts_and_pairing(fiction):
    fictions, fict_qa, (original, conflict, report) = fiction
    assert report["n_qa"] == len(fict_qa) == 240
    assert report["n_items"] == len(original) == len(conflict) == 236
    assert report["n_items"] + sum(report["dropped"].values()) == 240
    assert report["dropped"] == {"answer_not_in_document": 2, "answer_not_in_fact": 1, "no_substitute": 1}
    assert sum(report["kinds"].values()) == 236 and report["kinds"]["number"] > 50
    assert [i["item_id"] for i in original] == [i["item_id"] for i in conflict]
    check_items(original + conflict)
    docs = {f["fiction_id"]: f for f in fictions}
    qa = {q["question_id"]: q for q in fict_qa}
    for item in original:
        q = qa[item["item_id"]]
        assert item["contexts"] == [docs[q["fiction_id"]]["fiction"]]
        assert item["atomic_facts"] == [q["fict"]] and item["answers"] == [q["natural_answer"]]
        assert item["gold_doc_ids"] == [q["fiction_id"]]
        assert item["factors"] == {
            "contexts": "single",
            "answer_type": "definite",
            "style": docs[q["fiction_id"]]["style"],
        }


def test_fiction_substitution_is_consistent(fiction):
    _, _, (original, conflict, _) = fiction
    n_question_changed = 0
    for before, after in zip(original, conflict):
        sub = after["extra"]["substitution"]
        kind, old, new = sub["kind"], sub["original"], sub["substitute"]
        assert old != new and kind == before["extra"]["kind"]
        for entity, _ in sub["pairs"]:
            for text in after["contexts"] + after["atomic_facts"] + after["answers"] + [after["question"]]:
                assert _absent(entity, kind, text), (after["item_id"], entity)
        assert not _absent(new, kind, after["contexts"][0]) and not _absent(new, kind, after["atomic_facts"][0])
        assert not _absent(new, kind, after["answers"][0])
        assert _absent(new, kind, before["contexts"][0])  # the substitute is new to the document
        n_question_changed += before["question"] != after["question"]
        if kind == "year":
            assert re.fullmatch(r"1\d{3}|20\d{2}", new)
        if kind == "number":  # only the numeric token changes: currency and unit are kept
            strip = lambda s: re.sub(r"^[£$€]?[\d.,]+|^[A-Za-z]+(?:-[A-Za-z]+)?", "", s)
            assert strip(old) == strip(new)
    # the answer rarely occurs in its question, but when a surname does (the "Penhallow Barrier") it follows
    assert 0 < n_question_changed < 10


def test_fiction_substitution_examples(fiction):
    _, _, (_, conflict, _) = fiction
    by_id = {i["item_id"]: i for i in conflict}
    river = by_id["event_000_style_news_num_000_question_000"]  # "River Dunley": a place of class water
    assert river["extra"]["kind"] == "place" and river["extra"]["substitution"]["close"]
    coyle = by_id["event_000_style_news_num_000_question_002"]  # "Albert Coyle": a person, surname follows
    sub = coyle["extra"]["substitution"]
    assert sub["kind"] == "person" and sub["pairs"][1][0] == "Coyle"
    assert sub["substitute"] in coyle["atomic_facts"][0] and sub["substitute"] in coyle["contexts"][0]
    six = next(i for i in conflict if i["extra"]["substitution"]["original"] == "six")  # sentence-case "Six"
    assert six["answers"][0][0].isupper() and six["extra"]["kind"] == "number"


def test_fiction_items_are_deterministic_per_seed(fiction):
    fictions, fict_qa, (_, conflict, _) = fiction
    again = fiction_grounding_items(fictions, fict_qa, seed=0)[1]
    assert again == conflict
    other = fiction_grounding_items(fictions, fict_qa, seed=1)[1]
    assert [i["item_id"] for i in other] == [i["item_id"] for i in conflict]
    changed = sum(a["answers"] != b["answers"] for a, b in zip(other, conflict))
    assert changed > len(conflict) // 2


def test_fiction_items_left_out_of_both_versions():
    fictions = [
        {
            "event_id": "e0",
            "fiction_id": "f0",
            "style": "news",
            "fiction": "In 1911 the Carrow River flooded. Rosa Varga led the rescue.",
        },
        {
            "event_id": "e1",
            "fiction_id": "f1",
            "style": "blog",
            "fiction": "In 1958 the Dunley River froze. Edith Marsh skated on it.",
        },
    ]
    qa = [
        {
            "question_id": "q0",
            "fiction_id": "f0",
            "fict": "The Carrow River flooded in 1911.",
            "question": "When did the Carrow River flood?",
            "natural_answer": "1911",
        },
        {
            "question_id": "q1",
            "fiction_id": "f1",
            "fict": "The Dunley River froze in 1958.",
            "question": "When did the Dunley River freeze?",
            "natural_answer": "1958",
        },
        {
            "question_id": "q2",
            "fiction_id": "f0",
            "fict": "Rosa Varga led the rescue.",
            "question": "Who led the rescue?",
            "natural_answer": "Rosa Varga",
        },  # the only person: no substitute
        {
            "question_id": "q3",
            "fiction_id": "f1",
            "fict": "The river froze.",
            "question": "Which river froze?",
            "natural_answer": "Dunley River",
        },  # not in the fict
        {
            "question_id": "q4",
            "fiction_id": "f1",
            "fict": "It froze in March.",
            "question": "When did it freeze?",
            "natural_answer": "March",
        },  # not in the document
    ]
    original, conflict, report = fiction_grounding_items(fictions, qa, seed=3)
    assert [i["item_id"] for i in original] == [i["item_id"] for i in conflict] == ["q0", "q1"]
    assert report["dropped"] == {"no_substitute": 1, "answer_not_in_fact": 1, "answer_not_in_document": 1}
    assert conflict[0]["contexts"] == ["In 1958 the Carrow River flooded. Rosa Varga led the rescue."]
    assert conflict[0]["answers"] == ["1958"] and conflict[0]["atomic_facts"] == ["The Carrow River flooded in 1958."]
    with pytest.raises(DataError, match="fict_qa record q9: fiction_id 'nope' not among the fictions"):
        fiction_grounding_items(fictions, [{**qa[0], "question_id": "q9", "fiction_id": "nope"}], seed=0)

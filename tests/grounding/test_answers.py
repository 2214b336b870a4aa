"""Answer entities: kinds, the split of leading articles, whole-word occurrence and substitution."""

from __future__ import annotations

from knowlab.grounding.answers import (
    answer_entity,
    answer_kind,
    occurs,
    split_answer,
    substituter,
    substitutes,
    substitution_pairs,
)


def test_answer_kinds_and_split():
    assert split_answer("the Corn Exchange") == ("the ", "Corn Exchange")
    assert split_answer("About 2,400") == ("About ", "2,400")
    assert split_answer("Martha Quill") == ("", "Martha Quill")
    cases = {
        "1838": "year",
        "April 1912": "date",
        "6:30 a.m.": "time",
        "£31,000": "number",
        "620 yards": "number",
        "nine days": "number",
        "96th": "ordinal",
        "SOP-12": "code",
        "Albert Coyle": "person",
        "Dr. Joaquim Feld": "person",
        "Canal Road": "place",
        "Greyling & Sons": "name",
        "steel sheet piling": "other",
    }
    assert {a: answer_kind(a) for a in cases} == cases
    assert answer_kind("Stellach", "In which town did stage 2 finish?") == "place"


def test_answer_entity_folds_case_only_where_the_document_has_it():
    text = "The crew worked six days. Six more followed."
    assert answer_entity("q0", "Six", "How long?", text) == {
        "question_id": "q0",
        "form": "six",
        "kind": "number",
        "article": "",
    }
    assert answer_entity("q1", "the Corn Exchange", "Where?", "At the Corn Exchange.")["form"] == "Corn Exchange"
    assert answer_entity("q1", "the Corn Exchange", "Where?", "At the Corn Exchange.")["article"] == "the"
    assert answer_entity("q2", "Albert Coyle", "Who?", "Albert Coyle spoke.")["kind"] == "person"


def test_occurs_is_whole_word_and_never_inside_a_number():
    assert occurs("340", "It cost 340 pounds.", False)
    assert not occurs("340", "It cost $340,000.", False)
    assert not occurs("Coyle", "Coyles went home.", False)
    assert occurs("six", "Six days.", True) and not occurs("six", "Six days.", False)


def test_substitutes_prefer_close_candidates_and_skip_used_ones():
    entries = [
        {"question_id": "a", "form": "620 yards", "kind": "number", "article": ""},
        {"question_id": "b", "form": "94 yards", "kind": "number", "article": ""},
        {"question_id": "c", "form": "12000 yards", "kind": "number", "article": ""},
        {"question_id": "d", "form": "71 yards", "kind": "number", "article": ""},
    ]
    assert substitutes(entries[0], entries, ["The wall ran 620 yards."]) == (["71 yards", "94 yards"], True)
    assert substitutes(entries[0], entries, ["620 yards, then 94 yards and 71 yards after."]) == (
        ["12000 yards"],
        False,
    )
    assert substitutes(entries[0], entries[:1], ["620 yards"]) == ([], False)


def test_substitution_pairs_and_substituter():
    assert substitution_pairs("Albert Coyle", "Rosa Varga", "person") == {
        "Albert Coyle": "Rosa Varga",
        "Coyle": "Varga",
    }
    assert substitution_pairs("Canal Road", "Mill Lane", "place") == {"Canal Road": "Mill Lane"}
    replace = substituter({"six": "eight"}, True)
    assert replace("Six came; a six-day wait, then six.") == "Eight came; an eight-day wait, then eight."
    assert substituter({"orange": "pear"}, False)("an orange") == "a pear"

"""Parsers of the fiction pipeline's LLM outputs, on the authors' real outputs and on bad ones."""

from collections import Counter

import pytest

from knowlab.core.io import DataError
from knowlab.fiction.release import parse_fictsheet
from knowlab.fiction_generation.parse import parse_attempt, parse_grade, parse_seed


@pytest.mark.parametrize("name", ["blind_grades", "informed_grades"])
def test_every_recorded_grade_parses_strictly(name, recorded):
    grades = [parse_grade(text, key) for key, text in recorded(name).items()]
    assert len(grades) == {"blind_grades": 36, "informed_grades": 68}[name]
    assert all(reasoning and not reasoning.startswith("Reasoning") for _, reasoning in grades)
    counts = Counter(correct for correct, _ in grades)
    assert counts[True] and counts[False]


def test_recorded_seed_fictsheet_and_attempts_parse(recorded):
    (seed_text,) = recorded("seeds").values()
    seed = parse_seed(seed_text, "event_000")
    assert seed.startswith("The Ring of Silence Protocol of 2046.") and "\n" not in seed
    (sheet_text,) = recorded("fictsheets").values()
    sheet = parse_fictsheet(sheet_text)
    assert sheet["entities"][0].startswith("Isabelle Chang") and len(sheet["events"]) == 6
    attempts = [parse_attempt(text) for text in recorded("blind_answer_attempts").values()]
    assert sum(unknown for _, unknown in attempts) == 9  # the replies that are exactly UNKNOWN_ANSWER


def test_grade_parser_rejects_what_is_not_strictly_a_grade():
    assert parse_grade("Reasoning: same year.\n\nGrade: CORRECT", "k") == (True, "same year.")
    assert parse_grade("Reasoning: no.\nGrade: INCORRECT\n", "k") == (False, "no.")
    for bad, message in [
        (
            "Reasoning: close enough.\n\nGrade: PARTIALLY CORRECT",
            "grade line 'Grade: PARTIALLY CORRECT' matches neither 'Grade: CORRECT' nor 'Grade: INCORRECT'",
        ),
        ("Reasoning: fine.\n\nGrade: correct", "grade line 'Grade: correct' matches neither"),
        ("Reasoning: fine.\n\n**Grade: CORRECT**", r"expected one 'Grade: CORRECT\|INCORRECT' line, found no"),
        ("The answer is right.", r"expected one 'Grade: CORRECT\|INCORRECT' line, found no"),
        ("Grade: CORRECT\nGrade: INCORRECT", r"expected one 'Grade: CORRECT\|INCORRECT' line, found 2"),
    ]:
        with pytest.raises(DataError, match=f"event_000_style_news_num_000_question_000_grade_blind: {message}"):
            parse_grade(bad, "event_000_style_news_num_000_question_000_grade_blind")


def test_attempt_and_seed_parsers():
    assert parse_attempt("UNKNOWN_ANSWER") == ("UNKNOWN_ANSWER", True)
    assert parse_attempt(" unknown_answer. ")[1] is True
    assert parse_attempt("It was 2046; UNKNOWN_ANSWER otherwise")[1] is False
    assert parse_seed("* The Flood of 1911. Water rose.\n\n* A second idea.", "k") == "The Flood of 1911. Water rose."
    with pytest.raises(DataError, match="k: empty seed response"):
        parse_seed("  \n", "k")

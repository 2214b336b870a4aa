"""Answer entities: their kinds and their substitution by another question's entity of the same kind.

The mechanism behind the fiction-derived Conflict version (:func:`knowlab.grounding.fiction.fiction_grounding_items`),
this project's automatic analogue of the paper's Step 4 "Modify Context" (Lee et al. 2024, "How Well Do Large
Language Models Truly Ground?", Sec. 3): the entity of an answer (:func:`split_answer`,
:func:`answer_kind`, :func:`answer_entity`) is replaced, wherever it occurs as a whole word or
phrase (:func:`occurs`), by a substitute drawn from the entities of other questions
(:func:`substitutes`, :func:`substitution_pairs`, :func:`substituter`).  The rules are written
out in :func:`knowlab.grounding.fiction.fiction_grounding_items`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

_MONTHS = "January|February|March|April|May|June|July|August|September|October|November|December"
_DAYS = "Mondays?|Tuesdays?|Wednesdays?|Thursdays?|Fridays?|Saturdays?|Sundays?"
_UNITS = (
    "one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|thirteen|fourteen|fifteen|sixteen|"
    "seventeen|eighteen|nineteen"
)
_TENS = "twenty|thirty|forty|fifty|sixty|seventy|eighty|ninety"
_NUMBER_WORD = rf"(?:(?:{_TENS})(?:-(?:{_UNITS}))?|{_UNITS})"
_ORDINAL_WORD = (
    "first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|eleventh|twelfth|thirteenth|"
    "fourteenth|fifteenth|sixteenth|seventeenth|eighteenth|nineteenth|twentieth|thirtieth|fortieth|fiftieth"
)
_DIGITS = r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?"
_NUMBER = re.compile(rf"(?P<prefix>[£$€]?)(?P<num>{_DIGITS}|{_NUMBER_WORD})(?P<rest>%|\s\D*)?", re.IGNORECASE)
_ORDINAL = re.compile(rf"(?P<prefix>)(?P<num>\d+(?:st|nd|rd|th)|{_ORDINAL_WORD})(?P<rest>\s\D*)?", re.IGNORECASE)
_YEAR = re.compile(r"1\d{3}|20\d{2}")
_DATE = re.compile(rf".*\b(?:{_MONTHS}|{_DAYS})\b.*")
_TIME = re.compile(r"\d{1,2}(?::\d{2})?\s*[ap]\.m\.|\d{1,2}:\d{2}", re.IGNORECASE)
_LEADING = re.compile(
    r"(?P<lead>(?:(?:the|a|an|about|around|some|approximately|roughly|nearly|almost|over)\s+)*)(?P<core>.*)",
    re.IGNORECASE | re.DOTALL,
)
_TITLES = {"Dr.", "Mr.", "Mrs.", "Ms.", "Miss", "Prof.", "Sir", "Dame", "Alderman"}
_NAME_WORD = re.compile(r"[A-Z][\w'’.-]*|&|of|and|de|van|von|on|the")
_PERSON_WORD = re.compile(r"[A-Z](?:[a-z'’]+(?:-[A-Z][a-z'’]+)?|\.)")
# Head words of place names by class (a name whose last or first word is one of them is a place);
# substitutes for a place prefer places of the same class ("River Dunley" -> "Carrow River").
_PLACE_CLASSES = {
    "street": "Row Street Road Lane Avenue Way Square",
    "water": "River Lake Bay Creek Falls Spring Springs Harbour Harbor Ford Wharf Quay Dock",
    "land": "Range Hill Hills Ridge Island Isle Point Valley Mount Mt. Heights Flats Coast Cape Park Wood Woods",
    "settlement": "Junction Crossing Port Town Village County District Quarter Fort Gate Cross Green Field Fields",
}
_PLACE_CLASS = {word: cls for cls, words in _PLACE_CLASSES.items() for word in words.split()}
_PLACE_FIRST = {"Port", "Mount", "Mt.", "Lake", "Fort", "Cape", "River"}
# Head words of organisations, buildings and things (such a name is not a person; class "building").
_ORG_WORDS = (
    "Company Co. Inc. Ltd. Trust Association Society Club Cooperative Council Committee Board Authority "
    "Sanitation Analytical Laboratory Laboratories Nutrition Marine Refit Mining Museum Centre Center "
    "Hall Hospital School College University Library Archive Church Chapel Station Market Mill Works "
    "Store Shop Grocery Bakery Brewery Exchange Inn Arms Tavern Hotel Farm Book Log Ledger Shelf Watch "
    "Rye Bread Gazette Times News Herald Press"
)
_ORG_LAST = set(_ORG_WORDS.split())
_PLACE_QUESTION = re.compile(
    r"\bwhere\b|\b(?:which|what) (?:town|city|village|street|road|river|island|range|mountain range|district|"
    r"county|country|waterfall|place|port|harbour|site)\b",
    re.IGNORECASE,
)
KINDS = ("year", "date", "time", "number", "ordinal", "code", "person", "place", "name", "other")
#: kinds whose entity matches with its first letter in either case ("Six" is "six" mid-sentence)
FOLD_CASE_KINDS = frozenset({"number", "ordinal", "other"})


def split_answer(answer: str) -> tuple[str, str]:
    """``(lead, core)`` of an answer: leading articles and approximators (the, a, an, about, around,
    some, approximately, roughly, nearly, almost, over) and the entity after them, e.g.
    ``"the Corn Exchange"`` -> ``("the ", "Corn Exchange")``, ``"About 2,400"`` -> ``("About ", "2,400")``;
    ``("", answer)`` when nothing would be left."""
    match = _LEADING.fullmatch(answer.strip())
    if not match["core"].strip():
        return "", answer.strip()
    return match["lead"], match["core"].strip()


def answer_kind(core: str, question: str = "") -> str:
    """The kind of an answer entity (:func:`split_answer` core), the first rule that fits; substitutes
    are drawn within a kind (:func:`substitutes`):

    - ``year``: a 4-digit year 1000-2099 (``"1838"``);
    - ``date``: holds a month or weekday name (``"April 1912"``, ``"Tuesdays"``);
    - ``time``: a clock time (``"6:30 a.m."``, ``"6:40"``);
    - ``number``: a number (digits or the words one..ninety-nine) with an optional currency
      prefix and a unit or ``%`` after it (``"340"``, ``"£31,000"``, ``"620 yards"``, ``"nine days"``);
    - ``ordinal``: ``"96th"``, ``"fourth"``, ``"seventh day"``;
    - ``code``: anything else holding a digit (``"SOP-12"``, ``"Form R-3"``, ``"5-2"``);
    - ``person``: 2-4 capitalised name words, optionally after a title (``Dr.``), none of them a
      place or organisation head word (``Row``, ``River``, ``Company``...; lists in the source);
    - ``place``: a capitalised name with a place head word (``"Canal Road"``, ``"Port Sennet"``;
      classes street, water, land, settlement), or asked for by "where" / "which
      town|street|river|..." (``"Stellach"``, ``"Hadley's Grocery"``);
    - ``name``: any other name, every word capitalised (``"Greyling & Sons"``, ``"PeakDraw"``);
    - ``other``: the rest (``"steel sheet piling"``, ``"daffodils"``, ``"Sour cherry pie"``).
    """
    if _YEAR.fullmatch(core):
        return "year"
    if _DATE.fullmatch(core):
        return "date"
    if _TIME.fullmatch(core):
        return "time"
    if _NUMBER.fullmatch(core):
        return "number"
    if _ORDINAL.fullmatch(core):
        return "ordinal"
    if re.search(r"\d", core):
        return "code"
    words = core.split()
    if not words or not (words[0][:1].isupper() and all(_NAME_WORD.fullmatch(w) for w in words)):
        return "other"
    place = words[-1] in _PLACE_CLASS or words[0] in _PLACE_FIRST
    if _person_words(words) and not place and words[-1] not in _ORG_LAST:
        return "person"
    if place or _PLACE_QUESTION.search(question):
        return "place"
    return "name"


def _place_class(name: str) -> str:
    """street | water | land | settlement (head word), building (organisation head word) or ""."""
    words = name.split()
    if words[-1] in _PLACE_CLASS:
        return _PLACE_CLASS[words[-1]]
    if words[-1] in _ORG_LAST:
        return "building"
    return _PLACE_CLASS.get(words[0], "")


def _person_words(words: Sequence[str]) -> list[str]:
    """The name words of a person name (a leading title dropped), or [] when ``words`` is not one."""
    names = list(words[1:]) if words and words[0] in _TITLES else list(words)
    if 2 <= len(names) <= 4 and all(_PERSON_WORD.fullmatch(w) for w in names) and len(names[-1]) > 2:
        return names
    return []


def _entity_pattern(entity: str, fold_case: bool) -> str:
    """Regex of ``entity`` as a whole word/phrase: regex word boundaries where it starts/ends with a
    word character, and never inside a bigger number (``"340"`` does not match in ``"$340,000"``);
    with ``fold_case`` its first letter matches either case."""
    body = re.escape(entity)
    if fold_case and entity[:1].isalpha():
        body = f"[{entity[0].upper()}{entity[0].lower()}]" + re.escape(entity[1:])
    left = r"(?<![\w£$€])(?<!\d[.,])" if re.match(r"\w", entity) else ""
    right = r"(?!\w)(?![.,]\d)" if re.search(r"\w$", entity) else ""
    return left + body + right


def occurs(entity: str, text: str, fold_case: bool) -> bool:
    """True when ``entity`` occurs in ``text`` as a whole word/phrase (:func:`_entity_pattern`); with
    ``fold_case`` its first letter matches either case."""
    return re.search(_entity_pattern(entity, fold_case), text) is not None


def substituter(mapping: Mapping[str, str], fold_case: bool) -> Callable[[str], str]:
    """A function replacing every occurrence of each key of ``mapping`` by its value, longest key first,
    in one pass; occurrences are whole words/phrases as in :func:`occurs`.  A preceding article
    ``a``/``an`` is made to fit the new word; with ``fold_case`` an occurrence capitalised where the
    key is lower case (sentence start) gets a capitalised value."""
    keys = sorted(mapping, key=len, reverse=True)
    alternatives = "|".join(f"(?P<k{i}>{_entity_pattern(k, fold_case)})" for i, k in enumerate(keys))
    pattern = re.compile(rf"(?:(?P<art>\b[Aa]n?) )?(?:{alternatives})")

    def replace(match: re.Match) -> str:
        i = next(i for i in range(len(keys)) if match.group(f"k{i}") is not None)
        found, new = match.group(f"k{i}"), mapping[keys[i]]
        if fold_case and found[:1].isupper() and keys[i][:1].islower():
            new = new[:1].upper() + new[1:]
        art = match.group("art") or ""
        if art and new[:1].isalpha():
            article = "an" if new[0].lower() in "aeiou" else "a"
            art = article.capitalize() if art[0].isupper() else article
        return f"{art} {new}" if art else new

    return lambda text: pattern.sub(replace, text)


def _numeric_parts(core: str, kind: str) -> tuple[str, str, str]:
    match = (_NUMBER if kind == "number" else _ORDINAL).fullmatch(core)
    return match["prefix"], match["num"], match["rest"] or ""


def _magnitude(num: str) -> float | None:
    """log10 of a digit number (None for number words and zero)."""
    if num[:1].isalpha():
        return None
    value = float(re.match(r"[\d,.]*\d", num)[0].replace(",", ""))
    return math.log10(value) if value > 0 else None


def _shape(text: str) -> str:
    """Token shape of a date, time or code: month -> M, 4 digits -> Y, digits -> 9, capitalised word
    -> A, lower-case word -> a, other characters kept (``"Form R-3"`` -> ``"A A - 9"``)."""
    out = []
    for tok in re.findall(r"[^\W\d_]+|\d+|\S", text):
        if re.fullmatch(_MONTHS, tok):
            out.append("M")
        elif tok.isdigit():
            out.append("Y" if len(tok) == 4 else "9")
        elif tok.isalpha():
            out.append("A" if tok[0].isupper() else "a")
        else:
            out.append(tok)
    return " ".join(out)


def _article(lead: str) -> str:
    word = lead.split()[0].lower() if lead.split() else ""
    return {"an": "a"}.get(word, word) if word in ("the", "a", "an") else ""


def _candidates(entry: dict[str, Any], entries: Sequence[dict[str, Any]]) -> list[tuple[str, bool]]:
    """``(phrase, close)`` substitutes for ``entry`` from the OTHER questions' entities of its kind,
    sorted; ``close`` marks the preferred ones (same shape, see :func:`substitutes`)."""
    kind, form = entry["kind"], entry["form"]
    others = [e for e in entries if e["kind"] == kind and e["question_id"] != entry["question_id"]]
    out: dict[str, bool] = {}
    if kind in ("number", "ordinal"):
        prefix, num, rest = _numeric_parts(form, kind)
        mag = _magnitude(num)
        for other in others:
            cand = _numeric_parts(other["form"], kind)[1]
            if cand[:1].isalpha() != num[:1].isalpha() or cand.lower() == num.lower():
                continue
            cand = cand.lower() if cand[:1].isalpha() else cand
            cmag = _magnitude(cand)
            close = mag is None or (cmag is not None and ("." in cand) == ("." in num) and abs(cmag - mag) <= 1)
            out[prefix + cand + rest] = out.get(prefix + cand + rest, False) or close
    else:
        for other in others:
            if kind in ("date", "time", "code"):
                close = _shape(other["form"]) == _shape(form)
            elif kind in ("place", "name", "other"):
                close = other["article"] == entry["article"]
                if kind == "place":
                    close = close and _place_class(other["form"]) == _place_class(form)
                if kind == "other":
                    close = close and len(other["form"].split()) == len(form.split())
            else:
                close = True
            out[other["form"]] = out.get(other["form"], False) or close
    low = form.lower()
    return sorted((p, c) for p, c in out.items() if low not in p.lower() and p.lower() not in low)


def _unused(phrase: str, texts: Sequence[str], fold_case: bool, person: bool) -> bool:
    """True when ``phrase`` (and, for a person, its surname) occurs in none of ``texts``."""
    names = [phrase] + (_person_words(phrase.split())[-1:] if person else [])
    return all(not occurs(name, text, fold_case) for name in names for text in texts)


def answer_entity(question_id: str, answer: str, question: str, document: str) -> dict[str, Any]:
    """The entity of one answer as substitution handles it.

    ``form`` is the :func:`split_answer` core of ``answer`` (``"the Corn Exchange"`` ->
    ``"Corn Exchange"``); for the kinds of :data:`FOLD_CASE_KINDS` it is the form with a
    lower-case first letter when that occurs in ``document`` (``"Six"`` -> ``"six"``).

    Returns:
        ``{"question_id", "form", "kind" (:func:`answer_kind`), "article"}``, where
        ``article`` is the leading article of the answer (``"the"``, ``"a"`` for a/an, or ``""``).
    """
    lead, core = split_answer(answer)
    kind = answer_kind(core, question)
    lower = core[:1].lower() + core[1:]
    form = lower if kind in FOLD_CASE_KINDS and occurs(lower, document, False) else core
    return {"question_id": question_id, "form": form, "kind": kind, "article": _article(lead)}


def substitutes(
    entry: Mapping[str, Any], entries: Sequence[Mapping[str, Any]], texts: Sequence[str]
) -> tuple[list[str], bool]:
    """Substitutes for ``entry`` (an :func:`answer_entity`) among the ``entries`` of other questions.

    Candidates are the entities of OTHER questions of the same kind, sorted, that do not contain
    and are not contained in the entity, and that occur in none of ``texts`` (for a person, its
    surname neither); when some of them are "close" only those are kept: numbers and ordinals
    replace only the numeric token, by one written the same way (digits or words), digits
    within a factor of 10 and both integer or both decimal, so that currency and unit stay;
    dates, times and codes of the same token shape; places, names and other answers with the
    same leading article (places: also the same head-word class, street/water/land/settlement/
    building; other: also the same word count).

    Returns:
        ``(phrases, close)``: the sorted candidates (``[]`` when there is none) and whether
        they are the close ones.
    """
    fold = entry["kind"] in FOLD_CASE_KINDS
    person = entry["kind"] == "person"
    valid = [(p, close) for p, close in _candidates(entry, entries) if _unused(p, texts, fold, person)]
    close = any(c for _, c in valid)
    return [p for p, c in valid if c == close], close


def substitution_pairs(form: str, new: str, kind: str) -> dict[str, str]:
    """``{old: new}`` strings to replace: the entity by its substitute, and for a person the surname
    standing alone by the substitute's surname (``{"Albert Coyle": "Rosa Varga", "Coyle": "Varga"}``)."""
    pairs = {form: new}
    if kind == "person" and _person_words(new.split()):
        pairs[_person_words(form.split())[-1]] = _person_words(new.split())[-1]
    return pairs

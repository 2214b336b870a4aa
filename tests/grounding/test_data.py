"""Grounding items: the KAIST release (real files and malformed copies), item checks, and fiction items by substitution."""

from __future__ import annotations

import copy
import json
import re
from collections import Counter
from pathlib import Path

import pytest

from knowlab.grounding.data import (
    answer_kind,
    check_items,
    fiction_grounding_items,
    load_kaist_release,
    match_gold_docs,
    parse_answers,
    render_kaist_doc,
    split_answer,
)
from knowlab.core.io import DataError, read_jsonl

ROOT = Path(__file__).resolve().parents[2]
KAIST = Path(__file__).resolve().parents[3] / "shared" / "data" / "grounding_kaist"
FICTION = ROOT / "data" / "fiction"


@pytest.fixture(scope="module")
def kaist():
    if not (KAIST / "original_version.json").is_file():
        pytest.skip(f"KAIST grounding release not found at {KAIST}")
    return load_kaist_release(KAIST)


@pytest.fixture(scope="module")
def fiction():
    fictions, fict_qa = read_jsonl(FICTION / "fictions.jsonl"), read_jsonl(FICTION / "fict_qa.jsonl")
    return fictions, fict_qa, fiction_grounding_items(fictions, fict_qa, seed=0)


# --------------------------------------------------------------------------- real KAIST release


def test_real_release_counts_factors_and_pairing(kaist):
    original, conflict, pool = kaist
    assert len(original) == len(conflict) == 480 and len(pool) == 2620
    assert [i["item_id"] for i in original] == [i["item_id"] for i in conflict]
    assert {i["version"] for i in original} == {"original"} and {i["version"] for i in conflict} == {"conflict"}
    check_items(original + conflict)
    meta = json.loads((KAIST / "metadata" / "qId2metaInfo.json").read_text())
    for item in original:
        m = meta[item["item_id"]]
        assert item["factors"] == {
            "popularity": m["pop"],
            "contexts": "multi" if m["has_multi"] else "single",
            "answer_type": "definite" if m["has_answer"] else "free_form",
        }
    answer_types = Counter(i["factors"]["answer_type"] for i in original)
    assert answer_types == {"definite": 260, "free_form": 220}
    assert Counter(i["factors"]["contexts"] for i in original) == {"single": 400, "multi": 80}
    # free-form questions have no alternatives; definite ones do (except the two empty revised answers)
    assert all(bool(i["answers"]) == (i["factors"]["answer_type"] == "definite") for i in original)
    missing = sorted(i["item_id"] for i in conflict if i["extra"].get("answer_missing"))
    assert missing == ["Q102", "Q111"]
    by_id = {i["item_id"]: i for i in conflict}
    assert by_id["Q7"]["answers"] == ["None"]
    assert original[0]["item_id"] == "Q7"
    assert original[0]["answers"] == ["the son of Sigimer", "a prince of the nation"]
    assert pool[0]["title"] == "Lisztomania" and pool[0]["text"].startswith("Lisztomania or Liszt fever")


def test_real_release_gold_doc_ids(kaist):
    original, conflict, pool = kaist
    docs = {d["doc_id"]: d for d in pool}
    n_contexts = sum(len(i["contexts"]) for i in original)
    n_fallback = sum(i["extra"]["gold_title_fallback"] for i in original)
    assert (n_contexts, n_fallback) == (682, 13)
    exact = 0
    for item in original:
        assert item["gold_doc_ids"], item["item_id"]
        rendered = {render_kaist_doc(docs[d]).strip() for d in item["gold_doc_ids"]}
        exact += sum(c.strip() in rendered for c in item["contexts"])
        titles = {re.match(r"Title: (.*?) \[", c)[1] for c in item["contexts"]}
        assert {docs[d]["title"] for d in item["gold_doc_ids"]} <= titles
    assert exact == 669
    # the conflict version keeps the gold documents of its original
    assert [i["gold_doc_ids"] for i in original] == [i["gold_doc_ids"] for i in conflict]
    # duplicated pool texts: one context of Q15 matches two ids
    q15 = next(i for i in original if i["item_id"] == "Q15")
    assert {"L_DOC85", "L_DOC396"} <= set(q15["gold_doc_ids"])


def test_parse_answers():
    assert parse_answers("the son of Sigimer | a prince of the nation") == [
        "the son of Sigimer",
        "a prince of the nation",
    ]
    assert parse_answers("Unilever & England") == ["Unilever & England"]
    assert parse_answers(" | ") == [] and parse_answers("") == []
    assert parse_answers("a||b |") == ["a", "b"]


# --------------------------------------------------------------------------- malformed release copies


def _doc(title: str, text: str) -> tuple[str, str]:
    return f"Title: {title} [https://en.wikipedia.org/wiki/{title}]\n", text


def _write_release(root: Path, original: dict, conflict: dict, meta: dict) -> Path:
    docs = {
        "L_DOC0": _doc("Alpha", "Alpha is a town."),
        "L_DOC1": _doc("Alpha", "Alpha has a river."),
        "L_DOC2": _doc("Beta", "Beta is a river."),
    }
    (root / "metadata").mkdir(parents=True, exist_ok=True)
    (root / "original_version.json").write_text(json.dumps(original))
    (root / "revised_version.json").write_text(json.dumps(conflict))
    (root / "metadata" / "qId2metaInfo.json").write_text(json.dumps(meta))
    (root / "metadata" / "localDocId2title.json").write_text(json.dumps({k: v[0] for k, v in docs.items()}))
    (root / "metadata" / "localDocId2localDocText.json").write_text(json.dumps({k: v[1] for k, v in docs.items()}))
    return root


def _release():
    alpha = "Title: Alpha [https://en.wikipedia.org/wiki/Alpha]\n\nAlpha is a town."
    beta_cut = "Title: Beta [https://en.wikipedia.org/wiki/Beta]\n\nBeta is a river"  # not an exact pool text
    original = {
        "Q1": {
            "qId": "Q1",
            "qText": "What is Alpha?",
            "answer": "a town | town",
            "atomic_texts": ["Alpha is a town."],
            "context_list": [alpha],
        },
        "Q2": {
            "qId": "Q2",
            "qText": "Describe Beta.",
            "answer": "",
            "atomic_texts": ["Beta is a river."],
            "context_list": [beta_cut],
        },
    }
    conflict = copy.deepcopy(original)
    conflict["Q1"]["answer"] = "a city"
    conflict["Q1"]["context_list"] = [alpha.replace("town", "city")]
    meta = {
        "Q1": {"has_answer": True, "has_multi": False, "pop": "high"},
        "Q2": {"has_answer": False, "has_multi": False, "pop": "low"},
    }
    return original, conflict, meta


def test_small_release_reads(tmp_path):
    original, conflict, pool = load_kaist_release(_write_release(tmp_path, *_release()))
    assert [i["answers"] for i in original] == [["a town", "town"], []]
    assert conflict[0]["answers"] == ["a city"] and conflict[0]["version"] == "conflict"
    assert original[0]["gold_doc_ids"] == ["L_DOC0"] and original[0]["extra"]["gold_title_fallback"] == 0
    assert original[1]["gold_doc_ids"] == ["L_DOC2"] and original[1]["extra"]["gold_title_fallback"] == 1
    assert conflict[0]["gold_doc_ids"] == ["L_DOC0"]
    assert original[1]["factors"] == {"popularity": "low", "contexts": "single", "answer_type": "free_form"}
    assert [d["title"] for d in pool] == ["Alpha", "Alpha", "Beta"]
    assert match_gold_docs([render_kaist_doc(pool[1]) + "\n"], pool) == (["L_DOC1"], 0)


def test_record_without_atomic_facts_names_file_and_qid(tmp_path):
    original, conflict, meta = _release()
    conflict["Q2"]["atomic_texts"] = []
    with pytest.raises(DataError, match=r"revised_version\.json.*Q2.*atomic"):
        load_kaist_release(_write_release(tmp_path, original, conflict, meta))
    del original["Q1"]["atomic_texts"]
    with pytest.raises(DataError, match=r"original_version\.json.*Q1.*atomic_texts"):
        load_kaist_release(_write_release(tmp_path, original, conflict, meta))


def test_separator_only_answer(tmp_path):
    original, conflict, meta = _release()
    original["Q1"]["answer"] = " | "
    with pytest.raises(DataError, match=r"original_version\.json.*Q1.*separators"):
        load_kaist_release(_write_release(tmp_path, original, conflict, meta))
    original, conflict, meta = _release()
    original["Q2"]["answer"] = conflict["Q2"]["answer"] = " | "  # free-form: treated as no answer
    items, _, _ = load_kaist_release(_write_release(tmp_path, original, conflict, meta))
    assert items[1]["answers"] == []


def test_missing_factor_entry_names_qid_and_metadata_file(tmp_path):
    original, conflict, meta = _release()
    del meta["Q2"]
    with pytest.raises(DataError, match=r"qId2metaInfo\.json.*missing factor entry.*Q2"):
        load_kaist_release(_write_release(tmp_path, original, conflict, meta))


def test_definite_question_without_alternatives(tmp_path):
    original, conflict, meta = _release()
    original["Q1"]["answer"] = ""
    with pytest.raises(DataError, match=r"original_version\.json.*Q1.*no answer alternatives"):
        load_kaist_release(_write_release(tmp_path, original, conflict, meta))
    # the revised file may leave a definite answer empty (as Q102/Q111 of the release): kept, flagged
    original, conflict, meta = _release()
    conflict["Q1"]["answer"] = ""
    _, items, _ = load_kaist_release(_write_release(tmp_path, original, conflict, meta))
    assert items[0]["answers"] == [] and items[0]["extra"]["answer_missing"] is True


def test_versions_with_different_qids_are_rejected(tmp_path):
    original, conflict, meta = _release()
    del conflict["Q2"]
    with pytest.raises(DataError, match="different qIds"):
        load_kaist_release(_write_release(tmp_path, original, conflict, meta))


# --------------------------------------------------------------------------- check_items


def _item(**changes):
    item = {
        "item_id": "Q1",
        "version": "original",
        "source": "kaist",
        "question": "What?",
        "answers": ["x"],
        "contexts": ["c"],
        "atomic_facts": ["f"],
        "gold_doc_ids": ["L_DOC0"],
        "extra": {},
        "factors": {"popularity": "high", "contexts": "single", "answer_type": "definite"},
    }
    item.update(changes)
    return item


@pytest.mark.parametrize(
    "changes, message",
    [
        ({"atomic_facts": []}, "atomic_facts"),
        ({"contexts": []}, "contexts"),
        ({"version": "revised"}, "version"),
        ({"factors": ["single"]}, "factors"),
        ({"factors": {"popularity": "high", "contexts": "single", "answer_type": 1}}, "factors"),
        ({"factors": {"popularity": "mid", "contexts": "single", "answer_type": "definite"}}, "popularity"),
        ({"answers": "x"}, "answers"),
    ],
)
def test_check_items_names_the_item(changes, message):
    check_items([_item()])
    with pytest.raises(DataError, match=rf"'Q1'.*{message}"):
        check_items([_item(**changes)])


def test_check_items_missing_key_and_duplicates():
    item = _item()
    del item["gold_doc_ids"]
    with pytest.raises(DataError, match=r"'Q1'.*missing key 'gold_doc_ids'"):
        check_items([item])
    with pytest.raises(DataError, match=r"'Q1'.*duplicate"):
        check_items([_item(), _item()])


# --------------------------------------------------------------------------- fiction items


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
    with pytest.raises(DataError, match="q9"):
        fiction_grounding_items(fictions, [{**qa[0], "question_id": "q9", "fiction_id": "nope"}], seed=0)


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

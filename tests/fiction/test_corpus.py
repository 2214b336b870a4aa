"""The shipped fiction corpus and its schema (knowlab.fiction; MCQ construction: tests/fictionalqa/test_mcq.py)."""

import hashlib
import json
import re
import shutil
from collections import Counter
from pathlib import Path

import pytest
import yaml

from knowlab.core.io import DataError, HashMismatchError
from knowlab.fiction.corpus import first_events, load_fiction
from knowlab.fiction.settings import FictionCorpusSettings
from knowlab.fiction.schema import STYLES, TABLES, read_corpus

ROOT = Path(__file__).resolve().parents[2]
CONFIG = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())


def test_shipped_corpus_meets_the_design(shipped_corpus):
    corpus = shipped_corpus
    events = {r["event_id"] for r in corpus["seeds"]}
    assert len(events) >= 24  # issue 56: sign flips over 24 events reach 2 / 2^24
    assert {r["event_id"] for r in corpus["fictsheets"]} == events
    per_style = Counter((r["event_id"], r["style"]) for r in corpus["fictions"])
    assert set(per_style) == {(e, s) for e in events for s in STYLES}
    assert min(per_style.values()) >= 2
    per_doc = Counter(q["fiction_id"] for q in corpus["fict_qa"])
    assert set(per_doc) == {r["fiction_id"] for r in corpus["fictions"]}
    assert min(per_doc.values()) >= 3
    text = {r["fiction_id"]: r["fiction"] for r in corpus["fictions"]}
    for q in corpus["fict_qa"]:
        assert q["span_answer"] in text[q["fiction_id"]], q["question_id"]
    for sheet in corpus["fictsheets"]:
        assert sheet["entities"] and sheet["events"] and "**Entities:**" in sheet["fictsheet"]
    for doc in corpus["fictions"]:
        assert 150 <= len(doc["fiction"].split()) <= 400


# the 6 events the corpus shipped until 2026-11-29: their lines, the first of each file, hash as the
# files did then (the pins of config/config.yaml at 3aad90a)
FIRST_SIX = {
    "seeds": "3f9c76b976c10267ce78a4c4acf78db75923c7cacf8d41a40100d75f118a3133",
    "fictsheets": "b7873bb6941b72c78b69dfd5fc52a197df6c69946d3055498c45aeba22fa374a",
    "fictions": "2001bd5e69732a03b7c377b4f205660dfe749c7173a25ac6698ad6f44f659c18",
    "fict_qa": "7b80d475700afc1652d4e58146d4223de0d3cd4be7651465c82d08ab5ede663a",
}


def test_the_first_six_events_are_the_corpus_shipped_before_unchanged():
    for table, pin in FIRST_SIX.items():
        lines = (ROOT / "data" / "fiction" / f"{table}.jsonl").read_bytes().splitlines(keepends=True)
        first = b"".join(line for line in lines if json.loads(line)["event_id"] < "event_006")
        assert hashlib.sha256(first).hexdigest() == pin, table


# words of a multi-word capitalised name that many events may share: titles, months, "The X", kinds of body
GENERIC = re.compile(
    r"^(The|In|On|Under|At|By|From|For|To|Circular|Standard|Operating|Procedure|General|Operations|Managing|Chief|"
    r"Executive|Annual|Report|Special|Meeting|Board|Committee|Society|Institute|Secretary|Treasurer|Assembly|Rooms|"
    r"Manager|Director|Rule|Night|January|February|March|April|May|June|July|August|September|October|November|December|"
    r"Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday|No)$"
)


def _names(text: str) -> set[str]:
    """The multi-word capitalised names in ``text`` that are not made only of generic words."""
    found = re.findall(r"\b([A-Z][a-z]+(?:[ -][A-Z][a-z]+)+)\b", text)
    return {name for name in found if not all(GENERIC.match(word) for word in re.split(r"[ -]", name))}


def test_names_places_and_dates_do_not_repeat_across_events(shipped_corpus):
    """Each event's people, organisations and places (its fictsheet's entities and locations, and every
    multi-word name in its documents) and its fictsheet's dates belong to it alone: a question about one
    event cannot be answered from another's facts."""
    owners: dict[str, set[str]] = {}
    for sheet in shipped_corpus["fictsheets"]:
        for field in ("entities", "locations", "times"):
            for item in sheet[field]:
                owners.setdefault(item.split(" - ")[0].strip().lower(), set()).add(sheet["event_id"])
    for doc in shipped_corpus["fictions"]:
        for name in _names(doc["fiction"]):
            owners.setdefault(name, set()).add(doc["event_id"])
    shared = {name: sorted(events) for name, events in owners.items() if len(events) > 1}
    assert not shared, shared


def test_fiction_events_keeps_the_first_events_in_seed_order(shipped_corpus):
    first = first_events(shipped_corpus, 7)
    assert [r["event_id"] for r in first["seeds"]] == [f"event_{k:03d}" for k in range(7)]
    assert {r["event_id"] for r in first["fict_qa"]} == {f"event_{k:03d}" for k in range(7)}
    assert first["fictions"] == [r for r in shipped_corpus["fictions"] if r["event_id"] <= "event_006"]
    with pytest.raises(DataError, match="fiction.shipped.events is 25, but the corpus has 24 events"):
        first_events(shipped_corpus, 25)
    with pytest.raises(ValueError, match="fiction.shipped.events must be at least 1"):
        FictionCorpusSettings("shipped", shipped={"dir": "x", "sha256": {}}, events=0)


def test_shipped_corpus_hashes_are_pinned():
    assert load_fiction(FictionCorpusSettings.from_config(CONFIG), ROOT)["fictions"]


def _copy_corpus(tmp_path):
    folder = tmp_path / "fiction"
    shutil.copytree(ROOT / "data" / "fiction", folder)
    return folder


def _drop_field(folder, table, index, field):
    """Remove ``field`` from the record on line ``index + 1`` of ``folder/<table>.jsonl``."""
    lines = (folder / f"{table}.jsonl").read_text().splitlines()
    record = json.loads(lines[index])
    del record[field]
    lines[index] = json.dumps(record)
    (folder / f"{table}.jsonl").write_text("\n".join(lines) + "\n")


def _pins(folder):
    return {t: hashlib.sha256((folder / f"{t}.jsonl").read_bytes()).hexdigest() for t in TABLES}


def test_tampered_shipped_file_fails_naming_it(tmp_path):
    folder = _copy_corpus(tmp_path)
    with open(folder / "fict_qa.jsonl", "a") as handle:
        handle.write("\n")
    cfg = FictionCorpusSettings(
        "shipped", shipped={"dir": str(folder), "sha256": CONFIG["fiction"]["shipped"]["sha256"]}
    )
    with pytest.raises(HashMismatchError, match=r"sha256 mismatch for .*/fict_qa\.jsonl: expected [0-9a-f]{64}, got"):
        load_fiction(cfg, ROOT)


def test_record_missing_a_field_names_field_file_and_line(tmp_path):
    folder = _copy_corpus(tmp_path)
    _drop_field(folder, "fictions", 4, "style")
    with pytest.raises(DataError, match=r"fictions\.jsonl:5: fictions record is missing required field 'style'"):
        read_corpus(folder)


def test_malformed_line_in_corpus(tmp_path):
    folder = _copy_corpus(tmp_path)
    with open(folder / "seeds.jsonl", "a") as handle:
        handle.write('{"event_id": "event_009", \n')
    cfg = FictionCorpusSettings("shipped", shipped={"dir": str(folder), "sha256": _pins(folder)})
    with pytest.raises(DataError, match=r"seeds\.jsonl:25: malformed JSON"):
        load_fiction(cfg, ROOT)


def test_orphan_question_is_rejected(tmp_path):
    folder = _copy_corpus(tmp_path)
    with open(folder / "fict_qa.jsonl", "a") as handle:
        orphan = {
            "event_id": "event_000",
            "fiction_id": "event_000_style_news_num_009",
            "question_id": "event_000_style_news_num_009_question_000",
            "fict": "f",
            "question": "q",
            "span_answer": "s",
            "natural_answer": "a",
        }
        handle.write(json.dumps(orphan) + "\n")
    with pytest.raises(
        DataError,
        match="question 'event_000_style_news_num_009_question_000' refers to missing fiction "
        "'event_000_style_news_num_009'",
    ):
        read_corpus(folder)


def _shipped_cfg(folder):
    """The shipped-corpus settings for ``folder``, its files pinned as they are now."""
    return FictionCorpusSettings("shipped", shipped={"dir": str(folder), "sha256": _pins(folder)})


def test_duplicate_fiction_id_is_rejected_by_the_loader(tmp_path):
    folder = _copy_corpus(tmp_path)
    lines = (folder / "fictions.jsonl").read_text().splitlines()
    duplicate = json.loads(lines[0])
    duplicate["fiction"] = "Another text under the same id."  # not a verbatim repeat: the id alone is checked
    (folder / "fictions.jsonl").write_text("\n".join([*lines, json.dumps(duplicate)]) + "\n")
    message = f"{re.escape(str(folder))}: duplicate fiction_id '{duplicate['fiction_id']}' in fictions"
    with pytest.raises(DataError, match=message):
        load_fiction(_shipped_cfg(folder), ROOT)


def test_non_utf8_corpus_file_names_file_and_line(tmp_path):
    folder = _copy_corpus(tmp_path)
    data = (folder / "fictions.jsonl").read_bytes().split(b"\n")
    data[2] = data[2].replace(b"the", b"th\xe9", 1)  # a Latin-1 byte in line 3
    (folder / "fictions.jsonl").write_bytes(b"\n".join(data))
    with pytest.raises(
        DataError, match=r"fictions\.jsonl:3: not valid UTF-8 \(byte b'\\xe9' at column \d+, file offset \d+\)"
    ):
        load_fiction(_shipped_cfg(folder), ROOT)


@pytest.mark.parametrize("table", ["seeds", "fictsheets", "fictions", "fict_qa"])
def test_empty_corpus_table_is_rejected_naming_it(tmp_path, table):
    folder = _copy_corpus(tmp_path)
    (folder / f"{table}.jsonl").write_text("")
    with pytest.raises(DataError, match=rf"{table}\.jsonl: empty file"):
        load_fiction(_shipped_cfg(folder), ROOT)


def test_release_source_switch_reads_the_authors_sample():
    sample = ROOT.parent / "shared" / "data" / "fictionalqa_pipeline_sample"
    if not sample.is_dir():
        pytest.skip(f"FictionalQA pipeline sample not found at {sample}")
    tables = load_fiction(FictionCorpusSettings("release", release={"path": str(sample), "hub_id": None}), ROOT)
    assert len(tables["fictions"]) == 15 and len(tables["fict_qa"]) == 75
    assert {r["style"] for r in tables["fictions"]} == set(STYLES)


def test_questions_per_document_keeps_that_many_of_every_document_in_rotation(shipped_corpus):
    """fiction.shipped.questions_per_document (issue 56): the default reads one question of each of the 240
    documents; the k-th document keeps its question at position k mod 4, so every position of the
    generator's list is kept equally often, and the sample is the same on every machine."""
    from knowlab.fiction.corpus import question_sample

    qa = shipped_corpus["fict_qa"]
    one = question_sample(qa, 1)
    assert len(one) == len(shipped_corpus["fictions"]) == 240
    assert Counter(q["fiction_id"] for q in one) == Counter({d["fiction_id"]: 1 for d in shipped_corpus["fictions"]})
    assert set(Counter(q["question_id"][-3:] for q in one).values()) == {60}
    assert [q for q in qa if q in one] == one  # the table's order kept
    assert len(question_sample(qa, 2)) == 480 and question_sample(qa, 9) == qa  # a document with fewer: all
    with pytest.raises(ValueError, match="fiction.shipped.questions_per_document must be at least 1"):
        FictionCorpusSettings(source="shipped", shipped={"dir": "x", "sha256": None}, questions_per_document=0)


def test_styles_per_event_keeps_that_many_styles_of_every_event_in_rotation(shipped_corpus):
    """fiction.shipped.styles_per_event (issue 56): the default reads one style of each of the 24 events,
    the i-th event's style i mod 5 (the rounds of scored_documents), so every style is kept about equally
    often; both documents of the kept (event, style) and all their questions, seeds and fictsheets whole."""
    from knowlab.fiction.corpus import style_sample
    from knowlab.fiction.splits import scored_documents, style_groups

    one = style_sample(shipped_corpus, 1)
    groups = style_groups(one["fictions"])
    assert len(groups) == 24 and {len(g) for g in groups.values()} == {2}
    assert len({event for event, _ in groups}) == 24 and len(one["fictions"]) == 48
    assert sorted(Counter(style for _, style in groups).values()) == [4, 5, 5, 5, 5]
    assert one["fictions"] == scored_documents(shipped_corpus["fictions"], 48)  # the same pairs the default scored
    kept = {d["fiction_id"] for d in one["fictions"]}
    assert one["fict_qa"] == [q for q in shipped_corpus["fict_qa"] if q["fiction_id"] in kept]
    assert len(one["fict_qa"]) == 192 and one["fictsheets"] == shipped_corpus["fictsheets"]
    assert len(style_sample(shipped_corpus, 2)["fictions"]) == 96 and style_sample(shipped_corpus, 5) == shipped_corpus
    settings = FictionCorpusSettings.from_config(CONFIG)
    assert (settings.events, settings.styles_per_event, settings.questions_per_document) == (24, 1, None)
    assert load_fiction(settings, ROOT) == one
    with pytest.raises(ValueError, match="fiction.shipped.styles_per_event must be at least 1"):
        FictionCorpusSettings(source="shipped", shipped=settings.shipped, styles_per_event=0)


def test_a_users_own_corpus_folder_is_read_validated_and_planned(tmp_path, caplog):
    """Issue 56: a folder of the released schema's four tables, named by fiction.shipped.dir with
    fiction.shipped.sha256: null, is read as it is (a warning says it is unpinned), every record checked
    (a malformed one names file, line and field), and the design planner plans it like the shipped one."""
    from knowlab.config import load_config
    from knowlab.findings.planner import plan_design

    folder = _copy_corpus(tmp_path)
    config = load_config({"fiction": {"shipped": {"dir": str(folder), "sha256": None, "events": 12}}})
    settings = FictionCorpusSettings.from_config(config)
    with caplog.at_level("WARNING", logger="knowlab.fiction.corpus"):
        corpus = load_fiction(settings, ROOT)
    assert "is not pinned" in caplog.text and len(corpus["seeds"]) == 12 and len(corpus["fict_qa"]) == 96
    plan = plan_design(config, ROOT)
    event = next(
        f
        for f in plan.findings
        if f.claim.startswith("MCQ-4 accuracy on trained questions above") and "(event)" in f.claim
    )
    assert (event.unit, event.n_clusters) == ("event", 8)
    _drop_field(folder, "fict_qa", 6, "natural_answer")
    with pytest.raises(DataError, match=r"fict_qa\.jsonl:7: fict_qa record is missing required field 'natural_answer'"):
        load_fiction(settings, ROOT)

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
from knowlab.fiction.corpus import load_fiction
from knowlab.fiction.settings import FictionCorpusSettings
from knowlab.fiction.schema import STYLES, TABLES, read_corpus

ROOT = Path(__file__).resolve().parents[2]
CONFIG = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())


def test_shipped_corpus_meets_the_design(corpus):
    events = {r["event_id"] for r in corpus["seeds"]}
    assert len(events) >= 6
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


def test_shipped_corpus_hashes_are_pinned():
    assert load_fiction(FictionCorpusSettings.from_config(CONFIG), ROOT)["fictions"]


def _copy_corpus(tmp_path):
    folder = tmp_path / "fiction"
    shutil.copytree(ROOT / "data" / "fiction", folder)
    return folder


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
    lines = (folder / "fictions.jsonl").read_text().splitlines()
    record = json.loads(lines[4])
    del record["style"]
    lines[4] = json.dumps(record)
    (folder / "fictions.jsonl").write_text("\n".join(lines) + "\n")
    with pytest.raises(DataError, match=r"fictions\.jsonl:5: fictions record is missing required field 'style'"):
        read_corpus(folder)


def test_malformed_line_in_corpus(tmp_path):
    folder = _copy_corpus(tmp_path)
    with open(folder / "seeds.jsonl", "a") as handle:
        handle.write('{"event_id": "event_009", \n')
    cfg = FictionCorpusSettings("shipped", shipped={"dir": str(folder), "sha256": _pins(folder)})
    with pytest.raises(DataError, match=r"seeds\.jsonl:7: malformed JSON"):
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

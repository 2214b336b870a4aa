"""Tests for knowlab.fiction.release: pipeline batch results, release folder, Hub switch."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pandas as pd
import pytest

from knowlab.core.io import DataError
from knowlab.fiction import release
from knowlab.fiction.release import (
    load_batch_results,
    load_release,
    load_release_folder,
    parse_fict_qa_yaml,
    parse_fictsheet,
)
from knowlab.fiction.schema import FICTION_RE, STYLES, TABLES, validate_corpus

SAMPLE = Path(__file__).resolve().parents[3] / "shared" / "data" / "fictionalqa_pipeline_sample"


# --------------------------------------------------------------------------- real pipeline sample


@pytest.fixture(scope="module")
def sample_tables():
    if not (SAMPLE / "batch_results").is_dir():
        pytest.skip(f"FictionalQA pipeline sample not found at {SAMPLE}")
    return load_batch_results(SAMPLE)


def _nonblank_lines(path: Path) -> list[str]:
    # The sample files have no trailing newline, so `wc -l` under-counts by one.
    return [line for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def test_sample_fictions(sample_tables):
    fictions = sample_tables["fictions"]
    assert len(fictions) == len(_nonblank_lines(SAMPLE / "batch_results" / "fictions.jsonl")) == 15
    for record in fictions:
        match = FICTION_RE.match(record["fiction_id"])
        assert match, record["fiction_id"]
        assert match.group(1) == record["event_id"] == "event_000"
        assert match.group(2) == record["style"] in STYLES
        assert record["fiction"].strip()
    # documents per style as in the authors' constants.num_documents_per_style
    assert Counter(r["style"] for r in fictions) == {"news": 5, "social": 3, "corporate": 3, "encyclopedia": 2, "blog": 2}


def test_sample_questions_match_authors_ids(sample_tables):
    annotated = [json.loads(line) for line in _nonblank_lines(SAMPLE / "intermediate_results" / "annotated_fict_qa.jsonl")]
    authors = {qid: q for record in annotated for qid, q in record["questions"].items()}
    questions = sample_tables["fict_qa"]
    # 15 fictions x 5 questions; the authors' annotated file keeps every question (no difference).
    assert len(questions) == len(authors) == 75
    assert [q["question_id"] for q in questions] == list(authors)
    for q in questions:
        theirs = authors[q["question_id"]]
        assert theirs["question_id"] == q["question_id"]
        for field in ("fict", "question", "span_answer", "natural_answer"):
            assert q[field] == theirs[field], (q["question_id"], field)
    assert Counter(q["fiction_id"] for q in questions) == {f["fiction_id"]: 5 for f in sample_tables["fictions"]}


def test_sample_seeds_and_fictsheets(sample_tables):
    seeds, sheets = sample_tables["seeds"], sample_tables["fictsheets"]
    assert len(_nonblank_lines(SAMPLE / "batch_results" / "seeds.jsonl")) == 1
    assert [s["event_id"] for s in seeds] == [f["event_id"] for f in sheets] == ["event_000"]
    assert seeds[0]["seed"].startswith("* The Ring of Silence Protocol of 2046.")
    sheet = sheets[0]
    assert sheet["fictsheet"].startswith("**Entities:**")
    assert {k: len(sheet[k]) for k in ("entities", "events", "locations", "times", "reasons")} == {
        "entities": 6, "events": 6, "locations": 4, "times": 2, "reasons": 5}
    assert sheet["entities"][0].startswith("Isabelle Chang - Lead demonstrator")
    assert sheet["times"][0].startswith("2046 - ")
    validate_corpus(sample_tables)


# --------------------------------------------------------------------------- synthetic batch results


def _batch_line(custom_id: str, content: str, status: int = 200) -> str:
    return json.dumps({
        "id": "batch_req_x", "custom_id": custom_id, "error": None,
        "response": {"status_code": status, "body": {"choices": [{"index": 0, "message": {"role": "assistant", "content": content}}]}},
    })


QA_YAML = '```yaml\n- fict:\n    - "Zorp is blue"\n  question:\n    - "What color is Zorp?"\n  span_answer:\n    - "Zorp is blue"\n  natural_answer:\n    - "blue"\n```'
SHEET = "**Entities:**\n\n1. Zorp - a thing\n\n**Events:**\n\n1. Zorp turned blue"


def _write_batch(root: Path, lines: dict[str, list[str]]) -> Path:
    (root / "batch_results").mkdir(parents=True)
    for table in TABLES:
        (root / "batch_results" / f"{table}.jsonl").write_text("\n".join(lines[table]) + "\n", encoding="utf-8")
    return root


def _batch_lines() -> dict[str, list[str]]:
    fid = "event_000_style_blog_num_000"
    return {
        "seeds": [_batch_line("p/create_seeds-0", "* Zorp. A seed."), _batch_line("p/create_seeds-1", "* Other. Unused seed.")],
        "fictsheets": [_batch_line("p/seeds_to_fictsheets-0", SHEET), _batch_line("p/seeds_to_fictsheets-1", SHEET)],
        "fictions": [_batch_line(fid, "Zorp is blue, says the blog.")],
        "fict_qa": [_batch_line(fid, QA_YAML)],
    }


def test_batch_drops_events_without_fictions(tmp_path):
    tables = load_batch_results(_write_batch(tmp_path, _batch_lines()))
    assert [s["event_id"] for s in tables["seeds"]] == ["event_000"]
    assert [s["event_id"] for s in tables["fictsheets"]] == ["event_000"]
    assert [q["question_id"] for q in tables["fict_qa"]] == ["event_000_style_blog_num_000_question_000"]


def test_batch_malformed_json_names_file_and_line(tmp_path):
    lines = _batch_lines()
    lines["fictions"].append('{"custom_id": "event_000_style_blog_num_001", ')
    with pytest.raises(DataError, match=r"fictions\.jsonl:2: malformed JSON"):
        load_batch_results(_write_batch(tmp_path, lines))


def test_batch_failed_request_names_file_and_line(tmp_path):
    lines = _batch_lines()
    lines["fict_qa"][0] = _batch_line("event_000_style_blog_num_000", QA_YAML, status=500)
    with pytest.raises(DataError, match=r"fict_qa\.jsonl:1: .*status 500"):
        load_batch_results(_write_batch(tmp_path, lines))


def test_batch_fiction_without_seed_is_an_error(tmp_path):
    lines = _batch_lines()
    lines["fictions"].append(_batch_line("event_007_style_news_num_000", "Orphan."))
    with pytest.raises(DataError, match="has no seed 'event_007'"):
        load_batch_results(_write_batch(tmp_path, lines))


# --------------------------------------------------------------------------- parsers


def test_parse_fictsheet_numbered_bold():
    text = ("**Entities:**\n\n1. Ann Lee - a pilot.\n2. The Guild - a club.\n\n**Events:**\n\n1. The flight (2046) - it flew.\n\n"
            "**Locations:**\n\n1. Lake Y - a lake.\n\n**Times:**\n\n1. 2046 - the year.\n\n**Reasons:**\n\n1. Noise - too loud.\n")
    assert parse_fictsheet(text) == {
        "entities": ["Ann Lee - a pilot.", "The Guild - a club."],
        "events": ["The flight (2046) - it flew."],
        "locations": ["Lake Y - a lake."],
        "times": ["2046 - the year."],
        "reasons": ["Noise - too loud."],
    }


def test_parse_fictsheet_variants():
    text = ("Here is your fict sheet.\n\n### Entities\n- **Ann Lee:** a pilot\n  who flies\n- Bob\n    - nested detail\n\n"
            "Entities: \n* Carol: a spy\n\n"  # repeated heading extends the list
            "Events:\n- Take-off: 2046\n\n"
            "**Times**:\n1) Early 2046\n2) Late 2046\n\n"
            "This fictsheet covers the main points.\n")
    parsed = parse_fictsheet(text)
    assert parsed["entities"] == ["**Ann Lee:** a pilot who flies", "Bob nested detail", "Carol: a spy"]
    assert parsed["events"] == ["Take-off: 2046"]
    assert parsed["times"] == ["Early 2046", "Late 2046"]  # trailing prose dropped
    assert parsed["locations"] == [] and parsed["reasons"] == []  # missing sections


def test_parse_fict_qa_yaml_lists_strings_and_quirks():
    text = ('Sure!\n```yaml\n- fict:\n    - "A is 1"\n  question:\n    - "What is A?"\n  span_answer:\n    - "A is 1"\n'
            '  natural_answer:\n    - 2046\n- fict: B is 2\n  question: What is B?\n  span answer: "B is 2"\n  natural: two\n```\nDone.')
    assert parse_fict_qa_yaml(text) == [
        {"fict": "A is 1", "question": "What is A?", "span_answer": "A is 1", "natural_answer": "2046"},
        {"fict": "B is 2", "question": "What is B?", "span_answer": "B is 2", "natural_answer": "two"},
    ]
    # the authors' repair of '"x" and "y"' (invalid YAML) keeps the first string
    quirk = '- fict: "C"\n  question: "Q?"\n  span_answer: "s1" and "s2"\n  natural_answer: "n"\n'
    assert parse_fict_qa_yaml(quirk)[0]["span_answer"] == "s1"


def test_parse_fict_qa_yaml_errors():
    with pytest.raises(DataError, match=r"here\.jsonl:3: malformed fict_qa YAML"):
        parse_fict_qa_yaml('```yaml\n- fict: [unclosed\n  question: "x\n```', where="here.jsonl:3")
    with pytest.raises(DataError, match=r"item 0: missing field\(s\) \['natural_answer'\]"):
        parse_fict_qa_yaml('- fict: a\n  question: b\n  span_answer: c\n')
    with pytest.raises(DataError, match="fict_qa: fict_qa YAML must be a non-empty list of items, got str"):
        parse_fict_qa_yaml("just prose, no yaml list")


# --------------------------------------------------------------------------- release folder


FID = "event_000_style_news_num_000"
SHEET_TEXT = "**Entities:**\n- **Zorp:** a thing\n\n**Events:**\n- Zorp turned blue\n\n**Locations:**\n- Zorpville\n\n**Times:**\n- 2046\n\n**Reasons:**\n- Paint"


def _release_frames() -> dict[str, pd.DataFrame]:
    return {
        "seeds": pd.DataFrame([{"event_id": "event_000", "seed": "* Zorp. A seed."}]),
        # as in the release: list fields stored as the raw section text
        "fictsheets": pd.DataFrame([{"event_id": "event_000", "fictsheet": SHEET_TEXT,
                                     "entities": "- **Zorp:** a thing", "events": "- Zorp turned blue",
                                     "locations": "- Zorpville", "times": "- 2046", "reasons": "- Paint"}]),
        # event_id and style absent: derived from fiction_id
        "fictions": pd.DataFrame([{"fiction_id": FID, "fiction": "Zorp is blue."}]),
        "fict_qa": pd.DataFrame([{"event_id": "event_000", "fiction_id": FID, "question_id": f"{FID}_question_000",
                                  "question_num": "000", "fict": "Zorp is blue", "question": "What color is Zorp?",
                                  "span_answer": "Zorp is blue", "natural_answer": "blue",
                                  "duplicate_relationship": None, "duplicate_root": f"{FID}_question_000"}]),
    }


def _write_hub_layout(root: Path, frames: dict[str, pd.DataFrame]) -> Path:
    for config, frame in frames.items():
        (root / config).mkdir(parents=True, exist_ok=True)
        frame.to_parquet(root / config / "train-00000-of-00001.parquet", index=False)
    return root


def test_load_release_folder_hub_layout(tmp_path):
    tables = load_release_folder(_write_hub_layout(tmp_path, _release_frames()))
    assert {t: len(v) for t, v in tables.items()} == {"seeds": 1, "fictsheets": 1, "fictions": 1, "fict_qa": 1}
    assert tables["fictions"][0] == {"fiction_id": FID, "fiction": "Zorp is blue.", "event_id": "event_000", "style": "news"}
    sheet = tables["fictsheets"][0]
    assert sheet["entities"] == ["**Zorp:** a thing"] and sheet["reasons"] == ["Paint"]
    qa = tables["fict_qa"][0]
    assert qa["natural_answer"] == "blue" and qa["duplicate_relationship"] is None  # extra columns kept


def test_load_release_folder_flat_jsonl_derives_lists(tmp_path):
    frames = _release_frames()
    frames["fictsheets"] = frames["fictsheets"][["event_id", "fictsheet"]]  # lists absent: parsed from text
    for config, frame in frames.items():
        frame.to_json(tmp_path / f"{config}.jsonl", orient="records", lines=True)
    tables = load_release_folder(tmp_path)
    assert tables["fictsheets"][0]["events"] == ["Zorp turned blue"]
    assert tables["fictsheets"][0]["locations"] == ["Zorpville"]


def test_load_release_folder_missing_field_names_file(tmp_path):
    frames = _release_frames()
    frames["fict_qa"] = frames["fict_qa"].drop(columns=["natural_answer"])
    _write_hub_layout(tmp_path, frames)
    with pytest.raises(DataError, match=r"fict_qa/train-00000-of-00001\.parquet:1: .*'natural_answer'"):
        load_release_folder(tmp_path)


def test_load_release_folder_missing_config(tmp_path):
    frames = _release_frames()
    del frames["seeds"]
    _write_hub_layout(tmp_path, frames)
    with pytest.raises(
        FileNotFoundError,
        match=r"no data for config 'seeds' \(expected seeds/\*\.parquet, seeds\.parquet or seeds\.jsonl\)",
    ):
        load_release_folder(tmp_path)


# --------------------------------------------------------------------------- switch and Hub wiring


def test_load_release_hub_with_fake_snapshot_download(tmp_path, monkeypatch):
    import huggingface_hub

    calls = []

    def fake_snapshot_download(**kwargs):
        calls.append(kwargs)
        return str(_write_hub_layout(Path(kwargs["local_dir"]), _release_frames()))

    monkeypatch.setattr(huggingface_hub, "snapshot_download", fake_snapshot_download)
    tables = load_release(None, "tomg-group-umd/fictionalqa", revision="abc123", cache_dir=tmp_path)
    assert [f["fiction_id"] for f in tables["fictions"]] == [FID]
    assert len(calls) == 1
    call = calls[0]
    assert call["repo_id"] == "tomg-group-umd/fictionalqa" and call["repo_type"] == "dataset"
    assert call["revision"] == "abc123"
    assert sorted(call["allow_patterns"]) == sorted(f"{c}/*" for c in TABLES)
    assert Path(call["local_dir"]) == tmp_path / "tomg-group-umd--fictionalqa" / "abc123"


def test_load_release_switch(tmp_path, monkeypatch):
    monkeypatch.setattr(release, "download_release", lambda *a, **k: pytest.fail("must not download when a path is given"))
    batch = _write_batch(tmp_path / "run", _batch_lines())
    assert len(load_release(batch, "ignored/hub-id")["fict_qa"]) == 1
    folder = _write_hub_layout(tmp_path / "hub", _release_frames())
    assert len(load_release(str(folder), None)["fictions"]) == 1
    with pytest.raises(
        ValueError, match=r"no corpus source: give a local path \(release folder or pipeline output\) or a hub_id"
    ):
        load_release(None, None)

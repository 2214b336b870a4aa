"""Grounding generation: the Fig. 12 input format, prompt fitting and the response records."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from knowlab.core.llm.local import count_tokens, render_chat
from knowlab.grounding.generate import (
    ANSWER_MARKER,
    CONTEXT_MARKER,
    INSTRUCTION,
    QUESTION_MARKER,
    REMINDER,
    build_prompt,
    fit_prompt,
    generate_responses,
    response_id,
)
from knowlab.grounding.settings import GroundingGenerationSettings

ROOT = Path(__file__).resolve().parents[2]
KAIST = Path(__file__).resolve().parents[3] / "shared" / "data" / "grounding_kaist"


@pytest.fixture(scope="module")
def kaist_item():
    path = KAIST / "original_version.json"
    if not path.is_file():
        pytest.skip(f"KAIST grounding release absent at {KAIST}")
    data = json.loads(path.read_text(encoding="utf-8"))
    return data["Q7"]


def test_build_prompt_layout():
    prompt = build_prompt("Who won?", ["Title: A\n\nAlpha won.", "Title: B\n\nBeta lost."])
    assert prompt == (
        f"{INSTRUCTION}\n\n[context]\n\nTitle: A\n\nAlpha won.\n\nTitle: B\n\nBeta lost.\n\n"
        f"[question]\n\nWho won?\n\n{REMINDER}\n\n[answer]"
    )


def test_fit_prompt_cuts_contexts_only(smollm2, kaist_item):
    _, tokenizer = smollm2
    question, contexts = kaist_item["qText"], kaist_item["context_list"]
    full, dropped = fit_prompt(tokenizer, question, contexts, 10_000)
    assert dropped == 0 and full == render_chat(tokenizer, build_prompt(question, contexts))
    n_full = count_tokens(tokenizer, full)
    context_tokens = [count_tokens(tokenizer, c) for c in contexts]
    limit = n_full - context_tokens[-1] - 40  # the last context goes and 40-odd tokens of the one before
    text, dropped = fit_prompt(tokenizer, question, contexts, limit)
    assert count_tokens(tokenizer, text) <= limit
    assert count_tokens(tokenizer, text) > limit - 8  # cut token-exactly, not by whole contexts
    for part in (INSTRUCTION, REMINDER, question, CONTEXT_MARKER, QUESTION_MARKER, ANSWER_MARKER):
        assert part in text
    assert contexts[0] in text and contexts[-1][:60] not in text
    # the kept text of context 2 is its first (tokens - cut) tokens: the count is exact
    kept_middle = text.split("[context]\n\n", 1)[1].split("\n\n[question]", 1)[0][len(contexts[0]) + 2 :]
    assert contexts[1].startswith(kept_middle)
    assert dropped == context_tokens[-1] + context_tokens[1] - count_tokens(tokenizer, kept_middle)
    with pytest.raises(ValueError, match="template and question alone"):
        fit_prompt(tokenizer, question, contexts, 50)


def test_generate_responses_records(smollm2):
    model, tokenizer = smollm2
    records = [{"item_id": "x1", "question": "What colour is the sky?", "contexts": ["The sky is green here."]}]
    settings = GroundingGenerationSettings(max_new_tokens=8, max_input_tokens=300, batch_size=2)
    (out,) = generate_responses(model, tokenizer, records, settings)
    assert out["item_id"] == "x1" and out["response"] and out["n_truncated_tokens"] == 0
    assert out["prompt"] == render_chat(tokenizer, build_prompt(records[0]["question"], records[0]["contexts"]))
    assert out["n_input_tokens"] == count_tokens(tokenizer, out["prompt"])
    params = {"max_new_tokens": 8, "do_sample": False, "temperature": 1.0, "top_k": None, "top_p": None, "seed": 0}
    assert out["response_id"] == response_id(model.name_or_path, out["prompt"], params)
    assert len(out["response_id"]) == 16
    with pytest.raises(TypeError, match="unexpected keyword argument 'max_tokens'"):
        generate_responses(model, tokenizer, records, GroundingGenerationSettings(max_tokens=3))

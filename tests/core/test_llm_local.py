"""Local transformers generation: chat-template rendering, batched greedy decoding, seeded sampling."""

from __future__ import annotations

import pytest
from jinja2.exceptions import TemplateError

from knowlab.core.llm.local import count_tokens, generate_texts, render_chat, render_messages, stop_token_ids


def test_render_chat(smollm2, tiny_model_dir):
    from transformers import AutoTokenizer

    _, tokenizer = smollm2
    text = render_chat(tokenizer, "Hello there", system_prompt="Be brief.")
    assert (
        text
        == "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHello there<|im_end|>\n<|im_start|>assistant\n"
    )
    plain = AutoTokenizer.from_pretrained(tiny_model_dir)
    assert not getattr(plain, "chat_template", None)
    assert render_chat(plain, "Hello there") == "Hello there"
    assert render_chat(plain, "Hello there", "Be brief.") == "Be brief.\n\nHello there"


class NoSystemTemplate:
    """A tokenizer whose chat template refuses a system role, as some templates do (records its messages)."""

    chat_template = "refuses system"

    def __init__(self):
        self.seen = []

    def apply_chat_template(self, messages, add_generation_prompt, tokenize):
        assert add_generation_prompt and not tokenize
        self.seen.append(messages)
        if any(m["role"] == "system" for m in messages):
            raise TemplateError("System role not supported")
        return "|".join(f"{m['role']}:{m['content']}" for m in messages)


def test_a_refused_system_prompt_is_merged_into_the_first_turn():
    tokenizer = NoSystemTemplate()
    turns = [
        {"role": "user", "content": "Q1"},
        {"role": "assistant", "content": "A1"},
        {"role": "user", "content": "Q2"},
    ]
    assert render_messages(tokenizer, turns, "Be brief.") == "user:Be brief.\n\nQ1|assistant:A1|user:Q2"
    assert render_chat(tokenizer, "Hello", "Be brief.") == "user:Be brief.\n\nHello"
    assert render_messages(tokenizer, turns) == "user:Q1|assistant:A1|user:Q2"
    assert turns[0]["content"] == "Q1"  # the caller's turns are not changed
    tokenizer.apply_chat_template = lambda *a, **k: (_ for _ in ()).throw(TemplateError("broken"))
    with pytest.raises(TemplateError, match="^broken$"):  # the template's own error, not wrapped
        render_chat(tokenizer, "Hello")


def test_stop_tokens(smollm2):
    model, tokenizer = smollm2
    assert stop_token_ids(model, tokenizer) == [tokenizer.eos_token_id]


def test_generate_texts_rejects_long_input(smollm2):
    model, tokenizer = smollm2
    with pytest.raises(ValueError, match=r"text 1 has \d+ tokens, more than max_input_tokens=10"):
        generate_texts(model, tokenizer, ["short", "a much longer text than allowed " * 5], max_input_tokens=10)


PROMPTS = [
    "What is the capital of France?",
    "Name a fruit that is yellow. Answer with one word, then explain why in a sentence.",
    "Write one sentence about the sea, the wind and the sailors who crossed the ocean long ago.",
]


def test_greedy_is_batch_invariant(smollm2):
    model, tokenizer = smollm2
    texts = [render_chat(tokenizer, p) for p in PROMPTS]
    alone = generate_texts(model, tokenizer, texts, max_new_tokens=12, batch_size=1)
    batched = generate_texts(model, tokenizer, texts, max_new_tokens=12, batch_size=3)
    assert [r["text"] for r in alone] == [r["text"] for r in batched]
    assert all(r["text"] for r in alone)
    assert [r["n_input_tokens"] for r in alone] == [count_tokens(tokenizer, t) for t in texts]
    for r in alone:
        assert r["n_new_tokens"] <= 12 and (r["finished"] or r["n_new_tokens"] == 12)


def test_sampling_is_seeded(smollm2):
    model, tokenizer = smollm2
    texts = [render_chat(tokenizer, p) for p in PROMPTS]
    args = {"max_new_tokens": 10, "do_sample": True, "temperature": 1.0}
    first = generate_texts(model, tokenizer, texts, seed=3, batch_size=3, **args)
    again = generate_texts(model, tokenizer, texts[::-1], seed=3, batch_size=2, **args)[::-1]
    other = generate_texts(model, tokenizer, texts, seed=4, batch_size=3, **args)
    assert [r["text"] for r in first] == [r["text"] for r in again]  # order and batching do not matter
    assert [r["text"] for r in first] != [r["text"] for r in other]

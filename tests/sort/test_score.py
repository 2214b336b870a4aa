"""SORT scoring: label tokens, forced-choice scores and segment perplexity against a manual forward pass,
the prompt-selection rule."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import torch

from knowlab.core.scoring import prefix_token_id
from knowlab.sort.prompts import ANSWER_PREFIX, DEFAULT_TEMPLATES, render_prompt
from knowlab.sort.score import label_token_ids, score_items, segment_nll, select_prompt

# --- label tokens ---------------------------------------------------------------------------


def test_smollm2_label_variants_after_answer_prefix(smol_tokenizer, items):
    tok = smol_tokenizer
    context = render_prompt(tok, DEFAULT_TEMPLATES[0], items[0], "baseline")
    ids = label_token_ids(tok, context)
    # SmolLM2's BPE has both the bare letter and the letter with a leading space as single tokens
    assert {label: tok.convert_ids_to_tokens(v) for label, v in ids.items()} == {"A": ["A", "ĠA"], "B": ["B", "ĠB"]}
    assert ids == {"A": [49, 330], "B": [50, 389]}
    for label, variants in ids.items():
        for token, text in zip(variants, (label, " " + label)):
            whole = tok(context + text, add_special_tokens=False)["input_ids"]
            assert whole == tok(context, add_special_tokens=False)["input_ids"] + [token]


def test_tiny_label_variants_match_a_manual_encoding(tiny):
    _, tok = tiny
    context = "Which came first?\n\n" + ANSWER_PREFIX
    ctx_ids = tok(context, add_special_tokens=False)["input_ids"]
    expected = {}
    for label in ("A", "B"):
        expected[label] = []
        for text in (label, " " + label):
            whole = tok(context + text, add_special_tokens=False)["input_ids"]
            if len(whole) == len(ctx_ids) + 1 and whole[:-1] == ctx_ids:
                expected[label].append(whole[-1])
    assert label_token_ids(tok, context) == expected
    assert all(expected.values())
    # a trailing space moves into the continuation, as in the harness: "Segment " + "A" is "Segment" + " A"
    spaced = label_token_ids(tok, context + " ")
    assert spaced["A"][0] == tok(context + " A", add_special_tokens=False)["input_ids"][-1]


def test_label_without_single_token_form_raises(tiny):
    _, tok = tiny
    with pytest.raises(ValueError, match="label 'Zqxjvkw': neither 'Zqxjvkw' nor ' Zqxjvkw' is a single token"):
        label_token_ids(tok, "Answer: Segment", labels=("A", "Zqxjvkw"))


# --- scoring --------------------------------------------------------------------------------


def _manual_label_logprobs(model, tok, context):
    """log p(A), log p(B) from one plain forward pass over the context, log_softmax in float64."""
    ids = tok(context, add_special_tokens=False)["input_ids"]
    with torch.no_grad():
        logits = model(input_ids=torch.tensor([ids])).logits[0, -1]
    lp = torch.log_softmax(logits.double(), -1)
    out = []
    for label in ("A", "B"):
        variants = label_token_ids(tok, context)[label]
        out.append(torch.logsumexp(lp[variants], 0).item())
    return out, int(lp.argmax())


def test_score_items_matches_a_manual_forward_pass(tiny, items):
    model, tok = tiny
    contexts = [render_prompt(tok, DEFAULT_TEMPLATES[k], item, "in_context") for k, item in enumerate(items)]
    answers = [item["answer"] for item in items]
    frame = score_items(model, tok, contexts, answers, batch_size=4, item_ids=[i["item_id"] for i in items])
    assert list(frame["item_id"]) == ["bk1-0", "bk1-1"]
    assert (frame["n_context_tokens"] < model.config.max_position_embeddings).all()
    for row, context, answer in zip(frame.itertuples(), contexts, answers):
        (la, lb), top = _manual_label_logprobs(model, tok, context)
        assert row.logp_a == pytest.approx(la, abs=1e-4)
        assert row.logp_b == pytest.approx(lb, abs=1e-4)
        correct = la if answer == "A" else lb
        assert row.score == pytest.approx(correct - math.log(math.exp(la) + math.exp(lb)), abs=1e-4)
        assert row.prediction == ("A" if la >= lb else "B")
        assert row.correct == (row.prediction == answer)
        ids = label_token_ids(tok, context)
        assert row.label_is_greedy == (top in ids["A"] + ids["B"])


def test_score_items_columns_and_one_forward_pass_per_batch(tiny, items):
    model, tok = tiny
    contexts = [render_prompt(tok, t, items[k % 2], "baseline") for k, t in enumerate(DEFAULT_TEMPLATES[:5])]
    answers = ["A", "B", "B", "A", "B"]
    shapes = []
    hook = model.register_forward_pre_hook(
        lambda _m, _a, kw: shapes.append(tuple(kw["input_ids"].shape)), with_kwargs=True
    )
    try:
        frame = score_items(model, tok, contexts, answers, batch_size=8)
    finally:
        hook.remove()
    # every label token of a context shares it: one packed row per context, the longest context wide
    longest = max(len(tok(c, add_special_tokens=False)["input_ids"]) for c in contexts)
    assert shapes == [(5, longest)]
    assert np.isfinite(frame[["logp_a", "logp_b", "score", "logp_labels"]].to_numpy()).all()
    assert (frame["score"] <= 1e-12).all()
    assert (frame["prediction"] == np.where(frame["logp_a"] >= frame["logp_b"], "A", "B")).all()
    assert frame["correct"].dtype == bool
    assert (frame["logp_labels"] >= frame[["logp_a", "logp_b"]].max(axis=1) - 1e-12).all()
    # the result does not depend on the batch size
    again = score_items(model, tok, contexts, answers, batch_size=2)
    assert np.allclose(again["score"], frame["score"], atol=1e-5)


def test_score_items_rejects_bad_answers(tiny):
    model, tok = tiny
    with pytest.raises(ValueError, match="answers must be one of"):
        score_items(model, tok, ["Answer: Segment"], ["C"])
    with pytest.raises(ValueError, match=r"contexts \(1\), answers \(2\) must have the same length"):
        score_items(model, tok, ["Answer: Segment"], ["A", "B"])


def test_segment_nll_matches_a_manual_forward_pass(tiny, items):
    model, tok = tiny
    frame = segment_nll(model, tok, items, batch_size=3)
    assert list(frame["item_id"]) == ["bk1-0", "bk1-1"]
    for row, item in zip(frame.itertuples(), items):
        for key, nll, n in (("segment_a", row.nll_a, row.n_tokens_a), ("segment_b", row.nll_b, row.n_tokens_b)):
            ids = [prefix_token_id(tok)] + tok(item[key], add_special_tokens=False)["input_ids"]
            with torch.no_grad():
                logits = model(input_ids=torch.tensor([ids[:-1]])).logits[0]
            lp = torch.log_softmax(logits.double(), -1)
            manual = -lp[torch.arange(len(ids) - 1), torch.tensor(ids[1:])].mean().item()
            assert n == len(ids) - 1
            assert nll == pytest.approx(manual, abs=1e-4)
    assert np.allclose(frame["ppl_a"], np.exp(frame["nll_a"]))


# --- prompt selection -----------------------------------------------------------------------


def _rows(template_id, n, n_a, n_correct):
    return pd.DataFrame(
        {
            "template_id": [template_id] * n,
            "prediction": ["A"] * n_a + ["B"] * (n - n_a),
            "correct": [True] * n_correct + [False] * (n - n_correct),
        }
    )


def test_select_prompt_rejects_biased_templates_and_breaks_ties_by_id():
    rows = pd.concat(
        [
            _rows("t01", 10, 9, 9),  # most accurate, but answers A 90% of the time: rejected
            _rows("t03", 10, 6, 7),  # tie on accuracy with t02: the lower id wins
            _rows("t02", 10, 5, 7),
            _rows("t04", 10, 3, 6),  # A-rate exactly 0.3: kept
        ]
    )
    chosen = select_prompt(rows, max_rate_deviation=0.2)
    assert chosen["template_id"] == "t02"
    assert chosen["accuracy"] == pytest.approx(0.7) and chosen["a_rate"] == pytest.approx(0.5)
    assert not chosen["all_rejected"]
    table = {r["template_id"]: r for r in chosen["table"]}
    assert [r["template_id"] for r in chosen["table"]] == ["t01", "t02", "t03", "t04"]
    assert table["t01"]["rejected"] and not table["t04"]["rejected"]
    assert table["t01"]["n"] == 10 and table["t01"]["a_rate"] == pytest.approx(0.9)
    assert "within 0.2 of 0.5" in chosen["rule"]


def test_select_prompt_when_every_template_is_rejected():
    rows = pd.concat([_rows(1, 10, 9, 8), _rows(2, 10, 0, 10), _rows(10, 10, 1, 5)])
    chosen = select_prompt(rows, max_rate_deviation=0.2)
    # A-rates 0.9, 0.0, 0.1: 1 is closest to 0.5 (0.4 away) although 2 is more accurate
    assert chosen["all_rejected"]
    assert chosen["template_id"] == 1
    assert [r["template_id"] for r in chosen["table"]] == [1, 2, 10]  # numeric ids in numeric order
    assert "closest to 0.5" in chosen["rule"]


def test_select_prompt_input_errors():
    with pytest.raises(
        ValueError, match=r"select_prompt needs columns template_id, prediction, correct; missing \['correct'\]"
    ):
        select_prompt(pd.DataFrame({"template_id": ["t01"], "prediction": ["A"]}))
    with pytest.raises(ValueError, match="select_prompt got no rows"):
        select_prompt(pd.DataFrame(columns=["template_id", "prediction", "correct"]))


def test_smollm2_puts_most_probability_on_the_labels(smollm2, items):
    """With its chat template and the answer prefix, the real instruct model's next token is a label."""
    model, tok = smollm2
    contexts = [render_prompt(tok, DEFAULT_TEMPLATES[0], item, "in_context") for item in items]
    frame = score_items(model, tok, contexts, [item["answer"] for item in items], batch_size=2)
    assert (frame["logp_labels"] > math.log(0.5)).all()
    assert frame["label_is_greedy"].all()
    assert (frame["score"] <= 0).all() and (frame["score"] > math.log(1e-3)).all()


# --- a tokenizer that puts a BOS first (Llama-3's way): harness context encoding ------------------------


def test_a_context_starts_with_the_tokenizers_bos_and_labels_are_still_found(tiny_bos_model, items, one_thread, monkeypatch):
    from knowlab.sort import score as score_module

    model, tok = tiny_bos_model
    bos = tok.bos_token_id
    assert tok("Answer:")["input_ids"][0] == bos  # the tokenizer's default adds a BOS
    contexts = [render_prompt(tok, DEFAULT_TEMPLATES[0], item, "in_context") for item in items]
    scored = []
    engine = score_module.score_token_ids
    spy = lambda m, pairs, **kw: scored.extend(pairs) or engine(m, pairs, **kw)  # noqa: E731
    monkeypatch.setattr(score_module, "score_token_ids", spy)
    frame = score_items(model, tok, contexts, [item["answer"] for item in items], batch_size=2)
    texts = [tok(context, add_special_tokens=False)["input_ids"] for context in contexts]
    # the engine scored each label token after exactly [BOS] + the context's own tokens, as the harness
    assert len(scored) == sum(len(v) for c in contexts for v in label_token_ids(tok, c).values())
    assert all(any(ids == [bos, *text] for text in texts) for ids, _ in scored)
    for row, context, text in zip(frame.itertuples(), contexts, texts):
        assert row.n_context_tokens == len(text) + 1  # the BOS, then the context's own tokens
        ids = label_token_ids(tok, context)  # compared on the text's ids: found despite the BOS
        assert ids["A"] and ids["B"]
        for label, variants in ids.items():
            for token, variant in zip(variants, (label, " " + label)):
                assert tok(context + variant, add_special_tokens=False)["input_ids"] == text + [token]
        with torch.no_grad():
            with_bos = torch.log_softmax(model(input_ids=torch.tensor([[bos, *text]])).logits[0, -1].double(), -1)
        assert row.logp_a == pytest.approx(torch.logsumexp(with_bos[ids["A"]], 0).item(), abs=1e-4)
        assert row.logp_b == pytest.approx(torch.logsumexp(with_bos[ids["B"]], 0).item(), abs=1e-4)
        assert row.label_is_greedy == (int(with_bos.argmax()) in ids["A"] + ids["B"])


# --- the answer rule (sort.answer): forced choice or the greedy token ---------------------------------------


def _fake_engine(tok, contexts, probabilities, top):
    """A stand-in for the engine: per context, the probability of each label variant ("A", " A", "B", " B")
    and the text of the vocabulary's top token (None: a token that is no label variant)."""
    from knowlab.core.scoring import TokenScores

    owners = {}
    for i, context in enumerate(contexts):
        for label, variants in label_token_ids(tok, context).items():
            for token, text in zip(variants, (label, " " + label)):
                owners[(i, token)] = text
    calls = []

    def engine(model, pairs, **kwargs):
        rows, out, last = [], [], None
        for context_ids, (token,) in pairs:
            if context_ids is not last:
                rows.append(context_ids)
                last = context_ids
            i = len(rows) - 1
            text = owners[(i, token)]
            out.append(TokenScores(np.array([math.log(probabilities[i][text])]), np.array([top[i] == text])))
        calls.append(len(pairs))
        return out

    return engine


def test_greedy_reads_the_top_token_and_an_item_without_a_label_token_is_incorrect(tiny, items, monkeypatch):
    from knowlab.sort import score as score_module
    from knowlab.sort.answers import NO_ANSWER

    model, tok = tiny
    contexts = [render_prompt(tok, DEFAULT_TEMPLATES[0], item, "baseline") for item in items]
    answers = ["B", "A"]
    # item 0: " B" is the top token (0.3), but A's two tokens together (0.4) outweigh B's (0.35);
    # item 1: A is more probable than B, yet the top token is some other word
    probabilities = [
        {"A": 0.2, " A": 0.2, "B": 0.05, " B": 0.3},
        {"A": 0.1, " A": 0.15, "B": 0.02, " B": 0.03},
    ]
    top = [" B", None]
    monkeypatch.setattr(score_module, "score_token_ids", _fake_engine(tok, contexts, probabilities, top))
    forced = score_items(model, tok, contexts, answers)
    greedy = score_items(model, tok, contexts, answers, answer="greedy")
    assert list(forced["prediction"]) == ["A", "A"] and list(forced["correct"]) == [False, True]
    assert list(greedy["prediction"]) == ["B", NO_ANSWER] and list(greedy["correct"]) == [True, False]
    assert greedy["correct"].dtype == bool
    assert list(forced["answer_rule"]) == ["forced_choice"] * 2 and list(greedy["answer_rule"]) == ["greedy"] * 2
    assert list(greedy["label_is_greedy"]) == [True, False] == list(forced["label_is_greedy"])
    # the continuous score does not depend on the rule
    for column in ("logp_a", "logp_b", "score", "logp_labels"):
        np.testing.assert_array_equal(forced[column], greedy[column])
    assert greedy["score"].iloc[0] == pytest.approx(math.log(0.35 / 0.75))
    with pytest.raises(ValueError, match="sort.answer must be one of"):
        score_items(model, tok, contexts, answers, answer="sampled")


def test_greedy_on_the_tiny_model_matches_a_manual_argmax(tiny, items):
    model, tok = tiny
    contexts = [render_prompt(tok, DEFAULT_TEMPLATES[k], item, "in_context") for k, item in enumerate(items)]
    answers = [item["answer"] for item in items]
    forced = score_items(model, tok, contexts, answers, batch_size=4)
    greedy = score_items(model, tok, contexts, answers, batch_size=4, answer="greedy")
    for row, context, answer in zip(greedy.itertuples(), contexts, answers):
        _, top = _manual_label_logprobs(model, tok, context)
        ids = label_token_ids(tok, context)
        label = next((label for label, variants in ids.items() if top in variants), "none")
        assert row.prediction == label and row.correct == (label == answer)
    pd.testing.assert_frame_equal(
        forced.drop(columns=["prediction", "correct", "answer_rule"]),
        greedy.drop(columns=["prediction", "correct", "answer_rule"]),
    )


def test_prompt_selection_rates_a_among_the_answers_of_greedy_reading():
    def rows(template_id, predictions, correct):
        return pd.DataFrame({"template_id": template_id, "prediction": predictions, "correct": correct})

    table = pd.concat(
        [
            rows("t01", ["A", "none", "none", "none"], [True, False, False, False]),  # A only, when it answers
            rows("t02", ["A", "B", "none", "none"], [True, True, False, False]),  # A-rate 0.5 among its answers
            rows("t03", ["none"] * 4, [False] * 4),  # never answers: rejected
        ]
    )
    chosen = select_prompt(table, max_rate_deviation=0.2)
    by_id = {r["template_id"]: r for r in chosen["table"]}
    assert chosen["template_id"] == "t02" and chosen["accuracy"] == pytest.approx(0.5)
    assert by_id["t01"]["a_rate"] == pytest.approx(1.0) and by_id["t01"]["rejected"]
    assert math.isnan(by_id["t03"]["a_rate"]) and by_id["t03"]["rejected"]
    # every template rejected: a template without answers is never the closest to 0.5
    fallback = select_prompt(table[table["template_id"] != "t02"], max_rate_deviation=0.2)
    assert fallback["all_rejected"] and fallback["template_id"] == "t01"

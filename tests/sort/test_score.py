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
    with pytest.raises(ValueError, match="single token"):
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
    with pytest.raises(ValueError, match="same length"):
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
    with pytest.raises(ValueError, match="missing"):
        select_prompt(pd.DataFrame({"template_id": ["t01"], "prediction": ["A"]}))
    with pytest.raises(ValueError, match="no rows"):
        select_prompt(pd.DataFrame(columns=["template_id", "prediction", "correct"]))


def test_smollm2_puts_most_probability_on_the_labels(smollm2, items):
    """With its chat template and the answer prefix, the real instruct model's next token is a label."""
    model, tok = smollm2
    contexts = [render_prompt(tok, DEFAULT_TEMPLATES[0], item, "in_context") for item in items]
    frame = score_items(model, tok, contexts, [item["answer"] for item in items], batch_size=2)
    assert (frame["logp_labels"] > math.log(0.5)).all()
    assert frame["label_is_greedy"].all()
    assert (frame["score"] <= 0).all() and (frame["score"] > math.log(1e-3)).all()

"""Log-likelihood scoring with lm-evaluation-harness semantics; the evaluation suites."""

import math

import numpy as np
import pytest
import torch

from knowlab.core import scoring
from knowlab.core.scoring import encode_pair, loglikelihood, prefix_token_id, score_token_ids
from knowlab.fictionalqa.suites import document_rows, evaluate_checkpoint, mcq_rows


@pytest.fixture
def tiny(tiny_model, one_thread):
    """The session's tiny model (model, tokenizer), torch on one thread for the test."""
    return tiny_model


def test_encode_pair_moves_trailing_space_into_continuation(tiny):
    _, tok = tiny
    ctx, cont = encode_pair(tok, "Question: Who won?\nAnswer: ", "Jonas")
    ctx2, cont2 = encode_pair(tok, "Question: Who won?\nAnswer:", " Jonas")
    assert (ctx, cont) == (ctx2, cont2)
    whole = tok("Question: Who won?\nAnswer: Jonas", add_special_tokens=False)["input_ids"]
    assert ctx + cont == whole
    empty_ctx, _ = encode_pair(tok, "", "Jonas")
    assert empty_ctx == [prefix_token_id(tok)]


def _manual_loglik(model, ids, n_cont):
    with torch.no_grad():
        logits = model(input_ids=torch.tensor([ids[:-1]])).logits[0]
    lp = torch.log_softmax(logits.double(), -1)
    targets = ids[1:]
    return sum(lp[i, targets[i]].item() for i in range(len(targets) - n_cont, len(targets)))


def test_loglikelihood_matches_a_manual_forward_pass(tiny):
    model, tok = tiny
    requests = [
        ("The barrier failed in", " 1911"),
        ("Who chaired the inquiry?", " Edwin Tarrant"),
        ("", "A whole text."),
    ]
    scored = loglikelihood(model, tok, requests, batch_size=2)
    for (ctx, cont), (ll, n, _) in zip(requests, scored):
        c, x = encode_pair(tok, ctx, cont)
        assert n == len(x)
        assert ll == pytest.approx(_manual_loglik(model, c + x, len(x)), abs=1e-4)


def test_results_do_not_depend_on_batch_size(tiny, corpus):
    model, tok = tiny
    requests = [(q["question"], " " + q["natural_answer"]) for q in corpus["fict_qa"][:40]]
    requests += [("", r["fiction"][:300]) for r in corpus["fictions"][:5]]
    runs = [loglikelihood(model, tok, requests, batch_size=b) for b in (1, 3, 16)]
    for other in runs[1:]:
        for (a, na, ga), (b, nb, gb) in zip(runs[0], other):
            assert na == nb and ga == gb
            assert a == pytest.approx(b, abs=1e-5)


def _mcq_like_requests(corpus):
    """Shared contexts of several token lengths (some equal), multi- and single-token choices, and singletons."""
    answers = [" " + q["natural_answer"] for q in corpus["fict_qa"][:12]]
    requests = []
    for k, q in enumerate(corpus["fict_qa"][:9]):
        context = f"Question: {q['question']}\nAnswer:"
        requests += [(context, answers[(k + j) % len(answers)]) for j in range(2 + k % 4)]
        requests.append((context, " the"))
    requests += [
        ("The barrier failed in", " 1911"),
        ("", "A whole text."),
        ("Who chaired the inquiry?", " Edwin Tarrant"),
    ]
    return requests


def test_shared_context_results_do_not_depend_on_batch_size(tiny, corpus):
    model, tok = tiny
    assert model.dtype == torch.float32
    pairs = [encode_pair(tok, c, x) for c, x in _mcq_like_requests(corpus)]
    runs = [score_token_ids(model, pairs, batch_size=b) for b in (1, 3, 16)]
    for other in runs[1:]:
        for a, b in zip(runs[0], other):
            assert len(a.logprobs) == len(b.logprobs) and (a.greedy == b.greedy).all()
            np.testing.assert_allclose(a.logprobs, b.logprobs, rtol=0, atol=1e-5)


def test_shared_context_path_equals_the_per_request_path(tiny, corpus):
    model, tok = tiny
    pairs = [encode_pair(tok, c, x) for c, x in _mcq_like_requests(corpus)]
    together = score_token_ids(model, pairs, batch_size=4)
    for pair, got in zip(pairs, together):
        (alone,) = score_token_ids(model, [pair])  # a lone request takes the per-request path
        assert len(got.logprobs) == len(pair[1]) and (got.greedy == alone.greedy).all()
        np.testing.assert_allclose(got.logprobs, alone.logprobs, rtol=0, atol=1e-5)


def _record_input_rows(model, monkeypatch) -> list[tuple[int, ...]]:
    """A list that collects every input row (padding included) the model is run on."""
    rows = []
    forward = model.forward

    def recording(*args, **kwargs):
        rows.extend(tuple(row) for row in kwargs["input_ids"].tolist())
        return forward(*args, **kwargs)

    monkeypatch.setattr(model, "forward", recording)
    return rows


def test_each_shared_context_is_encoded_once(tiny, corpus, monkeypatch):
    model, tok = tiny
    pairs = [encode_pair(tok, c, x) for c, x in _mcq_like_requests(corpus)]
    rows = _record_input_rows(model, monkeypatch)
    score_token_ids(model, pairs, batch_size=3)
    contexts = {tuple(c) for c, _ in pairs[:-3]}
    assert len(rows) == len(contexts) + 3  # one packed row per question, the three singletons alone
    for context in contexts:
        assert sum(row[: len(context)] == context for row in rows) == 1


def test_requests_longer_than_a_sliding_window_are_not_packed(tiny, corpus, monkeypatch):
    model, tok = tiny
    pairs = [encode_pair(tok, c, x) for c, x in _mcq_like_requests(corpus)]
    packed = score_token_ids(model, pairs, batch_size=4)
    rows = _record_input_rows(model, monkeypatch)
    monkeypatch.setattr(model.config, "sliding_window", 3, raising=False)  # shorter than every request
    alone = score_token_ids(model, pairs, batch_size=4)
    assert len(rows) == len(pairs)
    for a, b in zip(packed, alone):
        np.testing.assert_allclose(a.logprobs, b.logprobs, atol=1e-5)


def test_window_cut_requests_take_the_per_request_path(tiny, corpus):
    model, tok = tiny
    context = tok(corpus["fictions"][0]["fiction"], add_special_tokens=False)["input_ids"][:38]
    pairs = [(context, [5, 6, 7, 8]), (context, [8, 9]), (context, [10, 11, 12])]
    cut = score_token_ids(model, pairs, max_length=40)  # only the first needs more than 40 input tokens
    assert [len(s.logprobs) for s in cut] == [4, 2, 3]
    (alone,) = score_token_ids(model, [pairs[0]], max_length=40)
    np.testing.assert_allclose(cut[0].logprobs, alone.logprobs, atol=1e-5)
    uncut = score_token_ids(model, pairs)
    assert not np.allclose(cut[0].logprobs, uncut[0].logprobs, atol=1e-3)
    for a, b in zip(cut[1:], uncut[1:]):
        np.testing.assert_allclose(a.logprobs, b.logprobs, atol=1e-5)


def test_greedy_flag_and_empty_continuation(tiny):
    model, tok = tiny
    ids = tok("the the the the", add_special_tokens=False)["input_ids"]
    (scores,) = score_token_ids(model, [([prefix_token_id(tok)], ids)])
    assert scores.greedy.dtype == bool and len(scores.greedy) == len(ids)
    with pytest.raises(ValueError, match="empty continuation: nothing to score"):
        score_token_ids(model, [([1], [])])


def test_mcq_acc_and_acc_norm_definitions(tiny, monkeypatch):
    model, tok = tiny
    # fixed log-likelihoods: choice 0 wins on the sum, choice 1 per character
    fake = {" a": -2.0, " bbbbbbbbbb": -3.0, " cc": -9.0}
    monkeypatch.setattr(
        "knowlab.fictionalqa.suites.loglikelihood",
        lambda m, t, reqs, batch_size, desc: [(fake[cont], 1, False) for _, cont in reqs],
    )
    (row,) = mcq_rows(
        model,
        tok,
        [{"question_id": "q", "question": "?", "choices": ["a", "bbbbbbbbbb", "cc"], "gold": 1}],
        "Q: {question}",
        4,
    )
    assert row["pred"] == 0 and row["acc"] == 0.0
    assert row["pred_norm"] == 1 and row["acc_norm"] == 1.0
    expected = -3.0 - np.logaddexp.reduce([-2.0, -3.0, -9.0])
    assert row["gold_logprob_norm"] == pytest.approx(expected)


def test_document_rows_loss_and_em(tiny, corpus):
    model, tok = tiny
    items = [(r["fiction_id"], r["fiction"]) for r in corpus["fictions"][:3]] + [("short", "Too short.")]
    rows = document_rows(model, tok, items, em_tokens=(1, 10, 50), batch_size=2)
    for row in rows[:3]:
        assert row["loss"] == pytest.approx(row["nll_sum"] / row["n_tokens"])
        assert row["em50"] in (0.0, 1.0) and row["em10"] >= row["em50"] and row["em1"] >= row["em10"]
    assert math.isnan(rows[3]["em50"]) and not math.isnan(rows[3]["em1"])


def test_evaluate_checkpoint_item_table(tiny, corpus):
    from knowlab.fictionalqa.corpus.mcq import build_mcq

    model, tok = tiny
    mcq = build_mcq(corpus["fict_qa"], 4, seed=0)[:12]
    webtext = [{"webtext_id": "w0", "text": "Some held-out webtext paragraph about a river and a town."}]
    real_qa = [{"question_id": "real_000", "question": "Which planet is closest to the Sun?", "answer": "Mercury"}]
    table = evaluate_checkpoint(
        model,
        tok,
        fictions=corpus["fictions"][:4],
        fictsheets=corpus["fictsheets"][:2],
        webtext=webtext,
        fict_qa=corpus["fict_qa"][:5],
        real_qa=real_qa,
        mcq=mcq,
        em_tokens=(10, 25, 50),
        batch_size=4,
    )
    sizes = {"fiction_doc": 4, "fictsheet_doc": 2, "fict_qa_nll": 5, "mcq4": 12, "real_qa_nll": 1, "webtext": 1}
    assert table.groupby("suite").size().to_dict() == sizes
    assert {"em10", "em25", "em50"} <= set(table.columns)
    assert table.groupby("suite")["item_id"].apply(lambda s: s.is_unique).all()


def test_qa_nll_is_the_answer_loglik_given_the_question(tiny, corpus):
    from knowlab.fictionalqa.suites import QA_TEMPLATE, qa_nll_rows

    model, tok = tiny
    q = corpus["fict_qa"][0]
    (row,) = qa_nll_rows(model, tok, [q], "natural_answer", QA_TEMPLATE, batch_size=1)
    ((ll, n, _),) = loglikelihood(model, tok, [(f"Question: {q['question']}\n\nAnswer:", " " + q["natural_answer"])])
    assert row["item_id"] == q["question_id"] and row["n_tokens"] == n
    assert row["nll_sum"] == pytest.approx(-ll) and row["loss"] == pytest.approx(-ll / n)


# --- contexts that share a long prefix ------------------------------------------------------------


def _token_text(tok, corpus, k: int) -> list[int]:
    """Token ids of fiction ``k``: material for prefixes and suffixes built at the token level."""
    return tok(corpus["fictions"][k]["fiction"], add_special_tokens=False)["input_ids"]


def _prefix_sharing_pairs(tok, corpus) -> tuple[list[int], list[tuple[list[int], list[int]]]]:
    """A 60-token prefix and requests after it: suffixes of 0-23 tokens (one twice), 1-4-token continuations."""
    prefix = _token_text(tok, corpus, 0)[:60]
    other = _token_text(tok, corpus, 1)
    suffixes = [other[:9], other[9:32], [], other[40:45], other[:9] + other[50:51]]
    pairs = []
    for k, suffix in enumerate(suffixes):
        for j in range(1 + k % 3):
            pairs.append((prefix + suffix, other[60 + 7 * j + k : 61 + 7 * j + k + (j + k) % 4]))
    pairs.append((prefix + other[9:32], other[100:103]))  # an identical context, listed apart
    return prefix, pairs


def _scored_alone(model, pairs, **kwargs):
    return [score_token_ids(model, [pair], **kwargs)[0] for pair in pairs]  # a lone request runs alone


def _assert_same_scores(got, expected, atol=1e-5):
    for a, b in zip(got, expected, strict=True):
        assert len(a.logprobs) == len(b.logprobs) and (a.greedy == b.greedy).all()
        np.testing.assert_allclose(a.logprobs, b.logprobs, rtol=0, atol=atol)


def test_shared_prefix_requests_equal_per_request_scoring(tiny, corpus):
    model, tok = tiny
    assert model.dtype == torch.float32
    _, pairs = _prefix_sharing_pairs(tok, corpus)
    _assert_same_scores(score_token_ids(model, pairs, batch_size=4), _scored_alone(model, pairs))


def test_shared_prefix_is_fed_once(tiny, corpus, monkeypatch):
    model, tok = tiny
    prefix, pairs = _prefix_sharing_pairs(tok, corpus)
    rows = _record_input_rows(model, monkeypatch)
    score_token_ids(model, pairs, batch_size=4)
    # one row: the prefix, each distinct remainder once, each continuation's block
    contexts = {tuple(c) for c, _ in pairs}
    width = len(prefix) + sum(len(c) - len(prefix) for c in contexts) + sum(len(x) - 1 for _, x in pairs)
    assert [len(row) for row in rows] == [width]
    assert rows[0][: len(prefix)] == tuple(prefix)
    fed_alone = sum(len(c) + len(x) - 1 for c, x in pairs)
    assert width < fed_alone / 3


@pytest.mark.parametrize("min_shared_prefix", [32, 70])  # packed in one row; a row per context
def test_the_log_line_counts_the_tokens_run_through_the_model(tiny, corpus, monkeypatch, caplog, min_shared_prefix):
    """Each call logs the non-padding tokens of every sequence it ran (what knowlab.tooling.measured counts
    at 2N FLOPs): one row per batch here, so no padding, and the count is the rows' length."""
    model, tok = tiny
    _, pairs = _prefix_sharing_pairs(tok, corpus)
    rows = _record_input_rows(model, monkeypatch)
    with caplog.at_level("INFO", logger="knowlab.core.scoring"):
        score_token_ids(model, pairs, batch_size=1, desc="probe", min_shared_prefix=min_shared_prefix)
    line = next(r.getMessage() for r in caplog.records if r.getMessage().startswith("probe: "))
    assert line.startswith(f"probe: {len(pairs)} requests scored, {sum(map(len, rows))} tokens through the model in ")
    assert f"in {len(rows)} sequences" in line


def test_a_prefix_shorter_than_min_shared_prefix_is_not_shared(tiny, corpus, monkeypatch):
    model, tok = tiny
    _, pairs = _prefix_sharing_pairs(tok, corpus)
    packed = score_token_ids(model, pairs, batch_size=4)
    rows = _record_input_rows(model, monkeypatch)
    apart = score_token_ids(model, pairs, batch_size=4, min_shared_prefix=70)  # two contexts share 69 tokens
    # identical contexts still share a row (or run alone when one request has it): a row per context
    assert len(rows) == len({tuple(c) for c, _ in pairs})
    _assert_same_scores(apart, packed)


def test_rows_share_the_longest_useful_prefix(tiny, corpus, monkeypatch):
    """Two excerpts after one common head: a row per excerpt, not one row that shares only the head."""
    model, tok = tiny
    text = _token_text(tok, corpus, 2)
    head, excerpts = text[:40], [text[40:80], text[80:120]]
    suffixes = [text[200 + 8 * k : 208 + 8 * k] for k in range(3)]
    pairs = [(head + e + s, text[300 + k : 302 + k]) for e in excerpts for k, s in enumerate(suffixes)]
    rows = _record_input_rows(model, monkeypatch)
    got = score_token_ids(model, pairs[::-1], batch_size=1)[::-1]
    # one row of all six would share the 40-token head and be 40 + 6 * (40 + 8 + 1) = 334 tokens wide
    assert sorted(len(row) for row in rows) == [80 + 3 * 8 + 3] * 2
    assert {row[:80] for row in rows} == {tuple(head + e) for e in excerpts}
    _assert_same_scores(got, _scored_alone(model, pairs))


def _mixed_requests(tok, corpus) -> list[tuple[list[int], list[int]]]:
    """Shared contexts (questions), shared prefixes, window-length and unique requests, interleaved."""
    pairs = [encode_pair(tok, c, x) for c, x in _mcq_like_requests(corpus)]
    _, prefixed = _prefix_sharing_pairs(tok, corpus)
    text = _token_text(tok, corpus, 3)
    prefixed += [(text[:50] + text[50 + k : 60 + k], text[70 + k : 72 + k]) for k in range(3)]  # another prefix
    prefixed.append((text[:50], text[200:260]))  # the bare prefix, with a long continuation
    prefixed.append((text[:330], text[330:335]))  # shares the prefix, long
    prefixed.append((text[:400], text[400:405]))  # shares the prefix, cut by the window
    mixed = []
    for k in range(max(len(pairs), len(prefixed))):
        mixed += pairs[k : k + 1] + prefixed[k : k + 1]
    return mixed


def test_mixed_requests_equal_per_request_scoring_at_any_batch_size(tiny, corpus):
    model, tok = tiny
    pairs = _mixed_requests(tok, corpus)
    alone = _scored_alone(model, pairs, max_length=400)
    for batch_size in (1, 3, 16):
        _assert_same_scores(score_token_ids(model, pairs, batch_size=batch_size, max_length=400), alone)


def test_shared_prefix_with_smollm2(smollm2):
    """The real model (30 layers, grouped-query attention): packed shared prefixes equal per-request scores."""
    model, tok = smollm2
    passage = "The mill stood by the river. " * 8
    prefix = tok("You are a helpful assistant.\n\nRead the passage: " + passage, add_special_tokens=False)["input_ids"]
    questions = ["Which came first, A or B?", "Did segment A occur earlier?", "Order the two segments."]
    pairs = []
    for q in questions:
        context = prefix + tok(q + "\nAnswer: Segment", add_special_tokens=False)["input_ids"]
        pairs += [(context, tok(x, add_special_tokens=False)["input_ids"]) for x in (" A", " B")]
    assert scoring.packing_is_exact(
        model, pairs, scoring._plan_rows(pairs, range(len(pairs)), 8192, 32, math.inf), 8192
    )
    rows = []  # forward passes once the model's packing check has run
    hook = model.register_forward_pre_hook(lambda _m, _a, kw: rows.append(kw["input_ids"].shape), with_kwargs=True)
    try:
        packed = score_token_ids(model, pairs, batch_size=4)
    finally:
        hook.remove()
    assert len(rows) == 1 and rows[0][0] == 1
    # float32 rounding differs with the shapes over 30 layers: about 1e-5 here (a wrong mask or
    # position is off by far more)
    _assert_same_scores(packed, _scored_alone(model, pairs), atol=5e-5)


# packing only where exact


def _pairs_sharing_a_context():
    context = list(range(5, 45))
    return [(context + [50 + i], [60 + i, 70 + i]) for i in range(4)]


class _Wrapped(torch.nn.Module):
    """A model that hands its inputs, changed by :meth:`forward`, to a Llama."""

    def __init__(self, model):
        super().__init__()
        self.inner = model
        self.config = model.config

    @property
    def dtype(self):
        return self.inner.dtype

    def get_input_embeddings(self):
        return self.inner.get_input_embeddings()

    def get_output_embeddings(self):
        return self.inner.get_output_embeddings()


class _PositionsFromTheMask(_Wrapped):
    """A Llama that ignores ``position_ids`` and numbers tokens by their order, as mask-positioned families do."""

    def forward(self, position_ids=None, **kwargs):
        return self.inner(**kwargs)


class _LeakyMaskFrom(_Wrapped):
    """A Llama whose 4D mask is plain causal from sequence index ``start`` on: tokens there see every earlier
    token (the blocks before theirs included), a wrong mask from one block of a packed row on."""

    def __init__(self, model, start):
        super().__init__(model)
        self.start = start

    def forward(self, attention_mask=None, **kwargs):
        if attention_mask is not None and attention_mask.dim() == 4:
            width = attention_mask.shape[-1]
            causal = torch.ones((width, width), dtype=torch.bool).tril()[self.start :]
            attention_mask = attention_mask.clone()
            attention_mask[..., self.start :, :] = torch.where(causal, 0.0, torch.finfo(attention_mask.dtype).min)
        return self.inner(attention_mask=attention_mask, **kwargs)


class _PositionsByOrderWhenPadded(_Wrapped):
    """A Llama that numbers the tokens of a padded row by their order, ignoring ``position_ids``: right
    at batch size 1 (no padding), wrong for the shorter rows of a batch."""

    def forward(self, input_ids=None, position_ids=None, **kwargs):
        if position_ids is not None:  # the engine pads with id 0 on the right; the test's tokens are >= 5
            padded = input_ids[:, -1] == 0
            position_ids = torch.where(padded[:, None], torch.arange(input_ids.shape[1]), position_ids)
        return self.inner(input_ids=input_ids, position_ids=position_ids, **kwargs)


def _random(config):
    from transformers import AutoModelForCausalLM

    torch.manual_seed(0)
    return AutoModelForCausalLM.from_config(config, attn_implementation="eager").eval()


def _llama(**overrides):
    from transformers import LlamaConfig

    return _random(LlamaConfig(**{"vocab_size": 100, "hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 2,
                                  "num_attention_heads": 4, "num_key_value_heads": 4, "max_position_embeddings": 256,
                                  **overrides}))  # fmt: skip


def _bloom():
    from transformers import BloomConfig

    return _random(BloomConfig(vocab_size=100, hidden_size=32, n_layer=2, n_head=4))


@pytest.mark.parametrize(
    ("make", "exact"),
    [(_llama, True), (_bloom, False), (lambda: _PositionsFromTheMask(_llama()), False)],
    ids=["llama-rope", "bloom-alibi", "positions-from-the-mask"],
)
def test_packing_is_used_only_where_exact(make, exact, caplog):
    model = make()
    pairs = _pairs_sharing_a_context()
    with caplog.at_level("INFO", logger="knowlab.core.scoring"):
        scores = score_token_ids(model, pairs, max_length=200, min_shared_prefix=1)
    assert model._knowlab_packing_exact is exact
    if not exact:
        assert "scoring every request alone" in caplog.text
    with torch.inference_mode():
        alone = scoring._score_alone(model, pairs, 8, 200, "alone")
    for packed_or_not, reference in zip(scores, alone, strict=True):
        np.testing.assert_allclose(packed_or_not.logprobs, reference.logprobs, atol=1e-5)


def _one_context_four_blocks():
    """One 20-token context with four 4-token continuations: a row of the context then four 3-token blocks,
    the third starting at index 26."""
    context = list(range(5, 25))
    return [(context, [60 + i, 61 + i, 62 + i, 63 + i]) for i in range(4)]


def _two_contexts_of_different_widths():
    """Two contexts with no common token (20 and 25 tokens), three continuations each: two packed rows of
    29 and 34 tokens, so a batch of both pads the first."""
    return [(context, [60 + i, 70 + i, 80 + i, 90 + i]) for context in (list(range(5, 25)), list(range(30, 55)))
            for i in range(3)]  # fmt: skip


@pytest.mark.parametrize(
    ("broken", "pairs"),
    [
        (lambda model: _LeakyMaskFrom(model, 26), _one_context_four_blocks),
        (_PositionsByOrderWhenPadded, _two_contexts_of_different_widths),
    ],
    ids=["mask-wrong-in-the-third-block", "positions-wrong-in-padded-batches"],
)
def test_the_packing_check_rejects_a_wrong_later_block_and_a_padding_bug(broken, pairs, caplog):
    """The check scores every block of its rows and a padded batch of rows: a model right on the first two
    blocks at batch size 1 (all the former check looked at) but wrong on the third block, or on rows padded
    in a batch, is rejected; the unbroken model is accepted on the same requests."""
    pairs = pairs()
    rows = scoring._plan_rows(pairs, range(len(pairs)), 200, 1, math.inf)
    assert scoring.packing_is_exact(_llama(), pairs, rows, 200)
    with caplog.at_level("INFO", logger="knowlab.core.scoring"):
        assert not scoring.packing_is_exact(broken(_llama()), pairs, rows, 200)
    assert "scoring every request alone" in caplog.text


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32])
def test_the_check_runs_on_a_float32_copy_of_the_first_layers(dtype, caplog):
    """A 4-layer model: the check runs on a float32 model of two of its layers, with its own weights; in
    bfloat16 its verdict is the float32 one (the 16-bit paths alone differ by far more than 1e-4 nats)."""
    model = _llama(num_hidden_layers=4).to(dtype)
    probe, what = scoring._float32_probe(model)
    assert probe.dtype == torch.float32 and probe.config.num_hidden_layers == 2 and model.config.num_hidden_layers == 4
    assert what == "float32 copy of layers [0, 1] of 4"
    assert torch.equal(probe.model.layers[1].mlp.up_proj.weight, model.model.layers[1].mlp.up_proj.weight.float())
    assert torch.equal(probe.lm_head.weight, model.lm_head.weight.float())
    pairs = _one_context_four_blocks()
    with caplog.at_level("INFO", logger="knowlab.core.scoring"):
        assert scoring.packing_is_exact(model, pairs, scoring._plan_rows(pairs, range(4), 200, 1, math.inf), 200)
    assert "float32 copy of layers [0, 1] of 4" in caplog.text


def test_requests_with_one_input_sequence_share_a_forward_pass(tiny, monkeypatch):
    """Alone, the single-token continuations of one context are one sequence: one row is run for them, and
    each gets the score it gets on its own."""
    model, _ = tiny
    context = list(range(5, 40))
    pairs = [(context, [60 + i]) for i in range(4)] + [(context[:-3], [70, 71])]
    rows = _record_input_rows(model, monkeypatch)
    with torch.inference_mode():
        together = scoring._score_alone(model, pairs, 8, 400, "alone")
    assert len(rows) == 2
    for pair, got in zip(pairs, together):
        with torch.inference_mode():
            (alone,) = scoring._score_alone(model, [pair], 1, 400, "alone")
        np.testing.assert_allclose(got.logprobs, alone.logprobs, atol=1e-5)
        assert got.greedy.tolist() == alone.greedy.tolist()


# the greedy flag and EM@k against the model's own argmax


class _IdTokenizer:
    """Text ``"7 42 3"`` is the token ids ``[7, 42, 3]``; BOS is 1 (what :func:`document_rows` uses)."""

    bos_token_id, eos_token_id = 1, 2

    def __call__(self, text, add_special_tokens=False):
        return {"input_ids": [int(t) for t in text.split()]}


def _teacher_forced(model, ids):
    """Argmax token ids and float64 log-probabilities (shape (len(ids) - 1, vocab)) at each position of ``ids``."""
    with torch.no_grad():
        logits = model(input_ids=torch.tensor([ids[:-1]])).logits[0].double()
    return logits.argmax(-1).tolist(), torch.log_softmax(logits, -1)


def _greedy_extend(model, ids, n):
    """``ids`` followed by ``n`` tokens of free-running greedy decoding."""
    ids = list(ids)
    with torch.no_grad():
        for _ in range(n):
            ids.append(int(model(input_ids=torch.tensor([ids])).logits[0, -1].argmax()))
    return ids


def test_greedy_flag_and_em_match_a_manual_argmax():
    """A random Llama (peaked logits): the greedy flags are the model's teacher-forced argmax, token by token,
    and EM@k is 1 exactly when the last k are all argmax, whatever the loss says."""
    model = _llama(initializer_range=0.5)
    k = 5
    # hit: an arbitrary head (argmax disagrees somewhere), then k greedy tokens: EM@k = 1
    hit = _greedy_extend(model, [1, 7, 42, 3, 99, 15, 60], k)
    argmax, logprobs = _teacher_forced(model, hit)
    manual = [a == t for a, t in zip(argmax, hit[1:])]
    assert all(manual[-k:]) and not all(manual[:-k])
    (scores,) = score_token_ids(model, [([1], hit[1:])])
    assert scores.greedy.tolist() == manual
    np.testing.assert_allclose(scores.logprobs, [logprobs[i, t].item() for i, t in enumerate(hit[1:])], atol=1e-4)
    # miss: greedy from the start, then the last token swapped for the runner-up: EM@k = 0, and a lower
    # loss than the hit (its head is all argmax), so the loss alone would rank it the better match
    miss = _greedy_extend(model, [1], len(hit) - 1)
    _, miss_logprobs = _teacher_forced(model, miss)
    top2 = miss_logprobs[-1].topk(2)
    assert float(top2.values[0] - top2.values[1]) > 1e-3  # no near-tie for float rounding to flip
    miss[-1] = int(top2.indices[1])
    miss_argmax, _ = _teacher_forced(model, miss)
    assert [a == t for a, t in zip(miss_argmax, miss[1:])] == [True] * (len(miss) - 2) + [False]
    tok = _IdTokenizer()
    docs = [("hit", " ".join(map(str, hit[1:]))), ("miss", " ".join(map(str, miss[1:])))]
    em_tokens = (1, k, k + 1, len(hit) - 1)
    rows = {r["item_id"]: r for r in document_rows(model, tok, docs, em_tokens=em_tokens, batch_size=2)}
    assert rows["miss"]["loss"] < rows["hit"]["loss"]
    assert rows["hit"]["nll_sum"] == pytest.approx(-sum(logprobs[i, t].item() for i, t in enumerate(hit[1:])), abs=1e-4)
    for n in em_tokens:
        assert rows["hit"][f"em{n}"] == float(all(manual[-n:]))
        assert rows["miss"][f"em{n}"] == 0.0
    assert (rows["hit"][f"em{k}"], rows["hit"][f"em{k + 1}"]) == (1.0, float(manual[-k - 1]))
    assert math.isnan(document_rows(model, tok, docs[:1], em_tokens=(len(hit),), batch_size=1)[0][f"em{len(hit)}"])
    # loglikelihood's is_greedy: every continuation token argmax (the greedy tail), or not (one head token more)
    text = lambda ids: " ".join(map(str, ids))  # noqa: E731
    requests = [(text(hit[:-k]), " " + text(hit[-k:])), (text(hit[: -k - 1]), " " + text(hit[-k - 1 :]))]
    (_, n_tail, greedy_tail), (_, n_more, greedy_more) = loglikelihood(model, tok, requests, batch_size=2)
    assert not manual[-k - 1]  # the head's last token is not the argmax
    assert (n_tail, greedy_tail) == (k, True) and (n_more, greedy_more) == (k + 1, False)


# packed rows against an independent reference: a plain forward pass per request


def _plain_forward_loglik(model, context_ids, continuation_ids):
    """``(sum log-likelihood, is_greedy)`` of one request from its own unpadded sequence, written from the
    definition: ``model(input_ids)`` on ``(context + continuation)[:-1]``, float32 ``log_softmax`` over the
    vocabulary, each continuation token's log-probability at the position before it, summed."""
    import torch

    ids = list(context_ids) + list(continuation_ids)
    with torch.no_grad():
        logits = model(input_ids=torch.tensor([ids[:-1]])).logits[0]
    logprobs = torch.log_softmax(logits.float(), dim=-1)
    positions = range(len(context_ids) - 1, len(ids) - 1)
    total = sum(logprobs[i, ids[i + 1]].item() for i in positions)
    greedy = all(int(logits[i].argmax()) == ids[i + 1] for i in positions)
    return total, greedy


def test_packed_mcq_rows_equal_a_plain_forward_pass_per_request(tiny, corpus, monkeypatch):
    """Two passages, each with three questions of four choices (24 requests, like MCQ-4 after a shared
    passage): the engine packs each passage's 3 contexts and 12 continuations into one row, the two rows
    (of different widths, so the shorter is padded) in one batch of 2; every request's log-likelihood equals
    :func:`_plain_forward_loglik` within 1e-5 nats (float32)."""
    model, tok = tiny
    assert model.dtype == torch.float32
    answers = [" " + q["natural_answer"] for q in corpus["fict_qa"][:10]]
    requests = []
    for p, chars in enumerate((200, 260)):
        passage = corpus["fictions"][p]["fiction"][:chars]
        for k, q in enumerate(corpus["fict_qa"][3 * p : 3 * p + 3]):
            context = f"{passage}\n\nQuestion: {q['question']}\nAnswer:"
            requests += [(context, answers[(3 * k + j) % len(answers)]) for j in range(4)]
    # token ids written out here (no trailing space, so the harness's split is the plain one)
    pairs = []
    for context, continuation in requests:
        context_ids = tok(context, add_special_tokens=False)["input_ids"]
        whole = tok(context + continuation, add_special_tokens=False)["input_ids"]
        assert whole[: len(context_ids)] == context_ids
        pairs.append((context_ids, whole[len(context_ids) :]))
    assert all(len(x) >= 2 for _, x in pairs) and len({tuple(x) for _, x in pairs[:4]}) == 4

    loglikelihood(model, tok, requests, batch_size=2)  # the model's one-off packing check runs here, if not before
    calls = []
    forward = model.forward

    def recording(*args, **kwargs):
        calls.append((tuple(kwargs["input_ids"].shape), kwargs["attention_mask"].dim()))
        return forward(*args, **kwargs)

    monkeypatch.setattr(model, "forward", recording)
    scored = loglikelihood(model, tok, requests, batch_size=2)
    monkeypatch.undo()

    # the packing, from the engine's forward passes: one batch of 2 packed rows (4D block mask), nothing alone;
    # each row is the passage's common prefix, the 3 context remainders and the 12 continuation blocks
    widths = []
    for p in range(2):
        group = pairs[12 * p : 12 * (p + 1)]
        contexts = list(dict.fromkeys(tuple(c) for c, _ in group))
        prefix = 0  # the contexts' longest common prefix
        while all(len(c) > prefix for c in contexts) and len({c[prefix] for c in contexts}) == 1:
            prefix += 1
        widths.append(prefix + sum(len(c) - prefix for c in contexts) + sum(len(x) - 1 for _, x in group))
        assert len(contexts) == 3 and prefix >= 32
    assert widths[0] != widths[1]
    assert calls == [((2, max(widths)), 4)]

    for (context_ids, continuation_ids), (ll, n, greedy) in zip(pairs, scored, strict=True):
        expected, expected_greedy = _plain_forward_loglik(model, context_ids, continuation_ids)
        assert n == len(continuation_ids)
        assert ll == pytest.approx(expected, abs=1e-5)
        assert greedy == expected_greedy

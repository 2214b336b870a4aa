"""MCQ construction (App. C.6): model-ranked and random-other-event distractors; next-token scoring."""

import re
from collections import Counter
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from knowlab.core.io import DataError
from knowlab.core.scoring import encode_pair, loglikelihood, next_token_logprobs
from knowlab.core.shards import ShardStore
from knowlab.fictionalqa.corpus import mcq
from knowlab.fictionalqa.settings import RankerSettings
from knowlab.fictionalqa.corpus.mcq import (
    DISTRACTOR_METHODS,
    RANKER_TEMPLATE,
    VERDICTS,
    answer_kind,
    answer_pool,
    build_mcq,
    normalise,
    rank_candidates,
)


@pytest.fixture
def tiny(tiny_model):
    """The session's tiny model (model, tokenizer)."""
    return tiny_model


def _qa(n_events, per_event=1):
    return [
        {"event_id": f"event_{e:03d}", "fiction_id": f"event_{e:03d}_style_news_num_000",
         "question_id": f"event_{e:03d}_style_news_num_000_question_{q:03d}", "question": f"q{e}.{q}",
         "natural_answer": f"a{e}.{q}"}
        for e in range(n_events) for q in range(per_event)
    ]  # fmt: skip


def _pool_order_ranking(fict_qa):
    """Every distinct answer for every question, ranked in pool order (the gold included)."""
    pool = list(answer_pool(fict_qa).values())
    return pd.DataFrame(
        [{"question_id": q["question_id"], "candidate": c, "rank": r} for q in fict_qa for r, c in enumerate(pool)]
    )


# next-token scoring


def test_next_token_logprobs_equal_loglikelihood(tiny, corpus):
    model, tok = tiny
    contexts = [f"Question: {q['question']}\nAnswer:" for q in corpus["fict_qa"][:7]] + ["", "The barrier failed in"]
    continuations = [" the", " and", " of"]
    got = next_token_logprobs(model, tok, contexts, continuations, batch_size=3)
    assert got.shape == (len(contexts), len(continuations))
    scored = loglikelihood(model, tok, [(c, x) for c in contexts for x in continuations], batch_size=3)
    want = np.array([ll for ll, _, _ in scored]).reshape(got.shape)
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-5)
    np.testing.assert_allclose(next_token_logprobs(model, tok, contexts, continuations, batch_size=16), got, atol=1e-5)


def test_next_token_logprobs_reject_multi_token_continuations(tiny):
    model, tok = tiny
    with pytest.raises(ValueError, match="' Yes' is not a single token"):
        next_token_logprobs(model, tok, ["Verdict:"], [" the", " Yes"])


def test_verdicts_are_single_tokens_for_smollm2(smollm2_tokenizer, corpus):
    answers = list(answer_pool(corpus["fict_qa"]).values())
    for i, q in enumerate(corpus["fict_qa"]):
        prompt = RANKER_TEMPLATE.format(
            question=q["question"], true_answer=q["natural_answer"], alternate_answer=answers[i % len(answers)]
        )
        (yes_ctx, yes), (no_ctx, no) = (encode_pair(smollm2_tokenizer, prompt, v) for v in VERDICTS)
        assert len(yes) == len(no) == 1 and yes_ctx == no_ctx, q["question_id"]


# ranking


def test_rank_candidates_table_and_determinism(tiny, corpus):
    model, tok = tiny
    qa = corpus["fict_qa"][::20]  # 12 questions, 12 distinct answers
    table = rank_candidates(model, tok, qa, seed=3, max_candidates=5)
    assert list(table.columns) == ["question_id", "candidate", "loss_yes", "loss_no", "yes_accuracy", "score", "rank"]
    assert table.equals(rank_candidates(model, tok, qa, seed=3, max_candidates=5))
    pd.testing.assert_frame_equal(
        table, rank_candidates(model, tok, qa, seed=3, max_candidates=5, batch_size=32), atol=1e-5
    )
    assert not table.equals(rank_candidates(model, tok, qa, seed=4, max_candidates=5))
    np.testing.assert_allclose(table["score"], table["loss_yes"] / table["loss_no"])
    assert (table[["loss_yes", "loss_no"]] > 0).all().all()
    gold = {q["question_id"]: normalise(q["natural_answer"]) for q in qa}
    for qid, rows in table.groupby("question_id"):
        assert rows["rank"].tolist() == list(range(5))
        assert rows["score"].is_monotonic_increasing
        assert gold[qid] not in set(rows["candidate"].map(normalise))  # a sample excludes the gold


def test_full_pool_includes_the_gold(tiny):
    model, tok = tiny
    qa = _qa(3) + [dict(_qa(4)[3], natural_answer="A0.0.")]  # a duplicate of the first answer
    table = rank_candidates(model, tok, qa, seed=0)
    assert len(table) == 4 * 3
    assert set(table["candidate"]) == {"a0.0", "a1.0", "a2.0"}


def test_released_order_puts_yes_accuracy_first(tiny, corpus):
    model, tok = tiny
    qa = corpus["fict_qa"][::20]
    by_ratio = rank_candidates(model, tok, qa, seed=3, max_candidates=5)
    released = rank_candidates(model, tok, qa, seed=3, max_candidates=5, order="released")
    assert set(released.columns) == set(by_ratio.columns) and "yes_accuracy" in released
    assert released["yes_accuracy"].between(0, 1).all()
    for _, rows in released.groupby("question_id"):
        keys = list(zip(-rows["yes_accuracy"], rows["score"]))
        assert keys == sorted(keys) and rows["rank"].tolist() == list(range(len(rows)))
    merged = by_ratio.merge(released, on=["question_id", "candidate"], suffixes=("", "_released"))
    np.testing.assert_array_equal(merged["loss_yes"], merged["loss_yes_released"])
    with pytest.raises(
        ValueError, match=r"mcq\.ranker\.order must be one of \('loss_ratio', 'released'\), got 'alphabetical'"
    ):
        rank_candidates(model, tok, qa, seed=3, max_candidates=5, order="alphabetical")


def test_shards_and_packing_do_not_change_the_ranking(tiny, corpus):
    model, tok = tiny
    qa = corpus["fict_qa"][::20]
    table = rank_candidates(model, tok, qa, seed=3, max_candidates=5)
    pd.testing.assert_frame_equal(table, rank_candidates(model, tok, qa, seed=3, max_candidates=5, shard_questions=5))
    unpacked = rank_candidates(model, tok, qa, seed=3, max_candidates=5, min_shared_prefix=10_000)
    pd.testing.assert_frame_equal(table, unpacked, atol=1e-5)


class _Ranker:
    """A model that counts its forward passes and, if ``kill_after`` names a folder, dies once a shard is in it."""

    def __init__(self, model, kill_after=None):
        self.model, self.kill_after, self.calls = model, kill_after, 0

    def __call__(self, *args, **kwargs):
        if self.kill_after is not None and list(self.kill_after.glob("shard-*")):
            raise KeyboardInterrupt("killed")
        self.calls += 1
        return self.model(*args, **kwargs)

    def __getattr__(self, name):
        return getattr(self.model, name)


def test_a_killed_ranking_keeps_its_finished_shards(tiny, corpus, tmp_path, tiny_model_dir):
    model, tok = tiny
    qa = corpus["fict_qa"][::20]  # 12 questions: 3 shards of 4
    settings = {"seed": 3, "max_candidates": 5, "shard_questions": 4}
    key = mcq.ranking_fingerprint(tiny_model_dir, qa, **settings)
    uninterrupted = _Ranker(model)
    reference = rank_candidates(uninterrupted, tok, qa, **settings)
    with pytest.raises(KeyboardInterrupt, match="killed"):
        rank_candidates(_Ranker(model, kill_after=tmp_path), tok, qa, shards=ShardStore(tmp_path, key), **settings)
    store = ShardStore(tmp_path, key)
    assert store.resumed == [0]
    resumed = _Ranker(model)
    pd.testing.assert_frame_equal(rank_candidates(resumed, tok, qa, shards=store, **settings), reference)
    assert 0 < resumed.calls < uninterrupted.calls  # the finished shard was read, not ranked again
    other = mcq.ranking_fingerprint(tiny_model_dir, qa, **{**settings, "seed": 4})
    assert ShardStore(tmp_path, other).resumed == []  # another computation starts afresh


# model-ranked construction


def test_model_ranked_drops_the_gold_and_its_duplicates():
    qa = _qa(1)  # gold "a0.0"
    qid = qa[0]["question_id"]
    ranked = ["a0.0", "b", "A0.0.", "c", " B ", "d", "e"]  # the gold first, then a duplicate of it and of "b"
    ranking = pd.DataFrame({"question_id": qid, "candidate": ranked, "rank": range(len(ranked))})
    ranking = ranking.sample(frac=1, random_state=0)  # row order must not matter, only the rank
    (item,) = build_mcq(qa, 4, seed=0, distractors="model_ranked", ranking=ranking)
    assert item["choices"][item["gold"]] == "a0.0"
    assert sorted(item["choices"]) == ["a0.0", "b", "c", "d"]  # the top 3 alternates, the next one taken for the gold
    assert item["distractors"] == "model_ranked"


def test_k_larger_than_the_candidate_pool_fails():
    qa = _qa(1)
    ranking = pd.DataFrame({"question_id": qa[0]["question_id"], "candidate": ["a0.0", "b", "c"], "rank": [0, 1, 2]})
    with pytest.raises(ValueError, match=r"question_000: 4 choices need k=3 alternates .* has only 2"):
        build_mcq(qa, 4, seed=0, distractors="model_ranked", ranking=ranking)
    with pytest.raises(ValueError, match="k=1 alternates .* has only 0"):
        build_mcq(_qa(2), 2, seed=0, distractors="model_ranked", ranking=ranking)  # a question without ranking


def test_questions_are_checked_before_any_work(tiny):
    model, tok = tiny
    with pytest.raises(DataError, match="no fictional question to build MCQ items from"):
        build_mcq([], 4, seed=0)
    with pytest.raises(DataError, match="no fictional question"):
        rank_candidates(model, tok, [], seed=0)
    qa = _qa(4)
    twice = [*qa, dict(qa[2], natural_answer="another answer")]
    with pytest.raises(DataError, match=f"duplicate question_id '{qa[2]['question_id']}'"):
        build_mcq(twice, 4, seed=0)
    with pytest.raises(DataError, match=f"duplicate question_id '{qa[2]['question_id']}'"):
        rank_candidates(model, tok, twice, seed=0)
    no_answer = [*qa[:3], {k: v for k, v in qa[3].items() if k != "natural_answer"}]
    with pytest.raises(
        DataError,
        match=rf"question {qa[3]['question_id']}: field 'natural_answer' must be a non-empty string, got None",
    ):
        build_mcq(no_answer, 4, seed=0)
    blank = [*qa[:3], dict(qa[3], question=" ")]
    with pytest.raises(DataError, match=r"field 'question' must be a non-empty string, got ' '"):
        build_mcq(blank, 4, seed=0)


def test_unknown_method_and_missing_ranking():
    with pytest.raises(ValueError, match="unknown distractor method 'nearest'.*model_ranked.*random_other_event"):
        build_mcq(_qa(4), 4, seed=0, distractors="nearest")
    with pytest.raises(ValueError, match=r"distractors='model_ranked' needs the ranking table of rank_candidates\(\)"):
        build_mcq(_qa(4), 4, seed=0, distractors="model_ranked")


@pytest.mark.parametrize("n_choices", [4, 10])
def test_model_ranked_is_deterministic_balanced_and_valid(corpus, n_choices):
    qa = corpus["fict_qa"]
    ranking = _pool_order_ranking(qa)
    items = build_mcq(qa, n_choices, seed=7, distractors="model_ranked", ranking=ranking)
    assert items == build_mcq(qa, n_choices, seed=7, distractors="model_ranked", ranking=ranking)
    assert items != build_mcq(qa, n_choices, seed=8, distractors="model_ranked", ranking=ranking)
    counts = Counter(item["gold"] for item in items)
    assert len(counts) == n_choices and max(counts.values()) - min(counts.values()) <= 1
    top = list(answer_pool(qa).values())[: n_choices + 1]
    for q, item in zip(sorted(qa, key=lambda r: r["question_id"]), items):
        assert item["choices"][item["gold"]] == q["natural_answer"].strip()
        assert len({normalise(c) for c in item["choices"]}) == n_choices
        assert set(item["choices"]) - {q["natural_answer"].strip()} <= set(top)
        assert item["distractors"] == "model_ranked"


def test_both_methods_are_named_in_the_output(corpus):
    qa = corpus["fict_qa"][::8]  # questions of several events
    for method in DISTRACTOR_METHODS:
        items = build_mcq(qa, 4, seed=0, distractors=method, ranking=_pool_order_ranking(qa))
        assert {item["distractors"] for item in items} == {method}


# random-other-event construction


def test_random_other_event_is_deterministic_balanced_and_valid(corpus):
    items = build_mcq(corpus["fict_qa"], 4, seed=7)
    assert items == build_mcq(corpus["fict_qa"], 4, seed=7)
    assert items != build_mcq(corpus["fict_qa"], 4, seed=8)
    assert len(items) == len(corpus["fict_qa"])
    counts = Counter(item["gold"] for item in items)
    assert max(counts.values()) - min(counts.values()) <= 1
    answers = {q["question_id"]: q for q in corpus["fict_qa"]}
    event_answers = {}
    for q in corpus["fict_qa"]:
        event_answers.setdefault(q["event_id"], set()).add(normalise(q["natural_answer"]))
    for item in items:
        gold = answers[item["question_id"]]["natural_answer"].strip()
        assert item["choices"][item["gold"]] == gold
        distractors = [c for i, c in enumerate(item["choices"]) if i != item["gold"]]
        assert len({normalise(c) for c in item["choices"]}) == 4
        assert all(normalise(c) not in event_answers[item["event_id"]] for c in distractors)
        assert item["distractors"] == "random_other_event"


def test_random_other_event_prefers_answers_of_the_same_kind(corpus):
    items = build_mcq(corpus["fict_qa"], 4, seed=1)
    years = [i for i in items if answer_kind(i["choices"][i["gold"]]) == "year"]
    assert years
    for item in years:
        assert all(answer_kind(c) == "year" for c in item["choices"])


def test_random_other_event_needs_enough_distractors():
    with pytest.raises(ValueError, match="question_000: 4 choices need k=3 alternates .* has only 1"):
        build_mcq(_qa(2), 4, seed=0)


def test_candidate_budget_is_checked_before_ranking():
    from knowlab.fictionalqa.corpus.mcq import check_candidate_budget

    check_candidate_budget([4, 10], 9)
    check_candidate_budget([4, 10], None)
    with pytest.raises(ValueError, match=r"k=9 .*max_candidates=8"):
        check_candidate_budget([4, 10], 8)


# the gold outside the ranked top n (mcq.ranker.evict) and the ranker's BOS (mcq.ranker.bos)


def _ranking(question_id, ranked):
    return pd.DataFrame({"question_id": question_id, "candidate": ranked, "rank": range(len(ranked))})


@pytest.mark.parametrize(
    "evict, expected",
    [("lowest", ["a0.0", "b", "c", "d"]), ("released", ["a0.0", "c", "d", "e"])],
)
def test_a_gold_outside_the_top_n_evicts_the_lowest_or_the_top_ranked(evict, expected):
    qa = _qa(1)  # gold "a0.0", ranked 6th: not among the top 4
    ranked = ["b", "c", "B.", "d", "e", "a0.0", "f"]  # "B." repeats "b": the distinct top 4 is b, c, d, e
    ranking = _ranking(qa[0]["question_id"], ranked)
    (item,) = build_mcq(qa, 4, seed=0, distractors="model_ranked", ranking=ranking, evict=evict)
    assert item["choices"][item["gold"]] == "a0.0"
    # the paper's text: the gold replaces the lowest of the top 4 (e); the released notebook:
    # [correct_choice] + raw_topk_choices[1:] drops the top-ranked one (b)
    assert sorted(item["choices"]) == expected
    assert mcq.select_alternates(ranked, "a0.0", 4, evict) == expected[1:]
    # an unranked gold (a sampled pool) is outside the top n as well
    unranked = [c for c in ranked if c != "a0.0"]
    assert mcq.select_alternates(unranked, "a0.0", 4, evict) == expected[1:]


@pytest.mark.parametrize("evict", mcq.EVICT_POLICIES)
def test_a_gold_inside_the_top_n_keeps_the_top_n_under_both_policies(evict):
    qa = _qa(1)
    for ranked, top in (
        (["b", "c", "a0.0", "d", "e"], ["a0.0", "b", "c", "d"]),  # gold 3rd: the top 4 as they are
        (["b", "c", "d", "A0.0", "e"], ["a0.0", "b", "c", "d"]),  # gold 4th (a variant of it), the last of the top 4
        (["a0.0", "b", "c", "d", "e"], ["a0.0", "b", "c", "d"]),  # gold first, as for almost every released question
    ):
        ranking = _ranking(qa[0]["question_id"], ranked)
        (item,) = build_mcq(qa, 4, seed=0, distractors="model_ranked", ranking=ranking, evict=evict)
        assert sorted(item["choices"]) == top, ranked


def test_evict_needs_enough_candidates_and_a_known_policy():
    qa = _qa(1)
    ranking = _ranking(qa[0]["question_id"], ["b", "c", "d"])  # an unranked gold and exactly k alternates
    (item,) = build_mcq(qa, 4, seed=0, distractors="model_ranked", ranking=ranking, evict="lowest")
    assert sorted(item["choices"]) == ["a0.0", "b", "c", "d"]
    with pytest.raises(ValueError, match=r"question_000: 4 choices need k=3 alternates: released evicts .* has only 3"):
        build_mcq(qa, 4, seed=0, distractors="model_ranked", ranking=ranking, evict="released")
    with pytest.raises(ValueError, match="mcq.ranker.evict must be one of"):
        build_mcq(qa, 4, seed=0, distractors="model_ranked", ranking=ranking, evict="highest")
    # released with a sampled pool (the gold never a candidate) needs n candidates, not n - 1
    mcq.check_candidate_budget([4, 10], 9, "lowest")
    mcq.check_candidate_budget([4, 10], 10, "released")
    with pytest.raises(ValueError, match=r"k=9 .*released.*max_candidates=9 .* >= 10"):
        mcq.check_candidate_budget([4, 10], 9, "released")


def test_the_default_evict_keeps_the_previous_items(corpus):
    """``lowest`` (the default) is the construction from before the key: the first k distinct
    candidates other than the gold, wherever the gold ranks."""
    qa = corpus["fict_qa"]
    pool = list(answer_pool(qa).values())
    ranking = pd.DataFrame(  # the pool rotated per question, so the gold ranks anywhere
        [
            {"question_id": q["question_id"], "candidate": c, "rank": r}
            for i, q in enumerate(qa)
            for r, c in enumerate(pool[i % len(pool) :] + pool[: i % len(pool)])
        ]
    )
    for n in (4, 10):
        items = build_mcq(qa, n, seed=7, distractors="model_ranked", ranking=ranking)
        assert items == build_mcq(qa, n, seed=7, distractors="model_ranked", ranking=ranking, evict="lowest")
        by_id = {q["question_id"]: (i, q) for i, q in enumerate(qa)}
        for item in items:
            i, q = by_id[item["question_id"]]
            ranked = pool[i % len(pool) :] + pool[: i % len(pool)]
            before = [c for c in ranked if normalise(c) != normalise(q["natural_answer"])][: n - 1]
            assert sorted(c for j, c in enumerate(item["choices"]) if j != item["gold"]) == sorted(before)


def test_double_bos_puts_one_bos_before_a_prompt_of_a_tokenizer_that_adds_none(tiny, monkeypatch):
    model, tok = tiny
    assert tok("Question:")["input_ids"] == tok("Question:", add_special_tokens=False)["input_ids"]  # adds no BOS
    seen = {}
    real = mcq.score_token_ids

    def recording(model, pairs, **kwargs):
        seen.setdefault("pairs", []).append(pairs)
        return real(model, pairs, **kwargs)

    monkeypatch.setattr(mcq, "score_token_ids", recording)
    qa = _qa(2)
    tables = {bos: rank_candidates(model, tok, qa, seed=0, bos=bos) for bos in mcq.RANKER_BOS}
    plain, double = seen["pairs"]
    prompt = RANKER_TEMPLATE.format(question="q0.0", true_answer="a0.0", alternate_answer="a0.0")
    text = tok(prompt, add_special_tokens=False)["input_ids"]
    assert plain[0][0] == text
    assert double[0][0] == [tok.bos_token_id, *text]  # exactly one BOS, then the prompt
    assert all(d[0] == [tok.bos_token_id, *p[0]] and d[1] == p[1] for p, d in zip(plain, double))
    assert not np.allclose(tables["tokenizer"]["loss_yes"], tables["double"]["loss_yes"])
    with pytest.raises(ValueError, match="mcq.ranker.bos must be one of"):
        rank_candidates(model, tok, qa, seed=0, bos="none")


def test_ranker_bos_and_evict_are_config_keys_and_in_the_shard_fingerprint(tmp_path, corpus, tiny_model_dir):
    from snakemake.exceptions import WorkflowError

    from knowlab.config import check_config, load_config

    cfg = load_config()
    assert (cfg["mcq"]["ranker"]["bos"], cfg["mcq"]["ranker"]["evict"]) == ("tokenizer", "lowest")
    paper = load_config(Path(__file__).resolve().parents[2] / "config" / "paper.yaml")["mcq"]["ranker"]
    assert (paper["bos"], paper["evict"]) == ("double", "released")
    for key, value in (("bos", "triple"), ("evict", "highest")):
        on = re.escape(f"On instance['mcq']['ranker']['{key}']:")
        with pytest.raises(WorkflowError, match=rf"(?s)'{value}' is not one of .*{on}"):
            load_config({"mcq": {"ranker": {key: value}}})
    with pytest.raises(ValueError, match=r"mcq.ranker.evict: released.*max_candidates=9"):  # MCQ-10 needs 10
        check_config(load_config({"mcq": {"ranker": {"evict": "released", "max_candidates": 9}}}))
    qa, ranker = corpus["fict_qa"][:3], RankerSettings.from_config(cfg)
    stamps = {}
    for bos in mcq.RANKER_BOS:
        store = mcq.ranking_shards(tmp_path / bos, tiny_model_dir, qa, replace(ranker, bos=bos), 0)
        stamps[bos] = (store.folder / "fingerprint.json").read_text()
    assert stamps["tokenizer"] != stamps["double"]

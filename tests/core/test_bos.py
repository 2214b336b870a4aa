"""BOS as lm-evaluation-harness puts it: a tiny random Llama whose tokenizer adds a BOS (as Llama-3's does)
scored by our engine and by the installed harness's ``HFLM`` on the same requests, and by the harness on
the exported MCQ tasks."""

import numpy as np
import pytest

from knowlab.core.scoring import encode_context, encode_pair, loglikelihood, special_prefix
from knowlab.fictionalqa.corpus.mcq import build_mcq
from knowlab.fictionalqa.suites import MCQ_TEMPLATE, mcq_rows


@pytest.fixture
def bos_model(tiny_bos_model, one_thread):
    """The session's tiny Llama whose tokenizer adds a BOS (model, tokenizer), torch on one thread."""
    return tiny_bos_model


def _harness(model, tokenizer):
    from lm_eval.models.huggingface import HFLM

    return HFLM(pretrained=model, tokenizer=tokenizer, batch_size=4, device="cpu", dtype="float32")


def _requests(corpus):
    qa = corpus["fict_qa"][:6]
    requests = [(MCQ_TEMPLATE.format(question=r["question"]), " " + r["natural_answer"]) for r in qa]
    requests += [(f"{r['question']} ", r["natural_answer"]) for r in qa[:3]]  # trailing space moves over
    requests += [("", corpus["fictions"][0]["fiction"][:300])]  # empty context: the BOS stands in
    return requests


def test_the_tokenizer_default_prefix_is_its_bos(bos_model):
    _, tokenizer = bos_model
    bos = tokenizer.bos_token_id
    assert tokenizer("a story")["input_ids"][0] == bos
    assert special_prefix(tokenizer) == [bos]
    assert special_prefix(tokenizer, "double") == [bos, bos]
    assert special_prefix(tokenizer, "none") == []
    context, continuation = encode_pair(tokenizer, "Question: who?\nAnswer:", " Ada")
    assert context[0] == bos and context[1] != bos and continuation == tokenizer(" Ada", add_special_tokens=False)["input_ids"]
    assert encode_context(tokenizer, "<|begin_of_text|>Question:")[:2] == [bos, tokenizer("Question:", add_special_tokens=False)["input_ids"][0]]
    with pytest.raises(ValueError, match="bos must be one of"):
        special_prefix(tokenizer, "always")


def test_log_likelihoods_equal_the_harness_hflm(bos_model, corpus):
    """Our engine's (sum log-likelihood, is_greedy) per request equals ``HFLM.loglikelihood``'s to 1e-5 nats
    per token (float32), BOS included; without the BOS the numbers move by far more, so the test can fail."""
    from lm_eval.api.instance import Instance

    model, tokenizer = bos_model
    requests = _requests(corpus)
    instances = [
        Instance(request_type="loglikelihood", doc={}, arguments=request, idx=i) for i, request in enumerate(requests)
    ]
    theirs = _harness(model, tokenizer).loglikelihood(instances, disable_tqdm=True)
    ours = loglikelihood(model, tokenizer, requests, batch_size=3, min_shared_prefix=1)
    # 1e-5 nats per continuation token: the harness sums float32 log-softmax values, we sum in float64
    difference = [abs(a - b) / n for (a, n, _), (b, _) in zip(ours, theirs)]
    assert max(difference) < 1e-5, difference
    assert [greedy for _, _, greedy in ours] == [greedy for _, greedy in theirs]
    without = loglikelihood(model, tokenizer, requests[:6], batch_size=3, bos="none")
    assert max(abs(a[0] - b[0]) for a, b in zip(without, theirs)) > 1e-3


def test_exported_tasks_score_the_same_accuracy_in_the_harness(bos_model, corpus, tmp_path, monkeypatch):
    """The exported MCQ-4 task run by ``lm_eval.simple_evaluate`` on the BOS model gives our ``acc`` and
    ``acc_norm`` (mean over the items) to float rounding."""
    import datasets
    import lm_eval
    from lm_eval.tasks import TaskManager

    from knowlab.fictionalqa.lm_eval_export import export_mcq_suites

    model, tokenizer = bos_model
    items = build_mcq(corpus["fict_qa"], 4, seed=0)[:24]
    export_mcq_suites({"fictionalqa_mcq4": items}, tmp_path / "lm_eval", MCQ_TEMPLATE)
    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", tmp_path / "hf_datasets")  # not ~/.cache
    output = lm_eval.simple_evaluate(
        model=_harness(model, tokenizer),
        tasks=["fictionalqa_mcq4"],
        task_manager=TaskManager(include_path=str(tmp_path / "lm_eval"), include_defaults=False),
        log_samples=True,
    )
    rows = {r["item_id"]: r for r in mcq_rows(model, tokenizer, items, MCQ_TEMPLATE, batch_size=4)}
    samples = output["samples"]["fictionalqa_mcq4"]
    assert len(samples) == len(items)
    for sample in samples:
        row = rows[sample["doc"]["question_id"]]
        assert (sample["acc"], sample["acc_norm"]) == (row["acc"], row["acc_norm"]), sample["doc"]["question_id"]
    results = output["results"]["fictionalqa_mcq4"]
    assert results["acc,none"] == pytest.approx(np.mean([r["acc"] for r in rows.values()]), abs=1e-12)
    assert results["acc_norm,none"] == pytest.approx(np.mean([r["acc_norm"] for r in rows.values()]), abs=1e-12)

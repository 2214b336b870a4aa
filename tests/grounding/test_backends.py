"""Grounding generation, decomposition and their config through the backends: the local model
(``transformers``, today's path) and an OpenAI-compatible server (``openai``, the stub server of
tests/conftest.py)."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import pandas as pd
import pytest

from knowlab.config import load_config
from knowlab.core.llm.cache import RequestCache
from knowlab.core.llm.local import count_tokens, render_chat
from knowlab.core.llm.requests import BackendError
from knowlab.grounding.facts import DECOMPOSER_CLIENT, decompose_messages, decompose_responses, decomposer_id
from knowlab.grounding.generate import (
    ClientOptions,
    build_prompt,
    fit_contexts,
    generate_responses,
    response_id,
    served_model,
)
from knowlab.grounding.settings import (
    GroundingDecomposerSettings,
    GroundingEvaluatorSettings,
    GroundingGenerateSettings,
    GroundingGenerationSettings,
    GroundingScoreSettings,
)

ROOT = Path(__file__).resolve().parents[2]
PARAMS = {"max_new_tokens": 8, "do_sample": False, "temperature": 1.0, "top_k": None, "top_p": None, "seed": 0}
CONTEXT = "Ada Quill built the Meridian bridge in 1871. The bridge spans the river Tolle near the old mill."


@pytest.fixture
def tiny(tiny_model):
    """The session's tiny random model and its tokenizer (tests/conftest.py)."""
    return tiny_model


def _records(*questions: str) -> list[dict]:
    return [
        {"item_id": f"q{i}", "condition": "original_gold", "question": q, "contexts": [CONTEXT]}
        for i, q in enumerate(questions)
    ]


def _served_cfg(url: str, **overrides) -> GroundingGenerationSettings:
    cfg = {"backend": "openai", "max_new_tokens": 8, "max_input_tokens": 450, "openai_base_url": url}
    return GroundingGenerationSettings(**{**cfg, **overrides})


#: the stub server's client: no retries, short timeouts (grounding.generation.openai's client keys)
CLIENT = ClientOptions(max_retries=0, timeout_s=5, concurrency=2)


def test_transformers_path_unchanged_by_the_new_keys(tiny):
    """The config's new keys (backend, openai) leave the local path and its ids as they were."""
    model, tokenizer = tiny
    records = _records("Who built the bridge?", "When was it built?")
    plain = generate_responses(
        model, tokenizer, records, GroundingGenerationSettings(max_new_tokens=8, max_input_tokens=450)
    )
    cfg = GroundingGenerationSettings(
        max_new_tokens=8, max_input_tokens=450, backend="transformers", openai_base_url="x"
    )
    assert generate_responses(model, tokenizer, records, cfg) == plain
    for record, out in zip(records, plain, strict=True):
        assert out["prompt"] == render_chat(tokenizer, build_prompt(record["question"], record["contexts"]))
        assert out["response_id"] == response_id(model.name_or_path, out["prompt"], PARAMS)
        assert "backend" not in out and "served_model" not in out
    with pytest.raises(ValueError, match="grounding.generation.backend transformers needs the model"):
        generate_responses(None, tokenizer, records, cfg)
    with pytest.raises(
        ValueError,
        match=re.escape("grounding.generation.backend must be one of ('transformers', 'openai'), got 'vllm'"),
    ):
        generate_responses(model, tokenizer, records, GroundingGenerationSettings(backend="vllm"))
    with pytest.raises(TypeError, match=re.escape("unexpected keyword argument 'openai_url'")):
        generate_responses(model, tokenizer, records, GroundingGenerationSettings(openai_url="x"))


def test_served_generation_records_and_requests(openai_stub, tiny):
    fake, url = openai_stub
    _, tokenizer = tiny
    records = _records("Who built the bridge?", "When was it built?")
    cfg = _served_cfg(url, system_prompt="Answer briefly.")
    out = generate_responses(None, tokenizer, records, cfg, served="resources/models/m1", client=CLIENT)
    assert len(fake.bodies) == 2
    for record, got in zip(records, out, strict=True):
        user = build_prompt(record["question"], record["contexts"])
        messages = [{"role": "system", "content": "Answer briefly."}, {"role": "user", "content": user}]
        body = next(b for b in fake.bodies if b["messages"][-1]["content"] == user)
        assert body["model"] == "resources/models/m1" and body["messages"] == messages
        assert body["max_tokens"] == 8 and body["temperature"] == 0.0  # greedy
        assert not {"seed", "top_k", "top_p"} & set(body)
        assert got["prompt"] == user and got["response"] == f"echo: {user}"
        assert got["backend"] == "openai" and got["served_model"] == "resources/models/m1"
        assert (got["n_input_tokens"], got["n_new_tokens"], got["finished"]) == (3, 2, True)  # the server's counts
        assert got["n_truncated_tokens"] == 0 and got["item_id"] == record["item_id"]
        expected = response_id("resources/models/m1", json.dumps(messages), {**PARAMS, "backend": "openai"})
        assert got["response_id"] == expected and len(expected) == 16
    local_id = response_id("resources/models/m1", render_chat(tokenizer, out[0]["prompt"], "Answer briefly."), PARAMS)
    assert out[0]["response_id"] != local_id


def test_served_prompts_are_fitted_with_the_local_tokenizer(openai_stub, tiny):
    fake, url = openai_stub
    _, tokenizer = tiny
    records = [{"item_id": "q0", "condition": "original_dist", "question": "Who?", "contexts": [CONTEXT] * 8}]
    full = count_tokens(tokenizer, render_chat(tokenizer, build_prompt("Who?", records[0]["contexts"])))
    limit = full - 40
    (got,) = generate_responses(
        None, tokenizer, records, _served_cfg(url, max_input_tokens=limit), served="m", client=CLIENT
    )
    kept, dropped = fit_contexts(tokenizer, "Who?", records[0]["contexts"], limit)
    assert got["n_truncated_tokens"] == dropped > 0
    assert got["prompt"] == build_prompt("Who?", kept) == fake.bodies[0]["messages"][-1]["content"]
    assert count_tokens(tokenizer, render_chat(tokenizer, got["prompt"])) <= limit


def test_served_sampling_parameters(openai_stub, tiny):
    fake, url = openai_stub
    _, tokenizer = tiny
    cfg = _served_cfg(url, do_sample=True, temperature=0.6, top_k=10, top_p=0.9, seed=3)
    generate_responses(None, tokenizer, _records("Who?"), cfg, served="m", client=CLIENT)
    body = fake.bodies[0]
    assert (body["temperature"], body["top_k"], body["top_p"], body["seed"], body["max_tokens"]) == (0.6, 10, 0.9, 3, 8)
    assert body["messages"][0]["role"] == "user"  # no system prompt configured: no system message


def test_served_error_names_the_request(openai_stub, tiny):
    _, url = openai_stub
    _, tokenizer = tiny
    with pytest.raises(BackendError, match=r"request 'q1/original_gold': HTTP 400: .*max_tokens is too large"):
        generate_responses(
            None, tokenizer, _records("Who?", "A bad question?"), _served_cfg(url), served="m", client=CLIENT
        )
    with pytest.raises(ValueError, match="grounding.generation.backend openai needs the served model name"):
        generate_responses(None, tokenizer, _records("Who?"), _served_cfg(url), client=CLIENT)
    with pytest.raises(ValueError, match="grounding generation needs the model's tokenizer"):
        generate_responses(None, None, _records("Who?"), _served_cfg(url), served="m", client=CLIENT)


def test_served_empty_answer_is_a_result_and_the_cache_resumes(openai_stub, tiny, tmp_path):
    fake, url = openai_stub
    _, tokenizer = tiny
    records = _records("Who?", "null answer please?")
    cache = RequestCache(tmp_path / "requests")
    first = generate_responses(None, tokenizer, records, _served_cfg(url), served="m", cache=cache, client=CLIENT)
    assert first[1]["response"] == "" and first[1]["finished"] is True
    assert len(list((tmp_path / "requests").glob("*/*.json"))) == 2
    again = generate_responses(None, tokenizer, records, _served_cfg(url), served="m", cache=cache, client=CLIENT)
    assert again == first and len(fake.bodies) == 2  # answered from the cache
    # the same question twice in one condition: distinct request keys
    twice = generate_responses(
        None, tokenizer, _records("Who?") * 2, _served_cfg(url), served="m", cache=cache, client=CLIENT
    )
    assert [r["response_id"] for r in twice] == [first[0]["response_id"]] * 2


def test_served_model_names():
    models = {"llama": "meta/llama", "doc/step-6": {"base_url": "http://b/v1"}}
    server = GroundingGenerationSettings(backend="openai", openai_base_url="http://a/v1", openai_models=models)
    assert served_model(server, "llama", "resources/models/llama") == ("meta/llama", "http://a/v1")
    assert served_model(server, "doc/step-6", "results/x/step-6") == ("results/x/step-6", "http://b/v1")
    assert served_model(server, "other", "resources/models/other") == ("resources/models/other", "http://a/v1")
    assert served_model(GroundingGenerationSettings(backend="openai"), None, "p") == ("p", None)
    with pytest.raises(
        ValueError,
        match=re.escape(
            "grounding.generation.openai.models.bad: expected a served model name or {model, base_url}, got ['x']"
        ),
    ):
        served_model(GroundingGenerationSettings(backend="openai", openai_models={"bad": ["x"]}), "bad", "p")


def _score_inputs() -> list[dict]:
    return [
        {
            "response": "Ada built the bridge. It spans the Tolle.",
            "response_id": "r1",
            "gold_contexts": [CONTEXT],
            "model": "m",
            "run": "base",
            "step": 0,
            "source": "fiction",
            "condition": "original_gold",
            "answers": ["Ada Quill"],
            "context_tokens": 20,
            "n_distractors": 0,
            "n_truncated_tokens": 0,
            "item_id": "q0",
            "version": "original",
            "atomic_facts": ["Ada Quill built the bridge."],
        }
    ]


def test_served_decomposer(openai_stub, tmp_path):
    fake, url = openai_stub
    fake.reply = lambda sentence: f"- Fact of: {sentence}\n- Another."
    decomposer = GroundingDecomposerSettings(
        kind="llm",
        backend="openai",
        max_new_tokens=20,
        min_support=None,
        openai_base_url=url,
        openai_model="decomposer-lm",
    )
    client = ClientOptions(max_retries=0, timeout_s=5)
    cache = RequestCache(tmp_path / "requests")
    responses = ["Ada built the bridge. It spans the Tolle.", "It spans the Tolle.", ""]
    out = decompose_responses(responses, decomposer, request_cache=cache, client=client)
    assert out[0] == {
        "facts": ["Fact of: Ada built the bridge.", "Another.", "Fact of: It spans the Tolle."],
        "method": "llm",
    }
    assert out[1]["facts"] == ["Fact of: It spans the Tolle.", "Another."] and out[2]["facts"] == []
    assert len(fake.bodies) == 2  # one request per distinct sentence
    body = fake.bodies[0]
    assert body["model"] == "decomposer-lm" and body["max_tokens"] == 20 and body["temperature"] == 0.0
    assert body["messages"] in ([*decompose_messages(s)] for s in ("Ada built the bridge.", "It spans the Tolle."))
    assert decomposer_id(decomposer) == "llm:openai:decomposer-lm:max_new_tokens=20:min_support=None"
    assert decompose_responses(responses, decomposer, request_cache=cache, client=client) == out
    assert len(fake.bodies) == 2
    with pytest.raises(BackendError, match="'sentence 0: A bad sentence.'.*HTTP 400"):
        decompose_responses(["A bad sentence."], decomposer, client=client)
    with pytest.raises(
        ValueError, match=re.escape("grounding.decomposer.backend openai needs the served model name (openai.model)")
    ):
        decompose_responses(["x"], dataclasses.replace(decomposer, openai_model=None), client=client)


def test_score_with_a_served_decomposer_loads_no_model(openai_stub, tmp_path, monkeypatch):
    """steps.score: the served decomposer defaults to the base model folder's name; no local model."""
    from knowlab.grounding.steps import data as steps

    fake, url = openai_stub
    fake.reply = lambda sentence: f"- {sentence}"

    def no_model(path):
        raise AssertionError(f"loaded {path}")

    class Exact:
        def supported(self, pairs):
            return [fact in text for fact, text in pairs]

    monkeypatch.setattr(steps, "load_model", no_model)
    monkeypatch.setattr(steps, "load_evaluator", lambda settings, model, tokenizer: Exact())
    monkeypatch.setattr(steps, "score_responses", lambda gold, facts, evaluator: pd.DataFrame({"n_facts": [2]}))
    settings = GroundingScoreSettings(
        decomposer=GroundingDecomposerSettings(kind="llm", backend="openai", openai_base_url=url),
        evaluator=GroundingEvaluatorSettings(kind="bi_encoder"),
    )
    rows = steps.score(
        _score_inputs(),
        settings,
        "resources/base_model",
        tmp_path / "facts.json",
        tmp_path / "cache.json",
        tmp_path / "req",
        client=dataclasses.replace(DECOMPOSER_CLIENT, max_retries=0),
    )
    assert list(rows["n_facts"]) == [2] and rows["response_id"].tolist() == ["r1"]
    assert {b["model"] for b in fake.bodies} == {"resources/base_model"}
    facts = json.loads((tmp_path / "facts.json").read_text())
    assert facts["r1"]["facts"] == ["Ada built the bridge.", "It spans the Tolle."] and facts["r1"]["method"] == "llm"
    assert len(list((tmp_path / "req").glob("*/*.json"))) == 2


def test_respond_over_a_server_loads_only_the_tokenizer(openai_stub, tiny_model_dir, tmp_path, monkeypatch):
    from knowlab.grounding.steps import data as steps

    fake, url = openai_stub
    monkeypatch.setattr(steps, "load_model", lambda path: pytest.fail(f"loaded the weights of {path}"))
    items = [
        {
            "item_id": "q1",
            "version": version,
            "source": "fiction",
            "question": "Who built the bridge?",
            "answers": ["Ada Quill"],
            "contexts": [CONTEXT.replace("Ada", name)],
            "atomic_facts": ["f"],
            "factors": {},
            "gold_doc_ids": ["g"],
            "extra": {},
        }
        for version, name in (("original", "Ada"), ("conflict", "Bea"))
    ]
    pool = [{"doc_id": "d0", "title": "t", "text": "A distractor about rivers."}]
    distractors = pd.DataFrame({"item_id": ["q1"], "rank": [0], "doc_id": ["d0"]})
    settings = GroundingGenerateSettings(
        conditions=("original_gold", "conflict_gold"),
        max_items=None,
        budget=200,
        position="random",
        generation=_served_cfg(url, openai_models={"m1": "served-m1"}),
    )
    tags = {"model": "m1", "run": "base", "step": 0, "checkpoint": str(tiny_model_dir)}
    args = (items, pool, distractors, settings, 0, tags)
    client = ClientOptions(max_retries=0)
    out = steps.respond(
        str(tiny_model_dir), *args, served_key="m1", request_cache=str(tmp_path / "req"), client=client
    )
    assert [r["condition"] for r in out] == ["original_gold", "conflict_gold"]
    assert all(r["served_model"] == "served-m1" and r["model"] == "m1" for r in out)
    assert "Bea" in out[1]["prompt"] and out[1]["response"].startswith("echo: ")
    assert {b["model"] for b in fake.bodies} == {"served-m1"}
    default = steps.respond(str(tiny_model_dir), *args, served_key="other", client=client)  # default: the folder
    assert {r["served_model"] for r in default} == {str(tiny_model_dir)}


def test_config_keys():
    cfg = load_config({})
    gen, dec = cfg["grounding"]["generation"], cfg["grounding"]["decomposer"]
    assert gen["backend"] == "transformers" and dec["backend"] == "transformers"
    assert gen["openai"] == {
        "base_url": None,
        "api_key_env": "OPENAI_API_KEY",
        "max_retries": 5,
        "timeout_s": 600,
        "concurrency": 16,
        "models": {},
    }
    assert dec["openai"]["model"] is None and dec["openai"]["timeout_s"] == 120
    served = {
        "backend": "openai",
        "openai": {"base_url": "http://localhost:8000/v1", "models": {"base_model": "x", "doc/step-6": {"model": "y"}}},
    }
    cfg = load_config({"grounding": {"generation": served, "decomposer": {"kind": "llm", "backend": "openai"}}})
    assert cfg["grounding"]["generation"]["openai"]["models"]["doc/step-6"] == {"model": "y"}
    # a partial openai block is completed by the schema's defaults (as Snakemake loads it)
    cfg = load_config({"grounding": {"generation": {"openai": {"base_url": "http://h/v1"}}}})
    assert cfg["grounding"]["generation"]["openai"]["concurrency"] == 16
    from snakemake.exceptions import WorkflowError

    # the schema's message says what is wrong and where: the value, then the key's path
    for bad, wrong, where in (
        (
            {"generation": {"backend": "vllm"}},
            "'vllm' is not one of ['transformers', 'openai']",
            "['generation']['backend']",
        ),
        (
            {"generation": {"openai": {"models": {"m": ""}}}},
            "'' is not valid under any of the given schemas",
            "['generation']['openai']['models']['m']",
        ),
        (
            {"generation": {"openai": {"models": {"m": {"name": "x"}}}}},
            "{'name': 'x'} is not valid under any of the given schemas",
            "['generation']['openai']['models']['m']",
        ),
        (
            {"generation": {"openai": {"url": "x"}}},
            "Additional properties are not allowed ('url' was unexpected)",
            "['generation']['openai']",
        ),
        (
            {"decomposer": {"openai": {"models": {}}}},
            "Additional properties are not allowed ('models' was unexpected)",
            "['decomposer']['openai']",
        ),
    ):
        match = "(?s)" + re.escape(wrong) + ".*" + re.escape("On instance['grounding']" + where + ":")
        with pytest.raises(WorkflowError, match=match):
            load_config({"grounding": bad})

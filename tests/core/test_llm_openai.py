"""OpenAI backends against a scripted local OpenAI-compatible server on 127.0.0.1."""

from __future__ import annotations

import json
import logging
import re

import pytest

from knowlab.core.io import DataError
from knowlab.core.llm.cache import RequestCache, run_requests
from knowlab.core.llm.openai_backend import OpenAIBatchBackend, OpenAIChatBackend
from knowlab.core.llm.requests import BackendError, ChatRequest


@pytest.fixture
def server(openai_stub):
    """(fake, base_url) of the scripted OpenAI server (tests/conftest.py, ``openai_stub``)."""
    return openai_stub


def _requests(*texts: str) -> list[ChatRequest]:
    return [
        ChatRequest(
            key=f"event_{i:03d}",
            stage="seeds",
            model="m",
            messages=({"role": "system", "content": "sys"}, {"role": "user", "content": text}),
            params={"temperature": 0.0, "seed": i},
        )
        for i, text in enumerate(texts)
    ]


def test_chat_all_requests(server, monkeypatch):
    fake, url = server
    monkeypatch.delenv("OPENAI_API_KEY")  # a local server needs no key
    backend = OpenAIChatBackend("m", url, max_retries=1, timeout_s=5, concurrency=2)
    requests = _requests(*(f"hello {i}" for i in range(5)))
    got = {r.key: c for r, c in backend.complete(requests)}
    assert {k: c.content for k, c in got.items()} == {r.key: f"echo: hello {i}" for i, r in enumerate(requests)}
    assert all(c.backend == "openai" and c.model == "m" and c.finish_reason == "stop" for c in got.values())
    assert got["event_000"].usage == {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5}
    assert fake.hits["/v1/chat/completions"] == 5
    assert repr(backend) == f"OpenAIChatBackend(model='m', base_url='{url}')"


def test_chat_400_names_key_not_secret(server, caplog):
    fake, url = server
    caplog.set_level(logging.DEBUG)
    backend = OpenAIChatBackend("m", url, max_retries=1, timeout_s=5, concurrency=1)
    done = []
    with pytest.raises(BackendError, match=r"request 'event_002': HTTP 400: .*max_tokens is too large") as info:
        for request, _ in backend.complete(_requests("ok 0", "ok 1", "bad")):
            done.append(request.key)
    message = str(info.value)
    assert done == ["event_000", "event_001"]
    assert fake.secret not in message and fake.secret not in caplog.text and fake.secret not in repr(backend)


def test_chat_retries_transient_503(server):
    fake, url = server
    fake.fail_503 = 2
    backend = OpenAIChatBackend("m", url, max_retries=3, timeout_s=5)
    [(_, completion)] = list(backend.complete(_requests("again")))
    assert completion.content == "echo: again"
    assert fake.hits["/v1/chat/completions"] == 3


def test_chat_null_content(server):
    _, url = server
    backend = OpenAIChatBackend("m", url, max_retries=1, timeout_s=5)
    with pytest.raises(BackendError, match="event_000.*without content"):
        list(backend.complete(_requests("null please")))


def test_missing_api_key(monkeypatch):
    monkeypatch.delenv("MY_KEY_VAR", raising=False)
    with pytest.raises(BackendError, match="no OpenAI API key: set the environment variable MY_KEY_VAR"):
        OpenAIChatBackend("m", None, api_key_env="MY_KEY_VAR")
    with pytest.raises(BackendError, match="no OpenAI API key: set the environment variable MY_KEY_VAR"):
        OpenAIBatchBackend("m", None, api_key_env="MY_KEY_VAR", state_dir=".")


def _batch(url: str, tmp_path) -> OpenAIBatchBackend:
    return OpenAIBatchBackend(
        "m", url, state_dir=tmp_path / "state", poll_interval_s=0.01, max_wait_s=5, max_retries=1, timeout_s=5
    )


def test_batch_completes_and_resumes(server, tmp_path):
    fake, url = server
    requests = _requests("a", "b", "c")
    first = {r.key: c.content for r, c in _batch(url, tmp_path).complete(requests)}
    assert first == {"event_000": "echo: a", "event_001": "echo: b", "event_002": "echo: c"}
    [state] = (tmp_path / "state").glob("*.json")
    assert json.loads(state.read_text())["digests"] == sorted(r.digest() for r in requests)
    second = {r.key: c.content for r, c in _batch(url, tmp_path).complete(requests)}
    assert second == first
    assert fake.hits["/v1/batches"] == 1 and fake.hits["/v1/files"] == 1
    assert all(c.backend == "openai_batch" for _, c in _batch(url, tmp_path).complete(requests))


def test_batch_failed_is_resubmitted(server, tmp_path):
    fake, url = server
    fake.batch_status = "failed"
    with pytest.raises(BackendError, match="batch_1 failed.*bad input"):
        list(_batch(url, tmp_path).complete(_requests("a")))
    fake.batch_status = None
    assert [c.content for _, c in _batch(url, tmp_path).complete(_requests("a"))] == ["echo: a"]
    assert fake.hits["/v1/batches"] == 2


def test_batch_missing_output_line(server, tmp_path):
    _, url = server
    done = []
    with pytest.raises(
        BackendError, match=r"1 of 3 request\(s\) of batch \S+ failed: event_001: missing from the batch output$"
    ):
        for request, _ in _batch(url, tmp_path).complete(_requests("a", "drop me", "c")):
            done.append(request.key)
    assert sorted(done) == ["event_000", "event_002"]


def test_batch_max_wait(server, tmp_path):
    fake, url = server
    fake.batch_status = "in_progress"
    backend = OpenAIBatchBackend("m", url, state_dir=tmp_path, poll_interval_s=0.01, max_wait_s=0.05, max_retries=1)
    with pytest.raises(BackendError, match="batch_1 still in_progress.*resumes"):
        list(backend.complete(_requests("a")))


def test_chat_allow_empty_and_top_k(server):
    fake, url = server
    backend = OpenAIChatBackend("m", url, max_retries=1, timeout_s=5, allow_empty=True)
    request = ChatRequest(
        key="k",
        stage="grounding",
        model="m",
        messages=({"role": "user", "content": "null"},),
        params={"temperature": 0.7, "top_k": 10, "seed": 1},
    )
    [(_, completion)] = list(backend.complete([request]))
    assert completion.content == "" and completion.finish_reason == "stop"
    assert fake.bodies[-1]["top_k"] == 10 and fake.bodies[-1]["temperature"] == 0.7  # top_k in the body (vLLM)


class Killed(BaseException):
    """A kill: nothing in the backend catches it."""


def test_batch_killed_between_create_and_record_is_found_not_resubmitted(server, tmp_path, monkeypatch):
    fake, url = server
    requests = _requests("a", "b")
    record = OpenAIBatchBackend._record

    def killed(self, *args):
        raise Killed

    monkeypatch.setattr(OpenAIBatchBackend, "_record", killed)
    with pytest.raises(Killed):
        list(_batch(url, tmp_path).complete(requests))
    assert len(fake.creates) == 1 and not list((tmp_path / "state").glob("*.json"))  # submitted, not recorded
    monkeypatch.setattr(OpenAIBatchBackend, "_record", record)
    got = {r.key: c.content for r, c in _batch(url, tmp_path).complete(requests)}
    assert got == {"event_000": "echo: a", "event_001": "echo: b"}
    assert len(fake.creates) == 1  # found by its metadata, not paid twice
    assert fake.hits["GET /v1/batches"] == 2  # each run without a state file looked
    [state_path] = (tmp_path / "state").glob("*.json")
    state = json.loads(state_path.read_text())
    assert fake.creates[0]["metadata"] == {"knowlab_request_set": state_path.stem, "knowlab_stage": "seeds"}
    assert state["batch_id"] == "batch_1" and state["metadata"] == fake.creates[0]["metadata"]
    assert state["base_url"] == f"{url}/"
    list(_batch(url, tmp_path).complete(requests))  # now resumed from the state file: no listing
    assert fake.hits["GET /v1/batches"] == 2 and len(fake.creates) == 1
    list(_batch(url, tmp_path).complete(_requests("c")))  # another request set: its own batch
    assert len(fake.creates) == 2 and fake.creates[1]["metadata"]["knowlab_request_set"] != state_path.stem


def test_batch_corrupt_state_file(server, tmp_path):
    fake, url = server
    requests = _requests("a")
    list(_batch(url, tmp_path).complete(requests))
    [state_path] = (tmp_path / "state").glob("*.json")
    state_path.write_text('{"batch_id": "batch_')
    with pytest.raises(DataError, match=rf"corrupt batch state file {re.escape(str(state_path))}.*delete it"):
        list(_batch(url, tmp_path).complete(requests))
    state_path.unlink()  # as the message says: the batch is found again by its metadata
    assert [c.content for _, c in _batch(url, tmp_path).complete(requests)] == ["echo: a"]
    assert len(fake.creates) == 1 and json.loads(state_path.read_text())["batch_id"] == "batch_1"


def test_another_server_is_a_cache_miss(server, tmp_path):
    fake, url = server
    cache = RequestCache(tmp_path)
    same_server = url.replace("127.0.0.1", "localhost")
    backends = [OpenAIChatBackend("m", u, max_retries=1, timeout_s=5) for u in (url, url, same_server)]
    assert backends[0].cache_identity == {"backend": "openai", "base_url": f"{url}/"}
    for backend in backends:
        assert run_requests(backend, cache, _requests("hi"), "seeds")["event_000"].content == "echo: hi"
    assert len(fake.bodies) == 2  # the second run was served from the cache, the third is another server
    batch = _batch(url, tmp_path)
    assert batch.cache_identity == {"backend": "openai_batch", "base_url": f"{url}/"}
    assert OpenAIChatBackend("m", None).cache_identity["base_url"] == "https://api.openai.com/v1/"

"""The content-addressed request cache and run_requests (knowlab.core.llm.cache)."""

import hashlib
import json
import re

import pytest

from knowlab.core.io import DataError
from knowlab.core.llm.cache import CACHE_VERSION, RequestCache, cache_key, iter_cache, run_requests
from knowlab.core.llm.requests import BackendError, ChatRequest, Completion, backend_identity


class OneAnswerBackend:
    """Answers every request with the same content."""

    name = "one"
    partial = False

    def complete(self, requests):
        for request in requests:
            yield request, Completion(content="x", model="m", backend=self.name)


def test_run_requests_rejects_duplicate_keys_and_a_backend_that_skips(tmp_path):
    request = ChatRequest(key="k", stage="seeds", messages=({"role": "user", "content": "x"},), model="m")
    with pytest.raises(ValueError, match="duplicate request keys"):
        run_requests(OneAnswerBackend(), RequestCache(tmp_path), [request, request], "seeds")

    class Silent(OneAnswerBackend):
        def complete(self, requests):
            return iter(())

    with pytest.raises(BackendError, match="no answer for 1 request"):
        run_requests(Silent(), RequestCache(tmp_path), [request], "seeds")
    with pytest.raises(ValueError, match="unknown sampling parameter"):
        ChatRequest(key="k", stage="seeds", messages=(), model="m", params={"api_key": "x"})


class Server(OneAnswerBackend):
    """Answers ``<url>: <last message>``, identified by its server URL, counting what it is sent."""

    name = "openai"

    def __init__(self, url):
        self.url, self.sent = url, 0
        self.cache_identity = {"backend": "openai", "base_url": url}

    def complete(self, requests):
        for request in requests:
            self.sent += 1
            yield request, Completion(content=f"{self.url}: {request.messages[-1]['content']}", model="m")


def _request(text="x", key="k", **params):
    return ChatRequest(key=key, stage="seeds", messages=({"role": "user", "content": text},), model="m", params=params)


def test_the_cache_key_is_the_request_and_the_backend_identity(tmp_path):
    request = _request(temperature=0.5, seed=3)
    identity = {"backend": "openai", "base_url": "http://a/v1/"}
    canonical = json.dumps(
        {"cache": CACHE_VERSION, "backend": identity, "request": request.payload()},
        sort_keys=True,
        ensure_ascii=False,
        separators=(",", ":"),
    )
    assert cache_key(request, identity) == hashlib.sha256(canonical.encode()).hexdigest()
    assert cache_key(request, identity) != request.digest()  # version 1 keyed the request alone
    assert backend_identity(OneAnswerBackend()) == {"backend": "one"}  # a backend without an identity
    assert backend_identity(Server("http://a/v1/")) == identity
    # every part changes the key: server, backend kind, model digest, prompt, sampling parameters
    keys = {
        cache_key(request, identity),
        cache_key(request, {**identity, "base_url": "http://b/v1/"}),
        cache_key(request, {**identity, "backend": "openai_batch"}),
        cache_key(request, {"backend": "transformers", "model_sha256": "0" * 64, "dtype": "torch.float32"}),
        cache_key(request, {"backend": "transformers", "model_sha256": "1" * 64, "dtype": "torch.float32"}),
        cache_key(_request("y", temperature=0.5, seed=3), identity),
        cache_key(_request(temperature=0.5, seed=4), identity),
    }
    assert len(keys) == 7


def test_another_server_under_the_same_model_name_is_a_miss(tmp_path):
    cache = RequestCache(tmp_path)
    requests = [_request("q1", "k1"), _request("q2", "k2")]
    first, second = Server("http://a/v1/"), Server("http://b/v1/")
    assert run_requests(first, cache, requests, "seeds")["k1"].content == "http://a/v1/: q1"
    assert run_requests(second, cache, requests, "seeds")["k1"].content == "http://b/v1/: q1"
    assert run_requests(Server("http://a/v1/"), cache, requests, "seeds")["k2"].content == "http://a/v1/: q2"
    assert (first.sent, second.sent) == (2, 2)
    records = list(iter_cache(tmp_path))
    assert len(records) == 4
    assert {r["backend_identity"]["base_url"] for r in records} == {"http://a/v1/", "http://b/v1/"}


def test_entries_of_the_old_key_simply_miss(tmp_path):
    request = _request()
    old = tmp_path / request.digest()[:2] / f"{request.digest()}.json"  # cache version 1: request digest alone
    old.parent.mkdir()
    old.write_text(json.dumps({"completion": {"content": "stale", "model": "m"}}))
    backend = Server("http://a/v1/")
    assert run_requests(backend, RequestCache(tmp_path), [request], "seeds")["k"].content == "http://a/v1/: x"
    assert backend.sent == 1 and old.read_text().count("stale") == 1


@pytest.mark.parametrize(
    "text, problem",
    [
        ('{"key": "k", "completion": {"content": "an answ', "invalid JSON at line 1"),
        ("", "invalid JSON at line 1"),
        ("[1, 2]", "expected a JSON object"),
        ('{"completion": {"text": "x"}}', "no valid 'completion'"),
    ],
)
def test_a_corrupt_cache_file_is_named_and_can_be_deleted(tmp_path, text, problem):
    request, backend = _request(), Server("http://a/v1/")
    cache = RequestCache(tmp_path)
    run_requests(backend, cache, [request], "seeds")
    path = cache.path(request, backend_identity(backend))
    path.write_text(text)
    with pytest.raises(
        DataError, match=rf"corrupt request cache file {re.escape(str(path))}: {problem}.*delete the file"
    ):
        run_requests(backend, cache, [request], "seeds")
    if "JSON" in problem:  # the audit reader names the file too
        with pytest.raises(DataError, match=rf"corrupt request cache file {re.escape(str(path))}: {problem}"):
            list(iter_cache(tmp_path))
    assert path.read_text() == text and backend.sent == 1  # nothing sent, nothing overwritten
    path.unlink()  # as the message says: the request is sent again
    assert run_requests(backend, cache, [request], "seeds")["k"].content == "http://a/v1/: x" and backend.sent == 2

"""OpenAI backends against a scripted local OpenAI-compatible server on 127.0.0.1."""

from __future__ import annotations

import email.parser
import email.policy
import json
import logging
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from knowlab.core.llm.openai_backend import OpenAIBatchBackend, OpenAIChatBackend
from knowlab.core.llm.requests import BackendError, ChatRequest

SECRET = "sk-test-SECRET-do-not-leak-4711"
MAX_REQUESTS = 200  # the server refuses (non-retryable 500) beyond this many requests


def _completion(model: str, content: str | None) -> dict:
    return {"id": "chatcmpl-1", "object": "chat.completion", "created": 0, "model": model,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content},
                         "finish_reason": "stop", "logprobs": None}],
            "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5}}


class FakeOpenAI:
    """State and script of the fake server; tests set the attributes below."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.hits: dict[str, int] = {}
        self.fail_503 = 0  # answer this many chat requests with 503 first
        self.batch_status: str | None = None  # force this status on every poll
        self.files: dict[str, bytes] = {}
        self.batches: dict[str, dict] = {}
        self.polls: dict[str, int] = {}

    def hit(self, what: str) -> int:
        with self.lock:
            self.hits[what] = self.hits.get(what, 0) + 1
            return sum(self.hits.values())

    def chat(self, body: dict) -> tuple[int, dict, dict]:
        """(status, json, headers) for one chat completion; the last user message scripts it."""
        text = [m["content"] for m in body["messages"] if m["role"] == "user"][-1]
        with self.lock:
            if self.fail_503 > 0:
                self.fail_503 -= 1
                return 503, {"error": {"message": "overloaded", "type": "server_error"}}, {"retry-after-ms": "10"}
        if "bad" in text:
            return 400, {"error": {"message": "max_tokens is too large", "type": "invalid_request_error"}}, {}
        return 200, _completion(body["model"], None if "null" in text else f"echo: {text}"), {}

    def output(self, batch: dict) -> str:
        lines = []
        for raw in self.files[batch["input_file_id"]].decode().splitlines():
            line = json.loads(raw)
            status, body, _ = self.chat(line["body"])
            if "drop" in json.dumps(line["body"]):
                continue
            lines.append({"id": "batch_req_1", "custom_id": line["custom_id"],
                          "response": {"status_code": status, "request_id": "r", "body": body}, "error": None})
        return "".join(json.dumps(x) + "\n" for x in lines)


def _handler(fake: FakeOpenAI) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args) -> None:  # keep test output quiet
            pass

        def _send(self, status: int, payload: dict | str, headers: dict | None = None) -> None:
            data = (payload if isinstance(payload, str) else json.dumps(payload)).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)

        def _body(self) -> bytes:
            return self.rfile.read(int(self.headers.get("Content-Length", 0)))

        def do_POST(self) -> None:
            body = self._body()
            if fake.hit(self.path) > MAX_REQUESTS:
                return self._send(500, {"error": {"message": "too many"}}, {"x-should-retry": "false"})
            if self.path == "/v1/chat/completions":
                return self._send(*fake.chat(json.loads(body)))
            if self.path == "/v1/files":
                head = f"Content-Type: {self.headers['Content-Type']}\r\n\r\n".encode()
                message = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(head + body)
                data = next(p.get_payload(decode=True) for p in message.iter_parts() if p.get_filename())
                file_id = f"file-{len(fake.files) + 1}"
                fake.files[file_id] = data
                return self._send(200, {"id": file_id, "object": "file", "bytes": len(data), "created_at": 0,
                                        "filename": "x", "purpose": "batch", "status": "processed"})
            if self.path == "/v1/batches":
                request = json.loads(body)
                batch_id = f"batch_{len(fake.batches) + 1}"
                fake.batches[batch_id] = {"id": batch_id, "object": "batch", "endpoint": request["endpoint"],
                                          "input_file_id": request["input_file_id"], "completion_window": "24h",
                                          "status": "validating", "created_at": 0}
                fake.polls[batch_id] = 0
                return self._send(200, fake.batches[batch_id])
            self._send(404, {"error": {"message": f"no route {self.path}"}})

        def do_GET(self) -> None:
            if fake.hit(self.path) > MAX_REQUESTS:
                return self._send(500, {"error": {"message": "too many"}}, {"x-should-retry": "false"})
            if match := re.fullmatch(r"/v1/batches/(\w+)", self.path):
                batch = fake.batches[match[1]]
                fake.polls[match[1]] += 1
                if batch["status"] != "failed":  # a failed batch stays failed
                    batch["status"] = fake.batch_status or ("in_progress" if fake.polls[match[1]] == 1 else "completed")
                status = batch["status"]
                answer = dict(batch)
                if status == "completed":
                    output_id = f"out-{match[1]}"
                    fake.files[output_id] = fake.output(batch).encode()
                    answer |= {"output_file_id": output_id,
                               "request_counts": {"total": 1, "completed": 1, "failed": 0}}
                if status == "failed":
                    answer["errors"] = {"object": "list", "data": [{"code": "invalid_file", "message": "bad input"}]}
                return self._send(200, answer)
            if match := re.fullmatch(r"/v1/files/([\w-]+)/content", self.path):
                return self._send(200, fake.files[match[1]].decode())
            self._send(404, {"error": {"message": f"no route {self.path}"}})

    return Handler


@pytest.fixture
def server(monkeypatch):
    """(fake, base_url) of a fake OpenAI server on an ephemeral 127.0.0.1 port."""
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    for var in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy", "OPENAI_BASE_URL"):
        monkeypatch.delenv(var, raising=False)
    fake = FakeOpenAI()
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(fake))
    thread = threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    yield fake, f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    httpd.shutdown()
    httpd.server_close()
    thread.join(timeout=5)


def _requests(*texts: str) -> list[ChatRequest]:
    return [ChatRequest(key=f"event_{i:03d}", stage="seeds", model="m",
                        messages=({"role": "system", "content": "sys"}, {"role": "user", "content": text}),
                        params={"temperature": 0.0, "seed": i})
            for i, text in enumerate(texts)]


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
    _, url = server
    caplog.set_level(logging.DEBUG)
    backend = OpenAIChatBackend("m", url, max_retries=1, timeout_s=5, concurrency=1)
    done = []
    with pytest.raises(BackendError) as info:
        for request, _ in backend.complete(_requests("ok 0", "ok 1", "bad")):
            done.append(request.key)
    message = str(info.value)
    assert done == ["event_000", "event_001"]
    assert "event_002" in message and "400" in message and "max_tokens is too large" in message
    assert SECRET not in message and SECRET not in caplog.text and SECRET not in repr(backend)


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
    with pytest.raises(BackendError, match="MY_KEY_VAR"):
        OpenAIChatBackend("m", None, api_key_env="MY_KEY_VAR")
    with pytest.raises(BackendError, match="MY_KEY_VAR"):
        OpenAIBatchBackend("m", None, api_key_env="MY_KEY_VAR", state_dir=".")


def _batch(url: str, tmp_path) -> OpenAIBatchBackend:
    return OpenAIBatchBackend("m", url, state_dir=tmp_path / "state", poll_interval_s=0.01,
                              max_wait_s=5, max_retries=1, timeout_s=5)


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
    with pytest.raises(BackendError) as info:
        for request, _ in _batch(url, tmp_path).complete(_requests("a", "drop me", "c")):
            done.append(request.key)
    assert sorted(done) == ["event_000", "event_002"]
    assert "event_001" in str(info.value) and "1 of 3" in str(info.value)


def test_batch_max_wait(server, tmp_path):
    fake, url = server
    fake.batch_status = "in_progress"
    backend = OpenAIBatchBackend("m", url, state_dir=tmp_path, poll_interval_s=0.01, max_wait_s=0.05, max_retries=1)
    with pytest.raises(BackendError, match="batch_1 still in_progress.*resumes"):
        list(backend.complete(_requests("a")))

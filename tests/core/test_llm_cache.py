"""The content-addressed request cache and run_requests (knowlab.core.llm.cache)."""

import pytest

from knowlab.core.llm.cache import RequestCache, run_requests
from knowlab.core.llm.requests import BackendError, ChatRequest, Completion


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

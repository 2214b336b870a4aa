"""Chat requests, completions and the backend interface of the fiction generation pipeline.

Every LLM call of the pipeline (FictionalQA, Kirchenbauer et al. 2026, Sec. 3 and App. C) is a
:class:`ChatRequest`: an OpenAI-style message list, the model name and the sampling
parameters, plus a ``key`` that names the item it is for, using the authors' custom_id
convention (``event_000``, ``event_000_style_news_num_000``,
``event_000_style_news_num_000_question_000_attempt_blind``, ...).  The request's
:meth:`~ChatRequest.digest` addresses it by content (model, messages, parameters), so a
changed prompt or temperature is a new request.  The request cache
(:class:`knowlab.core.llm.cache.RequestCache`) adds the backend's identity
(:func:`backend_identity`: backend kind, server URL, local model folder digest) to that
content, so a re-run of the same request on the same backend is served from the cache and
the same request on another server or model folder is not.

A backend turns requests into :class:`Completion` objects.  It yields each completion as
soon as it has it, so a stage can cache it before the next one arrives and a killed
stage loses at most the requests in flight.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

#: Parameters that are sent to a backend.  ``seed`` is sent too (OpenAI and vLLM accept it;
#: the transformers backend seeds its sampler with it); a retry changes it.  ``top_k`` is not an
#: OpenAI parameter: vLLM accepts it (sent in the request body's extra fields), OpenAI rejects it.
SAMPLING_PARAMS = ("temperature", "top_p", "max_tokens", "seed", "top_k")


class BackendError(RuntimeError):
    """A request failed in a way a retry will not fix (a 4xx answer, a response without
    content, retries exhausted); the message names the request key and never the API key."""


def canonical_sha256(obj: Any) -> str:
    """sha256 (hex, 64 characters) of ``obj`` as canonical JSON (sorted keys, no spaces, UTF-8)."""
    canonical = json.dumps(obj, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class ChatRequest:
    """One chat-completions request.

    Attributes:
        key: the item id the request is for (authors' custom_id convention); unique within a stage.
        stage: pipeline stage name (``seeds``, ``fictsheets``, ``fictions``, ``fict_qa``,
            ``attempts``, ``grades``; grounding: ``grounding``, ``atomic facts``).
        messages: ``({"role": "system"|"user"|"assistant", "content": str}, ...)``.
        model: model name as the backend knows it.
        params: sampling parameters, a subset of :data:`SAMPLING_PARAMS`.
    """

    key: str
    stage: str
    messages: tuple[Mapping[str, str], ...]
    model: str
    params: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        unknown = set(self.params) - set(SAMPLING_PARAMS)
        if unknown:
            raise ValueError(
                f"request {self.key!r}: unknown sampling parameter(s) {sorted(unknown)}; known: {SAMPLING_PARAMS}"
            )
        for message in self.messages:
            if set(message) != {"role", "content"} or not isinstance(message["content"], str):
                raise ValueError(f"request {self.key!r}: a message must be {{'role', 'content': str}}, got {message!r}")

    def payload(self) -> dict[str, Any]:
        """The JSON body of ``POST /v1/chat/completions`` for this request."""
        return {"model": self.model, "messages": [dict(m) for m in self.messages], **self.params}

    def digest(self) -> str:
        """sha256 (hex) of the canonical JSON of :meth:`payload`: the request's content address."""
        return canonical_sha256(self.payload())


@dataclass(frozen=True)
class Completion:
    """A backend's answer to one request.

    Attributes:
        content: the assistant message text (never empty: a backend raises
            :class:`BackendError` instead, unless it was made to accept empty answers,
            ``OpenAIChatBackend(allow_empty=True)``).
        model: the model that answered, as the backend reports it.
        finish_reason: ``"stop"``, ``"length"``, ... as reported.
        usage: token counts as reported (``prompt_tokens``, ``completion_tokens``), may be empty.
        backend: the backend's name (``openai``, ``openai_batch``, ``transformers``, ``replay``).
    """

    content: str
    model: str
    finish_reason: str | None = None
    usage: Mapping[str, int] = field(default_factory=dict)
    backend: str = ""


class Backend(Protocol):
    """What a stage needs from a backend.

    ``complete`` yields ``(request, completion)`` pairs in any order, each as soon as it is
    available, and raises :class:`BackendError` on a hard failure (after yielding what it
    already had).  ``partial`` is True only for a backend that may legitimately have no
    answer for a request (replay of a recorded sample): its missing answers are skipped
    with a count instead of being an error.  ``cache_identity`` (optional, read through
    :func:`backend_identity`) is a JSON-able mapping of everything besides the request that
    changes the answer: ``backend`` (the kind) and e.g. the server URL or the model folder's digest.
    """

    name: str
    partial: bool

    def complete(self, requests: Sequence[ChatRequest]) -> Iterator[tuple[ChatRequest, Completion]]: ...


def backend_identity(backend: Backend) -> dict[str, Any]:
    """The part of a request's cache key that names who answers it.

    ``backend.cache_identity`` when the backend has one (every backend of this package:
    ``{"backend": "openai" | "openai_batch", "base_url": ...}``, ``{"backend":
    "transformers", "model_sha256": ..., "dtype": ...}``, ``{"backend": "replay",
    "recording_sha256": ...}``), else ``{"backend": backend.name}``.  Always has ``backend``.
    """
    identity = dict(getattr(backend, "cache_identity", None) or {})
    identity.setdefault("backend", backend.name)
    return identity

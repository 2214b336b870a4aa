"""Content-addressed request cache: resumable stages and a provenance record of every call.

One JSON file per request and backend, ``<root>/<key[:2]>/<key>.json``, where ``key`` is
:func:`cache_key`: the sha256 (hex) of the canonical JSON (sorted keys, no spaces, UTF-8) of ::

    {"cache": 2,                                  # CACHE_VERSION: bumped when the key changes
     "backend": backend_identity(backend),        # who answers
     "request": request.payload()}                # what is asked

* ``backend`` (:func:`knowlab.core.llm.requests.backend_identity`): the backend kind
  (``openai``, ``openai_batch``, ``transformers``, ``replay``) and what else decides the
  answer: the server's base URL as the openai client resolves it (``openai``,
  ``openai_batch``; ``https://api.openai.com/v1/`` when none is configured); the sha256 of
  the local model folder's files and the dtype the model runs in (``transformers``); the
  sha256 of the recorded result files (``replay``).  The API key is never part of it.
* ``request``: the model name, the messages *as rendered* (the stages fill their prompt
  templates before building a request, so a changed template, the prompt version, changes
  the messages and thus the key) and the sampling parameters (``temperature``, ``top_p``,
  ``top_k``, ``max_tokens``, ``seed``).

So switching server, model folder or backend under the same ``model`` name is a cache
miss, and so is every entry written before this key (cache version 1 hashed the request
alone): old files are never read, never an error.  Each file holds the request (key,
stage, payload), the backend identity, the completion and when and by which backend it
was made; it is written atomically as soon as the completion arrives, so a stage killed
midway keeps every answer it had, and its re-run sends only the requests without a file.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm

from knowlab.core.io import DataError, atomic_path
from knowlab.core.llm.requests import (
    Backend,
    BackendError,
    ChatRequest,
    Completion,
    backend_identity,
    canonical_sha256,
)

log = logging.getLogger(__name__)


#: Version of the cache key layout (:func:`cache_key`); files of other versions are never found.
CACHE_VERSION = 2
#: What every corrupt-cache-file message ends with.
_DELETE = "delete the file to recompute its request (the next run sends it again)"


def cache_key(request: ChatRequest, identity: Mapping[str, Any]) -> str:
    """sha256 (hex, 64 characters) of the canonical JSON of ``{"cache": CACHE_VERSION,
    "backend": identity, "request": request.payload()}`` (see the module docstring).

    ``identity`` is :func:`knowlab.core.llm.requests.backend_identity` of the backend; it must
    be JSON-serialisable (TypeError otherwise).
    """
    return canonical_sha256({"cache": CACHE_VERSION, "backend": dict(identity), "request": request.payload()})


def _read_record(path: Path) -> dict[str, Any]:
    """The JSON object of cache file ``path``.

    Raises:
        DataError: unreadable text, invalid (e.g. truncated) JSON or not an object; the message
            names the file (and the line of a syntax error) and says it can be deleted.
    """
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError as err:
        raise DataError(f"corrupt request cache file {path}: not UTF-8 text ({err.reason}); {_DELETE}") from None
    except json.JSONDecodeError as err:
        raise DataError(
            f"corrupt request cache file {path}: invalid JSON at line {err.lineno} column {err.colno} "
            f"({err.msg}); {_DELETE}"
        ) from None
    if not isinstance(record, dict):
        raise DataError(f"corrupt request cache file {path}: expected a JSON object; {_DELETE}")
    return record


class RequestCache:
    """Completions stored by :func:`cache_key` (request and backend identity) under ``root``."""

    def __init__(self, root: str | os.PathLike) -> None:
        self.root = Path(root)

    def path(self, request: ChatRequest, identity: Mapping[str, Any]) -> Path:
        """The file of ``request`` answered by the backend of ``identity``
        (``<root>/<key[:2]>/<key>.json``, :func:`cache_key`)."""
        key = cache_key(request, identity)
        return self.root / key[:2] / f"{key}.json"

    def get(self, request: ChatRequest, identity: Mapping[str, Any]) -> Completion | None:
        """The cached completion of ``request`` from the backend of ``identity``, or None.

        Raises:
            DataError: the cache file exists but is corrupt (truncated or invalid JSON, no
                valid ``completion``); the message names the file and says to delete it.
        """
        path = self.path(request, identity)
        if not path.is_file():
            return None
        record = _read_record(path)
        try:
            completion = Completion(**record["completion"])
        except (KeyError, TypeError) as err:
            raise DataError(f"corrupt request cache file {path}: no valid 'completion' ({err}); {_DELETE}") from None
        if not isinstance(completion.content, str):
            raise DataError(f"corrupt request cache file {path}: 'completion.content' is not a string; {_DELETE}")
        return completion

    def put(self, request: ChatRequest, completion: Completion, identity: Mapping[str, Any]) -> None:
        """Store ``completion`` for ``request`` from the backend of ``identity`` (atomic write)."""
        record = {
            "key": request.key,
            "stage": request.stage,
            "digest": cache_key(request, identity),
            "request_digest": request.digest(),
            "backend_identity": dict(identity),
            "request": request.payload(),
            "completion": {
                "content": completion.content,
                "model": completion.model,
                "finish_reason": completion.finish_reason,
                "usage": dict(completion.usage),
                "backend": completion.backend,
            },
            "created": dt.datetime.now(dt.UTC).isoformat(),
        }
        path = self.path(request, identity)
        with atomic_path(path) as tmp:
            tmp.write_text(json.dumps(record, ensure_ascii=False, indent=1), encoding="utf-8")


def run_requests(
    backend: Backend, cache: RequestCache, requests: Sequence[ChatRequest], desc: str
) -> dict[str, Completion]:
    """Answer ``requests`` from the cache, sending only the missing ones to ``backend``.

    Each new completion is cached as it arrives (before the next one is awaited), under
    :func:`cache_key` of the request and :func:`~knowlab.core.llm.requests.backend_identity`
    of ``backend``.

    Returns:
        ``{request.key: completion}``; with a ``partial`` backend (replay) requests it has no
        answer for are absent (logged with their count), otherwise every key is present.

    Raises:
        ValueError: two requests share a key.
        DataError: a corrupt cache file (named; deleting it re-sends its request).
        BackendError: the backend failed hard (completions received before are cached), or
            a non-partial backend left a request unanswered.
    """
    keys = [r.key for r in requests]
    if len(set(keys)) != len(keys):
        dupes = sorted({k for k in keys if keys.count(k) > 1})
        raise ValueError(f"{desc}: duplicate request keys {dupes[:5]}")
    identity = backend_identity(backend)
    done: dict[str, Completion] = {}
    missing: list[ChatRequest] = []
    for request in requests:
        cached = cache.get(request, identity)
        if cached is None:
            missing.append(request)
        else:
            done[request.key] = cached
    log.info(
        "%s: %d request(s), %d cached, %d to send to %s", desc, len(requests), len(done), len(missing), backend.name
    )
    if missing:
        with tqdm(total=len(missing), desc=desc, unit="req") as bar:
            for request, completion in backend.complete(missing):
                cache.put(request, completion, identity)
                done[request.key] = completion
                bar.update()
    unanswered = [r.key for r in missing if r.key not in done]
    if unanswered:
        if not backend.partial:
            raise BackendError(
                f"{desc}: {backend.name} returned no answer for {len(unanswered)} request(s), e.g. {unanswered[:5]}"
            )
        log.info(
            "%s: %s has no answer for %d request(s) (skipped), e.g. %s",
            desc,
            backend.name,
            len(unanswered),
            unanswered[:3],
        )
    return done


def iter_cache(root: str | os.PathLike) -> Iterable[dict]:
    """Every cached record under ``root`` (for audits), in path order; records of older cache
    versions are included (they lack ``backend_identity``).

    Raises:
        DataError: a corrupt cache file (named).
    """
    for path in sorted(Path(root).glob("*/*.json")):
        yield _read_record(path)

"""Content-addressed request cache: resumable stages and a provenance record of every call.

One JSON file per request, ``<root>/<digest[:2]>/<digest>.json``, where ``digest`` is
:meth:`ChatRequest.digest` (sha256 of model, messages and sampling parameters).  Each
file holds the request (key, stage, payload), the completion and when and by which
backend it was made; it is written atomically as soon as the completion arrives, so a
stage killed midway keeps every answer it had, and its re-run sends only the requests
without a file.  The API key is never part of a request, so it is never stored.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import os
from collections.abc import Iterable, Sequence
from pathlib import Path

from tqdm.auto import tqdm

from knowlab.core.io import atomic_path
from knowlab.core.llm.requests import Backend, BackendError, ChatRequest, Completion

log = logging.getLogger(__name__)


class RequestCache:
    """Completions stored by request digest under ``root``."""

    def __init__(self, root: str | os.PathLike) -> None:
        self.root = Path(root)

    def path(self, request: ChatRequest) -> Path:
        digest = request.digest()
        return self.root / digest[:2] / f"{digest}.json"

    def get(self, request: ChatRequest) -> Completion | None:
        """The cached completion of ``request``, or None.

        Raises:
            ValueError: the cache file exists but is unreadable (the message names it).
        """
        path = self.path(request)
        if not path.is_file():
            return None
        try:
            record = json.loads(path.read_text(encoding="utf-8"))
            return Completion(**record["completion"])
        except (json.JSONDecodeError, KeyError, TypeError) as err:
            raise ValueError(f"corrupt request cache file {path} ({err}); delete it to re-send the request") from None

    def put(self, request: ChatRequest, completion: Completion) -> None:
        """Store ``completion`` for ``request`` (atomic write)."""
        record = {
            "key": request.key,
            "stage": request.stage,
            "digest": request.digest(),
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
        path = self.path(request)
        with atomic_path(path) as tmp:
            tmp.write_text(json.dumps(record, ensure_ascii=False, indent=1), encoding="utf-8")


def run_requests(
    backend: Backend, cache: RequestCache, requests: Sequence[ChatRequest], desc: str
) -> dict[str, Completion]:
    """Answer ``requests`` from the cache, sending only the missing ones to ``backend``.

    Each new completion is cached as it arrives (before the next one is awaited).

    Returns:
        ``{request.key: completion}``; with a ``partial`` backend (replay) requests it has no
        answer for are absent (logged with their count), otherwise every key is present.

    Raises:
        ValueError: two requests share a key.
        BackendError: the backend failed hard (completions received before are cached), or
            a non-partial backend left a request unanswered.
    """
    keys = [r.key for r in requests]
    if len(set(keys)) != len(keys):
        dupes = sorted({k for k in keys if keys.count(k) > 1})
        raise ValueError(f"{desc}: duplicate request keys {dupes[:5]}")
    done: dict[str, Completion] = {}
    missing: list[ChatRequest] = []
    for request in requests:
        cached = cache.get(request)
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
                cache.put(request, completion)
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
    """Every cached record under ``root`` (for audits), in path order."""
    for path in sorted(Path(root).glob("*/*.json")):
        yield json.loads(path.read_text(encoding="utf-8"))

"""Backends for OpenAI-compatible servers: chat completions and the OpenAI Batch API.

* :class:`OpenAIChatBackend` sends ``POST /v1/chat/completions`` requests concurrently to
  OpenAI or any compatible server (vLLM, llama.cpp server, Ollama) and yields each answer as
  it arrives.
* :class:`OpenAIBatchBackend` submits all requests as one OpenAI batch (``/v1/batches``,
  24 h completion window), polls it and yields the answers once it is complete.  The batch
  carries metadata naming its request set, and its id is recorded in a state file before
  polling; a re-run with the same requests resumes the recorded batch or, when the run was
  killed between creating the batch and recording it, finds it among the server's recent
  batches by its metadata, instead of paying for a second one.

Each backend's ``cache_identity`` (the backend part of the request cache key,
:mod:`knowlab.core.llm.cache`) is ``{"backend": name, "base_url": <the client's base URL>}``:
the configured ``base_url`` as the openai client resolves it (``https://api.openai.com/v1/``
when none is configured), so answers of one server are never served for another.

Both use the official ``openai`` client, which retries connection errors, timeouts, 408,
409, 429 and 5xx answers with exponential backoff (``max_retries`` times); anything still
failing, and every other 4xx answer, becomes a :class:`BackendError` naming the request key.
The API key is read from an environment variable and never appears in a log line, an
exception message or a repr.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import itertools
import json
import logging
import os
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import CancelledError, Future, ThreadPoolExecutor, as_completed
from pathlib import Path
from typing import Any

import openai

from knowlab.core.io import DataError, atomic_path, read_json, write_json
from knowlab.core.llm.requests import BackendError, ChatRequest, Completion

log = logging.getLogger(__name__)

#: Batch states from which a batch never completes: a resumed one in such a state is resubmitted.
DEAD_BATCH_STATES = ("failed", "expired", "cancelled")
#: Metadata keys set on every batch at creation: the request set's id (sha256 of its request
#: digests, which is also the state file's name) and the stage name(s) of its requests.
BATCH_SET_KEY, BATCH_STAGE_KEY = "knowlab_request_set", "knowlab_stage"
#: How many of the server's most recent batches a run without a state file looks through for its own.
BATCH_LOOKBACK = 100
#: The endpoint every batch line is sent to.
BATCH_ENDPOINT = "/v1/chat/completions"
#: Request parameters that the openai client does not know: sent as extra body fields (vLLM reads them).
EXTRA_BODY_PARAMS = ("top_k",)


def _client(base_url: str | None, api_key_env: str, max_retries: int, timeout_s: float) -> openai.OpenAI:
    """An ``openai.OpenAI`` client with the key from ``$api_key_env``.

    Without the variable, a ``base_url`` (a local server that needs no key) gets the
    placeholder key ``"not-needed"``; with neither, :class:`BackendError` names the variable.
    """
    api_key = os.environ.get(api_key_env)
    if not api_key:
        if base_url is None:
            raise BackendError(
                f"no OpenAI API key: set the environment variable {api_key_env} "
                f"(or configure a base_url for a local server that needs no key)"
            )
        api_key = "not-needed"
    return openai.OpenAI(base_url=base_url, api_key=api_key, max_retries=max_retries, timeout=timeout_s)


def _api_error(what: str, err: openai.APIError) -> BackendError:
    """A :class:`BackendError` for a failed API call ``what``: HTTP status and the server's message."""
    if isinstance(err, openai.APIStatusError):
        body = err.body
        message = body.get("message") if isinstance(body, Mapping) else None
        text = str(message or body or err.message)[:500]
        retried = err.status_code in (408, 409, 429) or err.status_code >= 500
        return BackendError(f"{what}: HTTP {err.status_code}: {text}" + (" (retries exhausted)" if retried else ""))
    retried = isinstance(err, openai.APIConnectionError)
    return BackendError(f"{what}: {err.message}" + (" (retries exhausted)" if retried else ""))


def _parse(body: Mapping[str, Any], fallback_model: str, backend: str, allow_empty: bool = False) -> Completion:
    """A :class:`Completion` from a chat.completion JSON object.

    With ``allow_empty``, a missing (null) or empty content is the empty string ``""``.

    Raises:
        ValueError: no choices, or (unless ``allow_empty``) content missing, empty or
            whitespace only (the reason only; callers add the request key).
    """
    choices = body.get("choices") or []
    if not choices:
        raise ValueError("response without choices")
    choice = choices[0]
    content = (choice.get("message") or {}).get("content")
    finish_reason = choice.get("finish_reason")
    if allow_empty and (content is None or isinstance(content, str)):
        content = content or ""
    elif not isinstance(content, str) or not content.strip():
        raise ValueError(f"response without content (finish_reason={finish_reason!r})")
    usage = {k: v for k, v in (body.get("usage") or {}).items() if isinstance(v, int) and not isinstance(v, bool)}
    return Completion(
        content=content,
        model=str(body.get("model") or fallback_model),
        finish_reason=finish_reason,
        usage=usage,
        backend=backend,
    )


class OpenAIChatBackend:
    """Chat completions against OpenAI or an OpenAI-compatible server, ``concurrency`` at a time.

    Args:
        model: the configured model name (for the repr; each request's own ``model`` is sent).
        base_url: server root including ``/v1`` (e.g. ``http://127.0.0.1:8000/v1``); None for OpenAI.
        api_key_env: name of the environment variable holding the API key, read once here.
        max_retries: client retries per request for connection errors, timeouts, 408/409/429, 5xx.
        timeout_s: per-attempt HTTP timeout, seconds.
        concurrency: requests in flight at once (threads).
        allow_empty: an empty (or null) answer is a completion with content ``""`` instead of
            an error (grounding: a model may answer nothing at all, a result to record).

    ``top_k`` (not an OpenAI parameter; vLLM's) is sent in the request body's extra fields.

    Raises:
        BackendError: (construction) ``$api_key_env`` unset and no ``base_url``.
        BackendError: (from :meth:`complete`) a 4xx answer, retries exhausted, a response
            without choices or (unless ``allow_empty``) without content; the message names the
            request key, the HTTP status and the server's message.
    """

    name = "openai"
    partial = False

    def __init__(
        self,
        model: str,
        base_url: str | None,
        api_key_env: str = "OPENAI_API_KEY",
        max_retries: int = 5,
        timeout_s: float = 120.0,
        concurrency: int = 4,
        allow_empty: bool = False,
    ) -> None:
        if concurrency < 1:
            raise ValueError(f"concurrency must be >= 1, got {concurrency}")
        self.model, self.base_url, self.concurrency = model, base_url, concurrency
        self.allow_empty = allow_empty
        self._client = _client(base_url, api_key_env, max_retries, timeout_s)
        self.cache_identity = {"backend": self.name, "base_url": str(self._client.base_url)}

    def __repr__(self) -> str:
        return f"OpenAIChatBackend(model={self.model!r}, base_url={self.base_url!r})"

    def _one(self, request: ChatRequest) -> Completion:
        """Send one request; :class:`BackendError` on a hard failure."""
        payload = request.payload()
        extra = {key: payload.pop(key) for key in EXTRA_BODY_PARAMS if key in payload}
        try:
            response = self._client.chat.completions.create(**payload, **({"extra_body": extra} if extra else {}))
        except openai.APIError as err:
            raise _api_error(f"request {request.key!r}", err) from err
        try:
            return _parse(response.to_dict(), request.model, self.name, self.allow_empty)
        except ValueError as err:
            raise BackendError(f"request {request.key!r}: {err}") from None

    def complete(self, requests: Sequence[ChatRequest]) -> Iterator[tuple[ChatRequest, Completion]]:
        """Yield ``(request, completion)`` for every request, in order of arrival.

        On the first hard failure, requests not yet started are cancelled, those in flight
        are awaited and their successes yielded, then the first :class:`BackendError` is raised.
        """
        if not requests:
            return
        pool = ThreadPoolExecutor(max_workers=self.concurrency, thread_name_prefix="openai")
        first_error: BackendError | None = None
        try:
            futures: dict[Future[Completion], ChatRequest] = {pool.submit(self._one, r): r for r in requests}
            for future in as_completed(futures):
                try:
                    completion = future.result()
                except CancelledError:
                    continue
                except BackendError as err:
                    log.error("%s", err)
                    if first_error is None:
                        first_error = err
                        for pending in futures:
                            pending.cancel()
                    continue
                yield futures[future], completion
        finally:
            pool.shutdown(wait=False, cancel_futures=True)
        if first_error is not None:
            raise first_error


class OpenAIBatchBackend:
    """All requests as one OpenAI Batch API job, resumable across runs.

    :meth:`complete` writes ``state_dir/<set>.input.jsonl`` (one line per distinct request
    digest: ``{"custom_id": digest, "method": "POST", "url": "/v1/chat/completions",
    "body": payload}``), uploads it, creates the batch with ``metadata={"knowlab_request_set":
    <set>, "knowlab_stage": <the requests' stage names, comma-separated>}`` and records
    ``{"batch_id", "input_file_id", "digests", "base_url", "metadata", "created"}`` in
    ``state_dir/<set>.json`` before polling, where ``<set>`` is the sha256 of the sorted
    digests joined by newlines.  A later call with the same requests:

    1. resumes the batch recorded in the state file (unless it is failed, expired or
       cancelled, or the file names another server);
    2. else looks through the server's :data:`BATCH_LOOKBACK` most recent batches
       (``batches.list``) for one with the same metadata that is not failed, expired,
       cancelled or cancelling, resumes it and records it: a run killed after
       ``batches.create`` but before its state file was written pays for one batch only
       (a server without ``GET /v1/batches``, HTTP 404, skips this step with a warning);
    3. else submits anew.

    Args:
        model, base_url, api_key_env, max_retries, timeout_s: as for :class:`OpenAIChatBackend`.
        state_dir: folder of the state and input files (created if missing).
        poll_interval_s: seconds between status polls.
        max_wait_s: give up polling after this many seconds (None: wait for the batch's own
            24 h window); a re-run resumes the batch.

    Raises (from :meth:`complete`):
        DataError: the state file is not valid JSON with a ``batch_id`` (the message names it
            and says it can be deleted: the batch is then found by its metadata).
        BackendError: an API call failed (HTTP status and the server's message); the batch
            ended failed/expired/cancelled (with its errors); ``max_wait_s`` passed; or some
            requests have no answer (up to 5 keys with their errors, and the count), raised
            after every answer that did come back was yielded.
    """

    name = "openai_batch"
    partial = False

    def __init__(
        self,
        model: str,
        base_url: str | None,
        api_key_env: str = "OPENAI_API_KEY",
        *,
        state_dir: str | os.PathLike[str],
        poll_interval_s: float = 30.0,
        max_wait_s: float | None = None,
        max_retries: int = 5,
        timeout_s: float = 120.0,
    ) -> None:
        self.model, self.base_url = model, base_url
        self.state_dir = Path(state_dir)
        self.poll_interval_s, self.max_wait_s = poll_interval_s, max_wait_s
        #: Sleeps between polls (seconds); replaceable in tests.
        self.sleep: Callable[[float], None] = time.sleep
        self._client = _client(base_url, api_key_env, max_retries, timeout_s)
        self.cache_identity = {"backend": self.name, "base_url": str(self._client.base_url)}

    def __repr__(self) -> str:
        return f"OpenAIBatchBackend(model={self.model!r}, base_url={self.base_url!r})"

    def _call(self, what: str, fn: Callable[[], Any]) -> Any:
        """``fn()`` with API errors turned into :class:`BackendError` about ``what``."""
        try:
            return fn()
        except openai.APIError as err:
            raise _api_error(what, err) from err

    def _record(self, state_path: Path, batch: Any, digests: Sequence[str]) -> None:
        """Write the state file of ``batch`` (atomic), so that a re-run resumes it."""
        state = {
            "batch_id": batch.id,
            "input_file_id": batch.input_file_id,
            "digests": sorted(digests),
            "base_url": self.cache_identity["base_url"],
            "metadata": dict(batch.metadata or {}),
            "created": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        }
        write_json(state_path, state)

    def _submit(self, groups: Mapping[str, Sequence[ChatRequest]], state_path: Path, metadata: dict[str, str]) -> Any:
        """Upload the input file, create the batch with ``metadata`` and record it in ``state_path``."""
        input_path = state_path.with_suffix(".input.jsonl")
        with atomic_path(input_path) as tmp, tmp.open("w", encoding="utf-8") as fh:
            for digest, same in groups.items():
                line = {"custom_id": digest, "method": "POST", "url": BATCH_ENDPOINT, "body": same[0].payload()}
                fh.write(json.dumps(line, ensure_ascii=False) + "\n")
        uploaded = self._call(
            "uploading the batch input file", lambda: self._client.files.create(file=input_path, purpose="batch")
        )
        batch = self._call(
            "creating the batch",
            lambda: self._client.batches.create(
                input_file_id=uploaded.id, endpoint=BATCH_ENDPOINT, completion_window="24h", metadata=metadata
            ),
        )
        self._record(state_path, batch, list(groups))
        log.info("submitted batch %s with %d request(s); state in %s", batch.id, len(groups), state_path)
        return batch

    def _recorded(self, state_path: Path) -> Any:
        """The live batch recorded in ``state_path``, or None (no file, another server, a dead batch).

        Raises:
            DataError: the file is not JSON with a ``batch_id``.
        """
        if not state_path.exists():
            return None
        try:
            state = read_json(state_path)
            batch_id = state["batch_id"]
        except (DataError, KeyError, TypeError) as err:
            raise DataError(
                f"corrupt batch state file {state_path} ({type(err).__name__}: {err}); delete it: the next run "
                f"finds its batch by metadata among the server's recent batches"
            ) from None
        base_url = self.cache_identity["base_url"]
        if state.get("base_url") not in (None, base_url):
            log.warning(
                "batch %s in %s was sent to %s, not %s; ignored", batch_id, state_path, state["base_url"], base_url
            )
            return None
        batch = self._call(
            f"retrieving batch {batch_id} recorded in {state_path}", lambda: self._client.batches.retrieve(batch_id)
        )
        if batch.status in DEAD_BATCH_STATES:
            log.warning("batch %s recorded in %s is %s; submitting anew", batch_id, state_path, batch.status)
            return None
        log.info("resuming batch %s recorded in %s", batch_id, state_path)
        return batch

    def _find(self, metadata: Mapping[str, str]) -> Any:
        """The most recent live batch on the server whose metadata includes ``metadata``, or None.

        Looks through the :data:`BATCH_LOOKBACK` most recent batches (newest first); skips
        failed, expired, cancelled and cancelling ones.  A server without the listing
        endpoint (HTTP 404) finds none (warning).
        """
        try:  # the client pages on by itself: stop after BATCH_LOOKBACK batches
            batches = list(itertools.islice(self._client.batches.list(limit=BATCH_LOOKBACK), BATCH_LOOKBACK))
        except openai.NotFoundError:
            log.warning("the server cannot list batches (HTTP 404): a batch submitted by a killed run is not found")
            return None
        except openai.APIError as err:
            raise _api_error("listing recent batches", err) from err
        for batch in batches:
            ours = batch.metadata or {}
            if all(ours.get(key) == value for key, value in metadata.items()) and batch.endpoint == BATCH_ENDPOINT:
                if batch.status in (*DEAD_BATCH_STATES, "cancelling"):
                    continue
                log.info("found batch %s (%s) of this request set on the server; resuming it", batch.id, batch.status)
                return batch
        return None

    def _wait(self, batch: Any, state_path: Path) -> Any:
        """Poll until ``batch`` is completed; :class:`BackendError` if it dies or ``max_wait_s`` passes."""
        start = time.monotonic()
        while True:
            counts = batch.request_counts.to_dict() if batch.request_counts else {}
            log.info("batch %s: %s %s", batch.id, batch.status, counts)
            if batch.status == "completed":
                return batch
            if batch.status in DEAD_BATCH_STATES:
                errors = [e.to_dict() for e in (batch.errors.data or [])] if batch.errors else []
                raise BackendError(f"batch {batch.id} {batch.status}: {json.dumps(errors)[:1000]}")
            if self.max_wait_s is not None and time.monotonic() - start >= self.max_wait_s:
                raise BackendError(
                    f"batch {batch.id} still {batch.status} after {self.max_wait_s} s; "
                    f"re-running with the same requests resumes it (state {state_path})"
                )
            self.sleep(self.poll_interval_s)
            batch_id = batch.id
            batch = self._call(f"polling batch {batch_id}", lambda: self._client.batches.retrieve(batch_id))

    def _lines(self, file_id: str | None) -> list[dict[str, Any]]:
        """The JSON lines of file ``file_id`` ([] for None)."""
        if not file_id:
            return []
        text = self._call(f"downloading file {file_id}", lambda: self._client.files.content(file_id).text)
        return [json.loads(line) for line in text.splitlines() if line.strip()]

    def complete(self, requests: Sequence[ChatRequest]) -> Iterator[tuple[ChatRequest, Completion]]:
        """Submit (or resume) the batch of ``requests``, wait for it, yield every answer.

        Requests with the same digest share one batch line and one answer.
        """
        if not requests:
            return
        groups: dict[str, list[ChatRequest]] = {}
        for request in requests:
            groups.setdefault(request.digest(), []).append(request)
        set_id = hashlib.sha256("\n".join(sorted(groups)).encode()).hexdigest()
        self.state_dir.mkdir(parents=True, exist_ok=True)
        state_path = self.state_dir / f"{set_id}.json"

        stages = ",".join(sorted({r.stage for r in requests}))[:512]
        metadata = {BATCH_SET_KEY: set_id, BATCH_STAGE_KEY: stages}

        batch = self._recorded(state_path)
        if batch is None:
            batch = self._find(metadata)
            if batch is not None:
                self._record(state_path, batch, list(groups))
        if batch is None:
            batch = self._submit(groups, state_path, metadata)
        batch = self._wait(batch, state_path)

        failures: dict[str, str] = {}
        done: set[str] = set()
        for line in self._lines(batch.output_file_id) + self._lines(batch.error_file_id):
            digest = line.get("custom_id")
            if digest not in groups or digest in done:
                continue
            response = line.get("response") or {}
            body = response.get("body") or {}
            error = line.get("error")
            if error or response.get("status_code") != 200:
                detail = error.get("message") if isinstance(error, Mapping) else None
                if detail is None and isinstance(body.get("error"), Mapping):
                    detail = body["error"].get("message")
                failures[digest] = f"HTTP {response.get('status_code')}: {detail or json.dumps(error or body)[:300]}"
                continue
            try:
                completion = _parse(body, groups[digest][0].model, self.name)
            except ValueError as err:
                failures[digest] = str(err)
                continue
            done.add(digest)
            failures.pop(digest, None)
            for request in groups[digest]:
                yield request, completion
        for digest in groups.keys() - done:
            failures.setdefault(digest, "missing from the batch output")
        if failures:
            listed = [f"{groups[d][0].key}: {failures[d]}" for d in sorted(failures, key=lambda d: groups[d][0].key)]
            failed = sum(len(groups[d]) for d in failures)
            raise BackendError(
                f"{failed} of {len(requests)} request(s) of batch {batch.id} failed: "
                + "; ".join(listed[:5])
                + (" ..." if len(listed) > 5 else "")
            )

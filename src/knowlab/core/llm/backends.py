"""Backends of the generation pipeline besides the OpenAI-compatible ones, and the config switch.

* :class:`TransformersBackend`: any local causal LM folder (the packaged SmolLM2 by
  default), the model's chat template, batched ``generate`` with per-prompt seeded sampling
  (:func:`knowlab.core.llm.local.generate_texts`).  Its cache identity is the digest of the
  folder's files (:func:`model_folder_sha256`) and the dtype the model runs in.
* :class:`ReplayBackend`: serves recorded responses of the authors' pipeline
  (OpenAI Batch API result files) by request key, to run the whole chain on their sample.
  Its cache identity is the digest of the recorded files.
* :mod:`knowlab.core.llm.openai_backend`: chat completions against any OpenAI-compatible
  server (OpenAI, vLLM, llama.cpp server, Ollama), and the OpenAI Batch API.

:func:`make_backend` builds the one named in config ``fiction.generate.backend``.
"""

from __future__ import annotations

import logging
import os
import re
from collections import defaultdict
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from knowlab.core.io import DataError, files_sha256, iter_jsonl_numbered
from knowlab.core.llm.local import count_tokens, generate_texts, render_chat
from knowlab.core.llm.openai_backend import OpenAIBatchBackend, OpenAIChatBackend
from knowlab.core.llm.requests import Backend, BackendError, ChatRequest, Completion
from knowlab.core.models import load_model

log = logging.getLogger(__name__)

BACKENDS = ("openai", "openai_batch", "transformers", "replay")


def model_folder_sha256(path: str | os.PathLike) -> str:
    """The identity of a local model folder: sha256 (hex) of the lines ``<name>\\t<sha256>\\n``
    of every regular file directly in ``path`` (config, weights, tokenizer, chat template, ...),
    sorted by name; subfolders (a trainer's optimizer state, caches) are not read.

    Reads every byte of those files once (about a second per GB): the transformers backend
    computes it once per job, beside loading the same weights.

    Raises:
        FileNotFoundError: ``path`` is not a folder.
    """
    path = Path(path)
    if not path.is_dir():
        raise FileNotFoundError(f"model folder not found: {path}")
    return files_sha256(p for p in sorted(path.iterdir()) if p.is_file())


class TransformersBackend:
    """Generate locally with a transformers causal LM.

    Requests are grouped by sampling parameters and run in batches of ``batch_size``;
    ``temperature`` 0 (or absent) is greedy decoding, otherwise sampling with the request's
    ``temperature``/``top_k``/``top_p`` and a generator seeded from (``seed``, prompt) per request.
    The system and user messages are rendered with the tokenizer's chat template
    (:func:`knowlab.core.llm.local.render_chat`).

    ``cache_identity`` (the request cache's backend part): ``{"backend": "transformers",
    "model_sha256": model_folder_sha256(path), "dtype": str(model.dtype)}``, so a changed or
    swapped model folder, or another dtype (float32 on CPU, bfloat16 on GPU), misses the cache.

    Raises:
        CheckpointError: (construction) the folder lacks a file :func:`knowlab.core.models.load_model` needs.

    Raises (from :meth:`complete`):
        BackendError: a prompt longer than the model's context minus ``max_tokens``, or an
            empty response ("response without content"), naming the request key.
    """

    name = "transformers"
    partial = False

    def __init__(self, path: str | os.PathLike, batch_size: int = 4) -> None:
        self.path = Path(path)
        self.model, self.tokenizer = load_model(self.path)
        self.batch_size = batch_size
        self.context = int(getattr(self.model.config, "max_position_embeddings", 2048))
        self.cache_identity = {
            "backend": self.name,
            "model_sha256": model_folder_sha256(self.path),
            "dtype": str(getattr(self.model, "dtype", None)),
        }

    def __repr__(self) -> str:
        return f"TransformersBackend({str(self.path)!r})"

    def _render(self, request: ChatRequest) -> str:
        system = "\n\n".join(m["content"] for m in request.messages if m["role"] == "system")
        user = "\n\n".join(m["content"] for m in request.messages if m["role"] == "user")
        return render_chat(self.tokenizer, user, system or None)

    def complete(self, requests: Sequence[ChatRequest]) -> Iterator[tuple[ChatRequest, Completion]]:
        groups: dict[tuple, list[ChatRequest]] = defaultdict(list)
        for request in requests:
            groups[tuple(sorted(request.params.items()))].append(request)
        for params, group in groups.items():
            params = dict(params)
            max_tokens = int(params.get("max_tokens", 256))
            temperature = float(params.get("temperature") or 0.0)
            texts = [self._render(r) for r in group]
            for request, text in zip(group, texts):
                n = count_tokens(self.tokenizer, text)
                if n + max_tokens > self.context:
                    raise BackendError(
                        f"request {request.key!r}: prompt of {n} tokens + max_tokens {max_tokens} "
                        f"exceeds the model's context of {self.context} tokens"
                    )
            for start in range(0, len(group), self.batch_size):
                batch = group[start : start + self.batch_size]
                outputs = generate_texts(
                    self.model,
                    self.tokenizer,
                    texts[start : start + self.batch_size],
                    max_new_tokens=max_tokens,
                    max_input_tokens=self.context,
                    do_sample=temperature > 0,
                    temperature=temperature or 1.0,
                    top_k=params.get("top_k"),
                    top_p=params.get("top_p"),
                    seed=int(params.get("seed", 0)),
                    batch_size=self.batch_size,
                    desc=batch[0].stage,
                )
                for request, output in zip(batch, outputs):
                    if not output["text"]:
                        raise BackendError(
                            f"request {request.key!r}: response without content "
                            f"({output['n_new_tokens']} token(s), all special)"
                        )
                    yield (
                        request,
                        Completion(
                            content=output["text"],
                            model=self.path.name,
                            finish_reason="stop" if output["finished"] else "length",
                            usage={
                                "prompt_tokens": output["n_input_tokens"],
                                "completion_tokens": output["n_new_tokens"],
                            },
                            backend=self.name,
                        ),
                    )


#: Batch result file -> stage, in the authors' ``batch_results/`` layout.
REPLAY_FILES = {
    "seeds": "seeds",
    "fictsheets": "fictsheets",
    "fictions": "fictions",
    "fict_qa": "fict_qa",
    "blind_answer_attempts": "attempts",
    "informed_answer_attempts": "attempts",
    "blind_grades": "grades",
    "informed_grades": "grades",
}


def _replay_key(stage: str, custom_id: str) -> str:
    """The request key of a recorded custom_id: seeds and fictsheets are numbered by prompt
    line (``batch_prompt_files_nov8/create_seeds-0`` -> ``event_000``); the others are keys already."""
    if stage in ("seeds", "fictsheets"):
        match = re.search(r"-(\d+)$", custom_id)
        if match:
            return f"event_{int(match.group(1)):03d}"
    return custom_id


class ReplayBackend:
    """Serve recorded completions by (stage, request key); the prompt is not compared.

    Reads ``<folder>/batch_results/<file>.jsonl`` for the files of :data:`REPLAY_FILES`
    that exist (OpenAI Batch API result lines: ``custom_id``, ``response.status_code``,
    ``response.body.choices[0].message.content``, ``response.body.model``).  A request whose
    key was not recorded gets no answer (``partial``): the recorded sample may be a subset.
    ``cache_identity``: ``{"backend": "replay", "recording_sha256": <sha256 of the lines
    "<file name>\\t<sha256 of the file>" of the files read>}``.

    Raises:
        FileNotFoundError: ``batch_results/`` does not exist or holds none of the files.
        DataError: a malformed line, a failed or empty recorded response, or a key recorded
            twice for one stage (file and line named).
    """

    name = "replay"
    partial = True

    def __init__(self, folder: str | os.PathLike) -> None:
        self.folder = Path(folder) / "batch_results"
        if not self.folder.is_dir():
            raise FileNotFoundError(f"replay folder has no batch_results/: {self.folder}")
        self.recorded: dict[tuple[str, str], tuple[Completion, str]] = {}
        files = []
        for stem, stage in REPLAY_FILES.items():
            path = self.folder / f"{stem}.jsonl"
            if path.is_file():
                self._read(path, stage)
                files.append(path)
        if not self.recorded:
            raise FileNotFoundError(f"no recorded responses in {self.folder} (expected {sorted(REPLAY_FILES)})")
        self.cache_identity = {"backend": self.name, "recording_sha256": files_sha256(files)}

    def _read(self, path: Path, stage: str) -> None:
        for lineno, record in iter_jsonl_numbered(path):
            where = f"{path}:{lineno}"
            try:
                body = record["response"]["body"]
                content = body["choices"][0]["message"]["content"]
            except (KeyError, IndexError, TypeError):
                raise DataError(f"{where}: no response.body.choices[0].message.content") from None
            if record.get("error") or record["response"].get("status_code") != 200:
                raise DataError(f"{where}: recorded request failed: {record.get('error')}")
            if not isinstance(content, str) or not content.strip():
                raise DataError(f"{where}: recorded response without content")
            key = (stage, _replay_key(stage, str(record.get("custom_id", ""))))
            if key in self.recorded:
                raise DataError(
                    f"{where}: {key[1]!r} recorded twice for stage {stage} (first at {self.recorded[key][1]})"
                )
            usage = {k: v for k, v in (body.get("usage") or {}).items() if isinstance(v, int)}
            completion = Completion(
                content=content,
                model=str(body.get("model", "")),
                finish_reason=body["choices"][0].get("finish_reason"),
                usage=usage,
                backend=self.name,
            )
            self.recorded[key] = (completion, where)

    def __repr__(self) -> str:
        return f"ReplayBackend({str(self.folder)!r}, {len(self.recorded)} responses)"

    def complete(self, requests: Sequence[ChatRequest]) -> Iterator[tuple[ChatRequest, Completion]]:
        for request in requests:
            hit = self.recorded.get((request.stage, request.key))
            if hit is not None:
                yield request, hit[0]


def make_backend(
    cfg: Mapping[str, Any], basedir: str | os.PathLike, default_model_path: str | None, state_dir: str | os.PathLike
) -> Backend:
    """The backend named by ``cfg["backend"]`` (config ``fiction.generate``).

    ``default_model_path`` is the project's base model folder (as given: Snakemake passes it
    relative to the working directory), used by the transformers backend when
    ``cfg["transformers"]["path"]`` is null; configured paths (``transformers.path``,
    ``replay.path``) are taken from ``basedir`` when relative, like ``fiction.release.path``.
    ``state_dir`` keeps Batch API state.

    Raises:
        ValueError: an unknown backend, or replay without a path.
    """
    kind = cfg["backend"]
    if kind == "transformers":
        path = Path(basedir) / cfg["transformers"]["path"] if cfg["transformers"].get("path") else default_model_path
        if path is None:
            raise ValueError("fiction.generate.backend transformers needs transformers.path or the base model")
        return TransformersBackend(path, batch_size=cfg["transformers"]["batch_size"])
    if kind == "replay":
        if not cfg["replay"].get("path"):
            raise ValueError("fiction.generate.replay.path must name a folder with batch_results/ for backend: replay")
        return ReplayBackend(Path(basedir) / cfg["replay"]["path"])
    if kind in ("openai", "openai_batch"):
        server = cfg["openai"]
        common = {
            "model": cfg["model"],
            "base_url": server.get("base_url"),
            "api_key_env": server["api_key_env"],
            "max_retries": server["max_retries"],
            "timeout_s": server["timeout_s"],
        }
        if kind == "openai":
            return OpenAIChatBackend(**common, concurrency=server["concurrency"])
        return OpenAIBatchBackend(**common, state_dir=state_dir, poll_interval_s=server["poll_interval_s"])
    raise ValueError(f"fiction.generate.backend must be one of {BACKENDS}, got {kind!r}")

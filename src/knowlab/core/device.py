"""Device and precision: one policy for every job that runs a model (config ``compute``).

Keys (config ``compute``, checked by ``config/schema.yaml``):

- ``device``: ``auto`` (the GPU when torch sees one, this process's ``LOCAL_RANK`` GPU
  under a launcher; else the CPU), ``cpu``, ``cuda`` or ``cuda:N``.  ``cuda`` on a machine
  without one fails at once with :class:`DeviceUnavailable`, naming the key.
- ``dtype``: ``auto`` (bfloat16 on a GPU that supports it, else float32), ``float32``,
  ``bfloat16`` or ``float16``.
- ``max_batch_tokens``: at most this many tokens (padded width x rows) in one forward pass
  of the scoring engine and of local generation (prompt + new tokens), so batches of long
  documents shrink instead of exhausting memory; ``null``: batches are cut by their
  sequence count alone.

A job sets the policy once (:func:`use_compute`, called by
:func:`knowlab.core.provenance.rule_step` from the rule's ``compute`` param); models then
load onto its device in its dtype (:func:`knowlab.core.models.load_model`) and every batch
reaches the model through :func:`place`, the one function that moves models and tensors.
The CPU default (``auto`` on a machine without a GPU) is float32 on the CPU: results are
exactly those of a plain ``from_pretrained`` load.
"""

from __future__ import annotations

import logging
import os
import socket
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from knowlab.core.settings import StepSettings

log = logging.getLogger(__name__)

DEVICES = ("auto", "cpu", "cuda")
DTYPES = ("auto", "float32", "bfloat16", "float16")


class DeviceUnavailable(RuntimeError):
    """The configured ``compute.device`` does not exist on this machine; the message names the key."""


@dataclass(frozen=True)
class Compute:
    """A resolved policy: torch device string (``cpu``, ``cuda:0``), dtype name, token budget per batch."""

    device: str = "cpu"
    dtype: str = "float32"
    max_batch_tokens: int | None = None

    @property
    def torch_dtype(self):
        """The ``torch.dtype`` of :attr:`dtype`."""
        # deferred: torch loads only in jobs that run a model (seconds and GBs)
        import torch

        return getattr(torch, self.dtype)


_current = Compute()


# The config keys that only say how many rows share a forward pass.  In float32 the scoring engine's
# packed batches give the scores of one request at a time (knowlab.core.scoring.packing_is_exact),
# so they cannot change a result and are in no param; in a lower precision they can move a score
# past a tie, and :class:`ComputeSettings` carries them.
BATCH_KEYS = (
    "compute.max_batch_tokens",
    "evaluate.batch_size",
    "mcq.ranker.batch_size",
    "sort.batch_size",
)


def _lookup(config: Mapping[str, Any], key: str) -> Any:
    """``config["a"]["b"]`` for ``key`` ``a.b``; None where a level is absent."""
    value: Any = config
    for part in key.split("."):
        if not isinstance(value, Mapping) or part not in value:
            return None
        value = value[part]
    return value


@dataclass(frozen=True)
class ComputeSettings(StepSettings):
    """What of the config's compute policy can change a result: the rule param ``compute`` of every
    rule that runs a model.  ``compute.max_batch_tokens`` and the batch sizes (:data:`BATCH_KEYS`)
    are in it only when ``dtype`` is not ``float32`` (config/README.md, "What re-runs when a key
    changes"); a job reads ``max_batch_tokens`` from its config when it starts
    (:func:`knowlab.core.provenance.rule_step`)."""

    device: str = "auto"
    """``auto``, ``cpu``, ``cuda`` or ``cuda:N`` (see the module docstring)."""
    dtype: str = "auto"
    """``auto``, ``float32``, ``bfloat16`` or ``float16`` (see the module docstring)."""
    batching: dict[str, Any] | None = None
    """``dtype`` other than ``float32`` only: the value of every key of :data:`BATCH_KEYS`."""

    def __post_init__(self) -> None:
        kind = self.device.split(":")[0]
        if kind not in DEVICES or (":" in self.device and kind != "cuda"):
            raise ValueError(f"compute.device must be auto, cpu, cuda or cuda:N, got {self.device!r}")
        if self.dtype not in DTYPES:
            raise ValueError(f"compute.dtype must be one of {', '.join(DTYPES)}, got {self.dtype!r}")

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> "ComputeSettings":
        compute = config.get("compute") or {}
        dtype = str(compute.get("dtype") or "auto")
        batching = None if dtype == "float32" else {key: _lookup(config, key) for key in BATCH_KEYS}
        return cls(device=str(compute.get("device") or "auto"), dtype=dtype, batching=batching)


def resolve_compute(cfg: Mapping[str, Any] | None) -> Compute:
    """The :class:`Compute` of config block ``cfg`` (``compute``) on this machine.

    Raises:
        DeviceUnavailable: ``device`` names a GPU that torch does not see (``cuda`` without
            CUDA, or ``cuda:N`` beyond the GPU count).
        ValueError: an unknown ``device`` or ``dtype``, or ``bfloat16`` on a GPU without it.
    """
    # deferred: torch loads only in jobs that run a model (seconds and GBs)
    import torch

    cfg = dict(cfg or {})
    requested = str(cfg.get("device") or "auto")
    kind = requested.split(":")[0]
    if kind not in DEVICES or (":" in requested and kind != "cuda"):
        raise ValueError(f"compute.device must be auto, cpu, cuda or cuda:N, got {requested!r}")
    gpus = torch.cuda.device_count() if torch.cuda.is_available() else 0
    if kind == "cuda" and not gpus:
        raise DeviceUnavailable(
            f"compute.device is {requested!r} but torch sees no CUDA GPU on {socket.gethostname()} "
            f"(torch {torch.__version__}, CUDA build: {torch.version.cuda or 'none'}); "
            "run on a GPU node, or set compute.device: auto (GPU when present, else CPU) or cpu"
        )
    if kind == "auto":
        device = f"cuda:{int(os.environ.get('LOCAL_RANK', 0)) % gpus}" if gpus else "cpu"
    elif kind == "cuda":
        index = int(requested.split(":")[1]) if ":" in requested else int(os.environ.get("LOCAL_RANK", 0)) % gpus
        if index >= gpus:
            raise DeviceUnavailable(f"compute.device is {requested!r} but torch sees {gpus} GPU(s)")
        device = f"cuda:{index}"
    else:
        device = "cpu"
    dtype = str(cfg.get("dtype") or "auto")
    if dtype not in DTYPES:
        raise ValueError(f"compute.dtype must be one of {', '.join(DTYPES)}, got {dtype!r}")
    on_gpu = device.startswith("cuda")
    if dtype == "auto":
        dtype = "bfloat16" if on_gpu and torch.cuda.is_bf16_supported() else "float32"
    elif dtype == "bfloat16" and on_gpu and not torch.cuda.is_bf16_supported():
        raise ValueError(f"compute.dtype bfloat16 is not supported by {torch.cuda.get_device_name(device)}")
    budget = cfg.get("max_batch_tokens")
    return Compute(device, dtype, int(budget) if budget else None)


def use_compute(cfg: Mapping[str, Any] | Compute | None) -> Compute:
    """Set this process's policy (a config block or a resolved :class:`Compute`); return it."""
    global _current
    _current = cfg if isinstance(cfg, Compute) else resolve_compute(cfg)
    log.info("compute: %s, %s, at most %s tokens per batch", _current.device, _current.dtype, _current.max_batch_tokens)
    return _current


def current_compute() -> Compute:
    """This process's policy (:func:`use_compute`; float32 on the CPU until set)."""
    return _current


def place(obj, device=None):
    """Move a model or tensor to ``device``; return it (a tensor already there is not copied).

    The one function by which models and batches reach their device.  ``device``: a string,
    a ``torch.device``, or a model (the device of its parameters, so a batch follows the model
    it is fed to); default: this process's policy (:func:`current_compute`).
    """
    if device is None:
        device = _current.device
    elif hasattr(device, "parameters"):
        device = next(device.parameters()).device
    return obj.to(device)


def batch_limit(widths, batch_size: int, max_batch_tokens: int | None = None) -> list[int]:
    """Cut rows of padded widths ``widths`` (sorted, widest first) into batches; return each batch's row count.

    A batch holds at most ``batch_size`` rows and, when ``max_batch_tokens`` is set (default:
    the policy's), at most that many tokens counted as ``rows x widest row``; a row wider than
    the budget runs alone.  With no token budget every batch but the last has ``batch_size`` rows.
    """
    budget = _current.max_batch_tokens if max_batch_tokens is None else max_batch_tokens
    sizes, start, widths = [], 0, list(widths)
    while start < len(widths):
        n = min(batch_size, len(widths) - start)
        if budget:
            n = max(1, min(n, budget // max(widths[start], 1)))
        sizes.append(n)
        start += n
    return sizes


def cut_batches(order, widths, batch_size: int, max_batch_tokens: int | None = None) -> list[list]:
    """``order`` (widest first, with those padded ``widths``) cut into batches by :func:`batch_limit`."""
    batches, start = [], 0
    for n in batch_limit(widths, batch_size, max_batch_tokens):
        batches.append(list(order[start : start + n]))
        start += n
    return batches


@contextmanager
def one_cpu_thread(device=None) -> Iterator[None]:
    """torch's CPU kernels on one intra-op thread inside the block, the job's count restored after.

    A float32 matrix product split over threads sums in an order that depends on the thread
    count, so an encoder's outputs can move in the last bits between 1 and 2 threads per job
    (measured: MiniLM cosines up to 7.5e-8 apart on an Intel Xeon with AMX, issue 28).  The
    sentence encoders (:func:`knowlab.core.retrieval.embed`, the grounding cross-encoder) run
    inside this block, so what they write is the same at any ``threads`` (``make verify``); they
    are small next to the language models, which keep the job's threads.  ``device`` (a torch
    device or its name; None: the CPU): a non-CPU device leaves the threads alone.
    """
    # deferred: torch loads only in jobs that run a model (seconds and GBs)
    import torch

    if device is not None and torch.device(device).type != "cpu":
        yield
        return
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)

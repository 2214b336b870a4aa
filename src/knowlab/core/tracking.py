"""Live training curves: every optimizer step's record, as it is made, to TensorBoard or Weights & Biases.

:func:`knowlab.core.train.train_segment` hands each step's record (the row it also
appends to the run's ``train_log``: ``run, step, loss, lr, tokens, fiction_in_step`` and
the sampler's samples seen and epochs per source) to the tracker :func:`open_tracker`
returns.  Every number of the record becomes the scalar ``train/<column>`` at global
step ``step`` (optimizer steps, counted from the base model at 0), so the curves and
``train_log.parquet`` are the same records.

Backends (config ``tracking.backend``):

- ``tensorboard`` (the default, no account, no network): event files under
  ``<dir>/<name>/``, flushed every step; ``tensorboard --logdir <dir>`` shows them while
  the run trains.  Each checkpoint interval of a run is its own job and writes its own
  event file into the same folder with ``purge_step`` at its first step, so a re-run
  interval (a killed job, a retrained run) replaces the steps it repeats instead of
  drawing them twice.
- ``wandb``: one W&B run per training run (id: the name and a digest of its settings,
  resumed by every interval), in ``mode`` ``offline`` (the default: written under
  ``<dir>/wandb/``, uploaded later with ``wandb sync``) or ``online``.
- ``none``: no tracking; the training log is written all the same.

The tracker lives on rank 0 only; the records are the same on every rank.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Protocol

log = logging.getLogger(__name__)

BACKENDS = ("tensorboard", "wandb", "none")


class Tracker(Protocol):
    def log(self, record: Mapping[str, Any]) -> None:
        """Log one step's record (its ``step`` is the x-axis; its other numbers the scalars)."""

    def close(self) -> None:
        """Flush and release the backend."""


def scalars(record: Mapping[str, Any]) -> dict[str, float]:
    """The record's numbers but ``step`` as ``{"train/<column>": value}`` (strings such as ``run`` dropped)."""
    return {
        f"train/{key}": float(value)
        for key, value in record.items()
        if key != "step" and isinstance(value, int | float) and not isinstance(value, bool)
    }


class NoTracker:
    """``backend: none``."""

    def log(self, record: Mapping[str, Any]) -> None:
        pass

    def close(self) -> None:
        pass


class TensorBoardTracker:
    """Scalars to TensorBoard event files in ``log_dir`` (``torch.utils.tensorboard``)."""

    def __init__(self, log_dir: Path, first_step: int) -> None:
        # deferred: torch's TensorBoard writer (and the tensorboard package) load only in training jobs
        from torch.utils.tensorboard import SummaryWriter

        self.writer = SummaryWriter(log_dir=str(log_dir), purge_step=first_step)

    def log(self, record: Mapping[str, Any]) -> None:
        for tag, value in scalars(record).items():
            self.writer.add_scalar(tag, value, global_step=int(record["step"]))
        self.writer.flush()

    def close(self) -> None:
        self.writer.close()


class WandbTracker:
    """Scalars to one Weights & Biases run, resumed by every checkpoint interval."""

    def __init__(self, cfg: Mapping[str, Any], root: Path, name: str, settings: Mapping[str, Any]) -> None:
        """``root``: the tracking ``dir``; W&B writes its files under ``root/wandb``."""
        # deferred: wandb loads only where it is the configured backend
        import wandb

        digest = hashlib.sha256(json.dumps(settings, sort_keys=True, default=str).encode()).hexdigest()[:8]
        root.mkdir(parents=True, exist_ok=True)
        self.run = wandb.init(
            project=cfg["project"],
            entity=cfg.get("entity"),
            name=name,
            id=f"{re.sub(r'[^A-Za-z0-9_-]', '-', name)}-{digest}",
            group=name.split("/")[0],
            mode=cfg["mode"],
            dir=str(root),
            config=dict(settings),
            resume="allow",
        )

    def log(self, record: Mapping[str, Any]) -> None:
        self.run.log(scalars(record), step=int(record["step"]))

    def close(self) -> None:
        self.run.finish()


def open_tracker(cfg: Mapping[str, Any] | None, first_step: int, settings: Mapping[str, Any]) -> Tracker:
    """The tracker of one checkpoint interval of a training run.

    Args:
        cfg: the ``tracking`` config block (``backend``, ``dir``, ``wandb``) plus ``name``, the
            run's path under ``dir``, e.g. ``fictionalqa/doc`` (its TensorBoard folder, its W&B run
            name and, before the first ``/``, its W&B group); ``None`` for none.
        first_step: the first optimizer step this interval logs (the resumed step + 1).
        settings: the run's training settings (the W&B run's config, and its id's digest).

    Raises:
        ValueError: an unknown backend.
        ModuleNotFoundError: the backend's package (``tensorboard``, ``wandb``) is not installed.
    """
    backend = cfg["backend"] if cfg else "none"
    if backend not in BACKENDS:
        raise ValueError(f"tracking.backend must be one of {', '.join(BACKENDS)}, got {backend!r}")
    if backend == "none":
        return NoTracker()
    root, name = Path(cfg["dir"]), cfg["name"]
    if backend == "tensorboard":
        tracker: Tracker = TensorBoardTracker(root / name, first_step)
        log.info("training curves: TensorBoard, tensorboard --logdir %s", root)
    else:
        tracker = WandbTracker(cfg["wandb"], root, name, settings)
        log.info("training curves: W&B run %s (%s, files under %s)", name, cfg["wandb"]["mode"], root / "wandb")
    return tracker

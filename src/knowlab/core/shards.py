"""Resumable shards: a long job's work in numbered parquet parts that a killed run keeps.

A :class:`ShardStore` is a folder that is no rule's output (Snakemake would delete it with a
failed job's outputs): ``fingerprint.json`` names what the parts were computed from, and
``shard-<i>.parquet`` holds part ``i``, each written atomically.  A re-run with the same
fingerprint reads the finished parts and computes the rest; a different fingerprint (another
model, config or input) empties the folder first, so parts of two different computations are
never mixed.  The job removes the store (:meth:`ShardStore.remove`) once its own output is
written.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from knowlab.core.io import read_json, write_json, write_parquet

log = logging.getLogger(__name__)


def fingerprint(spec: Mapping[str, Any]) -> str:
    """sha256 (hex) of ``spec`` as sorted JSON: what a store's parts are computed from."""
    return hashlib.sha256(json.dumps(spec, sort_keys=True, default=str).encode("utf-8")).hexdigest()


def folder_stamp(path: str | os.PathLike) -> dict[str, list[int]]:
    """``{file name: [size, mtime_ns]}`` of the files in a folder: a cheap identity of a model folder.

    A model written anew (even with the same weights) gets a new stamp, so a store keyed by it
    recomputes rather than reuse parts of another model.
    """
    path = Path(path)
    return {p.name: [p.stat().st_size, p.stat().st_mtime_ns] for p in sorted(path.iterdir()) if p.is_file()}


class ShardStore:
    """Numbered parquet parts of one computation, kept across a killed run (see module docstring).

    Args:
        folder: where the parts live (created if missing).
        key: the computation's :func:`fingerprint`.
    """

    def __init__(self, folder: str | os.PathLike, key: str) -> None:
        self.folder = Path(folder)
        stamp = self.folder / "fingerprint.json"
        if self.folder.exists() and (not stamp.is_file() or read_json(stamp).get("key") != key):
            log.info("%s holds parts of another computation: starting afresh", self.folder)
            self.remove()
        self.folder.mkdir(parents=True, exist_ok=True)
        if not stamp.is_file():
            write_json(stamp, {"key": key})
        self.resumed = sorted(int(p.stem.removeprefix("shard-")) for p in self.folder.glob("shard-*.parquet"))
        if self.resumed:
            log.info("resuming from %d finished shard(s) in %s", len(self.resumed), self.folder)

    def _path(self, index: int) -> Path:
        return self.folder / f"shard-{index:06d}.parquet"

    def get(self, index: int) -> pd.DataFrame | None:
        """Part ``index`` if a run has finished it, else None."""
        path = self._path(index)
        return pd.read_parquet(path) if path.is_file() else None

    def put(self, index: int, table: pd.DataFrame) -> None:
        """Write part ``index`` atomically (a kill leaves it whole or absent)."""
        write_parquet(self._path(index), table)

    def remove(self) -> None:
        """Delete the parts and the fingerprint, and the folder if nothing else is in it."""
        for path in [*self.folder.glob("shard-*.parquet"), self.folder / "fingerprint.json"]:
            path.unlink(missing_ok=True)
        with contextlib.suppress(OSError):
            self.folder.rmdir()

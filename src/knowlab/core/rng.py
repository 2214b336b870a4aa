"""Deterministic randomness keyed by strings (Python's ``hash()`` is salted per process: never used)."""

from __future__ import annotations

import hashlib
import random


def keyed_rng(seed: int, *keys: object) -> random.Random:
    """A ``random.Random`` seeded from ``seed`` and ``keys`` via sha256: same inputs, same stream."""
    material = "\x1f".join([str(seed), *map(str, keys)]).encode("utf-8")
    return random.Random(int.from_bytes(hashlib.sha256(material).digest()[:8], "big"))

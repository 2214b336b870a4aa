"""Fixtures of the fiction-generation tests: the authors' recorded pipeline sample."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

SAMPLE = Path(__file__).resolve().parents[3] / "shared" / "data" / "fictionalqa_pipeline_sample"


@pytest.fixture(scope="session")
def sample() -> Path:
    """The authors' pipeline sample folder (``batch_results/``, ``intermediate_results/``); skips without it."""
    if not (SAMPLE / "batch_results").is_dir():
        pytest.skip(f"authors' pipeline sample not available at {SAMPLE}")
    return SAMPLE


@pytest.fixture(scope="session")
def recorded(sample):
    """``recorded(name)`` -> ``{custom_id: content}`` of one of the authors' batch result files."""

    def read(name: str) -> dict[str, str]:
        out = {}
        for line in (sample / "batch_results" / f"{name}.jsonl").read_text().splitlines():
            record = json.loads(line)
            out[record["custom_id"]] = record["response"]["body"]["choices"][0]["message"]["content"]
        return out

    return read

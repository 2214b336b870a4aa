"""Backends of knowlab.core.llm.backends: replay of recorded responses."""

import json

import pytest

from knowlab.core.io import DataError
from knowlab.core.llm.backends import ReplayBackend


def test_replay_rejects_a_failed_recording(tmp_path):
    (tmp_path / "batch_results").mkdir()
    line = {"custom_id": "event_000_style_news_num_000", "response": {"status_code": 500, "body": {}}, "error": None}
    (tmp_path / "batch_results" / "fictions.jsonl").write_text(json.dumps(line) + "\n")
    with pytest.raises(DataError, match="fictions.jsonl:1"):
        ReplayBackend(tmp_path)
    with pytest.raises(FileNotFoundError, match="batch_results"):
        ReplayBackend(tmp_path / "nowhere")

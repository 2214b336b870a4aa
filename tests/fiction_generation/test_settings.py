"""The fiction generation steps' settings (knowlab.fiction_generation.settings): built from the shipped
configs, carried as builtins through a rule's params, checked with messages that name the config key."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from knowlab.config import load_config
from knowlab.fiction_generation.settings import (
    BACKENDS,
    FictionGenerationAnnotateSettings,
    FictionGenerationFictionsSettings,
    FictionGenerationSeedsSettings,
    stage_settings,
)

ROOT = Path(__file__).resolve().parents[2]


def test_each_stage_carries_its_own_keys(shipped_config):
    config = shipped_config
    generate = config["fiction"]["generate"]
    settings = stage_settings(config)
    assert list(settings) == ["seeds", "fictsheets", "fictions", "fict_qa", "attempts", "grades"]
    for stage, record in settings.items():
        assert record.STAGE == stage and record.model == generate["model"]
        assert record.temperature == generate["temperature"][stage]
        assert record.max_tokens == generate["max_tokens"][stage]
    assert settings["seeds"].years == tuple(generate["years"]) and settings["seeds"].n_seeds == generate["n_seeds"]
    assert list(settings["fictions"].styles.items()) == list(generate["styles"].items())  # in config order
    assert "styles" not in settings["seeds"].param() and "n_seeds" not in settings["fictions"].param()
    # only the configured backend's own keys
    local = generate["backend"] == "transformers"
    assert (settings["seeds"].transformers_batch_size is not None) == local
    assert (settings["seeds"].openai_base_url is None) or generate["backend"].startswith("openai")


def test_backends_are_the_cores():
    from knowlab.core.llm.backends import BACKENDS as CORE

    assert BACKENDS == CORE


def test_checks_name_the_config_key():
    seeds = FictionGenerationSeedsSettings.from_config(load_config())
    with pytest.raises(ValueError, match=r"fiction\.generate\.n_seeds must be at least 1, got 0"):
        dataclasses.replace(seeds, n_seeds=0)
    with pytest.raises(ValueError, match=r"fiction\.generate\.max_tokens\.seeds must be at least 1, got 0"):
        dataclasses.replace(seeds, max_tokens=0)
    with pytest.raises(ValueError, match=r"fiction\.generate\.years must be \[first, last\]"):
        dataclasses.replace(seeds, years=(2080, 1850))
    with pytest.raises(ValueError, match=r"fiction\.generate\.backend must be one of"):
        dataclasses.replace(seeds, backend="vllm")
    fictions = FictionGenerationFictionsSettings.from_config(load_config())
    with pytest.raises(ValueError, match=r"fiction\.generate\.styles: unknown style\(s\) \['poem'\]"):
        dataclasses.replace(fictions, styles={"poem": 1})
    with pytest.raises(ValueError, match=r"fiction\.generate\.near_duplicates\.distance_threshold must be in"):
        FictionGenerationAnnotateSettings(embedder="packaged:all-MiniLM-L6-v2", distance_threshold=0)

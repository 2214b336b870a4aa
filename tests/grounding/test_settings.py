"""The grounding steps' settings (knowlab.grounding.settings): built from the shipped configs, carried
as builtins through a rule's params, checked with messages that name the config key."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from knowlab.config import load_config
from knowlab.core.stats import StatsSettings
from knowlab.grounding.settings import (
    FINETUNE_CONDITIONS,
    GroundingCheckpointGenerateSettings,
    GroundingConditionSettings,
    GroundingDecomposerSettings,
    GroundingDistractorsSettings,
    GroundingEvaluatorSettings,
    GroundingGenerateSettings,
    GroundingGenerationSettings,
    GroundingItemsSettings,
    GroundingScoreSettings,
    GroundingTablesSettings,
)

ROOT = Path(__file__).resolve().parents[2]


def test_generate_settings_of_the_configs(shipped_config):
    config = shipped_config
    grounding = config["grounding"]
    generate = GroundingGenerateSettings.from_config(config)
    assert generate.max_items == grounding["max_items"] and generate.budget == grounding["distractors"]["budget"]
    assert generate.generation.max_new_tokens == grounding["generation"]["max_new_tokens"]
    checkpoints = GroundingCheckpointGenerateSettings.from_config(config)
    assert checkpoints.conditions == FINETUNE_CONDITIONS and checkpoints.max_items == grounding["finetune"]["max_items"]
    assert checkpoints.budget is None and checkpoints.position is None  # gold contexts only: no distractor key
    # no server block under backend transformers: changing it re-runs no local generation
    assert grounding["generation"]["backend"] == "transformers" and generate.generation.openai_models is None
    assert generate.for_served("base_model") == generate


def test_served_generation_keeps_the_jobs_own_model_entry():
    served = {"backend": "openai", "openai": {"base_url": "http://h/v1", "models": {"a": "served-a", "b": "served-b"}}}
    config = load_config({"grounding": {"generation": served}})
    generate = GroundingGenerateSettings.from_config(config)
    assert generate.generation.openai_base_url == "http://h/v1"
    assert generate.for_served("a").generation.openai_models == {"a": "served-a"}
    assert generate.for_served("other").generation.openai_models == {}
    assert generate.for_served("a").param() != generate.for_served("b").param()


def test_items_settings_per_dataset():
    config = load_config()
    items = GroundingItemsSettings.from_config(config)
    assert items.kaist_sha256 == config["grounding"]["kaist"]["sha256"] and items.kaist_url
    assert items.for_dataset("kaist") == items
    assert items.for_dataset("fiction") == GroundingItemsSettings()  # the fiction set reads none of them


def test_served_decomposer_settings():
    config = load_config(ROOT / "config" / "paper.yaml")
    decomposer = GroundingDecomposerSettings.from_config(config)
    assert decomposer.served and decomposer.openai_model == "resources/models/llama3-8b-instruct"
    local = GroundingDecomposerSettings.from_config(load_config(ROOT / "config" / "test.yaml"))
    assert not local.served and local.openai_base_url is None and local.openai_model is None


def test_checks_name_the_config_key():
    with pytest.raises(ValueError, match=r"grounding\.max_items must be at least 1, got 0"):
        GroundingGenerateSettings(max_items=0)
    with pytest.raises(ValueError, match=r"grounding\.finetune\.max_items must be at least 1, got 0"):
        GroundingCheckpointGenerateSettings(max_items=0)
    with pytest.raises(ValueError, match=r"grounding\.distractors\.k must be at least 1, got 0"):
        GroundingDistractorsSettings(k=0)
    with pytest.raises(ValueError, match=r"grounding\.distractors\.position must be one of"):
        GroundingConditionSettings(position="top")
    with pytest.raises(ValueError, match=r"'original_dist' needs grounding\.distractors\.budget"):
        GroundingGenerateSettings(conditions=("original_dist",))
    with pytest.raises(ValueError, match=r"grounding\.generation\.backend must be one of"):
        GroundingGenerationSettings(backend="vllm")
    with pytest.raises(ValueError, match=r"grounding\.decomposer\.k_demos must be an int >= 0"):
        GroundingDecomposerSettings(k_demos=-1)
    with pytest.raises(ValueError, match=r"grounding\.evaluator\.window must be one of"):
        GroundingEvaluatorSettings(window="mean")
    with pytest.raises(ValueError, match=r"stats\.bootstrap_resamples must be at least 1"):
        StatsSettings.from_config({**load_config(), "stats": {**load_config()["stats"], "bootstrap_resamples": 0}})
    with pytest.raises(ValueError, match=r"stats\.confidence must be in \(0, 1\)"):
        StatsSettings.from_config({**load_config(), "stats": {**load_config()["stats"], "confidence": 1.0}})


def test_score_settings_rebuild_their_nested_records():
    settings = GroundingScoreSettings.from_config(load_config(ROOT / "config" / "paper.yaml"))
    again = GroundingScoreSettings.from_param(settings.param())
    assert isinstance(again.decomposer, GroundingDecomposerSettings)
    assert isinstance(again.evaluator, GroundingEvaluatorSettings)
    assert dataclasses.asdict(again) == settings.param()

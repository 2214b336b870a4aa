"""knowlab.config.check_config: every cross-field rule, each failing with a message naming the keys."""

import re
from pathlib import Path

import pytest
import yaml

from knowlab.config import base_eval_model, base_model_name, check_config, load_config, settings_note

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("name", ["config.yaml", "test.yaml", "paper.yaml"])
def test_shipped_configs_pass(name):
    overlay = {} if name == "config.yaml" else yaml.safe_load((ROOT / "config" / name).read_text())
    check_config(load_config(overlay))


@pytest.mark.parametrize(
    "overlay, message",
    [
        ({"mcq": {"n_choices": [4, 10], "ranker": {"max_candidates": 5}}}, "mcq.ranker.max_candidates=5"),
        ({"stats": {"suites": ["mcq4", "mcq7"]}}, "stats.suites ['mcq7'] are not built"),
        ({"sort": {"segment_lengths": [20, 100000]}}, "sort.segment_lengths must be below every sort.excerpt_lengths"),
        ({"sort": {"fiction": {"segment_lengths": [1000]}}}, "sort.fiction.segment_lengths must be below"),
        ({"sort": {"template": "t99"}}, "sort.template: unknown prompt template id 't99'"),
        ({"sort": {"rag_reading": "r99"}}, "sort.rag_reading: unknown RAG reading id 'r99'"),
        ({"sort": {"rag_readings": [{"id": "x", "reading": "no passages"}]}}, "sort.rag_readings: RAG reading 'x'"),
        ({"sort": {"source": "release", "conditions": ["baseline", "rag"]}}, "sort.conditions rag/oracle_rag need"),
        ({"eval_models": {"base_model": "org/model"}}, "eval_models must name the base model"),
        (
            {"finetune": {"distributed": {"processes_per_node": 3}}},
            "finetune.global_batch_size (2) must be a multiple of micro_batch_size x processes (1 x 3",
        ),
        (
            {"sort": {"parametric": {"finetune": {"global_batch_size": 3, "micro_batch_size": 2}}}},
            "sort.parametric.finetune.global_batch_size (3) must be a multiple",
        ),
        ({"finetune": {"distributed": {"nodes": 2}}}, "torchrun starts the processes of one node; use srun"),
        ({"finetune": {"offload": {"parameters": True}, "zero_stage": 2}}, "finetune.offload.parameters needs"),
        ({"finetune": {"offload": {"optimizer": True}}}, "finetune.offload.optimizer needs finetune.zero_stage 1"),
    ],
)
def test_each_rule_names_its_keys(overlay, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        check_config(load_config(overlay))


def test_generation_rules():
    with pytest.raises(ValueError, match="fiction.source is generate but fiction.generate is not configured"):
        cfg = load_config()
        cfg["fiction"]["source"], cfg["fiction"]["generate"] = "generate", None
        check_config(cfg)
    cfg = load_config({"model": {"source": "tiny_random"}, "fiction": {"source": "generate"}})
    cfg["fiction"]["generate"]["backend"], cfg["fiction"]["generate"]["transformers"]["path"] = "transformers", None
    with pytest.raises(ValueError, match="model.source tiny_random trains its tokenizer"):
        check_config(cfg)


def test_derived_names():
    cfg = load_config()
    assert base_eval_model(cfg) == "base_model"
    assert base_model_name(cfg) == "SmolLM2-135M-Instruct.Q4_1"
    assert base_model_name(load_config({"model": {"source": "tiny_random"}})) == "tiny random Llama (test)"
    note = settings_note(cfg)
    assert (
        note.startswith("SmolLM2-135M-Instruct.Q4_1; seed ")
        and "fiction rate 0.6" in note
        and "MCQ distractors" in note
    )

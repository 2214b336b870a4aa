"""knowlab.config.check_config: every cross-field rule, each failing with a message naming the keys."""

import re
from pathlib import Path

import pytest
import yaml

from knowlab.config import (
    check_config,
    load_config,
    model_config,
    model_source,
    settings_note,
)
from knowlab.layout import BaseModel, Layout, finetune_models, model_slug

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("name", ["config.yaml", "test.yaml", "paper.yaml", "models.yaml", "cpu-full.yaml"])
def test_shipped_configs_pass(name):
    overlay = {} if name == "config.yaml" else yaml.safe_load((ROOT / "config" / name).read_text())
    check_config(load_config(overlay))


def test_a_config_loaded_again_is_an_equal_copy_and_a_changed_file_is_read_anew(tmp_path):
    """load_config keeps what it made by the texts and mappings it was made from: the same inputs give an
    equal config that the caller may change; a changed file, another overlay, or a mapping that JSON
    cannot hold as itself (a tuple, which the schema refuses where the same list passes) is validated anew."""
    (tmp_path / "config").mkdir()
    for name in ("config.yaml", "schema.yaml"):
        (tmp_path / "config" / name).write_text((ROOT / "config" / name).read_text())
    overlay = tmp_path / "overlay.yaml"
    overlay.write_text("stats:\n  confidence: 0.9\n")
    first = load_config(overlay, root=tmp_path)
    first["stats"]["confidence"] = 0.5
    assert load_config(overlay, root=tmp_path)["stats"]["confidence"] == 0.9
    assert load_config({"stats": {"confidence": 0.8}}, root=tmp_path)["stats"]["confidence"] == 0.8
    overlay.write_text("stats:\n  confidence: 0.7\n")
    assert load_config(overlay, root=tmp_path)["stats"]["confidence"] == 0.7
    with pytest.raises(Exception, match="confidence"):
        load_config({"stats": {"confidence": 7}}, root=tmp_path)
    assert load_config({"sort": {"excerpt_lengths": [250]}}, root=tmp_path)["sort"]["excerpt_lengths"] == [250]
    with pytest.raises(Exception, match="excerpt_lengths"):  # the schema's array is a list: not the list's copy
        load_config({"sort": {"excerpt_lengths": (250,)}}, root=tmp_path)


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
        (
            {"finetune": {"models": {"a": "base", "b": {"finetune": {"distributed": {"processes_per_node": 3}}}}}},
            "finetune.models.b: finetune.global_batch_size (2) must be a multiple",
        ),
        (
            {"finetune": {"models": {"a": "base"}, "probe_models": ["a", "b"]}},
            "finetune.probe_models ['b'] are not base models of finetune.models (a)",
        ),
        (
            {"finetune": {"runs": ["doc"], "control": False, "probe_runs": ["doc", "control"]}},
            "finetune.probe_runs ['control'] are not trained runs (doc)",
        ),
        (
            {
                "finetune": {
                    "models": {"a": "base", "b": {"finetune": {"runs": ["doc"], "control": False}}},
                    "probe_runs": ["event"],
                }
            },
            "finetune.probe_runs ['event']: base model b of finetune.probe_models trains none of them (doc)",
        ),
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


def test_the_base_models_names():
    cfg = load_config()
    assert Layout(cfg).base_model == BaseModel(
        slug="SmolLM2-135M-Instruct.Q4_1",
        name="SmolLM2-135M-Instruct.Q4_1",
        evaluated_as="base_model",
        path="resources/base_model",
        run="base_model",
    )
    tiny = BaseModel.from_config(load_config({"model": {"source": "tiny_random"}}))
    assert (tiny.slug, tiny.name) == ("tiny-random", "tiny random Llama (test)")
    hub = BaseModel.from_config(load_config({"model": {"source": "hub", "hub": {"id": "org/M-1B"}}}))
    assert (hub.slug, hub.name) == ("M-1B", "org/M-1B")
    cfg["eval_models"] = {"other": "org/other"}
    assert BaseModel.from_config(cfg).evaluated_as is None
    with pytest.raises(ValueError, match="eval_models must name the base model"):
        check_config(cfg)
    note = settings_note(cfg)
    assert (
        note.startswith("SmolLM2-135M-Instruct.Q4_1; seed ")
        and "fiction rate 0.6" in note
        and "MCQ distractors" in note
    )


def test_base_models_and_their_settings():
    """finetune.models: one model by default (named after it), else each entry merged over the
    top-level blocks; the config as each model's jobs read it."""
    cfg = load_config()
    assert (
        finetune_models(cfg) == {"SmolLM2-135M-Instruct.Q4_1": "base"}
        and model_config(cfg, "SmolLM2-135M-Instruct.Q4_1") == cfg
    )
    assert model_slug({"source": "hub", "hub": {"id": "meta-llama/Llama-3.2-1B"}}) == "Llama-3.2-1B"
    assert model_slug({"source": "tiny_random"}) == "tiny-random"
    test = load_config(ROOT / "config" / "test.yaml")
    assert list(finetune_models(test)) == ["tiny", "tiny-wide"]
    # the probes of every checkpoint: every base model by default, the first one in config/test.yaml
    assert Layout(load_config({"finetune": {"models": {"a": "base", "b": "base"}}})).probe_models == ["a", "b"]
    assert Layout(test).probe_models == ["tiny"]
    # the Doc run and the control by default and in config/test.yaml; null: every run of a probed model
    assert Layout(load_config()).probe_runs == {"SmolLM2-135M-Instruct.Q4_1": ["doc", "control"]}
    assert Layout(load_config({"finetune": {"probe_runs": None}})).probe_runs == {
        "SmolLM2-135M-Instruct.Q4_1": ["doc", "event", "fictsheets", "control"]
    }
    assert Layout(test).probe_runs == {"tiny": ["doc", "control"]}
    wide = model_config(test, "tiny-wide")
    assert wide["model"]["tiny_random"]["hidden_size"] == 96 and wide["model"]["tiny_random"]["num_hidden_layers"] == 2
    assert test["model"]["tiny_random"]["hidden_size"] == 64  # the config itself is not changed
    assert model_source(wide) == "tiny_random hidden 96, 2 layers"
    assert settings_note(wide, "tiny-wide").startswith("tiny-wide (tiny random Llama (test)); seed ")
    assert settings_note(test, "").startswith("seed ")
    own = load_config(
        {"finetune": {"models": {"a": "base", "b": {"finetune": {"lr": 0.5}, "compute": {"dtype": "bfloat16"}}}}}
    )
    assert model_config(own, "b")["finetune"]["lr"] == 0.5 and model_config(own, "b")["compute"]["dtype"] == "bfloat16"
    assert model_config(own, "a")["finetune"]["lr"] == own["finetune"]["lr"]
    with pytest.raises(ValueError, match="'c' is not a base model of finetune.models \\(a, b\\)"):
        model_config(own, "c")

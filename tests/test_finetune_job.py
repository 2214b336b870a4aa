"""The fine-tuning job as the workflow launches it: two gloo processes (torchrun) against one,
with the live loss curve read back from TensorBoard's event files; its settings record
(knowlab.finetune_job.FinetuneJobSettings): which keys retrain, and the shipped configs' params unchanged."""

import copy
import dataclasses
import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import torch
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from knowlab.core.io import write_jsonl
from knowlab.core.train import (
    SCHEDULE_KEYS,
    DistributedSettings,
    OptimizationSettings,
    TrainSettings,
    launch_command,
)
from knowlab.finetune_job import (
    RUN_LIST_KEYS,
    TRACKING_ENV,
    TRAINING_KEYS,
    FinetuneJobSettings,
    job_command,
    job_spec,
    run_job,
)

ROOT = Path(__file__).resolve().parents[1]


def _launch(tmp_path, inputs, outputs, cfg, checkpoint, world, curves):
    spec = job_spec("fictionalqa", "control", checkpoint, inputs, outputs, cfg, None, 4)
    launch = launch_command({"launcher": "torchrun", "nodes": 1, "processes_per_node": world}, sys.executable)
    command = job_command(launch, spec, threads=world)
    tracking = {"backend": "tensorboard", "dir": curves, "wandb": {}}  # as the workflow passes it
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), TRACKING_ENV: json.dumps(tracking)}
    done = subprocess.run(command, shell=True, env=env, capture_output=True, text=True, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-4000:]
    return done.stderr


@pytest.mark.slow
def test_two_processes_train_as_one_and_resume_under_zero3(tmp_path, tiny_model_dir, corpus, finetune_cfg):
    """ZeRO-3 at world size 2, in two segments (the second resumes the first's sharded state), gives
    the losses of one process training in one go, and a checkpoint transformers loads."""
    from transformers import AutoModelForCausalLM

    write_jsonl(tmp_path / "webtext.jsonl", [{"text": r["fiction"][:300]} for r in corpus["fictions"][:12]])
    inputs = {"model": str(tiny_model_dir), "webtext": str(tmp_path / "webtext.jsonl")}
    cfg = finetune_cfg | {"zero_stage": 3, "global_batch_size": 4, "micro_batch_size": 1, "precision": "fp32"}
    one, two = tmp_path / "one", tmp_path / "two"
    _launch(
        tmp_path,
        inputs,
        {"checkpoint": one / "step-4", "train_log": one / "log.parquet", "manifest": one / "m.json"},
        cfg,
        "step-4",
        1,
        "curves-one",
    )
    first = {
        "checkpoint": two / "step-2",
        "state": two / "state",
        "train_log": two / "log2.parquet",
        "manifest": two / "m2.json",
    }
    stderr = _launch(tmp_path, inputs, first, cfg, "step-2", 2, "curves-two")
    assert "4 sequences per step = 2 ranks x 2 micro-batches x 1" in stderr
    last = {"checkpoint": two / "step-4", "train_log": two / "log4.parquet", "manifest": two / "m4.json"}
    _launch(tmp_path, inputs | {"state": str(two / "state")}, last, cfg, "step-4", 2, "curves-two")

    alone = pd.read_parquet(one / "log.parquet")
    pair = pd.concat([pd.read_parquet(two / "log2.parquet"), pd.read_parquet(two / "log4.parquet")], ignore_index=True)
    assert list(pair["step"]) == [1, 2, 3, 4]
    pd.testing.assert_series_equal(pair["loss"], alone["loss"], rtol=1e-4)
    assert pair["tokens"].equals(alone["tokens"])
    # the live curve is the training log: both intervals' event files, read as TensorBoard reads them
    for curves, log in (("curves-one", alone), ("curves-two", pair)):
        events = EventAccumulator(str(tmp_path / curves / "fictionalqa" / "control"))
        events.Reload()
        loss = events.Scalars("train/loss")
        assert [e.step for e in loss] == [1, 2, 3, 4]
        assert [e.value for e in loss] == pytest.approx(list(log["loss"]), rel=1e-6)
        lr = [e.value for e in events.Scalars("train/lr")]
        assert lr == pytest.approx(list(log["lr"]), rel=1e-6)
        seen = [e.value for e in events.Scalars("train/webtext_samples_seen")]
        assert seen == list(log["webtext_samples_seen"].astype(float))
    ids = torch.arange(1, 17).unsqueeze(0)
    with torch.no_grad():
        a, b = (AutoModelForCausalLM.from_pretrained(p / "step-4")(ids).logits for p in (one, two))
    torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-4)
    manifest = json.loads((two / "m4.json").read_text())
    assert manifest["rule"] == "finetune" and manifest["wildcards"] == {"run": "control", "checkpoint": "step-4"}
    assert not any("state" in entry["path"] for entry in manifest["inputs"])


def test_a_spec_holds_only_what_its_recipe_reads(finetune_cfg):
    """The SORT recipe sets the schedule keys per epoch and lays ``sort.parametric.finetune`` over the
    rest, so a change to FictionalQA's schedule, or to a key SORT overrides, leaves its spec (and so
    its jobs) unchanged; the FictionalQA recipe never reads ``sort.parametric``."""
    paths = ({"model": "m"}, {"checkpoint": "c"})
    parametric = {"epochs": 2, "finetune": {"lr": 1e-3, "seq_len": 64}, "instructions": {"n": 4}}

    def spec(recipe, finetune, parametric):
        return job_spec(recipe, "books", "epoch-1", *paths, finetune, parametric, 4)

    sort = spec("sort_parametric", finetune_cfg, parametric)
    assert sort["finetune"]["lr"] == 1e-3 and sort["finetune"]["seq_len"] == 64
    assert sort["parametric"] == {"epochs": 2} and "max_steps" not in sort["finetune"]
    for key, value in (("lr", 5e-2), ("max_steps", 99), ("fiction_rate", 0.5), ("runs", ["doc"])):
        assert spec("sort_parametric", finetune_cfg | {key: value}, parametric) == sort, key
    assert spec("sort_parametric", finetune_cfg | {"weight_decay": 0.5}, parametric) != sort
    assert spec("sort_parametric", finetune_cfg, parametric | {"epochs": 3}) != sort
    fictionalqa = spec("fictionalqa", finetune_cfg, None)
    assert fictionalqa["parametric"] is None and fictionalqa["finetune"]["max_steps"] == finetune_cfg["max_steps"]
    assert spec("fictionalqa", finetune_cfg, parametric) == fictionalqa
    assert spec("fictionalqa", finetune_cfg | {"runs": ["doc"], "control": False}, None) == fictionalqa


# --------------------------------------------------------------------------- the settings param and its keys
SHIPPED = ("config.yaml", "test.yaml", "cpu-full.yaml", "paper.yaml", "models.yaml", "seeds.yaml")

# A valid new value of every key of the schema's ``finetune`` block, for config/test.yaml's block (``offload``
# on a block with ``zero_stage: 3``, which offloading needs).  A key the schema gains fails
# test_every_key_of_the_finetune_block_is_classified until it is listed here and classified.
CHANGES = {
    "max_steps": 7,
    "checkpoint_every": 3,
    "fiction_rate": 0.3,
    "fiction_warmup_steps": 2,
    "micro_batch_size": 1,
    "global_batch_size": 8,
    "seq_len": 96,
    "lr": 2e-3,
    "min_lr": 1e-5,
    "lr_warmup_steps": 2,
    "weight_decay": 0.1,
    "gradient_clipping": 0.5,
    "precision": "bf16",
    "zero_stage": 1,
    "offload": {"optimizer": True, "parameters": True},
    "gradient_checkpointing": True,
    "distributed": {"launcher": "torchrun", "nodes": 1, "processes_per_node": 2},
    "lora": {"enabled": True, "r": 8, "alpha": 16, "dropout": 0.1, "target_modules": ["q_proj"]},
    "runs": ["doc"],
    "control": False,
    "seeds": [7, 8],
    "models": {"other": "base"},
    "probe_models": ["other"],
    "resources": {"mem_mb": 1, "runtime": 1},
}
NEEDS = {"offload": {"zero_stage": 3}}


def _schema_block_keys() -> list[str]:
    import yaml

    schema = yaml.safe_load((ROOT / "config" / "schema.yaml").read_text())
    return list(schema["properties"]["finetune"]["properties"])


def _legacy_param(recipe, finetune_cfg, parametric_cfg, seed):
    """The param as the workflow wrote it before FinetuneJobSettings (knowlab.finetune_job.recipe_settings
    of 3ba5331, verbatim): the reference a finished run's param is compared with."""
    finetune = {key: value for key, value in finetune_cfg.items() if key in TRAINING_KEYS}
    parametric = None
    if recipe == "sort_parametric":
        overrides = dict(parametric_cfg.get("finetune") or {})
        finetune = {key: value for key, value in finetune.items() if key not in SCHEDULE_KEYS} | overrides
        parametric = {key: parametric_cfg[key] for key in ("epochs",)}
    return {"finetune": finetune, "parametric": parametric, "seed": seed}


def _shipped_configs():
    """Every shipped config, each merged two ways: as knowlab.config.load_config merges it (config/config.yaml's
    key order) and as ``snakemake --configfile`` does (the overlay's keys first, then the rest of
    config/config.yaml: the order the rules' params have in a real run)."""
    import yaml
    from snakemake.utils import update_config, validate

    from knowlab.config import load_config

    base = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
    for name in SHIPPED:
        yield name, "load_config", load_config(*([] if name == "config.yaml" else [ROOT / "config" / name]))
        overlay = yaml.safe_load((ROOT / "config" / name).read_text()) or {}
        config = copy.deepcopy(overlay)
        update_config(config, copy.deepcopy(base))
        update_config(config, copy.deepcopy(overlay))
        validate(config, str(ROOT / "config" / "schema.yaml"), set_default=True)
        yield name, "snakemake", config


def test_every_key_of_the_finetune_block_is_classified():
    """Each key the schema allows in ``finetune`` is a training key (a field of TrainSettings, or
    ``distributed``) or a run-list key, not both, and has a value in CHANGES: a key added to the schema fails
    here until it is classified (and from_blocks refuses it in a config until then)."""
    block_keys = _schema_block_keys()
    assert set(block_keys) == set(TRAINING_KEYS) | set(RUN_LIST_KEYS), set(block_keys) ^ (
        set(TRAINING_KEYS) | set(RUN_LIST_KEYS)
    )
    assert not set(TRAINING_KEYS) & set(RUN_LIST_KEYS)
    assert set(CHANGES) == set(block_keys), set(CHANGES) ^ set(block_keys)
    assert set(TRAINING_KEYS) == {field.name for field in dataclasses.fields(TrainSettings)} | {"distributed"}
    assert list(TRAINING_KEYS) == [key for key in block_keys if key in TRAINING_KEYS]  # the schema's order
    assert set(SCHEDULE_KEYS) < set(TRAINING_KEYS)
    assert set(SCHEDULE_KEYS) == {field.name for field in dataclasses.fields(TrainSettings)} - {
        field.name for field in dataclasses.fields(OptimizationSettings)
    }
    with pytest.raises(TypeError, match=r"finetune has key\(s\) \['a_new_key'\] that are neither training keys"):
        FinetuneJobSettings.from_blocks("fictionalqa", {**CHANGES, "a_new_key": 1}, None, 1)


@pytest.mark.parametrize("recipe", ["fictionalqa", "sort_parametric"])
def test_a_training_key_retrains_and_a_run_list_key_does_not(recipe):
    """Changing a training key changes the fine-tuning rules' param (the job retrains); changing a run-list key
    leaves it equal.  The SORT recipe sets the schedule keys per epoch, and sort.parametric.finetune overrides
    some others: changing those in ``finetune`` leaves its param equal too."""
    from knowlab.config import load_config

    config = load_config(ROOT / "config" / "test.yaml")
    parametric = config["sort"]["parametric"]
    overridden = set(parametric["finetune"]) if recipe == "sort_parametric" else set()
    ignored = set(SCHEDULE_KEYS) | overridden if recipe == "sort_parametric" else set()

    def param(block):
        return repr(FinetuneJobSettings.from_blocks(recipe, block, parametric, 1).param())

    for key in _schema_block_keys():
        before = {**config["finetune"], **NEEDS.get(key, {})}
        assert before[key] != CHANGES[key], key
        changed = param({**before, key: CHANGES[key]})
        if key in TRAINING_KEYS and key not in ignored:
            assert changed != param(before), key
        else:
            assert changed == param(before), key
    # every nested key of a training key retrains, alone
    for key in ("offload", "distributed", "lora"):
        before = {**config["finetune"], **NEEDS.get(key, {})}
        for inner, value in CHANGES[key].items():
            if before[key][inner] != value:
                assert param({**before, key: {**before[key], inner: value}}) != param(before), (key, inner)
    assert param(config["finetune"]) != repr(
        FinetuneJobSettings.from_blocks(recipe, config["finetune"], parametric, 2).param()
    )  # the seed


def test_the_shipped_configs_params_are_unchanged():
    """For every shipped config, merged as load_config and as ``snakemake --configfile`` merge it, every base
    model's FictionalQA job and the SORT jobs get the param the workflow wrote before FinetuneJobSettings,
    byte for byte (the repr Snakemake records and compares, key order included): no finished run retrains.
    The job reads the same settings back from the spec's JSON."""
    from knowlab.config import model_config
    from knowlab.layout import finetune_models, training_seeds

    checked = 0
    for name, merge, config in _shipped_configs():
        parametric = config["sort"]["parametric"]
        jobs = [
            ("fictionalqa", model_config(config, model)["finetune"], seed)
            for model in finetune_models(config)
            for seed in training_seeds(config)
        ]
        jobs.append(("sort_parametric", config["finetune"], config["seed"]))
        for recipe, block, seed in jobs:
            settings = FinetuneJobSettings.from_blocks(recipe, block, parametric, seed)
            param = settings.param()
            assert repr(param) == repr(_legacy_param(recipe, block, parametric, seed)), (name, merge, recipe)
            spec = json.loads(
                json.dumps(job_spec(recipe, "r", "step-1", {}, {}, block, parametric, seed), sort_keys=True)
            )
            again = FinetuneJobSettings.from_spec(spec)
            assert again == settings and again.param() == param, (name, merge, recipe)
            assert repr(FinetuneJobSettings.from_param(recipe, param).param()) == repr(param)
            checked += 1
    assert checked >= 2 * len(SHIPPED) * 2


def test_the_param_keeps_the_blocks_key_order(finetune_cfg):
    """The param lists the keys in the block's order (Snakemake compares its repr); records that differ only
    in that order are equal, and the recipes see the same settings."""
    block = dict(reversed(list(finetune_cfg.items()))) | {"lora": dict(reversed(list(finetune_cfg["lora"].items())))}
    one = FinetuneJobSettings.from_blocks("fictionalqa", finetune_cfg, None, 4)
    other = FinetuneJobSettings.from_blocks("fictionalqa", block, None, 4)
    assert one == other and one.train == other.train
    assert list(other.param()["finetune"])[:-1] == list(block)  # distributed, absent from the block, last
    assert list(other.param()["finetune"]["lora"]) == list(block["lora"])
    assert repr(other.param()) != repr(one.param()) and other.param() == one.param()
    assert list(FinetuneJobSettings(one.recipe, one.train, one.distributed, 4).param()["finetune"]) == [
        key for key in TRAINING_KEYS
    ]


def test_the_settings_are_typed_and_checked(finetune_cfg):
    """FictionalQA trains by a TrainSettings, SORT by OptimizationSettings and its epochs (the recipe adds each
    epoch's schedule); the record is frozen, and a wrong recipe, part or param fails naming it."""
    parametric = {"epochs": 2, "finetune": {"lr": 1e-3}}
    fictionalqa = FinetuneJobSettings.from_blocks("fictionalqa", finetune_cfg, parametric, 4)
    assert type(fictionalqa.train) is TrainSettings and fictionalqa.epochs is None
    assert fictionalqa.distributed == DistributedSettings("torchrun", 1, 1)
    sort = FinetuneJobSettings.from_blocks("sort_parametric", finetune_cfg, parametric, 4)
    assert type(sort.train) is OptimizationSettings and sort.epochs == 2 and sort.train.lr == 1e-3
    scheduled = sort.train.schedule(max_steps=6, checkpoint_every=3, fiction_rate=0.5, fiction_warmup_steps=0)
    assert scheduled == TrainSettings.from_block(
        finetune_cfg
        | {"lr": 1e-3, "max_steps": 6, "checkpoint_every": 3, "fiction_rate": 0.5, "fiction_warmup_steps": 0}
    )
    with pytest.raises(dataclasses.FrozenInstanceError, match="cannot assign to field 'seed'"):
        sort.seed = 5
    with pytest.raises(ValueError, match="unknown fine-tuning recipe 'poems'"):
        FinetuneJobSettings.from_blocks("poems", finetune_cfg, parametric, 4)
    with pytest.raises(TypeError, match="the sort_parametric recipe sets its schedule per epoch"):
        FinetuneJobSettings("sort_parametric", fictionalqa.train, fictionalqa.distributed, 4, epochs=2)
    with pytest.raises(ValueError, match="sort.parametric.epochs must be at least 1, got 0"):
        FinetuneJobSettings.from_blocks("sort_parametric", finetune_cfg, parametric | {"epochs": 0}, 4)
    with pytest.raises(ValueError, match="the fictionalqa recipe has no epochs"):
        FinetuneJobSettings("fictionalqa", fictionalqa.train, fictionalqa.distributed, 4, epochs=2)
    with pytest.raises(ValueError, match="finetune.distributed: torchrun starts the processes of one node"):
        FinetuneJobSettings.from_blocks("fictionalqa", finetune_cfg | {"distributed": {"nodes": 2}}, None, 4)
    schedule = r"\['checkpoint_every', 'fiction_rate', 'fiction_warmup_steps', 'max_steps'\]"
    with pytest.raises(TypeError, match=rf"finetune has no key\(s\) {schedule} that training reads"):
        FinetuneJobSettings.from_param("sort_parametric", fictionalqa.param() | {"parametric": {"epochs": 2}})
    with pytest.raises(TypeError, match=r"the settings' finetune has key\(s\) \['runs'\] not in TRAINING_KEYS"):
        param = fictionalqa.param()
        FinetuneJobSettings.from_param("fictionalqa", param | {"finetune": param["finetune"] | {"runs": ["doc"]}})


@pytest.fixture
def knowlab_logging():
    """run_job replaces the ``knowlab`` logger's handlers (configure_logging): restore the logger after the test."""
    logger = logging.getLogger("knowlab")
    saved = (list(logger.handlers), logger.level, logger.propagate)
    yield
    logger.handlers[:] = saved[0]
    logger.setLevel(saved[1])
    logger.propagate = saved[2]


@pytest.mark.usefixtures("restore_environment", "knowlab_logging")
def test_a_job_trains_from_its_spec(tmp_path, tiny_model_dir, corpus, finetune_cfg):
    """run_job, in this process: the spec's settings read back (from_spec) train the control for two steps, and
    rank 0 writes the training log and a manifest whose config slice is the spec's settings."""
    write_jsonl(tmp_path / "webtext.jsonl", [{"text": r["fiction"][:300]} for r in corpus["fictions"][:8]])
    inputs = {"model": str(tiny_model_dir), "webtext": str(tmp_path / "webtext.jsonl")}
    outputs = {"checkpoint": tmp_path / "step-2", "state": tmp_path / "state", "train_log": tmp_path / "log.parquet"}
    outputs["manifest"] = tmp_path / "manifest.json"
    cfg = finetune_cfg | {"global_batch_size": 2, "precision": "fp32"}
    spec = json.loads(json.dumps(job_spec("fictionalqa", "control", "step-2", inputs, outputs, cfg, None, 4)))
    run_job(spec)
    log = pd.read_parquet(tmp_path / "log.parquet")
    assert list(log["step"]) == [1, 2] and (log["run"] == "control").all()
    assert (tmp_path / "step-2" / "model.safetensors").is_file() and (tmp_path / "state").is_dir()
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    assert manifest["config"] == {"finetune": spec["finetune"], "parametric": None, "recipe": "fictionalqa"}
    assert manifest["seed"] == 4

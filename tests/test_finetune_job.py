"""The fine-tuning job as the workflow launches it: two gloo processes (torchrun) against one,
with the live loss curve read back from TensorBoard's event files; its settings record
(knowlab.finetune_job.FinetuneJobSettings) and its param: which keys retrain, a new field reaching the
job with no other edit, and the shipped configs' params in their blocks' order."""

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
from knowlab.core.train import DistributedSettings, OptimizationSettings, TrainSettings, launch_command
from knowlab.finetune_job import RECIPES, TRACKING_ENV, FinetuneJobSettings, job_command, job_spec, run_job

ROOT = Path(__file__).resolve().parents[1]
#: the run's schedule: the fields TrainSettings adds to OptimizationSettings, which SORT sets per epoch
SCHEDULE = {field.name for field in dataclasses.fields(TrainSettings)} - {
    field.name for field in dataclasses.fields(OptimizationSettings)
}


def _launch(tmp_path, inputs, outputs, cfg, checkpoint, world, curves):
    settings = FinetuneJobSettings.param_from_blocks("fictionalqa", cfg, None, 4)
    spec = job_spec("fictionalqa", "control", checkpoint, inputs, outputs, settings)
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
    rest, so a change to FictionalQA's schedule, or to a key SORT overrides, leaves its param (and so
    its jobs) unchanged; the FictionalQA recipe never reads ``sort.parametric``.  The spec holds the param
    as it is."""
    parametric = {"epochs": 2, "finetune": {"lr": 1e-3, "seq_len": 64}, "instructions": {"n": 4}}

    def param(recipe, finetune, parametric):
        return FinetuneJobSettings.param_from_blocks(recipe, finetune, parametric, 4)

    sort = param("sort_parametric", finetune_cfg, parametric)
    assert job_spec("sort_parametric", "books", "epoch-1", {"model": "m"}, {"checkpoint": "c"}, sort) == {
        "recipe": "sort_parametric",
        "run": "books",
        "checkpoint": "epoch-1",
        "inputs": {"model": "m"},
        "outputs": {"checkpoint": "c"},
        "settings": sort,
    }
    assert sort["finetune"]["lr"] == 1e-3 and sort["finetune"]["seq_len"] == 64
    assert sort["parametric"] == {"epochs": 2} and not SCHEDULE & set(sort["finetune"])
    for key, value in (("lr", 5e-2), ("max_steps", 99), ("fiction_rate", 0.5), ("runs", ["doc"])):
        assert param("sort_parametric", finetune_cfg | {key: value}, parametric) == sort, key
    assert param("sort_parametric", finetune_cfg | {"weight_decay": 0.5}, parametric) != sort
    assert param("sort_parametric", finetune_cfg, parametric | {"epochs": 3}) != sort
    fictionalqa = param("fictionalqa", finetune_cfg, None)
    assert fictionalqa["parametric"] is None and fictionalqa["finetune"]["max_steps"] == finetune_cfg["max_steps"]
    assert param("fictionalqa", finetune_cfg, parametric) == fictionalqa
    assert param("fictionalqa", finetune_cfg | {"runs": ["doc"], "control": False}, None) == fictionalqa


# --------------------------------------------------------------------------- the settings param and its keys
SHIPPED = ("config.yaml", "test.yaml", "cpu-full.yaml", "paper.yaml", "models.yaml", "seeds.yaml")

# Keys of the schema's ``finetune`` block that no record has, so that changing one retrains nothing: which
# runs, training seeds and base models exist (each job gets its own model's block, knowlab.config.model_config,
# and its own seed) or are probed, and what a job asks its scheduler for.  A training key is a field of a
# record (knowlab.finetune_job.RECIPES) and is not listed anywhere.
NOT_READ = {"runs", "control", "seeds", "models", "probe_models", "probe_runs", "resources"}
# A valid new value of the keys of the schema's ``finetune`` block whose schema alone gives none (_changed), for
# config/test.yaml's block (``offload`` on a block with ``zero_stage: 3``, which offloading needs).
CHANGES = {
    "micro_batch_size": 1,
    "global_batch_size": 8,
    "offload": {"optimizer": True, "parameters": True},
    "distributed": {"launcher": "torchrun", "nodes": 1, "processes_per_node": 2},
    "lora": {"enabled": True, "r": 8, "alpha": 16, "dropout": 0.1, "target_modules": ["q_proj"]},
    "runs": ["doc"],
    "seeds": [7, 8],
    "models": {"other": "base"},
    "probe_models": ["other"],
    "probe_runs": ["doc"],
    "resources": {"mem_mb": 1, "runtime": 1},
}
NEEDS = {"offload": {"zero_stage": 3}}


def _schema_block() -> dict[str, dict]:
    """The schema of each key of the ``finetune`` block, in the schema's order."""
    import yaml

    schema = yaml.safe_load((ROOT / "config" / "schema.yaml").read_text())
    return schema["properties"]["finetune"]["properties"]


def _changed(key: str, value, schema: dict):
    """A valid value other than ``value`` of ``finetune.<key>``: CHANGES's, else one its schema allows (another
    member of an enum, the other boolean, an integer one up, a number halfway to its maximum)."""
    if key in CHANGES:
        return CHANGES[key]
    if "enum" in schema:
        return next(other for other in schema["enum"] if other != value)
    kinds = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
    if "boolean" in kinds:
        return not value
    if "integer" in kinds:
        return value + 1 if value + 1 <= schema.get("maximum", value + 1) else value - 1
    if "number" in kinds:
        return (value + schema.get("maximum", value + 1)) / 2
    raise AssertionError(f"finetune.{key} ({kinds}): give it a new value in CHANGES")


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


def _fields(record) -> set[str]:
    return {field.name for field in dataclasses.fields(record)}


@pytest.mark.parametrize("recipe", ["fictionalqa", "sort_parametric"])
def test_the_param_holds_the_fields_of_the_record_and_nothing_else(recipe):
    """The param's ``finetune`` holds exactly the fields of the recipe's record (and ``distributed``), each a
    key of the schema's block with the block's value; every other key of the block is a key that cannot change
    a result (NOT_READ); the job's record, read back from the spec's JSON, has every value of the block."""
    from knowlab.config import load_config

    config = load_config(ROOT / "config" / "test.yaml")
    block, parametric = config["finetune"], config["sort"]["parametric"]
    param = FinetuneJobSettings.param_from_blocks(recipe, block, parametric, 1)
    kind = RECIPES[recipe]
    assert set(param["finetune"]) == _fields(kind) | {"distributed"}
    assert _fields(TrainSettings) | {"distributed"} == set(_schema_block()) - NOT_READ
    laid = block | (parametric["finetune"] if recipe == "sort_parametric" else {})
    assert param["finetune"] == {key: laid[key] for key in _fields(kind) | {"distributed"}}
    spec = json.loads(json.dumps(job_spec(recipe, "r", "c", {}, {}, param), sort_keys=True))
    record = FinetuneJobSettings.from_spec(spec)
    assert type(record.train) is kind and record == FinetuneJobSettings.from_blocks(recipe, block, parametric, 1)
    as_json = json.loads(json.dumps(dataclasses.asdict(record.train) | {"distributed": record.distributed.param()}))
    assert as_json == json.loads(json.dumps(param["finetune"]))  # every field, nested ones too
    assert (record.seed, record.epochs) == (1, parametric["epochs"] if recipe == "sort_parametric" else None)


@pytest.mark.parametrize("recipe", ["fictionalqa", "sort_parametric"])
def test_a_new_field_reaches_the_job_with_no_other_edit(monkeypatch, recipe):
    """A training key added as one field of the recipe's record (here a subclass with ``label_smoothing``, put in
    RECIPES) and given in the config block is in the rule's param, retrains when it changes, and reaches the
    record the job builds from its spec; nothing lists it.  A block without it fails when the DAG is built."""
    from knowlab.config import load_config

    @dataclasses.dataclass(frozen=True)
    class Smoothed(RECIPES[recipe]):
        label_smoothing: float

    monkeypatch.setitem(RECIPES, recipe, Smoothed)
    config = load_config(ROOT / "config" / "test.yaml")
    block, parametric = config["finetune"] | {"label_smoothing": 0.1}, config["sort"]["parametric"]
    param = FinetuneJobSettings.param_from_blocks(recipe, block, parametric, 1)
    assert param["finetune"]["label_smoothing"] == 0.1
    spec = json.loads(json.dumps(job_spec(recipe, "r", "c", {}, {}, param), sort_keys=True))
    record = FinetuneJobSettings.from_spec(spec)
    assert type(record.train) is Smoothed and record.train.label_smoothing == 0.1

    def param_repr(block):
        return repr(FinetuneJobSettings.param_from_blocks(recipe, block, parametric, 1))

    assert param_repr(block | {"label_smoothing": 0.2}) != param_repr(block)
    assert param_repr(block | {"runs": ["doc"]}) == param_repr(block)
    with pytest.raises(TypeError, match="label_smoothing"):
        FinetuneJobSettings.param_from_blocks(recipe, config["finetune"], parametric, 1)


@pytest.mark.parametrize("recipe", ["fictionalqa", "sort_parametric"])
def test_a_training_key_retrains_and_a_run_list_key_does_not(recipe):
    """Changing a key of the schema's block changes the fine-tuning rules' param (the job retrains) unless it is
    one of NOT_READ.  The SORT recipe sets the schedule keys per epoch, and sort.parametric.finetune overrides
    some others: changing those in ``finetune`` leaves its param equal too."""
    from knowlab.config import load_config

    config = load_config(ROOT / "config" / "test.yaml")
    parametric = config["sort"]["parametric"]
    ignored = NOT_READ | (SCHEDULE | set(parametric["finetune"]) if recipe == "sort_parametric" else set())

    def param(block):
        return repr(FinetuneJobSettings.param_from_blocks(recipe, block, parametric, 1))

    for key, schema in _schema_block().items():
        before = {**config["finetune"], **NEEDS.get(key, {})}
        changed = _changed(key, before[key], schema)
        assert before[key] != changed, key
        if key in ignored:
            assert param({**before, key: changed}) == param(before), key
        else:
            assert param({**before, key: changed}) != param(before), key
    # every nested key of a training key retrains, alone
    for key in ("offload", "distributed", "lora"):
        before = {**config["finetune"], **NEEDS.get(key, {})}
        for inner, value in CHANGES[key].items():
            if before[key][inner] != value:
                assert param({**before, key: {**before[key], inner: value}}) != param(before), (key, inner)
    assert param(config["finetune"]) != repr(
        FinetuneJobSettings.param_from_blocks(recipe, config["finetune"], parametric, 2)
    )  # the seed


def test_the_shipped_configs_params_keep_their_blocks():
    """For every shipped config, merged as load_config and as ``snakemake --configfile`` merge it, every base
    model's FictionalQA job and the SORT jobs get a param whose ``finetune`` is the block's slice in the block's
    order with the block's values (SORT: sort.parametric.finetune laid over it), the repr Snakemake records and
    compares, as the workflow wrote it before FinetuneJobSettings: no finished run retrains.  The job reads the
    record back from the spec's JSON."""
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
            param = FinetuneJobSettings.param_from_blocks(recipe, block, parametric, seed)
            laid = block | (parametric["finetune"] if recipe == "sort_parametric" else {})
            kept = {key: value for key, value in laid.items() if key in param["finetune"]}
            assert repr(param["finetune"]) == repr(kept), (name, merge, recipe)
            expected = None if recipe == "fictionalqa" else {"epochs": parametric["epochs"]}
            assert repr(param) == repr({"finetune": kept, "parametric": expected, "seed": seed})
            spec = json.loads(json.dumps(job_spec(recipe, "r", "step-1", {}, {}, param), sort_keys=True))
            again = FinetuneJobSettings.from_spec(spec)
            assert again == FinetuneJobSettings.from_param(recipe, param), (name, merge, recipe)
            checked += 1
    assert checked >= 2 * len(SHIPPED) * 2


def test_the_param_keeps_the_blocks_key_order(finetune_cfg):
    """The param lists the keys in the block's order (Snakemake compares its repr), nested blocks' too; records
    from blocks that differ only in that order are equal, and the recipes see the same settings."""
    block = dict(reversed(list(finetune_cfg.items()))) | {"lora": dict(reversed(list(finetune_cfg["lora"].items())))}
    one = FinetuneJobSettings.param_from_blocks("fictionalqa", finetune_cfg, None, 4)
    other = FinetuneJobSettings.param_from_blocks("fictionalqa", block, None, 4)
    assert list(other["finetune"]) == list(block) and list(other["finetune"]["lora"]) == list(block["lora"])
    assert repr(other) != repr(one) and other == one
    assert FinetuneJobSettings.from_param("fictionalqa", one) == FinetuneJobSettings.from_param("fictionalqa", other)


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
    with pytest.raises(TypeError, match="the sort_parametric recipe trains by OptimizationSettings, got TrainSettings"):
        FinetuneJobSettings("sort_parametric", fictionalqa.train, fictionalqa.distributed, 4, epochs=2)
    with pytest.raises(ValueError, match="sort.parametric.epochs must be at least 1, got 0"):
        FinetuneJobSettings.from_blocks("sort_parametric", finetune_cfg, parametric | {"epochs": 0}, 4)
    with pytest.raises(ValueError, match="the fictionalqa recipe has no epochs"):
        FinetuneJobSettings("fictionalqa", fictionalqa.train, fictionalqa.distributed, 4, epochs=2)
    with pytest.raises(ValueError, match="finetune.distributed: torchrun starts the processes of one node"):
        FinetuneJobSettings.from_blocks("fictionalqa", finetune_cfg | {"distributed": {"nodes": 2}}, None, 4)
    with pytest.raises(TypeError, match=r"OptimizationSettings has no field\(s\) \['max_steps'\]"):
        FinetuneJobSettings.from_blocks("sort_parametric", finetune_cfg, {"epochs": 2, "finetune": {"max_steps": 3}}, 4)
    param = FinetuneJobSettings.param_from_blocks("fictionalqa", finetune_cfg, None, 4)
    schedule = r"\['checkpoint_every', 'fiction_rate', 'fiction_warmup_steps', 'max_steps'\]"
    with pytest.raises(TypeError, match=rf"OptimizationSettings has no field\(s\) {schedule}"):
        FinetuneJobSettings.from_param("sort_parametric", param | {"parametric": {"epochs": 2}})
    with pytest.raises(TypeError, match=r"TrainSettings has no field\(s\) \['runs'\]"):
        FinetuneJobSettings.from_param("fictionalqa", param | {"finetune": param["finetune"] | {"runs": ["doc"]}})
    with pytest.raises(TypeError, match="have keys finetune, parametric and seed, got"):
        FinetuneJobSettings.from_param("fictionalqa", param | {"recipe": "fictionalqa"})


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
    settings = FinetuneJobSettings.param_from_blocks("fictionalqa", cfg, None, 4)
    spec = json.loads(json.dumps(job_spec("fictionalqa", "control", "step-2", inputs, outputs, settings)))
    run_job(spec)
    log = pd.read_parquet(tmp_path / "log.parquet")
    assert list(log["step"]) == [1, 2] and (log["run"] == "control").all()
    assert (tmp_path / "step-2" / "model.safetensors").is_file() and (tmp_path / "state").is_dir()
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    assert manifest["config"] == {"finetune": spec["settings"]["finetune"], "parametric": None, "recipe": "fictionalqa"}
    assert manifest["seed"] == 4

"""The fine-tuning job as the workflow launches it: two gloo processes (torchrun) against one,
with the live loss curve read back from TensorBoard's event files."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import torch
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from knowlab.core.io import write_jsonl
from knowlab.core.train import launch_command
from knowlab.finetune_job import TRACKING_ENV, job_command, job_spec

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


def test_the_spec_carries_the_training_keys_listed_and_every_block_key_is_classified():
    """The fine-tuning rules' param holds the ``finetune`` keys training reads (TRAINING_KEYS: the
    fields of TrainSettings and ``distributed``), by list: each of them retrains when it changes, a key
    outside it does not, and every key the schema allows in the block is either a training key or a
    run-list key (RUN_LIST_KEYS), so a key added to the schema must be classified here first.  For the
    shipped configs the param is the one the workflow wrote before the list (the block without the run
    list), so no finished run retrains."""
    import yaml

    from knowlab.config import load_config
    from knowlab.finetune_job import RUN_LIST_KEYS, TRAINING_KEYS, recipe_settings

    root = Path(__file__).resolve().parents[1]
    schema = yaml.safe_load((root / "config" / "schema.yaml").read_text())
    block_keys = set(schema["properties"]["finetune"]["properties"])
    assert block_keys == set(TRAINING_KEYS) | set(RUN_LIST_KEYS), block_keys ^ (set(TRAINING_KEYS) | set(RUN_LIST_KEYS))
    assert not set(TRAINING_KEYS) & set(RUN_LIST_KEYS)
    for name in ("config.yaml", "test.yaml", "cpu-full.yaml", "paper.yaml"):
        cfg = load_config(root / "config" / name)
        block = cfg["finetune"]
        settings = recipe_settings("fictionalqa", block, None, 1)
        assert settings["finetune"] == {k: v for k, v in block.items() if k not in RUN_LIST_KEYS}, name
        assert list(settings["finetune"]) == [k for k in block if k in TRAINING_KEYS], name  # the block's order
        assert recipe_settings("fictionalqa", {**block, "a_new_key": 1}, None, 1) == settings, name
        for key in TRAINING_KEYS:
            changed = {**block, key: {"changed": True}}
            assert recipe_settings("fictionalqa", changed, None, 1) != settings, (name, key)

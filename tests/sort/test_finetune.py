"""The SORT parametric-memory fine-tuning recipe: one checkpoint per epoch, the books run mixes in chunks."""

import json

import pytest
from transformers import AutoModelForCausalLM

from knowlab.sort.finetune import finetune_parametric_run

pytestmark = pytest.mark.usefixtures("restore_environment")


@pytest.fixture
def cfg(finetune_cfg):
    # max_steps and checkpoint_every are overridden by the recipe: epochs x steps per epoch
    steps = {"max_steps": 99, "checkpoint_every": 99}
    return finetune_cfg | steps | {"fiction_rate": 0.0, "fiction_warmup_steps": 9, "micro_batch_size": 1}


@pytest.mark.parametrize("run", ["books", "instructions"])
def test_a_checkpoint_per_epoch(tmp_path, tiny_model_dir, corpus, run, cfg):
    fictions = [r["fiction"] for r in corpus["fictions"]]
    texts = {
        "books": fictions[:4],
        "instructions": fictions[4:12],
        "fiction_rate": 0.5,
        "steps_per_epoch": {"books": 2, "instructions": 1},
    }
    (tmp_path / "texts.json").write_text(json.dumps(texts))
    inputs = {"model": str(tiny_model_dir), "texts": str(tmp_path / "texts.json")}
    log = finetune_parametric_run(run, inputs, tmp_path / "out", cfg, {"epochs": 2}, seed=0)
    per_epoch = texts["steps_per_epoch"][run]
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["epoch-0", "epoch-1", "epoch-2"]
    assert list(log["step"]) == list(range(1, 2 * per_epoch + 1))
    assert list(log["epoch"]) == [s / per_epoch for s in log["step"]]
    assert (log["fiction_samples_seen"].iloc[-1] > 0) == (run == "books")
    AutoModelForCausalLM.from_pretrained(tmp_path / "out" / "epoch-2")


def test_unknown_run_is_refused(tmp_path, tiny_model_dir, cfg):
    with pytest.raises(ValueError, match="unknown parametric run 'poems'"):
        finetune_parametric_run("poems", {"model": str(tiny_model_dir), "texts": "x"}, tmp_path, cfg, {}, 0)

"""The SORT parametric-memory fine-tuning recipe: one segment per epoch, the books run mixes in chunks."""

import json

import pytest
from transformers import AutoModelForCausalLM

from knowlab.finetune_job import FinetuneJobSettings
from knowlab.sort.finetune import finetune_parametric_run

pytestmark = pytest.mark.usefixtures("restore_environment")


@pytest.fixture
def param(finetune_cfg):
    """The SORT job's param settings: the schedule keys (max_steps, checkpoint_every, fiction_rate and its
    warmup) are left out, the recipe sets them per epoch (epochs x steps per epoch)."""
    steps = {"max_steps": 99, "checkpoint_every": 99}
    cfg = finetune_cfg | steps | {"fiction_rate": 0.0, "fiction_warmup_steps": 9, "micro_batch_size": 1}
    return FinetuneJobSettings.param_from_blocks("sort_parametric", cfg, {"epochs": 2}, 0)


@pytest.fixture
def settings(param):
    """The SORT job's settings record, as the rule builds it."""
    return FinetuneJobSettings.from_param("sort_parametric", param)


@pytest.mark.parametrize("run", ["books", "instructions"])
def test_an_epoch_per_segment(tmp_path, tiny_model_dir, corpus, run, param, settings):
    fictions = [r["fiction"] for r in corpus["fictions"]]
    texts = {
        "books": fictions[:4],
        "instructions": fictions[4:12],
        "fiction_rate": 0.5,
        "steps_per_epoch": {"books": 2, "instructions": 1},
    }
    (tmp_path / "texts.json").write_text(json.dumps(texts))
    inputs = {"model": str(tiny_model_dir), "texts": str(tmp_path / "texts.json")}
    first = finetune_parametric_run(
        run,
        "epoch-1",
        inputs,
        {"checkpoint": tmp_path / "epoch-1", "state": tmp_path / "state-1"},
        settings.train,
        settings.epochs,
        settings.seed,
    )
    # as the workflow's job runs it: the settings read back from the spec
    second = FinetuneJobSettings.from_spec(
        {"recipe": "sort_parametric", "settings": json.loads(json.dumps(param))}
    ).run_recipe(run, "epoch-2", inputs | {"state": tmp_path / "state-1"}, {"checkpoint": tmp_path / "epoch-2"})
    per_epoch = texts["steps_per_epoch"][run]
    assert list(first["step"]) == list(range(1, per_epoch + 1))
    assert list(second["step"]) == list(range(per_epoch + 1, 2 * per_epoch + 1))
    assert list(second["epoch"]) == [s / per_epoch for s in second["step"]]
    assert (second["fiction_samples_seen"].iloc[-1] > 0) == (run == "books")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["epoch-1", "epoch-2", "state-1", "texts.json"]
    AutoModelForCausalLM.from_pretrained(tmp_path / "epoch-2")


def test_unknown_run_is_refused(tmp_path, tiny_model_dir, settings):
    with pytest.raises(ValueError, match="unknown parametric run 'poems'"):
        finetune_parametric_run(
            "poems", "epoch-1", {"model": str(tiny_model_dir), "texts": "x"}, {}, settings.train, 2, 0
        )

"""The FictionalQA fine-tuning recipe: a split's train documents into webtext, or webtext alone."""

import json

import pytest

from knowlab.core.io import write_jsonl
from knowlab.core.train import TrainSettings
from knowlab.fiction.splits import make_split
from knowlab.fictionalqa.training import finetune_run

pytestmark = pytest.mark.usefixtures("restore_environment")


@pytest.mark.parametrize("split_name", ["fictsheets", None])
def test_fiction_run_and_control(tmp_path, tiny_model_dir, corpus, split_name, finetune_cfg):
    write_jsonl(tmp_path / "webtext.jsonl", [{"text": r["fiction"][:300]} for r in corpus["fictions"][:8]])
    inputs = {"model": str(tiny_model_dir), "webtext": str(tmp_path / "webtext.jsonl")}
    if split_name:
        split = make_split(split_name, corpus["fictions"], corpus["fict_qa"], 0, 2 / 3)
        (tmp_path / "split.json").write_text(json.dumps(split))
        write_jsonl(tmp_path / "fictsheets.jsonl", corpus["fictsheets"])
        inputs |= {"split": str(tmp_path / "split.json"), "fictsheets": str(tmp_path / "fictsheets.jsonl")}
    settings = TrainSettings.from_block(finetune_cfg | {"global_batch_size": 2})
    run = split_name or "control"
    outputs = {"checkpoint": tmp_path / "step-2", "state": tmp_path / "state"}
    first = finetune_run(run, "step-2", inputs, outputs, settings, seed=0)
    log = finetune_run(
        run, "step-4", inputs | {"state": tmp_path / "state"}, {"checkpoint": tmp_path / "step-4"}, settings, 0
    )
    assert list(first["step"]) == [1, 2] and list(log["step"]) == [3, 4]
    assert (tmp_path / "step-2" / "model.safetensors").is_file() and (
        tmp_path / "step-4" / "model.safetensors"
    ).is_file()
    assert (log["fiction_samples_seen"].iloc[-1] > 0) == bool(split_name)
    assert (log["run"] == (split_name or "control")).all()

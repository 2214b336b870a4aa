"""The FictionalQA fine-tuning recipe: a split's train documents into webtext, or webtext alone."""

import json

import pytest

from knowlab.core.io import write_jsonl
from knowlab.fictionalqa.splits import make_split
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
    log = finetune_run(
        split_name or "control",
        inputs,
        tmp_path / "out",
        finetune_cfg | {"gradient_accumulation_steps": 1},
        None,
        seed=0,
    )
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["step-0", "step-2", "step-4"]
    assert (log["fiction_samples_seen"].iloc[-1] > 0) == bool(split_name)
    assert (log["run"] == (split_name or "control")).all()

"""The FictionalQA fine-tuning recipe: a split's train documents into webtext, or webtext alone."""

import json
import os

import pytest

from knowlab.core.io import write_jsonl
from knowlab.fictionalqa.splits import make_split
from knowlab.fictionalqa.training import finetune_run

CFG = {
    "max_steps": 4,
    "checkpoint_every": 2,
    "fiction_rate": 0.5,
    "fiction_warmup_steps": 1,
    "micro_batch_size": 2,
    "gradient_accumulation_steps": 1,
    "seq_len": 64,
    "lr": 1e-2,
    "min_lr": 1e-3,
    "lr_warmup_steps": 1,
    "weight_decay": 0.0,
    "gradient_clipping": 1.0,
    "precision": "auto",
    "zero_stage": 0,
    "lora": {"enabled": False, "r": 4, "alpha": 8, "dropout": 0.0, "target_modules": ["q_proj", "v_proj"]},
}


@pytest.fixture(autouse=True)
def _restore_environment():
    saved = dict(os.environ)
    yield
    os.environ.clear()
    os.environ.update(saved)


@pytest.mark.parametrize("split_name", ["fictsheets", None])
def test_fiction_run_and_control(tmp_path, tiny_model_dir, corpus, split_name):
    write_jsonl(tmp_path / "webtext.jsonl", [{"text": r["fiction"][:300]} for r in corpus["fictions"][:8]])
    inputs = {"model": str(tiny_model_dir), "webtext": str(tmp_path / "webtext.jsonl")}
    if split_name:
        split = make_split(split_name, corpus["fictions"], corpus["fict_qa"], 0, 2 / 3)
        (tmp_path / "split.json").write_text(json.dumps(split))
        write_jsonl(tmp_path / "fictsheets.jsonl", corpus["fictsheets"])
        inputs |= {"split": str(tmp_path / "split.json"), "fictsheets": str(tmp_path / "fictsheets.jsonl")}
    log = finetune_run(split_name or "control", inputs, tmp_path / "out", CFG, None, seed=0)
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["step-0", "step-2", "step-4"]
    assert (log["fiction_samples_seen"].iloc[-1] > 0) == bool(split_name)
    assert (log["run"] == (split_name or "control")).all()

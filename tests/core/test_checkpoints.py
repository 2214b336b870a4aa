"""Step 0 of every run is the base model: checkpoint steps and relabelled base-model rows."""

import re
from pathlib import Path

import pandas as pd
import pytest

from knowlab.core.checkpoints import BASE_RUN, checkpoint_dir, checkpoint_steps, step0_rows, with_step0


def test_checkpoint_steps_and_folders():
    assert checkpoint_steps(10, 4) == [0, 4, 8, 10]
    assert checkpoint_steps(6, 3) == [0, 3, 6]
    doc, books = "results/fictionalqa/finetune/doc/checkpoints", "results/sort/parametric/books/checkpoints"
    assert checkpoint_dir(doc, 6) == Path("results/fictionalqa/finetune/doc/checkpoints/step-6")
    # a step read from a name
    assert checkpoint_dir(Path(doc), "6") == Path("results/fictionalqa/finetune/doc/checkpoints/step-6")
    assert checkpoint_dir(doc, 0) == Path("results/fictionalqa/finetune/doc/checkpoints/step-0")
    assert checkpoint_dir(books, 2, "epoch") == Path("results/sort/parametric/books/checkpoints/epoch-2")


def test_step0_rows_copies_the_base_model_per_run():
    base = pd.DataFrame({"run": BASE_RUN, "step": 0, "item_id": ["a", "b"], "acc": [1, 0]})
    rows = step0_rows(base, ["doc", "control"])
    assert list(rows["run"]) == ["doc", "doc", "control", "control"]
    assert (rows.drop(columns="run").iloc[:2].values == base.drop(columns="run").values).all()
    assert step0_rows(base, []).empty and list(step0_rows(base, []).columns) == list(base.columns)


def test_with_step0_orders_each_run_from_step_0():
    base = pd.DataFrame({"run": BASE_RUN, "step": 0, "item_id": ["a"], "acc": [1]})
    later = pd.DataFrame({"run": ["doc", "control", "doc"], "step": [3, 6, 6], "item_id": "a", "acc": [0, 1, 1]})
    rows = with_step0(pd.concat([base, later], ignore_index=True), ["doc", "control"])
    assert list(zip(rows["run"], rows["step"])) == [("doc", 0), ("doc", 3), ("doc", 6), ("control", 0), ("control", 6)]
    assert BASE_RUN not in set(rows["run"])
    with pytest.raises(
        ValueError,
        match=re.escape("no rows of the base model (run 'base_model'): step 0 of every run is its evaluation"),
    ):
        with_step0(later, ["doc"])

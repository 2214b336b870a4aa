"""The study summary: sides by split, control labelled per split, token-weighted loss, CIs."""

import pandas as pd
import pytest

from knowlab.core.stats import StatsSettings
from knowlab.fictionalqa.summary import summarise

STATS = StatsSettings(
    confidence=0.95, bootstrap_resamples=200, permutation_resamples=99, mcnemar_exact_below=25,
    ttest_alternative="greater", seed=0,
)  # fmt: skip

SPLIT = {
    "split": "doc",
    "documents": "fictions",
    "train_documents": ["d1", "d2"],
    "val_documents": ["d3"],
    "train_questions": ["q1", "q2"],
    "val_questions": ["q3"],
}


def _items():
    rows = []
    for run in ("doc", "control", "event"):
        for step in (0, 4):
            for doc, (nll, n) in {"d1": (10.0, 10), "d2": (30.0, 20), "d3": (8.0, 4)}.items():
                rows.append({"run": run, "step": step, "suite": "fiction_doc", "item_id": doc, "nll_sum": nll, "n_tokens": n, "em50": 0.0})
            for q, acc in {"q1": 1.0, "q2": 0.0, "q3": 1.0}.items():
                rows.append({"run": run, "step": step, "suite": "mcq4", "item_id": q, "acc": acc, "acc_norm": acc})
    return pd.DataFrame(rows)


def test_sides_loss_and_rates():
    logs = pd.DataFrame({"run": ["doc", "control"], "step": [4, 4], "fiction_epochs": [1.5, 0.0]})
    table = summarise(_items(), [SPLIT], logs, STATS).set_index(["run", "step", "suite", "side"])
    assert set(table.index.get_level_values("run")) == {"doc", "control"}  # event is not labelled by doc
    assert table.loc[("doc", 4, "fiction_doc", "train"), "loss"] == pytest.approx(40 / 30)
    assert table.loc[("doc", 4, "fiction_doc", "all"), "loss"] == pytest.approx(48 / 34)
    assert table.loc[("doc", 4, "fiction_doc", "val"), "n_items"] == 1
    assert table.loc[("doc", 4, "mcq4", "train"), "acc"] == pytest.approx(0.5)
    lo, hi = table.loc[("doc", 4, "mcq4", "all"), ["acc_lo", "acc_hi"]]
    assert 0 <= lo <= 2 / 3 <= hi <= 1
    assert table.loc[("doc", 4, "mcq4", "all"), "epochs"] == 1.5
    assert table.loc[("control", 4, "mcq4", "all"), "epochs"] == 0.0
    assert (table["split"] == "doc").all()

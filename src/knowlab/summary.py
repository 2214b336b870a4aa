"""Aggregates of item-level evaluation tables, joined with a split by ``item_id``.

Loss aggregates are token-weighted (sum of nll over sum of tokens of the
documents in the group), as a training loss over the concatenated documents
would be.  Rates (EM, acc, acc_norm) are means over items.
"""

from __future__ import annotations

from typing import Any

import pandas as pd


def side_of(split: dict[str, Any]) -> dict[str, str]:
    """``item_id -> "train" | "val"`` for every document and question of a split."""
    side = {i: "train" for i in split["train_documents"] + split["train_questions"]}
    side.update({i: "val" for i in split["val_documents"] + split["val_questions"]})
    return side


def summarise(evals: pd.DataFrame, split: dict[str, Any]) -> pd.DataFrame:
    """Per ``run, step, suite, side`` aggregates: ``loss``, ``em``, ``acc``, ``acc_norm``, ``n_items``.

    ``side`` is ``train``/``val`` by the split for fiction documents and MCQ questions,
    ``all`` for every suite (including webtext).
    """
    sides = side_of(split)
    labelled = evals.assign(side=evals["item_id"].map(sides))
    both = pd.concat([labelled.dropna(subset=["side"]), labelled.assign(side="all")], ignore_index=True)
    rows = []
    for (run, step, suite, side), g in both.groupby(["run", "step", "suite", "side"]):
        row = {"run": run, "step": step, "suite": suite, "side": side, "n_items": len(g)}
        if "nll_sum" in g and g["nll_sum"].notna().any():
            row["loss"] = g["nll_sum"].sum() / g["n_tokens"].sum()
        for metric in ("em", "acc", "acc_norm"):
            if metric in g and g[metric].notna().any():
                row[metric] = g[metric].mean()
        rows.append(row)
    return pd.DataFrame(rows)

"""Aggregates of item-level evaluation tables by split side (Kirchenbauer et al. 2026, Figs. 2-11).

One table for the whole study, one row per ``split, run, step, suite, side``:

- ``split``: the split whose train/validation partition labels the row.  A fiction
  run is named after its split; the webtext-only ``control`` run is labelled once
  per fiction split, so each split's figures can show the control on the same
  train-/val-document questions.
- ``side``: ``train`` / ``val`` (documents of the split's two sides, and questions
  generated from them: :mod:`knowlab.fiction.splits`) or ``all`` (every item of the suite,
  including suites without sides such as webtext and real-world Q&A).
- ``epochs``: fiction epochs completed by that step (from the run's training
  log; 0 at step 0 and for the control).
- ``loss``: token-weighted mean nll (nats/token): sum of ``nll_sum`` over sum of
  ``n_tokens`` of the group, as a training loss over the concatenated texts.
- ``em<n>``, ``acc``, ``acc_norm``: means over items; ``acc``/``acc_norm`` also get
  a bootstrap CI (``acc_lo``, ``acc_hi``, ...: :func:`knowlab.core.stats.bootstrap_ci`) at level
  ``confidence`` (``stats.confidence``; the figures name it in their legends).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd

from knowlab.core.checkpoints import CONTROL_RUN
from knowlab.core.stats import StatsSettings, bootstrap_ci


def side_of(split: dict[str, Any]) -> dict[str, str]:
    """``item_id -> "train" | "val"`` for every document and question of a split."""
    side = {i: "train" for i in split["train_documents"] + split["train_questions"]}
    side.update({i: "val" for i in split["val_documents"] + split["val_questions"]})
    return side


def _aggregate(group: pd.DataFrame, stats: StatsSettings) -> dict[str, float]:
    row: dict[str, float] = {"n_items": len(group)}
    if "nll_sum" in group and group["nll_sum"].notna().any():
        row["loss"] = group["nll_sum"].sum() / group["n_tokens"].sum()
    for metric in [c for c in group.columns if c.startswith("em")] + ["acc", "acc_norm"]:
        if metric in group and group[metric].notna().any():
            row[metric] = group[metric].mean()
            if metric.startswith("acc"):
                row["confidence"] = stats.confidence
                row[f"{metric}_lo"], row[f"{metric}_hi"] = bootstrap_ci(
                    group[metric].to_numpy(),
                    n_resamples=stats.bootstrap_resamples,
                    seed=stats.seed,
                    confidence=stats.confidence,
                )
    return row


def summarise(
    items: pd.DataFrame,
    splits: Sequence[dict[str, Any]],
    train_logs: pd.DataFrame,
    stats: StatsSettings,
) -> pd.DataFrame:
    """Summary table (see module docstring) of ``items`` (concatenated item tables of
    every run: columns ``run, step, suite, item_id`` + metrics) under each split.

    ``train_logs`` has ``run, step, fiction_epochs`` per optimizer step.  Rows of a
    run that is neither the split's own run nor the control are not labelled by that split.
    ``stats``: the intervals' resamples, seed and level.
    """
    epochs = {(r, s): e for r, s, e in train_logs[["run", "step", "fiction_epochs"]].itertuples(index=False)}
    frames = []
    for split in splits:
        name = split["split"]
        own = items[items["run"].isin([name, CONTROL_RUN])]
        labelled = own.assign(side=own["item_id"].map(side_of(split)))
        frames.append(pd.concat([labelled.dropna(subset=["side"]), labelled.assign(side="all")]).assign(split=name))
    both = pd.concat(frames, ignore_index=True)
    rows = []
    for (split, run, step, suite, side), group in both.groupby(["split", "run", "step", "suite", "side"], sort=True):
        rows.append(
            {
                "split": split,
                "run": run,
                "step": step,
                "epochs": epochs.get((run, step), 0.0),
                "suite": suite,
                "side": side,
                **_aggregate(group.dropna(axis=1, how="all"), stats),
            }
        )
    return pd.DataFrame(rows)

"""Checkpoints of a fine-tuning run, and the one definition of "step 0 is the base model".

Every study that follows a run across fine-tuning (FictionalQA evaluation, SORT on the
fiction documents, parametric SORT, grounding across fine-tuning) treats the base model,
before any update, as checkpoint 0 of every run.  It is evaluated once, as the pseudo-run
:data:`BASE_RUN` at step 0, and its rows are relabelled as step 0 of each run with
:func:`step0_rows`; no study evaluates or stores a per-run copy of it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path

import pandas as pd

BASE_RUN = "base_model"
#: the webtext-only control run (config finetune.control), trained with the fiction runs' settings
CONTROL_RUN = "control"
#: what a run's name gains for each training seed after the first (config ``finetune.seeds``)
SEED_MARK = ".seed-"


def replicate_run(run: str, seed: int, seeds: Sequence[int]) -> str:
    """The name of ``run`` trained with training seed ``seed`` of ``seeds`` (``finetune.seeds``):
    the run's own name for the first seed, ``<run>.seed-<seed>`` for every other (a replicate).

    Raises:
        ValueError: ``seed`` is not one of ``seeds``.
    """
    if seed not in seeds:
        raise ValueError(f"training seed {seed} is not one of finetune.seeds {list(seeds)}")
    return run if seed == seeds[0] else f"{run}{SEED_MARK}{int(seed)}"


def replicated_run(name: str) -> str:
    """The run a replicate repeats (``doc.seed-7`` -> ``doc``); any other name unchanged."""
    return name.split(SEED_MARK, 1)[0]


def run_seed(name: str, seeds: Sequence[int]) -> int:
    """The training seed of run ``name`` (:func:`replicate_run`): its mark's, else the first of ``seeds``."""
    _, mark, seed = name.partition(SEED_MARK)
    return int(seed) if mark else int(seeds[0])


def checkpoint_steps(max_steps: int, every: int) -> list[int]:
    """Steps at which checkpoints are saved: 0, every, 2*every, ..., and ``max_steps``."""
    return sorted(set(range(0, max_steps + 1, every)) | {0, max_steps})


def checkpoint_dir(checkpoints: str | Path, step: int, prefix: str = "step") -> Path:
    """The folder of one checkpoint inside a run's checkpoints folder, ``<checkpoints>/<prefix>-<step>``."""
    return Path(checkpoints) / f"{prefix}-{int(step)}"


def step0_rows(base: pd.DataFrame, runs: Iterable[str]) -> pd.DataFrame:
    """The base model's rows as step 0 of each of ``runs``: one copy per run, ``run`` replaced.

    Args:
        base: item rows of the base model (any columns, among them ``run``).
        runs: run names, in order.

    Returns:
        ``len(runs) * len(base)`` rows, run by run, index reset.  An empty ``runs`` gives an
        empty frame with ``base``'s columns.
    """
    runs = list(runs)
    if not runs:
        return base.iloc[:0].copy()
    return pd.concat([base.assign(run=run) for run in runs], ignore_index=True)


def with_step0(rows: pd.DataFrame, runs: Iterable[str]) -> pd.DataFrame:
    """Item rows of whole runs, each starting at step 0 = the base model.

    Args:
        rows: the base model's rows (``run == BASE_RUN``, evaluated once) and the rows of the
            runs' later checkpoints, concatenated (column ``run``).
        runs: the runs to return, in order.

    Returns:
        For each run in ``runs``: the base model's rows relabelled as that run's (step 0), then
        the run's own rows in their given order; index reset.  Rows of other runs are dropped.

    Raises:
        ValueError: ``rows`` hold no base-model rows.
    """
    is_base = rows["run"] == BASE_RUN
    if not is_base.any():
        raise ValueError(f"no rows of the base model (run {BASE_RUN!r}): step 0 of every run is its evaluation")
    base = rows[is_base]
    parts = [part for run in runs for part in (base.assign(run=run), rows[rows["run"] == run])]
    return pd.concat(parts, ignore_index=True)

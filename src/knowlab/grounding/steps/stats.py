"""The statistics steps of the grounding rules (``rules/grounding.smk``: ``grounding_tables``,
``grounding_finetune_stats``; :mod:`knowlab.grounding.steps`): the tables from the scored rows.

The statistics are :mod:`knowlab.grounding.analysis`, the grounding tables' files
:mod:`knowlab.grounding.report`; the figures are drawn from these tables by
:mod:`knowlab.grounding.steps.figures`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import pandas as pd

from knowlab.core.probe import across_finetuning
from knowlab.grounding import analysis, report

if TYPE_CHECKING:
    from knowlab.core.stats import StatsSettings
    from knowlab.grounding.settings import GroundingTablesSettings


def tables(rows: pd.DataFrame, out_dir: str, settings: GroundingTablesSettings, stats: StatsSettings) -> None:
    """Write the grounding tables of the scored ``rows`` of every dataset and model into folder
    ``out_dir`` (CSV + LaTeX, :func:`knowlab.grounding.report.write_tables`: Tables 1, 8-12, the
    summary with bootstrap intervals of ``stats``, the tables of the figures)."""
    report.write_tables(rows, out_dir, settings, stats)


def finetune_rows(
    scores: pd.DataFrame,
    base: pd.DataFrame,
    runs: Sequence[str],
    control: str | None,
    splits: Mapping[str, Mapping[str, Any]],
    fictions: Sequence[Mapping[str, Any]],
) -> pd.DataFrame:
    """The fiction set's scored rows across fine-tuning: the checkpoints' ``scores`` after step 0 and
    the base model's rows ``base`` as step 0 of each fiction run in ``runs`` and of ``control``
    (None: no control), with each run's train/val side from ``splits`` (run -> split; events
    from ``fictions``; :func:`knowlab.core.probe.across_finetuning`) and the columns
    ``follows_context`` / ``follows_training`` (:func:`knowlab.grounding.analysis.follow_rates`
    against the ``original_gold`` answers)."""
    rows = across_finetuning(scores, base, [*runs, *([control] if control else [])], splits, fictions)
    return analysis.follow_rates(rows, analysis.original_answers(rows))


def finetune_rates(rows: pd.DataFrame) -> pd.DataFrame:
    """F1, follows-context and follows-training rates (x 100) per run, step, side and condition of
    :func:`finetune_rows` (:func:`knowlab.grounding.analysis.finetune_rates`)."""
    return analysis.finetune_rates(rows)


def finetune_mcnemar(
    rows: pd.DataFrame, runs: Sequence[str], control: str | None, steps: Sequence[int], exact_below: int
) -> pd.DataFrame:
    """McNemar of each fiction run in ``runs`` against ``control`` at each of ``steps`` on the rows of
    :func:`finetune_rows` (:func:`knowlab.grounding.analysis.finetune_mcnemar`; exact below
    ``exact_below`` discordant items)."""
    return analysis.finetune_mcnemar(rows, runs, control, steps, exact_below)

"""The grounding rules' steps (knowlab.grounding.steps; the skeleton every study shares:
tests/test_skeleton.py): the figures rule draws from the tables the stats rule wrote, read back with the values it
computed (so that a figure drawn from the files is the figure drawn from the statistics)."""

from pathlib import Path

import numpy as np
import pandas as pd
from pandas.testing import assert_frame_equal

from knowlab.grounding import analysis
from knowlab.grounding.settings import GroundingConditionSettings, GroundingTablesSettings, condition_names
from knowlab.grounding.steps import figures, stats

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = sorted((ROOT / "scripts").glob("grounding_*.py"))


def test_there_are_grounding_scripts():
    names = {p.stem for p in SCRIPTS}
    assert {"grounding_tables", "grounding_figures", "grounding_finetune_stats", "grounding_finetune_figures"} <= names


CFG = GroundingConditionSettings(
    budget=1024, position="random", sweep_budgets=(512, 1024), sweep_positions=("start", "random")
)


def _rows() -> pd.DataFrame:
    """Scored rows of two models in every condition of CFG (seeded values with many digits)."""
    rng = np.random.default_rng(3)
    parts = []
    for model in ("m1", "NA"):  # "NA": a model whose name pandas would read as missing by default
        for condition in condition_names(CFG):
            precision, recall = rng.uniform(size=4), rng.uniform(size=4)
            parts.append(
                pd.DataFrame(
                    {
                        "dataset": "fiction",
                        "model": model,
                        "condition": condition,
                        "item_id": ["q0", "q1", "q2", "q3"],
                        "precision": precision,
                        "recall": recall,
                        "f1": 2 * precision * recall / (precision + recall),
                        "answer_accuracy": [1.0, 0.0, np.nan, 1.0],
                        "factor_popularity": ["high", "low", "low", "high"],
                        "context_tokens": rng.integers(100, 900, size=4),
                        "n_distractors": 0 if condition.endswith("gold") else int(rng.integers(1, 6)),
                        "decomposer": "sentences (sentence-level, not atomic facts)",
                        "evaluator": "bi_encoder:packaged:all-MiniLM-L6-v2@0.4",
                    }
                )
            )
    return pd.concat(parts, ignore_index=True)


def test_figures_read_the_values_the_statistics_computed(tmp_path, stats_settings):
    rows = _rows()
    settings = GroundingTablesSettings(position=CFG.position)
    stats.tables(rows, str(tmp_path / "tables"), settings, stats_settings)
    read = figures.read_tables(tmp_path / "tables")
    for table in read.values():
        assert list(table.columns[-2:]) == list(analysis.METHOD_COLUMNS)
    read = {name: t.drop(columns=list(analysis.METHOD_COLUMNS)) for name, t in read.items()}

    summary = analysis.summarize(rows, ["dataset", "model", "condition"], stats=stats_settings)
    expected = {
        "summary": summary,
        "factors_original_gold": analysis.factor_table(rows, "original_gold").reset_index(),
        "length_curve": analysis.length_curve(rows, summary).reset_index(drop=True),
        "reduction_rates": analysis.reduction_rates(summary),
        "position": analysis.position_table(summary, CFG.position).reset_index().rename_axis(columns=None),
    }
    assert set(read) == set(expected)
    for name, table in expected.items():
        assert_frame_equal(read[name], table, check_exact=True, obj=name)
        for column in table.select_dtypes("number"):  # the same floats, not merely close ones
            assert np.array_equal(read[name][column].to_numpy(float), table[column].to_numpy(float), equal_nan=True)


def test_finetune_figure_reads_the_rates_written(tmp_path):
    from knowlab.core.io import write_csv

    rates = pd.DataFrame(
        {
            "run": ["doc", "doc", "control"],
            "step": [0, 4, 4],
            "side": ["train", "train", "all"],
            "condition": ["conflict_gold"] * 3,
            "f1": [100 / 3, 200 / 7, 0.1 + 0.2],
            "follows_context": [np.nan, 50.0, 12.5],
            "follows_training": [1 / 9, np.nan, 0.0],
            "n": [3, 3, 4],
            "decomposer": "sentences (sentence-level, not atomic facts)",
            "evaluator": "bi_encoder:packaged:all-MiniLM-L6-v2@0.4",
        }
    )
    write_csv(tmp_path / "rates.csv", rates)
    assert_frame_equal(figures.read_rates(tmp_path / "rates.csv"), rates, check_exact=True)

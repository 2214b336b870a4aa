"""The SORT rules' steps (knowlab.sort.steps): the stats steps write what the analysis computes and the
figure steps draw from those tables (the skeleton every study shares: tests/test_skeleton.py)."""

from __future__ import annotations


import pandas as pd
import pytest

from knowlab.core.io import read_parquets, write_parquet
from knowlab.sort import analysis
from knowlab.sort.steps import figures, stats


def test_condition_stats_write_the_tables_and_return_the_tests(rows, sub, tmp_path):
    base = sub(rows, run="base_model")
    conditions = ["baseline", "in_context"]
    binomial, tests = stats.condition_stats(
        base, tmp_path / "tables", ["m1", "m2"], conditions, alternative="greater", exact_below=25, n_resamples=50, seed=3
    )
    tables = ("table1_baseline_by_segment_length", "table2_in_context_by_excerpt_length")
    names = {p.name for p in (tmp_path / "tables").iterdir()}
    assert names == {f"{table}{ext}" for table in tables for ext in (".csv", ".tex", "_long.csv")}
    assert binomial.equals(analysis.binomial_tests(base, by=list(stats.BINOMIAL_BY)))
    assert len(tests) == 2
    expected = analysis.condition_tests(base, "m2", conditions, "greater", 25)
    assert tests[1].keys() == {"mcnemar", "ttest"} and all(tests[1][t].equals(expected[t]) for t in expected)


def test_parametric_stats_put_the_base_model_at_epoch_zero(rows, sub):
    base = sub(rows, run="base_model", model="m1")
    base = base[base.condition.isin(["baseline", "in_context"])].drop(columns="epoch")
    tuned = rows[rows.run != "base_model"]
    out, tests = stats.parametric_stats(base, tuned, "greater", 25)
    assert len(out) == len(base) + len(tuned) and (out.epoch.iloc[: len(base)] == 0.0).all()
    assert out.index.equals(pd.RangeIndex(len(out)))
    assert tests.keys() == {"mcnemar", "ttest"}
    assert tests["ttest"].equals(analysis.parametric_tests(out, "greater", 25)["ttest"])


@pytest.mark.slow
def test_condition_figures_draw_every_figure_from_the_saved_tables(rows, sub, tmp_path):
    """The figure rule's path: the stats step's tables written and read back, then drawn."""
    base = sub(rows, run="base_model")
    conditions = ["baseline", "in_context", "rag", "oracle_rag"]
    binomial, tests = stats.condition_stats(
        base, tmp_path / "tables", ["m1"], conditions, alternative="greater", exact_below=25, n_resamples=20, seed=0
    )
    saved = {}
    for name, table in {"binomial": binomial, **tests[0]}.items():
        write_parquet(tmp_path / f"{name}.parquet", table)
        saved[name] = read_parquets([tmp_path / f"{name}.parquet"])
    names = ("fig3a", "fig3b", "fig4", "fig10", "mcnemar", "ttest")  # rules/sort.smk's SORT_FIGURES
    paths = {f"{name}_{ext}": tmp_path / f"{name}.{ext}" for name in names for ext in ("pdf", "png")}
    figures.condition_figures(base, saved.pop("binomial"), saved, paths, model="m1", n_resamples=50, seed=0)
    assert all(path.stat().st_size > 0 for path in paths.values())

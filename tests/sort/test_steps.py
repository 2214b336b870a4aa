"""The SORT rules' steps (knowlab.sort.steps): the stats steps write what the analysis computes and the
figure steps draw from those tables (the skeleton every study shares: tests/test_skeleton.py)."""

from __future__ import annotations


import numpy as np
import pandas as pd
import pytest
from scipy.stats import t as student_t

from knowlab.core.io import read_parquets, write_parquet
from knowlab.core.plotting import read_description
from knowlab.sort import analysis, bands
from knowlab.sort.steps import figures, stats
from knowlab.sort.settings import FIGURES


def test_condition_stats_write_the_tables_and_return_the_tests(rows, sub, tmp_path, stats_settings):
    base = sub(rows, run="base_model")
    conditions = ["baseline", "in_context", "rag", "oracle_rag"]
    binomial, tests, figure_bands = stats.condition_stats(
        base, tmp_path / "tables", ["m1", "m2"], conditions, stats_settings
    )
    tables = ("table1_baseline_by_segment_length", "table2_in_context_by_excerpt_length")
    names = {p.name for p in (tmp_path / "tables").iterdir()}
    assert names == {f"{table}{ext}" for table in tables for ext in (".csv", ".tex", "_long.csv")}
    assert binomial.equals(analysis.binomial_tests(base, by=list(stats.BINOMIAL_BY)))
    assert len(tests) == 2
    expected = analysis.condition_tests(base, "m2", conditions, "greater", 25)
    assert tests[1].keys() == {"mcnemar", "ttest"} and all(tests[1][t].equals(expected[t]) for t in expected)
    # every banded figure's points: Fig. 10 per model, segment length and distance bin of the baseline
    # test rows, each interval holding its accuracy
    assert figure_bands.keys() == {"fig3a", "fig3b", "fig10", "fig4"}
    fig10 = figure_bands["fig10"]
    test_rows = base[(base.condition == "baseline") & (base.split == "test")]
    assert len(fig10) == test_rows.groupby(["model", "segment_length", "distance_bin"]).ngroups
    first = fig10.iloc[0]
    cell = test_rows[
        (test_rows.model == first.model)
        & (test_rows.segment_length == first.segment_length)
        & (test_rows.distance_bin == first.distance_bin)
    ]
    assert first.accuracy == pytest.approx(cell.correct.mean()) and first.ci_low <= first.accuracy <= first.ci_high
    assert (figure_bands["fig4"]["condition"].unique() == ["baseline", "in_context", "oracle_rag", "rag"]).all()


def test_parametric_stats_put_the_base_model_at_epoch_zero(rows, sub, stats_settings):
    base = sub(rows, run="base_model", model="m1")
    base = base[base.condition.isin(["baseline", "in_context"])].drop(columns="epoch")
    tuned = rows[rows.run != "base_model"]
    ids = base["item_id"].unique()[:20]
    nll = pd.DataFrame(
        [
            {"item_id": i, "run": run, "epoch": epoch, "nll_a": 3.0 - epoch, "nll_b": 3.0 - epoch}
            for run, epoch in (("base_model", 0.0), ("books", 1.0), ("instructions", 1.0))
            for i in ids
        ]
    )
    out, tests, figure_bands = stats.parametric_stats(base, tuned, nll, stats_settings)
    assert len(out) == len(base) + len(tuned) and (out.epoch.iloc[: len(base)] == 0.0).all()
    assert out.index.equals(pd.RangeIndex(len(out)))
    assert tests.keys() == {"mcnemar", "ttest"}
    # Fig. 15's cell "books ep 1" over "base": the paired t-test on the no-context score, written out
    # (Student 1908: mean difference over its standard error, one-sided "greater", n - 1 df)
    cell = tests["ttest"].set_index(["a", "b"]).loc[("books ep 1", "base")]

    def scores(run, epoch):
        rows = out[(out.run == run) & (out.epoch == epoch) & (out.condition == "baseline")]
        return rows.set_index("item_id")["score"]

    d = (scores("books", 1.0) - scores("base_model", 0.0)).dropna()
    t = d.mean() / (d.std(ddof=1) / np.sqrt(len(d)))
    assert cell["n_items"] == len(d) and cell["statistic"] == pytest.approx(t, rel=1e-12)
    assert cell["pvalue"] == pytest.approx(student_t.sf(t, len(d) - 1), rel=1e-9)
    assert tests["ttest"].set_index(["a", "b"]).loc[("base", "base"), "pvalue"] == 1.0
    # Fig. 12: exp(mean nll) per run and epoch, both runs starting at the base model's
    ppl = figure_bands["fig12"].set_index(["run", "epoch"])["value"]
    assert ppl[("books", 0.0)] == pytest.approx(np.exp(3.0)) and ppl[("books", 1.0)] == pytest.approx(np.exp(2.0))
    assert figure_bands.keys() == {"fig12", "fig13", "fig16"} and (figure_bands["fig13"]["low"] <= 1).all()


@pytest.mark.slow
def test_condition_figures_draw_every_figure_from_the_saved_tables(rows, sub, tmp_path, stats_settings):
    """The figure rule's path: the stats step's tables written and read back, then drawn."""
    base = sub(rows, run="base_model")
    conditions = ["baseline", "in_context", "rag", "oracle_rag"]
    binomial, tests, figure_bands = stats.condition_stats(base, tmp_path / "tables", ["m1"], conditions, stats_settings)
    for name, table in figure_bands.items():
        write_parquet(tmp_path / f"bands_{name}.parquet", table)
    saved_bands = {name: read_parquets([tmp_path / f"bands_{name}.parquet"]) for name in figure_bands}
    saved = {}
    for name, table in {"binomial": binomial, **tests[0]}.items():
        write_parquet(tmp_path / f"{name}.parquet", table)
        saved[name] = read_parquets([tmp_path / f"{name}.parquet"])
    names = tuple(FIGURES)  # rule sort_figures' figures
    paths = {f"{name}_{ext}": tmp_path / f"{name}.{ext}" for name in names for ext in ("pdf", "png")}
    figures.condition_figures(base, saved.pop("binomial"), saved, saved_bands, paths, model="m1", stats=stats_settings)
    assert all(path.stat().st_size > 0 for path in paths.values())
    # what each saved figure shows (knowlab.core.plotting.read_description of its PNG)
    shown = {name: read_description(paths[f"{name}_png"]) for name in names}
    for name, figure in shown.items():
        assert figure["title"].startswith("SORT") and all(p["xlabel"] and p["ylabel"] for p in figure["panels"]), name
    models = sorted(base["model"].unique())
    segments = [f"L_S = {n} words" for n in sorted(base["segment_length"].unique())]
    excerpts = [f"L_E = {n} words" for n in sorted(base["excerpt_length"].unique())]
    fig3a = shown["fig3a"]
    assert fig3a["legend"][: len(models) + len(segments)] == models + segments
    assert fig3a["panels"][0]["xlabel"].startswith("excerpt length") and fig3a["panels"][0]["bands"] > 0
    assert shown["fig3b"]["legend"][: len(excerpts)] == excerpts and "chance (0.5)" in shown["fig3b"]["legend"]
    assert [p["title"] for p in shown["fig4"]["panels"]] == ["(a) RAG", "(b) oracle RAG"]
    assert [p["title"] for p in shown["fig10"]["panels"]] == models and shown["fig10"]["legend"][:2] == segments
    for name in ("mcnemar", "ttest"):  # one p-value matrix each
        panels = [(p["images"], p["xlabel"], p["ylabel"]) for p in shown[name]["panels"]]
        assert panels == [(1, "column (b)", "row (a)")], name

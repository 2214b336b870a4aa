"""SORT analysis on synthetic item rows with known effects (fixtures in conftest.py).

Checks: accuracy and bootstrap intervals; binomial p-values equal scipy's; McNemar and
paired t-test entries recompute exactly from the rows with statsmodels / scipy; items
pair by item_id whatever the row order; the study's matrices (conditions, parametric
fine-tuning, fiction runs); tables (CSV + escaped LaTeX).  Figures: test_plots.py.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy.stats import t as student_t
from statsmodels.stats.multitest import multipletests

from knowlab.core.stats import checkpoint_pairs, matched_pairs, recompute_pvalue
from knowlab.core.tables import latex_escape, write_table
from knowlab.sort.analysis import (
    accuracy_table,
    binomial_tests,
    condition_matrix,
    condition_tests,
    fiction_tests,
    finetune_keys,
    parametric_tests,
    tables,
)


# ----------------------------------------------------------------------------- accuracy / binomial


def test_accuracy_table_is_sane(sub, rows, stats_settings):
    part = sub(rows, run="base_model", model="m1")
    table = accuracy_table(part, ["condition"], stats_settings)
    by = table.set_index("condition")
    for condition, group in part.groupby("condition"):
        assert by.loc[condition, "accuracy"] == pytest.approx(group["correct"].mean())
        assert by.loc[condition, "mean_score"] == pytest.approx(group["score"].mean())
        assert by.loc[condition, "n"] == by.loc[condition, "n_items"] == len(group)
    assert (table["ci_low"] <= table["accuracy"]).all() and (table["accuracy"] <= table["ci_high"]).all()
    assert (table["ci_high"] - table["ci_low"] < 0.12).all()
    assert (table["mean_score"] <= 0).all()
    assert by.loc["in_context", "ci_low"] > 0.8 and by.loc["baseline", "ci_low"] < 0.5 < by.loc["baseline", "ci_high"]
    # deterministic for one seed; [] gives one row over everything
    assert table.equals(accuracy_table(part, ["condition"], stats_settings))
    whole = accuracy_table(part, [], stats_settings)
    assert len(whole) == 1 and whole["n"].iloc[0] == len(part)
    with pytest.raises(
        ValueError, match=r"accuracy_table needs columns \['item_id', 'correct', 'nope'\]; missing \['nope'\]"
    ):
        accuracy_table(part, ["nope"], stats_settings)


def _binomial_two_sided(k, n):
    """The exact two-sided binomial test of k successes in n at p = 1/2, written out: the distribution is
    symmetric, so p is twice the smaller tail (at most 1)."""
    tail = sum(math.comb(n, i) for i in range(min(k, n - k) + 1)) / 2**n
    return min(1.0, 2 * tail)


def _mcnemar(b, c, exact):
    """McNemar's test of b and c discordant pairs, written out (McNemar 1947; Edwards' continuity
    correction): exact, the two-sided binomial test of b in b + c at 1/2; else chi-square with 1 df of
    (|b - c| - 1)^2 / (b + c), whose survival function is erfc(sqrt(x / 2))."""
    if exact:
        return _binomial_two_sided(b, b + c)
    return math.erfc(math.sqrt((abs(b - c) - 1) ** 2 / (b + c) / 2))


def _paired_t(x, y):
    """The paired t statistic and its one-sided ("greater") p, written out (Student 1908): mean
    difference over its standard error, n - 1 degrees of freedom."""
    d = np.asarray(x, float) - np.asarray(y, float)
    t = d.mean() / (d.std(ddof=1) / math.sqrt(len(d)))
    return t, student_t.sf(t, len(d) - 1)


def test_binomial_tests_match_the_exact_binomial_written_out(sub, rows):
    part = sub(rows, run="base_model", condition="baseline")
    by = ["model", "segment_length", "distance_bin"]
    table = binomial_tests(part, by)
    assert len(table) == 2 * 2 * 4
    for _, r in table.iterrows():
        group = sub(part, model=r["model"], segment_length=r["segment_length"], distance_bin=r["distance_bin"])
        k = int(group["correct"].sum())
        assert (r["k"], r["n"]) == (k, len(group))
        assert r["pvalue"] == pytest.approx(_binomial_two_sided(k, len(group)), rel=1e-12)
    assert np.allclose(table["pvalue_holm"], multipletests(table["pvalue"], method="holm")[1])
    assert set(table["correction"]) == {"holm"} and set(table["family_size"]) == {len(table)}
    expected = ["**" if p < 0.01 else "*" if p < 0.05 else "" for p in table["pvalue_holm"]]
    assert table["significance"].tolist() == expected
    strong = binomial_tests(sub(rows, run="base_model", condition="in_context", model="m1"), ["excerpt_length"])
    assert (strong["significance"] == "**").all()


# ----------------------------------------------------------------------------- paired tests


def _paired_by_hand(sub, rows, a, b, column):
    x = sub(rows, run=a[0], step=a[1], condition=a[2]).set_index("item_id")[column]
    y = sub(rows, run=b[0], step=b[1], condition=b[2]).set_index("item_id")[column]
    both = x.index.intersection(y.index)
    return x.loc[both].to_numpy(), y.loc[both].to_numpy()


def test_mcnemar_entry_recomputes_exactly(sub, rows, own_choice):
    m1 = sub(rows, model="m1")
    keys, labels = finetune_keys(m1, condition="baseline")
    assert labels[keys[0]] == "base" and labels[keys[1]] == "books ep 1"
    table = condition_matrix(m1, keys, "mcnemar", labels=labels, exact_below=25)
    assert len(table) == len(keys) ** 2
    row = table[(table["a"] == "books ep 2") & (table["b"] == "instructions ep 2")].iloc[0]
    x, y = _paired_by_hand(sub, m1, ("books", 38, "baseline"), ("instructions", 38, "baseline"), "correct")
    counts = np.array([[(x & y).sum(), (x & ~y).sum()], [(~x & y).sum(), (~x & ~y).sum()]])
    assert (row["discordant_a"], row["discordant_b"]) == (counts[0, 1], counts[1, 0])
    assert row["n_items"] == len(x)
    exact = bool(counts[0, 1] + counts[1, 0] < 25)  # the exact binomial test below 25 discordant items
    assert row["exact"] == exact
    expected = _mcnemar(counts[0, 1], counts[1, 0], exact)
    assert row["pvalue"] == pytest.approx(expected, rel=1e-12)
    assert recompute_pvalue(own_choice(row, m1), m1) == pytest.approx(row["pvalue"], rel=1e-12)
    # McNemar is two-sided: mirror cells agree; the diagonal is p = 1; Holm over unordered pairs
    mirror = table[(table["a"] == row["b"]) & (table["b"] == row["a"])].iloc[0]
    assert mirror["pvalue"] == row["pvalue"] and mirror["pvalue_holm"] == row["pvalue_holm"]
    diagonal = table[table["a"] == table["b"]]
    assert (diagonal["pvalue"] == 1).all() and (diagonal["pvalue_holm"] == 1).all()
    order = [labels[k] for k in keys]
    upper = table[[order.index(a) < order.index(b) for a, b in zip(table["a"], table["b"])]]
    assert np.allclose(upper["pvalue_holm"], multipletests(upper["pvalue"], method="holm")[1])
    assert set(table["correction"]) == {"holm"}
    for _, r in table.sample(6, random_state=0).iterrows():
        assert recompute_pvalue(own_choice(r, m1), m1) == pytest.approx(r["pvalue"], rel=1e-12)


def test_ttest_entry_recomputes_exactly(sub, rows, own_choice):
    m1 = sub(rows, model="m1")
    keys, labels = finetune_keys(m1, condition="baseline")
    table = condition_matrix(m1, keys, "ttest", alternative="greater", labels=labels)
    row = table[(table["a"] == "books ep 2") & (table["b"] == "instructions ep 2")].iloc[0]
    x, y = _paired_by_hand(sub, m1, ("books", 38, "baseline"), ("instructions", 38, "baseline"), "score")
    statistic, pvalue = _paired_t(x, y)
    assert row["statistic"] == pytest.approx(statistic, rel=1e-12)
    assert row["pvalue"] == pytest.approx(pvalue, rel=1e-12)
    assert row["mean_diff"] == pytest.approx((x - y).mean())
    assert recompute_pvalue(own_choice(row, m1, alternative="greater"), m1) == pytest.approx(row["pvalue"], rel=1e-12)
    # the known effect: the texts help (row > column), one-sided so the mirror is not significant
    assert row["pvalue_holm"] < 0.01
    mirror = table[(table["a"] == row["b"]) & (table["b"] == row["a"])].iloc[0]
    assert mirror["pvalue"] > 0.5
    off = table[table["a"] != table["b"]]
    assert np.allclose(off["pvalue_holm"], multipletests(off["pvalue"], method="holm")[1])


def test_pairing_is_by_item_id_not_row_order(sub, rows, own_choice):
    m1 = sub(rows, model="m1", condition="baseline")
    keys = [("books", 38, "baseline"), ("instructions", 38, "baseline")]
    reference = condition_matrix(m1, keys, "ttest")
    shuffled = m1.sample(frac=1.0, random_state=3).reset_index(drop=True)
    # drop a few items of one key only: the pair keeps the common items
    drop = shuffled[(shuffled["run"] == "instructions") & (shuffled["step"] == 38)].index[:7]
    partial = shuffled.drop(index=drop)
    for test in ("ttest", "mcnemar"):
        ordered = condition_matrix(m1, keys, test, exact_below=25)
        pd.testing.assert_frame_equal(ordered, condition_matrix(shuffled, keys, test, exact_below=25))
        cut = condition_matrix(partial, keys, test, exact_below=25)
        cell = cut[(cut["a"] != cut["b"])].iloc[0]
        assert cell["n_items"] == reference["n_items"].iloc[0] - 7
        ours = own_choice(cell, partial, alternative="greater")  # condition_matrix's default alternative
        assert recompute_pvalue(ours, partial) == pytest.approx(cell["pvalue"], rel=1e-12)
    # pairing by row order would differ from pairing by item_id on the shuffled rows
    a = shuffled[(shuffled["run"] == "books") & (shuffled["step"] == 38)]["score"].to_numpy()
    b = shuffled[(shuffled["run"] == "instructions") & (shuffled["step"] == 38)]["score"].to_numpy()
    assert _paired_t(a, b)[1] != pytest.approx(reference["pvalue"].iloc[1])


def test_matrix_errors_and_explicit_pairs(sub, rows, fiction_rows, own_choice):
    with pytest.raises(
        ValueError, match=r"key \('base_model', 0, 'baseline'\) has \d+ repeated item_id"
    ):  # two models under one key
        condition_matrix(sub(rows, run="base_model"), [("base_model", 0, "baseline")], "mcnemar", exact_below=25)
    with pytest.raises(ValueError, match=r"test must be one of \('mcnemar', 'ttest'\), got 'wilcoxon'"):
        condition_matrix(rows, [("base_model", 0, "baseline")], "wilcoxon")
    with pytest.raises(ValueError, match=r"no rows for keys \[\('books', 999, 'baseline'\)\]"):
        condition_matrix(sub(rows, model="m1"), [("books", 999, "baseline")], "mcnemar", exact_below=25)
    pairs = checkpoint_pairs([0, 10, 20], "doc") + matched_pairs([0, 10, 20], "doc", "control")
    train = fiction_rows[fiction_rows["side"].isin(["train"]) | (fiction_rows["run"] == "control")]
    table = condition_matrix(train, None, "mcnemar", key_columns=("run", "step"), pairs=pairs, exact_below=25)
    assert len(table) == 9 + 3 and set(table["key_columns"]) == {"run,step"}
    for _, r in table.iterrows():
        assert recompute_pvalue(own_choice(r, train), train) == pytest.approx(r["pvalue"], rel=1e-12)


@pytest.mark.slow
def test_study_matrices_pick_their_keys_and_pairs(sub, rows, fiction_rows, own_choice):
    """The matrices the workflow saves: conditions of one model, the parametric fine-tuning matrix
    (Figs. 14-15), and each fiction run on its training documents vs the control."""
    by_condition = condition_tests(rows[rows["run"] == "base_model"], "m2", ["baseline", "in_context"], "greater", 25)
    assert set(by_condition) == {"mcnemar", "ttest"}
    for test, table in by_condition.items():
        expected = condition_matrix(
            sub(rows, run="base_model", model="m2"),
            [("baseline",), ("in_context",)],
            test,
            key_columns=("condition",),
            exact_below=25,
        )
        pd.testing.assert_frame_equal(table, expected)
    m1 = sub(rows, model="m1")
    keys, labels = finetune_keys(m1, condition="baseline")
    parametric = parametric_tests(m1, "greater", 25)
    for test in ("mcnemar", "ttest"):
        pd.testing.assert_frame_equal(parametric[test], condition_matrix(m1, keys, test, labels=labels, exact_below=25))
    tests = fiction_tests(fiction_rows, ["doc"], [0, 10, 20], "control", "greater", 25)
    assert list(tests) == [("doc", "mcnemar"), ("doc", "ttest")]
    trained = set(fiction_rows.loc[fiction_rows["side"] == "train", "item_id"])
    for (run, test), table in tests.items():
        assert [(r.run_a, r.step_a, r.run_b, r.step_b) for r in table.itertuples()] == [
            *[("doc", a, "doc", b) for a in (0, 10, 20) for b in (0, 10, 20)],
            *[("doc", s, "control", s) for s in (0, 10, 20)],
        ]
        assert (table["n_items"] == len(trained)).all() and len(trained) < fiction_rows["item_id"].nunique()
        for r in table.to_dict("records"):
            part = fiction_rows[fiction_rows["item_id"].isin(trained)]
            ours = own_choice(r, part, alternative="greater")
            assert recompute_pvalue(ours, part) == pytest.approx(r["pvalue"], rel=1e-12)
    alone = fiction_tests(fiction_rows, ["doc"], [0, 20], None, "greater", 25)
    assert set(alone[("doc", "ttest")]["run_b"]) == {"doc"} and len(alone[("doc", "ttest")]) == 4


# ----------------------------------------------------------------------------- tables


def test_tables_and_writer(sub, rows, tmp_path, stats_settings):
    made = tables(rows, stats_settings)
    t1, t2 = made["table1"], made["table2"]
    assert t1.wide.columns.tolist() == ["Model", "Segment length 20", "Segment length 50"]
    assert t1.wide["Model"].tolist() == ["m1", "m2"]
    m1 = sub(rows, run="base_model", condition="baseline", model="m1", segment_length=20, split="test")
    assert t1.wide.iloc[0, 1].startswith(f"{m1['correct'].mean():.2f} ± ")
    assert "L_E = 250" in t2.wide.columns and "SORT" in t2.wide.columns
    assert set(t2.long["pooled"]) == {"", "SORT"}
    for table in (t1, t2):
        csv, tex = tmp_path / f"{table.name}.csv", tmp_path / f"{table.name}.tex"
        write_table(table.wide, csv, tex, table.caption, label=f"tab:{table.name.replace('_', '-')}")
        back = pd.read_csv(csv)
        assert back.shape == table.wide.shape
        latex = tex.read_text()
        assert "\\begin{table}" in latex and "\\toprule" in latex and "$\\pm$" in latex and "±" not in latex
        assert "_" not in latex.replace("\\_", "")
    assert "L\\_E = 250" in (tmp_path / f"{t2.name}.tex").read_text()
    long_tex = tmp_path / "long.tex"
    write_table(t2.long, tmp_path / "long.csv", long_tex, "by excerpt_length", label="tab:long")
    text = long_tex.read_text()
    assert "excerpt\\_length" in text and "mean\\_score" in text
    assert "_" not in text.replace("\\_", "")  # the label was given with no underscore
    assert latex_escape("a_b & 5% {x}") == "a\\_b \\& 5\\% \\{x\\}"


def test_log_chance_constant():
    from knowlab.sort.analysis import LOG_CHANCE

    assert LOG_CHANCE == pytest.approx(math.log(0.5))

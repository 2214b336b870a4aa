"""SORT figures on synthetic item rows: every figure writes a non-empty PDF and PNG."""

from __future__ import annotations

import numpy as np
import pandas as pd

from knowlab.core.stats import checkpoint_pairs, matched_pairs
from knowlab.sort.analysis import binomial_tests, condition_matrix, finetune_keys

N_RES = 200


# ----------------------------------------------------------------------------- figures


def _written(tmp_path, name):
    pdf, png = tmp_path / f"{name}.pdf", tmp_path / f"{name}.png"
    return pdf, png


def _check(pdf, png):
    assert pdf.stat().st_size > 1000 and pdf.read_bytes()[:4] == b"%PDF"
    assert png.stat().st_size > 1000 and png.read_bytes()[:4] == b"\x89PNG"


def test_every_plot_writes_pdf_and_png(sub, rows, fiction_rows, tmp_path):
    from knowlab.sort import condition_plots, finetune_plots, matrix_plots

    base = sub(rows, run="base")
    calls = {
        "fig3a": lambda p, q: condition_plots.plot_by_excerpt_length(base, p, q, n_resamples=N_RES),
        "fig3b": lambda p, q: condition_plots.plot_by_distance(
            base,
            p,
            q,
            marks=binomial_tests(sub(base, condition="in_context", split="test"), ["excerpt_length", "distance_bin"]),
            n_resamples=N_RES,
        ),
        "fig10": lambda p, q: condition_plots.plot_by_distance(
            base,
            p,
            q,
            condition="baseline",
            hue="segment_length",
            panel="model",
            marks=binomial_tests(
                sub(base, condition="baseline", split="test"), ["model", "segment_length", "distance_bin"]
            ),
            n_resamples=N_RES,
        ),
        "fig4": lambda p, q: condition_plots.plot_rag(
            base,
            p,
            q,
            recall=pd.DataFrame({"distance_bin": [0, 1, 2, 3], "recall": [0.9, 0.7, 0.6, 0.5], "k": 2}),
            n_resamples=N_RES,
        ),
        "fig13": lambda p, q: finetune_plots.plot_across_epochs(sub(rows, model="m1"), p, q, n_resamples=N_RES),
        "fig16": lambda p, q: finetune_plots.plot_across_epochs(
            sub(rows, model="m1"), p, q, metric="score", n_resamples=N_RES
        ),
        "fiction": lambda p, q: finetune_plots.plot_fiction_sort(fiction_rows, p, q, model="tiny", n_resamples=N_RES),
    }
    ppl_rng = np.random.default_rng(2)
    ids = base["item_id"].unique()[:50]
    ppl = pd.concat(
        pd.DataFrame(
            {
                "item_id": ids,
                "run": run,
                "step": step,
                "epoch": step / 19 if step else np.nan,
                "nll_a": ppl_rng.normal(3 - drop, 0.3, len(ids)),
                "nll_b": ppl_rng.normal(3 - drop, 0.3, len(ids)),
            }
        )
        for run, step, drop in (
            ("base", 0, 0),
            ("books", 19, 0.8),
            ("books", 38, 1.2),
            ("instructions", 19, 0.1),
            ("instructions", 38, 0.1),
        )
    )
    calls["fig12"] = lambda p, q: finetune_plots.plot_across_epochs(
        ppl, p, q, metric="perplexity", model="m1", n_resamples=N_RES
    )
    m1 = sub(rows, model="m1")
    keys, labels = finetune_keys(m1, condition="baseline")
    calls["fig14"] = lambda p, q: matrix_plots.plot_matrix(
        condition_matrix(m1, keys, "mcnemar", labels=labels), "McNemar", p, q, model="m1"
    )
    calls["fig15"] = lambda p, q: matrix_plots.plot_matrix(
        condition_matrix(m1, keys, "ttest", labels=labels), "Paired t-test", p, q, model="m1"
    )
    pairs = checkpoint_pairs([0, 10, 20], "doc") + matched_pairs([0, 10, 20], "doc", "control")
    calls["fiction_matrix"] = lambda p, q: matrix_plots.plot_matrix(
        condition_matrix(fiction_rows, None, "ttest", key_columns=("run", "step"), pairs=pairs.copy()),
        "Fiction SORT",
        p,
        q,
        model="tiny",
    )
    for name, call in calls.items():
        pdf, png = _written(tmp_path, name)
        assert call(pdf, png) is None
        _check(pdf, png)
    assert matrix_plots._fits_checkpoint_matrix(
        condition_matrix(fiction_rows, None, "mcnemar", key_columns=("run", "step"), pairs=pairs)
    )
    assert not matrix_plots._fits_checkpoint_matrix(condition_matrix(m1, keys, "mcnemar", labels=labels))


def test_fig10_footnote_counts_the_whole_holm_family(sub, rows, tmp_path, monkeypatch):
    """The workflow marks Fig. 10 with the baseline rows of a table corrected over every condition:
    the footnote names that family's size, not the number of points marked."""
    from knowlab.sort import condition_plots

    base = sub(rows, run="base", split="test")
    family = binomial_tests(base, ["model", "condition", "segment_length", "distance_bin"])
    baseline = family[family.condition == "baseline"]
    assert len(baseline) < len(family)
    notes = []
    real = condition_plots.panel_figure
    monkeypatch.setattr(condition_plots, "panel_figure", lambda n, h, note: notes.append(note) or real(n, h, note))
    condition_plots.plot_by_distance(
        base, tmp_path / "f.pdf", tmp_path / "f.png", condition="baseline", hue="segment_length", panel="model",
        marks=baseline, n_resamples=N_RES,
    )  # fmt: skip
    assert f"Holm-corrected over {len(family)} tests" in notes[0]

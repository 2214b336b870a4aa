"""SORT figures on synthetic item rows: what each figure shows (title, panels, axes, legend), read back from its PNG."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from knowlab.core.plotting import read_description
from knowlab.core.stats import checkpoint_pairs, matched_pairs
from knowlab.sort import bands
from knowlab.sort.analysis import binomial_tests, condition_matrix, finetune_keys


# ----------------------------------------------------------------------------- figures

ACC = "accuracy (fraction correct)"
SCORE = "mean log p(correct) / (p(A)+p(B)) (nats)"
DIST = "distance bin (d0 nearest → d3 farthest)"
EPOCHS = "fine-tuning epochs completed"
STEP = "optimizer step"
CI, CHANCE = "95% bootstrap CI", "chance (0.5)"
RUNS = ["fine-tuned on texts + instructions", "fine-tuned on instructions only", "base model (epoch 0)"]
MATRIX = ("", "column (b)", "row (a)", 0)
# figure: (suptitle, legend entries, one (title, xlabel, ylabel, lines) per panel); lines: one per curve
# (series x line style) plus the dotted chance line, and the base model's marker in the fine-tuning figures
EXPECTED = {
    "fig3a": (
        "SORT accuracy by excerpt length (cf. paper Fig. 3a)",
        ["m1", "m2", "L_S = 20 words", "L_S = 50 words", CI, CHANCE],
        [("", "excerpt length L_E (words, log scale)", ACC, 2 * 2 + 1)],
    ),
    "fig3b": (
        "SORT accuracy by distance between segments (cf. paper Fig. 3b)",
        ["L_E = 250 words", "L_E = 1000 words", CI, CHANCE],
        [("", DIST, ACC, 2 + 1)],
    ),
    "fig10": (
        "SORT accuracy by distance between segments (cf. paper Fig. 10)",
        ["L_S = 20 words", "L_S = 50 words", CI, CHANCE],
        [("m1", DIST, ACC, 2 + 1), ("m2", DIST, ACC, 2 + 1)],
    ),
    "fig4": (
        "SORT accuracy with retrieval-augmented memory (cf. paper Fig. 4)",
        ["m1", "m2", "RAG memory (panel condition)", "in-context", "no memory (baseline)", CI, CHANCE],
        [
            ("(a) RAG (retrieval recall@2 = 0.68)", DIST, ACC, 2 * 3 + 1),  # 2 models x (RAG, in-context, baseline)
            ("(b) oracle RAG", DIST, ACC, 2 * 3 + 1),
        ],
    ),
    "fig13": (
        "SORT accuracy across fine-tuning epochs (cf. paper Fig. 13)",
        [*RUNS, CI, CHANCE],
        [("without the text in context", EPOCHS, ACC, 2 + 1 + 1), ("with the text in context", EPOCHS, ACC, 2 + 1 + 1)],
    ),
    "fig16": (
        "Log-probability of the correct answer across fine-tuning epochs (cf. paper Fig. 16)",
        [*RUNS, CI, "undecided (log 0.5)"],
        [
            ("without the text in context", EPOCHS, SCORE, 2 + 1 + 1),
            ("with the text in context", EPOCHS, SCORE, 2 + 1 + 1),
        ],
    ),
    "fig12": (
        "Perplexity of the SORT segments after fine-tuning (cf. paper Fig. 12)",
        [*RUNS, CI],
        [("", EPOCHS, "segment perplexity (log scale)", 2 + 1)],  # no chance line
    ),
    "fiction": (
        "SORT on FictionalQA documents across fine-tuning",
        [
            "Doc split",
            "Base webtext (control)",
            "train documents",
            "val documents",
            "all documents",
            CI,
            "chance (0.5 / log 0.5)",
        ],
        [("Accuracy", STEP, ACC, 3 + 1), ("Mean score of the correct answer", STEP, SCORE, 3 + 1)],
    ),
    "fig14": ("McNemar", [], [MATRIX]),
    "fig15": ("Paired t-test", [], [MATRIX]),
    "fiction_matrix": (
        "Fiction SORT\npaired t-test of row vs column, alternative: greater; bold: * p < 0.05, ** p < 0.01",
        [],
        [
            ("Doc split: checkpoint vs checkpoint", "checkpoint step", "checkpoint step", 0),
            ("Doc split vs control at matched steps", "checkpoint step", "", 0),
        ],
    ),
}
# p-value cells written in each matrix panel: m1's 5 checkpoints (base, books and instructions at
# steps 19 and 38) against each other; the doc run's 3 steps against each other, then vs the control
MATRIX_CELLS = {"fig14": [5 * 5], "fig15": [5 * 5], "fiction_matrix": [3 * 3, 3]}


def _written(tmp_path, name):
    pdf, png = tmp_path / f"{name}.pdf", tmp_path / f"{name}.png"
    return pdf, png


def _shown(pdf, png) -> dict:
    """What the saved figure shows (:func:`knowlab.core.plotting.read_description` of its PNG)."""
    assert pdf.read_bytes()[:4] == b"%PDF"
    return read_description(png)


def test_every_plot_shows_its_title_panels_axes_and_legend(sub, rows, fiction_rows, tmp_path, stats_settings):
    from knowlab.sort import condition_plots, finetune_plots, matrix_plots

    base = sub(rows, run="base_model")
    fig10 = {"condition": "baseline", "hue": "segment_length", "panel": "model"}
    m1 = sub(rows, model="m1")
    st = {"stats": stats_settings}
    calls = {
        "fig3a": lambda p, q: condition_plots.plot_by_excerpt_length(
            base, bands.excerpt_length_bands(base, stats_settings), p, q, **st
        ),
        "fig3b": lambda p, q: condition_plots.plot_by_distance(
            base,
            bands.distance_bands(base, stats_settings),
            p,
            q,
            marks=binomial_tests(sub(base, condition="in_context", split="test"), ["excerpt_length", "distance_bin"]),
            **st,
        ),
        "fig10": lambda p, q: condition_plots.plot_by_distance(
            base,
            bands.distance_bands(base, stats_settings, **fig10),
            p,
            q,
            **fig10,
            marks=binomial_tests(
                sub(base, condition="baseline", split="test"), ["model", "segment_length", "distance_bin"]
            ),
            **st,
        ),
        "fig4": lambda p, q: condition_plots.plot_rag(
            base,
            bands.rag_bands(base, stats_settings),
            p,
            q,
            recall=pd.DataFrame({"distance_bin": [0, 1, 2, 3], "recall": [0.9, 0.7, 0.6, 0.5], "k": 2}),
            **st,
        ),
        "fig13": lambda p, q: finetune_plots.plot_across_epochs(
            m1, bands.epoch_bands(m1, stats_settings, metric="accuracy"), p, q, **st
        ),
        "fig16": lambda p, q: finetune_plots.plot_across_epochs(
            m1, bands.epoch_bands(m1, stats_settings, metric="score"), p, q, metric="score", **st
        ),
        "fiction": lambda p, q: finetune_plots.plot_fiction_sort(
            fiction_rows, bands.fiction_bands(fiction_rows, stats_settings), p, q, model="tiny", **st
        ),
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
            ("base_model", 0, 0),
            ("books", 19, 0.8),
            ("books", 38, 1.2),
            ("instructions", 19, 0.1),
            ("instructions", 38, 0.1),
        )
    )
    calls["fig12"] = lambda p, q: finetune_plots.plot_across_epochs(
        ppl, bands.epoch_bands(ppl, stats_settings, metric="perplexity"), p, q, metric="perplexity", model="m1", **st
    )
    keys, labels = finetune_keys(m1, condition="baseline")
    calls["fig14"] = lambda p, q: matrix_plots.plot_matrix(
        condition_matrix(m1, keys, "mcnemar", labels=labels, exact_below=25), "McNemar", p, q, model="m1"
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
    assert set(calls) == set(EXPECTED)
    for name, call in calls.items():
        pdf, png = _written(tmp_path, name)
        assert call(pdf, png) is None
        shown = _shown(pdf, png)
        title, legend, panels = EXPECTED[name]
        assert shown["title"] == title, name
        assert shown["legend"] == legend, name
        assert [(p["title"], p["xlabel"], p["ylabel"], p["lines"]) for p in shown["panels"]] == panels, name
        if name in MATRIX_CELLS:  # one p-value matrix per panel, every cell written
            assert [p["images"] for p in shown["panels"]] == [1] * len(panels), name
            assert [len(p["texts"]) for p in shown["panels"]] == MATRIX_CELLS[name], name
        else:  # a shaded 95% band around every curve of the panel's condition
            assert all(p["bands"] > 0 and p["images"] == 0 for p in shown["panels"]), name
        if name == "fig3b":  # the binomial tests' marks over the in-context points, far above chance
            assert shown["panels"][0]["texts"] and set(shown["panels"][0]["texts"]) <= {"*", "**"}
    assert matrix_plots._fits_checkpoint_matrix(
        condition_matrix(fiction_rows, None, "mcnemar", key_columns=("run", "step"), pairs=pairs, exact_below=25)
    )
    assert not matrix_plots._fits_checkpoint_matrix(
        condition_matrix(m1, keys, "mcnemar", labels=labels, exact_below=25)
    )


def test_fig10_footnote_counts_the_whole_holm_family(sub, rows, tmp_path, monkeypatch, stats_settings):
    """The workflow marks Fig. 10 with the baseline rows of a table corrected over every condition:
    the footnote names that family's size, not the number of points marked."""
    from knowlab.sort import condition_plots

    base = sub(rows, run="base_model", split="test")
    family = binomial_tests(base, ["model", "condition", "segment_length", "distance_bin"])
    baseline = family[family.condition == "baseline"]
    assert len(baseline) < len(family)
    notes = []
    real = condition_plots.panel_figure
    monkeypatch.setattr(condition_plots, "panel_figure", lambda n, h, note: notes.append(note) or real(n, h, note))
    fig10 = {"condition": "baseline", "hue": "segment_length", "panel": "model"}
    condition_plots.plot_by_distance(
        base, bands.distance_bands(base, stats_settings, **fig10), tmp_path / "f.pdf", tmp_path / "f.png", **fig10,
        marks=baseline, stats=stats_settings,
    )  # fmt: skip
    assert f"Holm-corrected over {len(family)} tests" in notes[0]


def test_footnotes_and_captions_name_the_answer_rule(sub, rows, tmp_path, monkeypatch, stats_settings):
    """sort.answer: every accuracy figure's footnote (and the tables' captions) says how answers were read;
    rows scored before the answer_rule column were forced choice."""
    from knowlab.sort import condition_plots
    from knowlab.sort.analysis import tables
    from knowlab.sort.answers import ANSWER_NOTES, answer_note

    base = sub(rows, run="base_model", split="test")
    notes = []
    real = condition_plots.panel_figure
    monkeypatch.setattr(condition_plots, "panel_figure", lambda n, h, note: notes.append(note) or real(n, h, note))
    for rule in ("forced_choice", "greedy"):
        tagged = base.assign(answer_rule=rule)
        condition_plots.plot_by_distance(
            tagged, bands.distance_bands(tagged, stats_settings), tmp_path / "f.pdf", tmp_path / "f.png",
            stats=stats_settings,
        )  # fmt: skip
        assert notes[-1].endswith(ANSWER_NOTES[rule])
        assert all(t.caption.endswith(ANSWER_NOTES[rule]) for t in tables(tagged, stats_settings).values())
    assert answer_note(base.drop(columns="answer_rule", errors="ignore")) == ANSWER_NOTES["forced_choice"]
    mixed = base.assign(answer_rule=["greedy"] + ["forced_choice"] * (len(base) - 1))
    with pytest.raises(ValueError, match="different answer rules"):  # their accuracies do not compare
        answer_note(mixed)

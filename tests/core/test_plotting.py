"""The shared plotting style: colours, layout, legend entries, footnotes, atomic saving, p-value matrices."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest

from knowlab.core import plotting
from knowlab.core.plotting import (
    ACCURACY_LABEL,
    CONTROL_COLOUR,
    FIGURE_KEY,
    PALETTE,
    STEP_LABEL,
    band_handle,
    bootstrap_note,
    chance_handle,
    chance_line,
    colours,
    describe,
    empty_panel,
    finish,
    line_handle,
    line_with_band,
    models_note,
    panel_figure,
    plot_pvalue_matrix,
    pvalue_cells,
    read_description,
    save,
    wrap_note,
)

STEPS = (0, 10, 20)
PNG = b"\x89PNG\r\n\x1a\n"


def test_agg_backend_and_style():
    assert plt.get_backend().lower() == "agg"
    assert all(plt.rcParams[key] == value for key, value in plotting.STYLE.items())


def test_colours_in_first_seen_order_with_grey_controls():
    palette = colours(["b", "a", "b", "control", "c"], control=["control"])
    assert list(palette) == ["b", "a", "control", "c"]
    assert palette["b"] == PALETTE[0] and palette["a"] == PALETTE[1] and palette["c"] == PALETTE[2]
    assert palette["control"] == CONTROL_COLOUR, "the control takes no palette entry"
    assert len(set(PALETTE)) == 18 and (0.5, 0.5, 0.5) not in [tuple(round(c, 1) for c in p) for p in PALETTE]
    many = colours(range(20))
    assert many[18] == PALETTE[0], "the palette cycles"


def test_save_writes_pdf_and_png_atomically_and_closes(tmp_path):
    fig, ax = plt.subplots()
    ax.plot([0, 1], [0, 1])
    save(fig, tmp_path / "f.pdf", tmp_path / "f.png")
    assert (tmp_path / "f.pdf").read_bytes()[:4] == b"%PDF"
    assert (tmp_path / "f.png").read_bytes()[:8] == PNG
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f.pdf", "f.png"], "no temporary file left"
    assert not plt.fignum_exists(fig.number)


def test_panel_figure_rows_legend_and_note(tmp_path):
    note = "Model: tiny. " * 40
    layout = panel_figure(4, 5, note)
    assert len(layout.axes) == 4
    assert [ax.get_subplotspec().rowspan.start for ax in layout.axes] == [0, 0, 0, 1], "three panels a row"
    width, height = layout.figure.get_size_inches()
    assert width == pytest.approx(3 * plotting.PANEL_SIZE[0])
    assert height > 2 * plotting.PANEL_SIZE[1], "a strip under the panels"
    assert layout.legend_columns == 4
    assert max(len(line) for line in layout.note.splitlines()) <= width * plotting.CHARS_PER_INCH
    assert layout.note.replace("\n", " ") == note.strip()
    handles = [line_handle("run a", "C0", marker="o"), line_handle("val", linestyle="--"), band_handle(0.95)]
    handles.append(chance_handle("chance (0.5)"))
    fig = finish(layout, handles, "A title", tmp_path / "p.pdf", tmp_path / "p.png")
    assert fig.get_suptitle() == "A title"
    (legend,) = layout.strip.legends
    assert [t.get_text() for t in legend.get_texts()] == ["run a", "val", "95% bootstrap CI", "chance (0.5)"]
    texts = [t for t in layout.strip.texts if t.get_text()]
    assert texts[0].get_text() == layout.note and texts[0].get_fontsize() >= 8
    assert (tmp_path / "p.png").read_bytes()[:8] == PNG


def test_single_panel_is_wide_enough_for_its_legend():
    layout = panel_figure(1, 2, "")
    assert layout.figure.get_size_inches()[0] == pytest.approx(plotting.MIN_WIDTH)
    assert layout.note == ""
    plt.close(layout.figure)


def test_line_band_only_with_finite_interval():
    fig, ax = plt.subplots()
    line_with_band(ax, [0, 1], [0.2, 0.4], [0.1, 0.3], [0.3, 0.5], "C0")
    assert len(ax.lines) == 1 and len(ax.collections) == 1
    line_with_band(ax, [0, 1], [0.2, 0.4], [np.nan, np.nan], [np.nan, np.nan], "C1")
    line_with_band(ax, [0, 1], [0.2, 0.4])
    line_with_band(ax, [0, 1], [0.2, 0.4], [0.1, 0.3], [0.3, 0.5], "C2", band=False)
    assert len(ax.lines) == 4 and len(ax.collections) == 1
    chance_line(ax, 0.25)
    assert np.allclose(ax.lines[-1].get_ydata(), 0.25) and ax.lines[-1].get_linestyle() == ":"
    plt.close(fig)


def test_footnotes():
    rows = pd.DataFrame({"model": ["m1", "m2", "m1", None]})
    assert models_note(rows) == "Models: m1, m2."
    assert models_note(rows[rows["model"] == "m2"]) == "Model: m2."
    assert models_note(rows, model="given") == "Model: given."
    assert models_note(pd.DataFrame({"x": [1]})) == "Model: not recorded."
    assert bootstrap_note(500, 0.95) == (
        "Bands: 95% percentile-bootstrap intervals over items (500 resamples). Dotted line: chance."
    )
    assert (
        bootstrap_note(200, 0.9, chance=None) == "Bands: 90% percentile-bootstrap intervals over items (200 resamples)."
    )
    assert wrap_note("", 5) == ""
    assert wrap_note("a " * 100, 2).count("\n") >= 6


def test_pvalue_cells_mark_significance():
    fig, ax = plt.subplots()
    pvalue_cells(ax, np.array([[1.0, 0.04], [0.004, np.nan]]))
    cells = {t.get_text(): t for t in ax.texts}
    assert set(cells) == {"1", "0.04*", "0.004**", "–"}
    assert cells["0.04*"].get_fontweight() == "bold" and cells["1"].get_fontweight() == "normal"
    assert cells["1"].get_color() == "w" and cells["0.04*"].get_color() == "k"
    plt.close(fig)


def _pvalues(alternative=None) -> pd.DataFrame:
    rows = [("doc", a, "doc", b, 1.0 if a == b else 0.01) for a in STEPS for b in STEPS]
    rows += [("doc", s, "control", s, 0.2) for s in STEPS]
    table = pd.DataFrame(rows, columns=["run_a", "step_a", "run_b", "step_b", "pvalue"])
    table = table.assign(pvalue_holm=np.minimum(table["pvalue"] * 3, 1), correction="holm")
    return table.assign(alternative=alternative) if alternative else table


NAMES = {"doc": "Doc split", "control": "Base webtext (control)"}


@pytest.mark.parametrize(
    ("alternative", "value", "test", "label"),
    [
        (None, "pvalue_holm", "McNemar test", "p-value (Holm-corrected)"),
        ("greater", "pvalue", "paired t-test of row vs column, alternative: greater", "p-value (uncorrected)"),
    ],
)
def test_pvalue_matrix_names_test_and_correction(alternative, value, test, label, tmp_path):
    fig = plot_pvalue_matrix(
        _pvalues(alternative),
        "MCQ-4 accuracy",
        tmp_path / "p.pdf",
        tmp_path / "p.png",
        value,
        note="SmolLM2-135M",
        run_label=NAMES.get,
    )
    saved = read_description(tmp_path / "p.png")  # what the PNG says it shows is what was drawn
    assert saved == describe(fig) and test in saved["title"] and [p["images"] for p in saved["panels"][:2]] == [1, 1]
    assert test in fig.get_suptitle()
    assert [ax.get_title() for ax in fig.axes[:2]] == [
        "Doc split: checkpoint vs checkpoint",
        "Doc split vs control at matched steps",
    ]
    assert [t.get_text() for t in fig.axes[1].get_yticklabels()] == ["vs Base webtext (control)"]
    assert fig.axes[-1].get_ylabel() == label
    assert fig.get_supxlabel() == "SmolLM2-135M"


def test_pvalue_matrix_without_a_control_has_one_panel(tmp_path):
    table = _pvalues()
    fig = plot_pvalue_matrix(table[table["run_b"] == "doc"], "MCQ-4", tmp_path / "p.pdf", tmp_path / "p.png")
    assert [ax.get_title() for ax in fig.axes[:-1]] == ["doc: checkpoint vs checkpoint"], "raw run names by default"
    assert fig.get_supxlabel() == ""


def test_a_saved_png_describes_its_figure(tmp_path):
    """save() writes describe(fig) into the PNG (text chunk FIGURE_KEY, and the suptitle as Title):
    title, legend entries, and per panel its title, axis labels, lines, bands, images and texts."""
    layout = panel_figure(2, 3, "Model: test.")
    line_with_band(layout.axes[0], [0, 1, 2], [0.2, 0.4, 0.5], [0.1, 0.3, 0.4], [0.3, 0.5, 0.6], colour="C0")
    chance_line(layout.axes[0], 0.25)
    layout.axes[0].set(title="Doc", xlabel=STEP_LABEL, ylabel=ACCURACY_LABEL)
    empty_panel(layout.axes[1], "no Event split run in this config")
    handles = [line_handle("Doc", "C0", marker="o"), chance_handle("chance (0.25)"), band_handle(0.95)]
    finish(layout, handles, "MCQ-4 accuracy across fine-tuning", tmp_path / "f.pdf", tmp_path / "f.png")
    assert read_description(tmp_path / "f.png") == {
        "title": "MCQ-4 accuracy across fine-tuning",
        "legend": ["Doc", "chance (0.25)", "95% bootstrap CI"],
        "panels": [
            {"title": "Doc", "xlabel": STEP_LABEL, "ylabel": ACCURACY_LABEL, "lines": 2, "bands": 1, "images": 0, "texts": []},
            {"title": "", "xlabel": "", "ylabel": "", "lines": 0, "bands": 0, "images": 0,
             "texts": ["no Event split run in this config"]},
        ],
    }  # fmt: skip
    from PIL import Image

    with Image.open(tmp_path / "f.png") as image:
        assert image.text["Title"] == "MCQ-4 accuracy across fine-tuning" and FIGURE_KEY in image.text
    with pytest.raises(KeyError, match=rf"plain\.png: no '{FIGURE_KEY}' text chunk \(not a figure written by"):
        Image.new("RGB", (4, 4)).save(tmp_path / "plain.png")
        read_description(tmp_path / "plain.png")

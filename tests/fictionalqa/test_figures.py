"""Figure families rendered from a synthetic pipeline summary and from the paper's W&B exports."""

from pathlib import Path

import matplotlib.text
import numpy as np
import pandas as pd
import pytest

from knowlab.fictionalqa.figures import (
    FAMILIES,
    curves_from_summary,
    curves_from_train_logs,
    plot_family,
    run_name,
)
from knowlab.fictionalqa.paper_figures import EXPORTS, paper_curves, parse_run, read_wandb_export

PAPER = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "fictionalqa_paper_figures"
STEPS = (0, 10, 20)


def _summary(splits=("doc", "event")) -> pd.DataFrame:
    """Summary table after the contract of knowlab.fictionalqa.summary: each split's run + the control."""
    rows = []
    for split in splits:
        for run in (split, "control"):
            fiction = run != "control"
            for step in STEPS:
                gain = step / 20 if fiction else 0.0
                epochs = step / 10 if fiction else 0.0
                base = {"split": split, "run": run, "step": step, "epochs": epochs, "n_items": 40}
                for side, offset in (("train", 0.0), ("val", 0.5), ("all", 0.2)):
                    rows.append(
                        {
                            **base,
                            "suite": "fiction_doc",
                            "side": side,
                            "loss": 3 - 2 * gain + offset * gain,
                            "em50": gain * (1 - offset),
                        }
                    )
                    for suite, n in (("mcq4", 4), ("mcq10", 10)):
                        acc = 1 / n + 0.3 * gain * (1 - offset)
                        rows.append(
                            {
                                **base,
                                "suite": suite,
                                "side": side,
                                "acc": acc,
                                "acc_lo": acc - 0.05,
                                "acc_hi": acc + 0.05,
                                "acc_norm": acc,
                                "acc_norm_lo": acc - 0.05,
                                "acc_norm_hi": acc + 0.05,
                            }
                        )
                for suite, loss in (("webtext", 2.9), ("fict_qa_nll", 4 - gain), ("real_qa_nll", 1.5 + step / 100)):
                    rows.append({**base, "suite": suite, "side": "all", "loss": loss})
    return pd.DataFrame(rows)


def _train_logs() -> pd.DataFrame:
    rows = []
    for run, docs in (("doc", 10), ("event", 6), ("control", None)):
        for step in range(1, 21):
            fiction = 0 if docs is None else 2 * step
            rows.append(
                {
                    "run": run,
                    "step": step,
                    "fiction_samples_seen": fiction,
                    "fiction_epochs": fiction / docs if docs else 0.0,
                    "webtext_samples_seen": 38 * step,
                    "webtext_epochs": 38 * step / 5000,
                    "loss": 3.0,
                    "lr": 1e-4,
                }
            )
    return pd.DataFrame(rows)


def _render(family: str, curves: pd.DataFrame, out: Path, note="SmolLM2-135M, config.yaml seed 1234"):
    pdf, png = out / f"{family}.pdf", out / f"{family}.png"
    fig = plot_family(family, curves, pdf, png, note=note)
    assert pdf.stat().st_size > 0
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000
    assert f"Fig. {FAMILIES[family].figure}" in fig.get_suptitle()
    for ax in fig.axes:
        assert ax.get_title() and ax.get_xlabel() and ax.get_ylabel()
    sizes = [t.get_fontsize() for t in fig.findobj(matplotlib.text.Text) if t.get_text() and t.get_visible()]
    assert min(sizes) >= 8
    assert not list(out.glob(".*")), "temporary files left behind"
    return fig


def _panel_texts(ax) -> list[str]:
    return [t.get_text() for t in ax.texts]


@pytest.mark.parametrize("family", list(FAMILIES))
def test_every_family_renders_from_the_pipeline(family, tmp_path):
    if family == "fig2":
        curves = curves_from_train_logs(_train_logs())
    else:
        curves = curves_from_summary(_summary(), family, model="SmolLM2-135M")
    assert {"panel", "series", "x", "y"} <= set(curves)
    fig = _render(family, curves, tmp_path)
    spec = FAMILIES[family]
    panels = [spec.per_split] * 2 if spec.per_split else spec.panels
    assert [ax.get_title() for ax in fig.axes] == (
        ["Doc split", "Event split"] if spec.per_split else [p.title for p in spec.panels]
    )
    legend = [t.get_text() for sub in fig.subfigs for leg in sub.legends for t in leg.get_texts()]
    assert set(curves["series"]) <= set(legend), "one legend entry per series"
    if "y_lo" in curves:
        assert "95% bootstrap CI" in legend, "the shaded band is named in the legend"
    for ax, panel in zip(fig.axes, panels):
        if panel.chance:
            assert any(np.allclose(line.get_ydata(), panel.chance) for line in ax.lines), "no chance line"
            assert ax.collections, "no shaded 95% CI band"
    if family == "fig5":  # the synthetic config has no Fictsheets run
        assert "no Fictsheets run in this config" in _panel_texts(fig.axes[0])
        assert fig.axes[1].lines, "the webtext panel of the Doc split run is drawn"


def test_missing_runs_render_with_a_message(tmp_path):
    fig4 = _render("fig4", curves_from_summary(_summary(splits=("doc",)), "fig4"), tmp_path)
    assert "no Event split run in this config" in _panel_texts(fig4.axes[1])
    fig3 = _render("fig3", curves_from_summary(_summary(splits=("event",)), "fig3"), tmp_path)
    assert all("no Doc split run in this config" in _panel_texts(ax) for ax in fig3.axes)


def test_summary_curves_select_each_split_and_one_control():
    fig4 = curves_from_summary(_summary(), "fig4")
    doc = fig4[fig4["panel"] == "Doc split"]
    assert set(doc["series"]) == {"Doc split", "Base webtext (control)"}
    assert set(doc["style"]) == {"train documents", "val documents"}
    fig6 = curves_from_summary(_summary(), "fig6")
    assert not fig6.duplicated(["panel", "series", "x"]).any(), "control repeated per split is drawn once"
    fig7 = curves_from_summary(_summary(), "fig7", metric="acc_norm", model="SmolLM2-135M")
    assert set(fig7.loc[fig7["panel"] == "Across models (Doc split)", "series"]) == {
        "SmolLM2-135M, Doc split",
        "Base webtext (control)",
    }
    fig3 = curves_from_summary(_summary(), "fig3")
    em = fig3[fig3["panel"] == "Exact match of the last 50 tokens"]
    assert sorted(em["x"].unique()) == [0.0, 1.0, 2.0], "EM is drawn against epochs"
    no_doc = curves_from_summary(_summary(splits=("event",)), "fig7")
    assert set(no_doc["panel"]) == {"Across splits"}, "no control-only across-models panel"
    with pytest.raises(ValueError, match="curves_from_train_logs"):
        curves_from_summary(_summary(), "fig2")


def test_train_log_curves_start_at_zero_and_control_has_no_fiction():
    curves = curves_from_train_logs(_train_logs())
    first = curves[curves["x"] == 0]
    assert len(first) and (first["y"] == 0).all()
    control = curves[curves["series"] == "Base webtext (control)"]
    assert set(control["style"]) == {"webtext"}


def test_run_names():
    assert run_name("doc") == "Doc split"
    assert run_name("control") == "Base webtext (control)"
    assert run_name("books") == "books", "names of other studies' runs pass through"


def test_read_wandb_export_keeps_values_only(tmp_path):
    run = "exp1_train_val_splits_5pct_4N_mb8-wb128_gemma-2-2b_event-split-fictsheets-train-val"
    name = f"Name: {run} - ds_wise_losses/event_split_fictsheets_val"
    csv = tmp_path / "export.csv"
    pd.DataFrame(
        {"optimizer_step": [0, 50], f"Name: {run} - _step": [0, 51], name: [1.5, None], f"{name}__MIN": [1.5, None]}
    ).to_csv(csv, index=False)
    long = read_wandb_export(csv)
    assert long.to_dict("records") == [
        {
            "run": run,
            "model": "Gemma-2-2B",
            "split": "fictsheets",
            "metric": "ds_wise_losses/event_split_fictsheets_val",
            "step": 0,
            "value": 1.5,
        }
    ]


def test_parse_run_names():
    prefix = "exp1_train_val_splits_5pct_4N_mb8-wb128"
    assert parse_run(f"{prefix}_llama-3-1-8B_doc-split-train-val") == ("Llama-3.1-8B", "doc")
    assert parse_run(f"{prefix}_gemma-2b_style-split-loo-blog-train-val") == ("Gemma-2B", "style_blog")
    assert parse_run(f"{prefix}_llama-3-2-1B_base-only-all-val") == ("Llama-3.2-1B", "control")
    with pytest.raises(ValueError, match="unrecognised"):
        parse_run("some-other-run")


paper = pytest.mark.skipif(not PAPER.is_dir(), reason=f"paper W&B exports not found at {PAPER}")


@paper
@pytest.mark.parametrize("family", list(EXPORTS))
def test_every_exported_family_renders_from_the_paper(family, tmp_path):
    fig = _render(family, paper_curves(PAPER, family), tmp_path, note="FictionalQA paper, W&B exports")
    if not FAMILIES[family].per_split:
        assert [ax.get_title() for ax in fig.axes] == [p.title for p in FAMILIES[family].panels]
    assert all(ax.lines for ax in fig.axes)


@paper
def test_paper_values_match_the_export():
    fig7 = paper_curves(PAPER, "fig7")
    llama = fig7[(fig7["panel"] == "Across models (Doc split)") & (fig7["series"] == "Llama-3.1-8B")]
    assert llama["x"].tolist() == [0, 50, 100, 150, 200, 250, 300, 350, 400, 450, 499]
    assert llama["y"].iloc[0] == pytest.approx(0.3142292490118577)
    fig3 = paper_curves(PAPER, "fig3")
    em = fig3[fig3["panel"] == "Exact match of the last 50 tokens"]
    assert em["x"].max() == pytest.approx(9.356), "epochs = fiction samples seen / 1000 training documents"
    assert "Gemma-2-9B" not in set(fig3["series"]), "single-value runs are left out"
    with pytest.raises(ValueError, match="not in the paper's W&B exports"):
        paper_curves(PAPER, "fig2")


@paper
def test_command_line_renders_every_exported_family(tmp_path, capsys):
    from knowlab.fictionalqa.figures import FAMILIES
    from knowlab.fictionalqa.paper_figures import main

    main([str(PAPER), str(tmp_path)])
    written = capsys.readouterr().out.split()
    assert len(written) == len(FAMILIES) - 1  # all but fig2
    assert all(Path(p).stat().st_size > 1000 for p in written)

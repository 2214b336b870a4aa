"""Figure families rendered from a synthetic pipeline summary and from the paper's W&B exports."""

from pathlib import Path

import matplotlib.text
import numpy as np
import pandas as pd
import pytest

from knowlab.core.plotting import read_description
from knowlab.core.probe import run_name
from knowlab.fictionalqa.figures import (
    FAMILIES,
    curves_from_summary,
    curves_from_train_logs,
    plot_family,
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


STEP, LOSS, NLL = "optimizer step", "loss (nats/token)", "nll(answer | question) (nats/token)"
MCQ4, CI, CHANCE4 = "MCQ-4 accuracy", "95% bootstrap CI", "chance (1/4)"
DOC, EVENT, CONTROL = "Doc split", "Event split", "Base webtext (control)"
DOCS = ["train documents", "val documents"]
QUESTIONS = ["questions on train documents", "questions on val documents"]
SMOL_DOC, SMOL_EVENT = "SmolLM2-135M, Doc split", "SmolLM2-135M, Event split"
# each family's suptitle and panels (title, xlabel, ylabel), after the paper's figure
TITLES = {
    "fig2": "Samples seen and epochs completed per data source (cf. paper Fig. 2)",
    "fig3": "Verbatim memorization of the Doc split (cf. paper Fig. 3)",
    "fig4": "Loss on train / val documents by split (cf. paper Fig. 4)",
    "fig5": "Fictsheets loss and held-out webtext loss (cf. paper Fig. 5)",
    "fig6": "Answer loss given the question, by split (cf. paper Fig. 6)",
    "fig7": "Multiple-choice accuracy, 4 choices (cf. paper Fig. 7)",
    "fig8": "MCQ-4 accuracy on questions from train vs val documents (cf. paper Fig. 8)",
    "fig9": "Answer loss given the question, across models (Doc split) (cf. paper Fig. 9)",
    "fig10": "MCQ-4 accuracy on questions from train vs val documents, across models (cf. paper Fig. 10)",
    "fig10_11": "Multiple-choice accuracy with 4 vs 10 choices (cf. paper Fig. 11)",
}
PANELS = {
    "fig2": [("Samples seen", STEP, "samples seen (log scale)"), ("Epochs completed", STEP, "epochs completed")],
    "fig3": [
        ("Loss on train / val documents", STEP, LOSS),
        ("Exact match of the last 50 tokens", "epochs completed on the training documents", "EM@50"),
    ],
    "fig4": [(DOC, STEP, LOSS), (EVENT, STEP, LOSS)],
    "fig5": [("Fictsheets split", STEP, LOSS), ("Held-out webtext (training on the Doc split)", STEP, LOSS)],
    "fig6": [("Fictional Q&A", STEP, NLL), ("Real-world Q&A", STEP, NLL)],
    "fig7": [("Across models (Doc split)", STEP, MCQ4), ("Across splits", STEP, MCQ4)],
    "fig8": [(DOC, STEP, MCQ4), (EVENT, STEP, MCQ4)],  # one panel per split run (here doc and event)
    "fig9": [("Fictional Q&A", STEP, NLL), ("Real-world Q&A", STEP, NLL)],
    "fig10": [(DOC, STEP, MCQ4), (EVENT, STEP, MCQ4)],
    "fig10_11": [("4 choices", STEP, MCQ4), ("10 choices", STEP, "MCQ-10 accuracy")],
}
# the legend of each family drawn from _summary() (doc and event runs and the control) or _train_logs()
LEGENDS = {
    "fig2": [DOC, EVENT, CONTROL, "fiction", "webtext"],
    "fig3": [DOC, *DOCS],
    "fig4": [DOC, CONTROL, EVENT, *DOCS],
    "fig5": [DOC, CONTROL],
    "fig6": [DOC, CONTROL, EVENT],
    "fig7": [SMOL_DOC, CONTROL, DOC, EVENT, CI, CHANCE4],
    "fig8": [DOC, CONTROL, EVENT, *QUESTIONS, CI, CHANCE4],
    "fig9": [SMOL_DOC, CONTROL],
    "fig10": [SMOL_DOC, CONTROL, SMOL_EVENT, *QUESTIONS, CI, CHANCE4],
    "fig10_11": [SMOL_DOC, CONTROL, SMOL_EVENT, CI, "chance (1/4, 1/10)"],
}


def _render(family: str, curves: pd.DataFrame, out: Path, note="SmolLM2-135M, config.yaml seed 1234"):
    """Draw ``family``; return the Figure and what its saved PNG shows (:func:`read_description`)."""
    pdf, png = out / f"{family}.pdf", out / f"{family}.png"
    fig = plot_family(family, curves, pdf, png, note=note)
    assert pdf.read_bytes()[:4] == b"%PDF"
    shown = read_description(png)
    assert shown["title"] == TITLES[family]
    for panel in shown["panels"]:
        assert panel["title"] and panel["xlabel"] and panel["ylabel"], panel
    sizes = [t.get_fontsize() for t in fig.findobj(matplotlib.text.Text) if t.get_text() and t.get_visible()]
    assert min(sizes) >= 8
    assert not list(out.glob(".*")), "temporary files left behind"
    return fig, shown


def _axes(shown: dict) -> list[tuple[str, str, str]]:
    """(title, xlabel, ylabel) of every panel of a figure's description."""
    return [(p["title"], p["xlabel"], p["ylabel"]) for p in shown["panels"]]


@pytest.mark.parametrize("family", list(FAMILIES))
def test_every_family_renders_from_the_pipeline(family, tmp_path):
    if family == "fig2":
        curves = curves_from_train_logs(_train_logs())
    else:
        curves = curves_from_summary(_summary(), family, model="SmolLM2-135M")
    assert {"panel", "series", "x", "y"} <= set(curves)
    fig, shown = _render(family, curves, tmp_path)
    assert _axes(shown) == PANELS[family]
    assert shown["legend"] == LEGENDS[family], "one entry per series, line style, band and chance line"
    spec = FAMILIES[family]
    panels = [spec.per_split] * 2 if spec.per_split else spec.panels
    for ax, drawn, panel in zip(fig.axes, shown["panels"], panels, strict=True):
        part = curves[curves["panel"] == drawn["title"]]
        n_curves = len(part.drop_duplicates(["series", "style"] if "style" in part else ["series"]))
        assert drawn["lines"] == n_curves + (panel.chance is not None), "one line per series and style (+ chance)"
        if panel.chance:
            assert any(np.allclose(line.get_ydata(), panel.chance) for line in ax.lines), "no chance line"
            assert drawn["bands"] == n_curves, "one shaded 95% CI band per curve"
    if family == "fig5":  # the synthetic config has no Fictsheets run
        assert (shown["panels"][0]["texts"], shown["panels"][0]["lines"]) == (["no Fictsheets run in this config"], 0)
        assert shown["panels"][1]["lines"] == 2, "the webtext panel: the Doc split run and the control"


def test_missing_runs_render_with_a_message(tmp_path):
    _, fig4 = _render("fig4", curves_from_summary(_summary(splits=("doc",)), "fig4"), tmp_path)
    assert _axes(fig4) == PANELS["fig4"]
    assert [(p["texts"], p["lines"]) for p in fig4["panels"]] == [([], 4), (["no Event split run in this config"], 0)]
    assert fig4["legend"] == [DOC, CONTROL, *DOCS]
    _, fig3 = _render("fig3", curves_from_summary(_summary(splits=("event",)), "fig3"), tmp_path)
    assert _axes(fig3) == PANELS["fig3"]
    assert [(p["texts"], p["lines"]) for p in fig3["panels"]] == [(["no Doc split run in this config"], 0)] * 2
    assert fig3["legend"] == [], "nothing drawn: an empty legend"


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


PAPER_MODELS = ["Gemma-2-2B", "Gemma-2B", "Llama-3.1-8B", "Llama-3.2-1B", "Llama-3.2-3B"]
PAPER_SPLITS = [DOC, EVENT, "Style (news held out)", "Style (blog held out)", "Fictsheets"]
CONTROL_1B, CONTROL_8B = "Base webtext (control, Llama-3.2-1B)", "Base webtext (control, Llama-3.1-8B)"
# the paper's figures: the models (or Llama-3.1-8B's splits) and the control run they show
PAPER_LEGENDS = {
    "fig3": [*PAPER_MODELS, *DOCS],
    "fig4": [*PAPER_MODELS, CONTROL_1B, *DOCS],
    "fig5": [*PAPER_MODELS, CONTROL_1B, *DOCS],
    "fig6": [*PAPER_SPLITS, CONTROL_8B],
    "fig7": [*PAPER_MODELS, CONTROL_1B, *PAPER_SPLITS, CONTROL_8B, CHANCE4],
    "fig8": ["Llama-3.1-8B", *QUESTIONS, CHANCE4],
    "fig9": [*PAPER_MODELS, CONTROL_1B],
    "fig10": [*PAPER_MODELS, *QUESTIONS, CHANCE4],
    "fig10_11": [*PAPER_MODELS, CONTROL_1B, "chance (1/4, 1/10)"],
}
PAPER_PANELS = {  # the one-panel-per-split families
    "fig8": [(title, STEP, MCQ4) for title in PAPER_SPLITS],
    "fig10": [(DOC, STEP, MCQ4), (EVENT, STEP, MCQ4), ("Fictsheets", STEP, MCQ4)],
}


@paper
@pytest.mark.parametrize("family", list(EXPORTS))
def test_every_exported_family_renders_from_the_paper(family, tmp_path):
    _, shown = _render(family, paper_curves(PAPER, family), tmp_path, note="FictionalQA paper, W&B exports")
    assert _axes(shown) == PAPER_PANELS.get(family, PANELS[family])
    assert shown["legend"] == PAPER_LEGENDS[family]
    assert all(p["lines"] and not p["texts"] for p in shown["panels"]), "every panel has curves, none is empty"


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
@pytest.mark.slow
def test_command_line_renders_every_exported_family(tmp_path, capsys):
    from knowlab.fictionalqa.paper_figures import main

    main([str(PAPER), str(tmp_path)])
    written = capsys.readouterr().out.split()
    assert written == [str(tmp_path / f"paper_{family}.png") for family in FAMILIES if family != "fig2"]
    for png in written:
        family = Path(png).stem.removeprefix("paper_")
        assert Path(png).with_suffix(".pdf").read_bytes()[:4] == b"%PDF"
        shown = read_description(png)
        assert shown["title"] == TITLES[family]
        assert shown["legend"] == PAPER_LEGENDS[family]

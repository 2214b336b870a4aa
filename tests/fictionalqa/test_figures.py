"""Figure families rendered from a synthetic pipeline summary and from the paper's W&B exports."""

from pathlib import Path

import matplotlib.text
from matplotlib.colors import to_hex
import numpy as np
import pandas as pd
import pytest

from knowlab.core.plotting import CONTROL_COLOUR, PALETTE, model_colours, read_description
from knowlab.fiction.splits import run_name
from knowlab.fictionalqa.figures import (
    ACROSS_LEGEND_TITLE,
    ACROSS_MODELS,
    ACROSS_STYLES,
    FAMILIES,
    curves_across_models,
    curves_from_summary,
    curves_from_train_logs,
    plot_across_models,
    plot_family,
)
from knowlab.fictionalqa.paper_figures import EXPORTS, paper_curves, parse_run, read_wandb_export
from knowlab.fictionalqa.settings import ACROSS_MODEL_FIGURES
from knowlab.fictionalqa.settings import FIGURES as WORKFLOW_FIGURES

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
                                "confidence": 0.95,
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
        assert (shown["panels"][0]["texts"], shown["panels"][0]["lines"]) == (["no Fictsheets run of this model"], 0)
        assert shown["panels"][1]["lines"] == 2, "the webtext panel: the Doc split run and the control"


def test_missing_runs_render_with_a_message(tmp_path):
    _, fig4 = _render("fig4", curves_from_summary(_summary(splits=("doc",)), "fig4"), tmp_path)
    assert _axes(fig4) == PANELS["fig4"]
    assert [(p["texts"], p["lines"]) for p in fig4["panels"]] == [([], 4), (["no Event split run of this model"], 0)]
    assert fig4["legend"] == [DOC, CONTROL, *DOCS]
    _, fig3 = _render("fig3", curves_from_summary(_summary(splits=("event",)), "fig3"), tmp_path)
    assert _axes(fig3) == PANELS["fig3"]
    assert [(p["texts"], p["lines"]) for p in fig3["panels"]] == [(["no Doc split run of this model"], 0)] * 2
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
    with pytest.raises(ValueError, match="unrecognised W&B run name 'some-other-run'"):
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


# ----------------------------------------------------------------------------- across models

MODELS = ["tiny", "tiny-wide", "SmolLM2-135M-Instruct", "Llama-3.2-1B"]  # a config's model order
ACROSS_TITLES = {
    "fig4": "Loss on train / val documents by split, across models (cf. paper Fig. 4)",
    "fig7": "Multiple-choice accuracy, 4 choices, across models (cf. paper Fig. 7)",
    "fig9": "Answer loss given the question, across models (Doc split) (cf. paper Fig. 9)",
    "fig10": "MCQ-4 accuracy on questions from train vs val documents, across models (cf. paper Fig. 10)",
    "fig10_11": "Multiple-choice accuracy with 4 vs 10 choices, across models (Doc split) (cf. paper Fig. 11)",
}
ACROSS_PANELS = {
    "fig4": PANELS["fig4"],
    "fig7": [("Across models (Doc split)", STEP, MCQ4)],
    "fig9": PANELS["fig9"],
    "fig10": [(DOC, STEP, MCQ4), (EVENT, STEP, MCQ4), ("Fictsheets", STEP, MCQ4)],
    "fig10_11": PANELS["fig10_11"],
}
FINE_DOC, CONTROL_ALL = "fine-tuned on the Doc split", "control (webtext only)"
# the legend after the model names: line styles (fine-tuned run vs the model's control), CI band, chance
ACROSS_LEGENDS = {
    "fig4": [f"{run}, {side}" for run in ("fine-tuned", "control") for side in DOCS],
    "fig7": [FINE_DOC, CONTROL_ALL, CI, CHANCE4],
    "fig9": [FINE_DOC, CONTROL_ALL],
    "fig10": [f"{run}, {side}" for run in ("fine-tuned", "control") for side in QUESTIONS] + [CI, CHANCE4],
    "fig10_11": [FINE_DOC, CONTROL_ALL, CI, "chance (1/4, 1/10)"],
}
CONTROL_LINE = "-."  # the control's line style (train documents / questions, or all)


def _models_summary(splits: dict[str, tuple[str, ...]]) -> pd.DataFrame:
    """Every model's :func:`_summary` (its own splits) concatenated with a ``model`` column; each model's
    losses and accuracies shifted so that their curves differ."""
    frames = []
    for i, (model, own) in enumerate(splits.items()):
        frame = _summary(own).assign(model=model)
        for column in ("loss", "acc", "acc_lo", "acc_hi", "acc_norm", "acc_norm_lo", "acc_norm_hi"):
            frame[column] = frame[column] + 0.02 * i
        frames.append(frame)
    return pd.concat(frames, ignore_index=True)


THREE = {"tiny": ("doc", "event", "fictsheets"), "tiny-wide": ("doc", "event"), "Llama-3.2-1B": ("doc",)}
TWO = {"SmolLM2-135M-Instruct": ("doc", "event", "fictsheets"), "tiny-wide": ("doc",)}


def _render_across(family: str, curves: pd.DataFrame, out: Path, models=MODELS):
    """Draw across-models ``family``; return the Figure and what its saved PNG shows."""
    pdf, png = out / f"across_{family}.pdf", out / f"across_{family}.png"
    fig = plot_across_models(family, curves, pdf, png, note="Models: several; config.yaml seed 1234", models=models)
    assert pdf.read_bytes()[:4] == b"%PDF"
    shown = read_description(png)
    assert shown["title"] == ACROSS_TITLES[family]
    sizes = [t.get_fontsize() for t in fig.findobj(matplotlib.text.Text) if t.get_text() and t.get_visible()]
    assert min(sizes) >= 8
    assert not list(out.glob(".*")), "temporary files left behind"
    return fig, shown


def _legend(fig) -> tuple[str, dict[str, str]]:
    """The title of a figure's legend and the colour (hex) of each legend entry."""
    (legend,) = [legend for sub in fig.subfigs for legend in sub.legends]
    entries = zip(legend.get_texts(), legend.legend_handles, strict=True)
    return legend.get_title().get_text(), {
        t.get_text(): to_hex(h.get_color()) for t, h in entries if hasattr(h, "get_color")
    }


def test_model_colours_follow_the_model_order():
    palette = model_colours(MODELS + ["tiny"])
    assert list(palette) == MODELS, "one colour per model, in the given order"
    assert list(palette.values()) == list(PALETTE[: len(MODELS)])
    assert CONTROL_COLOUR not in palette.values()
    assert model_colours(MODELS[:2]) == dict(list(palette.items())[:2]), "a model's colour is its place in the order"


def test_across_models_families_are_the_papers():
    assert list(ACROSS_MODELS) == ["fig4", "fig7", "fig9", "fig10", "fig10_11"]
    for key, spec in ACROSS_MODELS.items():
        assert "across models" in f"{spec.suptitle} (cf. paper Fig. {spec.figure})" == ACROSS_TITLES[key]
        assert spec.figure == FAMILIES[key].figure
        assert all(panel.missing for panel in spec.panels), "every panel says what is missing"


@pytest.mark.parametrize("family", list(ACROSS_MODELS))
@pytest.mark.parametrize("splits", [THREE, TWO], ids=["3 models", "2 models"])
def test_every_across_models_family_renders(family, splits, tmp_path):
    curves = curves_across_models(_models_summary(splits), family, MODELS)
    fig, shown = _render_across(family, curves, tmp_path)
    assert _axes(shown) == ACROSS_PANELS[family]
    drawn = [m for m in MODELS if m in splits]  # in the config's order, whatever the summary's
    assert shown["legend"] == drawn + ACROSS_LEGENDS[family], "models (colour), then line styles, band, chance"
    title, legend_colours = _legend(fig)
    assert title == ACROSS_LEGEND_TITLE
    palette = {m: to_hex(c) for m, c in model_colours(MODELS).items()}
    assert {m: legend_colours[m] for m in drawn} == {m: palette[m] for m in drawn}
    assert all(legend_colours[s] == "#000000" for s in ACROSS_LEGENDS[family] if s in ACROSS_STYLES)
    for ax, panel, spec in zip(fig.axes, shown["panels"], ACROSS_MODELS[family].panels, strict=True):
        part = curves[curves["panel"] == panel["title"]]
        n_curves = len(part.drop_duplicates(["series", "style"]))
        assert panel["lines"] == n_curves + (spec.chance is not None), "one line per model and style (+ chance)"
        if spec.chance:
            assert panel["bands"] == n_curves, "one shaded 95% CI band per curve"
        lines = [line for line in ax.lines if line.get_marker() == "o"]  # not the chance line
        models_here = [m for m in drawn if m in set(part["series"])]
        assert {to_hex(line.get_color()) for line in lines} == {palette[m] for m in models_here}
        for model in models_here:  # the model's control: its colour, the control's line style
            own = [line for line in lines if to_hex(line.get_color()) == palette[model]]
            assert CONTROL_LINE in {line.get_linestyle() for line in own}, (model, panel["title"])
            assert "-" in {line.get_linestyle() for line in own}, "and its fine-tuned run"
        split = {EVENT: "event", "Fictsheets": "fictsheets"}.get(panel["title"], "doc")  # the panel's split
        expected = [m for m in drawn if split in splits[m]]
        assert models_here == expected, "a model's curves where it has the split's run"
        assert not panel["texts"]


def test_a_model_keeps_its_colour_in_every_across_models_figure(tmp_path):
    colours = {}
    for family, splits in (("fig4", TWO), ("fig10_11", THREE), ("fig9", {"tiny-wide": ("doc",)})):
        fig, _ = _render_across(family, curves_across_models(_models_summary(splits), family, MODELS), tmp_path)
        for model, colour in _legend(fig)[1].items():
            if model in MODELS:
                colours.setdefault(model, set()).add(colour)
    assert set(colours) == set(MODELS)
    assert all(len(seen) == 1 for seen in colours.values()), f"one colour per model: {colours}"
    assert len({seen.pop() for seen in colours.values()}) == len(MODELS), "distinct models, distinct colours"


def test_across_models_missing_splits_render_with_a_message(tmp_path):
    doc_only = _models_summary({"tiny": ("doc",), "tiny-wide": ("doc",)})
    _, fig4 = _render_across("fig4", curves_across_models(doc_only, "fig4", MODELS), tmp_path)
    assert [(p["texts"], p["lines"]) for p in fig4["panels"]] == [([], 8), (["no Event split run in this config"], 0)]
    _, fig10 = _render_across("fig10", curves_across_models(doc_only, "fig10", MODELS), tmp_path)
    assert [p["texts"] for p in fig10["panels"]] == [
        [],
        ["no Event split run in this config"],
        ["no Fictsheets run in this config"],
    ]
    assert [p["lines"] for p in fig10["panels"]] == [9, 1, 1], "8 curves + chance; only the chance line"
    no_doc = _models_summary({"tiny": ("event",), "tiny-wide": ("event",)})
    for family in ("fig7", "fig9", "fig10_11"):
        curves = curves_across_models(no_doc, family, MODELS)
        assert curves.empty
        _, shown = _render_across(family, curves, tmp_path)
        assert _axes(shown) == ACROSS_PANELS[family]
        assert all(p["texts"] == ["no Doc split run in this config"] for p in shown["panels"])
        assert [entry for entry in shown["legend"] if entry in MODELS] == [], "no model drawn, none listed"


def test_curves_across_models_select_each_models_runs():
    summary = _models_summary(THREE)
    fig7 = curves_across_models(summary, "fig7", MODELS, metric="acc_norm")
    assert list(fig7["series"].unique()) == ["tiny", "tiny-wide", "Llama-3.2-1B"], "the config's order"
    assert {"panel", "series", "style", "run", "x", "y", "y_lo", "y_hi"} <= set(fig7)
    assert not fig7.duplicated(["series", "style", "x"]).any(), "each model's control drawn once"
    for model, rows in fig7.groupby("series"):
        assert set(rows["style"]) == {FINE_DOC, CONTROL_ALL}, f"{model}: its Doc split run and its own control"
        assert set(rows["run"]) == {"doc", "control"}
    acc = summary[(summary["model"] == "tiny-wide") & (summary["suite"] == "mcq4") & (summary["side"] == "all")]
    acc = acc[(acc["split"] == "doc") & (acc["run"] == "doc")].sort_values("step")
    drawn = fig7[(fig7["series"] == "tiny-wide") & (fig7["run"] == "doc")].sort_values("x")
    assert drawn["y"].tolist() == acc["acc_norm"].tolist(), "metric chooses the MCQ column"
    fig4 = curves_across_models(summary, "fig4", MODELS)
    assert set(fig4["style"]) == set(ACROSS_LEGENDS["fig4"])
    assert "y_lo" not in fig4, "no interval for the loss"
    fig10 = curves_across_models(summary, "fig10", MODELS)
    assert set(fig10.loc[fig10["series"] == "tiny", "panel"]) == {DOC, EVENT, "Fictsheets"}
    assert set(fig10.loc[fig10["series"] == "Llama-3.2-1B", "panel"]) == {DOC}
    assert set(ACROSS_STYLES) >= set(fig10["style"])


def test_curves_across_models_reject_what_they_cannot_draw():
    summary = _models_summary(TWO)
    with pytest.raises(ValueError, match="not in the model order"):
        curves_across_models(summary, "fig7", ["tiny-wide"])
    with pytest.raises(
        ValueError, match="summary has no model column: concatenate each model's summary with its model name"
    ):
        curves_across_models(_summary(), "fig7", MODELS)
    for family in ("fig2", "fig3", "fig8"):
        with pytest.raises(ValueError, match="no across-models figure"):
            curves_across_models(summary, family, MODELS)


def test_draw_across_models_saves_the_figure(tmp_path):
    from knowlab.fictionalqa.steps.figures import draw_across_models

    summaries = _models_summary(TWO)
    pdf, png = tmp_path / "fig9.pdf", tmp_path / "fig9.png"
    curves = draw_across_models("fig9", summaries, MODELS, pdf, png, note="Models: two")
    assert set(curves["series"]) == set(TWO)
    assert pdf.read_bytes()[:4] == b"%PDF"
    shown = read_description(png)
    assert shown["title"] == ACROSS_TITLES["fig9"]
    assert shown["legend"] == ["tiny-wide", "SmolLM2-135M-Instruct", *ACROSS_LEGENDS["fig9"]]


def test_plot_family_takes_an_explicit_palette(tmp_path):
    curves = curves_from_summary(_summary(), "fig6")
    palette = {CONTROL: "#123456", EVENT: "#abcdef", DOC: "#0000ff"}
    fig = plot_family("fig6", curves, tmp_path / "a.pdf", tmp_path / "a.png", palette=palette)
    shown = read_description(tmp_path / "a.png")
    assert shown["legend"] == [CONTROL, EVENT, DOC], "the palette's order"
    assert {to_hex(line.get_color()) for line in fig.axes[0].lines} == set(palette.values())
    with pytest.raises(
        ValueError,
        match=r"series without a colour or line style: \['Base webtext \(control\)', 'Event split'\] "
        r"\(known: \['Doc split'\]\)",
    ):
        plot_family("fig6", curves, tmp_path / "b.pdf", tmp_path / "b.png", palette={DOC: "#0000ff"})
    default = plot_family("fig6", curves, tmp_path / "c.pdf", tmp_path / "c.png")
    assert {to_hex(line.get_color()) for line in default.axes[0].lines} == {
        to_hex(c) for c in (PALETTE[0], CONTROL_COLOUR, PALETTE[1])
    }, "without one: as before (series in turn, the control grey)"


def test_the_workflow_draws_families_of_this_module_and_each_has_a_caption():
    """The families the rules draw (knowlab.fictionalqa.settings, importable where the DAG is built,
    without matplotlib) are this module's, and each has its report caption."""
    root = Path(__file__).resolve().parents[2]
    assert set(WORKFLOW_FIGURES) <= set(FAMILIES)
    assert ACROSS_MODEL_FIGURES == tuple(ACROSS_MODELS)
    for family in WORKFLOW_FIGURES:
        assert (root / f"workflow/report/fictionalqa_{family}.rst").is_file()
    for family in ACROSS_MODEL_FIGURES:
        assert (root / f"workflow/report/fictionalqa_across_models_{family}.rst").is_file()

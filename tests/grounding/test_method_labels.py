"""Every grounding table names its decomposer and evaluator, every grounding figure says them in its
footnote, and the sentence decomposer says "sentence-level, not atomic facts" (issue 17, item 1)."""

import re

import numpy as np
import pandas as pd
import pytest

from knowlab.grounding import analysis, plots
from knowlab.grounding.methods import SENTENCE_LEVEL
from knowlab.grounding.settings import (
    GroundingConditionSettings,
    GroundingDecomposerSettings,
    GroundingEvaluatorSettings,
    GroundingTablesSettings,
    condition_names,
    decomposer_label,
    evaluator_label,
)
from knowlab.grounding.steps import figures as figure_steps
from knowlab.grounding.steps import stats as stats_steps

CFG = GroundingConditionSettings(
    budget=1024, position="random", sweep_budgets=(512, 1024), sweep_positions=("start", "random")
)
SENTENCES = "sentences (sentence-level, not atomic facts)"
BI_ENCODER = "bi_encoder:packaged:all-MiniLM-L6-v2@0.4"


def test_decomposer_label():
    assert SENTENCE_LEVEL == "sentence-level, not atomic facts"
    Dec = GroundingDecomposerSettings
    assert decomposer_label(Dec(kind="sentences")) == decomposer_label(Dec()) == SENTENCES
    assert decomposer_label(Dec(kind="llm"), "HuggingFaceTB/SmolLM2-135M") == "llm:HuggingFaceTB/SmolLM2-135M"
    assert decomposer_label(Dec(kind="llm", name="mine"), "base") == "llm:mine"
    served = Dec(kind="llm", backend="openai", openai_model="resources/models/llama3-8b-instruct")
    assert decomposer_label(served, "base") == "llm:resources/models/llama3-8b-instruct"
    assert decomposer_label(Dec(kind="llm")) == "llm:unknown"
    with pytest.raises(ValueError, match="grounding.decomposer.kind must be 'llm' or 'sentences', got 'words'"):
        decomposer_label(Dec(kind="words"))


def test_evaluator_label_defaults_are_the_papers_thresholds():
    Ev = GroundingEvaluatorSettings
    assert evaluator_label(Ev(kind="bi_encoder", model=None, threshold=None)) == BI_ENCODER
    assert evaluator_label(Ev(kind="cross_encoder")) == "cross_encoder:cross-encoder/ms-marco-MiniLM-L-12-v2@6"
    assert evaluator_label(Ev(kind="cross_encoder", model="m", threshold=5.5)) == "cross_encoder:m@5.5"
    assert evaluator_label(Ev(kind="llm_judge"), "SmolLM2") == "llm_judge:SmolLM2@0"
    with pytest.raises(
        ValueError,
        match=r"grounding\.evaluator\.kind must be one of \['bi_encoder', 'cross_encoder', 'llm_judge'\], got 'nli'",
    ):
        evaluator_label(Ev(kind="nli"))
    # grounding.evaluator.window: max (the default) keeps the label; truncate (the released scorer) says so
    assert evaluator_label(Ev(kind="bi_encoder", window="max")) == BI_ENCODER
    assert (
        evaluator_label(Ev(kind="cross_encoder", window="truncate"))
        == "cross_encoder:cross-encoder/ms-marco-MiniLM-L-12-v2@6 (window: truncate)"
    )
    with pytest.raises(ValueError, match=r"grounding\.evaluator\.window"):
        evaluator_label(Ev(kind="cross_encoder", window="mean"))


def scored_rows(**columns):
    """Item rows of one model in every condition of CFG (3 questions each, seeded metric values)."""
    rng = np.random.default_rng(0)
    parts = []
    for condition in condition_names(CFG):
        f1 = rng.uniform(size=3)
        parts.append(
            pd.DataFrame(
                {
                    "dataset": "fiction",
                    "model": "m",
                    "condition": condition,
                    "item_id": ["q0", "q1", "q2"],
                    "precision": f1,
                    "recall": f1,
                    "f1": f1,
                    "answer_accuracy": [1.0, 0.0, np.nan],
                    "factor_popularity": ["high", "low", "low"],
                    "context_tokens": 300.0,
                    "n_distractors": 0 if condition.endswith("gold") else 4,
                    **columns,
                }
            )
        )
    return pd.concat(parts, ignore_index=True)


@pytest.fixture()
def notes(monkeypatch):
    """The footnote text of every figure drawn (whitespace removed: the footnote is wrapped)."""
    drawn = {}
    finish = plots.finish

    def record(layout, handles, title, pdf, png):
        figure = finish(layout, handles, title, pdf, png)
        drawn[title] = re.sub(r"\s+", "", " ".join(t.get_text() for t in layout.strip.texts))
        return figure

    monkeypatch.setattr(plots, "finish", record)
    return drawn


@pytest.mark.parametrize(
    ("columns", "decomposer", "evaluator"),
    [
        ({}, SENTENCES, BI_ENCODER),  # rows scored before they named the method: the config's labels
        ({"decomposer": "llm:served-8b", "evaluator": "cross_encoder:x@6"}, "llm:served-8b", "cross_encoder:x@6"),
    ],
)
def test_every_table_and_figure_names_decomposer_and_evaluator(
    tmp_path, notes, columns, decomposer, evaluator, stats_settings
):
    rows = scored_rows(**columns)
    names = ("fig3c", "fig4", "fig5", "fig15_16", "position")
    figures = {f"{n}_{ext}": str(tmp_path / f"{n}.{ext}") for n in names for ext in ("pdf", "png")}
    # the config's labels: those of grounding.decomposer kind sentences and the paper's bi-encoder
    settings = GroundingTablesSettings(
        position=CFG.position,
        decomposer_label=decomposer_label(GroundingDecomposerSettings(kind="sentences")),
        evaluator_label=evaluator_label(GroundingEvaluatorSettings(kind="bi_encoder", model=None, threshold=None)),
    )
    stats_steps.tables(rows, str(tmp_path / "tables"), settings, stats_settings)
    figure_steps.draw(figure_steps.read_tables(tmp_path / "tables"), figures)  # from the tables written
    csvs = sorted((tmp_path / "tables").glob("*.csv"))
    assert len(csvs) == 12
    for path in csvs:
        table = pd.read_csv(path)
        assert list(table.columns[-2:]) == ["decomposer", "evaluator"], path.name
        assert set(table.decomposer) == {decomposer} and set(table.evaluator) == {evaluator}, path.name
        tex = path.with_suffix(".tex").read_text()
        assert "decomposer" in tex and "evaluator" in tex, path.name
    assert len(notes) == len(names)
    expected = re.sub(r"\s+", "", f"Decomposer: {decomposer}; evaluator: {evaluator}.")
    for title, note in notes.items():
        assert expected in note, title
    # the metric values are those of the tables without the new columns
    summary = analysis.summarize(rows, ["dataset", "model", "condition"], stats=stats_settings)
    table1 = pd.read_csv(tmp_path / "tables" / "table1.csv")
    assert table1["m"].to_numpy() == pytest.approx(analysis.table1(summary)["m"].to_numpy())


def test_finetune_tables_and_figure_name_the_method(tmp_path, notes):
    records = [
        {
            "run": run, "step": 4, "item_id": f"q{i}", "condition": "conflict_gold", "side": "train",
            "response": "Ezra Mott" if (i + (run == "doc")) % 2 else "no idea", "answer_accuracy": float(i % 2),
            "f1": 0.5, "decomposer": SENTENCES, "evaluator": BI_ENCODER,
        }
        for run in ("doc", "control") for i in range(4)
    ]  # fmt: skip
    rows = analysis.follow_rates(pd.DataFrame(records), {f"q{i}": ["Ezra Mott"] for i in range(4)})
    rates = analysis.finetune_rates(rows)
    assert set(rates.decomposer) == {SENTENCES} and set(rates.evaluator) == {BI_ENCODER}
    assert rates.loc[rates.run == "doc", "f1"].item() == pytest.approx(50.0)
    mcnemar = analysis.finetune_mcnemar(rows, ["doc"], "control", [4], 25)
    assert set(mcnemar.decomposer) == {SENTENCES} and set(mcnemar.evaluator) == {BI_ENCODER}
    plots.plot_finetune(rates, tmp_path / "f.pdf", tmp_path / "f.png", model="m", runs=["doc"])
    (note,) = notes.values()
    assert re.sub(r"\s+", "", f"Decomposer: {SENTENCES}; evaluator: {BI_ENCODER}.") in note
    assert re.sub(r"\s+", "", SENTENCE_LEVEL) in note

"""SORT evaluation: the RAG reading sweep of App. B.4.3, fixed or selected prompts, the rows of a condition and
of an epoch."""

from __future__ import annotations

import pytest

from knowlab.sort.evaluate import (
    ITEM_COLUMNS,
    choose_rag_reading,
    choose_template,
    evaluate_condition,
    evaluate_epoch,
    evaluate_items,
    select_rag_reading,
)
from knowlab.sort.prompts import (
    DEFAULT_TEMPLATES,
    RAG_READINGS,
    SYSTEM_PROMPT,
    get_rag_reading,
    rag_readings,
    selected_template,
    with_rag_reading,
)
from knowlab.sort.score import segment_nll
from knowlab.sort.settings import (
    SortEvaluateSettings,
    SortPromptSettings,
    SortRagPromptSettings,
    SortSelectionSettings,
)


def test_rag_reading_selection_sweeps_every_reading_in_the_selected_template(tiny, tmp_path, items, retrieved):
    """App. B.4.3: the selected template with each RAG reading, under RAG, on the validation items."""
    model, tok = tiny
    validation = [{**item, "split": "validation"} for item in items]
    readings = rag_readings(None)
    selection, rows = select_rag_reading(
        model, tok, validation, DEFAULT_TEMPLATES[4], readings, retrieved,
        system_prompt=SYSTEM_PROMPT, max_rate_deviation=0.5, batch_size=4,
    )  # fmt: skip
    assert len(rows) == 10 * len(items) and (rows.condition == "rag").all()
    assert [r["template_id"] for r in selection["table"]] == [f"t05+r{k:02d}" for k in range(1, 11)]
    assert selection["template_id"] == f"t05+{selection['rag_reading_id']}"
    best = rows.groupby("template_id").correct.mean().max()
    assert selection["accuracy"] == pytest.approx(best)
    # the evaluation rules rebuild the same template from the two selection files (sort.templates and
    # sort.rag_readings null: the project's)
    tmp = tmp_path
    (tmp / "selection.json").write_text('{"template_id": "t05"}')
    (tmp / "rag.json").write_text(f'{{"rag_reading_id": "{selection["rag_reading_id"]}"}}')
    rebuilt = selected_template(None, tmp / "selection.json", tmp / "rag.json", None)
    assert rebuilt == with_rag_reading(DEFAULT_TEMPLATES[4], get_rag_reading(None, selection["rag_reading_id"]))
    assert selected_template(None, tmp / "selection.json") == DEFAULT_TEMPLATES[4]
    with pytest.raises(
        ValueError, match=r"no validation items to select a RAG reading on: set sort\.n_validation >= 1"
    ):
        select_rag_reading(model, tok, [{**i, "split": "test"} for i in items], DEFAULT_TEMPLATES[4], readings,
                           retrieved, system_prompt=None, max_rate_deviation=0.2, batch_size=4)  # fmt: skip
    with pytest.raises(ValueError, match="RAG reading ids repeat"):
        rag_readings([RAG_READINGS[0], RAG_READINGS[0]])
    with pytest.raises(ValueError, match=r"unknown RAG reading id 'r11'; known ids: r01, r02"):
        get_rag_reading(None, "r11")


# --- the rules' evaluation: fixed or selected prompts, a condition's rows, an epoch's rows ---------

SELECTION = SortSelectionSettings(system_prompt=SYSTEM_PROMPT, max_rate_deviation=0.5)
PROMPT = SortPromptSettings(template=None, selection=SELECTION)  # templates and readings selected
RAG_PROMPT = SortRagPromptSettings(rag_reading=None, selection=SELECTION)
EVALUATE = SortEvaluateSettings(system_prompt=SYSTEM_PROMPT)
BATCH = 4  # sort.batch_size


@pytest.fixture
def split_items(items):
    return [{**items[0], "split": "validation"}, {**items[1], "split": "test"}]


@pytest.fixture
def retrieved(items, passages):
    """The RAG passages of each item, by item id."""
    return {item["item_id"]: passages for item in items}


def test_a_fixed_template_or_reading_needs_no_model(split_items):
    missing = "/nonexistent/model"  # never loaded
    selection, rows = choose_template(SortPromptSettings(template="t03"), split_items, missing, batch_size=BATCH)
    assert selection == {"template_id": "t03", "rule": "fixed by sort.template"} and rows.empty
    with pytest.raises(ValueError, match="unknown prompt template id 't99'"):
        choose_template(SortPromptSettings(template="t99"), split_items, missing, batch_size=BATCH)
    fixed = SortRagPromptSettings(rag_reading="r03")
    selection, rows = choose_rag_reading(fixed, DEFAULT_TEMPLATES[2], split_items, {}, missing, batch_size=BATCH)
    assert selection == {"template_id": "t03+r03", "rag_reading_id": "r03", "rule": "fixed by sort.rag_reading"}
    assert rows.empty
    with pytest.raises(ValueError, match="unknown RAG reading id 'r99'"):
        choose_rag_reading(
            SortRagPromptSettings(rag_reading="r99"), DEFAULT_TEMPLATES[2], split_items, {}, missing, batch_size=BATCH
        )


def test_a_selected_template_and_reading_sweep_the_validation_items(tiny_model_dir, split_items, retrieved):
    selection, rows = choose_template(PROMPT, split_items, tiny_model_dir, batch_size=BATCH)
    assert len(rows) == 12 and set(rows.item_id) == {"bk1-0"} and (rows.condition == "in_context").all()
    assert [r["template_id"] for r in selection["table"]] == [t["id"] for t in DEFAULT_TEMPLATES]
    selection, rows = choose_rag_reading(
        RAG_PROMPT, DEFAULT_TEMPLATES[4], split_items, retrieved, tiny_model_dir, batch_size=BATCH
    )
    assert len(rows) == 10 and (rows.condition == "rag").all()
    assert selection["template_id"] == f"t05+{selection['rag_reading_id']}"


def test_evaluate_condition_scores_the_test_items_with_the_run_labels_first(
    tiny, tiny_model_dir, split_items, retrieved
):
    model, tok = tiny
    template = with_rag_reading(DEFAULT_TEMPLATES[1], RAG_READINGS[1])
    rows = evaluate_condition(
        tiny_model_dir, split_items, "rag", template, EVALUATE, batch_size=BATCH, passages=retrieved,
        model_name="tiny", run="doc", step=6,
    )  # fmt: skip
    assert list(rows.columns[:3]) == ["model", "run", "step"]
    assert list(rows.item_id) == ["bk1-1"]
    assert list(rows[["model", "run", "step"]].itertuples(index=False, name=None)) == [("tiny", "doc", 6)]
    expected = evaluate_items(
        model, tok, split_items[1:], "rag", [template], passages=retrieved, system_prompt=SYSTEM_PROMPT, batch_size=4
    )
    assert list(rows.columns[3:]) == list(expected.columns)
    assert [c for c in expected.columns if c in ITEM_COLUMNS] == ["item_id", "book_id", "segment_length", "split"]
    assert rows.drop(columns=["model", "run", "step"]).equals(expected)


def test_evaluate_epoch_labels_rows_with_the_epoch_step(tiny, tiny_model_dir, split_items):
    model, tok = tiny
    template = DEFAULT_TEMPLATES[0]
    texts = {"steps_per_epoch": {"books": 3, "instructions": 5}}
    meta = ["model", "run", "step", "epoch"]
    rows, nll = evaluate_epoch(
        tiny_model_dir, split_items, template, EVALUATE, ["baseline", "in_context"], texts, batch_size=BATCH,
        model_name="tiny", run="books", epoch=2,
    )  # fmt: skip
    assert list(rows.condition) == ["baseline", "in_context"] and set(rows.item_id) == {"bk1-1"}
    assert list(rows.columns[-4:]) == meta
    assert set(rows[meta].itertuples(index=False, name=None)) == {("tiny", "books", 6, 2)}
    expected = segment_nll(model, tok, split_items[1:], 4).assign(model="tiny", run="books", step=6, epoch=2)
    assert nll.equals(expected)
    # epoch 0 is the base model: step 0, whatever the run (no steps per epoch of its own)
    rows, nll = evaluate_epoch(tiny_model_dir, split_items, template, EVALUATE, [], texts, batch_size=BATCH,
                               model_name="tiny", run="base", epoch=0)  # fmt: skip
    assert rows.empty and list(rows.columns) == meta
    assert set(nll[meta].itertuples(index=False, name=None)) == {("tiny", "base", 0, 0)} and len(nll) == 1


def test_the_answer_rule_reaches_every_evaluation(tiny, tiny_model_dir, split_items):
    """sort.answer in the settings: the condition rows, an epoch's rows and prompt selection read answers
    by it (a record built without it, as the ones above, is forced choice: the schema's default)."""
    model, tok = tiny
    greedy = SortEvaluateSettings(system_prompt=SYSTEM_PROMPT, answer="greedy")
    template = DEFAULT_TEMPLATES[0]
    rows = evaluate_condition(tiny_model_dir, split_items, "baseline", template, greedy, batch_size=BATCH,
                              model_name="tiny", run="base", step=0)  # fmt: skip
    expected = evaluate_items(model, tok, split_items[1:], "baseline", [template], system_prompt=SYSTEM_PROMPT,
                              batch_size=4, answer="greedy")  # fmt: skip
    assert rows.drop(columns=["model", "run", "step"]).equals(expected) and set(rows.answer_rule) == {"greedy"}
    assert set(rows.prediction) <= {"A", "B", "none"}
    assert (rows.prediction == "none").eq(~rows.label_is_greedy).all()
    plain = evaluate_condition(tiny_model_dir, split_items, "baseline", template, EVALUATE, batch_size=BATCH,
                               model_name="tiny", run="base", step=0)  # fmt: skip
    assert set(plain.answer_rule) == {"forced_choice"} and set(plain.prediction) <= {"A", "B"}
    texts = {"steps_per_epoch": {"books": 1}}
    epoch_rows, _ = evaluate_epoch(tiny_model_dir, split_items, template, greedy, ["baseline"], texts,
                                   batch_size=BATCH, model_name="tiny", run="books", epoch=1)  # fmt: skip
    assert set(epoch_rows.answer_rule) == {"greedy"}
    selecting = SortPromptSettings(
        template=None,
        templates=[template],
        selection=SortSelectionSettings(system_prompt=SYSTEM_PROMPT, max_rate_deviation=0.5, answer="greedy"),
    )
    _, validation = choose_template(selecting, split_items, tiny_model_dir, batch_size=BATCH)
    assert set(validation.answer_rule) == {"greedy"}


def test_the_paper_config_reads_the_greedy_token():
    from pathlib import Path

    from snakemake.exceptions import WorkflowError

    from knowlab.config import load_config

    assert load_config()["sort"]["answer"] == "forced_choice"
    assert load_config(Path(__file__).resolve().parents[2] / "config" / "paper.yaml")["sort"]["answer"] == "greedy"
    with pytest.raises(
        WorkflowError,
        match=r"(?s)'sampled' is not one of \['forced_choice', 'greedy'\].*On instance\['sort'\]\['answer'\]:",
    ):
        load_config({"sort": {"answer": "sampled"}})

"""The dataset card of the item tables (knowlab.dataset_card): the tables here are made by the library's own
evaluation functions (tiny model, stub grounding evaluator), laid out as the workflow writes them; the card
reads back with huggingface_hub, every config loads with datasets, every column is documented."""

from __future__ import annotations

import functools
import re
import shutil

import datasets
import numpy as np
import pyarrow.parquet as pq
import pytest
from huggingface_hub import DatasetCard

from knowlab.core.io import write_parquet
from knowlab.dataset_card import FAMILIES, UndocumentedColumnError, build_card, family_of, write_card
from knowlab.fictionalqa.corpus.mcq import build_mcq
from knowlab.fictionalqa.suites import evaluate_checkpoint
from knowlab.grounding.steps import data as steps
from knowlab.grounding.fiction import fiction_grounding_items
from knowlab.grounding.settings import GroundingDecomposerSettings, GroundingEvaluatorSettings, GroundingScoreSettings
from knowlab.sort.evaluate import evaluate_condition, evaluate_epoch
from knowlab.sort.steps.data import fiction_items
from knowlab.sort.prompts import DEFAULT_TEMPLATES, SYSTEM_PROMPT
from knowlab.sort.settings import SortEvaluateSettings, SortFictionItemsSettings

CARD = {"model": "tiny random Llama (test)", "seed": 7, "settings": "6 steps; fiction rate 0.5", "eval_models": ["m1"]}
SORT_SETTINGS = SortEvaluateSettings(system_prompt=SYSTEM_PROMPT)


class _WordOverlap:
    """A stand-in M_eval: a fact is supported when its first word is in the text."""

    name, threshold = "stub", 0.5

    def scores(self, pairs):
        return np.array([float(fact.split()[0] in text) for fact, text in pairs])

    def decide(self, scores):
        return scores >= self.threshold


def _grounding_rows(records, tmp, label):
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(steps, "load_evaluator", lambda cfg, model, tokenizer: _WordOverlap())
        settings = GroundingScoreSettings(
            decomposer=GroundingDecomposerSettings(kind="sentences"),
            evaluator=GroundingEvaluatorSettings(kind="bi_encoder"),
        )
        return steps.score(
            records, settings, "resources/base_model", tmp / f"{label}_facts.json", tmp / f"{label}.json"
        )


@pytest.fixture(scope="module")
def results(tmp_path_factory, tiny_model, tiny_model_dir, corpus):
    """A results folder with two tables of every config, and the tables of the rule's inputs."""
    folder = tmp_path_factory.mktemp("card") / "results"
    tables = {}

    def put(relpath, frame):
        write_parquet(folder / relpath, frame)
        tables[relpath] = frame

    # FictionalQA: the checkpoint evaluation, labelled as scripts/fictionalqa_evaluate.py labels it
    model, tokenizer = tiny_model
    suites = evaluate_checkpoint(
        model,
        tokenizer,
        fictions=corpus["fictions"][:2],
        fictsheets=corpus["fictsheets"][:1],
        webtext=[{"webtext_id": "w0", "text": "A paragraph of web text about rivers."}],
        fict_qa=corpus["fict_qa"][:2],
        real_qa=[{"question_id": "r0", "question": "What is the capital of France?", "answer": "Paris"}],
        mcq=build_mcq(corpus["fict_qa"], 4, 0)[:2],
        em_tokens=(10, 25),
        batch_size=8,
    )
    for run, step, checkpoint in (
        ("base_model", 0, "resources/base_model"),
        ("doc", 6, "results/fictionalqa/tiny/finetune/doc/checkpoints/step-6"),
    ):
        put(
            f"fictionalqa/tiny/evaluate/{run}/step-{step}.parquet",
            suites.assign(model="tiny", run=run, step=step, checkpoint=checkpoint),
        )
    # SORT: the base model's conditions, the fiction documents per checkpoint, parametric memory per epoch
    items = fiction_items(
        corpus["fictions"],
        SortFictionItemsSettings(excerpt_lengths=[200], segment_lengths=[20], n_excerpts=1, max_documents=1),
        0,
    )
    books = [{k: v for k, v in item.items() if k != "document_id"} for item in items]
    for condition in ("baseline", "in_context"):
        rows = evaluate_condition(
            tiny_model_dir,
            books,
            condition,
            DEFAULT_TEMPLATES[0],
            SORT_SETTINGS,
            batch_size=8,
            model_name="m1",
            run="base_model",
            step=0,
        )
        put(f"sort/evaluate/m1/{condition}.parquet", rows)
    for run, step in (("base_model", 0), ("doc", 6)):
        rows = evaluate_condition(
            tiny_model_dir,
            items,
            "baseline",
            DEFAULT_TEMPLATES[0],
            SORT_SETTINGS,
            batch_size=8,
            model_name="tiny",
            run=run,
            step=step,
        )
        put(f"sort/fiction/tiny/evaluate/{run}/step-{step}.parquet", rows)
    texts = {"steps_per_epoch": {"books": 3, "instructions": 2}}
    for run, epoch, conditions in (
        ("base_model", 0, []),
        ("books", 1, ["baseline", "in_context"]),
        ("instructions", 1, ["baseline"]),
    ):
        rows, nll = evaluate_epoch(
            tiny_model_dir,
            books,
            DEFAULT_TEMPLATES[0],
            SORT_SETTINGS,
            conditions,
            texts,
            batch_size=8,
            model_name="tiny",
            run=run,
            epoch=epoch,
        )
        put(f"sort/parametric/{run}/evaluate/epoch-{epoch}.parquet", rows)
        put(f"sort/parametric/{run}/evaluate/epoch-{epoch}_segment_nll.parquet", nll)
    # grounding: the fiction set and the KAIST form (its popularity factor, no document), then per checkpoint
    fiction, _, _ = fiction_grounding_items(corpus["fictions"], corpus["fict_qa"][:12], 0)
    response = {
        "response": "An answer. Another sentence.",
        "context_tokens": 90,
        "n_distractors": 0,
        "n_truncated_tokens": 0,
    }
    records = [
        {
            **item,
            **response,
            "response_id": f"r{k}",
            "gold_contexts": item["contexts"],
            "model": "m1",
            "run": "base_model",
            "step": 0,
            "condition": f"{item['version']}_gold",
        }
        for k, item in enumerate(fiction[:4])
    ]
    kaist = [
        {
            **r,
            "source": "kaist",
            "extra": {},
            "factors": {"popularity": "high", "contexts": "single", "answer_type": "definite"},
        }
        for r in records
    ]
    put("grounding/fiction/scores/m1.parquet", _grounding_rows(records, folder.parent, "fiction"))
    put("grounding/kaist/scores/m1.parquet", _grounding_rows(kaist, folder.parent, "kaist"))
    for run, step in (("base_model", 0), ("doc", 6)):
        checkpoint = [{**r, "model": "tiny", "run": run, "step": step} for r in records]
        put(
            f"grounding/finetune/tiny/scores/{run}/step-{step}.parquet", _grounding_rows(checkpoint, folder.parent, run)
        )
    # as the rule: every table but the parametric base model's empty rows (LEFT_OUT)
    shared = sorted(t for t in tables if t != "sort/parametric/base_model/evaluate/epoch-0.parquet")
    summary = write_card(folder / "README.md", [folder / t for t in shared], **CARD)
    return folder, {t: tables[t] for t in shared}, summary


def _configs(tables):
    grouped = {}
    for relpath in tables:
        grouped.setdefault(family_of(relpath).config, []).append(relpath)
    return grouped


def test_the_card_reads_back_and_documents_every_column(results):
    folder, tables, summary = results
    card = DatasetCard.load(folder / "README.md")
    grouped = _configs(tables)
    assert set(grouped) == {f.config for f in FAMILIES}  # every family is exercised
    assert card.data.license == "mit" and card.data.pretty_name and "grounding" in card.data.tags
    configs = {c["config_name"]: c for c in card.data.configs}
    assert set(configs) == set(grouped) == set(summary)
    infos = {i["config_name"]: i for i in card.data.dataset_info}
    for config, files in grouped.items():
        assert configs[config]["data_files"] == [{"split": "test", "path": sorted(files)}]
        columns = list(tables[files[0]].columns)
        assert [f["name"] for f in infos[config]["features"]] == columns
        rows = sum(len(tables[f]) for f in files)
        assert infos[config]["splits"][0]["num_examples"] == rows == summary[config]["rows"]
        # the config's section of the body: a row of its column table for every column, with a meaning
        section = card.text.split(f"### `{config}` (")[1].split("\n### ")[0]
        documented = dict(re.findall(r"^\| `(\w+)` \| [^|]+ \| ((?:[^|\\]|\\\|)+) \|", section, flags=re.MULTILINE))
        assert list(documented) == columns
        assert all(meaning.strip() not in ("", "–") for meaning in documented.values())
    assert "teacher-forced verbatim exact match of the document's last 25 tokens" in card.text  # em<n>
    assert "## Left out" in card.text and "train_log.parquet" in card.text
    assert "seed: 7" in card.text and "6 steps; fiction rate 0.5" in card.text and "m1" in card.text


def test_every_config_loads_with_datasets_as_the_card_says(results, tmp_path, monkeypatch):
    folder, tables, _ = results
    cache = str(tmp_path / "hf")
    datasets.disable_progress_bars()
    for config, files in _configs(tables).items():
        rows = datasets.load_dataset(str(folder), config, split="test", cache_dir=cache)
        assert rows.column_names == list(tables[files[0]].columns)
        assert rows.num_rows == sum(len(tables[f]) for f in files)
        first = rows.to_pandas().iloc[0]
        assert first["item_id"] == tables[min(files)].iloc[0]["item_id"]
    # the card's own examples, run from the folder above it: each loads its config's rows
    monkeypatch.chdir(folder.parent)
    monkeypatch.setattr(datasets, "load_dataset", functools.partial(datasets.load_dataset, cache_dir=cache))
    text = (folder / "README.md").read_text()
    for config, files in _configs(tables).items():
        section = text.split(f"### `{config}` (")[1].split("\n### ")[0]
        code = section.split("```python\n")[1].split("```")[0]
        scope = {}
        for statement in code.split("\nrows = ")[1:]:  # the folder config, then the Parquet files
            exec(code.split("\nrows = ")[0] + "\nrows = " + statement, scope)  # noqa: S102 - the card's own example
            assert scope["rows"].num_rows == sum(len(tables[f]) for f in files)


def test_the_card_holds_no_absolute_path(results):
    folder, _, _ = results
    text = (folder / "README.md").read_text()
    assert str(folder.parent) not in text and str(folder.resolve().parent) not in text
    card = DatasetCard(text)
    for config in card.data.configs:
        for entry in config["data_files"]:
            assert all(not path.startswith("/") and (folder / path).is_file() for path in entry["path"])


def test_an_undocumented_column_stops_the_card_naming_table_and_column(results, tmp_path):
    folder, tables, _ = results
    copy = tmp_path / "results"
    shutil.copytree(folder, copy)
    before = (copy / "README.md").read_text()
    extra = tables["fictionalqa/tiny/evaluate/doc/step-6.parquet"].assign(calibration=0.5)
    write_parquet(copy / "fictionalqa/tiny/evaluate/doc/step-9.parquet", extra)
    shared = [copy / t for t in tables] + [copy / "fictionalqa/tiny/evaluate/doc/step-9.parquet"]
    match = r"fictionalqa/tiny/evaluate/doc/step-9\.parquet: column 'calibration'"
    with pytest.raises(UndocumentedColumnError, match=match):
        write_card(copy / "README.md", shared, **CARD)
    assert (copy / "README.md").read_text() == before  # nothing written


def test_tables_the_card_cannot_describe_are_refused(results, tmp_path):
    folder, _, _ = results
    with pytest.raises(ValueError, match=r"sort/prompt/m1/validation\.parquet: not an item table of any config"):
        build_card(folder, [folder / "sort/prompt/m1/validation.parquet"], **CARD)
    outside = tmp_path / "step-0.parquet"
    shutil.copy(folder / "fictionalqa/tiny/evaluate/doc/step-6.parquet", outside)
    with pytest.raises(ValueError, match="not inside the card's folder"):
        build_card(folder, [outside], **CARD)
    # the base model's empty parametric rows (left out by the rule) share no columns with the others
    empty = folder / "sort/parametric/base_model/evaluate/epoch-0.parquet"
    assert pq.read_schema(empty).names == ["model", "run", "step", "epoch"]
    with pytest.raises(ValueError, match="a config's tables must share their columns"):
        build_card(folder, [folder / "sort/parametric/books/evaluate/epoch-1.parquet", empty], **CARD)
    with pytest.raises(ValueError, match="no item tables given: nothing to describe"):
        build_card(folder, [], **CARD)

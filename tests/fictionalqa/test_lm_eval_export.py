"""Export of MCQ suites as lm-evaluation-harness tasks: relative paths only, loaded by the harness itself
(lm-eval 0.4.13 is in requirements.txt) from another working directory after the folder is moved."""

import os
import re
import shutil
import zlib

import datasets
import pytest
import yaml
from lm_eval.tasks import TaskManager

from knowlab.core.io import read_jsonl
from knowlab.fictionalqa import suites
from knowlab.fictionalqa.corpus.mcq import build_mcq
from knowlab.fictionalqa.lm_eval_export import HELPER_SOURCE, export_mcq_suites, export_mcq_task, jinja_template
from knowlab.fictionalqa.suites import MCQ_TEMPLATE


class _TaskLoader(yaml.SafeLoader):
    """Reads a task YAML as the harness writes it, a ``!function`` tag as the string ``"!function <name>"``."""


_TaskLoader.add_constructor("!function", lambda loader, node: f"!function {loader.construct_scalar(node)}")


def _strings(value):
    if isinstance(value, dict):
        for k, v in value.items():
            yield str(k)
            yield from _strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)
    elif isinstance(value, str):
        yield value


def test_export_writes_the_items_a_multiple_choice_task_and_its_loader(corpus, tmp_path):
    items = build_mcq(corpus["fict_qa"], 4, seed=0)[:20]
    yaml_path, data_path = export_mcq_task(items, tmp_path / "tasks", "fictionalqa_mcq4", MCQ_TEMPLATE)
    assert yaml_path == tmp_path / "tasks" / "fictionalqa_mcq4.yaml"
    assert data_path == tmp_path / "tasks" / "fictionalqa_mcq4.jsonl" and read_jsonl(data_path) == items
    assert (tmp_path / "tasks" / "fictionalqa_data.py").read_text() == HELPER_SOURCE
    assert yaml.load(yaml_path.read_text(), Loader=_TaskLoader) == {
        "task": "fictionalqa_mcq4",
        "custom_dataset": "!function fictionalqa_data.load_test",
        "dataset_kwargs": {"data_file": "fictionalqa_mcq4.jsonl"},
        "test_split": "test",
        "output_type": "multiple_choice",
        "doc_to_text": "Question: {{question}}\nAnswer:",
        "doc_to_choice": "choices",
        "doc_to_target": "gold",
        "target_delimiter": " ",
        "metric_list": [
            {"metric": "acc", "aggregation": "mean", "higher_is_better": True},
            {"metric": "acc_norm", "aggregation": "mean", "higher_is_better": True},
        ],
        "metadata": {"version": 1.0},
    }


def test_the_exported_folder_names_no_absolute_path(corpus, tmp_path):
    suites_ = {f"fictionalqa_mcq{k}": build_mcq(corpus["fict_qa"], k, seed=0)[:5] for k in (4, 10)}
    out = tmp_path / "lm_eval"
    paths = export_mcq_suites(suites_, out, MCQ_TEMPLATE)
    assert paths == [out / "fictionalqa_mcq4.yaml", out / "fictionalqa_mcq10.yaml"]
    assert sorted(p.name for p in out.iterdir()) == [
        "README.md",
        "fictionalqa_data.py",
        "fictionalqa_mcq10.jsonl",
        "fictionalqa_mcq10.yaml",
        "fictionalqa_mcq4.jsonl",
        "fictionalqa_mcq4.yaml",
    ]
    for path in out.iterdir():
        assert str(tmp_path) not in path.read_text(), path.name
    for path in paths:
        for value in _strings(yaml.load(path.read_text(), Loader=_TaskLoader)):
            assert not os.path.isabs(value) and "/" not in value.removeprefix("!function "), (path.name, value)
    readme = (out / "README.md").read_text()
    assert "- `fictionalqa_mcq4`: 5 questions\n- `fictionalqa_mcq10`: 5 questions" in readme
    command = "lm_eval --model hf --model_args pretrained=CHECKPOINT --include_path results/fictionalqa/lm_eval"
    assert f"{command} --tasks fictionalqa_mcq4" in readme


def test_the_harness_loads_the_moved_tasks_and_builds_our_requests(corpus, tmp_path, monkeypatch):
    """lm-eval's own ``TaskManager``, run from another directory on the moved folder, loads every task and builds
    exactly the (context, continuation) requests that ``mcq_rows`` scores, in order; its gold, ``acc`` and
    ``acc_norm`` on the same log-likelihoods are ours.  A drift on either side fails."""
    items = {k: build_mcq(corpus["fict_qa"], k, seed=0)[:20] for k in (4, 10)}
    export_mcq_suites({f"fictionalqa_mcq{k}": subset for k, subset in items.items()}, tmp_path / "out", MCQ_TEMPLATE)
    moved = shutil.move(tmp_path / "out", tmp_path / "moved")
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")
    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", tmp_path / "hf_datasets")  # not ~/.cache

    def fake_ll(continuation):  # distinct per choice, not monotone in its length
        return -(zlib.crc32(continuation.encode()) % 1000) / 100

    scored = []  # the requests mcq_rows hands to the scoring engine

    def fake_loglikelihood(model, tokenizer, requests, batch_size, desc):
        scored.extend(requests)
        return [(fake_ll(cont), 1, False) for _, cont in requests]

    monkeypatch.setattr(suites, "loglikelihood", fake_loglikelihood)
    tasks = TaskManager(include_path=str(moved), include_defaults=False).load(["fictionalqa_mcq4", "fictionalqa_mcq10"])
    tasks = tasks["tasks"]
    assert sorted(tasks) == ["fictionalqa_mcq10", "fictionalqa_mcq4"]
    for k, subset in items.items():
        scored.clear()
        rows = suites.mcq_rows(None, None, subset, MCQ_TEMPLATE, batch_size=4)
        task = tasks[f"fictionalqa_mcq{k}"]
        task.build_all_requests(rank=0, world_size=1)
        assert len(task.instances) == 20 * k and [tuple(i.arguments) for i in task.instances] == scored
        docs = list(task.test_docs())
        assert [doc["question_id"] for doc in docs] == [row["item_id"] for row in rows]
        assert [task.doc_to_target(doc) for doc in docs] == [row["gold"] for row in rows]
        for doc, row in zip(docs, rows):
            requests = [i for i in task.instances if i.doc["question_id"] == doc["question_id"]]
            metrics = task.process_results(doc, [(fake_ll(i.arguments[1]), False) for i in requests])
            assert (metrics["acc"], metrics["acc_norm"]) == (row["acc"], row["acc_norm"]), doc["question_id"]


def test_jinja_template_conversion_and_refusals():
    assert jinja_template("Q: {question}\n\nA:") == "Q: {{question}}\n\nA:"
    refusals = {
        "Q: {question} {answer}": "only a plain {question} field",
        "Q: {question!r}": "only a plain {question} field",
        "Q: {question:>10}": "only a plain {question} field",
        "{{literal}} {question}": "literal braces cannot be exported",
        "Q:": "has no {question} field",
    }
    for bad, message in refusals.items():
        with pytest.raises(ValueError, match=re.escape(f"template {bad!r}") + ".*" + re.escape(message)):
            jinja_template(bad)


def test_export_refuses_bad_items_and_names(tmp_path):
    with pytest.raises(ValueError, match="no MCQ items to export"):
        export_mcq_task([], tmp_path, "t", MCQ_TEMPLATE)
    with pytest.raises(ValueError, match="not an MCQ item with a gold index into its choices: 'q1'"):
        export_mcq_task(
            [{"question_id": "q1", "question": "?", "choices": ["a", "b"], "gold": 2}], tmp_path, "t", MCQ_TEMPLATE
        )
    item = {"question_id": "q1", "question": "?", "choices": ["a", "b"], "gold": 1}
    for name in ("", "sub/t", "/abs/t", ".hidden"):
        with pytest.raises(ValueError, match="not a plain file name"):
            export_mcq_task([item], tmp_path, name, MCQ_TEMPLATE)
    with pytest.raises(ValueError, match="no MCQ suites to export"):
        export_mcq_suites({}, tmp_path, MCQ_TEMPLATE)
    assert not list(tmp_path.iterdir())

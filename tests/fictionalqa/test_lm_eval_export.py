"""Export of MCQ suites as lm-evaluation-harness tasks."""

import jinja2
import pytest
import yaml

from knowlab.core.io import read_jsonl
from knowlab.fictionalqa.corpus.mcq import build_mcq
from knowlab.fictionalqa.lm_eval_export import export_mcq_task, jinja_template
from knowlab.fictionalqa.suites import MCQ_TEMPLATE


def test_export_writes_the_items_and_a_multiple_choice_task(corpus, tmp_path):
    items = build_mcq(corpus["fict_qa"], 4, seed=0)[:20]
    yaml_path, data_path = export_mcq_task(items, tmp_path / "tasks", "fictionalqa_mcq4", MCQ_TEMPLATE)
    assert yaml_path == tmp_path / "tasks" / "fictionalqa_mcq4.yaml" and data_path.is_absolute()
    assert read_jsonl(data_path) == items
    task = yaml.safe_load(yaml_path.read_text())
    assert task == {
        "task": "fictionalqa_mcq4",
        "dataset_path": "json",
        "dataset_kwargs": {"data_files": {"test": str(data_path)}},
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


def test_the_harness_requests_are_ours(corpus, tmp_path):
    """Rendered as the harness does (Jinja context, target_delimiter + choice), each request is mcq_rows' request."""
    items = build_mcq(corpus["fict_qa"], 10, seed=0)[:20]
    yaml_path, _ = export_mcq_task(items, tmp_path, "t", MCQ_TEMPLATE)
    task = yaml.safe_load(yaml_path.read_text())
    render = jinja2.Environment(undefined=jinja2.StrictUndefined, keep_trailing_newline=True).from_string
    for item in items:
        context = render(task["doc_to_text"]).render(**item)
        assert context == MCQ_TEMPLATE.format(question=item["question"])
        requests = [(context, task["target_delimiter"] + choice) for choice in item[task["doc_to_choice"]]]
        assert requests == [(context, " " + choice) for choice in item["choices"]]
        assert item[task["doc_to_target"]] == item["gold"]


def test_jinja_template_conversion_and_refusals():
    assert jinja_template("Q: {question}\n\nA:") == "Q: {{question}}\n\nA:"
    for bad in ("Q: {question} {answer}", "Q: {question!r}", "Q: {question:>10}", "{{literal}} {question}", "Q:"):
        with pytest.raises(ValueError):
            jinja_template(bad)


def test_export_refuses_bad_items(tmp_path):
    with pytest.raises(ValueError, match="no MCQ items"):
        export_mcq_task([], tmp_path, "t", MCQ_TEMPLATE)
    with pytest.raises(ValueError, match="q1"):
        export_mcq_task(
            [{"question_id": "q1", "question": "?", "choices": ["a", "b"], "gold": 2}], tmp_path, "t", MCQ_TEMPLATE
        )

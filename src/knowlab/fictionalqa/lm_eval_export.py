"""Export of an MCQ suite as an lm-evaluation-harness task, so anyone can re-score a checkpoint with the harness.

:func:`export_mcq_task` writes two files into ``out_dir``:

- ``<task_name>.jsonl``: the MCQ items as given (records ``{question_id, question,
  choices, gold, n_choices, ...}``, see :mod:`knowlab.fictionalqa.corpus.mcq`), one per line;
- ``<task_name>.yaml``: a task of ``output_type: multiple_choice`` reading that file
  (``dataset_path: json``, split ``test``) with ``doc_to_text`` = our template as
  Jinja (``"Question: {question}\\nAnswer:"`` becomes ``"Question: {{question}}\\nAnswer:"``),
  ``doc_to_choice: choices``, ``doc_to_target: gold``, ``target_delimiter: " "`` and
  the metrics ``acc`` and ``acc_norm``.

The harness then builds, per choice, the request ``(template filled with the
question, " " + choice)``, exactly the requests of
:func:`knowlab.fictionalqa.suites.mcq_rows`, and its ``acc`` / ``acc_norm`` (argmax of
the summed log-likelihood, of the log-likelihood per character of the choice) are
our columns of the same names.  Usage::

    lm_eval --model hf --model_args pretrained=CHECKPOINT,dtype=float32 \\
        --include_path OUT_DIR --tasks TASK_NAME --log_samples --output_path RESULTS

The YAML names the data file by its absolute path: move both files together and
export again.  ``benchmarks/eval_vs_lm_eval.py`` checks that both tools give the
same per-item predictions.
"""

from __future__ import annotations

import os
import string
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

from knowlab.core.io import write_jsonl


def jinja_template(template: str) -> str:
    """Our ``str.format`` template with one ``{question}`` field as a Jinja template (``{{question}}``).

    Raises:
        ValueError: a field other than ``{question}``, a conversion or format spec, or a literal
            brace or Jinja delimiter (``{``, ``}``, ``{%``, ``{#``) that the harness would misread.
    """
    parts = []
    for literal, field, spec, conversion in string.Formatter().parse(template):
        if any(c in literal for c in "{}") or "{%" in literal or "{#" in literal:
            raise ValueError(f"template {template!r}: literal braces cannot be exported")
        parts.append(literal)
        if field is None:
            continue
        if field != "question" or spec or conversion:
            raise ValueError(f"template {template!r}: only a plain {{question}} field can be exported")
        parts.append("{{question}}")
    if "{{question}}" not in parts:
        raise ValueError(f"template {template!r} has no {{question}} field")
    return "".join(parts)


def export_mcq_task(
    items: Sequence[dict[str, Any]], out_dir: str | os.PathLike, task_name: str, template: str
) -> tuple[Path, Path]:
    """Write ``items`` and an lm-evaluation-harness task for them (see module docstring).

    Args:
        items: MCQ records with at least ``question`` (str), ``choices`` (list of str) and
            ``gold`` (int, index into ``choices``), all with the same keys.
        out_dir: folder to write into (created if missing).
        task_name: the harness task name, also the files' stem.
        template: our context template, a ``str.format`` string with one ``{question}`` field
            (e.g. :data:`knowlab.fictionalqa.suites.MCQ_TEMPLATE`).

    Returns:
        ``(yaml_path, data_path)``.

    Raises:
        ValueError: no items, an item without ``question``/``choices``/``gold`` or with a gold
            index out of range, or a template :func:`jinja_template` cannot convert.
    """
    if not items:
        raise ValueError("no MCQ items to export")
    for item in items:
        if not {"question", "choices", "gold"} <= item.keys() or not 0 <= int(item["gold"]) < len(item["choices"]):
            raise ValueError(f"not an MCQ item with a gold index into its choices: {item.get('question_id', item)!r}")
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    data_path = (out_dir / f"{task_name}.jsonl").resolve()
    yaml_path = out_dir / f"{task_name}.yaml"
    write_jsonl(data_path, items)
    task = {
        "task": task_name,
        "dataset_path": "json",
        "dataset_kwargs": {"data_files": {"test": str(data_path)}},
        "test_split": "test",
        "output_type": "multiple_choice",
        "doc_to_text": jinja_template(template),
        "doc_to_choice": "choices",
        "doc_to_target": "gold",
        "target_delimiter": " ",
        "metric_list": [
            {"metric": metric, "aggregation": "mean", "higher_is_better": True} for metric in ("acc", "acc_norm")
        ],
        "metadata": {"version": 1.0},
    }
    yaml_path.write_text(yaml.safe_dump(task, sort_keys=False, allow_unicode=True))
    return yaml_path, data_path

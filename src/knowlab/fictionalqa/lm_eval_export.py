"""Export of the MCQ suites as lm-evaluation-harness tasks, so anyone can re-score a checkpoint with the harness.

:func:`export_mcq_task` writes into ``out_dir``:

- ``<task_name>.jsonl``: the MCQ items as given (records ``{question_id, question,
  choices, gold, n_choices, ...}``, see :mod:`knowlab.fictionalqa.corpus.mcq`), one per line;
- ``<task_name>.yaml``: a task of ``output_type: multiple_choice`` on split ``test`` with
  ``doc_to_text`` = our template as Jinja (``"Question: {question}\\nAnswer:"`` becomes
  ``"Question: {{question}}\\nAnswer:"``), ``doc_to_choice: choices``, ``doc_to_target: gold``,
  ``target_delimiter: " "`` and the metrics ``acc`` and ``acc_norm``; its data come from
  ``custom_dataset: !function fictionalqa_data.load_test`` with
  ``dataset_kwargs: {data_file: <task_name>.jsonl}``, a file name, no path;
- ``fictionalqa_data.py`` (:data:`HELPER_SOURCE`, the same for every task): ``load_test(data_file,
  **metadata)`` returns ``datasets.load_dataset("json", data_files={"test": <its own folder> /
  data_file})``, a ``DatasetDict`` with the one split ``test``, one row per line.

:func:`export_mcq_suites` exports several suites into one folder and adds a ``README.md`` that
says how to run them (rule ``fictionalqa_lm_eval_tasks`` writes ``results/fictionalqa/lm_eval/`` with it).  The folder
holds no absolute path: it loads from any working directory, moved or copied whole::

    lm_eval --model hf --model_args pretrained=CHECKPOINT,dtype=float32 \\
        --include_path OUT_DIR --tasks TASK_NAME --log_samples --output_path RESULTS

Why a Python helper (lm-eval 0.4.13, the version this was checked against; ``lm_eval`` and
``lm-eval run`` take the same flags): the harness resolves no data path against the task's YAML.
``ConfigurableTask.download`` (``lm_eval/api/task.py``) passes ``dataset_path`` and
``dataset_kwargs`` unchanged to ``datasets.load_dataset``, which resolves a relative
``data_files`` entry, or a local dataset folder given as ``dataset_path`` (with or without a
dataset card), against the current directory; ``TaskConfig`` (``lm_eval/config/task.py``)
rewrites neither.  The one thing the harness resolves against the YAML's folder is a
``!function module.name`` tag (``lm_eval/tasks/_yaml_loader.py``: ``_import_func_in_yml`` loads
``<yaml folder>/module.py`` first); ``custom_dataset`` is such a callable, called with
``**metadata, **dataset_kwargs`` in place of ``load_dataset`` (the factory,
``lm_eval/tasks/_factory.py``, adds ``config_source``, the YAML's path, to ``metadata``; CLI
``--metadata`` and ``model_args`` may add more, which the helper ignores).  So the helper
finds the data file beside itself (``__file__``), hence beside the YAML.  The harness logs a
warning on every ``custom_dataset`` task ("Custom kwargs can be passed to ``--metadata``"):
nothing to pass here.

The harness then builds, per choice, the request ``(template filled with the
question, " " + choice)``, exactly the requests of
:func:`knowlab.fictionalqa.suites.mcq_rows`, and its ``acc`` / ``acc_norm`` (argmax of
the summed log-likelihood, of the log-likelihood per character of the choice) are
our columns of the same names.  ``tests/fictionalqa/test_lm_eval_export.py`` loads the
tasks with the harness's ``TaskManager``; ``benchmarks/eval_vs_lm_eval.py`` checks that
both tools give the same per-item predictions on a checkpoint.
"""

from __future__ import annotations

import os
import string
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from knowlab.core.io import write_jsonl

#: the module written beside the task YAMLs; its ``load_test`` is every task's ``custom_dataset``
HELPER = "fictionalqa_data"

HELPER_SOURCE = '''"""Loads a FictionalQA task's data for lm-evaluation-harness (written by knowlab.fictionalqa.lm_eval_export).

The harness imports this module from the folder of the task YAML that names it
(``custom_dataset: !function fictionalqa_data.load_test``), so the data file is found
beside it, from any working directory.
"""

from pathlib import Path

import datasets


def load_test(data_file, **metadata):
    """The split ``test`` of the JSON Lines file ``data_file`` beside this module (``metadata``: ignored)."""
    path = Path(__file__).resolve().parent / data_file
    return datasets.load_dataset("json", data_files={"test": str(path)})
'''

README = """# FictionalQA MCQ suites as lm-evaluation-harness tasks

Written by rule `fictionalqa_lm_eval_tasks` (`knowlab.fictionalqa.lm_eval_export`) from
`results/fictionalqa/corpus/mcq/`.

{tasks}

Run a task on a checkpoint (lm-evaluation-harness 0.4.13, `pip install "lm-eval[hf]==0.4.13"`),
naming this folder with `--include_path` (the command as run from the repository root):

    lm_eval --model hf --model_args pretrained=CHECKPOINT --include_path results/fictionalqa/lm_eval --tasks {first}
{checkpoints}
(add `,dtype=float32` to `--model_args` for the dtype our evaluation scores in,
`--log_samples --output_path RESULTS` for the per-item log-likelihoods).  `acc` and `acc_norm`
are the columns of the same names in `results/fictionalqa/<model>/evaluate/`: the harness builds the same
requests, context `{template}` and continuation `" " + choice`.

Each task is `<task>.yaml` and its items `<task>.jsonl`.  The YAMLs name no path: their data
come from `fictionalqa_data.py` (`custom_dataset`), which the harness imports from this folder
and which reads the `.jsonl` beside it, so the folder can be moved or copied whole.
"""


class _Function(str):
    """A ``!function`` tag of the harness's YAML loader (written, never read back here)."""


class _Dumper(yaml.SafeDumper):
    pass


_Dumper.add_representer(_Function, lambda dumper, value: dumper.represent_scalar("!function", str(value)))


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
    """Write ``items``, an lm-evaluation-harness task for them and the data helper (see module docstring).

    Args:
        items: MCQ records with at least ``question`` (str), ``choices`` (list of str) and
            ``gold`` (int, index into ``choices``), all with the same keys.
        out_dir: folder to write into (created if missing).
        task_name: the harness task name, also the files' stem (a plain file name).
        template: our context template, a ``str.format`` string with one ``{question}`` field
            (e.g. :data:`knowlab.fictionalqa.suites.MCQ_TEMPLATE`).

    Returns:
        ``(yaml_path, data_path)``: ``out_dir / f"{task_name}.yaml"`` and ``out_dir / f"{task_name}.jsonl"``.

    Raises:
        ValueError: no items, an item without ``question``/``choices``/``gold`` or with a gold
            index out of range, a task name that is not a plain file name, or a template
            :func:`jinja_template` cannot convert.
    """
    if not items:
        raise ValueError("no MCQ items to export")
    if not task_name or Path(task_name).name != task_name or task_name.startswith("."):
        raise ValueError(f"task name {task_name!r} is not a plain file name")
    for item in items:
        if not {"question", "choices", "gold"} <= item.keys() or not 0 <= int(item["gold"]) < len(item["choices"]):
            raise ValueError(f"not an MCQ item with a gold index into its choices: {item.get('question_id', item)!r}")
    doc_to_text = jinja_template(template)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    data_path = out_dir / f"{task_name}.jsonl"
    yaml_path = out_dir / f"{task_name}.yaml"
    write_jsonl(data_path, items)
    task = {
        "task": task_name,
        "custom_dataset": _Function(f"{HELPER}.load_test"),
        "dataset_kwargs": {"data_file": data_path.name},
        "test_split": "test",
        "output_type": "multiple_choice",
        "doc_to_text": doc_to_text,
        "doc_to_choice": "choices",
        "doc_to_target": "gold",
        "target_delimiter": " ",
        "metric_list": [
            {"metric": metric, "aggregation": "mean", "higher_is_better": True} for metric in ("acc", "acc_norm")
        ],
        "metadata": {"version": 1.0},
    }
    yaml_path.write_text(yaml.dump(task, Dumper=_Dumper, sort_keys=False, allow_unicode=True), encoding="utf-8")
    (out_dir / f"{HELPER}.py").write_text(HELPER_SOURCE, encoding="utf-8")
    return yaml_path, data_path


def task_name(mcq_path: str | os.PathLike) -> str:
    """The harness task of an MCQ suite file: ``results/fictionalqa/corpus/mcq/mcq4.jsonl`` -> ``fictionalqa_mcq4``."""
    return f"fictionalqa_{Path(mcq_path).stem}"


CHECKPOINTS = """
where CHECKPOINT is a folder of one of the base models fine-tuned (`finetune.models`; the tasks are
the same for every model):

{models}
"""


def export_mcq_suites(
    suites: Mapping[str, Sequence[dict[str, Any]]],
    out_dir: str | os.PathLike,
    template: str,
    models: Mapping[str, str] | None = None,
) -> list[Path]:
    """Export each ``{task_name: items}`` of ``suites`` with :func:`export_mcq_task` into ``out_dir``,
    plus a ``README.md`` naming the tasks (with their item counts) and the command that runs them;
    ``models`` (base model name -> its folder, relative to the workflow's directory) adds where each
    base model's checkpoints are.

    Returns:
        The YAML paths, in the order of ``suites``.

    Raises:
        ValueError: no suites, or what :func:`export_mcq_task` raises for one.
    """
    if not suites:
        raise ValueError("no MCQ suites to export")
    paths = [export_mcq_task(items, out_dir, name, template)[0] for name, items in suites.items()]
    tasks = "\n".join(f"- `{name}`: {len(items)} questions" for name, items in suites.items())
    listed = "\n".join(
        f"- `{name}`: `{folder}` (step 0), `results/fictionalqa/{name}/finetune/<run>/checkpoints/step-<N>`"
        for name, folder in (models or {}).items()
    )
    text = README.format(
        tasks=tasks,
        first=next(iter(suites)),
        template=jinja_template(template).replace("\n", "\\n"),
        checkpoints=CHECKPOINTS.format(models=listed) if listed else "",
    )
    (Path(out_dir) / "README.md").write_text(text, encoding="utf-8")
    return paths

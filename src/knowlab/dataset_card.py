"""A Hugging Face dataset card for the item-level result tables of the three studies (rule ``dataset_card``).

The workflow's evaluations write one Parquet row per (item, checkpoint or model, condition)
(DESIGN "Item-level results").  :func:`write_card` puts a dataset card (``README.md`` with a
YAML header) at the root of the results folder, so that the tables load as a dataset::

    datasets.load_dataset("results", "<config>", split="test")
    datasets.load_dataset("parquet", data_files={"test": [...]}, split="test")

One config per table family (:data:`FAMILIES`): FictionalQA checkpoint evaluations, SORT under
the memory conditions, SORT on the FictionalQA documents, SORT after parametric-memory
fine-tuning (its rows and its segment perplexities), grounding per dataset, and grounding at
every FictionalQA checkpoint.  Every config has one split, ``test``: evaluation rows.  The
tables left out are :data:`LEFT_OUT`, each with the reason.

The header is built with ``huggingface_hub``'s :class:`~huggingface_hub.DatasetCardData` and
the writers ``datasets`` itself uses for ``push_to_hub`` (``configs`` with ``data_files``
relative to the card's folder; ``dataset_info`` with the features of the Parquet schemas and
the row count of each split, which ``load_dataset`` verifies).

Column meanings live here and only here: each family's ``columns`` (and, for names made from
the config such as ``em<n>``, its ``column_patterns``), taken from the docstrings of the
library functions that write the columns (``source``).  A table with a column that has no
entry stops the card (:class:`UndocumentedColumnError`), so a new column cannot be shared
undocumented.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from datasets import Features
from datasets.info import DatasetInfo, DatasetInfosDict
from datasets.splits import SplitDict, SplitInfo
from datasets.utils.metadata import MetadataConfigs
from huggingface_hub import DatasetCard, DatasetCardData

from knowlab import layout
from knowlab.core.io import atomic_path

CARD_NAME = "README.md"
SPLIT = "test"
LICENSE = "mit"  # the project's LICENSE
PRETTY_NAME = "knowlab item-level results: FictionalQA, SORT and grounding"
TAGS = ("knowledge-acquisition", "memorization", "episodic-memory", "grounding", "llm-evaluation", "item-level")
# columns whose distinct values the card lists per config (when a config's tables have them)
SUMMARY_COLUMNS = ("model", "run", "suite", "condition", "dataset")
MAX_LISTED = 12  # distinct values listed per column; more are counted


class UndocumentedColumnError(ValueError):
    """A table has a column that :data:`FAMILIES` does not document; the message names table and column."""


@dataclass(frozen=True)
class Family:
    """One config of the card: a family of item tables that share their columns.

    Attributes:
        config: the config name (``load_dataset(folder, config)``).
        study: FictionalQA, SORT or Grounding.
        table: where its tables are and the rule that writes them (:mod:`knowlab.layout`);
            :attr:`pattern` (a regular expression each table's path under results/ matches as a
            whole), :attr:`glob` (the same, for the ``load_dataset("parquet", ...)`` example, used
            only where it matches exactly the config's tables) and :attr:`rule` come from it.
        row: what one row is.
        source: the library function that defines its columns.
        columns: column name -> ``(meaning, unit)``; unit ``""``: none (an id, a label, text).
        column_patterns: regular expression of column names -> ``(meaning, unit)``, formatted with
            the match's groups (names built from the config, e.g. ``em<n>``).
    """

    config: str
    study: str
    table: layout.Table
    row: str
    source: str
    columns: Mapping[str, tuple[str, str]]
    column_patterns: Mapping[str, tuple[str, str]] = field(default_factory=dict)

    @property
    def pattern(self) -> str:
        return self.table.regex

    @property
    def glob(self) -> str:
        return self.table.glob

    @property
    def rule(self) -> str:
        return self.table.rule

    def matches(self, relpath: str) -> bool:
        """Whether ``relpath`` (a path relative to the results folder) is one of this family's tables."""
        return re.fullmatch(self.pattern, relpath) is not None

    def describe(self, table: str, column: str) -> tuple[str, str]:
        """``(meaning, unit)`` of ``column`` of ``table``.

        Raises:
            UndocumentedColumnError: the column has no entry (the message names the table and column).
        """
        if column in self.columns:
            return self.columns[column]
        for expression, (meaning, unit) in self.column_patterns.items():
            match = re.fullmatch(expression, column)
            if match:
                return meaning.format(*match.groups()), unit.format(*match.groups())
        raise UndocumentedColumnError(
            f"{table}: column {column!r} of config {self.config!r} has no documentation; add it to that "
            f"family's columns in knowlab.dataset_card.FAMILIES (meaning and unit, from {self.source})"
        )


# ------------------------------------------------------------------------------- column docs
# From the docstrings of knowlab.fictionalqa.suites, knowlab.sort.evaluate / score, knowlab.grounding
# .metrics / pipeline / conditions / evaluator; the run and step labels from the scripts and rules.

# the run and step of a model evaluated as it is, and of a FictionalQA checkpoint
_AS_IS = {
    "run": ("`base_model`: a model evaluated as it is", ""),
    "step": ("0: no fine-tuning", "optimizer steps"),
}
_CHECKPOINT_STEP = ("optimizer step of the checkpoint; 0 is the base model", "optimizer steps")
_CHECKPOINT = {
    "run": ("FictionalQA run of the checkpoint (`base_model` at step 0)", ""),
    "step": _CHECKPOINT_STEP,
}

_FICTIONALQA = {
    "model": ("base model fine-tuned: a key of `finetune.models` (the `{ft_model}` level of the path)", ""),
    "run": (
        (
            "fine-tuning run: a split (`doc`, `event`, `fictsheets`, `style_<s>`), `control` (webtext only), or "
            "`base_model` (the base model, evaluated once: step 0 of every run)"
        ),
        "",
    ),
    "step": _CHECKPOINT_STEP,
    "checkpoint": (
        "model folder evaluated, relative to the workflow's root (the base model at step 0: `resources/base_model`, or `resources/base_models/<model>`)",
        "",
    ),
    "suite": (
        (
            "`fiction_doc`, `fictsheet_doc`, `webtext`, `fict_qa_nll`, `real_qa_nll` or `mcq<k>` (k choices); "
            "columns that do not apply to a row's suite are null"
        ),
        "",
    ),
    "item_id": (
        (
            "`fiction_id` (fiction_doc), `event_id` (fictsheet_doc), `webtext_id` (webtext) or `question_id` "
            "(Q&A and MCQ suites); the train/val side of a run is in `fictionalqa/splits/<run>.json`"
        ),
        "",
    ),
    "nll_sum": (
        (
            'summed negative log-likelihood of the document after a prefix token, or of `" " + answer` after '
            "the question prompt (document, webtext and `*_nll` suites)"
        ),
        "nats",
    ),
    "n_tokens": ("tokens scored (document, webtext and `*_nll` suites)", "tokens"),
    "loss": ("`nll_sum / n_tokens`: mean next-token negative log-likelihood", "nats per token"),
    "pred": ("choice with the largest summed log-likelihood (`mcq<k>`)", "0-based choice index"),
    "pred_norm": (
        "choice with the largest log-likelihood per character of the choice (`mcq<k>`)",
        "0-based choice index",
    ),
    "gold": ("the correct choice (`mcq<k>`)", "0-based choice index"),
    "acc": ("`pred == gold` (lm-evaluation-harness `acc`)", "0/1"),
    "acc_norm": ("`pred_norm == gold` (lm-evaluation-harness `acc_norm`)", "0/1"),
    "gold_logprob_norm": ("log-softmax over the choices' log-likelihoods, at the correct choice", "nats (<= 0)"),
    "choice_loglik": (
        'summed log-likelihood of `" " + choice` after the question prompt, per choice in the item\'s order',
        "nats",
    ),
}
_FICTIONALQA_PATTERNS = {
    r"em(\d+)": (
        (
            "teacher-forced verbatim exact match of the document's last {0} tokens: 1 when the argmax prediction "
            "equals every token of that suffix (document suites; null for a document shorter than {0} tokens)"
        ),
        "0/1",
    ),
}

_SORT_ITEM = {
    "model": (
        (
            "name of the model evaluated: the base model's display name or its `eval_models` key; for the rows "
            "of FictionalQA checkpoints, the base model fine-tuned (a key of `finetune.models`)"
        ),
        "",
    ),
    "item_id": (
        (
            "SORT item `<book_id>|E<excerpt length>|S<segment length>|x<excerpt index>|b<distance bin>`; pairs the "
            "rows of two checkpoints or conditions"
        ),
        "",
    ),
    "book_id": ("source text of the excerpt", ""),
    "excerpt_length": ("excerpt length L_E", "words"),
    "segment_length": ("segment length L_S", "words"),
    "distance_bin": ("distance bin of the segment pair (paper App. A.2)", "0-3"),
    "distance": ("start of the later segment minus start of the earlier one", "words"),
    "split": ("item split: `test` (validation items only choose the prompt)", ""),
    "condition": (
        (
            "memory condition: `baseline` (no source text), `in_context` (the excerpt in the prompt), `rag` "
            "(retrieved passages) or `oracle_rag` (the passages that hold the segments)"
        ),
        "",
    ),
    "template_id": ("prompt template (`<template>+<reading>` under RAG), chosen on the validation items", ""),
    "answer": ("correct label: the one (`A` or `B`) whose segment comes first in the text", ""),
    "logp_a": ("log of the summed probability of the tokens of label A after the answer prefix", "nats"),
    "logp_b": ("log of the summed probability of the tokens of label B after the answer prefix", "nats"),
    "prediction": (
        (
            "the model's answer: under `forced_choice` the label with the larger probability (a tie goes to A); "
            "under `greedy` the label of the most probable next token, `none` when that token is neither label"
        ),
        "",
    ),
    "answer_rule": ("how `prediction` was read, config `sort.answer`: `forced_choice` or `greedy`", ""),
    "correct": ("`prediction == answer` (false for `none`)", ""),
    "score": ("`log(p(answer) / (p(A) + p(B)))`; log 0.5 when the model cannot tell A from B", "nats (<= 0)"),
    "logp_labels": ("`log(p(A) + p(B))`: probability mass on the two labels", "nats"),
    "label_is_greedy": ("the most probable next token of the whole vocabulary is a label token", ""),
    "n_context_tokens": ("tokens of the prompt", "tokens"),
}
_SORT = {**_SORT_ITEM, **_AS_IS}
_SORT_FICTION = {
    **_SORT_ITEM,
    **_CHECKPOINT,
    "book_id": ("FictionalQA document (`fiction_id`) the excerpt is taken from", ""),
    "document_id": (
        "FictionalQA document (`fiction_id`); its train/val side of a run is in `fictionalqa/splits/<run>.json`",
        "",
    ),
}
_PARAMETRIC_RUN = {
    "run": (
        (
            "parametric-memory run: `books` (the SORT texts in chunks + instruction data) or `instructions` "
            "(instruction data alone); `base` for the base model at epoch 0"
        ),
        "",
    ),
    "step": ("optimizer step at the end of the epoch (0: the base model)", "optimizer steps"),
    "epoch": ("passes over the run's training texts (0: the base model)", "epochs"),
}
_SORT_PARAMETRIC = {**_SORT_ITEM, **_PARAMETRIC_RUN}
_SEGMENT_NLL = {
    "model": _SORT_ITEM["model"],
    "item_id": _SORT_ITEM["item_id"],
    **_PARAMETRIC_RUN,
    "n_tokens_a": ("tokens of the segment under label A", "tokens"),
    "n_tokens_b": ("tokens of the segment under label B", "tokens"),
    "nll_a": ("mean negative log-likelihood per token of segment A alone, with no context", "nats per token"),
    "nll_b": ("mean negative log-likelihood per token of segment B alone, with no context", "nats per token"),
    "ppl_a": ("perplexity of segment A: `exp(nll_a)`", ""),
    "ppl_b": ("perplexity of segment B: `exp(nll_b)`", ""),
}

_SCORES = (
    "the evaluator's score (see `evaluator`): bi-encoder cosine, cross-encoder logit, or LLM judge "
    "`log p(True) - log p(False)`"
)
_SCORE_UNIT = "cosine, logit or nats (per `evaluator`)"
_GROUNDING = {
    "response_key": ("key of the response's atomic facts in the `_facts.json` beside the table (= response_id)", ""),
    "item_id": ("grounding question; its Original and Conflict versions share it", ""),
    "version": ("item version whose gold contexts and atomic facts score the response: `original` or `conflict`", ""),
    "factor_contexts": ("the question needs one context (`single`) or several (`multi`)", ""),
    "factor_answer_type": ("`definite` (a short answer) or `free_form`", ""),
    "factor_popularity": ("popularity of the question's subject, `high` or `low` (KAIST)", ""),
    "factor_style": ("style of the FictionalQA document the question is about (news, blog, ...)", ""),
    "precision": (
        "share of the response's atomic facts supported by the gold contexts (0 for a response with none)",
        "fraction",
    ),
    "recall": ("share of the gold atomic facts supported by the response", "fraction"),
    "f1": ("harmonic mean of precision and recall (0 when either is 0)", "fraction"),
    "answer_accuracy": (
        "an answer alternative occurs in the response (case-insensitive); null for free-form questions",
        "0/1",
    ),
    "n_response_facts": ("atomic facts of the response", "count"),
    "n_gold_facts": ("gold atomic facts of the item", "count"),
    "precision_support": ("per atomic fact of the response: supported by the gold contexts", ""),
    "precision_scores": (f"per atomic fact of the response against the gold contexts: {_SCORES}", _SCORE_UNIT),
    "recall_support": ("per gold atomic fact: supported by the response", ""),
    "recall_scores": (f"per gold atomic fact against the response: {_SCORES}", _SCORE_UNIT),
    "model": ("model that generated the response", ""),
    **_AS_IS,
    "dataset": ("`fiction` (derived from the FictionalQA corpus) or `kaist` (the paper's release)", ""),
    "condition": (
        (
            "contexts the question was answered from: `original_gold` / `conflict_gold` (gold contexts), "
            "`original_dist` / `conflict_dist` (gold + ranked distractors), `no_context`, `length_<N>` "
            "(distractors up to N tokens), `position_<p>` (gold contexts at position p)"
        ),
        "",
    ),
    "response": ("the generated response", ""),
    "answers": ("answer alternatives of the question", ""),
    "context_tokens": ("tokens of the contexts in the prompt (the answering model's tokenizer)", "tokens"),
    "n_distractors": ("distractor documents among the contexts", "count"),
    "n_truncated_tokens": ("context tokens dropped to fit the model's input", "tokens"),
    "document_id": ("FictionalQA document (`fiction_id`) of the question; null for KAIST", ""),
    "response_id": ("first 16 hex digits of the sha256 of the generation request (model, prompt, parameters)", ""),
    "decomposer": ("how the responses were split into atomic facts", ""),
    "evaluator": ("the evaluation model M_eval: `<kind>:<model>@<threshold>`", ""),
}
_GROUNDING_FINETUNE = {
    **_GROUNDING,
    **_CHECKPOINT,
    "model": ("the base model fine-tuned in the FictionalQA runs (a key of `finetune.models`)", ""),
    "condition": ("`original_gold` or `conflict_gold` (the gold contexts of each version)", ""),
}

_GROUNDING_ROW = "one response: (question, version, condition) of one model"
_GROUNDING_SOURCE = "knowlab.grounding.steps.data.score (knowlab.grounding.metrics.score_responses)"

FAMILIES: tuple[Family, ...] = (
    Family(
        config="fictionalqa",
        study="FictionalQA",
        table=layout.ITEMS,
        row="one (item, suite) of one checkpoint: a document, fictsheet, webtext paragraph or question",
        source="knowlab.fictionalqa.suites.evaluate_checkpoint",
        columns=_FICTIONALQA,
        column_patterns=_FICTIONALQA_PATTERNS,
    ),
    Family(
        config="sort",
        study="SORT",
        table=layout.SORT_ROWS,
        row="one SORT test item of one model under one memory condition",
        source="knowlab.sort.evaluate.evaluate_condition",
        columns=_SORT,
    ),
    Family(
        config="sort_fiction",
        study="SORT",
        table=layout.SORT_FICTION_ROWS,
        row="one SORT item built from a FictionalQA document, at one checkpoint (no source text in the prompt)",
        source="knowlab.sort.evaluate.evaluate_condition",
        columns=_SORT_FICTION,
    ),
    Family(
        config="sort_parametric",
        study="SORT",
        table=layout.SORT_PARAMETRIC_ROWS,
        row="one SORT test item after an epoch of parametric-memory fine-tuning, under one condition",
        source="knowlab.sort.evaluate.evaluate_epoch",
        columns=_SORT_PARAMETRIC,
    ),
    Family(
        config="sort_parametric_segment_nll",
        study="SORT",
        table=layout.SORT_PARAMETRIC_NLL,
        row="one SORT test item's two segments, scored alone, after an epoch of parametric-memory fine-tuning",
        source="knowlab.sort.score.segment_nll (via knowlab.sort.evaluate.evaluate_epoch)",
        columns=_SEGMENT_NLL,
    ),
    *(
        Family(
            config=f"grounding_{dataset}",
            study="Grounding",
            table=layout.GROUNDING_SCORES.fix(dataset=dataset),
            row=f"{_GROUNDING_ROW} ({about})",
            source=_GROUNDING_SOURCE,
            columns=_GROUNDING,
        )
        for dataset, about in (
            ("fiction", "questions derived from the FictionalQA corpus"),
            ("kaist", "the paper's KAIST release"),
        )
    ),
    Family(
        config="grounding_finetune",
        study="Grounding",
        table=layout.GROUNDING_CHECKPOINT_SCORES,
        row="one response of one FictionalQA checkpoint: (question, version, condition) of the fiction set",
        source=_GROUNDING_SOURCE,
        columns=_GROUNDING_FINETUNE,
    ),
)

# tables of the results folder the card does not share, and why
LEFT_OUT: tuple[tuple[str, str], ...] = (
    (
        "`fictionalqa/finetune/<run>/train_log.parquet`, `sort/parametric/<run>/train_log.parquet`",
        "training logs: one row per optimizer step, not per item",
    ),
    (
        (
            "`grounding/rows.parquet`, `grounding/finetune/rows.parquet`, `sort/fiction/rows.parquet`, "
            "`sort/parametric/rows.parquet`"
        ),
        (
            "concatenations of the tables above for the figures (with train/val `side` labels from the splits, "
            "the base model's rows repeated per run): every row is already in a config"
        ),
    ),
    (
        (
            "`fictionalqa/stats/`, `sort/stats/`, `sort/fiction/stats/`, `sort/parametric/stats/`, "
            "`grounding/finetune/mcnemar.parquet`, `fictionalqa/summary.csv`, `sort/tables/`, `grounding/tables/`"
        ),
        "aggregates and tests computed from the item rows",
    ),
    (
        "`sort/prompt/<model>/validation.parquet`, `rag_validation.parquet`",
        (
            "validation items that choose the prompt template and RAG reading, not results (empty when the "
            "config fixes them)"
        ),
    ),
    (
        "`sort/parametric/base_model/evaluate/epoch-0.parquet`",
        (
            "empty: the base model's SORT rows are config `sort` (its segment perplexities are in "
            "`sort_parametric_segment_nll`)"
        ),
    ),
    (
        (
            "`sort/retrieval.parquet`, `grounding/<dataset>/distractors.parquet`, "
            "`fictionalqa/corpus/mcq/ranked_candidates.parquet`"
        ),
        (
            "inputs the evaluations were built from (retrieved passages, ranked distractors, MCQ candidate "
            "ranking), not results"
        ),
    ),
)


# ------------------------------------------------------------------------------- the card


def family_of(relpath: str) -> Family:
    """The family whose pattern matches ``relpath`` (a table's path relative to the results folder).

    Raises:
        ValueError: no family matches (the message names the path).
    """
    for family in FAMILIES:
        if family.matches(relpath):
            return family
    raise ValueError(
        f"{relpath}: not an item table of any config of the dataset card (knowlab.dataset_card.FAMILIES: "
        + ", ".join(f"{f.config} {f.glob}" for f in FAMILIES)
        + ")"
    )


def group_tables(folder: str | os.PathLike, tables: Iterable[str | os.PathLike]) -> dict[str, list[str]]:
    """``{config: [table paths relative to folder, sorted]}``, configs in :data:`FAMILIES` order (those
    without tables left out); a table given twice is kept once.

    Raises:
        ValueError: a table outside ``folder``, or one that no family matches.
    """
    root = Path(folder).resolve()
    grouped: dict[str, set[str]] = {}
    for table in tables:
        path = Path(table).resolve()
        if not path.is_relative_to(root):
            raise ValueError(f"{table}: not inside the card's folder {folder}; data_files must be relative to it")
        relpath = path.relative_to(root).as_posix()
        grouped.setdefault(family_of(relpath).config, set()).add(relpath)
    return {f.config: sorted(grouped[f.config]) for f in FAMILIES if f.config in grouped}


@dataclass
class _Config:
    family: Family
    files: list[str]
    schema: pa.Schema
    rows: int
    nbytes: int
    features: Features
    distinct: dict[str, list[str]]


def describe_config(folder: Path, family: Family, files: Sequence[str]) -> _Config:
    """A config's tables, each opened once: the schema they share (types unified, e.g. an all-null
    column with a string one), their total row count and uncompressed data size (bytes, from the
    Parquet metadata), the distinct values of its :data:`SUMMARY_COLUMNS`; every column checked
    against the family's docs.

    Raises:
        UndocumentedColumnError: a column without documentation (naming table and column).
        ValueError: two tables of the config with different columns, or types that do not unify.
    """
    schemas, rows, nbytes = [], 0, 0
    distinct: dict[str, set[str]] = {}
    for relpath in files:
        parquet = pq.ParquetFile(folder / relpath)
        schema = parquet.schema_arrow.remove_metadata()
        for name in schema.names:
            family.describe(relpath, name)
        if schemas and set(schema.names) != set(schemas[0].names):
            first = set(schemas[0].names)
            raise ValueError(
                f"config {family.config!r}: {relpath} has columns {sorted(set(schema.names) - first)} more and "
                f"{sorted(first - set(schema.names))} fewer than {files[0]}; a config's tables must share their columns"
            )
        schemas.append(schema)
        rows += parquet.metadata.num_rows
        nbytes += sum(parquet.metadata.row_group(k).total_byte_size for k in range(parquet.metadata.num_row_groups))
        summary = [c for c in SUMMARY_COLUMNS if c in schema.names]
        if summary:
            table = parquet.read(columns=summary)
            for column in summary:
                found = table.column(column).unique().to_pylist()
                distinct.setdefault(column, set()).update(str(v) for v in found if v is not None)
    try:
        unified = pa.unify_schemas(schemas, promote_options="permissive")
    except (pa.ArrowInvalid, pa.ArrowTypeError) as err:
        raise ValueError(f"config {family.config!r}: column types differ between its tables: {err}") from err
    schema = pa.schema([unified.field(name) for name in schemas[0].names])
    return _Config(
        family,
        list(files),
        schema,
        rows,
        nbytes,
        Features.from_arrow_schema(schema),
        {column: sorted(found) for column, found in distinct.items()},
    )


def _dtype(feature: Any) -> str:
    inner = getattr(feature, "feature", None)  # List / LargeList
    if inner is not None:
        return f"list<{_dtype(inner)}>"
    return str(getattr(feature, "dtype", type(feature).__name__))


def _size_category(rows: int) -> str:
    for bound, name in ((1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K"), (1_000_000, "100K<n<1M")):
        if rows < bound:
            return name
    return "1M<n<10M" if rows < 10_000_000 else "10M<n<100M"


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" + ("" if n == 1 else "s")


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ") or "–"


def _listing(values: Sequence[str]) -> str:
    shown = ", ".join(f"`{v}`" for v in values[:MAX_LISTED])
    return shown + (f" and {len(values) - MAX_LISTED} more" if len(values) > MAX_LISTED else "")


def _parquet_example(folder: Path, family: Family, files: Sequence[str], label: str) -> list[str]:
    """The ``load_dataset("parquet", ...)`` lines of a config: the family's glob where it matches exactly
    the config's tables, else their list."""
    globbed = sorted(p.relative_to(folder).as_posix() for p in folder.glob(family.glob))
    if globbed == list(files):
        return [f'rows = load_dataset("parquet", data_files={{"{SPLIT}": "{label}/{family.glob}"}}, split="{SPLIT}")']
    return [
        "rows = load_dataset(",
        '    "parquet",',
        f'    data_files={{"{SPLIT}": [',
        *(f'        "{label}/{f}",' for f in files),
        "    ]},",
        f'    split="{SPLIT}",',
        ")",
    ]


def _config_section(folder: Path, config: _Config, label: str) -> str:
    family, features = config.family, config.features
    lines = [f"### `{family.config}` ({family.study})", ""]
    lines.append(
        f"A row is {family.row}. Rule `{family.rule}` writes each table; `{family.source}` defines the columns. "
        f"{_count(len(config.files), 'table')}, {_count(config.rows, 'row')}."
    )
    if config.distinct:
        lines += [""] + [f"- `{column}`: {_listing(values)}" for column, values in config.distinct.items()]
    lines += ["", "| column | dtype | meaning | unit |", "| --- | --- | --- | --- |"]
    for name in config.schema.names:
        meaning, unit = family.describe(config.files[0], name)
        lines.append(f"| `{name}` | {_dtype(features[name])} | {_cell(meaning)} | {_cell(unit)} |")
    lines += [
        "",
        "```python",
        "from datasets import load_dataset",
        "",
        f'rows = load_dataset("{label}", "{family.config}", split="{SPLIT}")',
        f"# or the Parquet files alone (paths from the folder that holds `{label}`)",
        *_parquet_example(folder, family, config.files, label),
        "```",
    ]
    return "\n".join(lines)


def _body(
    folder: Path,
    configs: Sequence[_Config],
    label: str,
    model: str,
    seed: int,
    settings: str,
    eval_models: Sequence[str],
    ft_models: Sequence[str],
) -> str:
    total = sum(c.rows for c in configs)
    lines = [
        f"# {PRETTY_NAME}",
        "",
        (
            "Item-level evaluation rows of the knowlab workflow, which reproduces three studies of how language "
            "models acquire, memorize, order and ground knowledge: FictionalQA (fine-tuning on documents about "
            "fictional events mixed into webtext), SORT (sequence order recall: which of two segments of a text "
            "came first) and grounding (atomic-fact precision and recall of responses against their contexts). "
            "One row per item, checkpoint (or model) and condition; aggregates, tests and figures are computed "
            "downstream from these rows. Pair the rows of two checkpoints or conditions on `item_id` (and the "
            "other key columns), never by row order."
        ),
        "",
        "## Produced by",
        "",
        f"- base model: {model}",
    ]
    if ft_models:
        lines.append(
            f"- base models fine-tuned (FictionalQA; the `model` column, and the level of the path after the "
            f"study's folder): {', '.join(ft_models)}"
        )
    if eval_models:
        lines.append(f"- models evaluated as they are (SORT, grounding): {', '.join(eval_models)}")
    lines += [
        f"- seed: {seed}",
        f"- settings: {settings}",
        (
            "- every table has a provenance manifest beside it (`<table>.manifest.json`: inputs with sha256, the "
            "config slice, package versions, git commit)"
        ),
        "- this card: rule `dataset_card` (`knowlab.dataset_card`, where the column documentation lives)",
        "",
        "## Configs",
        "",
        f"One split, `{SPLIT}`, per config; {total} rows in all.",
        "",
        "| config | study | tables | rows | a row is |",
        "| --- | --- | --- | --- | --- |",
    ]
    lines += [
        f"| `{c.family.config}` | {c.family.study} | {len(c.files)} | {c.rows} | {_cell(c.family.row)} |"
        for c in configs
    ]
    lines += [
        "",
        (
            f'`load_dataset("{label}", "<config>", split="{SPLIT}")` loads a config from this folder (`{label}` is the '
            'folder holding this card); from the Hub, `load_dataset("<user>/<repo>", "<config>")`. Columns that do '
            "not apply to a row are null."
        ),
        "",
    ]
    lines += [_config_section(folder, c, label) + "\n" for c in configs]
    lines += ["## Left out", "", "| tables | why |", "| --- | --- |"]
    lines += [f"| {_cell(tables)} | {_cell(why)} |" for tables, why in LEFT_OUT]
    lines += [
        "",
        "## License",
        "",
        (
            "MIT, as the knowlab code (its `LICENSE`). The `response` texts were generated by the models named "
            "above; the items come from the project's MIT fiction corpus or, for SORT books and KAIST grounding "
            "questions, from sources that keep their own licenses (the tables hold their ids and answers)."
        ),
        "",
        "## Citation",
        "",
        (
            "- Kirchenbauer et al., FictionalQA: A Dataset for Studying Memorization and Knowledge Acquisition, "
            "ICLR 2026 (arXiv:2506.05639)"
        ),
        "- Pink et al., Assessing Episodic Memory in LLMs with Sequence Order Recall Tasks, arXiv:2410.08133",
        "- Lee et al., How Well Do Large Language Models Truly Ground?, NAACL 2024 (arXiv:2311.09069)",
    ]
    return "\n".join(lines) + "\n"


def build_card(
    folder: str | os.PathLike,
    tables: Iterable[str | os.PathLike],
    *,
    model: str,
    seed: int,
    settings: str,
    eval_models: Sequence[str] = (),
    ft_models: Sequence[str] = (),
    label: str | None = None,
) -> DatasetCard:
    """The dataset card of ``tables``, item tables inside ``folder`` (the card's folder).

    Args:
        folder: the results folder; ``data_files`` are relative to it.
        tables: Parquet paths, each matching one family of :data:`FAMILIES`; duplicates are kept once.
        model, seed, settings: the base model's display name, the config's seed and its settings line
            (:attr:`knowlab.layout.BaseModel.name`, :func:`knowlab.config.settings_note`).
        eval_models: display names of the models evaluated as they are.
        ft_models: the base models FictionalQA fine-tunes (``finetune.models``).
        label: the folder's name in the card's loading examples (default: ``folder``'s own name).

    Returns:
        the card: YAML header (``configs``, ``dataset_info`` with features and row counts,
        ``license``, ``pretty_name``, ``tags``, ``size_categories``) and Markdown body (what the data
        are, what produced them, per config a table of every column, loading examples, what is left out).

    Raises:
        UndocumentedColumnError: a column with no documentation (naming the table and column).
        ValueError: no tables, a table outside ``folder`` or of no family, tables of one config
            with different columns, or a header that ``datasets`` would not read back.
    """
    return _build(
        folder,
        tables,
        model=model,
        seed=seed,
        settings=settings,
        eval_models=eval_models,
        ft_models=ft_models,
        label=label,
    )[0]


def _build(
    folder: str | os.PathLike,
    tables: Iterable[str | os.PathLike],
    *,
    model: str,
    seed: int,
    settings: str,
    eval_models: Sequence[str] = (),
    ft_models: Sequence[str] = (),
    label: str | None = None,
) -> tuple[DatasetCard, list[_Config]]:
    folder = Path(folder)
    label = label or folder.resolve().name
    grouped = group_tables(folder, tables)
    if not grouped:
        raise ValueError("no item tables given: nothing to describe")
    by_name = {f.config: f for f in FAMILIES}
    configs = [describe_config(folder, by_name[name], files) for name, files in grouped.items()]
    data = DatasetCardData(
        language=["en"],
        license=LICENSE,
        pretty_name=PRETTY_NAME,
        size_categories=[_size_category(sum(c.rows for c in configs))],
        tags=list(TAGS),
    )
    MetadataConfigs(
        {c.family.config: {"data_files": [{"split": SPLIT, "path": c.files}]} for c in configs}
    ).to_dataset_card_data(data)
    DatasetInfosDict(
        {
            c.family.config: DatasetInfo(
                config_name=c.family.config,
                features=c.features,
                download_size=sum((folder / f).stat().st_size for f in c.files),
                dataset_size=c.nbytes,
                splits=SplitDict({SPLIT: SplitInfo(name=SPLIT, num_bytes=c.nbytes, num_examples=c.rows)}),
            )
            for c in configs
        }
    ).to_dataset_card_data(data)
    card = DatasetCard(
        f"---\n{data.to_yaml()}\n---\n\n{_body(folder, configs, label, model, seed, settings, eval_models, ft_models)}"
    )
    _check_header(card, configs)
    return card, configs


def _check_header(card: DatasetCard, configs: Sequence[_Config]) -> None:
    """Read the header back as ``datasets`` does; it must give the configs, files, features and row counts."""
    parsed = DatasetCard(str(card)).data
    metadata = MetadataConfigs.from_dataset_card_data(parsed)
    infos = DatasetInfosDict.from_dataset_card_data(parsed)
    for config in configs:
        name = config.family.config
        paths = [entry["path"] for entry in metadata.get(name, {}).get("data_files", [])]
        info = infos.get(name)
        if (
            paths != [config.files]
            or info is None
            or info.features != config.features
            or info.splits[SPLIT].num_examples != config.rows
        ):
            raise ValueError(f"config {name!r}: the card's header does not read back as written")


def write_card(
    path: str | os.PathLike,
    tables: Iterable[str | os.PathLike],
    **kwargs: Any,
) -> dict[str, dict[str, int]]:
    """Write the dataset card of ``tables`` to ``path`` (normally ``<results>/README.md``), atomically.

    ``path``'s folder is the card's folder; ``kwargs`` as :func:`build_card`.

    Returns:
        ``{config: {"tables", "rows", "columns"}}``: the card's configs.

    Raises:
        as :func:`build_card`.
    """
    path = Path(path)
    card, configs = _build(path.parent, tables, **kwargs)
    with atomic_path(path) as tmp:
        tmp.write_text(str(card), encoding="utf-8")
    return {c.family.config: {"tables": len(c.files), "rows": c.rows, "columns": len(c.schema.names)} for c in configs}

"""File-level steps of the generation pipeline, one per Snakemake rule (``rules/generate.smk``).

Each step reads the JSONL outputs of the steps before it, runs one stage of
:mod:`knowlab.fiction_generation.stages` and writes its table atomically, so a failed stage leaves
no output behind (its answered requests stay in the request cache for the re-run).

Tables under ``results/generate/``: ``seeds``, ``fictsheets``, ``fictions`` (release
schema), ``fict_qa_raw`` (every parsed question), ``attempts_{blind,informed}``,
``grades_{blind,informed}``, ``fict_qa_annotated`` (every question with its annotations)
and ``fict_qa`` (the kept questions, release schema): the four corpus tables are what
``fiction.source: generate`` feeds downstream.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from knowlab.core.io import read_jsonl, write_csv, write_jsonl
from knowlab.core.llm.backends import make_backend
from knowlab.core.llm.cache import RequestCache
from knowlab.core.retrieval import embed, load_embedder
from knowlab.fiction_generation import stages
from knowlab.fiction_generation.annotate import annotate_questions, generation_summary
from knowlab.fictionalqa.corpus.schema import REQUIRED

log = logging.getLogger(__name__)

#: Stage -> the input tables it reads (by output name of the earlier stages).
STAGE_INPUTS = {
    "seeds": (),
    "fictsheets": ("seeds",),
    "fictions": ("seeds", "fictsheets"),
    "fict_qa": ("seeds", "fictsheets", "fictions"),
    "attempts": ("fictions", "fict_qa_raw"),
    "grades": ("fictions", "fict_qa_raw", "attempts"),
}


def load_prompts(path: str | os.PathLike) -> dict[str, Any]:
    """Read and check a prompts file (:func:`knowlab.fiction_generation.stages.check_prompts`).

    Raises:
        FileNotFoundError: no such file.
        ValueError: the YAML is not a mapping or a template is missing or uses an unknown field
            (the message names the file).
    """
    with open(path, encoding="utf-8") as handle:
        prompts = yaml.safe_load(handle)
    if not isinstance(prompts, dict):
        raise ValueError(f"{path}: a prompts file must be a YAML mapping of stage -> {{system, user}}")
    try:
        stages.check_prompts(prompts)
    except ValueError as err:
        raise ValueError(f"{path}: {err}") from None
    return prompts


def make_generator(cfg: Mapping[str, Any], seed: int, basedir: str | os.PathLike,
                   model_path: str | None = None) -> stages.Generator:
    """The :class:`~knowlab.fiction_generation.stages.Generator` of config ``fiction.generate``.

    ``seed`` is the run's seed (config ``seed``); ``model_path`` the base model folder used
    by the transformers backend when the config names none.  The prompts path is taken
    from ``basedir`` when relative; the cache directory from the working directory.
    """
    prompts = load_prompts(Path(basedir) / cfg["prompts"])
    cache_dir = Path(cfg["cache_dir"])
    backend = make_backend(cfg, basedir, model_path, state_dir=cache_dir / "batches")
    log.info("backend %r, model %s, request cache %s", backend, cfg["model"], cache_dir)
    return stages.Generator(cfg={**cfg, "seed": seed}, prompts=prompts, backend=backend, cache=RequestCache(cache_dir))


def run_stage(
    stage: str, gen: stages.Generator, inputs: Mapping[str, str], output: str, kind: str | None = None
) -> int:
    """Run one generation stage from its input files to ``output``; returns the record count.

    Args:
        stage: a key of :data:`STAGE_INPUTS`.
        inputs: table name -> JSONL path, for the tables of ``STAGE_INPUTS[stage]``.
        kind: ``blind`` or ``informed`` for the attempts and grades stages.

    Raises:
        ValueError: unknown stage; BackendError / DataError from the stage.
    """
    if stage not in STAGE_INPUTS:
        raise ValueError(f"unknown generation stage {stage!r}; stages: {list(STAGE_INPUTS)}")
    tables = {name: read_jsonl(inputs[name]) for name in STAGE_INPUTS[stage]}
    if stage == "seeds":
        records = stages.make_seeds(gen)
    elif stage == "fictsheets":
        records = stages.make_fictsheets(gen, tables["seeds"])
    elif stage == "fictions":
        records = stages.make_fictions(gen, tables["seeds"], tables["fictsheets"])
    elif stage == "fict_qa":
        records = stages.make_fict_qa(gen, tables["seeds"], tables["fictsheets"], tables["fictions"])
    elif stage == "attempts":
        records = stages.make_attempts(gen, kind, tables["fictions"], tables["fict_qa_raw"])
    else:
        records = stages.make_grades(gen, kind, tables["fictions"], tables["fict_qa_raw"], tables["attempts"])
    write_jsonl(output, records)
    log.info("%s%s: wrote %d record(s) to %s", stage, f" ({kind})" if kind else "", len(records), output)
    return len(records)


def run_chain(gen: stages.Generator, folder: str | os.PathLike) -> None:
    """Every generation stage in order, the tables written under ``folder`` with the names
    the rules use (``seeds.jsonl`` ... ``grades_informed.jsonl``); annotation is separate
    (:func:`run_annotation`).  For notebooks and tests: the workflow runs one rule per stage."""
    folder = Path(folder)
    files = {name: str(folder / f"{name}.jsonl") for name in ("seeds", "fictsheets", "fictions", "fict_qa_raw")}
    for stage, output in (("seeds", "seeds"), ("fictsheets", "fictsheets"), ("fictions", "fictions"),
                          ("fict_qa", "fict_qa_raw")):
        run_stage(stage, gen, files, files[output])
    for kind in stages.ATTEMPT_KINDS:
        attempts = str(folder / f"attempts_{kind}.jsonl")
        run_stage("attempts", gen, files, attempts, kind=kind)
        run_stage("grades", gen, {**files, "attempts": attempts}, str(folder / f"grades_{kind}.jsonl"), kind=kind)


def run_annotation(fict_qa_raw: str, grade_files: list[str], embedder_name: str, distance_threshold: float,
                   annotated: str, kept: str, summary: str | None = None,
                   stage_files: Sequence[str] = ()) -> dict[str, int]:
    """Annotate every question (:func:`knowlab.fiction_generation.annotate.annotate_questions`) and write
    ``annotated`` (all, with annotations) and ``kept`` (the kept ones, release-schema fields only), and,
    if ``summary`` is given, the funnel table (:func:`~knowlab.fiction_generation.annotate.generation_summary`)
    as CSV, counting the records of ``stage_files`` (the earlier stages' tables, in pipeline order)
    and of the grade files, each stage named by its file's stem (``seeds``, ``grades_blind``, ...).

    Returns:
        counts ``{"questions", "kept"}``.
    """
    questions = read_jsonl(fict_qa_raw)
    grades_by_file = {Path(path).stem: read_jsonl(path) for path in grade_files}
    grades = [g for table in grades_by_file.values() for g in table]
    if questions:
        embeddings = embed([q["question"] for q in questions], load_embedder(embedder_name))
    else:
        embeddings = np.zeros((0, 1), dtype="float32")
    records = annotate_questions(questions, grades, embeddings, distance_threshold)
    write_jsonl(annotated, records)
    write_jsonl(kept, [{k: r[k] for k in REQUIRED["fict_qa"]} for r in records if r["kept"]])
    if summary:
        counts = {Path(path).stem: len(read_jsonl(path)) for path in stage_files}
        counts |= {stage: len(table) for stage, table in grades_by_file.items()}
        write_csv(summary, generation_summary(counts, records))
    return {"questions": len(records), "kept": sum(r["kept"] for r in records)}

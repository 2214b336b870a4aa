"""File-level steps of the generation pipeline, one per Snakemake rule (``rules/fiction_generation.smk``).

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
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import yaml

from knowlab.core.io import read_jsonl, write_csv, write_jsonl
from knowlab.core.llm.backends import make_backend
from knowlab.core.llm.cache import RequestCache
from knowlab.core.retrieval import embed, load_embedder
from knowlab.fiction.schema import REQUIRED
from knowlab.fiction_generation import stages
from knowlab.fiction_generation.annotate import annotate_questions, generation_summary

if TYPE_CHECKING:
    from knowlab.fiction_generation.settings import FictionGenerationStageSettings

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


@dataclass(frozen=True)
class ClientOptions:
    """How the ``openai`` and ``openai_batch`` backends reach their server: ``api_key_env``,
    ``max_retries``, ``timeout_s``, ``concurrency`` and ``poll_interval_s`` of config
    ``fiction.generate.openai`` (defaults: the schema's).

    No result depends on them (the variable the API key is read from, retries of transient
    errors, seconds per request, requests in flight, seconds between Batch API polls: the
    answers are those of the server and the request), so they are in no step's settings
    (:mod:`knowlab.fiction_generation.settings`): the scripts read them from the job's config."""

    api_key_env: str = "OPENAI_API_KEY"
    max_retries: int = 5
    timeout_s: float = 120
    concurrency: int = 4
    poll_interval_s: float = 30


def backend_block(settings: FictionGenerationStageSettings, client: ClientOptions) -> dict[str, Any]:
    """The ``fiction.generate`` block that :func:`knowlab.core.llm.backends.make_backend` reads (a
    function of the shared core, which takes the config block): the backend keys of ``settings``
    and the client's."""
    return {
        "backend": settings.backend,
        "model": settings.model,
        "openai": {
            "base_url": settings.openai_base_url,
            "api_key_env": client.api_key_env,
            "max_retries": client.max_retries,
            "timeout_s": client.timeout_s,
            "concurrency": client.concurrency,
            "poll_interval_s": client.poll_interval_s,
        },
        "transformers": {"path": settings.transformers_path, "batch_size": settings.transformers_batch_size},
        "replay": {"path": settings.replay_path},
    }


def make_generator(settings: FictionGenerationStageSettings, seed: int, basedir: str | os.PathLike,
                   model_path: str | None = None, *, cache_dir: str | os.PathLike,
                   client: ClientOptions | None = None) -> stages.Generator:
    """The :class:`~knowlab.fiction_generation.stages.Generator` of the generation settings ``settings``
    (any stage's: they share the backend, model and prompts keys of ``fiction.generate``).

    ``seed`` is the run's seed (config ``seed``); ``model_path`` the base model folder used
    by the transformers backend when the settings name none.  The prompts path is taken
    from ``basedir`` when relative.  ``cache_dir`` is the request cache's folder
    (``fiction.generate.cache_dir``, taken from the working directory; Batch API state under
    ``batches/``) and ``client`` how the client reaches an ``openai`` server (default
    :class:`ClientOptions`): neither can change an answer, so neither is in the settings.
    """
    prompts = load_prompts(Path(basedir) / settings.prompts)
    cache_dir = Path(cache_dir)
    block = backend_block(settings, client if client is not None else ClientOptions())
    backend = make_backend(block, basedir, model_path, state_dir=cache_dir / "batches")
    log.info("backend %r, model %s, request cache %s", backend, settings.model, cache_dir)
    return stages.Generator(seed=seed, prompts=prompts, backend=backend, cache=RequestCache(cache_dir))


def run_stage(
    settings: FictionGenerationStageSettings,
    gen: stages.Generator,
    inputs: Mapping[str, str],
    output: str,
    kind: str | None = None,
) -> int:
    """Run one generation stage from its input files to ``output``; returns the record count.

    Args:
        settings: the stage's settings (:mod:`knowlab.fiction_generation.settings`); the stage is
            their ``STAGE``, a key of :data:`STAGE_INPUTS`.
        inputs: table name -> JSONL path, for the tables of ``STAGE_INPUTS[stage]``.
        kind: ``blind`` or ``informed`` for the attempts and grades stages.

    Raises:
        ValueError: unknown stage; BackendError / DataError from the stage.
    """
    stage = settings.STAGE
    if stage not in STAGE_INPUTS:
        raise ValueError(f"unknown generation stage {stage!r}; stages: {list(STAGE_INPUTS)}")
    tables = {name: read_jsonl(inputs[name]) for name in STAGE_INPUTS[stage]}
    if stage == "seeds":
        records = stages.make_seeds(gen, settings)
    elif stage == "fictsheets":
        records = stages.make_fictsheets(gen, settings, tables["seeds"])
    elif stage == "fictions":
        records = stages.make_fictions(gen, settings, tables["seeds"], tables["fictsheets"])
    elif stage == "fict_qa":
        records = stages.make_fict_qa(gen, settings, tables["seeds"], tables["fictsheets"], tables["fictions"])
    elif stage == "attempts":
        records = stages.make_attempts(gen, settings, kind, tables["fictions"], tables["fict_qa_raw"])
    else:
        records = stages.make_grades(gen, settings, kind, tables["fictions"], tables["fict_qa_raw"], tables["attempts"])
    write_jsonl(output, records)
    log.info("%s%s: wrote %d record(s) to %s", stage, f" ({kind})" if kind else "", len(records), output)
    return len(records)


def run_chain(
    gen: stages.Generator, settings: Mapping[str, FictionGenerationStageSettings], folder: str | os.PathLike
) -> None:
    """Every generation stage in order, each with its settings ``settings[stage]``
    (:func:`knowlab.fiction_generation.settings.stage_settings`), the tables written under ``folder``
    with the names the rules use (``seeds.jsonl`` ... ``grades_informed.jsonl``); annotation is
    separate (:func:`run_annotation`).  For notebooks and tests: the workflow runs one rule per stage."""
    folder = Path(folder)
    files = {name: str(folder / f"{name}.jsonl") for name in ("seeds", "fictsheets", "fictions", "fict_qa_raw")}
    for stage, output in (("seeds", "seeds"), ("fictsheets", "fictsheets"), ("fictions", "fictions"),
                          ("fict_qa", "fict_qa_raw")):
        run_stage(settings[stage], gen, files, files[output])
    for kind in stages.ATTEMPT_KINDS:
        attempts = str(folder / f"attempts_{kind}.jsonl")
        run_stage(settings["attempts"], gen, files, attempts, kind=kind)
        grades = str(folder / f"grades_{kind}.jsonl")
        run_stage(settings["grades"], gen, {**files, "attempts": attempts}, grades, kind=kind)


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

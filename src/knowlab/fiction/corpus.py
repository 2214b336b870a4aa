"""The fiction corpus as configured (config ``fiction``): shipped with the project, or the release.

- ``shipped``: ``data/fiction/{seeds,fictsheets,fictions,fict_qa}.jsonl``, written for
  this project (6 fictional events x 5 styles x 2 documents, 4 Q&A per document),
  each file verified against its pinned sha256 before use.
- ``release``: the released FictionalQA dataset from a local path or the Hub
  (:func:`knowlab.fiction.release.load_release`).
- ``generate``: the corpus the generation pipeline wrote (:mod:`knowlab.fiction_generation`,
  ``rules/fiction_generation.smk``), read from ``generated_dir``.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from knowlab.core.io import DataError, verify_sha256
from knowlab.fiction.release import load_release
from knowlab.fiction.schema import TABLES, read_corpus
from knowlab.fiction.settings import FictionCorpusSettings


def load_fiction(
    settings: FictionCorpusSettings, basedir: str | os.PathLike = ".", generated_dir: str | os.PathLike | None = None
) -> dict[str, list[dict[str, Any]]]:
    """Load and validate the configured fiction corpus (config ``fiction``: ``settings``); relative paths
    are taken from ``basedir``.

    Raises:
        HashMismatchError: a shipped file differs from its pin.
        DataError: a malformed line or record (file and line in the message).
        ValueError: ``generate`` without ``generated_dir``.
        DataError: (``generate``) the generated corpus kept no question.
    """
    if settings.source == "shipped":
        folder = Path(basedir) / settings.shipped["dir"]
        for table in TABLES:
            verify_sha256(folder / f"{table}.jsonl", settings.shipped["sha256"][table])
        return read_corpus(folder)
    if settings.source == "release":
        release = settings.release
        path = release.get("path")
        if path:
            path = str(Path(basedir) / path)
        return load_release(path, release.get("hub_id"), release.get("revision"))
    if settings.source == "generate":
        if generated_dir is None:
            raise ValueError("fiction.source generate: the generated corpus folder was not given")
        tables = read_corpus(generated_dir, allow_empty=["fict_qa"])  # its own message below
        if not tables["fict_qa"]:
            raise DataError(
                f"{generated_dir}/fict_qa.jsonl: the generated corpus kept no question (none parsed, or every "
                f"one is a duplicate or was answered correctly blind; see fict_qa_annotated.jsonl and "
                f"results/logs/generate/); generate with a model that follows the prompts' formats"
            )
        return tables
    raise ValueError(f"fiction.source must be 'shipped', 'release' or 'generate', got {settings.source!r}")

"""The grounding item schema and its check (Lee et al. 2024, "How Well Do Large Language Models Truly Ground?", Sec. 3).

Every item, KAIST (:mod:`knowlab.grounding.kaist`) or fiction-derived
(:mod:`knowlab.grounding.fiction`), follows one schema (one dict per item)::

    item_id str, version "original"|"conflict", source "kaist"|"fiction", question str,
    answers list[str], contexts list[str], atomic_facts list[str] (non-empty),
    factors dict[str, str], gold_doc_ids list[str], extra dict

and a document of the distractor pool is ``{"doc_id", "title", "text"}`` (KAIST documents
also carry ``"url"``, so that :func:`knowlab.grounding.kaist.render_kaist_doc` rebuilds the
exact context form).  The two versions are the paper's Original-Gold and Conflict-Gold
(Sec. 3, Steps 1-4); they pair by ``item_id``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from knowlab.core.io import DataError

VERSIONS = ("original", "conflict")
SOURCES = ("kaist", "fiction")

_REQUIRED: dict[str, type] = {
    "item_id": str,
    "version": str,
    "source": str,
    "question": str,
    "answers": list,
    "contexts": list,
    "atomic_facts": list,
    "factors": dict,
    "gold_doc_ids": list,
    "extra": dict,
}
_FACTOR_VALUES = {
    "popularity": {"high", "low"},
    "contexts": {"single", "multi"},
    "answer_type": {"definite", "free_form"},
}


def check_items(items: Sequence[Mapping[str, Any]]) -> None:
    """Validate items against the shared schema (module docstring).

    Checks: every key present with its type; ``item_id``/``question`` non-empty;
    ``version`` in original|conflict and ``source`` in kaist|fiction; ``answers``,
    ``gold_doc_ids`` lists of strings; ``contexts`` and ``atomic_facts`` non-empty lists of
    non-empty strings; ``factors`` a dict of str -> str holding ``contexts`` and
    ``answer_type`` (plus ``popularity`` for KAIST), each with an allowed value; no
    ``(item_id, version)`` twice.

    Raises:
        DataError: naming the item_id (and version) and the violation.
    """
    seen: set[tuple[str, str]] = set()
    for n, item in enumerate(items):
        name = f"item {item.get('item_id', f'#{n}')!r}" if isinstance(item, Mapping) else f"item #{n}"
        if not isinstance(item, Mapping):
            raise DataError(f"{name}: not a mapping")
        for key, kind in _REQUIRED.items():
            if key not in item:
                raise DataError(f"{name}: missing key {key!r}")
            if not isinstance(item[key], kind):
                raise DataError(f"{name}: {key!r} must be {kind.__name__}, got {type(item[key]).__name__}")
        name = f"{name} ({item['version']})"
        if not item["item_id"] or not item["question"].strip():
            raise DataError(f"{name}: empty item_id or question")
        if item["version"] not in VERSIONS:
            raise DataError(f"{name}: version must be original|conflict")
        if item["source"] not in SOURCES:
            raise DataError(f"{name}: source must be kaist|fiction, got {item['source']!r}")
        for key in ("answers", "gold_doc_ids"):
            if not all(isinstance(x, str) for x in item[key]):
                raise DataError(f"{name}: {key!r} must hold strings")
        for key in ("contexts", "atomic_facts"):
            if not item[key] or not all(isinstance(x, str) and x.strip() for x in item[key]):
                raise DataError(f"{name}: {key!r} must be a non-empty list of non-empty strings")
        factors = item["factors"]
        if not all(isinstance(k, str) and isinstance(v, str) for k, v in factors.items()):
            raise DataError(f"{name}: factors must map str to str, got {factors!r}")
        needed = ("popularity", "contexts", "answer_type") if item["source"] == "kaist" else ("contexts", "answer_type")
        for key in needed:
            if factors.get(key) not in _FACTOR_VALUES[key]:
                raise DataError(
                    f"{name}: factor {key!r} = {factors.get(key)!r}, expected one of {sorted(_FACTOR_VALUES[key])}"
                )
        key = (item["item_id"], item["version"])
        if key in seen:
            raise DataError(f"{name}: duplicate item_id and version")
        seen.add(key)

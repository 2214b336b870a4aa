"""Step settings: the slice of the validated config that one workflow step reads, as a frozen record.

Each rule's ``params`` carry the settings of its step and nothing more, so that changing a config
key re-runs exactly the rules whose step reads it, and what depends on their outputs
(``tests/workflow/test_rerun.py`` checks this key by key).  A step's settings are a frozen
dataclass: one field per key it reads, each documented, checked in ``__post_init__``, built from
the validated config by ``from_config``.  Library functions take the record, not the config
mapping, so a signature says what a step reads.

Why a rule passes a plain dict: Snakemake re-runs a job whose params changed, but it records a
param only when the value is a builtin (str, number, list, tuple, dict, ...); any other object is
"unrepresentable", and a change inside it would go unnoticed (``snakemake.persistence``,
``_serialize_param_builtin``).  So a rule passes ``Settings.from_config(config).param()`` (the
fields as a dict, nested records as dicts) and its script rebuilds the record with
``Settings.from_param(snakemake.params.settings)``.

Keys that cannot change a result (threads, ``compute.max_batch_tokens``, tracking and log
settings) are in no record; ``config/README.md`` ("What re-runs when a key changes") lists them
and says why.
"""

from __future__ import annotations

import dataclasses
import typing
from collections.abc import Mapping
from typing import Any, TypeVar

S = TypeVar("S", bound="StepSettings")


@dataclasses.dataclass(frozen=True)
class StepSettings:
    """Base of every step's settings record (a frozen dataclass of builtin-typed fields)."""

    @classmethod
    def from_config(cls: type[S], config: Mapping[str, Any]) -> S:
        """The record of the validated workflow config ``config`` (the whole mapping)."""
        raise NotImplementedError(f"{cls.__name__}.from_config")

    def param(self) -> dict[str, Any]:
        """The fields as a dict of builtins (nested records as dicts): what a rule's params carry."""
        return dataclasses.asdict(self)

    @classmethod
    def from_param(cls: type[S], param: Mapping[str, Any]) -> S:
        """The record back from :meth:`param`'s dict (nested records, also optional ones
        ``Record | None``, rebuilt by their field type).

        Raises:
            TypeError: a field is missing from ``param`` or ``param`` has one the record lacks.
        """
        hints = typing.get_type_hints(cls)
        names = {field.name for field in dataclasses.fields(cls)}
        unknown = set(param) - names
        if unknown:
            raise TypeError(f"{cls.__name__} has no field(s) {sorted(unknown)}")
        values = {}
        for name in names & set(param):
            kind = _record_type(hints[name])
            value = param[name]
            if kind is not None and isinstance(value, Mapping):
                value = kind.from_param(value)
            values[name] = value
        return cls(**values)


def _record_type(annotation: Any) -> type[StepSettings] | None:
    """The settings record a field holds: its type, or the record in ``Record | None``; else None."""
    for kind in (annotation, *typing.get_args(annotation)):
        if isinstance(kind, type) and issubclass(kind, StepSettings):
            return kind
    return None


def at_least(value: Any, minimum: int, key: str, allow_none: bool = False) -> None:
    """Raise ``ValueError`` naming config key ``key`` unless ``value`` is an int (not a bool) of at
    least ``minimum``, or None where ``allow_none``: a record's ``__post_init__`` check."""
    if value is None and allow_none:
        return
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f"{key} must be at least {minimum}, got {value!r}")


def as_tuple(values: Any) -> tuple:
    """A YAML list (or any iterable) as a tuple, so a record's field is immutable and hashable."""
    return tuple(values)

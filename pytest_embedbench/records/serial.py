"""Frozen dataclasses to JSON data and back, driven by each class's own field list.

The summary's records (:mod:`.summary`, :mod:`.stress_summary`) are typed; the JSON report
keeps them as plain data. :func:`to_data` walks a record's fields (as pytest-benchmark's
``Stats.fields`` drives ``as_dict``), so a field added to a dataclass is written and read with no
other change; :func:`from_data` rebuilds the record from its type hints: ``X | None``,
``tuple[X, ...]``, ``dict[str, X]``, nested dataclasses and plain JSON values. Non-finite
floats are written as null, as everywhere in the JSON report. A field declared with
``field(default=None, metadata=OMIT_NONE)`` is left out of the data while it is None (an
optional part, such as a result's per-query detail, is absent rather than null). Usage::

    data = to_data(summary)                         # JSON-ready
    assert from_data(Summary, json.loads(json.dumps(data))) == summary
"""

from __future__ import annotations

import dataclasses
import enum
import types
import typing
from collections.abc import Mapping
from functools import cache
from typing import Any, TypeVar, Union

from ..core.io import finite

__all__ = ["OMIT_NONE", "from_data", "to_data"]

#: a field's metadata: leave the field out of :func:`to_data`'s dict while it is None
OMIT_NONE: Mapping[str, bool] = {"omit_none": True}

T = TypeVar("T")


def to_data(value: Any) -> Any:
    """``value`` as JSON data: a dataclass as a dict of its fields (in field order), tuples as
    lists, NaN and infinities as None."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {
            f.name: to_data(getattr(value, f.name))
            for f in dataclasses.fields(value)
            if not (f.metadata.get("omit_none") and getattr(value, f.name) is None)
        }
    if isinstance(value, enum.Enum):  # a status: its plain value
        return value.value
    if isinstance(value, Mapping):
        return {str(k): to_data(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_data(v) for v in value]
    return finite(value)  # the one rule: NaN and infinities as null


@cache
def _hints(cls: Any) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def from_data(cls: type[T], data: Mapping[str, Any]) -> T:
    """The ``cls`` record of :func:`to_data`'s ``data``; a missing field takes its default (a
    summary written by an older version), an unknown key is ignored."""
    hints = _hints(typing.cast(Any, cls))
    values = {}
    for f in dataclasses.fields(cls):  # type: ignore[arg-type]
        if f.name in data:
            values[f.name] = _read(hints[f.name], data[f.name])
    return cls(**values)


def _read(hint: Any, value: Any) -> Any:
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if origin in (Union, types.UnionType):
        if value is None:
            return None
        kinds = [a for a in args if a is not type(None)]
        return _read(kinds[0], value) if len(kinds) == 1 else value
    if value is None:
        return None
    if dataclasses.is_dataclass(hint):
        return from_data(hint, value)  # type: ignore[arg-type]
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        return hint(value)
    if origin is tuple:
        item = args[0] if args else Any
        return tuple(_read(item, v) for v in value)
    if origin in (dict, Mapping):
        item = args[1] if len(args) == 2 else Any
        return {k: _read(item, v) for k, v in value.items()}
    return value

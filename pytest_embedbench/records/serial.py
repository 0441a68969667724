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
import math
import numbers
import types
import typing
from collections.abc import Mapping
from functools import cache
from typing import Any, TypeVar, Union

from ..core.exceptions import RecordError
from ..core.io import finite

__all__ = ["OMIT_NONE", "from_data", "read_fields", "to_data"]

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


def from_data(cls: type[T], data: Any, *, at: str = "") -> T:
    """The ``cls`` record of :func:`to_data`'s ``data``; a missing field takes its default (a
    summary written by an older version), an unknown key is ignored.

    ``data`` is checked against the fields' type hints as it is read: a value of the wrong
    shape is a :class:`~pytest_embedbench.core.exceptions.RecordError` naming its key path
    below ``at`` (``tests[3].result.metrics: expected an object, got a list``). A null is
    None where ``X | None`` is declared, NaN where ``float`` is (a non-finite number was
    written as null), and an error anywhere else.
    """
    where = at or cls.__name__
    values = read_fields(cls, data, at=where)
    for f in dataclasses.fields(cls):  # type: ignore[arg-type]
        required = f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
        if required and f.name not in values:
            raise RecordError(f"{where}: missing key {f.name!r}")
    try:
        return cls(**values)
    except (TypeError, ValueError) as exc:  # a record's own check in __post_init__
        raise RecordError(f"{where}: {exc}") from None


def read_fields(cls: Any, data: Any, *, at: str, skip: tuple[str, ...] = ()) -> dict[str, Any]:
    """The fields of the dataclass ``cls`` that the object ``data`` holds (but ``skip``), each
    read and checked against its type hint as :func:`from_data` does; a record class that
    reads some fields its own way (an older shape) reads the others with this."""
    if not isinstance(data, Mapping):
        raise RecordError(f"{at}: expected an object, got {_kind(data)}")
    hints = _hints(cls)
    return {
        f.name: _read(hints[f.name], data[f.name], _key(at, f.name))
        for f in dataclasses.fields(cls)
        if f.name in data and f.name not in skip
    }


def _key(at: str, name: str) -> str:
    return f"{at}.{name}" if at else name


def _kind(value: Any) -> str:
    """How a JSON value reads in an error: ``null``, ``a list``, ``the string 'x'``."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"the boolean {str(value).lower()}"
    if isinstance(value, Mapping):
        return "an object"
    if isinstance(value, (list, tuple)):
        return "a list"
    if isinstance(value, str):
        return f"the string {value[:40]!r}"
    if isinstance(value, numbers.Number):
        return f"the number {value!r}"
    return type(value).__name__


def _wanted(hint: Any) -> str:
    """What ``hint`` asks for, in JSON's words."""
    origin = typing.get_origin(hint)
    if origin in (Union, types.UnionType):
        return " or ".join(_wanted(a) for a in typing.get_args(hint))
    if hint is type(None):
        return "null"
    if dataclasses.is_dataclass(hint) or origin in (dict, Mapping) or hint in (dict, Mapping):
        return "an object"
    if origin in (tuple, list) or hint in (tuple, list):
        return "a list"
    return _SCALARS.get(hint, getattr(hint, "__name__", str(hint)))


def _read(hint: Any, value: Any, at: str) -> Any:
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if origin in (Union, types.UnionType):
        if value is None:
            if type(None) in args or float in args:
                return None
            raise RecordError(f"{at}: expected {_wanted(hint)}, got null")
        kinds = [a for a in args if a is not type(None)]
        if all(k in _SCALARS for k in kinds):
            if not any(_fits(k, value) for k in kinds):
                raise RecordError(f"{at}: expected {_wanted(hint)}, got {_kind(value)}")
            return value
        for kind in kinds[:-1]:  # the first reading that fits (a dict, else an older list)
            try:
                return _read(kind, value, at)
            except RecordError:
                continue
        return _read(kinds[-1], value, at)
    if hint is Any or hint is object or isinstance(hint, TypeVar):
        return value
    if value is None:
        if hint is float:  # a non-finite number, written as null: NaN again
            return math.nan
        raise RecordError(f"{at}: expected {_wanted(hint)}, got null")
    if dataclasses.is_dataclass(hint):
        return from_data(typing.cast(Any, hint), value, at=at)
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        try:
            return hint(value)
        except ValueError:
            known = sorted(str(m.value) for m in hint)
            raise RecordError(f"{at}: {value!r} is not one of {known}") from None
    if origin in (tuple, list) or hint in (tuple, list):
        if not isinstance(value, (list, tuple)):
            raise RecordError(f"{at}: expected a list, got {_kind(value)}")
        fixed = origin is tuple and Ellipsis not in args and len(args) > 0  # tuple[X, Y]
        if fixed and len(args) != len(value):
            raise RecordError(f"{at}: expected a list of {len(args)}, got {len(value)} items")
        items = [
            _read(args[i] if fixed else args[0], v, f"{at}[{i}]") if args else v
            for i, v in enumerate(value)
        ]
        return list(items) if origin is list or hint is list else tuple(items)
    if origin in (dict, Mapping) or hint in (dict, Mapping):
        if not isinstance(value, Mapping):
            raise RecordError(f"{at}: expected an object, got {_kind(value)}")
        item = args[1] if len(args) == 2 else Any
        return {k: _read(item, v, f"{at}[{k!r}]") for k, v in value.items()}
    if origin is typing.Literal:
        if value not in args:
            raise RecordError(f"{at}: {value!r} is not one of {sorted(map(str, args))}")
        return value
    if hint in _SCALARS and not _fits(hint, value):
        raise RecordError(f"{at}: expected {_SCALARS[hint]}, got {_kind(value)}")
    return value


#: the scalar hints checked, and how an error names them
_SCALARS: dict[Any, str] = {
    str: "a string",
    int: "an integer",
    float: "a number",
    bool: "a boolean",
}


def _fits(hint: Any, value: Any) -> bool:
    """Whether ``value`` is a JSON value of scalar ``hint`` (an int is a float too; a boolean
    is neither); any other hint is left to :func:`_read`."""
    if hint is str:
        return isinstance(value, str)
    if hint is bool:
        return isinstance(value, bool)
    if hint is int:
        return isinstance(value, numbers.Integral) and not isinstance(value, bool)
    if hint is float:
        return isinstance(value, numbers.Real) and not isinstance(value, bool)
    return True

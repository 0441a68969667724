"""Typed records that still read like the dicts they replaced: :class:`ByKey`.

``RetrievalResult.tokens``, ``.cost`` and ``.resources`` were dicts, and tests assert on them
by key (``retrieval.tokens["documents"]``, docs/python-api.md). They are frozen dataclasses
now (:mod:`.resultdata`), written and read by :mod:`.serial` like every record; this mixin
makes each also a read-only :class:`~collections.abc.Mapping` of its fields, so that code
keeps working. Usage::

    @dataclass(frozen=True)
    class CostData(ByKey):
        usd: float | None = None

    cost = CostData(usd=0.5)
    cost.usd == cost["usd"] == cost.get("usd") and list(cost) == ["usd"]
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping
from typing import Any

__all__ = ["ByKey"]


class ByKey(Mapping[str, Any]):
    """A dataclass's fields read by name too: ``record["name"]``, ``get``, ``keys``, ``in``,
    ``len``, ``dict(record)`` (in field order). Equality and hashing stay the dataclass's."""

    __slots__ = ()

    def __getitem__(self, key: str) -> Any:
        if key not in self._names():
            raise KeyError(key)
        return getattr(self, key)

    def __iter__(self) -> Iterator[str]:
        return iter(self._names())

    def __len__(self) -> int:
        return len(self._names())

    def _names(self) -> tuple[str, ...]:
        return tuple(f.name for f in dataclasses.fields(self))  # type: ignore[arg-type]

"""What one retrieval test produced, typed: :class:`TestRecord` and its :class:`Status`.

A record is built in the process that ran the test (``EmbedBenchSession.record``), travels to
the xdist controller with the test's report (:meth:`TestRecord.to_dict` /
:meth:`TestRecord.from_dict`, as JSON), and is read by the baseline gate, the recommendation,
the summary and the reports. :data:`FIELDS` is the one list of what a record holds and what a
worker sends: adding a field touches the dataclass only.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

__all__ = ["FIELDS", "Status", "TestRecord", "as_record"]


class Status(str, enum.Enum):
    """A test's outcome as the table shows it (a ``str``, so JSON and comparisons with the
    plain names keep working)."""

    RUNNING = "running"  # recorded, not yet finished (or its outcome never arrived)
    PASSED = "passed"
    FAILED = "failed"
    SKIPPED = "skipped"
    ERROR = "error"  # the model or dataset failed, or setup/teardown failed

    def __str__(self) -> str:
        return self.value

    @property
    def rank(self) -> int:
        """How bad: a row of several tests shows the worst status."""
        return _RANK[self]


_RANK = {
    Status.ERROR: 4,
    Status.FAILED: 3,
    Status.RUNNING: 2,
    Status.SKIPPED: 1,
    Status.PASSED: 0,
}


@dataclass
class TestRecord:
    """One retrieval test's record: which case it ran, how it ended, and its result summary.

    ``result`` is ``RetrievalResult.to_dict(per_query=True)`` (plus the per-query latencies the
    latency gate compares), ``baseline`` the gate's ``GateOutcome.to_dict()``; the fingerprints
    and their parts let a baseline comparison name what changed.
    """

    __test__ = False  # not a pytest test class, whatever its name

    nodeid: str
    test: str
    model: str
    spec: str
    dataset: str
    k: list[int]
    status: Status = Status.RUNNING
    error: str | None = None
    result: dict[str, Any] | None = None
    settings_fingerprint: str | None = None
    settings: dict[str, Any] | None = None
    dataset_parts: dict[str, Any] | None = None
    machine_fingerprint: str | None = None
    reference: str | None = None
    baseline: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        """The record as JSON-ready data (the JSON report's ``tests`` entries)."""
        out = {name: getattr(self, name) for name in FIELDS}
        out["status"] = self.status.value
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> TestRecord:
        """A record from :meth:`to_dict`'s data; unknown keys are ignored, missing optional
        ones take their defaults (records of a worker of another version still merge)."""
        values = {name: data[name] for name in FIELDS if name in data}
        values["status"] = Status(values.get("status") or Status.RUNNING)
        values["k"] = list(values.get("k") or [])
        values.setdefault("spec", "")
        values.setdefault("test", "")
        return cls(**values)

    @property
    def ok(self) -> bool:
        """Whether the test produced a result (whatever its assertions said)."""
        return self.result is not None


#: every field of a record, in order: what :meth:`TestRecord.to_dict` writes and an xdist
#: worker sends with each test's report
FIELDS: tuple[str, ...] = tuple(f.name for f in fields(TestRecord))


def as_record(record: TestRecord | Mapping[str, Any]) -> TestRecord:
    """``record`` as a :class:`TestRecord` (a dict is read with :meth:`TestRecord.from_dict`)."""
    return record if isinstance(record, TestRecord) else TestRecord.from_dict(record)

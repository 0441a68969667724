"""What one retrieval test produced, typed: :class:`TestRecord` and its :class:`Status`.

A record is built in the process that ran the test (``EmbedBenchSession.record``), travels to
the xdist controller with the test's report (:meth:`TestRecord.to_dict` /
:meth:`TestRecord.from_dict`, as JSON), and is read by the baseline gate, the recommendation,
the summary and the reports. :data:`FIELDS` is the one list of what a record holds and what a
worker sends: adding a field touches the dataclass only.
"""

from __future__ import annotations

import enum
import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, fields, replace
from typing import TYPE_CHECKING, Any, Protocol

from ..core.redaction import redact
from ..records.resultdata import GateOutcome, ResultData, as_outcome, as_result
from ..records.serial import read_fields

if TYPE_CHECKING:
    from ..data.datasets import RetrievalDataset
    from ..models.providers import ModelSpec
    from .evaluate import RetrievalResult


class _Named(Protocol):
    @property
    def name(self) -> str: ...


class _Workload(Protocol):
    def to_dict(self) -> dict[str, Any]: ...


class CaseLike(Protocol):
    """What a record takes from a test's case (:class:`~plugin.cases.Case` is one):
    declared here, so this engine module needs nothing of the pytest layer."""

    @property
    def model(self) -> ModelSpec: ...
    @property
    def dataset(self) -> _Named: ...
    @property
    def k(self) -> tuple[int, ...]: ...
    @property
    def reference(self) -> str | None: ...
    @property
    def workload(self) -> _Workload | None: ...


__all__ = [
    "FIELDS",
    "Status",
    "TestRecord",
    "as_record",
    "dataset_parts",
    "machine_fingerprint",
    "settings_fingerprint",
    "settings_of",
]


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

    ``result`` is ``RetrievalResult.data(per_query=True)`` (with the per-query latencies the
    latency gate compares), ``baseline`` what the gate found; the fingerprints and their parts
    let a baseline comparison name what changed. A mapping given for either is read into its
    type (a record built by hand, or by an older version).
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
    result: ResultData | None = None
    settings_fingerprint: str | None = None
    settings: dict[str, Any] | None = None
    dataset_parts: dict[str, Any] | None = None
    machine_fingerprint: str | None = None
    reference: str | None = None
    baseline: GateOutcome | None = None
    #: the stress workload point (``Workload.to_dict()``); None for an unstressed test
    workload: dict[str, Any] | None = None

    def __post_init__(self) -> None:
        self.result = as_result(self.result)
        self.baseline = as_outcome(self.baseline)

    def to_dict(self) -> dict[str, Any]:
        """The record as JSON-ready data (the JSON report's ``tests`` entries)."""
        out = {name: getattr(self, name) for name in FIELDS}
        out["status"] = self.status.value
        out["result"] = self.result.to_dict() if self.result is not None else None
        out["baseline"] = self.baseline.to_dict() if self.baseline is not None else None
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], *, at: str = "record") -> TestRecord:
        """A record from :meth:`to_dict`'s data; unknown keys are ignored, missing optional
        ones take their defaults (records of a worker of another version still merge). A value
        of the wrong shape is a RecordError naming its key path below ``at`` (``tests[3]``)."""
        values = read_fields(cls, data, at=at, skip=("result", "baseline"))
        values["status"] = values.get("status") or Status.RUNNING
        values["k"] = list(values.get("k") or [])
        for name in ("nodeid", "test", "model", "spec", "dataset"):
            values.setdefault(name, "")
        values["result"] = as_result(data.get("result"), at=f"{at}.result")
        values["baseline"] = as_outcome(data.get("baseline"), at=f"{at}.baseline")
        return cls(**values)

    @classmethod
    def of(
        cls,
        nodeid: str,
        test: str,
        case: CaseLike,
        result: RetrievalResult | None,
        error: BaseException | None,
        dataset_parts: dict[str, Any] | None,
        machine_fingerprint: str,
    ) -> TestRecord:
        """The record of a test of ``case`` that produced ``result`` or failed with ``error``."""
        record = cls(
            nodeid=nodeid,
            test=test,
            model=case.model.short_name,
            spec=case.model.spec,
            dataset=case.dataset.name,
            k=list(case.k),
            status=Status.ERROR if error is not None else Status.RUNNING,
            # what a report or a baseline keeps: no key, password or URL secret (the
            # fingerprint still sees them, so changing one is a changed setting)
            error=redact(f"{type(error).__name__}: {error}") if error is not None else None,
            settings_fingerprint=settings_fingerprint(case.model, case.k, result),
            settings=redact(settings_of(case.model, case.k, result)),
            dataset_parts=dataset_parts,
            machine_fingerprint=machine_fingerprint,
            reference=case.reference,
            workload=case.workload.to_dict() if case.workload is not None else None,
        )
        if result is not None:
            # per_query_ms stays by query id (the timed sample): the latency gate compares the
            # distributions of its values, the reports show each timed query's latency
            data = result.data(per_query=True)
            # the provider's settings as applied (a base_url with a password, say)
            record.result = replace(data, model_info=redact(data.model_info))
        return record


#: every field of a record, in order: what :meth:`TestRecord.to_dict` writes and an xdist
#: worker sends with each test's report
FIELDS: tuple[str, ...] = tuple(f.name for f in fields(TestRecord))


def as_record(record: TestRecord | Mapping[str, Any]) -> TestRecord:
    """``record`` as a :class:`TestRecord` (a dict is read with :meth:`TestRecord.from_dict`)."""
    return record if isinstance(record, TestRecord) else TestRecord.from_dict(record)


# -- what a record keeps besides the result: fingerprints that name what changed --------------


def settings_of(
    model: ModelSpec, k: Sequence[int], result: RetrievalResult | None
) -> dict[str, Any]:
    """What the settings fingerprint summarises, kept so a change can be named: spec, the
    options that change numbers, k, and what the loaded provider applied."""
    from ..models.providers.spec import number_options

    options = number_options(model.options)
    applied = result.model_info.get("settings", {}) if result is not None else {}
    raw = {"spec": model.spec, "options": options, "k": list(k), "applied": applied}
    return json.loads(json.dumps(raw, sort_keys=True, default=repr))


def settings_fingerprint(model: ModelSpec, k: Sequence[int], result: RetrievalResult | None) -> str:
    """The case's fingerprint plus what the loaded provider applied (catalogue prompts...)."""
    from ..models.providers.spec import fingerprint, spec_fingerprint

    if result is None:
        return spec_fingerprint(model, k)
    applied = result.model_info.get("settings", {})
    return fingerprint({"case": spec_fingerprint(model, k), "applied": applied})


def dataset_parts(ds: RetrievalDataset) -> dict[str, Any]:
    """Size and fingerprint of each part of a dataset, so a baseline comparison can say which
    part changed (documents, queries, judgements, and the chunking settings of a chunked
    dataset)."""

    def digest(rows: Iterable[tuple[str, ...]]) -> str:
        h = hashlib.sha256()
        for row in sorted(rows):
            h.update(json.dumps(row).encode())
        return h.hexdigest()[:12]

    judgements = [(q, d, str(g)) for q, docs in ds.qrels.items() for d, g in docs.items()]
    parts: dict[str, Any] = {}
    if ds.chunking is not None:  # a changed setting is named: chunking.size 512 -> 256
        from ..data.datasets.core import chunking_identity

        parts["chunking"] = chunking_identity(ds.chunking)
    return parts | {
        "documents": {
            "count": len(ds.documents),
            "fingerprint": digest((d.id, d.title, d.text) for d in ds.documents),
        },
        "queries": {
            "count": len(ds.queries),
            "fingerprint": digest((q.id, q.text) for q in ds.queries),
        },
        "judgements": {"count": len(judgements), "fingerprint": digest(judgements)},
    }


def machine_fingerprint() -> str:
    """Hardware and Python that decide timings (not the host name)."""
    from .measure import machine_info

    info = machine_info()
    info.pop("node", None)
    text = json.dumps(info, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]

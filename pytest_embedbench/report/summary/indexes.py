"""The index axis in the reports: per dataset, one row per model and index (issue 35).

:func:`index_sections` reads the records of tests run with ``indexes=`` (each result's typed
:class:`~pytest_embedbench.resultdata.IndexData`) into :class:`IndexSection`\\ s, the summary's
``indexes``; :mod:`.index_tables` formats them for the terminal, Markdown, CSV and HTML.
Nothing here computes a figure: the result did.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, replace

from ...evaluation.record import TestRecord
from ...records.resultdata import LoadData, MetricData
from .values import Delta, Value, bootstrap_delta, finite, metric_value

__all__ = [
    "IndexRow",
    "IndexSection",
    "QueryLoadRow",
    "QueryLoadSection",
    "function_id",
    "index_sections",
    "query_load_sections",
]


@dataclass(frozen=True)
class IndexRow:
    """One model through one index in one test: its metric, the paired delta against exact
    search, the neighbour recall, the index's own latency, build time and size.

    ``test`` is the name every writer shows for the row's test: its node id without the
    parameters (``test_indexes.py::test_index``), which the model and index columns already
    show; the full node id where two rows of a dataset would otherwise read alike (a test
    parametrized further). ``nodeid`` is the full node id (the CSV's ``test``, as in
    ``results.csv``)."""

    model: str
    index: str
    status: str
    description: str = ""
    metric: Value | None = None
    delta: Delta | None = None
    neighbour_recall: Value | None = None
    p50_ms: float | None = None
    p95_ms: float | None = None
    qps: float | None = None
    build_s: float | None = None
    bytes: int | None = None
    bytes_per_document: float | None = None
    #: the queries under concurrent load, one level each (``--embedbench-concurrency``)
    load: tuple[LoadData, ...] = ()
    deterministic: bool = True
    note: str = ""
    test: str = ""
    nodeid: str = ""


@dataclass(frozen=True)
class IndexSection:
    """A dataset's index rows; ``metric`` is the metric shown with its delta, ``k`` the
    neighbour recall's cut-off."""

    dataset: str
    metric: str
    k: int
    rows: tuple[IndexRow, ...] = ()

    def label(self, row: IndexRow) -> str:
        """A row's name outside the table (a chart's point, a note): model and index, after
        the test's name when the dataset's rows come from more than one test."""
        several = len({r.test for r in self.rows}) > 1
        return f"{row.test} {row.model} {row.index}" if several else f"{row.model} {row.index}"


def _delta(entry: MetricData | None, metric: str) -> Delta | None:
    if entry is None:
        return None
    return bootstrap_delta(
        entry.value, entry.low, entry.high, n=entry.n, against="exact", metric=metric
    )


def function_id(nodeid: str) -> str:
    """A node id without its parameters: ``t.py::test_x[h-exact]`` -> ``t.py::test_x``."""
    head, sep, last = nodeid.rpartition("::")
    return head + sep + last.split("[", 1)[0]


def _named(rows: list[IndexRow]) -> tuple[IndexRow, ...]:
    """Each row's ``test``: its function's node id, or its full node id where another row of
    the dataset has the same function, model and index (the test's own parameters differ)."""
    keys = [(function_id(r.nodeid), r.model, r.index) for r in rows]
    seen = Counter(keys)
    return tuple(
        replace(r, test=key[0] if seen[key] == 1 else r.nodeid)
        for r, key in zip(rows, keys, strict=True)
    )


def index_sections(records: Iterable[TestRecord]) -> tuple[IndexSection, ...]:
    """The records of tests with an index axis, by dataset (sorted), in node id order (so a
    test's rows stay together), each row named by its test."""
    by_dataset: dict[str, list[IndexRow]] = {}
    depth: dict[str, tuple[str, int]] = {}
    for record in sorted(records, key=lambda r: r.nodeid):
        result = record.result
        if result is None or result.index is None:
            continue
        found = result.index
        metric = "ndcg@10" if "ndcg@10" in found.delta else next(iter(sorted(found.delta)), "")
        ks = sorted(int(name.rpartition("@")[2]) for name in found.neighbour_recall)
        k = 10 if 10 in ks else (ks[-1] if ks else 10)
        depth.setdefault(record.dataset, (metric, k))
        by_dataset.setdefault(record.dataset, []).append(
            IndexRow(
                model=record.model,
                index=found.spec,
                status=record.status.value,
                description=found.description,
                metric=metric_value(result.metrics.get(metric)),
                delta=_delta(found.delta.get(metric), metric),
                neighbour_recall=metric_value(found.neighbour_recall.get(f"neighbour_recall@{k}")),
                p50_ms=finite(found.p50_ms),
                p95_ms=finite(found.p95_ms),
                qps=finite(found.qps),
                build_s=finite(found.build_s),
                bytes=found.bytes,
                bytes_per_document=finite(found.bytes_per_document),
                load=tuple(found.load or ()),
                deterministic=found.deterministic,
                note=found.note,
                nodeid=record.nodeid,
            )
        )
    return tuple(
        IndexSection(name, *depth[name], rows=_named(rows))
        for name, rows in sorted(by_dataset.items())
    )


@dataclass(frozen=True)
class QueryLoadRow:
    """A model's query embedding against its loopback server under load
    (``--embedbench-concurrency``), measured once per model and dataset: ``test`` is the first
    test that ran it (its function's node id), ``nodeid`` that test's full node id."""

    model: str
    load: tuple[LoadData, ...]
    test: str = ""
    nodeid: str = ""


@dataclass(frozen=True)
class QueryLoadSection:
    """A dataset's models whose query embedding ran under load, one row each."""

    dataset: str
    rows: tuple[QueryLoadRow, ...] = ()

    def label(self, row: QueryLoadRow) -> str:
        """A row's name outside the table (a chart's line): the model."""
        return row.model


def query_load_sections(records: Iterable[TestRecord]) -> tuple[QueryLoadSection, ...]:
    """The records whose result holds the provider's query embedding under load, by dataset
    (sorted), a row per model (its first test in node id order: every test of the model and
    dataset shares the one measure)."""
    by_dataset: dict[str, dict[str, QueryLoadRow]] = {}
    for record in sorted(records, key=lambda r: r.nodeid):
        result = record.result
        if result is None or not result.query_load:
            continue
        rows = by_dataset.setdefault(record.dataset, {})
        rows.setdefault(
            record.model,
            QueryLoadRow(
                record.model,
                tuple(result.query_load),
                test=function_id(record.nodeid),
                nodeid=record.nodeid,
            ),
        )
    return tuple(
        QueryLoadSection(name, tuple(rows.values())) for name, rows in sorted(by_dataset.items())
    )

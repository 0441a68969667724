"""The index axis in the reports: per dataset, one row per model and index (issue 35).

:func:`index_sections` reads the records of tests run with ``indexes=`` (each result's typed
:class:`~pytest_embedbench.resultdata.IndexData`) into :class:`IndexSection`\\ s, the summary's
``indexes``; :mod:`.index_tables` formats them for the terminal, Markdown, CSV and HTML.
Nothing here computes a figure: the result did.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from ..records import TestRecord
from ..resultdata import MetricData
from .values import Delta, Value, finite, verdict

__all__ = ["IndexRow", "IndexSection", "index_sections"]


@dataclass(frozen=True)
class IndexRow:
    """One model through one index: its metric, the paired delta against exact search, the
    neighbour recall, the index's own latency, build time and size."""

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
    deterministic: bool = True
    note: str = ""


@dataclass(frozen=True)
class IndexSection:
    """A dataset's index rows; ``metric`` is the metric shown with its delta, ``k`` the
    neighbour recall's cut-off."""

    dataset: str
    metric: str
    k: int
    rows: tuple[IndexRow, ...] = ()


def _value(entry: MetricData | None) -> Value | None:
    if entry is None or finite(entry.value) is None:
        return None
    return Value(finite(entry.value), finite(entry.low), finite(entry.high))


def _delta(entry: MetricData | None, metric: str) -> Delta | None:
    if entry is None or finite(entry.value) is None:
        return None
    low, high = finite(entry.low), finite(entry.high)
    significant = low is not None and high is not None and (low > 0 or high < 0)
    difference = finite(entry.value)
    return Delta(
        difference,
        low,
        high,
        n=entry.n,
        significant=significant,
        verdict=verdict(difference, significant),
        test="bootstrap",
        against="exact",
        metric=metric,
    )


def index_sections(records: Iterable[TestRecord]) -> tuple[IndexSection, ...]:
    """The records of tests with an index axis, by dataset (sorted), in node id order."""
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
                metric=_value(result.metrics.get(metric)),
                delta=_delta(found.delta.get(metric), metric),
                neighbour_recall=_value(found.neighbour_recall.get(f"neighbour_recall@{k}")),
                p50_ms=finite(found.p50_ms),
                p95_ms=finite(found.p95_ms),
                qps=finite(found.qps),
                build_s=finite(found.build_s),
                bytes=found.bytes,
                deterministic=found.deterministic,
                note=found.note,
            )
        )
    return tuple(
        IndexSection(name, *depth[name], rows=tuple(rows))
        for name, rows in sorted(by_dataset.items())
    )

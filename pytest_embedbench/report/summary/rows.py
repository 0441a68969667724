"""A run's records folded into table rows: one :class:`~.recommend.ModelRow` per (dataset,
model) (:func:`model_rows`), the figures of a row's result, each a :class:`~.values.Value`
(:func:`figures_of`, reading the figure registry), and what its latency figures were measured
over (:func:`latency_basis`)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ...evaluation.record import Status, TestRecord, as_record
from ...records.figures import FIGURES
from ...records.resultdata import LatencyData, ResultData
from .recommend import ModelRow
from .values import Value, finite, metric_values

__all__ = ["figures_of", "latency_basis", "model_rows", "timed"]


def model_rows(
    records: Iterable[TestRecord | Mapping[str, Any]],
) -> dict[str, list[ModelRow]]:
    """Records folded into one row per (dataset, model), datasets and models sorted by name.

    A row's status is the worst status of the tests that used that model on that dataset.
    """
    by_key: dict[tuple[str, str], ModelRow] = {}
    for record in sorted((as_record(r) for r in records), key=lambda r: r.nodeid):
        if record.workload is not None:
            continue  # a stress point has its own section (stress_summary), not a table row
        index = record.result.index if record.result is not None else None
        if index is not None and index.spec != "exact":
            continue  # an approximate, truncated or quantised index has its own section
        if record.result is not None and record.result.rerank is not None:
            continue  # a reranked first stage has its own section (stages)
        key = (record.dataset, record.model)
        row = by_key.get(key)
        if row is None:
            row = by_key[key] = ModelRow(
                dataset=record.dataset, model=record.model, spec=record.spec
            )
        _fold(row, record)
    out: dict[str, list[ModelRow]] = {}
    for (dataset, _model), row in sorted(by_key.items()):
        out.setdefault(dataset, []).append(row)
    return out


def _fold(row: ModelRow, record: TestRecord) -> None:
    row.tests += 1
    found = record.result
    if found is not None and (row.result is None or _better(found, row.result)):
        row.result = found  # the fullest, coldest run (see _better)
    deltas = record.baseline.deltas if record.baseline is not None else {}
    if row.baseline is None and "ndcg@10" in deltas:
        row.baseline = deltas["ndcg@10"]
    if record.status.rank > Status(row.status).rank:
        row.status = record.status.value
    if record.error and not row.error:
        row.error = record.error


def _better(candidate: ResultData, current: ResultData) -> bool:
    """Which of two results of one model on one dataset the table shows: the one with more
    metrics (a test asking for fewer cut-offs would blank columns), then a cold run (it
    measured documents/s; a warm one, every document cached, could not), then the one that
    loaded the model (what the model adds to memory)."""

    def rank(result: ResultData) -> tuple[int, bool, float]:
        added = finite(result.added_rss_mb)
        return (
            len(result.metrics),
            finite(result.documents_per_s) is not None,
            added if added is not None else 0.0,
        )

    return rank(candidate) > rank(current)


def figures_of(result: ResultData | None, metrics: Sequence[str]) -> dict[str, Value]:
    """Every metric and registry figure of one result that has a value (none marked best yet:
    :func:`~.datasets.dataset_summary` marks the best of each column)."""
    if result is None:
        return {}
    out = metric_values(result.metrics, metrics)
    for figure in FIGURES:
        value = finite(figure.get(result))
        if value is None:
            continue
        low = high = None
        interval = result.latency.interval(figure.key) if figure.path[0] == "latency" else None
        if interval is not None:
            low, high = finite(interval[0]), finite(interval[1])
        out[figure.key] = Value(value, low, high)
    return out


def timed(latency: LatencyData) -> tuple[int, int, int] | None:
    """``(timed queries, queries in the run, passes)`` of one latency block (None: nothing
    timed). Older reports lack ``queries``: every query was timed then."""
    n = latency.n
    if not isinstance(n, int) or isinstance(n, bool) or n <= 0:
        return None
    queries = latency.queries if latency.queries >= n else n
    return n, queries, latency.passes if latency.passes > 0 else 1


def latency_basis(rows: Iterable[ModelRow]) -> str | None:
    """What the latency figures of ``rows`` (:class:`ModelRow`\\ s) were measured over, for a
    table's legend: e.g. ``"median of 3 timed passes over a seeded sample of 50 of 300
    queries"`` (None when no row timed anything). Rows timed differently are named one by one,
    in table order."""
    found: dict[tuple[int, int, int], list[str]] = {}
    for row in rows:
        basis = timed(row.result.latency) if row.result is not None else None
        if basis is not None:
            found.setdefault(basis, []).append(row.model)

    def words(basis: tuple[int, int, int]) -> str:
        n, queries, passes = basis
        what = f"a seeded sample of {n} of {queries}" if n < queries else f"all {queries}"
        how = "one timed pass" if passes == 1 else f"median of {passes} timed passes"
        return f"{how} over {what} queries"

    if not found:
        return None
    if len(found) == 1:
        return words(next(iter(found)))
    return "; ".join(f"{', '.join(models)}: {words(basis)}" for basis, models in found.items())

"""Two stages in the reports (issue 43): per dataset, each reranker over its model's first
stage, computed once here and only formatted by the writers.

:func:`stage_sections` reads the records of reranked tests (each result's ``rerank``: a
:class:`~pytest_embedbench.records.resultdata.RerankData`) into :class:`StageSection`\\ s, the
summary's ``stages``: per reranker a :class:`StageRow` with each stage's metrics and their
intervals, the lift with its paired interval, its bootstrap p and its p Holm-adjusted across
the rerankers of the same first stage (:func:`~pytest_embedbench.stats.holm`, as the
comparisons adjust across models), the ceiling (the first stage's recall at the depth) and the
share of it realised, the reranking's latency, tokens and cost per 1,000 queries, and the
per-query diff between the stages (:func:`~pytest_embedbench.records.querydiff.query_diff`, the
one computation the baseline's diffs use: improved and degraded counts, the queries it hurt
most with the relevant documents it pushed out of the top and those it pushed down, each with
its rank before and after). A reranker run at several depths
(``@10,20,50,100``) is also a :class:`DepthSweep`: nDCG@10 against the p95 latency it adds,
starting from the first stage alone (0 ms added).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from ...evaluation.record import TestRecord
from ...records.figures import RERANK_FIGURES, RERANK_METRICS
from ...records.querydiff import QueryDiff, query_diff
from ...records.resultdata import LiftData, RerankData, ResultData
from .values import Delta, Value, decided, finite, metric_values, p_significant

__all__ = [
    "SWEEP_METRIC",
    "DepthSweep",
    "StageRow",
    "StageSection",
    "SweepPoint",
    "stage_diff",
    "stage_sections",
]

#: the metric of the depth sweep and of the per-query diffs between the stages
SWEEP_METRIC = "ndcg@10"


@dataclass(frozen=True)
class StageRow:
    """One reranker over one model's first stage on one dataset (see the module doc):
    ``stage1`` and ``reranked`` by metric, ``lift`` by metric (a :class:`~.values.Delta`
    against the first stage with ``p_value`` and ``p_holm``), ``figures`` the reranking's
    own (:data:`~pytest_embedbench.records.figures.RERANK_FIGURES` by key), ``diff`` the
    per-query diff on :data:`SWEEP_METRIC`."""

    model: str
    reranker: str
    spec: str
    depth: int
    nodeid: str = ""
    status: str = ""
    description: str = ""
    queries: int = 0
    stage1: dict[str, Value] = field(default_factory=dict)
    reranked: dict[str, Value] = field(default_factory=dict)
    lift: dict[str, Delta] = field(default_factory=dict)
    #: the cut-off the realised share is read at (the reranked recall@10 over the ceiling)
    realised_at: int = 0
    figures: dict[str, Value] = field(default_factory=dict)
    diff: QueryDiff | None = None


@dataclass(frozen=True)
class SweepPoint:
    """One depth of a sweep: ``depth`` 0 is the first stage alone."""

    depth: int
    value: Value
    added_p95_ms: float
    reranker: str = ""


@dataclass(frozen=True)
class DepthSweep:
    """One reranker at several depths over one model's first stage: :data:`SWEEP_METRIC`
    against the p95 latency the reranking adds, depth ascending."""

    model: str
    spec: str
    metric: str
    points: tuple[SweepPoint, ...] = ()


@dataclass(frozen=True)
class StageSection:
    """A dataset's reranked tests: ``metrics`` the columns (:data:`RERANK_METRICS` the run
    computed), ``rows`` by model then node id, ``sweeps`` the rerankers run at several
    depths."""

    dataset: str
    metrics: tuple[str, ...]
    rows: tuple[StageRow, ...] = ()
    sweeps: tuple[DepthSweep, ...] = ()


def _lift(entry: LiftData, metric: str, against: str, p_holm: float | None) -> Delta:
    """A lift as a Delta: significant by its Holm-adjusted p (the comparisons' rule)."""
    p_value = finite(entry.p_value)
    return decided(
        entry.value,
        entry.low,
        entry.high,
        significant=p_significant(p_value, p_holm),
        n=entry.n,
        p_value=p_value,
        p_holm=p_holm,
        test="bootstrap",
        against=against,
        metric=metric,
    )


def stage_diff(
    result: ResultData, *, nodeid: str = "", dataset: str = "", model: str = ""
) -> QueryDiff | None:
    """A reranked result's queries against its first stage's on :data:`SWEEP_METRIC` (the
    one computation of the stages' per-query diff; None without a reranker or per-query
    detail): the lost documents are the relevant ones the reranker pushed out of the top, and
    each degraded query's ``pushed_down`` the relevant ones among its candidates (the first
    stage's top ``depth``) whose rank it made worse, with both ranks."""
    rerank = result.rerank
    if rerank is None:
        return None
    first = {"per_query": rerank.stage1_per_query, "retrieved": rerank.stage1_retrieved}
    return query_diff(
        result,
        first,
        metric=SWEEP_METRIC,
        against=f"{model} alone",
        nodeid=nodeid,
        dataset=dataset,
        model=f"{model} + {rerank.name}",
        candidates=rerank.depth,
    )


def _row(record: TestRecord, result: ResultData, rerank: RerankData, names: list[str]) -> StageRow:
    figures = {}
    for fig in RERANK_FIGURES:
        value = finite(fig.get(result))
        if value is not None:
            low = high = None
            if fig.key == "rerank.ceiling" and rerank.ceiling is not None:
                low, high = finite(rerank.ceiling.low), finite(rerank.ceiling.high)
            figures[fig.key] = Value(value, low, high)
    diff = stage_diff(result, nodeid=record.nodeid, dataset=record.dataset, model=record.model)
    return StageRow(
        model=record.model,
        reranker=rerank.name,
        spec=rerank.spec,
        depth=rerank.depth,
        nodeid=record.nodeid,
        status=record.status.value,
        description=rerank.description,
        queries=result.queries,
        stage1=metric_values(rerank.stage1, names),
        reranked=metric_values(result.metrics, names),
        realised_at=rerank.realised_at,
        figures=figures,
        diff=diff,
    )


def _with_lifts(rows: list[tuple[StageRow, RerankData]], names: list[str]) -> list[StageRow]:
    """Each row with its lifts, their p-values Holm-adjusted across the rerankers of the same
    first stage (per metric)."""
    from dataclasses import replace

    from ...evaluation.stats import holm

    adjusted: dict[tuple[int, str], float | None] = {}
    by_model: dict[str, list[int]] = {}
    for i, (row, _) in enumerate(rows):
        by_model.setdefault(row.model, []).append(i)
    for members in by_model.values():
        for name in names:
            found = [
                (i, finite(rows[i][1].lift[name].p_value))
                for i in members
                if name in rows[i][1].lift
            ]
            known = [(i, p) for i, p in found if p is not None]
            for (i, _), p in zip(known, holm([p for _, p in known]), strict=True):
                adjusted[(i, name)] = p
    out = []
    for i, (row, rerank) in enumerate(rows):
        lifts = {
            name: _lift(rerank.lift[name], name, f"{row.model} alone", adjusted.get((i, name)))
            for name in names
            if name in rerank.lift and finite(rerank.lift[name].value) is not None
        }
        out.append(replace(row, lift=lifts))
    return out


def _base(spec: str, depth: int) -> str:
    """A reranker's spec without its depth (``hashing:h@20`` -> ``hashing:h``)."""
    body, at, tail = spec.rpartition("@")
    return body if at and tail == str(depth) else spec


def _sweeps(rows: Iterable[StageRow]) -> tuple[DepthSweep, ...]:
    """The rerankers of a first stage run at two depths or more, each a curve from the first
    stage alone (depth 0, nothing added) to its deepest."""
    groups: dict[tuple[str, str], list[StageRow]] = {}
    for row in rows:
        groups.setdefault((row.model, _base(row.spec, row.depth)), []).append(row)
    out = []
    for (model, spec), found in sorted(groups.items()):
        found = [r for r in found if SWEEP_METRIC in r.reranked and "rerank.p95_ms" in r.figures]
        if len({r.depth for r in found}) < 2:
            continue
        found.sort(key=lambda r: r.depth)
        points = []
        first = found[0].stage1.get(SWEEP_METRIC)
        if first is not None:
            points.append(SweepPoint(0, first, 0.0, "none"))
        for r in found:
            p95 = r.figures["rerank.p95_ms"].value
            points.append(SweepPoint(r.depth, r.reranked[SWEEP_METRIC], p95 or 0.0, r.reranker))
        out.append(DepthSweep(model, spec, SWEEP_METRIC, tuple(points)))
    return tuple(out)


def stage_sections(records: Iterable[TestRecord]) -> tuple[StageSection, ...]:
    """The records of reranked tests, by dataset (sorted), by model then node id."""
    found: dict[str, list[tuple[StageRow, RerankData]]] = {}
    metrics: dict[str, list[str]] = {}
    for record in sorted(records, key=lambda r: (r.dataset, r.model, r.nodeid)):
        result = record.result
        if result is None or result.rerank is None:
            continue
        rerank = result.rerank
        names = [m for m in RERANK_METRICS if m in result.metrics or m in rerank.stage1]
        known = metrics.setdefault(record.dataset, [])
        known += [m for m in names if m not in known]
        found.setdefault(record.dataset, []).append((_row(record, result, rerank, names), rerank))
    out = []
    for dataset, rows in sorted(found.items()):
        names = [m for m in RERANK_METRICS if m in metrics[dataset]]
        done = _with_lifts(rows, names)
        out.append(StageSection(dataset, tuple(names), tuple(done), _sweeps(done)))
    return tuple(out)

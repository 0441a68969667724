"""What a run adds up to, computed once at its end: the typed :class:`Summary` every report
formats.

:func:`build_summary` folds a run's records into one row per (dataset, model) with every figure
a person reads (metrics with their intervals, latency, footprint and cost, each marked when it
is the best of its column), compares every model with the reference (paired randomization
tests, Holm-adjusted, significant by
:meth:`Comparison.significant <pytest_embedbench.stats.Comparison.significant>`), reads the
baseline gate's differences and verdicts, picks the recommendations, builds the stress grids and
cut-off tables (:mod:`.stress_summary`) and collects the notices. Every record is frozen.

The JSON report keeps it (:meth:`Summary.to_dict` under ``"summary"``, beside the older
sections ``comparisons``, ``recommendations``, ``baseline`` and ``stress``, which keep their
meaning), and :meth:`Summary.from_json` reads it back, so ``embedbench report`` formats the very
summary the run formatted. A report written before the summary existed is read through its
older sections (:func:`summarize`). The terminal, HTML, CSV and Markdown writers only format a
``Summary``: none compares a p-value, picks a best value or computes a difference. Usage::

    summary = Summary.from_json(json.loads(Path("report.json").read_text()))
    for dataset in summary.datasets:
        for model in dataset.models:
            print(model.model, model.figures["ndcg@10"].value, model.versus)
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from ...core.io import finite as finite_data
from ...evaluation.record import Status, TestRecord, as_record
from ...records.querydiff import QueryDiff, query_diff
from ...records.resultdata import GateDelta, GateOutcome, LatencyData, ResultData
from ...records.serial import from_data, to_data
from .columns import FIGURES, direction, metric_names
from .indexes import IndexSection, function_id, index_sections
from .recommend import ModelRow, recommend
from .stress import (
    CutoffSection,
    StressSection,
    cutoff_rows,
    cutoff_sections,
    stress_points,
    stress_sections,
)
from .values import Delta, Value, best_marks, finite, p_significant, verdict

if TYPE_CHECKING:
    from pathlib import Path

    from ...baseline import BaselineFile


class RunOptions(Protocol):
    """The run options a summary reads (:class:`~config.options.Options` has them);
    declared here, so the reports import nothing of the options table, which imports the
    reports' column list."""

    @property
    def reference(self) -> str | None: ...
    @property
    def priority(self) -> str: ...
    @property
    def seed(self) -> int: ...
    @property
    def bootstrap(self) -> int: ...
    @property
    def update_baseline(self) -> str | None: ...


class RunState(Protocol):
    """What a summary reads of a run: the session of the pytest layer is one
    (:class:`~plugin.session.EmbedBenchSession`), declared here so the outputs need
    nothing above them."""

    @property
    def options(self) -> RunOptions: ...
    @property
    def records(self) -> Mapping[str, TestRecord]: ...
    @property
    def collected(self) -> set[str]: ...
    @property
    def project_dir(self) -> Path: ...
    @property
    def baseline(self) -> BaselineFile: ...
    def baseline_key(self, nodeid: str) -> str: ...
    def not_recorded(self) -> list[str]: ...


__all__ = [
    "SUMMARY_VERSION",
    "DatasetSummary",
    "Gate",
    "GateMetric",
    "ModelRow",
    "ModelSummary",
    "Pick",
    "Recommendation",
    "Scores",
    "Summary",
    "Totals",
    "baseline_notices",
    "build_summary",
    "busy_notes",
    "comparisons",
    "latency_basis",
    "model_rows",
    "orphaned_entries",
    "query_diffs",
    "recommendations",
    "summarize",
    "summary_of",
]

#: the version of the JSON report's ``summary`` section
SUMMARY_VERSION = 1


# -- the typed records -------------------------------------------------------------------------


@dataclass(frozen=True)
class Scores:
    """A recommendation's three parts (component scores, or a priority's weights)."""

    accuracy: float
    speed: float
    cost: float


@dataclass(frozen=True)
class Pick:
    """The model a priority picks, with its score = weights . components."""

    priority: str
    model: str
    score: float
    weights: Scores
    components: Scores
    #: models whose score equals the pick's: these figures do not decide between them
    tied_with: tuple[str, ...] = ()


@dataclass(frozen=True)
class Recommendation:
    """The picks of one dataset (accuracy-, speed-first, balanced, cost-first), every model's
    component scores and the speed tiers (models with overlapping p95 intervals)."""

    picks: tuple[Pick, ...]
    components: dict[str, Scores] = field(default_factory=dict)
    speed_tiers: tuple[tuple[str, ...], ...] = ()
    #: models whose nDCG@10 their queries cannot tell apart, best tier first
    accuracy_tiers: tuple[tuple[str, ...], ...] = ()

    def pick(self, priority: str) -> Pick | None:
        """The pick of ``priority``, else the first pick (None when there is none)."""
        return next((p for p in self.picks if p.priority == priority), None) or next(
            iter(self.picks), None
        )


@dataclass(frozen=True)
class ModelSummary:
    """One model on one dataset: the tests that used it folded into one table row.

    ``figures`` holds every metric the run computed and every :data:`~.columns.FIGURES` figure
    it measured (absent: no value), each marked when it is the best of its column.
    """

    model: str
    spec: str
    status: str
    error: str | None = None
    tests: int = 0
    figures: dict[str, Value] = field(default_factory=dict)
    #: how the VRAM figure was measured (torch, Ollama), when there is one
    vram_source: str | None = None
    #: the nDCG@10 difference to the baseline entry, when the gate compared one
    baseline: Delta | None = None
    #: the nDCG@10 difference to the reference model, when compared
    versus: Delta | None = None
    is_reference: bool = False


@dataclass(frozen=True)
class DatasetSummary:
    """The table of one dataset: a row per model, sorted by name."""

    name: str
    models: tuple[ModelSummary, ...]
    queries: int | None = None
    documents: int | None = None
    #: every metric any model computed, by family then cut-off
    metrics: tuple[str, ...] = ()
    #: the model the others were compared with (None: no comparison on this dataset)
    reference: str | None = None
    #: what the latency figures were measured over (None: nothing timed)
    latency_basis: str | None = None
    recommendation: Recommendation | None = None

    @property
    def with_baseline(self) -> bool:
        return any(m.baseline is not None for m in self.models)

    @property
    def compared(self) -> tuple[ModelSummary, ...]:
        """The models with a paired comparison to the reference."""
        return tuple(m for m in self.models if m.versus is not None)

    @property
    def shown_recommendation(self) -> Recommendation | None:
        """The recommendation a report shows: only a choice among two models or more is one."""
        return self.recommendation if len(self.models) > 1 else None


@dataclass(frozen=True)
class GateMetric:
    """One figure the baseline gate compared: the baseline's and this run's value and the
    difference (latency has a p-value and no interval)."""

    metric: str
    baseline: float | None = None
    current: float | None = None
    #: the paired difference current - baseline (None for latency: its test has no interval)
    delta: Delta | None = None
    #: latency: the one-sided Mann-Whitney U p-value (None: only p95 was compared)
    p_value: float | None = None
    regressed: bool = False


@dataclass(frozen=True)
class Gate:
    """The baseline gate's outcome for one test."""

    nodeid: str
    status: str
    metrics: tuple[GateMetric, ...] = ()
    failures: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()


@dataclass(frozen=True)
class Totals:
    """The run at a glance (the HTML report's cards)."""

    tests: int = 0
    #: tests by status, sorted by status
    statuses: dict[str, int] = field(default_factory=dict)
    models: int = 0
    datasets: int = 0
    #: judged queries over the datasets' tables
    queries: int = 0
    best_ndcg: float | None = None
    best_model: str | None = None
    cache_hit_rate: float | None = None


@dataclass(frozen=True)
class Summary:
    """Everything the reports show of a run (module doc); ``records`` are the JSON report's
    ``tests``, kept for the per-test files (CSV rows, the per-query drill-down)."""

    datasets: tuple[DatasetSummary, ...] = ()
    reference: str | None = None
    priority: str = "balanced"
    stress: tuple[StressSection, ...] = ()
    cutoffs: tuple[CutoffSection, ...] = ()
    #: the index axis: per dataset, each model through each index (absent from the JSON
    #: when no test has ``indexes=``)
    indexes: tuple[IndexSection, ...] = ()
    gates: tuple[Gate, ...] = ()
    #: per-query diffs: each gated test against its baseline entry, each model against the
    #: reference model (by dataset; :mod:`.querydiff`)
    query_diffs: tuple[QueryDiff, ...] = ()
    totals: Totals = field(default_factory=Totals)
    baseline_path: str | None = None
    #: ``--embedbench-update-baseline``'s mode when the run updated the baseline
    baseline_update: str | None = None
    orphaned: tuple[str, ...] = ()
    not_recorded: tuple[str, ...] = ()
    baseline_notices: tuple[str, ...] = ()
    busy_notes: tuple[str, ...] = ()
    #: what was written and what to do next (baseline updates, lost results)
    notes: tuple[str, ...] = ()
    records: tuple[TestRecord, ...] = ()

    @property
    def notices(self) -> list[str]:
        """The lines printed under the table, in order."""
        return [*self.baseline_notices, *self.busy_notes, *self.notes]

    def dataset(self, name: str) -> DatasetSummary | None:
        return next((d for d in self.datasets if d.name == name), None)

    def diffs(self, dataset: str) -> tuple[QueryDiff, ...]:
        """The per-query diffs of one dataset: against the baseline, then the reference."""
        return tuple(d for d in self.query_diffs if d.dataset == dataset)

    # -- the JSON report -----------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        """The JSON report's ``summary`` section: every field but the records (the report's
        ``tests``)."""
        out: dict[str, Any] = {"version": SUMMARY_VERSION}
        for f in dataclasses.fields(self):
            if f.name == "indexes" and not self.indexes:
                continue  # a run without the index axis keeps its JSON as it was
            if f.name != "records":
                out[f.name] = to_data(getattr(self, f.name))
        return out

    @classmethod
    def from_json(cls, report: Mapping[str, Any]) -> Summary:
        """The summary of a JSON report (``--embedbench-json``'s content): its ``summary``
        section, or, for a report written before that section existed, one built from its
        ``tests``, ``comparisons``, ``recommendations`` and ``baseline`` sections."""
        records = tuple(TestRecord.from_dict(t) for t in report.get("tests") or [])
        data = report.get("summary")
        if isinstance(data, Mapping):
            return dataclasses.replace(from_data(cls, data), records=records)
        compared = report.get("comparisons") or {}
        recs = report.get("recommendations") or {}
        block = report.get("baseline") or {}
        return summarize(
            records,
            reference=_reference_of(compared),
            priority=recs.get("priority") or "balanced",
            comparisons=compared,
            recommendations=recs.get("datasets") or {},
            baseline_path=block.get("path"),
            baseline_update=block.get("update"),
            orphaned=block.get("orphaned") or (),
            not_recorded=block.get("not_recorded") or (),
            busy=busy_notes(records),
            stress=report.get("stress") or None,
        )

    def comparisons_section(self) -> dict[str, dict[str, dict[str, Any]]]:
        """The JSON report's ``comparisons``: per dataset and model, the paired nDCG@10
        difference to the reference (``significant`` added in this version)."""
        out: dict[str, dict[str, dict[str, Any]]] = {}
        for dataset in self.datasets:
            found = {m.model: _comparison_entry(m.versus) for m in dataset.compared if m.versus}
            if found:
                out[dataset.name] = found
        return out

    def recommendations_section(self) -> dict[str, Any]:
        """The JSON report's ``recommendations``."""
        return {
            "priority": self.priority,
            "datasets": {
                d.name: _recommendation_entry(d.recommendation)
                for d in self.datasets
                if d.recommendation is not None
            },
        }


def summary_of(
    source: Summary | Mapping[str, Any], context: Mapping[str, Any] | None = None
) -> tuple[Summary, Mapping[str, Any]]:
    """``(summary, context)`` of a writer's input: a :class:`Summary` with the JSON report it
    came from as ``context`` (its creation time, machine, configuration), or a JSON report
    dict, read with :meth:`Summary.from_json`."""
    if isinstance(source, Summary):
        return source, context or {}
    return Summary.from_json(source), context if context is not None else source


# -- building the summary ----------------------------------------------------------------------


def build_summary(session: RunState, notes: Sequence[str] = ()) -> Summary:
    """The summary of ``session``'s records (after the baseline was written, if asked)."""
    records = _as_written(session.records.values())
    rows = model_rows(records)
    reference = session.options.reference or next(
        (r.reference for r in records if r.reference), None
    )
    orphans = orphaned_entries(session)
    return summarize(
        records,
        reference=reference,
        priority=session.options.priority,
        comparisons=comparisons(
            rows, reference, seed=session.options.seed, n_resamples=session.options.bootstrap
        ),
        recommendations=recommendations(
            rows, seed=session.options.seed, n_resamples=session.options.bootstrap
        ),
        baseline_path=str(session.baseline.path),
        baseline_update=session.options.update_baseline,
        orphaned=orphans,
        not_recorded=session.not_recorded(),
        notices=baseline_notices(session, records, orphans),
        busy=busy_notes(records),
        notes=notes,
    )


def _as_written(records: Iterable[TestRecord]) -> list[TestRecord]:
    """The records as the JSON report keeps them (sorted by node id, NaN and infinities as
    null, keys sorted), so a summary read back from the report equals the run's."""
    return [
        TestRecord.from_dict(
            json.loads(json.dumps(finite_data(r.to_dict()), sort_keys=True, default=str))
        )
        for r in sorted(records, key=lambda r: r.nodeid)
    ]


def summarize(
    records: Iterable[TestRecord | Mapping[str, Any]],
    *,
    reference: str | None = None,
    priority: str = "balanced",
    comparisons: Mapping[str, Mapping[str, Mapping[str, Any]]] | None = None,
    recommendations: Mapping[str, Any] | None = None,
    baseline_path: str | None = None,
    baseline_update: str | None = None,
    orphaned: Sequence[str] = (),
    not_recorded: Sequence[str] = (),
    notices: Sequence[str] = (),
    busy: Sequence[str] = (),
    notes: Sequence[str] = (),
    stress: Mapping[str, Sequence[Mapping[str, Any]]] | None = None,
) -> Summary:
    """The summary of ``records`` with the paired ``comparisons`` (``{dataset: {model: entry}}``
    as :func:`comparisons` returns them) and ``recommendations`` (``{dataset: recommend(...)}``)
    already computed: what :func:`build_summary` and a report of an older version both read.
    ``stress``: the stress rows of such a report (default: read from the records)."""
    found = sorted((as_record(r) for r in records), key=lambda r: r.nodeid)
    rows = model_rows(found)
    versus = comparisons or {}
    recs = recommendations or {}
    datasets = tuple(
        _dataset(name, found_rows, versus.get(name) or {}, reference, recs.get(name))
        for name, found_rows in rows.items()
    )
    return Summary(
        datasets=datasets,
        reference=reference,
        priority=priority,
        stress=stress_sections(stress if stress is not None else stress_points(found)),
        cutoffs=cutoff_sections(cutoff_rows(found)),
        indexes=index_sections(found),
        gates=_gates(found),
        query_diffs=query_diffs(found, reference),
        totals=_totals(found, datasets),
        baseline_path=baseline_path,
        baseline_update=baseline_update,
        orphaned=tuple(orphaned),
        not_recorded=tuple(not_recorded),
        baseline_notices=tuple(notices),
        busy_notes=tuple(busy),
        notes=tuple(notes),
        records=tuple(found),
    )


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
        if index is not None and index.engine != "exact":
            continue  # an approximate index has its own section (index_summary)
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


def _dataset(
    name: str,
    rows: Sequence[ModelRow],
    versus: Mapping[str, Mapping[str, Any]],
    reference: str | None,
    rec: Mapping[str, Any] | None,
) -> DatasetSummary:
    results = [r.result for r in rows]
    metrics = metric_names(results)
    values = [_figures(r.result, metrics) for r in rows]
    keys = [*metrics, *(f.key for f in FIGURES)]
    for key in keys:  # the best of each column, the one rule (values.best_marks)
        column = [(v.get(key) or Value(None)).value for v in values]
        for found, best in zip(values, best_marks(column, direction(key)), strict=True):
            if best:
                found[key] = dataclasses.replace(found[key], best=True)
    first = next((r for r in results if r), None)
    compared_with = reference if versus else None
    models = tuple(
        ModelSummary(
            model=row.model,
            spec=row.spec,
            status=row.status,
            error=row.error,
            tests=row.tests,
            figures=figures,
            vram_source=row.result.resources.vram_source if row.result is not None else None,
            baseline=_baseline_delta(row.baseline),
            versus=_versus_delta(versus.get(row.model)),
            is_reference=compared_with is not None and row.model == compared_with,
        )
        for row, figures in zip(rows, values, strict=True)
    )
    return DatasetSummary(
        name=name,
        models=models,
        queries=first.queries if first else None,
        documents=first.documents if first else None,
        metrics=tuple(metrics),
        reference=compared_with,
        latency_basis=latency_basis(rows),
        recommendation=_recommendation(rec),
    )


def _figures(result: ResultData | None, metrics: Sequence[str]) -> dict[str, Value]:
    """Every metric and figure of one result that has a value."""
    out: dict[str, Value] = {}
    if result is None:
        return out
    for name in metrics:
        metric = result.metrics.get(name)
        if metric is not None and finite(metric.value) is not None:
            out[name] = Value(finite(metric.value), finite(metric.low), finite(metric.high))
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


def _baseline_delta(entry: GateDelta | None, metric: str = "ndcg@10") -> Delta | None:
    """A gate's difference entry (of ``metric``) as a :class:`Delta` (its significance is the
    gate's: the paired bootstrap interval excludes 0)."""
    if entry is None or finite(entry.difference) is None:
        return None
    value, low, high = finite(entry.difference), finite(entry.low), finite(entry.high)
    significant = entry.significant
    if significant is None:  # an entry without the flag: the interval decides, as the gate does
        significant = low is not None and high is not None and (high < 0 or low > 0)
    return Delta(
        difference=value,
        low=low,
        high=high,
        n=entry.shared_queries,
        significant=bool(significant),
        verdict=verdict(
            value,
            bool(significant),
            regressed=bool(entry.regressed),
            inconclusive=bool(entry.inconclusive),
        ),
        test="bootstrap",
        against="baseline",
        metric=metric,
    )


def _versus_delta(entry: Mapping[str, Any] | None) -> Delta | None:
    """A paired comparison entry of :func:`comparisons` as a :class:`Delta`; an entry of an
    older report, without ``significant``, is decided by Comparison.significant itself."""
    if not entry:
        return None
    value, low, high = (finite(entry.get(k)) for k in ("difference", "low", "high"))
    p_value, p_holm = finite(entry.get("p_value")), finite(entry.get("p_holm"))
    significant = entry.get("significant")
    if significant is None:
        significant = p_significant(p_value, p_holm)
    return Delta(
        difference=value,
        low=low,
        high=high,
        n=entry.get("n"),
        significant=bool(significant),
        verdict=verdict(value, bool(significant)),
        p_value=p_value,
        p_holm=p_holm,
        test=str(entry.get("test") or ""),
        against=str(entry.get("reference") or ""),
        metric=str(entry.get("metric") or "ndcg@10"),
    )


def _comparison_entry(delta: Delta) -> dict[str, Any]:
    return {
        "difference": delta.difference,
        "low": delta.low,
        "high": delta.high,
        "n": delta.n,
        "p_value": delta.p_value,
        "p_holm": delta.p_holm,
        "test": delta.test,
        "reference": delta.against,
        "metric": delta.metric,
        "significant": delta.significant,
    }


def _scores(data: Mapping[str, Any] | None) -> Scores:
    data = data or {}
    return Scores(
        accuracy=finite(data.get("accuracy")) or 0.0,
        speed=finite(data.get("speed")) or 0.0,
        cost=finite(data.get("cost")) or 0.0,
    )


def _recommendation(rec: Mapping[str, Any] | None) -> Recommendation | None:
    if not rec:
        return None
    picks = tuple(
        Pick(
            priority=name,
            model=str(pick.get("model")),
            score=float(finite(pick.get("score")) or 0.0),
            weights=_scores(pick.get("weights")),
            components=_scores(pick.get("components")),
            tied_with=tuple(pick.get("tied_with") or ()),
        )
        for name, pick in (rec.get("picks") or {}).items()
    )
    return Recommendation(
        picks=picks,
        components={m: _scores(c) for m, c in (rec.get("components") or {}).items()},
        speed_tiers=tuple(tuple(t) for t in rec.get("speed_tiers") or []),
        accuracy_tiers=tuple(tuple(t) for t in rec.get("accuracy_tiers") or []),
    )


def _recommendation_entry(rec: Recommendation) -> dict[str, Any]:
    out: dict[str, Any] = {
        "picks": {
            p.priority: {
                "model": p.model,
                "score": p.score,
                **({"tied_with": list(p.tied_with)} if p.tied_with else {}),
                "weights": to_data(p.weights),
                "components": to_data(p.components),
            }
            for p in rec.picks
        },
        "components": {m: to_data(c) for m, c in rec.components.items()},
        "speed_tiers": [list(t) for t in rec.speed_tiers],
    }
    if rec.accuracy_tiers:
        out["accuracy_tiers"] = [list(t) for t in rec.accuracy_tiers]
    return out


def _reference_of(compared: Mapping[str, Mapping[str, Mapping[str, Any]]]) -> str | None:
    return next((e.get("reference") for rows in compared.values() for e in rows.values()), None)


def _gates(records: Sequence[TestRecord]) -> tuple[Gate, ...]:
    """Per gated test, the gate's status, figures, failures and warnings."""
    out = []
    for record in records:
        outcome = record.baseline
        if outcome is None:
            continue
        metrics = [
            GateMetric(
                metric=metric,
                baseline=finite(d.baseline),
                current=finite(d.current),
                delta=_baseline_delta(d, metric),
                p_value=finite(d.p_value),
                regressed=bool(d.regressed),
            )
            for metric, d in sorted(outcome.deltas.items())
        ]
        out.append(
            Gate(
                nodeid=record.nodeid,
                status=outcome.status,
                metrics=tuple(metrics),
                failures=tuple(outcome.failures),
                warnings=tuple(outcome.warnings),
            )
        )
    return tuple(out)


def query_diffs(records: Sequence[TestRecord], reference: str | None) -> tuple[QueryDiff, ...]:
    """Per dataset, each gated test's queries against its baseline entry (the diff the gate
    computed, kept in the record) and each model's against the ``reference`` model on
    nDCG@10 (the metric of the paired comparisons), computed here."""
    out: list[QueryDiff] = []
    for record in records:
        if record.baseline is not None and record.baseline.queries is not None:
            out.append(record.baseline.queries)
    if reference is not None:
        for dataset, rows in model_rows(records).items():
            ref = next((r for r in rows if r.model == reference and r.result), None)
            if ref is None:
                continue
            for row in rows:
                if row is ref or row.result is None:
                    continue
                nodeid = next((r.nodeid for r in records if r.result is row.result), row.model)
                diff = query_diff(
                    row.result,
                    ref.result,
                    metric="ndcg@10",
                    against=reference,
                    nodeid=nodeid,
                    dataset=dataset,
                    model=row.model,
                )
                if diff is not None:
                    out.append(diff)
    return tuple(sorted(out, key=lambda d: (d.dataset, not d.against_baseline, d.nodeid, d.model)))


def _totals(records: Sequence[TestRecord], datasets: Sequence[DatasetSummary]) -> Totals:
    statuses: dict[str, int] = {}
    for r in records:
        statuses[r.status.value] = statuses.get(r.status.value, 0) + 1
    best: tuple[float, str] | None = None
    for dataset in datasets:
        for model in dataset.models:
            value = (model.figures.get("ndcg@10") or Value(None)).value
            if value is not None and (best is None or value > best[0]):
                best = (value, model.model)
    hits = sum(r.result.cache.hits for r in records if r.result is not None)
    misses = sum(r.result.cache.misses for r in records if r.result is not None)
    return Totals(
        tests=len(records),
        statuses=dict(sorted(statuses.items())),
        models=len({r.model for r in records}),
        datasets=len(datasets),
        queries=sum(d.queries or 0 for d in datasets),
        best_ndcg=best[0] if best else None,
        best_model=best[1] if best else None,
        cache_hit_rate=hits / (hits + misses) if hits + misses else None,
    )


def comparisons(
    rows: Mapping[str, Sequence[ModelRow]],
    reference: str | None,
    *,
    seed: int,
    n_resamples: int,
) -> dict[str, dict[str, dict[str, Any]]]:
    """Per dataset, each model's paired nDCG@10 difference to the reference model.

    Randomization-test p-values, Holm-adjusted across the models of one dataset; each entry's
    ``significant`` is :meth:`Comparison.significant
    <pytest_embedbench.stats.Comparison.significant>`.
    """
    out: dict[str, dict[str, dict[str, Any]]] = {}
    if reference is None:
        return out
    for dataset, found in rows.items():
        ref = next((r for r in found if r.model == reference and r.result), None)
        if ref is None or ref.result is None or not ref.result.scores("ndcg@10"):
            continue  # no reference here, or a run without k=10
        out[dataset] = _compare_with(ref, found, reference, seed, n_resamples)
    return out


def _compare_with(
    ref: ModelRow, rows: Sequence[ModelRow], reference: str, seed: int, n_resamples: int
) -> dict[str, dict[str, Any]]:
    from ...evaluation.stats import compare_scores, holm

    assert ref.result is not None
    ref_scores = ref.result.scores("ndcg@10")
    found = []
    for row in rows:
        if row is ref or row.result is None:
            continue
        scores = row.result.scores("ndcg@10")
        shared = sorted(set(scores) & set(ref_scores))
        if not shared:
            continue
        comparison = compare_scores(
            [scores[q] for q in shared],
            [ref_scores[q] for q in shared],
            test="randomization",
            seed=seed,
            n_resamples=n_resamples,
            name=f"ndcg@10 {row.model} - {reference}",
        )
        found.append((row.model, comparison))
    adjusted = holm([c.p_value for _, c in found])
    out: dict[str, dict[str, Any]] = {}
    for (model, comparison), p_holm in zip(found, adjusted, strict=True):
        comparison.p_holm = p_holm
        entry = comparison.to_dict()
        entry["difference"] = entry.pop("value")
        entry["reference"] = reference
        entry["metric"] = "ndcg@10"
        entry["significant"] = comparison.significant()
        out[model] = entry
    return out


def recommendations(
    rows: Mapping[str, Sequence[ModelRow]], *, seed: int = 0, n_resamples: int | None = None
) -> dict[str, Any]:
    """Per dataset, the picks of :func:`~.recommend.recommend` (datasets where a model ran);
    ``seed`` and ``n_resamples`` drive its paired tests of accuracy ties."""
    out = {}
    for dataset, found in rows.items():
        rec = recommend(found, seed=seed, n_resamples=n_resamples)
        if rec is not None:
            out[dataset] = rec
    return out


def baseline_notices(
    session: RunState, records: Sequence[TestRecord], orphans: Sequence[str]
) -> list[str]:
    """What the user should know about the baseline, ending with what to do next."""
    outcomes = [(r.nodeid, r.baseline or GateOutcome("")) for r in records if r.result is not None]
    lines: list[str] = []
    for nodeid, outcome in outcomes:  # changed inputs are always worth a line
        if outcome.changes and outcome.status != "missing":
            if outcome.failures:  # its failure says what changed: once is enough
                lines.append(
                    f"{nodeid}: gated against a baseline of other inputs; what changed is in "
                    "its failure above"
                )
                continue
            lines.append(
                f"{nodeid}: compared with a baseline of other inputs: " + "; ".join(outcome.changes)
            )
    for nodeid, outcome in outcomes:
        lines.extend(f"{nodeid}: {w} (a warning: the test passed)" for w in outcome.warnings)
    missing = [o for _, o in outcomes if o.status == "missing"]
    if session.options.update_baseline is None and missing:
        lines.append(_missing_line(len(missing), session.baseline.path))
    lines.extend(sorted({n for _, o in outcomes for n in o.notes}))
    if orphans:
        lines.append(
            f"{len(orphans)} baseline entr{'y belongs' if len(orphans) == 1 else 'ies belong'}"
            " to tests that no longer exist: "
            + ", ".join(orphans[:10])
            + (" ..." if len(orphans) > 10 else "")
        )
    return lines


def _missing_line(count: int, path: Any) -> str:
    them = "them" if count != 1 else "it"
    looked = (
        f"no entry for {them} in {path}"
        if path.is_file()
        else f"looked for {path}, which does not exist"
    )
    return (
        f"{count} test{'s have' if count != 1 else ' has'} no baseline ({looked}); re-run with "
        f"--embedbench-update-baseline to record {them}"
    )


def orphaned_entries(session: RunState) -> list[str]:
    """Baseline entries whose test function is gone: its file is missing, or the file was
    collected without that function.

    Parametrisation is ignored: an entry of a model left out by ``--embedbench-models``
    (or of a test deselected by ``-k``/``-m``) still has its function, so it is no orphan.
    """
    collected = {function_id(session.baseline_key(nodeid)) for nodeid in session.collected}
    files = {key.split("::", 1)[0] for key in collected}
    orphans = []
    for key in sorted(session.baseline.entries):
        path = key.split("::", 1)[0]
        if not (session.project_dir / path).exists():
            orphans.append(key)
        elif path in files and function_id(key) not in collected:
            orphans.append(key)
    return orphans


def busy_notes(records: Iterable[TestRecord | Mapping[str, Any]]) -> list[str]:
    """A warning when other processes kept the CPUs busy while queries were timed; none for a
    result that timed no query (``--embedbench-latency-passes 0``: it has no latency to doubt,
    its load covers the scored pass only)."""
    busy: dict[str, Mapping[str, Any]] = {}
    for record in sorted((as_record(r) for r in records), key=lambda r: r.nodeid):
        result = record.result or ResultData()
        if _timed(result.latency) is None:
            continue  # nothing was timed
        load = result.environment.get("load") or {}
        if load.get("busy"):
            busy.setdefault(record.model, load)
    if not busy:
        return []
    worst = max(busy.values(), key=lambda load: load.get("others_cpus") or 0.0)
    detail = []
    if worst.get("others_cpus") is not None:
        detail.append(
            f"other processes kept {worst['others_cpus']:.1f} of {worst['cpus']} CPUs busy"
        )
    if worst.get("loadavg_before"):
        detail.append(f"load average {worst['loadavg_before'][0]:.1f}")
    return [
        f"embedbench: the machine was busy while the queries of {', '.join(sorted(busy))} were "
        f"timed ({'; '.join(detail)}): their latencies are unreliable. For stable timings run "
        "on an idle machine with OMP_NUM_THREADS set and one pytest worker (docs/caching-and-"
        "timings.md, 'Stable timings')."
    ]


def _timed(latency: LatencyData) -> tuple[int, int, int] | None:
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
    timed: dict[tuple[int, int, int], list[str]] = {}
    for row in rows:
        basis = _timed(row.result.latency) if row.result is not None else None
        if basis is not None:
            timed.setdefault(basis, []).append(row.model)

    def words(basis: tuple[int, int, int]) -> str:
        n, queries, passes = basis
        what = f"a seeded sample of {n} of {queries}" if n < queries else f"all {queries}"
        how = "one timed pass" if passes == 1 else f"median of {passes} timed passes"
        return f"{how} over {what} queries"

    if not timed:
        return None
    if len(timed) == 1:
        return words(next(iter(timed)))
    return "; ".join(f"{', '.join(models)}: {words(basis)}" for basis, models in timed.items())

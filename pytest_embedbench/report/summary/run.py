"""What a run adds up to, computed once at its end: the typed :class:`Summary` every report
formats.

:func:`build_summary` folds a run's records into one row per (dataset, model) with every figure
a person reads (:mod:`.rows`, :mod:`.datasets`: metrics with their intervals, latency,
footprint and cost, each marked when it is the best of its column), compares every model with
the reference (:mod:`.comparisons`: paired randomization tests, Holm-adjusted, significant by
:meth:`Comparison.significant <pytest_embedbench.stats.Comparison.significant>`), reads the
baseline gate's differences and verdicts (:mod:`.gates`), picks the recommendations
(:mod:`.recommend`), builds the stress grids (:mod:`.stress`) and cut-off tables
(:mod:`.cutoffs`), the index
rows (:mod:`.indexes`), the two stages of reranked tests (:mod:`.stages`) and collects the
notices (:mod:`.notices`). Every record is frozen.

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
from typing import Any

from ...core.exceptions import RecordError
from ...core.io import finite as finite_data
from ...evaluation.record import TestRecord, as_record
from ...records.querydiff import QueryDiff
from ...records.serial import from_data, to_data
from .comparisons import comparison_entry, comparisons, query_diffs
from .cutoffs import CutoffSection, cutoff_rows, cutoff_sections
from .datasets import DatasetSummary, dataset_summary
from .gates import Gate, gates
from .indexes import IndexSection, QueryLoadSection, index_sections, query_load_sections
from .languages import LanguageSection, language_sections
from .notices import (
    baseline_notices,
    busy_notes,
    fusion_notes,
    judge_notes,
    judged_notes,
    orphaned_entries,
)
from .recommend import recommendation_entry, recommendations
from .rows import model_rows
from .stages import StageSection, stage_sections
from .state import RunState
from .stress import StressSection, stress_points, stress_sections
from .values import Delta, Value

__all__ = [
    "SUMMARY_VERSION",
    "Summary",
    "Totals",
    "build_summary",
    "summarize",
    "summary_of",
    "totals",
]

#: the version of the JSON report's ``summary`` section
SUMMARY_VERSION = 1


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
    #: the providers' query embedding under load (``--embedbench-concurrency``, a loopback
    #: server): per dataset, a row per model
    query_load: tuple[QueryLoadSection, ...] = ()
    #: datasets in several languages: per dataset, each model's row per language and its
    #: macro average (absent from the JSON when no dataset has languages)
    languages: tuple[LanguageSection, ...] = ()
    #: the reranking axis: per dataset, each reranker over its model's first stage (absent
    #: from the JSON when no test has ``rerankers=``)
    stages: tuple[StageSection, ...] = ()
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
    #: the hybrids whose fusion weight was tuned, and on which queries
    fusion_notes: tuple[str, ...] = ()
    #: where a model's judged@10 is low: the metrics may understate unjudged relevant results
    judged_notes: tuple[str, ...] = ()
    #: what the LLM judge added to each test (before and after, agreement, requests, cost)
    judge_notes: tuple[str, ...] = ()
    #: what was written and what to do next (baseline updates, lost results)
    notes: tuple[str, ...] = ()
    records: tuple[TestRecord, ...] = ()

    @property
    def notices(self) -> list[str]:
        """The lines printed under the table, in order."""
        return [
            *self.judged_notes,
            *self.judge_notes,
            *self.baseline_notices,
            *self.busy_notes,
            *self.fusion_notes,
            *self.notes,
        ]

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
            optional = f.name in ("indexes", "query_load", "languages", "stages")
            if optional and not getattr(self, f.name):
                continue  # a run without these axes or languages keeps its JSON as it was
            if f.name != "records":
                out[f.name] = to_data(getattr(self, f.name))
        return out

    @classmethod
    def from_json(cls, report: Mapping[str, Any]) -> Summary:
        """The summary of a JSON report (``--embedbench-json``'s content): its ``summary``
        section, or, for a report written before that section existed, one built from its
        ``tests``, ``comparisons``, ``recommendations`` and ``baseline`` sections."""
        tests = report.get("tests") or []
        records = tuple(TestRecord.from_dict(t, at=f"tests[{i}]") for i, t in enumerate(tests))
        data = report.get("summary")
        if isinstance(data, Mapping):
            return dataclasses.replace(from_data(cls, data, at="summary"), records=records)
        compared = _section(report, "comparisons", depth=3)
        recs = _section(report, "recommendations")
        block = _section(report, "baseline")
        recommended = _section(recs, "datasets", at="recommendations.", depth=2)
        stress = _section(report, "stress")
        for key in ("orphaned", "not_recorded"):
            if not isinstance(block.get(key) or [], list):
                raise RecordError(f"baseline.{key}: expected a list, got {_kind(block[key])}")
        try:
            return summarize(
                records,
                reference=_reference_of(compared),
                priority=recs.get("priority") or "balanced",
                comparisons=compared,
                recommendations=recommended,
                baseline_path=block.get("path"),
                baseline_update=block.get("update"),
                orphaned=block.get("orphaned") or (),
                not_recorded=block.get("not_recorded") or (),
                busy=busy_notes(records),
                stress=stress or None,
            )
        except (AttributeError, KeyError, TypeError, ValueError) as exc:
            # a value deeper in an older report's sections than the checks above look
            raise RecordError(
                "a section of this report (written before the 'summary' section existed) "
                f"does not have its shape: {type(exc).__name__}: {exc}"
            ) from None

    def comparisons_section(self) -> dict[str, dict[str, dict[str, Any]]]:
        """The JSON report's ``comparisons``: per dataset and model, the paired nDCG@10
        difference to the reference (``significant`` added in this version)."""
        out: dict[str, dict[str, dict[str, Any]]] = {}
        for dataset in self.datasets:
            found = {m.model: comparison_entry(m.versus) for m in dataset.compared if m.versus}
            if found:
                out[dataset.name] = found
        return out

    def recommendations_section(self) -> dict[str, Any]:
        """The JSON report's ``recommendations``."""
        return {
            "priority": self.priority,
            "datasets": {
                d.name: recommendation_entry(d.recommendation)
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
    comparisons: Mapping[str, Mapping[str, Delta | Mapping[str, Any]]] | None = None,
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
    """The summary of ``records`` with the paired ``comparisons`` (``{dataset: {model: delta}}``
    as :func:`~.comparisons.comparisons` builds them, or a saved report's JSON entries) and
    ``recommendations`` (``{dataset: recommend(...)}``) already computed: what
    :func:`build_summary` and a report of an older version both read.
    ``stress``: the stress rows of such a report (default: read from the records)."""
    found = sorted((as_record(r) for r in records), key=lambda r: r.nodeid)
    rows = model_rows(found)
    versus = comparisons or {}
    recs = recommendations or {}
    datasets = tuple(
        dataset_summary(name, found_rows, versus.get(name) or {}, reference, recs.get(name))
        for name, found_rows in rows.items()
    )
    return Summary(
        datasets=datasets,
        reference=reference,
        priority=priority,
        stress=stress_sections(stress if stress is not None else stress_points(found)),
        cutoffs=cutoff_sections(cutoff_rows(found)),
        indexes=index_sections(found),
        query_load=query_load_sections(found),
        languages=language_sections(found),
        stages=stage_sections(found),
        gates=gates(found),
        query_diffs=query_diffs(found, reference),
        totals=totals(found, datasets),
        baseline_path=baseline_path,
        baseline_update=baseline_update,
        orphaned=tuple(orphaned),
        not_recorded=tuple(not_recorded),
        baseline_notices=tuple(notices),
        busy_notes=tuple(busy),
        fusion_notes=tuple(fusion_notes(found)),
        judged_notes=tuple(judged_notes(datasets)),
        judge_notes=tuple(judge_notes(found)),
        notes=tuple(notes),
        records=tuple(found),
    )


def _reference_of(compared: Mapping[str, Mapping[str, Mapping[str, Any]]]) -> str | None:
    return next((e.get("reference") for rows in compared.values() for e in rows.values()), None)


def totals(records: Sequence[TestRecord], datasets: Sequence[DatasetSummary]) -> Totals:
    """The run at a glance: tests by status, models, datasets, queries, the best nDCG@10 and
    the embedding cache's hit rate."""
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


def _kind(value: Any) -> str:
    """``a list``, ``a number`` ...: what a JSON value is, for a shape error."""
    if isinstance(value, Mapping):
        return "an object"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, str):
        return "a string"
    if value is None or isinstance(value, bool):
        return json.dumps(value)
    return "a number"


def _section(
    report: Mapping[str, Any], key: str, *, at: str = "", depth: int = 1
) -> Mapping[str, Any]:
    """``report[key]`` (empty when absent), checked to be an object whose values are objects
    ``depth`` levels down; else a :class:`RecordError` naming the key path."""
    value = report.get(key) or {}
    stack: list[tuple[str, Any, int]] = [(f"{at}{key}", value, depth)]
    while stack:
        path, item, levels = stack.pop()
        if not isinstance(item, Mapping):
            raise RecordError(f"{path}: expected an object, got {_kind(item)}")
        if levels > 1:
            stack.extend((f"{path}.{name}", inner, levels - 1) for name, inner in item.items())
    return value

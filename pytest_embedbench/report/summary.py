"""What a run's records add up to, computed once at its end and only read by the reports.

:func:`build_summary` folds the records into one row per (dataset, model), compares every model
with the reference (paired randomization tests, Holm-adjusted), picks the recommendations and
collects the notices (baseline, busy machine, what was written). The terminal table, the JSON
report and any later writer (HTML, CSV) render a :class:`Summary`; none computes anything.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, TypedDict

from ..records import Status, TestRecord, as_record
from .recommend import recommend
from .stress import cutoff_rows, stress_points

if TYPE_CHECKING:
    from pathlib import Path

    from ..baseline import BaselineFile
    from ..options import Options


class RunState(Protocol):
    """What a summary reads of a run: the session of the pytest layer is one
    (:class:`~pytest_embedbench.session.EmbedBenchSession`), declared here so the outputs need
    nothing above them."""

    @property
    def options(self) -> Options: ...
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
    "ModelRow",
    "Summary",
    "baseline_notices",
    "build_summary",
    "busy_notes",
    "comparisons",
    "latency_basis",
    "model_rows",
    "orphaned_entries",
    "recommendations",
]


class ModelRow(TypedDict):
    """One model on one dataset: the tests that used it folded into one table row."""

    dataset: str
    model: str
    spec: str
    baseline: dict[str, Any] | None  # the nDCG@10 Δ to the baseline, when gated
    result: dict[str, Any] | None
    status: str
    error: str | None
    tests: int


@dataclass
class Summary:
    """Everything the reports show beyond the records themselves."""

    records: list[TestRecord]
    rows: dict[str, list[ModelRow]]
    reference: str | None = None
    priority: str = "balanced"
    comparisons: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)
    recommendations: dict[str, Any] = field(default_factory=dict)
    baseline_notices: list[str] = field(default_factory=list)
    busy_notes: list[str] = field(default_factory=list)
    orphaned: list[str] = field(default_factory=list)
    not_recorded: list[str] = field(default_factory=list)
    baseline_path: str | None = None
    #: what was written and what to do next (baseline updates, lost results)
    notes: list[str] = field(default_factory=list)
    #: per dataset, every stress workload point (see report.stress.stress_points)
    stress: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    #: per dataset, the cut-offs tests measured (see report.stress.cutoff_rows)
    cutoffs: dict[str, list[dict[str, Any]]] = field(default_factory=dict)

    @property
    def notices(self) -> list[str]:
        """The lines printed under the table, in order."""
        return self.baseline_notices + self.busy_notes + self.notes


def build_summary(session: RunState, notes: Sequence[str] = ()) -> Summary:
    """The summary of ``session``'s records (after the baseline was written, if asked)."""
    records = sorted(session.records.values(), key=lambda r: r.nodeid)
    rows = model_rows(records)
    reference = session.options.reference or next(
        (r.reference for r in session.records.values() if r.reference), None
    )
    orphans = orphaned_entries(session)
    return Summary(
        records=records,
        rows=rows,
        reference=reference,
        priority=session.options.priority,
        comparisons=comparisons(
            rows, reference, seed=session.options.seed, n_resamples=session.options.bootstrap
        ),
        recommendations=recommendations(rows),
        baseline_notices=baseline_notices(session, records, orphans),
        busy_notes=busy_notes(records),
        orphaned=orphans,
        not_recorded=session.not_recorded(),
        baseline_path=str(session.baseline.path),
        notes=list(notes),
        stress=stress_points(records),
        cutoffs=cutoff_rows(records),
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
            continue  # a stress point has its own section (report.stress), not a table row
        key = (record.dataset, record.model)
        row = by_key.get(key)
        if row is None:
            row = by_key[key] = ModelRow(
                dataset=record.dataset,
                model=record.model,
                spec=record.spec,
                baseline=None,
                result=None,
                status=Status.PASSED.value,
                error=None,
                tests=0,
            )
        _fold(row, record)
    out: dict[str, list[ModelRow]] = {}
    for (dataset, _model), row in sorted(by_key.items()):
        out.setdefault(dataset, []).append(row)
    return out


def _fold(row: ModelRow, record: TestRecord) -> None:
    row["tests"] += 1
    found = record.result
    if found is not None and (row["result"] is None or _better(found, row["result"])):
        row["result"] = found  # the fullest, coldest run (see _better)
    deltas = (record.baseline or {}).get("deltas") or {}
    if row["baseline"] is None and "ndcg@10" in deltas:
        row["baseline"] = deltas["ndcg@10"]
    if record.status.rank > Status(row["status"]).rank:
        row["status"] = record.status.value
    if record.error and not row["error"]:
        row["error"] = record.error


def _better(candidate: Mapping[str, Any], current: Mapping[str, Any]) -> bool:
    """Which of two results of one model on one dataset the table shows: the one with more
    metrics (a test asking for fewer cut-offs would blank columns), then a cold run (it
    measured documents/s; a warm one, every document cached, could not), then the one that
    loaded the model (what the model adds to memory)."""

    def rank(result: Mapping[str, Any]) -> tuple[int, bool, float]:
        value = result.get("documents_per_s")
        added = result.get("added_rss_mb")
        return (
            len(result.get("metrics") or {}),
            isinstance(value, (int, float)) and math.isfinite(value),
            float(added) if isinstance(added, (int, float)) and math.isfinite(added) else 0.0,
        )

    return rank(candidate) > rank(current)


def comparisons(
    rows: Mapping[str, Sequence[ModelRow]],
    reference: str | None,
    *,
    seed: int,
    n_resamples: int,
) -> dict[str, dict[str, dict[str, Any]]]:
    """Per dataset, each model's paired nDCG@10 difference to the reference model.

    Randomization-test p-values, Holm-adjusted across the models of one dataset.
    """
    out: dict[str, dict[str, dict[str, Any]]] = {}
    if reference is None:
        return out
    for dataset, found in rows.items():
        ref = next((r for r in found if r["model"] == reference and r["result"]), None)
        if ref is None or "ndcg@10" not in (ref["result"] or {}).get("per_query", {}):
            continue  # no reference here, or a run without k=10
        out[dataset] = _compare_with(ref, found, reference, seed, n_resamples)
    return out


def _compare_with(
    ref: ModelRow, rows: Sequence[ModelRow], reference: str, seed: int, n_resamples: int
) -> dict[str, dict[str, Any]]:
    from ..stats import compare_scores, holm

    assert ref["result"] is not None
    ref_scores = ref["result"]["per_query"]["ndcg@10"]
    found = []
    for row in rows:
        if row is ref or row["result"] is None:
            continue
        scores = row["result"]["per_query"].get("ndcg@10") or {}
        shared = sorted(set(scores) & set(ref_scores))
        if not shared:
            continue
        comparison = compare_scores(
            [scores[q] for q in shared],
            [ref_scores[q] for q in shared],
            test="randomization",
            seed=seed,
            n_resamples=n_resamples,
            name=f"ndcg@10 {row['model']} - {reference}",
        )
        found.append((row["model"], comparison))
    adjusted = holm([c.p_value for _, c in found])
    out: dict[str, dict[str, Any]] = {}
    for (model, comparison), p_holm in zip(found, adjusted, strict=True):
        comparison.p_holm = p_holm
        entry = comparison.to_dict()
        entry["difference"] = entry.pop("value")
        entry["reference"] = reference
        entry["metric"] = "ndcg@10"
        out[model] = entry
    return out


def recommendations(rows: Mapping[str, Sequence[ModelRow]]) -> dict[str, Any]:
    """Per dataset, the picks of :func:`~.recommend.recommend` (datasets where a model ran)."""
    out = {}
    for dataset, found in rows.items():
        rec = recommend(found)
        if rec is not None:
            out[dataset] = rec
    return out


def baseline_notices(
    session: RunState, records: Sequence[TestRecord], orphans: Sequence[str]
) -> list[str]:
    """What the user should know about the baseline, ending with what to do next."""
    outcomes = [(r.nodeid, r.baseline or {}) for r in records if r.result is not None]
    lines: list[str] = []
    for nodeid, outcome in outcomes:  # changed inputs are always worth a line
        if outcome.get("changes") and outcome.get("status") != "missing":
            lines.append(
                f"{nodeid}: compared with a baseline of other inputs: "
                + "; ".join(outcome["changes"])
            )
    for nodeid, outcome in outcomes:
        lines.extend(
            f"{nodeid}: {w} (a warning: the test passed)" for w in outcome.get("warnings", [])
        )
    missing = [o for _, o in outcomes if o.get("status") == "missing"]
    if session.options.update_baseline is None and missing:
        lines.append(_missing_line(len(missing), session.baseline.path))
    lines.extend(sorted({n for _, o in outcomes for n in o.get("notes", [])}))
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
    collected = {_function(session.baseline_key(nodeid)) for nodeid in session.collected}
    files = {key.split("::", 1)[0] for key in collected}
    orphans = []
    for key in sorted(session.baseline.entries):
        path = key.split("::", 1)[0]
        if not (session.project_dir / path).exists():
            orphans.append(key)
        elif path in files and _function(key) not in collected:
            orphans.append(key)
    return orphans


def _function(nodeid: str) -> str:
    """A node id without its parameters: ``t.py::test_x[bm25]`` -> ``t.py::test_x``."""
    head, sep, last = nodeid.rpartition("::")
    return head + sep + last.split("[", 1)[0]


def busy_notes(records: Iterable[TestRecord | Mapping[str, Any]]) -> list[str]:
    """A warning when other processes kept the CPUs busy while queries were timed; none for a
    result that timed no query (``--embedbench-latency-passes 0``: it has no latency to doubt,
    its load covers the scored pass only)."""
    busy: dict[str, Mapping[str, Any]] = {}
    for record in sorted((as_record(r) for r in records), key=lambda r: r.nodeid):
        result = record.result or {}
        latency = result.get("latency")
        if isinstance(latency, Mapping) and _timed(latency) is None:
            continue  # nothing was timed
        load = (result.get("environment") or {}).get("load") or {}
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
        "on an idle machine with OMP_NUM_THREADS set and one pytest worker (README: Stable "
        "timings)."
    ]


def _timed(latency: Mapping[str, Any]) -> tuple[int, int, int] | None:
    """``(timed queries, queries in the run, passes)`` of one latency block (None: nothing
    timed). Older reports lack ``queries``: every query was timed then."""
    n = latency.get("n")
    if not isinstance(n, int) or isinstance(n, bool) or n <= 0:
        return None
    queries = latency.get("queries")
    queries = queries if isinstance(queries, int) and queries >= n else n
    passes = latency.get("passes")
    return n, queries, passes if isinstance(passes, int) and passes > 0 else 1


def latency_basis(rows: Iterable[ModelRow]) -> str | None:
    """What the latency figures of ``rows`` were measured over, for a table's legend: e.g.
    ``"median of 3 timed passes over a seeded sample of 50 of 300 queries"`` (None when no row
    timed anything). Rows timed differently are named one by one, in table order."""
    timed: dict[tuple[int, int, int], list[str]] = {}
    for row in rows:
        basis = _timed(((row.get("result") or {}).get("latency")) or {})
        if basis is not None:
            timed.setdefault(basis, []).append(row["model"])

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

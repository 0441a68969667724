"""The stress and cut-off sections of a run's summary, typed and computed once.

:func:`stress_points` reads the records of stress tests (``record.workload`` set) into the JSON
report's ``stress`` rows (one per workload point, by dataset); :func:`stress_sections` turns
such rows into what a person reads: per dataset, the chunk-size sweep and the noise workloads as
paired differences against the clean run (each a :class:`~.values.Delta` with its verdict), and
per model a needle grid (depth x haystack length, hit@1, the cells where the needle lay past what
the model reads). :func:`cutoff_rows` and :func:`cutoff_sections` do the same for the cut-offs
tests measured (``retrieval.cutoffs``): each level's threshold, its aim, its held-out rates with
their intervals and whether the held-out rate missed the aim. Every writer formats these
records; none decides a verdict or a miss itself.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ...evaluation.cutoffs import LEVELS
from ...evaluation.record import TestRecord, as_record
from ...records.resultdata import ResultData
from ...records.serial import to_data
from .values import Delta, Value, finite, interval_delta, value_of

__all__ = [
    "HEADLINE",
    "ChunkPoint",
    "CutoffModel",
    "CutoffRow",
    "CutoffSection",
    "NeedleCell",
    "NeedleGrid",
    "NoisePoint",
    "ScoreDistribution",
    "StressSection",
    "cutoff_rows",
    "cutoff_sections",
    "point_row",
    "stress_points",
    "stress_sections",
]

#: the metric a noise or chunk-size point's delta shows (when the run computed it)
HEADLINE = "ndcg@10"
#: the noise-floor levels in their order, strictest first
_LEVEL_ORDER = {name: i for i, name in enumerate(LEVELS)}


@dataclass(frozen=True)
class NoisePoint:
    """One noise workload of one model: the clean and the noisy metric, and their paired
    difference (noisy - clean, averaged over the workload's seeds)."""

    model: str
    workload: str
    seeds: int
    status: str
    clean: Value | None = None
    stressed: Value | None = None
    delta: Delta | None = None
    nodeid: str = ""


@dataclass(frozen=True)
class ChunkPoint:
    """One chunk size of one model against the dataset's configured chunking (paired)."""

    model: str
    size: int
    status: str
    workload: str = ""
    clean: Value | None = None
    stressed: Value | None = None
    delta: Delta | None = None
    nodeid: str = ""


@dataclass(frozen=True)
class NeedleCell:
    """One needle point: hit@1 (and nDCG@10) of the needle questions at one depth and length;
    ``cut``: the needle lay past the model's maximum sequence length (None: no limit known)."""

    depth: float
    length: int
    status: str
    workload: str = ""
    hit1: Value | None = None
    ndcg: Value | None = None
    cut: bool | None = None


@dataclass(frozen=True)
class NeedleGrid:
    """One model's needle points as a grid: ``depths`` (rows) x ``lengths`` (columns)."""

    model: str
    depths: tuple[float, ...]
    lengths: tuple[int, ...]
    cells: tuple[NeedleCell, ...]
    #: hit@1 by chance (1 / haystacks)
    chance: float | None = None
    #: the tokens the model reads (its max_seq_length)
    reads: int | None = None

    def cell(self, depth: float, length: int) -> NeedleCell | None:
        return next((c for c in self.cells if c.depth == depth and c.length == length), None)


@dataclass(frozen=True)
class StressSection:
    """The stress results of one dataset."""

    dataset: str
    chunks: tuple[ChunkPoint, ...] = ()
    noise: tuple[NoisePoint, ...] = ()
    needles: tuple[NeedleGrid, ...] = ()


@dataclass(frozen=True)
class CutoffRow:
    """One cut-off level of one model: its threshold (None: no cut-off, every result kept),
    its aim, and what it did on the held-out queries (shares, with 95% intervals)."""

    level: str
    target: float | None
    threshold: float | None
    #: the share of random pairs the level aims to let through, with the range the held-out
    #: share should fall in if the aim carries over (noise-floor levels of newer reports)
    expected_random: Value | None = None
    keeps_relevant: Value | None = None
    lets_random: Value | None = None
    #: held-out queries that keep all (or the relevant share) of their relevant documents
    keeps_queries: Value | None = None
    #: the held-out random-pair share fell outside ``expected_random``'s range
    outside_expected: bool = False
    #: conformal: even the upper bound of ``keeps_queries`` is below the target
    short_of_target: bool = False

    @property
    def conformal(self) -> bool:
        return self.level == "conformal"


@dataclass(frozen=True)
class ScoreDistribution:
    """The held-out pair scores the cut-offs are cut from, as histograms over shared bins
    (``Cutoffs.distribution``): ``relevant[i]`` and ``random[i]`` pairs score between
    ``edges[i]`` and ``edges[i + 1]``; the unscored ones were not returned at all."""

    edges: tuple[float, ...]
    relevant: tuple[int, ...]
    random: tuple[int, ...]
    relevant_unscored: int = 0
    random_unscored: int = 0
    half: str = "held-out"

    @property
    def relevant_pairs(self) -> int:
        return sum(self.relevant) + self.relevant_unscored

    @property
    def random_pairs(self) -> int:
        return sum(self.random) + self.random_unscored


@dataclass(frozen=True)
class CutoffModel:
    """One model's cut-offs on one dataset; ``meaningful`` False (with ``reason``) when its
    scores are not comparable across queries, and then no rows."""

    model: str
    meaningful: bool
    reason: str = ""
    #: the conformal cut-off's guarantee, one sentence
    guarantee: str = ""
    notes: tuple[str, ...] = ()
    #: share of a query's relevant documents the conformal cut-off keeps (1.0: all)
    relevant_share: float = 1.0
    calibration_queries: int | None = None
    heldout_queries: int | None = None
    rows: tuple[CutoffRow, ...] = ()
    #: the held-out score distributions (None: not measured, or no meaningful cut-off)
    distribution: ScoreDistribution | None = None


@dataclass(frozen=True)
class CutoffSection:
    """The cut-offs measured on one dataset, a model at a time (sorted by name)."""

    dataset: str
    models: tuple[CutoffModel, ...]


# -- the JSON report's stress rows -------------------------------------------------------------


def stress_points(
    records: Iterable[TestRecord | Mapping[str, Any]],
) -> dict[str, list[dict[str, Any]]]:
    """Per dataset, one row per stress test (sorted by model, then workload id): the JSON
    report's ``stress`` section."""
    out: dict[str, list[dict[str, Any]]] = {}
    for record in (as_record(r) for r in records):
        if record.workload is None:
            continue
        row = point_row(record.model, record.workload, record.result, record.status.value)
        out.setdefault(record.dataset, []).append({"nodeid": record.nodeid, **row})
    return {
        dataset: sorted(rows, key=lambda r: (r["model"], r["kind"], r["id"]))
        for dataset, rows in sorted(out.items())
    }


def point_row(
    model: str,
    workload: Mapping[str, Any],
    result: ResultData | None,
    status: str,
) -> dict[str, Any]:
    """One point's row (the JSON report's form) from its workload and ``StressedResult``
    data."""
    stress = result.stress if result is not None else None
    metrics = result.metrics if result is not None else {}
    return {
        "model": model,
        "kind": workload.get("kind"),
        "id": workload.get("id"),
        "params": workload.get("params") or {},
        "seeds": workload.get("seeds") or [],
        "status": status,
        "metrics": {m: to_data(metrics[m]) for m in (HEADLINE, "hit@1") if m in metrics},
        "clean": to_data((stress.clean or {}).get(HEADLINE)) if stress else None,
        "delta": to_data((stress.delta or {}).get(HEADLINE)) if stress else None,
        "info": stress.info if stress else {},
    }


def stress_sections(points: Mapping[str, Sequence[Mapping[str, Any]]]) -> tuple[StressSection, ...]:
    """The typed sections of :func:`stress_points`' rows (or a saved report's), by dataset."""
    out = []
    for dataset, rows in points.items():
        chunks = sorted(
            (_chunk(r) for r in rows if r.get("kind") == "chunk-size"),
            key=lambda p: (p.model, p.size),
        )
        noise = [_noise(r) for r in rows if r.get("kind") == "noise"]
        needles = [r for r in rows if r.get("kind") == "needle"]
        grids = [
            _needle_grid(model, [r for r in needles if r.get("model") == model])
            for model in sorted({str(r.get("model")) for r in needles})
        ]
        out.append(StressSection(dataset, tuple(chunks), tuple(noise), tuple(grids)))
    return tuple(out)


def _paired(row: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "model": str(row.get("model")),
        "status": str(row.get("status")),
        "clean": value_of(row.get("clean")),
        "stressed": value_of((row.get("metrics") or {}).get(HEADLINE)),
        "delta": interval_delta(row.get("delta"), against="clean", metric=HEADLINE),
        "nodeid": str(row.get("nodeid") or ""),
    }


def _noise(row: Mapping[str, Any]) -> NoisePoint:
    return NoisePoint(
        workload=str(row.get("id")), seeds=len(row.get("seeds") or []), **_paired(row)
    )


def _chunk(row: Mapping[str, Any]) -> ChunkPoint:
    return ChunkPoint(
        size=int((row.get("params") or {}).get("size") or 0),
        workload=str(row.get("id") or ""),
        **_paired(row),
    )


def _needle_grid(model: str, rows: Sequence[Mapping[str, Any]]) -> NeedleGrid:
    cells = []
    for r in rows:
        params, info = r.get("params") or {}, r.get("info") or {}
        metrics = r.get("metrics") or {}
        cut = info.get("cut")
        cells.append(
            NeedleCell(
                depth=float(params["depth"]),
                length=int(params["length"]),
                status=str(r.get("status")),
                workload=str(r.get("id") or ""),
                hit1=value_of(metrics.get("hit@1")),
                ndcg=value_of(metrics.get(HEADLINE)),
                cut=None if cut is None else bool(cut),
            )
        )
    cells.sort(key=lambda c: (c.depth, c.length))
    infos = [r.get("info") or {} for r in rows if r.get("info")]
    chance = next((finite(i.get("chance_hit@1")) for i in infos), None)
    reads = next((i.get("max_seq_length") for i in infos), None)
    return NeedleGrid(
        model=model,
        depths=tuple(sorted({c.depth for c in cells})),
        lengths=tuple(sorted({c.length for c in cells})),
        cells=tuple(cells),
        chance=chance,
        reads=int(reads) if isinstance(reads, int) else None,
    )


# -- cut-offs ----------------------------------------------------------------------------------


def cutoff_rows(
    records: Iterable[TestRecord | Mapping[str, Any]],
) -> dict[str, list[dict[str, Any]]]:
    """Per dataset, the cut-offs measured by tests that read ``retrieval.cutoffs`` (one row per
    model and level: strict, balanced, loose, conformal), once per model. Each row also
    carries its model's ``meaningful``, ``reason``, ``notes`` and query counts."""
    out: dict[str, dict[str, list[dict[str, Any]]]] = {}
    for record in sorted((as_record(r) for r in records), key=lambda r: r.nodeid):
        found = record.result.cutoffs if record.result is not None else None
        if not found or record.workload is not None:
            continue
        per_model = out.setdefault(record.dataset, {})
        if record.model in per_model:
            continue
        # strict, balanced, loose (the JSON keeps the levels by name), then conformal
        levels = sorted(
            (found.get("levels") or {}).values(),
            key=lambda level: _LEVEL_ORDER.get(level.get("name"), len(_LEVEL_ORDER)),
        )
        levels.append(found.get("conformal") or {})
        shared = {
            "meaningful": found.get("meaningful", True),
            "reason": found.get("reason") or "",
            "notes": list(found.get("notes") or []),
            "relevant_share": found.get("relevant_share", 1.0),
            "calibration_queries": found.get("calibration_queries"),
            "heldout_queries": found.get("heldout_queries"),
            "distribution": found.get("distribution") or {},
        }
        per_model[record.model] = [
            {"model": record.model, **level, **shared} for level in levels if level.get("name")
        ]
    return {
        dataset: [row for model in sorted(models) for row in models[model]]
        for dataset, models in sorted(out.items())
    }


def cutoff_sections(
    rows_by_dataset: Mapping[str, Sequence[Mapping[str, Any]]],
) -> tuple[CutoffSection, ...]:
    """The typed sections of :func:`cutoff_rows`' rows, by dataset (models in row order)."""
    out = []
    for dataset, rows in rows_by_dataset.items():
        models: dict[str, list[Mapping[str, Any]]] = {}
        for row in rows:
            models.setdefault(str(row.get("model")), []).append(row)
        out.append(CutoffSection(dataset, tuple(_cutoff_model(m, r) for m, r in models.items())))
    return tuple(out)


def _cutoff_model(model: str, rows: Sequence[Mapping[str, Any]]) -> CutoffModel:
    first = rows[0]
    meaningful = bool(first.get("meaningful", True))
    conformal = next((r for r in rows if r.get("name") == "conformal"), {})
    guarantee = str(conformal.get("guarantee") or "")
    # a note that only repeats the guarantee (too few queries for any cut-off) is said once
    said = guarantee.removeprefix("No cut-off: ")
    notes = tuple(str(n) for n in first.get("notes") or [] if n != said)
    share = finite(first.get("relevant_share"))
    return CutoffModel(
        model=model,
        meaningful=meaningful,
        reason=str(first.get("reason") or ""),
        guarantee=guarantee if meaningful else "",
        notes=notes if meaningful else (),
        relevant_share=1.0 if share is None else share,
        calibration_queries=first.get("calibration_queries"),
        heldout_queries=first.get("heldout_queries"),
        rows=tuple(_cutoff_row(r) for r in rows) if meaningful else (),
        distribution=_distribution(first.get("distribution")) if meaningful else None,
    )


def _distribution(data: Any) -> ScoreDistribution | None:
    """The histograms of a ``Cutoffs.distribution`` (None when absent or malformed)."""
    if not isinstance(data, Mapping):
        return None
    edges = [finite(e) for e in data.get("edges") or []]
    relevant, random = data.get("relevant") or [], data.get("random") or []
    if len(edges) < 2 or None in edges or not len(relevant) == len(random) == len(edges) - 1:
        return None
    return ScoreDistribution(
        edges=tuple(float(e) for e in edges if e is not None),
        relevant=tuple(int(c) for c in relevant),
        random=tuple(int(c) for c in random),
        relevant_unscored=int(data.get("relevant_unscored") or 0),
        random_unscored=int(data.get("random_unscored") or 0),
        half=str(data.get("half") or "held-out"),
    )


def _rate(row: Mapping[str, Any], key: str) -> Value | None:
    value = finite(row.get(key))
    if value is None:
        return None
    return Value(value, finite(row.get(f"{key}_low")), finite(row.get(f"{key}_high")))


def _cutoff_row(row: Mapping[str, Any]) -> CutoffRow:
    name = str(row.get("name"))
    target = finite(row.get("target"))
    lets = _rate(row, "lets_random")
    kept = _rate(row, "keeps_queries")
    low, high = finite(row.get("expected_random_low")), finite(row.get("expected_random_high"))
    expected = (
        Value(target, low, high)
        if name != "conformal" and target is not None and low is not None
        else None
    )
    outside = (
        expected is not None
        and lets is not None
        and high is not None
        and not low <= lets.value <= high  # type: ignore[operator]
    )
    short = (
        name == "conformal"
        and kept is not None
        and kept.high is not None
        and target is not None
        and kept.high < target
    )
    return CutoffRow(
        level=name,
        target=target,
        threshold=finite(row.get("threshold")),
        expected_random=expected,
        keeps_relevant=_rate(row, "keeps_relevant"),
        lets_random=lets,
        keeps_queries=kept,
        outside_expected=outside,
        short_of_target=short,
    )

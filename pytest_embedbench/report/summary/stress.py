"""The stress sections of a run's summary, typed and computed once.

:func:`stress_points` reads the records of stress tests (``record.workload`` set) into the JSON
report's ``stress`` rows (one per workload point, by dataset); :func:`stress_sections` turns
such rows into what a person reads: per dataset, the chunk-size sweep and the noise workloads as
paired differences against the clean run (each a :class:`~.values.Delta` with its verdict), and
per model a needle grid (depth x haystack length, hit@1, the cells where the needle lay past what
the model reads). The cut-offs have their own module (:mod:`.cutoffs`). Every writer formats
these records; none decides a verdict itself.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ...evaluation.record import TestRecord, as_record
from ...records.resultdata import ResultData
from ...records.serial import to_data
from .values import Delta, Value, finite, interval_delta, value_of

__all__ = [
    "HEADLINE",
    "ChunkPoint",
    "NeedleCell",
    "NeedleGrid",
    "NoisePoint",
    "StressSection",
    "point_row",
    "stress_points",
    "stress_sections",
]

#: the metric a noise or chunk-size point's delta shows (when the run computed it)
HEADLINE = "ndcg@10"


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

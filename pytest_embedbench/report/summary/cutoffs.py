"""The cut-off sections of a run's summary, typed and computed once.

:func:`cutoff_rows` reads the cut-offs tests measured (``retrieval.cutoffs``) into the JSON
report's rows and :func:`cutoff_sections` turns them into what a person reads: per dataset and
model each level's threshold, its aim, its held-out rates with their intervals and whether the
held-out rate missed the aim, and the held-out score histograms the cut-offs are cut from, with
each bin's share of its pairs (:class:`ScoreDistribution`, :func:`score_bins`). Every writer
formats these records; none decides a miss or computes a share itself.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ...evaluation.cutoffs import LEVELS
from ...evaluation.record import TestRecord, as_record
from .values import Value, finite

__all__ = [
    "CutoffModel",
    "CutoffRow",
    "CutoffSection",
    "ScoreBin",
    "ScoreDistribution",
    "cutoff_rows",
    "cutoff_sections",
    "score_bins",
]

#: the noise-floor levels in their order, strictest first
_LEVEL_ORDER = {name: i for i, name in enumerate(LEVELS)}


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

    @property
    def relevant_shares(self) -> tuple[float, ...]:
        """Each bin's relevant pairs as a share of every held-out relevant pair (the unscored
        ones included): the histogram's heights, which the HTML picture, the CSV and the
        Markdown show."""
        total = max(self.relevant_pairs, 1)
        return tuple(c / total for c in self.relevant)

    @property
    def random_shares(self) -> tuple[float, ...]:
        """Each bin's random pairs as a share of every held-out random pair."""
        total = max(self.random_pairs, 1)
        return tuple(c / total for c in self.random)


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


@dataclass(frozen=True)
class ScoreBin:
    """One bin of a model's held-out score histograms (:class:`ScoreDistribution`): its score
    range, the relevant and random pairs scoring in it (counts, and shares of every held-out
    pair of the kind, the HTML picture's heights), and the cut-off levels that fall in it."""

    index: int
    low: float
    high: float
    relevant: int
    random: int
    relevant_share: float
    random_share: float
    #: ``(level, threshold)`` of each cut-off whose threshold lies in this bin
    levels: tuple[tuple[str, float], ...] = ()


#: how far past the histogram's range (its edges are rounded to 6 decimals) a cut-off still
#: counts as in the first or the last bin
_EDGE_SLACK = 1e-6


def _bin_of(edges: Sequence[float], threshold: float) -> int | None:
    """The bin ``threshold`` falls in (``edges[i] <= t < edges[i + 1]``; the last bin holds
    its upper edge); None outside the range."""
    if not edges[0] - _EDGE_SLACK <= threshold <= edges[-1] + _EDGE_SLACK:
        return None
    return min(max(bisect_right(edges, threshold) - 1, 0), len(edges) - 2)


def score_bins(model: CutoffModel) -> list[ScoreBin]:
    """The bins of ``model``'s held-out score histograms with their shares and the cut-offs in
    them (none when the summary has no distribution for it)."""
    dist = model.distribution
    if dist is None:
        return []
    levels: dict[int, list[tuple[str, float]]] = {}
    for row in model.rows:
        if row.threshold is None:
            continue
        at = _bin_of(dist.edges, row.threshold)
        if at is not None:
            levels.setdefault(at, []).append((row.level, row.threshold))
    relevant, random = dist.relevant_shares, dist.random_shares
    return [
        ScoreBin(
            index=i,
            low=dist.edges[i],
            high=dist.edges[i + 1],
            relevant=dist.relevant[i],
            random=dist.random[i],
            relevant_share=relevant[i],
            random_share=random[i],
            levels=tuple(levels.get(i, ())),
        )
        for i in range(len(dist.relevant))
    ]

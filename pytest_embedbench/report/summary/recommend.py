"""Which model to pick: accuracy-first, speed-first, balanced and cost-first.

Each model gets three component scores, min-max normalised across the successful models of one
dataset: accuracy (nDCG@10, by tier: see below), speed (p95 query latency, inverted: fastest =
1) and cost (estimated cost, inverted: cheapest = 1; free local models score 1, unknown prices
0.5). A priority weighs them (accuracy, speed, cost):

==========  ========  =====  ====
priority    accuracy  speed  cost
==========  ========  =====  ====
accuracy    0.80      0.15   0.05
speed       0.20      0.75   0.05
balanced    0.55      0.30   0.15
cost        0.30      0.10   0.60
==========  ========  =====  ====

Latency ties: p95 is noisy (another process on the machine can move it tenfold), so models
whose p95 intervals overlap count as equally fast. Each model's interval is the distribution-free
order-statistic 95% interval of its p95 over its per-query latencies
(:func:`~pytest_embedbench.measure.quantile_interval`: no resampling, so the same latencies give
the same interval). Models are taken from fastest to slowest p95; the fastest opens a speed tier,
each next model joins the open tier when its interval overlaps the interval of that tier's
fastest model, and otherwise opens a new tier. Every model of a tier gets the p95 of the tier's
fastest model for the speed score, so a pick never turns on which of two statistically
indistinguishable models happened to be faster in this run. A model without per-query latencies
has the single point p95 as its interval.

Accuracy ties: two models whose nDCG@10 differ by less than the queries can tell apart are
equally accurate. Models are taken from the highest nDCG@10 down; the best opens an accuracy
tier, and each next model joins the open tier when the paired comparison of its per-query
nDCG@10 with that tier's best model on their shared queries is not significant (the seeded
paired bootstrap of :func:`~pytest_embedbench.stats.compare_scores`, two-sided p >= 0.05, the
test the comparison table uses), otherwise it opens a new tier. Every model of a tier gets the
nDCG@10 of the tier's best for the accuracy score, as speed tiers do for p95. A model without
per-query scores forms a tier of its own.

When another model's score equals the pick's (a tie in every tier and in cost), the pick names it
in ``tied_with``: the reports say the choice between them is not decided by these figures.
Ties break on nDCG@10, then (accuracy-first only) Recall@100, MRR@10 and lower tier p95, then the
model name. Scores are relative to the models in the run, not absolute quality.

:func:`recommend` gives one dataset's picks as the JSON report's entry (:func:`recommendations`
every dataset's); :func:`recommendation_of` reads such an entry into the typed
:class:`Recommendation` the summary keeps, and :func:`recommendation_entry` writes it back.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ...records.resultdata import GateDelta, LatencyData, ResultData, as_result
from ...records.serial import to_data
from .values import finite

__all__ = [
    "ACCURACY_ALPHA",
    "FREE_PROVIDERS",
    "WEIGHTS",
    "ModelRow",
    "Pick",
    "Recommendation",
    "Scores",
    "accuracy_tiers",
    "as_row",
    "p95_interval",
    "recommend",
    "recommendation_entry",
    "recommendation_of",
    "recommendations",
    "speed_tiers",
]

WEIGHTS: dict[str, tuple[float, float, float]] = {
    "accuracy": (0.80, 0.15, 0.05),
    "speed": (0.20, 0.75, 0.05),
    "balanced": (0.55, 0.30, 0.15),
    "cost": (0.30, 0.10, 0.60),
}
#: a paired difference of nDCG@10 with p below this separates two accuracy tiers
ACCURACY_ALPHA = 0.05
#: providers that run locally and cost nothing per token
FREE_PROVIDERS = frozenset({"hf", "bm25", "hybrid", "ollama"})


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


@dataclass
class ModelRow:
    """One model on one dataset as folded from its records (the input of the comparisons and
    the recommendation; the reports read the summary's ``ModelSummary``): the fullest result,
    the gate's nDCG@10 Δ when gated, the worst status, the first error, the number of tests."""

    dataset: str
    model: str
    spec: str
    result: ResultData | None = None
    baseline: GateDelta | None = None
    status: str = "passed"
    error: str | None = None
    tests: int = 0


def as_row(row: ModelRow | Mapping[str, Any]) -> ModelRow:
    """``row`` as a :class:`ModelRow` (a mapping of its fields is read, its ``result`` with
    :meth:`ResultData.from_dict <pytest_embedbench.resultdata.ResultData.from_dict>`)."""
    if isinstance(row, ModelRow):
        return row
    return ModelRow(
        dataset=str(row.get("dataset") or ""),
        model=str(row.get("model") or ""),
        spec=str(row.get("spec") or ""),
        result=as_result(row.get("result")),
        status=str(row.get("status") or "passed"),
        error=row.get("error"),
        tests=int(row.get("tests") or 0),
    )


def _normalise(values: Sequence[float | None], *, invert: bool) -> list[float | None]:
    known = [v for v in values if v is not None and math.isfinite(v)]
    if not known:
        return [None] * len(values)
    low, high = min(known), max(known)
    out: list[float | None] = []
    for v in values:
        if v is None or not math.isfinite(v):
            out.append(None)
        elif high == low:
            out.append(1.0)
        else:
            x = (v - low) / (high - low)
            out.append(1.0 - x if invert else x)
    return out


def p95_interval(latency: LatencyData) -> tuple[float, float] | None:
    """The p95 interval of one result's ``latency`` block (None when p95 is unknown): the
    stored ``p95_interval_ms``, else computed from ``per_query_ms``, else the point p95."""
    from ...evaluation.measure import quantile_interval

    p95 = latency.p95_ms
    if p95 is None or not math.isfinite(p95):
        return None
    stored = latency.interval("p95_ms")
    if stored is not None:
        return stored
    per_query = latency.per_query_ms
    if per_query:
        values = per_query.values() if isinstance(per_query, Mapping) else per_query
        return quantile_interval(list(values), 95)
    return float(p95), float(p95)


def speed_tiers(rows: Sequence[ModelRow | Mapping[str, Any]]) -> list[list[str]]:
    """Models grouped by overlapping p95 intervals, fastest tier first (see the module doc);
    models without a p95 are left out."""
    timed = []
    for row in map(as_row, rows):
        latency = row.result.latency if row.result is not None else LatencyData()
        interval = p95_interval(latency)
        if interval is not None and latency.p95_ms is not None:
            timed.append((float(latency.p95_ms), row.model, interval))
    timed.sort(key=lambda t: (t[0], t[1]))
    tiers: list[list[str]] = []
    leader: tuple[float, float] | None = None
    for _, model, (low, high) in timed:
        if leader is not None and low <= leader[1] and high >= leader[0]:
            tiers[-1].append(model)
        else:
            tiers.append([model])
            leader = (low, high)
    return tiers


def accuracy_tiers(
    rows: Sequence[ModelRow | Mapping[str, Any]],
    *,
    seed: int = 0,
    n_resamples: int | None = None,
) -> list[list[str]]:
    """Models grouped by nDCG@10 that their queries cannot tell apart, best tier first (see the
    module doc); models without an nDCG@10 are left out."""
    from ...evaluation.stats import DEFAULT_RESAMPLES

    typed = [as_row(r) for r in rows]
    scored = [(v, r.model, r) for r in typed if (v := _value(r, "ndcg@10")) is not None]
    scored.sort(key=lambda t: (-t[0], t[1]))
    tiers: list[list[str]] = []
    leader: ModelRow | None = None
    for _, model, row in scored:
        if leader is not None and not _differs(leader, row, seed, n_resamples or DEFAULT_RESAMPLES):
            tiers[-1].append(model)
        else:
            tiers.append([model])
            leader = row
    return tiers


def _differs(a: ModelRow, b: ModelRow, seed: int, n_resamples: int) -> bool:
    """Whether ``a``'s and ``b``'s per-query nDCG@10 differ significantly on their shared
    queries (True when either lacks per-query scores: nothing says they are alike)."""
    from ...evaluation.stats import compare_scores

    mine = a.result.scores("ndcg@10") if a.result is not None else {}
    theirs = b.result.scores("ndcg@10") if b.result is not None else {}
    if not mine or not theirs:
        return True
    shared = sorted(set(mine) & set(theirs))
    if len(shared) < 2:
        return True
    x = [float(mine[q]) for q in shared]
    y = [float(theirs[q]) for q in shared]
    if x == y:
        return False
    strata = a.result.strata(shared) if a.result is not None else None
    comparison = compare_scores(x, y, seed=seed, n_resamples=n_resamples, strata=strata)
    return bool(comparison.p_value < ACCURACY_ALPHA)


def _value(row: ModelRow, metric: str) -> float | None:
    """The row's value of ``metric``; None when its run did not compute that cut-off."""
    entry = row.result.metrics.get(metric) if row.result is not None else None
    return None if entry is None or entry.value is None else float(entry.value)


def _cost(row: ModelRow) -> float | None:
    usd = row.result.cost.usd if row.result is not None else None
    if usd is not None:
        return float(usd)
    provider = row.spec.split(":", 1)[0].lower()
    return 0.0 if provider in FREE_PROVIDERS else None


def recommend(
    rows: Sequence[ModelRow | Mapping[str, Any]],
    *,
    seed: int = 0,
    n_resamples: int | None = None,
) -> dict[str, Any] | None:
    """Picks for every priority over one dataset's rows (None when no model succeeded);
    ``seed`` and ``n_resamples`` drive the paired bootstrap of the accuracy tiers. The picks
    are the JSON report's ``recommendations`` entry for the dataset."""
    ok = [r for r in map(as_row, rows) if r.result is not None and r.status != "error"]
    if not ok:
        return None
    # every model of an accuracy tier is as accurate as the tier's best (None for a run
    # without k=10: accuracy 0)
    levels = accuracy_tiers(ok, seed=seed, n_resamples=n_resamples)
    best = {r.model: _value(r, "ndcg@10") for r in ok}
    tier_ndcg = {model: best[tier[0]] for tier in levels for model in tier}
    ndcg = [tier_ndcg.get(r.model) for r in ok]
    tiers = speed_tiers(ok)
    point = {r.model: r.result.latency.p95_ms if r.result else None for r in ok}
    # every model of a tier is as fast as the tier's fastest model
    tier_p95 = {model: point[tier[0]] for tier in tiers for model in tier}
    p95 = [tier_p95.get(r.model) for r in ok]
    costs = [_cost(r) for r in ok]
    accuracy = _normalise(ndcg, invert=False)
    speed = _normalise(p95, invert=True)
    cost = [0.5 if c is None else c for c in _normalise(costs, invert=True)]
    components = {
        r.model: {
            "accuracy": a if a is not None else 0.0,
            "speed": s if s is not None else 0.5,
            "cost": c,
        }
        for r, a, s, c in zip(ok, accuracy, speed, cost, strict=True)
    }
    picks: dict[str, Any] = {}
    for priority, (wa, ws, wc) in WEIGHTS.items():
        scored = []
        for r in ok:
            comp = components[r.model]
            score = wa * comp["accuracy"] + ws * comp["speed"] + wc * comp["cost"]
            ties: tuple[float, ...] = (round(score, 12), _value(r, "ndcg@10") or 0.0)
            if priority == "accuracy":
                ties += (  # a metric the run did not compute (its k lacks 100) counts 0
                    _value(r, "recall@100") or 0.0,
                    _value(r, "mrr@10") or 0.0,
                    -(tier_p95.get(r.model) or math.inf),
                )
            scored.append((ties, r.model, score))
        # best first: highest tie tuple, then the name in ascending order
        scored.sort(key=lambda x: (tuple(-t for t in x[0]), x[1]))
        _, model, score = scored[0]
        tied = [m for _, m, other in scored[1:] if abs(other - score) <= 1e-9]
        picks[priority] = {
            "model": model,
            "score": score,
            "tied_with": tied,
            "weights": {"accuracy": wa, "speed": ws, "cost": wc},
            "components": components[model],
        }
    return {
        "picks": picks,
        "components": components,
        "speed_tiers": tiers,
        "accuracy_tiers": levels,
    }


def recommendations(
    rows: Mapping[str, Sequence[ModelRow]], *, seed: int = 0, n_resamples: int | None = None
) -> dict[str, Any]:
    """Per dataset, the picks of :func:`recommend` (datasets where a model ran);
    ``seed`` and ``n_resamples`` drive its paired tests of accuracy ties."""
    out = {}
    for dataset, found in rows.items():
        rec = recommend(found, seed=seed, n_resamples=n_resamples)
        if rec is not None:
            out[dataset] = rec
    return out


def _scores(data: Mapping[str, Any] | None) -> Scores:
    data = data or {}
    return Scores(
        accuracy=finite(data.get("accuracy")) or 0.0,
        speed=finite(data.get("speed")) or 0.0,
        cost=finite(data.get("cost")) or 0.0,
    )


def recommendation_of(rec: Mapping[str, Any] | None) -> Recommendation | None:
    """The typed :class:`Recommendation` of :func:`recommend`'s picks (or a saved report's
    ``recommendations`` entry); None when there is none."""
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


def recommendation_entry(rec: Recommendation) -> dict[str, Any]:
    """A recommendation as the JSON report's ``recommendations`` keep it."""
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

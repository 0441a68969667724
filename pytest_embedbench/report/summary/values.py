"""The two shapes every figure of the summary takes: a :class:`Value` (with its interval and
best-in-column mark) and a :class:`Delta` (a paired difference with its significance and
verdict), and the one rule for each decision they carry.

Decided here and nowhere else: a difference is *significant* when its p-value (Holm-adjusted
when set) is below :data:`ALPHA` (:meth:`~pytest_embedbench.stats.Comparison.significant`), or,
for a bootstrap difference without a p-value, when its 95% interval excludes 0; its *verdict*
(:func:`verdict`) is ``regressed`` when a gate failed on it, else ``worse``/``better`` when it
is significant, else ``inconclusive`` when a gate could not tell, else empty. The best value of
a column (:func:`best_marks`) needs two models with a finite value to compare.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = [
    "ALPHA",
    "VERDICTS",
    "Delta",
    "Value",
    "best_marks",
    "finite",
    "interval_delta",
    "p_significant",
    "value_of",
    "verdict",
]

#: the level below which a p-value is significant (Comparison.significant's default)
ALPHA = 0.05
#: every verdict a Delta can carry, worst first ("" : nothing to say)
VERDICTS = ("regressed", "worse", "inconclusive", "better", "")


def finite(value: Any) -> float | None:
    """``value`` as a float, or None when it is missing, not a number, NaN or infinite."""
    if value is None or isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) else None


@dataclass(frozen=True)
class Value:
    """One figure as a report shows it: the value, its 95% interval when it has one, and
    whether it is the best of its column (see :func:`best_marks`)."""

    value: float | None
    low: float | None = None
    high: float | None = None
    best: bool = False


def value_of(entry: Mapping[str, Any] | None) -> Value | None:
    """A metric entry ``{"value", "low", "high"}`` of a result as a :class:`Value` (None when
    it is missing or has no value)."""
    if not isinstance(entry, Mapping) or finite(entry.get("value")) is None:
        return None
    return Value(finite(entry["value"]), finite(entry.get("low")), finite(entry.get("high")))


@dataclass(frozen=True)
class Delta:
    """A paired difference ``metric(model) - metric(against)`` with its 95% interval, the
    p-values of its test (when it had one), whether it is significant and what that means."""

    difference: float | None
    low: float | None
    high: float | None
    n: int | None = None
    significant: bool = False
    #: one of :data:`VERDICTS`, from :func:`verdict`
    verdict: str = ""
    p_value: float | None = None
    p_holm: float | None = None
    #: the statistical test ("randomization", "bootstrap")
    test: str = ""
    #: what the difference is taken against: "baseline", the reference model's name, "clean"
    against: str = ""
    metric: str = "ndcg@10"


def verdict(
    difference: float | None,
    significant: bool,
    *,
    regressed: bool = False,
    inconclusive: bool = False,
) -> str:
    """The one rule for the word a report prints after a difference (module doc)."""
    if regressed:
        return "regressed"
    if significant and difference is not None:
        return "worse" if difference < 0 else "better"
    if inconclusive:
        return "inconclusive"
    return ""


def p_significant(p_value: float | None, p_holm: float | None) -> bool:
    """Whether a comparison with these p-values is significant, by
    :meth:`Comparison.significant <pytest_embedbench.stats.Comparison.significant>` itself
    (for a comparison read back from a report that did not store the decision)."""
    from ...evaluation.stats import Comparison, Estimate

    comparison = Comparison(
        Estimate(0.0, low=0.0, high=0.0, n=0),
        math.nan if p_value is None else float(p_value),
        "",
        None,
    )
    comparison.p_holm = None if p_holm is None else float(p_holm)
    return comparison.significant(ALPHA)


def interval_delta(entry: Mapping[str, Any] | None, *, against: str, metric: str) -> Delta | None:
    """A bootstrap difference ``{"value", "low", "high", "n"}`` (no p-value): significant when
    its interval excludes 0."""
    if not isinstance(entry, Mapping) or finite(entry.get("value")) is None:
        return None
    value, low, high = finite(entry["value"]), finite(entry.get("low")), finite(entry.get("high"))
    significant = low is not None and high is not None and (high < 0 or low > 0)
    return Delta(
        difference=value,
        low=low,
        high=high,
        n=entry.get("n"),
        significant=significant,
        verdict=verdict(value, significant),
        test="bootstrap",
        against=against,
        metric=metric,
    )


def best_marks(values: Sequence[float | None], higher_is_better: bool | None) -> list[bool]:
    """Which of a column's ``values`` are its best: the highest (or lowest) finite value, ties
    all marked; none when the column has no direction or fewer than two values to compare."""
    pool = [v for v in values if v is not None and math.isfinite(v)]
    if higher_is_better is None or len(pool) < 2:
        return [False] * len(values)
    top = max(pool) if higher_is_better else min(pool)
    return [v is not None and v == top for v in values]

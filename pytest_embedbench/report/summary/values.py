"""The two shapes every figure of the summary takes: a :class:`Value` (with its interval and
best-in-column mark) and a :class:`Delta` (a paired difference with its significance and
verdict), and the one rule for each decision they carry.

Decided here and nowhere else: a difference is *significant* when its p-value (Holm-adjusted
when set) is below :data:`ALPHA` (:meth:`~pytest_embedbench.stats.Comparison.significant`), or,
for a bootstrap difference without a p-value, when its 95% interval excludes 0
(:func:`~pytest_embedbench.evaluation.stats.excludes_zero`, re-exported here); its *verdict*
(:func:`verdict`, which :func:`decided` applies to every Delta it builds) is ``regressed``
when a gate failed on it, else ``worse``/``better`` when it
is significant, else ``inconclusive`` when a gate could not tell, else empty. The best value of
a column (:func:`best_marks`) needs two models with a finite value to compare.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ...evaluation.stats import excludes_zero
from ...records.resultdata import MetricData

__all__ = [
    "ALPHA",
    "VERDICTS",
    "Delta",
    "Value",
    "best_marks",
    "bootstrap_delta",
    "decided",
    "excludes_zero",
    "finite",
    "interval_delta",
    "metric_value",
    "metric_values",
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


def metric_value(entry: MetricData | None) -> Value | None:
    """A result's metric record as a :class:`Value` (None when it is missing or has no
    value)."""
    if entry is None or finite(entry.value) is None:
        return None
    return Value(finite(entry.value), finite(entry.low), finite(entry.high))


def metric_values(metrics: Mapping[str, MetricData], names: Iterable[str]) -> dict[str, Value]:
    r"""The metrics ``names`` (in their order) that have a value, as :class:`Value`\ s."""
    found = {name: metric_value(metrics.get(name)) for name in names}
    return {name: value for name, value in found.items() if value is not None}


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


def decided(
    difference: Any,
    low: Any,
    high: Any,
    *,
    significant: bool,
    regressed: bool = False,
    inconclusive: bool = False,
    **fields: Any,
) -> Delta:
    """A :class:`Delta` whose significance was decided (``significant``; a gate's
    ``regressed`` and ``inconclusive`` too): its figures read with :func:`finite`, its verdict
    by :func:`verdict`, the other ``fields`` (``n``, ``p_value``, ``test``, ``against`` ...) as
    given. Every Delta of the summary is made here."""
    difference = finite(difference)
    return Delta(
        difference,
        finite(low),
        finite(high),
        significant=significant,
        verdict=verdict(difference, significant, regressed=regressed, inconclusive=inconclusive),
        **fields,
    )


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


def bootstrap_delta(
    difference: Any,
    low: Any,
    high: Any,
    *,
    n: int | None = None,
    against: str,
    metric: str,
    significant: bool | None = None,
    regressed: bool = False,
    inconclusive: bool = False,
) -> Delta | None:
    """A paired bootstrap difference (it has no p-value) as a :class:`Delta`, its figures read
    with :func:`finite`: significant when its interval excludes 0 (:func:`excludes_zero`),
    unless the gate decided it (``significant``, with its ``regressed`` and ``inconclusive``);
    None without a value."""
    difference, low, high = finite(difference), finite(low), finite(high)
    if difference is None:
        return None
    if significant is None:
        significant = excludes_zero(low, high)
    return decided(
        difference,
        low,
        high,
        significant=bool(significant),
        regressed=regressed,
        inconclusive=inconclusive,
        n=n,
        test="bootstrap",
        against=against,
        metric=metric,
    )


def interval_delta(entry: Mapping[str, Any] | None, *, against: str, metric: str) -> Delta | None:
    """A bootstrap difference ``{"value", "low", "high", "n"}`` of a saved report as a
    :class:`Delta` (:func:`bootstrap_delta`)."""
    if not isinstance(entry, Mapping):
        return None
    low, high = entry.get("low"), entry.get("high")
    return bootstrap_delta(
        entry.get("value"), low, high, n=entry.get("n"), against=against, metric=metric
    )


def best_marks(values: Sequence[float | None], higher_is_better: bool | None) -> list[bool]:
    """Which of a column's ``values`` are its best: the highest (or lowest) finite value, ties
    all marked; none when the column has no direction or fewer than two values to compare."""
    pool = [v for v in values if v is not None and math.isfinite(v)]
    if higher_is_better is None or len(pool) < 2:
        return [False] * len(values)
    top = max(pool) if higher_is_better else min(pool)
    return [v is not None and v == top for v in values]

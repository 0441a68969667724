"""The baseline gate's outcomes as the summary keeps them: per gated test a :class:`Gate` with
its status, failures, warnings and each compared figure (:class:`GateMetric`, its difference a
:class:`~.values.Delta` where the gate had an interval)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ...evaluation.record import TestRecord
from .comparisons import baseline_delta
from .values import Delta, finite

__all__ = ["Gate", "GateMetric", "gates"]


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


def gates(records: Sequence[TestRecord]) -> tuple[Gate, ...]:
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
                delta=baseline_delta(d, metric),
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

"""Latency percentiles, throughput and peak memory.

Usage::

    with RSSSampler() as rss:
        ...
    rss.peak_mb
    LatencyStats.from_seconds(per_query_seconds).p95_ms
"""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = ["LatencyStats", "RSSSampler", "Timings"]


@dataclass(frozen=True)
class LatencyStats:
    """Per-query latency (query embedding + search) in milliseconds, with percentiles.

    ``qps`` is queries per second of sequential work: ``n / sum(latency)``, a reciprocal mean
    latency, not a load test.
    """

    per_query_ms: np.ndarray = field(repr=False)
    n: int
    mean_ms: float
    p50_ms: float
    p90_ms: float
    p95_ms: float
    p99_ms: float
    max_ms: float
    qps: float

    @classmethod
    def from_seconds(cls, seconds: Any) -> LatencyStats:
        ms = np.asarray(seconds, dtype=np.float64) * 1000.0
        if len(ms) == 0:
            nan = math.nan
            return cls(ms, 0, nan, nan, nan, nan, nan, nan, nan)
        p50, p90, p95, p99 = np.percentile(ms, [50, 90, 95, 99])
        total_s = ms.sum() / 1000.0
        return cls(
            per_query_ms=ms,
            n=len(ms),
            mean_ms=float(ms.mean()),
            p50_ms=float(p50),
            p90_ms=float(p90),
            p95_ms=float(p95),
            p99_ms=float(p99),
            max_ms=float(ms.max()),
            qps=float(len(ms) / total_s) if total_s > 0 else math.inf,
        )

    def to_dict(self) -> dict[str, float]:
        return {
            "n": self.n,
            "mean_ms": self.mean_ms,
            "p50_ms": self.p50_ms,
            "p90_ms": self.p90_ms,
            "p95_ms": self.p95_ms,
            "p99_ms": self.p99_ms,
            "max_ms": self.max_ms,
            "qps": self.qps,
        }


@dataclass
class Timings:
    """Wall-clock seconds of each stage of one evaluation."""

    model_load_s: float = 0.0
    document_embedding_s: float = 0.0
    index_build_s: float = 0.0
    query_embedding_s: float = 0.0
    search_s: float = 0.0
    #: time inside the model's own encode calls (documents and queries)
    encode_s: float = 0.0
    total_s: float = 0.0

    def to_dict(self) -> dict[str, float]:
        return dict(vars(self))


class RSSSampler:
    """Samples this process's resident set size every ``interval`` seconds in a thread."""

    def __init__(self, interval: float = 0.05) -> None:
        self.interval = interval
        self.peak_bytes = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def _sample(self) -> None:
        import psutil

        proc = psutil.Process()
        while True:
            self.peak_bytes = max(self.peak_bytes, proc.memory_info().rss)
            if self._stop.wait(self.interval):
                break

    def __enter__(self) -> RSSSampler:
        import psutil

        self.peak_bytes = psutil.Process().memory_info().rss
        self._thread = threading.Thread(target=self._sample, name="embedbench-rss", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        import psutil

        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        self.peak_bytes = max(self.peak_bytes, psutil.Process().memory_info().rss)

    @property
    def peak_mb(self) -> float:
        return self.peak_bytes / (1024 * 1024)

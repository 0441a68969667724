"""Latency percentiles, throughput, memory, the embedding cache's hits, and the conditions they
were measured under.

Usage::

    with RSSSampler() as rss, LoadMonitor() as load:
        ...
    rss.peak_mb, rss.added_mb            # process peak; growth over the RSS at the start
    load.busy, load.to_dict()            # other processes' CPU use while timing
    stats = LatencyStats.from_seconds(seconds)   # (n,) or (passes, n): median over passes
    stats.p95_ms, stats.interval(95)     # p95 and its order-statistic 95% interval
    thread_settings()                    # torch threads, OMP/MKL/OPENBLAS, CPUs, affinity
    share_cores(workers)                 # an xdist worker's share of the CPUs for its pools
"""

from __future__ import annotations

import math
import os
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = [
    "CacheStats",
    "DEFAULT_LATENCY_PASSES",
    "DEFAULT_LATENCY_SAMPLE",
    "MAX_TIMED_SEARCHES",
    "POOL_ENV_VARS",
    "THREAD_ENV_VARS",
    "LatencyStats",
    "LoadMonitor",
    "RSSSampler",
    "Timings",
    "latency_passes",
    "latency_sample",
    "load_average",
    "machine_info",
    "quantile_interval",
    "share_cores",
    "thread_settings",
]

#: timed passes over the sampled queries; a query's latency is its median over the passes
DEFAULT_LATENCY_PASSES = 3
#: queries timed (a seeded sample, in query order); 0 times every query. 50 x 3 passes is 150
#: single-query searches (about 2 s for MiniLM on a CPU), bounded whatever the query set's size.
#: The rankings that are scored come from one batched pass over every query, not from these.
#: A p95 interval needs at least 72 timed queries for a justified upper bound; below that its
#: upper bound is the observed maximum (:func:`quantile_interval`)
DEFAULT_LATENCY_SAMPLE = 50
#: at most this many timed searches in all (passes x sampled queries): large samples get fewer
#: passes (at least one)
MAX_TIMED_SEARCHES = 10_000
#: environment variables that set the thread pools of torch, NumPy's BLAS and FAISS
THREAD_ENV_VARS = (
    "OMP_NUM_THREADS",
    "MKL_NUM_THREADS",
    "OPENBLAS_NUM_THREADS",
    "VECLIB_MAXIMUM_THREADS",
    "NUMEXPR_NUM_THREADS",
)
#: the ones :func:`share_cores` sets for an xdist worker: torch's and FAISS's OpenMP, MKL, OpenBLAS
POOL_ENV_VARS = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")


def latency_passes(requested: int, n_queries: int) -> int:
    """The passes actually timed: ``requested``, capped so that passes x queries stays within
    :data:`MAX_TIMED_SEARCHES` (never fewer than one)."""
    if n_queries <= 0:
        return max(1, requested)
    return max(1, min(requested, MAX_TIMED_SEARCHES // n_queries))


def latency_sample(requested: int, n_queries: int, seed: int) -> np.ndarray:
    """The indices of the queries to time, in query order: ``min(requested, n_queries)`` of
    them drawn without replacement by ``np.random.default_rng(seed)`` (the same inputs give the
    same sample); every query when ``requested`` is 0 or not smaller than ``n_queries``."""
    if requested <= 0 or requested >= n_queries:
        return np.arange(max(0, n_queries))
    rng = np.random.default_rng(seed)
    return np.sort(rng.choice(n_queries, size=requested, replace=False))


def quantile_interval(values: Any, percentile: float, level: float = 0.95) -> tuple[float, float]:
    """Distribution-free confidence interval of the ``percentile``-th percentile of ``values``.

    The order-statistic interval ``[x_(l), x_(u)]``: with ``B ~ Binomial(n, p)``, ``l`` is the
    smallest rank with ``P(B <= l) >= (1 - level) / 2`` and ``u - 1`` the smallest with
    ``P(B <= u - 1) >= (1 + level) / 2``, so ``P(l <= B < u) >= level`` (Conover, *Practical
    Nonparametric Statistics*, 3.2). Deterministic: no resampling, no seed. Where the sample is
    too small to bound the percentile, the bound is the observed minimum or maximum: p95 needs at
    least 72 values for a justified upper bound (it is the maximum up to about 110 values), so
    with the default sample of 50 timed queries the p95 interval's upper bound is the observed
    maximum.
    """
    from scipy.stats import binom

    xs = np.sort(np.asarray(values, dtype=np.float64))
    n = len(xs)
    if n == 0:
        return (math.nan, math.nan)
    p = percentile / 100.0
    alpha = 1.0 - level
    lower = int(binom.ppf(alpha / 2, n, p))
    upper = int(binom.ppf(1 - alpha / 2, n, p)) + 1
    return float(xs[min(max(lower, 1), n) - 1]), float(xs[min(max(upper, 1), n) - 1])


#: the figures of :class:`LatencyStats` the report keeps, in its order
_REPORTED = (
    "n",
    "queries",
    "passes",
    "mean_ms",
    "p50_ms",
    "p90_ms",
    "p95_ms",
    "p99_ms",
    "max_ms",
    "qps",
)


@dataclass(frozen=True)
class LatencyStats:
    """Per-query latency (query embedding + search) in milliseconds, with percentiles.

    ``per_query_ms`` holds one latency per timed query, in query order: the median over
    ``passes`` timed passes, so one slow pass (another process took the CPU) does not move it.
    ``query_ids`` names those queries (aligned with ``per_query_ms``): by default a seeded
    sample of :data:`DEFAULT_LATENCY_SAMPLE` of the run's ``queries`` queries, so ``n`` (timed)
    can be smaller than ``queries`` (in the run). ``qps`` is queries per second of sequential
    work: ``n / sum(latency)``, a reciprocal mean latency, not a load test.
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
    passes: int = 1
    #: the ids of the timed queries, aligned with ``per_query_ms`` (empty when not known)
    query_ids: tuple[str, ...] = ()
    #: queries in the run (timed or not)
    queries: int = 0

    @classmethod
    def from_seconds(
        cls,
        seconds: Any,
        query_ids: Sequence[str] | None = None,
        *,
        queries: int | None = None,
    ) -> LatencyStats:
        """From one latency per timed query, or a ``(passes, timed queries)`` array of timed
        passes; ``query_ids`` names the timed queries, ``queries`` counts the run's queries
        (default: the timed ones)."""
        timed = np.asarray(seconds, dtype=np.float64) * 1000.0
        passes = 1
        if timed.ndim == 2:
            passes = timed.shape[0]
            timed = np.median(timed, axis=0) if timed.size else np.empty(0)
        ms = timed
        ids = tuple(query_ids) if query_ids is not None else ()
        if ids and len(ids) != len(ms):
            raise ValueError(f"{len(ids)} query ids for {len(ms)} timed queries")
        in_run = len(ms) if queries is None else int(queries)
        if len(ms) == 0 or passes == 0:  # no query, or no timed pass (latency_passes=0)
            nan = math.nan
            return cls(np.empty(0), 0, nan, nan, nan, nan, nan, nan, nan, passes, (), in_run)
        p50, p90, p95, p99 = np.percentile(ms, [50, 90, 95, 99])
        total_s = ms.sum() / 1000.0
        return cls(
            passes=passes,
            query_ids=ids,
            queries=in_run,
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

    def interval(self, percentile: float = 95, level: float = 0.95) -> tuple[float, float]:
        """The order-statistic interval of a latency percentile (:func:`quantile_interval`)."""
        return quantile_interval(self.per_query_ms, percentile, level)

    def by_query(self, query_ids: Sequence[str] = ()) -> dict[str, float]:
        """Each timed query's latency by id (``query_ids`` names them when the stats do not:
        every query of the run, in order); empty when nothing was timed."""
        ids = self.query_ids or tuple(query_ids)
        values = self.per_query_ms.tolist()
        if not values:
            return {}
        return dict(zip(ids, values, strict=True))

    def to_dict(self) -> dict[str, Any]:
        """The report's latency block: :data:`_REPORTED` in that order, then the intervals of
        the median and the 95th percentile."""
        out: dict[str, Any] = {name: getattr(self, name) for name in _REPORTED}
        out["p50_interval_ms"] = list(self.interval(50))
        out["p95_interval_ms"] = list(self.interval(95))
        return out


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


@dataclass
class CacheStats:
    """Hits and misses of one evaluation's embedding-cache lookups (its documents, or its scored
    queries)."""

    hits: int = 0
    misses: int = 0

    @property
    def hit_rate(self) -> float:
        total = self.hits + self.misses
        return self.hits / total if total else 0.0

    def to_dict(self) -> dict[str, float]:
        """``hits``, ``misses`` and ``hit_rate``, as a result's JSON record keeps them."""
        return {"hits": self.hits, "misses": self.misses, "hit_rate": self.hit_rate}


class RSSSampler:
    """Samples this process's resident set size every ``interval`` seconds in a thread.

    ``peak_mb`` is the process's peak while the block ran (it includes whatever earlier work
    left resident); ``added_mb`` is that peak minus the RSS at the start, what the block itself
    added. Memory freed earlier and reused by the block is not counted as added.
    """

    def __init__(self, interval: float = 0.05) -> None:
        self.interval = interval
        self.start_bytes = 0
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

        self.start_bytes = self.peak_bytes = psutil.Process().memory_info().rss
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

    @property
    def start_mb(self) -> float:
        return self.start_bytes / (1024 * 1024)

    @property
    def added_mb(self) -> float:
        return max(0, self.peak_bytes - self.start_bytes) / (1024 * 1024)


def load_average() -> list[float] | None:
    """The 1, 5 and 15-minute load averages (None where the system has none)."""
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except (AttributeError, OSError):  # not on Windows
        return None


def _usable_cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def share_cores(workers: int) -> int | None:
    """Cap this process's thread pools at its share of the usable CPUs, one of ``workers``
    processes (pytest-xdist workers) that run at the same time; the share, or None when any of
    :data:`THREAD_ENV_VARS` is set (the user chose) and nothing was changed.

    Each of N processes otherwise starts one torch/OpenMP thread per CPU, N x CPUs threads in
    all, and OpenMP threads that wait by spinning make the run far slower than one process: on
    a 2-core machine ``pytest examples -n 2`` took 73.8 s where one process took 28.5 s, and
    30.7 s with this cap (medians of 3, ``benchmarks/bench_xdist.py``). The environment
    variables (:data:`POOL_ENV_VARS`) cover the pools started later (torch, FAISS, OpenBLAS and
    MKL read them when they load); torch and FAISS already imported are capped directly, never
    raised.
    """
    if any(os.environ.get(name) for name in THREAD_ENV_VARS):
        return None
    share = max(1, _usable_cpus() // max(1, workers))
    for name in POOL_ENV_VARS:
        os.environ[name] = str(share)
    torch = sys.modules.get("torch")
    if torch is not None and torch.get_num_threads() > share:
        torch.set_num_threads(share)
    faiss = sys.modules.get("faiss")
    if faiss is not None and faiss.omp_get_max_threads() > share:
        faiss.omp_set_num_threads(share)
    return share


def thread_settings() -> dict[str, Any]:
    """What decides how many threads a query uses: CPUs, affinity, torch and the BLAS pools.

    torch's thread count is read only when torch is already imported (a bm25-only run never
    imports it).
    """
    torch = sys.modules.get("torch")
    torch_threads = None
    if torch is not None:
        try:
            torch_threads = int(torch.get_num_threads())
        except Exception:  # noqa: BLE001 - a partially imported or stubbed torch
            torch_threads = None
    try:
        affinity: int | None = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        affinity = None
    return {
        "cpu_count": os.cpu_count(),
        "affinity": affinity,
        "torch_threads": torch_threads,
        "env": {name: os.environ.get(name) for name in THREAD_ENV_VARS},
    }


def machine_info() -> dict[str, Any]:
    """Where the run happened (used to judge whether timings are comparable).

    ``threads`` holds the CPUs this process may use and the thread-pool environment variables
    (OMP/MKL/OPENBLAS...): a run with ``OMP_NUM_THREADS=1`` times differently. What changes
    while a run goes on (load, torch's thread count once torch is imported) is added by
    :func:`build_report`, outside the machine fingerprint.
    """
    import platform

    import psutil

    threads = thread_settings()
    return {
        "node": platform.node(),
        "system": platform.system(),
        "release": platform.release(),
        "machine": platform.machine(),
        "processor": platform.processor(),
        "python_implementation": platform.python_implementation(),
        "python_version": platform.python_version(),
        "cpu_count": os.cpu_count(),
        "memory_gb": round(psutil.virtual_memory().total / 1024**3, 1),
        "threads": {"affinity": threads["affinity"], "env": threads["env"]},
    }


def _busy_seconds(times: Any) -> float:
    # guest time is already inside user time on Linux; idle and iowait are not work
    fields = ("user", "nice", "system", "irq", "softirq", "steal")
    return float(sum(getattr(times, f, 0.0) for f in fields))


class LoadMonitor:
    """How much CPU other processes used while a block ran, and the load average around it.

    ``others_cpus`` is the system's busy CPU time minus this process's, over the wall time:
    the number of CPUs other processes kept busy (including pytest-xdist's other workers).
    The machine counts as ``busy`` when they kept at least ``max(0.5, 0.25 x CPUs)`` busy;
    for blocks too short to measure (under ``min_wall_s``), when the 1-minute load average
    exceeds the usable CPUs by more than this process's own one.
    """

    def __init__(self, *, min_wall_s: float = 0.25) -> None:
        self.min_wall_s = min_wall_s
        self.loadavg_before: list[float] | None = None
        self.loadavg_after: list[float] | None = None
        self.wall_s = 0.0
        self.others_cpus: float | None = None
        self.own_cpus: float | None = None
        self.cpus = 1

    def __enter__(self) -> LoadMonitor:
        import psutil

        self.cpus = psutil.cpu_count() or 1
        self.loadavg_before = load_average()
        self._proc = psutil.Process()
        self._system0 = psutil.cpu_times()
        self._own0 = self._proc.cpu_times()
        self._t0 = time.perf_counter()
        return self

    def __exit__(self, *exc: object) -> None:
        import psutil

        self.wall_s = time.perf_counter() - self._t0
        system = _busy_seconds(psutil.cpu_times()) - _busy_seconds(self._system0)
        own_times = self._proc.cpu_times()
        own = (own_times.user - self._own0.user) + (own_times.system - self._own0.system)
        self.loadavg_after = load_average()
        if self.wall_s >= self.min_wall_s:
            self.own_cpus = round(max(0.0, own) / self.wall_s, 3)
            self.others_cpus = round(max(0.0, system - own) / self.wall_s, 3)

    @property
    def busy(self) -> bool:
        if self.others_cpus is not None:
            return self.others_cpus >= max(0.5, 0.25 * self.cpus)
        load = self.loadavg_before or self.loadavg_after
        return load is not None and load[0] > _usable_cpus() + 1

    def to_dict(self) -> dict[str, Any]:
        return {
            "cpus": self.cpus,
            "wall_s": round(self.wall_s, 4),
            "others_cpus": self.others_cpus,
            "own_cpus": self.own_cpus,
            "loadavg_before": self.loadavg_before,
            "loadavg_after": self.loadavg_after,
            "busy": self.busy,
        }

"""What an index did on a run, against exact search on the same query vectors: neighbour recall
(the ann-benchmarks "recall of the top k against the exact top k"), the index's own query
latency (p50, p95, QPS as one over the mean single-query time), its build time and size.

:func:`measure_index` reads a dense retriever that searched through an index
(:class:`~pytest_embedbench.retrieval.dense.DenseRetriever` given ``index=``)::

    retriever = exact_retriever.with_index(IndexSpec.parse("faiss:hnsw(M=32)", "here"))
    retriever.search_many(texts, 10)
    run = measure_index(retriever, query_ids, (1, 10))
    run.neighbours[10].mean(), run.qps, run.build_s, run.nbytes
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from .registry import VectorIndex
from .spec import IndexSpec

__all__ = [
    "LOAD_REQUESTS",
    "LOAD_SECONDS",
    "IndexRun",
    "LoadLevel",
    "Measured",
    "Searcher",
    "measure_calls",
    "measure_index",
    "measure_load",
    "neighbour_recall",
]

#: requests sent at each concurrency level (every query vector at least once)
LOAD_REQUESTS = 1000
#: the wall-clock bound of one level: it stops sending after this many seconds
LOAD_SECONDS = 10.0


class Searcher(Protocol):
    """An index searched for positions and scores (the exact index, or any engine)."""

    def search(self, queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]: ...


class Measured(Protocol):
    """What :func:`measure_index` reads of a retriever searched through an index; a
    :class:`~pytest_embedbench.retrieval.dense.DenseRetriever` is one (declared here: the
    dense retriever stands on the engines, not under them)."""

    @property
    def ids(self) -> tuple[str, ...]: ...

    @property
    def spec(self) -> IndexSpec: ...

    @property
    def index(self) -> VectorIndex: ...

    @property
    def exact(self) -> Searcher: ...

    @property
    def build_s(self) -> float: ...

    @property
    def query_vectors(self) -> np.ndarray | None: ...

    @property
    def positions(self) -> np.ndarray | None: ...


def neighbour_recall(found: np.ndarray, exact: np.ndarray, k: int) -> np.ndarray:
    """Per query, the share of the exact top ``k`` that ``found``'s top ``k`` holds (the
    ann-benchmarks measure; rows of positions, -1 padded; a row with no exact neighbour is
    1.0)."""
    out = np.empty(len(found), dtype=np.float64)
    for i, (row, truth) in enumerate(zip(found, exact, strict=True)):
        want = {int(p) for p in truth[:k] if p >= 0}
        got = {int(p) for p in row[:k] if p >= 0}
        out[i] = len(want & got) / len(want) if want else 1.0
    return out


@dataclass(frozen=True)
class LoadLevel:
    """The index's queries at one concurrency level: ``concurrency`` threads sending single
    query vectors back to back, ``requests`` answered in ``seconds`` of wall-clock time
    (``qps`` = requests / seconds) and the latency of each request, waiting for a thread
    included (p50, p95, p99, in milliseconds)."""

    concurrency: int
    requests: int
    seconds: float
    qps: float
    p50_ms: float
    p95_ms: float
    p99_ms: float


def measure_load(
    index: Searcher,
    vectors: np.ndarray,
    depth: int,
    levels: Sequence[int],
    *,
    seed: int = 0,
    requests: int = LOAD_REQUESTS,
    seconds: float = LOAD_SECONDS,
) -> tuple[LoadLevel, ...]:
    """Each level in ``levels``: that many threads search ``index`` one query vector at a time
    (at the depth ``depth``), taking the next request from one shared queue until ``requests``
    were sent (every vector at least once) or ``seconds`` passed. The request order is a
    seeded shuffle of the vectors, repeated, the same at every level. Threads, not processes:
    FAISS and NumPy release the GIL while they search, so the levels measure the engine under
    concurrent requests in one process (as a server with a thread pool takes them)."""
    if not len(vectors) or not levels:
        return ()
    rows = np.ascontiguousarray(vectors, dtype=np.float32)
    index.search(rows[:1], depth)  # warm-up

    def send(i: int) -> None:
        index.search(rows[i][None, :], depth)

    return measure_calls(send, len(rows), levels, seed=seed, requests=requests, seconds=seconds)


def measure_calls(
    send: Callable[[int], object],
    items: int,
    levels: Sequence[int],
    *,
    seed: int = 0,
    requests: int = LOAD_REQUESTS,
    seconds: float = LOAD_SECONDS,
) -> tuple[LoadLevel, ...]:
    """:func:`measure_load`'s levels for any request: ``send(i)`` sends item ``i`` of
    ``items`` (a query vector to an index, a query text to a provider's server) and returns
    when it is answered; the order is a seeded shuffle of the items, repeated to ``requests``
    (every item at least once), the same at every level; an error of ``send`` stops the
    measure with its own message."""
    if not items or not levels:
        return ()
    rng = np.random.default_rng(seed)
    total = max(requests, items)
    passes = -(-total // items)
    order = np.concatenate([rng.permutation(items) for _ in range(passes)])[:total]
    return tuple(_level(send, order, level, seconds) for level in levels)


def _level(
    send: Callable[[int], object], order: np.ndarray, level: int, seconds: float
) -> LoadLevel:
    latency = np.full(len(order), np.nan)
    lock = threading.Lock()
    state = {"next": 0}
    start = threading.Barrier(level + 1)
    deadline = [math.inf]

    def worker() -> None:
        start.wait()
        while True:
            with lock:
                i = state["next"]
                state["next"] = i + 1
            if i >= len(order) or time.perf_counter() > deadline[0]:
                return
            t0 = time.perf_counter()
            send(int(order[i]))
            latency[i] = (time.perf_counter() - t0) * 1000.0

    with ThreadPoolExecutor(max_workers=level, thread_name_prefix="embedbench-load") as pool:
        futures = [pool.submit(worker) for _ in range(level)]
        t0 = time.perf_counter()
        deadline[0] = t0 + seconds
        start.wait()
        for future in futures:
            future.result()  # an engine's error stops the measure with its own message
        wall = time.perf_counter() - t0
    done = latency[~np.isnan(latency)]
    p50, p95, p99 = np.percentile(done, [50, 95, 99]).tolist() if len(done) else [math.nan] * 3
    return LoadLevel(
        concurrency=level,
        requests=len(done),
        seconds=wall,
        qps=len(done) / wall if wall > 0 else math.nan,
        p50_ms=p50,
        p95_ms=p95,
        p99_ms=p99,
    )


@dataclass
class IndexRun:
    """What one index did on one run: its spec and engine, build time, size, the index's own
    query latency, and per query its neighbour recall at each cut-off; ``exact`` holds the
    exact rankings of the same query vectors, ``(ids, scores)`` per query."""

    spec: IndexSpec
    description: str
    note: str
    deterministic: bool
    build_s: float
    nbytes: int | None
    #: the index's own search time of each query vector, alone, in milliseconds
    latency_ms: np.ndarray
    #: cut-off -> per-query neighbour recall, in the searched queries' order
    neighbours: dict[int, np.ndarray]
    query_ids: tuple[str, ...]
    #: the documents (or chunks) the index holds
    documents: int = 0
    #: the queries under concurrent load, one level each (``--embedbench-concurrency``)
    load: tuple[LoadLevel, ...] = ()
    exact_rankings: list[list[str]] = field(default_factory=list, repr=False)
    exact_scores: list[list[float]] = field(default_factory=list, repr=False)

    @property
    def p50_ms(self) -> float:
        return float(np.percentile(self.latency_ms, 50)) if len(self.latency_ms) else math.nan

    @property
    def p95_ms(self) -> float:
        return float(np.percentile(self.latency_ms, 95)) if len(self.latency_ms) else math.nan

    @property
    def bytes_per_document(self) -> float | None:
        """The index's bytes over the documents (or chunks) it holds: a store's cost per
        vector at its width and precision (``exact+binary`` 1/32 of ``exact``'s)."""
        if self.nbytes is None or not self.documents:
            return None
        return self.nbytes / self.documents

    @property
    def qps(self) -> float:
        """Queries per second, one at a time: one over the mean single-query time."""
        total = float(np.sum(self.latency_ms))
        return len(self.latency_ms) / (total / 1000.0) if total > 0 else math.nan

    def __str__(self) -> str:
        """The spec, as the test id and the report's tables show it:
        ``faiss:ivf(nlist=64,nprobe=1)``; the figures are the fields."""
        return self.spec.spec

    def __repr__(self) -> str:
        # the dataclass's own repr printed every array (latencies, neighbour recall per query)
        return (
            f"IndexRun({self.spec.spec!r}, description={self.description!r}, "
            f"build_s={self.build_s:.3f}, nbytes={self.nbytes}, queries={len(self.query_ids)}, "
            f"p50_ms={self.p50_ms:.3f}, k={sorted(self.neighbours)})"
        )


def measure_index(
    retriever: Measured,
    query_ids: Sequence[str],
    ks: Sequence[int],
    *,
    vectors: np.ndarray | None = None,
    concurrency: Sequence[int] = (),
    seed: int = 0,
) -> IndexRun:
    """The figures of ``retriever``'s last ``search_many`` (or of the query ``vectors`` given,
    searched here through the index at the depth ``max(ks)``): the exact top ``max(ks)`` of the
    same query vectors, neighbour recall at each cut-off, and each query vector searched alone
    through the index (one untimed warm-up first); with ``concurrency`` levels, the queries
    under that many threads too (:func:`measure_load`, its request order seeded by ``seed``)."""
    depth = max(ks)
    index = retriever.index
    found = retriever.positions
    if vectors is not None:
        found = index.search(vectors, depth)[0] if len(vectors) else None
    else:
        vectors = retriever.query_vectors
    if vectors is None or found is None:
        vectors = np.empty((0, 0), dtype=np.float32)
        found = exact = np.empty((0, depth), dtype=np.int64)
        exact_s = np.empty((0, depth))
    else:
        exact, exact_s = retriever.exact.search(vectors, depth)
    latency = np.empty(len(vectors))
    if len(vectors):
        index.search(vectors[:1], depth)  # warm-up
    for i in range(len(vectors)):
        t0 = time.perf_counter()
        index.search(vectors[i : i + 1], depth)
        latency[i] = (time.perf_counter() - t0) * 1000.0
    ids = retriever.ids
    rankings, scores = [], []
    for row, row_s in zip(exact, exact_s, strict=True):
        keep = row >= 0
        rankings.append([ids[p] for p in row[keep]])
        scores.append(row_s[keep].astype(float).tolist())
    return IndexRun(
        spec=retriever.spec,
        description=index.description,
        note=index.note,
        deterministic=index.deterministic,
        build_s=retriever.build_s,
        nbytes=index.nbytes,
        latency_ms=latency,
        neighbours={k: neighbour_recall(found, exact, k) for k in ks},
        query_ids=tuple(query_ids),
        documents=len(ids),
        load=measure_load(index, vectors, depth, concurrency, seed=seed),
        exact_rankings=rankings,
        exact_scores=scores,
    )

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
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from .registry import VectorIndex
from .spec import IndexSpec

__all__ = ["IndexRun", "Searcher", "Measured", "measure_index", "neighbour_recall"]


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
) -> IndexRun:
    """The figures of ``retriever``'s last ``search_many`` (or of the query ``vectors`` given,
    searched here through the index at the depth ``max(ks)``): the exact top ``max(ks)`` of the
    same query vectors, neighbour recall at each cut-off, and each query vector searched alone
    through the index (one untimed warm-up first)."""
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
        exact_rankings=rankings,
        exact_scores=scores,
    )

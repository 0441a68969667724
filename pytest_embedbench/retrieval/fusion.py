"""Rank fusion: reciprocal rank fusion (weighted) and the retriever that fuses its legs.

RRF gives a document ``sum_i w_i / (k + rank_i)`` over the rankings it appears in (rank from 1,
k = 60 by default; Cormack, Clarke and Büttcher 2009). Fused ties follow the project's tie rule
(score descending, then document id descending).

Usage::

    fused = reciprocal_rank_fusion([dense_ids, bm25_ids], k=60, weights=(1.0, 1.0))
    retriever = HybridRetriever([dense, bm25], rrf_k=60, weights=[1.0, 1.0], depth=None)
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from ..core.exceptions import ConfigError
from .base import Retriever

__all__ = ["HybridRetriever", "reciprocal_rank_fusion"]


def reciprocal_rank_fusion(
    rankings: Sequence[Sequence[str]],
    *,
    k: float = 60.0,
    weights: Sequence[float] | None = None,
) -> tuple[list[str], list[float]]:
    """Fuse ranked id lists: ``score(d) = sum_i w_i / (k + rank_i(d))``, best first.

    Ties are broken by document id descending, as every ranking in this project.
    """
    if weights is None:
        weights = [1.0] * len(rankings)
    if len(weights) != len(rankings):
        raise ConfigError(f"{len(weights)} fusion weights for {len(rankings)} rankings")
    if k < 0:
        raise ConfigError(f"rrf k={k!r} must be >= 0")
    fused: dict[str, float] = {}
    for ranking, weight in zip(rankings, weights, strict=True):
        for rank, doc_id in enumerate(ranking, start=1):
            fused[doc_id] = fused.get(doc_id, 0.0) + float(weight) / (k + rank)
    items = sorted(((score, doc_id) for doc_id, score in fused.items()), reverse=True)
    return [d for _, d in items], [s for s, _ in items]


class HybridRetriever(Retriever):
    """Reciprocal rank fusion of its legs' top ``depth`` (default ``max(100, k)``): each leg
    encodes a query once; the legs' query and search seconds count as this retriever's."""

    def __init__(
        self,
        legs: Sequence[Retriever],
        *,
        rrf_k: float,
        weights: Sequence[float],
        depth: int | None,
    ) -> None:
        self.legs = list(legs)
        self.ids = legs[0].ids
        self.rrf_k = rrf_k
        self.weights = list(weights)
        self.depth = depth

    def search(self, text: str, k: int) -> tuple[list[str], list[float]]:
        return self.search_encoded(self.encode(text), k)

    def encode(self, text: str) -> Any:
        before = self._leg_times()
        encoded = [leg.encode(text) for leg in self.legs]
        self._add_leg_times(before)
        return encoded

    def search_encoded(self, query: Any, k: int) -> tuple[list[str], list[float]]:
        depth = self.depth or max(100, k)
        before = self._leg_times()
        rankings = [
            leg.search_encoded(q, depth)[0] for leg, q in zip(self.legs, query, strict=True)
        ]
        t0 = time.perf_counter()
        ids, scores = reciprocal_rank_fusion(rankings, k=self.rrf_k, weights=self.weights)
        fusion_s = time.perf_counter() - t0
        self._add_leg_times(before)
        self.search_s += fusion_s
        return ids[:k], scores[:k]

    def _leg_times(self) -> list[tuple[float, float]]:
        return [(leg.query_embedding_s, leg.search_s) for leg in self.legs]

    def _add_leg_times(self, before: list[tuple[float, float]]) -> None:
        """What the legs spent since ``before``, added to this retriever's own figures."""
        for leg, (embed_s, search_s) in zip(self.legs, before, strict=True):
            self.query_embedding_s += leg.query_embedding_s - embed_s
            self.search_s += leg.search_s - search_s

    def index_bytes(self) -> int | None:
        sizes = [leg.index_bytes() for leg in self.legs]
        return None if any(s is None for s in sizes) else sum(s or 0 for s in sizes)

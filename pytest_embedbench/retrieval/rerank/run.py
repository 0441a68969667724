"""The second stage: :func:`rerank` scores each query's first-stage top ``depth`` with a
reranker, sorts them by the project's tie rule (score descending, then document id
descending), times each query, counts its tokens, and checks every answer.

What it returns, :class:`RerankRun`, is what the reports read of the stage: the reranked
lists (only the top ``depth``: the documents below it were never shown to the reranker), the
seconds each query's scoring and sorting took, the tokens sent and the price, from which the
cost per 1,000 queries follows.

Usage::

    run = rerank(reranker, spec, dataset.queries, stage1_rankings, documents_by_id)
    run.rankings[0][:3], run.p95_ms, run.cost_per_1k_queries
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ...core.exceptions import EmbedBenchError, RerankerError
from ...core.types import Document, Query
from .base import Reranker
from .spec import RerankerSpec

__all__ = ["RerankRun", "rerank", "sort_scored"]


def sort_scored(ids: Sequence[str], scores: Sequence[float]) -> tuple[list[str], list[float]]:
    """``ids`` by ``scores``: score descending, then document id descending (the tie rule)."""
    items = sorted(zip(scores, ids, strict=True), reverse=True)
    return [d for _, d in items], [float(s) for s, _ in items]


@dataclass
class RerankRun:
    """What one reranker did over one first stage (see the module doc)."""

    spec: RerankerSpec
    description: str
    rankings: list[list[str]]
    scores: list[list[float]]
    #: seconds each query's scoring and sorting took, in query order
    seconds: np.ndarray = field(default_factory=lambda: np.empty(0))
    #: the candidates each query had (fewer than the depth where the first stage found fewer)
    candidates: list[int] = field(default_factory=list)
    #: tokens sent over every query (None: the reranker does not count them)
    tokens: int | None = None
    load_s: float = 0.0
    price_per_1m_tokens: float | None = None
    free: bool = True
    #: what the reranker was billed by besides tokens (``"search units"``), over every query,
    #: and its price per 1,000 (a hosted reranker's; None: not counted or not priced)
    unit: str = ""
    units: float | None = None
    price_per_1k_units: float | None = None
    #: what the reranker says of itself (weights, prompt and its hash, requests, retries)
    info: dict[str, Any] = field(default_factory=dict)

    @property
    def depth(self) -> int:
        return self.spec.depth

    def _percentile(self, q: float) -> float:
        if not len(self.seconds):
            return math.nan
        return float(np.percentile(self.seconds, q)) * 1000.0

    @property
    def p50_ms(self) -> float:
        """The median milliseconds a query's reranking took."""
        return self._percentile(50)

    @property
    def p95_ms(self) -> float:
        return self._percentile(95)

    @property
    def mean_ms(self) -> float:
        return float(self.seconds.mean()) * 1000.0 if len(self.seconds) else math.nan

    @property
    def tokens_per_1k_queries(self) -> float | None:
        if self.tokens is None or not len(self.seconds):
            return None
        return self.tokens / len(self.seconds) * 1000.0

    @property
    def units_per_1k_queries(self) -> float | None:
        if self.units is None or not len(self.seconds):
            return None
        return self.units / len(self.seconds) * 1000.0

    @property
    def cost_per_1k_queries(self) -> float | None:
        """USD to rerank 1,000 queries like these at the list price (0 for a local model;
        None when the price or the tokens are not known): by the billed units where the
        vendor bills by them (Cohere's search units), else by the tokens."""
        if self.free and self.price_per_1m_tokens is None:
            return 0.0
        if self.price_per_1k_units is not None:
            per_1k_units = self.units_per_1k_queries
            return None if per_1k_units is None else per_1k_units * self.price_per_1k_units / 1000
        per_1k = self.tokens_per_1k_queries
        if per_1k is None or self.price_per_1m_tokens is None:
            return None
        return per_1k * float(self.price_per_1m_tokens) / 1_000_000


def rerank(
    reranker: Reranker,
    spec: RerankerSpec,
    queries: Sequence[Query],
    rankings: Sequence[Sequence[str]],
    documents: Mapping[str, Document],
) -> RerankRun:
    """Each query's top ``spec.depth`` of ``rankings`` (the first stage's, in query order)
    scored by ``reranker`` and sorted; a reranker that fails, answers with another number of
    scores than candidates, or with a score that is not a finite number, is a
    :class:`RerankerError` naming the spec, the query and the fix."""
    t0 = time.perf_counter()
    try:
        reranker.ensure_loaded()
    except EmbedBenchError:
        raise
    except Exception as exc:  # noqa: BLE001 - a third-party reranker's own error
        raise RerankerError(
            f"reranker {spec.text!r} could not be loaded: {type(exc).__name__}: {exc}"
        ) from None
    load_s = time.perf_counter() - t0
    reranker.begin_run()
    out_ids: list[list[str]] = []
    out_scores: list[list[float]] = []
    seconds = np.empty(len(queries))
    candidates: list[int] = []
    tokens: int | None = 0
    units: float | None = 0.0
    for i, (query, ranking) in enumerate(zip(queries, rankings, strict=True)):
        ids = list(ranking[: spec.depth])
        docs = [documents[d] for d in ids]
        t0 = time.perf_counter()
        raw = _scored(reranker, spec, query, docs)
        ranked, scores = sort_scored(ids, _checked(raw, spec, query, ids))
        seconds[i] = time.perf_counter() - t0
        out_ids.append(ranked)
        out_scores.append(scores)
        candidates.append(len(ids))
        if tokens is not None:
            counted = reranker.count_tokens(query.text, docs)
            tokens = None if counted is None else tokens + counted
        if units is not None:
            billed = reranker.count_units(query.text, docs)
            units = None if billed is None else units + billed
    return RerankRun(
        spec=spec,
        description=reranker.describe(),
        rankings=out_ids,
        scores=out_scores,
        seconds=seconds,
        candidates=candidates,
        tokens=tokens,
        load_s=load_s,
        price_per_1m_tokens=reranker.price_per_1m_tokens,
        free=reranker.is_free(),
        unit=reranker.unit,
        units=units if reranker.unit else None,
        price_per_1k_units=reranker.price_per_1k_units,
        info=dict(getattr(reranker, "info", None) or {}),
    )


def _scored(
    reranker: Reranker, spec: RerankerSpec, query: Query, docs: Sequence[Document]
) -> Sequence[float]:
    """The reranker's answer for one query; its own error becomes a RerankerError naming the
    spec and the query (an EmbedBenchError, already worded, passes as it is)."""
    try:
        return reranker.score(query.text, docs)
    except EmbedBenchError:
        raise
    except Exception as exc:  # noqa: BLE001 - a server error, a model's: this test fails
        raise RerankerError(
            f"reranker {spec.text!r} failed on query {query.id!r}: {type(exc).__name__}: "
            f"{exc}; check that its model or server answers (the first stage is unaffected: "
            "the test with reranker 'none' shows it)"
        ) from None


def _checked(
    raw: Sequence[float], spec: RerankerSpec, query: Query, ids: Sequence[str]
) -> list[float]:
    """``raw`` as floats, one per candidate and every one finite, else a RerankerError."""
    try:
        scores = [float(s) for s in raw]
    except (TypeError, ValueError) as exc:
        raise RerankerError(
            f"reranker {spec.text!r} returned scores that are not numbers for query "
            f"{query.id!r} ({exc}); score() returns one float per candidate"
        ) from None
    if len(scores) != len(ids):
        raise RerankerError(
            f"reranker {spec.text!r} returned {len(scores)} scores for the {len(ids)} "
            f"candidates of query {query.id!r}; score() returns one score per candidate, in "
            "their order (check its batching, and that it drops no document it cannot read)"
        )
    bad = next((i for i, s in enumerate(scores) if not math.isfinite(s)), None)
    if bad is not None:
        raise RerankerError(
            f"reranker {spec.text!r} returned score {scores[bad]!r} for document "
            f"{ids[bad]!r} of query {query.id!r}; every score must be a finite number (a NaN "
            "often comes from an empty text or an overflow in half precision: run the model "
            "in float32, or give the document text)"
        )
    return scores

"""Fusion of rankings: reciprocal rank fusion, a convex combination of normalised scores, and
the retriever that fuses its legs.

* RRF gives a document ``sum_i w_i / (k + rank_i)`` over the rankings it appears in (rank from 1,
  k = 60 by default; Cormack, Clarke and Büttcher 2009). It reads only ranks.
* The convex combination (Bruch, Gai and Ingber 2023, "An analysis of fusion functions for
  hybrid retrieval") gives ``sum_i w_i * norm_i(score_i)``: each leg's scores over its own top
  ``depth`` normalised by ``minmax`` (``(s - min) / (max - min)``, a constant list all 1) or
  ``zscore`` (``(s - mean) / std``, a constant list all 0). A document a leg did not return
  takes that leg's floor: 0 for ``minmax`` (its worst returned document's value), the lowest z
  of the list for ``zscore``. With weights ``(a, 1 - a)`` it is the paper's
  ``a * norm(dense) + (1 - a) * norm(lexical)``; ``a`` can be tuned on held-out queries
  (``evaluation/tuning.py``).

Fused ties follow the project's tie rule (score descending, then document id descending).

Usage::

    fused = reciprocal_rank_fusion([dense_ids, bm25_ids], k=60, weights=(1.0, 1.0))
    fused = convex_fusion([(dense_ids, dense_scores), (bm25_ids, bm25_scores)],
                          weights=(0.7, 0.3), norm="minmax")
    retriever = HybridRetriever([dense, bm25], rrf_k=60, weights=[1.0, 1.0], depth=None)
    retriever = HybridRetriever([dense, bm25], rrf_k=60, weights=[0.7, 0.3], depth=None,
                                fusion="convex", norm="zscore")
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from ..core.exceptions import ConfigError
from .base import Retriever

__all__ = [
    "FUSIONS",
    "NORMS",
    "HybridRetriever",
    "TuneSettings",
    "convex_fusion",
    "fuse",
    "normalise_scores",
    "reciprocal_rank_fusion",
]

#: the fusion functions ``hybrid:`` knows
FUSIONS = ("rrf", "convex")
#: the score normalisations of the convex combination
NORMS = ("minmax", "zscore")

#: one leg's answer to a query: its ranked ids and their scores
LegAnswer = tuple[Sequence[str], Sequence[float]]


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


def normalise_scores(scores: Sequence[float], norm: str) -> tuple[np.ndarray, float]:
    """One leg's scores normalised by ``norm`` and the floor a document it did not return
    takes (see the module doc). A non-finite score is an error: it cannot be normalised."""
    values = np.asarray(scores, dtype=np.float64)
    if values.size and not np.isfinite(values).all():
        bad = float(values[~np.isfinite(values)][0])
        raise ValueError(
            f"a fusion leg returned the score {bad!r}: the convex combination needs finite "
            "scores (use fusion: rrf, which reads only ranks)"
        )
    if norm == "minmax":
        if values.size == 0:
            return values, 0.0
        low, high = float(values.min()), float(values.max())
        if high == low:
            return np.ones_like(values), 0.0
        return (values - low) / (high - low), 0.0
    if norm == "zscore":
        if values.size == 0:
            return values, 0.0
        std = float(values.std())
        if std == 0.0:
            return np.zeros_like(values), 0.0
        z = (values - float(values.mean())) / std
        return z, float(z.min())
    raise ConfigError(f"fusion norm {norm!r}: use one of {', '.join(NORMS)}")


def convex_fusion(
    answers: Sequence[LegAnswer],
    *,
    weights: Sequence[float],
    norm: str = "minmax",
) -> tuple[list[str], list[float]]:
    """Fuse legs' ``(ids, scores)``: ``score(d) = sum_i w_i * norm_i(d)``, best first, a
    document missing from a leg taking that leg's floor (see the module doc)."""
    if len(weights) != len(answers):
        raise ConfigError(f"{len(weights)} fusion weights for {len(answers)} rankings")
    if norm not in NORMS:
        raise ConfigError(f"fusion norm {norm!r}: use one of {', '.join(NORMS)}")
    legs = []
    for ids, scores in answers:
        if len(ids) != len(scores):
            raise ValueError(f"a fusion leg returned {len(ids)} ids and {len(scores)} scores")
        values, floor = normalise_scores(scores, norm)
        legs.append((dict(zip(ids, values.tolist(), strict=True)), floor))
    union = dict.fromkeys(doc_id for ids, _ in answers for doc_id in ids)
    fused = {
        doc_id: math.fsum(
            float(w) * found.get(doc_id, floor)
            for (found, floor), w in zip(legs, weights, strict=True)
        )
        for doc_id in union
    }
    items = sorted(((score, doc_id) for doc_id, score in fused.items()), reverse=True)
    return [d for _, d in items], [s for s, _ in items]


def fuse(
    answers: Sequence[LegAnswer],
    *,
    fusion: str,
    weights: Sequence[float],
    rrf_k: float = 60.0,
    norm: str = "minmax",
) -> tuple[list[str], list[float]]:
    """The legs' answers fused by ``fusion`` (``rrf`` reads their ids only)."""
    if fusion == "rrf":
        return reciprocal_rank_fusion([ids for ids, _ in answers], k=rrf_k, weights=weights)
    if fusion == "convex":
        return convex_fusion(answers, weights=weights, norm=norm)
    raise ConfigError(f"fusion {fusion!r}: use one of {', '.join(FUSIONS)}")


class HybridRetriever(Retriever):
    """Fusion of its legs' top ``depth`` (default ``max(100, k)``): reciprocal rank fusion, or
    with ``fusion="convex"`` the weighted sum of their ``norm``-normalised scores. Each leg
    encodes a query once; the legs' query and search seconds count as this retriever's.

    ``tuning``: how the weights were tuned (set by ``evaluation/tuning.py``; None when they
    were given), which the report shows beside the figures scored on the held-out queries."""

    def __init__(
        self,
        legs: Sequence[Retriever],
        *,
        rrf_k: float,
        weights: Sequence[float],
        depth: int | None,
        fusion: str = "rrf",
        norm: str = "minmax",
        tune: TuneSettings | None = None,
    ) -> None:
        if fusion not in FUSIONS:
            raise ConfigError(f"fusion {fusion!r}: use one of {', '.join(FUSIONS)}")
        if norm not in NORMS:
            raise ConfigError(f"fusion norm {norm!r}: use one of {', '.join(NORMS)}")
        self.legs = list(legs)
        self.ids = legs[0].ids
        self.rrf_k = rrf_k
        self.weights = list(weights)
        self.depth = depth
        self.fusion = fusion
        self.norm = norm
        #: how to tune the weights before the scored run (None: the given weights)
        self.tune = tune
        self.tuning: Any = None

    def search(self, text: str, k: int) -> tuple[list[str], list[float]]:
        return self.search_encoded(self.encode(text), k)

    def encode(self, text: str) -> Any:
        before = self._leg_times()
        encoded = [leg.encode(text) for leg in self.legs]
        self._add_leg_times(before)
        return encoded

    def search_encoded(self, query: Any, k: int) -> tuple[list[str], list[float]]:
        before = self._leg_times()
        answers = self.leg_answers(query, k)
        t0 = time.perf_counter()
        ids, scores = self.fuse(answers, self.weights)
        fusion_s = time.perf_counter() - t0
        self._add_leg_times(before)
        self.search_s += fusion_s
        return ids[:k], scores[:k]

    def leg_answers(self, query: Any, k: int) -> list[LegAnswer]:
        """Each leg's top ``depth`` (ids and scores) for an encoded query: what is fused."""
        depth = self.depth or max(100, k)
        return [leg.search_encoded(q, depth) for leg, q in zip(self.legs, query, strict=True)]

    def fuse(
        self, answers: Sequence[LegAnswer], weights: Sequence[float]
    ) -> tuple[list[str], list[float]]:
        """``answers`` fused with this retriever's fusion and ``weights``."""
        return fuse(answers, fusion=self.fusion, weights=weights, rrf_k=self.rrf_k, norm=self.norm)

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


@dataclass(frozen=True)
class TuneSettings:
    """How ``hybrid:``'s weight is tuned (the option ``tune``): on the queries of a named
    ``split`` of the same dataset, or on a seeded ``share`` of the test queries (the figures
    are then scored on the other queries only). ``grid``: the weights of the first leg tried
    (the second leg takes ``1 - w``); ``metric``: what the grid search maximises."""

    split: str | None = None
    share: float | None = None
    seed: int | None = None
    metric: str = "ndcg@10"
    grid: tuple[float, ...] = tuple(round(i / 10, 1) for i in range(11))

    KEYS: ClassVar[tuple[str, ...]] = ("split", "share", "seed", "metric", "grid")

    @classmethod
    def parse(cls, value: Any) -> TuneSettings | None:
        """``tune`` as given in a ModelSpec or embedbench.yaml: None/False (no tuning), a
        split name (``"dev"``), a share (``0.2``) or a mapping of :attr:`KEYS`."""
        if value is None or value is False:
            return None
        if isinstance(value, str):
            value = {"split": value}
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            value = {"share": value}
        if not isinstance(value, Mapping):
            raise ConfigError(
                f"hybrid tune={value!r}: give a split name (tune: dev), a share of the test "
                "queries (tune: 0.2) or a mapping, e.g. tune: {share: 0.2, seed: 0, metric: "
                "ndcg@10}"
            )
        unknown = sorted(set(map(str, value)) - set(cls.KEYS))
        if unknown:
            raise ConfigError(
                f"hybrid tune: unknown key {unknown[0]!r}; known keys: {', '.join(cls.KEYS)}"
            )
        split, share = value.get("split"), value.get("share")
        if (split is None) == (share is None):
            raise ConfigError(
                "hybrid tune: give exactly one of split (the queries of another split, e.g. "
                "dev) or share (a seeded share of the test queries, e.g. 0.2)"
            )
        if split is not None and (not isinstance(split, str) or not split.strip()):
            raise ConfigError(f"hybrid tune split={split!r}: give a split name, e.g. dev")
        if share is not None:
            if isinstance(share, bool) or not isinstance(share, (int, float)):
                raise ConfigError(f"hybrid tune share={share!r}: give a number, e.g. 0.2")
            if not 0.0 < float(share) < 1.0:
                raise ConfigError(
                    f"hybrid tune share={share!r}: must be between 0 and 1 (exclusive), e.g. "
                    "0.2 tunes on a fifth of the queries and scores the other four fifths"
                )
        seed = value.get("seed")
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
            raise ConfigError(f"hybrid tune seed={seed!r}: give an integer")
        metric = value.get("metric", "ndcg@10")
        if not isinstance(metric, str):
            raise ConfigError(f"hybrid tune metric={metric!r}: give a metric name, e.g. ndcg@10")
        grid = cls._grid(value.get("grid"))
        return cls(
            split=split,
            share=None if share is None else float(share),
            seed=seed,
            metric=metric,
            grid=grid,
        )

    @classmethod
    def _grid(cls, value: Any) -> tuple[float, ...]:
        if value is None:
            return cls.grid
        if isinstance(value, int) and not isinstance(value, bool):
            if value < 2:
                raise ConfigError(
                    f"hybrid tune grid={value!r}: give at least 2 points (11: 0.0, 0.1 ... 1.0)"
                )
            return tuple(round(i / (value - 1), 6) for i in range(value))
        if isinstance(value, (list, tuple)) and value:
            points = []
            for w in value:
                if isinstance(w, bool) or not isinstance(w, (int, float)) or not 0 <= w <= 1:
                    raise ConfigError(
                        f"hybrid tune grid: {w!r} is not a weight between 0 and 1; give the "
                        "first leg's weights to try, e.g. [0.3, 0.5, 0.7]"
                    )
                points.append(float(w))
            return tuple(sorted(set(points)))
        raise ConfigError(
            f"hybrid tune grid={value!r}: give a number of points (11) or a list of weights"
        )

    def describe(self) -> str:
        """Where the weight was tuned, in words."""
        if self.split is not None:
            return f"the {self.split!r} split"
        return f"a seeded {self.share:g} share of the queries"

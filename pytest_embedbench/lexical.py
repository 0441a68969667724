"""BM25 through bm25s, and rank fusion (reciprocal rank fusion, weighted).

BM25 scores every document for a query (bm25s ``get_scores``) and ranks them with the project's
tie rule (score descending, then document id descending), so a tie never depends on bm25s's
internal order.

RRF gives a document ``sum_i w_i / (k + rank_i)`` over the rankings it appears in (rank from 1,
k = 60 by default; Cormack, Clarke and Büttcher 2009). Fused ties follow the same tie rule.

Usage::

    index = BM25Index(["the cat sat", "a dog ran"], ["d1", "d2"])
    ids, scores = index.search("cat", k=10)
    fused = reciprocal_rank_fusion([dense_ids, bm25_ids], k=60, weights=(1.0, 1.0))
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .exceptions import ConfigError, MissingExtraError
from .index import topk_desc

__all__ = ["BM25Index", "reciprocal_rank_fusion"]

#: bm25s's scoring variants
BM25_METHODS = ("lucene", "robertson", "atire", "bm25l", "bm25+")


def require_bm25s() -> Any:
    """The bm25s module, or a MissingExtraError that names the pip command."""
    try:
        import bm25s
    except ImportError:
        raise MissingExtraError(
            "provider 'bm25' needs the bm25s package: pip install 'pytest-embedbench[bm25]'"
        ) from None
    return bm25s


def make_stemmer(language: str | None) -> Any:
    """A PyStemmer stemmer for ``language`` (None: no stemming)."""
    if not language:
        return None
    try:
        import Stemmer
    except ImportError:
        raise MissingExtraError(
            f"bm25 stemmer={language!r} needs PyStemmer: pip install 'pytest-embedbench[bm25]' "
            "(or pass stemmer=None)"
        ) from None
    try:
        return Stemmer.Stemmer(language)
    except KeyError:
        raise ConfigError(
            f"bm25 stemmer {language!r} is not known to PyStemmer; known: "
            f"{sorted(Stemmer.algorithms())}"
        ) from None


class BM25Index:
    """A bm25s index over ``texts`` with exact, tie-ruled top-k search."""

    def __init__(
        self,
        texts: Sequence[str],
        ids: Sequence[str],
        *,
        k1: float = 1.5,
        b: float = 0.75,
        method: str = "lucene",
        stopwords: str | list[str] | None = "en",
        stemmer: str | None = "english",
    ) -> None:
        if len(texts) != len(ids):
            raise ConfigError(f"{len(texts)} texts for {len(ids)} ids")
        if method not in BM25_METHODS:
            raise ConfigError(f"bm25 method {method!r}: use one of {list(BM25_METHODS)}")
        if not (k1 >= 0 and 0 <= b <= 1):
            raise ConfigError(f"bm25 k1={k1!r} must be >= 0 and b={b!r} within [0, 1]")
        bm25s = require_bm25s()
        self.ids = tuple(ids)
        self._stemmer = make_stemmer(stemmer)
        self._stopwords = stopwords if stopwords is not None else []
        self._bm25s = bm25s
        tokens = bm25s.tokenize(
            list(texts),
            stopwords=self._stopwords,
            stemmer=self._stemmer,
            show_progress=False,
        )
        self._retriever = bm25s.BM25(k1=k1, b=b, method=method)
        self._retriever.index(tokens, show_progress=False)
        # rank ties by descending id: precompute each document's place in that order
        order = sorted(range(len(self.ids)), key=lambda i: self.ids[i], reverse=True)
        self._stored_to_given = np.asarray(order, dtype=np.int64)

    @property
    def nbytes(self) -> int:
        """Bytes of bm25s's score arrays (its sparse document-term matrix)."""
        scores = getattr(self._retriever, "scores", None) or {}
        return int(sum(getattr(v, "nbytes", 0) for v in scores.values()))

    def tokenize(self, text: str) -> list[str]:
        """The query's tokens as the index knows them (stopwords, stemming)."""
        out = self._bm25s.tokenize(
            [text],
            stopwords=self._stopwords,
            stemmer=self._stemmer,
            return_ids=False,
            show_progress=False,
        )
        return list(out[0])

    def scores(self, tokens: list[str]) -> np.ndarray:
        """BM25 score of every document (corpus order) for a tokenised query."""
        vocab = self._retriever.vocab_dict
        known = [t for t in tokens if t in vocab]
        if not known:
            return np.zeros(len(self.ids), dtype=np.float32)
        return np.asarray(self._retriever.get_scores(known), dtype=np.float32)

    def search_tokens(self, tokens: list[str], k: int) -> tuple[list[str], list[float]]:
        """Top-k ids and scores for a tokenised query, by the tie rule."""
        stored = self.scores(tokens)[self._stored_to_given]
        cols, vals = topk_desc(stored[None, :], k)
        positions = self._stored_to_given[cols[0]]
        return [self.ids[p] for p in positions], vals[0].astype(float).tolist()

    def search(self, text: str, k: int) -> tuple[list[str], list[float]]:
        """Top-k ids and scores for a query text."""
        return self.search_tokens(self.tokenize(text), k)


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

"""The bi-encoder rescorer: a first stage's candidates scored by an embedding model's vectors
(the "retrieve with BM25, rescore with embeddings" pipeline), any embedding provider's.

The score of a candidate is the inner product of its vector and the query's, as the provider's
own dense search scores it (its vectors are L2-normalised where the provider normalises), so
rescoring a model's candidates with the model itself gives back its own order. Vectors go
through the embedding cache (:func:`~..dense.embed_cached`), under the keys the first stage's
dense search uses: a document the model embedded once, in either stage, is not embedded again.

Usage (the provider is built a floor up, where the providers live)::

    rescorer = EmbeddingRescorer(provider, cache, spec="hf:sentence-transformers/all-MiniLM-L6-v2")
    rescorer.score("how do I reset my password", candidates)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ...core.types import Document
from ..dense import Embedder, embed_cached
from .base import Reranker

__all__ = ["EmbeddingRescorer"]


class EmbeddingRescorer(Reranker):
    """Candidates rescored by ``provider``'s vectors (``cache``: the embedding cache, or None)."""

    name = "embedding"

    def __init__(self, provider: Embedder, cache: Any, *, spec: str) -> None:
        family, _, model = spec.partition(":")
        super().__init__(model)
        self.provider = provider
        self.cache = cache
        self.spec = spec
        self.family = family
        price = getattr(provider, "price_per_1m_tokens", None)
        self.price_per_1m_tokens = price() if callable(price) else None

    def is_free(self) -> bool:
        free = getattr(self.provider, "is_free", None)
        return bool(free()) if callable(free) else True

    def load(self) -> None:
        self.provider.ensure_loaded()

    def score(self, query: str, documents: Sequence[Document]) -> Sequence[float]:
        if not documents:
            return []
        q, _ = embed_cached(self.provider, [query], self.cache, kind="query")
        d, _ = embed_cached(
            self.provider, [doc.embed_text for doc in documents], self.cache, kind="document"
        )
        scores = np.asarray(d, dtype=np.float64) @ np.asarray(q, dtype=np.float64)[0]
        return scores.tolist()

    def count_tokens(self, query: str, documents: Sequence[Document]) -> int | None:
        count = getattr(self.provider, "count_tokens", None)
        if count is None:
            return None
        texts = [self.provider.prepare(query, "query")]
        texts += [self.provider.prepare(d.embed_text, "document") for d in documents]
        found = count(texts)
        return None if found is None else int(found[0])

    def describe(self) -> str:
        return f"bi-encoder rescoring with {self.spec}"

"""The dense path of an embedding provider: embed a corpus (through the embedding cache when
there is one), build the exact index over it, and answer queries by embedding them.

:meth:`EmbeddingProvider.build <pytest_embedbench.providers.EmbeddingProvider.build>` calls
:func:`build_dense`; a provider with its own index would override ``build`` instead::

    retriever = build_dense(provider, documents, cache=cache, stats=stats)
    ids, scores = retriever.search("how do I reset my password", 10)
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ..exceptions import ProviderError
from .retriever import BuildStats, Retriever

if TYPE_CHECKING:
    from ..cache import EmbeddingCache
    from ..datasets import Document
    from .base import EmbeddingProvider

__all__ = ["DenseRetriever", "build_dense", "document_keys", "embed_cached"]

Progress = Callable[[int, int], None]


class DenseRetriever(Retriever):
    """An embedding provider's exact index: embeds each query, then searches."""

    def __init__(self, provider: EmbeddingProvider, index: Any) -> None:
        self.provider = provider
        self.index = index
        self.ids = index.ids

    def search(self, text: str, k: int) -> tuple[list[str], list[float]]:
        return self.search_encoded(self.encode(text), k)

    def encode(self, text: str) -> Any:
        t0 = time.perf_counter()
        vector = self.provider.embed([text], kind="query")
        self.query_embedding_s += time.perf_counter() - t0
        return vector

    def search_encoded(self, query: Any, k: int) -> tuple[list[str], list[float]]:
        t1 = time.perf_counter()
        positions, scores = self.index.search(query, k)
        self.search_s += time.perf_counter() - t1
        keep = positions[0] >= 0
        return [self.ids[p] for p in positions[0][keep]], scores[0][keep].astype(float).tolist()

    def search_many(
        self, texts: Sequence[str], k: int
    ) -> tuple[list[list[str]], list[list[float]]]:
        """All queries embedded in the provider's batches, then one index search for all."""
        if not texts:
            return [], []
        t0 = time.perf_counter()
        vectors = self.provider.embed(list(texts), kind="query")
        t1 = time.perf_counter()
        positions, scores = self.index.search(vectors, k)
        self.search_s += time.perf_counter() - t1
        self.query_embedding_s += t1 - t0
        rankings: list[list[str]] = []
        out: list[list[float]] = []
        for row, row_scores in zip(positions, scores, strict=True):
            keep = row >= 0
            rankings.append([self.ids[p] for p in row[keep]])
            out.append(row_scores[keep].astype(float).tolist())
        return rankings, out

    def index_bytes(self) -> int | None:
        return int(self.index.nbytes)


def build_dense(
    provider: EmbeddingProvider,
    documents: Sequence[Document],
    *,
    cache: EmbeddingCache | None = None,
    stats: BuildStats | None = None,
    progress: Progress | None = None,
) -> DenseRetriever:
    """Embed ``documents`` (cache first), index them exactly, and time both into ``stats``."""
    from ..index import ExactIndex

    stats = stats if stats is not None else BuildStats()
    provider.ensure_loaded()
    texts = [d.embed_text for d in documents]
    if progress is not None:
        progress(0, len(texts))
    t0 = time.perf_counter()
    if cache is None:
        vectors = provider.embed(texts, kind="document", progress=progress)
        stats.cache_misses += len(texts)
    else:
        vectors = embed_cached(provider, texts, cache, stats, progress)
    t1 = time.perf_counter()
    index = ExactIndex(
        vectors,
        [d.id for d in documents],
        backend=provider.options.get("index_backend", "auto"),
    )
    t2 = time.perf_counter()
    stats.document_embedding_s += t1 - t0
    stats.index_build_s += t2 - t1
    stats.documents += len(texts)
    provider.info["index_backend"] = index.backend
    return DenseRetriever(provider, index)


def document_keys(provider: EmbeddingProvider, texts: Sequence[str]) -> tuple[str, list[bytes]]:
    """The cache namespace of ``provider`` (loaded: its dimension and revision count) and the
    key of each document text as the model is sent it (its prefix, then the text).

    The one rule for document keys: :func:`embed_cached` and the Ray path
    (:mod:`pytest_embedbench.distributed`) both read and write through it."""
    from ..cache import text_key

    return provider.namespace_key(), [text_key(provider.prepare(t, "document")) for t in texts]


def embed_cached(
    provider: EmbeddingProvider,
    texts: list[str],
    cache: EmbeddingCache,
    stats: BuildStats,
    progress: Progress | None,
) -> np.ndarray:
    """Document vectors for ``texts``: stored ones from ``cache``, the rest embedded and
    stored one provider batch at a time (so a run killed at any point keeps what it paid for)."""
    namespace, keys = document_keys(provider, texts)
    # a stored row is checked like a response: finite, this dimension, the promised norm
    found, missing = cache.get_many(
        namespace, keys, dim=provider.dimension, unit_norm=provider.normalize
    )
    if found and provider.dimension is None:
        provider.dimension = len(next(iter(found.values())))
    stats.cache_hits += len(texts) - len(missing)
    stats.cache_misses += len(missing)
    if missing:

        def sub_progress(done: int, _total: int) -> None:
            if progress is not None:
                progress(len(texts) - len(missing) + done, len(texts))

        def store(positions: list[int], vecs: np.ndarray) -> None:
            # one transaction per provider batch: a run killed at any point keeps it
            cache.put_many(namespace, [keys[missing[p]] for p in positions], vecs)

        vecs = provider.embed(
            [texts[i] for i in missing], kind="document", progress=sub_progress, on_batch=store
        )
        for i, vec in zip(missing, vecs, strict=True):
            found[keys[i]] = vec
    out = _stack(found, keys, provider.dimension or 0, cache)
    if progress is not None and not missing:
        progress(len(texts), len(texts))
    return out


def _stack(
    found: dict[bytes, np.ndarray], keys: list[bytes], dim: int, cache: EmbeddingCache
) -> np.ndarray:
    """The vectors of ``keys`` in order, as one ``(n, dim)`` float32 matrix."""
    out = np.empty((len(keys), dim), dtype=np.float32)
    for i, key in enumerate(keys):
        vec = found[key]
        if len(vec) != dim:
            raise ProviderError(
                f"cached embedding for document {i} has dimension {len(vec)}, the model "
                f"gives {dim}; clear the cache folder {str(cache.folder)!r}"
            )
        out[i] = vec
    return out

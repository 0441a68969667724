"""The dense path of an embedding provider: embed a corpus (through the embedding cache when
there is one), build the exact index over it, and answer queries by embedding them, searching
the exact index or a vector index of the index axis built over the same vectors.

The scored pass over a dataset's queries (:meth:`DenseRetriever.search_many`) goes through the
cache too, in a namespace of its own, so a re-run embeds no query text it embedded before. A
single-query :meth:`DenseRetriever.search`, what the evaluator times for latency, never reads
the cache: latency always measures the provider.

:meth:`EmbeddingProvider.build <pytest_embedbench.providers.EmbeddingProvider.build>` calls
:func:`build_dense`; a provider with its own index would override ``build`` instead. What this
module needs of a provider is the :class:`Embedder` protocol (every ``EmbeddingProvider`` is
one), so it does not import the provider base that calls it::

    retriever = build_dense(provider, documents, cache=cache, stats=stats)
    ids, scores = retriever.search("how do I reset my password", 10)
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from .base import BuildStats, Kind, Retriever
from .indexes.exact import ExactVectorIndex
from .indexes.precision import open_index
from .indexes.registry import VectorIndex
from .indexes.spec import EXACT, IndexSpec

if TYPE_CHECKING:
    from ..cache.store import EmbeddingCache
    from ..core.types import Document

__all__ = [
    "QUERY_NAMESPACE_SUFFIX",
    "DenseRetriever",
    "Embedder",
    "build_dense",
    "cache_keys",
    "document_keys",
    "embed_cached",
]

Progress = Callable[[int, int], None]

#: appended to a model's namespace for its query vectors: a provider may embed one text
#: differently as a query and as a document (an input type, not only a prefix), so the two kinds
#: never share an entry
QUERY_NAMESPACE_SUFFIX = "/query"


class Embedder(Protocol):
    """What the dense path uses of an embedding provider: every
    :class:`~pytest_embedbench.providers.EmbeddingProvider` is one."""

    #: the provider's options (``index_backend`` is read here)
    options: dict[str, Any]
    #: what the provider reports about itself (``index_backend`` is written here)
    info: dict[str, Any]
    #: the vector dimension, None until known (a cached row can tell it before a load does)
    dimension: int | None
    #: whether vectors are L2-normalised (a cached row is checked for it)
    normalize: bool

    def ensure_loaded(self) -> None: ...

    def namespace_key(self) -> str: ...

    def prepare(self, text: str, kind: Kind) -> str: ...

    def embed(
        self,
        texts: Sequence[str],
        *,
        kind: Kind,
        progress: Progress | None = None,
        on_batch: Callable[[list[int], np.ndarray], None] | None = None,
    ) -> np.ndarray: ...


class DenseRetriever(Retriever):
    """An embedding provider's corpus vectors, searched exactly or through a vector index.

    ``exact`` is the exact index built over the corpus (an
    :class:`~pytest_embedbench.retrieval.exact.ExactIndex`, or a ``ShardedIndex`` under a
    memory budget). Given ``index`` (an index spec), the retriever builds that engine over the
    same vectors, in corpus order, and searches through it; without one it searches ``exact``.
    Either way ``self.index`` is the :class:`~.indexes.VectorIndex` searched. Through an index,
    the retriever keeps what :func:`~.indexes.measure_index` needs: the build time, the last
    :meth:`search_many`'s query vectors and positions, and each query vector :meth:`encode`
    gave (a chunked run searches query by query; its figures are measured on those vectors)::

        hnsw = retriever.with_index(IndexSpec.parse("faiss:hnsw(M=32)", "here"), seed=0)
        ids, scores = hnsw.search("how do I reset my password", 10)
    """

    def __init__(
        self,
        provider: Embedder,
        exact: Any,
        cache: EmbeddingCache | None = None,
        *,
        index: IndexSpec | None = None,
        seed: int = 0,
    ) -> None:
        self.provider = provider
        self.exact = exact
        self.ids = exact.ids
        #: where :meth:`search_many` finds and stores query vectors (None: always embeds)
        self.cache = cache
        #: the index searched through, and the seconds its build took (0: the exact index,
        #: timed with the corpus's embedding in :class:`~.base.BuildStats`)
        self.spec = index if index is not None else EXACT
        self.build_s = 0.0
        #: the last :meth:`search_many`'s query vectors and the index's positions for them,
        #: and query text -> vector as :meth:`encode` gave it; kept only through an index
        self.query_vectors: np.ndarray | None = None
        self.positions: np.ndarray | None = None
        self.encoded: dict[str, np.ndarray] | None = None
        self.index: VectorIndex
        if index is None:
            self.index = ExactVectorIndex.over(exact)
            return
        self.index = open_index(index, seed=seed)
        t0 = time.perf_counter()
        # a ShardedIndex's vectors are read back shard by shard into one matrix, which the
        # index holds anyway
        self.index.build(exact.vectors_in_order(), exact.ids)
        self.build_s = time.perf_counter() - t0
        self.encoded = {}

    def with_index(self, index: IndexSpec, *, seed: int = 0) -> DenseRetriever:
        """The same provider, corpus vectors and cache searched through ``index``, built now."""
        return DenseRetriever(self.provider, self.exact, self.cache, index=index, seed=seed)

    def search(self, text: str, k: int) -> tuple[list[str], list[float]]:
        return self.search_encoded(self.encode(text), k)

    def encode(self, text: str) -> Any:
        t0 = time.perf_counter()
        vector = self.provider.embed([text], kind="query")
        self.query_embedding_s += time.perf_counter() - t0
        if self.encoded is not None:
            self.encoded[text] = vector
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
        """All queries embedded in the provider's batches (those the cache holds read from it),
        then one index search for all."""
        if not texts:
            return [], []
        t0 = time.perf_counter()
        vectors, embedded = embed_cached(self.provider, list(texts), self.cache, kind="query")
        self.query_cache_hits += len(texts) - embedded
        self.query_cache_misses += embedded
        t1 = time.perf_counter()
        positions, scores = self.index.search(vectors, k)
        self.search_s += time.perf_counter() - t1
        self.query_embedding_s += t1 - t0
        if self.encoded is not None:
            self.query_vectors, self.positions = vectors, positions
        rankings: list[list[str]] = []
        out: list[list[float]] = []
        for row, row_scores in zip(positions, scores, strict=True):
            keep = row >= 0
            rankings.append([self.ids[p] for p in row[keep]])
            out.append(row_scores[keep].astype(float).tolist())
        return rankings, out

    def index_bytes(self) -> int | None:
        nbytes = self.index.nbytes
        return None if nbytes is None else int(nbytes)


def build_dense(
    provider: Embedder,
    documents: Sequence[Document],
    *,
    cache: EmbeddingCache | None = None,
    stats: BuildStats | None = None,
    progress: Progress | None = None,
    memory_budget: int | None = None,
) -> DenseRetriever:
    """Embed ``documents`` (cache first), index them exactly, and time both into ``stats``.

    With ``memory_budget`` (bytes), the vectors are never all in memory: see
    :func:`build_streamed`."""
    from .exact import ExactIndex, storage_order

    stats = stats if stats is not None else BuildStats()
    provider.ensure_loaded()
    if memory_budget is not None:
        return build_streamed(provider, documents, cache, stats, progress, memory_budget)
    texts = [d.embed_text for d in documents]
    ids = [d.id for d in documents]
    if progress is not None:
        progress(0, len(texts))
    t0 = time.perf_counter()
    # read straight into the index's order: one gather of the corpus, not two
    order = storage_order(ids)
    vectors, embedded = embed_cached(
        provider, texts, cache, kind="document", progress=progress, order=order
    )
    stats.cache_hits += len(texts) - embedded
    stats.cache_misses += embedded
    t1 = time.perf_counter()
    index = ExactIndex(
        vectors,
        ids,
        backend=provider.options.get("index_backend", "auto"),
        stored_order=order,
    )
    t2 = time.perf_counter()
    stats.document_embedding_s += t1 - t0
    stats.index_build_s += t2 - t1
    stats.documents += len(texts)
    provider.info["index_backend"] = index.backend
    return DenseRetriever(provider, index, cache)


def build_streamed(
    provider: Embedder,
    documents: Sequence[Document],
    cache: EmbeddingCache | None,
    stats: BuildStats,
    progress: Progress | None,
    memory_budget: int,
) -> DenseRetriever:
    """:func:`build_dense` under a memory budget: documents embedded (or found in the cache)
    one shard at a time, and a :class:`~pytest_embedbench.index.ShardedIndex` that reads them
    back a shard at a time for each search, from the cache (a vector the cache lost since is
    embedded again), or without a cache from a temporary spill file of raw float32 rows."""
    import tempfile
    import weakref

    from .exact import ShardedIndex, shard_rows

    n = len(documents)

    def texts_of(lo: int, hi: int) -> list[str]:
        # made per shard, not kept: a million texts would outweigh a small budget
        return [documents[i].embed_text for i in range(lo, hi)]

    t0 = time.perf_counter()
    spill = None if cache is not None else tempfile.TemporaryFile(prefix="embedbench-")
    # embedding shards sized for the widest common vectors until the model tells its own
    step = shard_rows(memory_budget, provider.dimension or 4096)
    embedded = 0
    dim = provider.dimension or 0
    for lo in range(0, n, step):
        hi = min(n, lo + step)
        vectors, missed = embed_cached(provider, texts_of(lo, hi), cache, kind="document")
        embedded += missed
        dim = int(vectors.shape[1])
        if spill is not None:
            spill.write(np.ascontiguousarray(vectors, dtype=np.float32).tobytes())
        if progress is not None:
            progress(hi, n)
        del vectors
    rows = shard_rows(memory_budget, dim)
    stats.cache_hits += n - embedded
    stats.cache_misses += embedded
    t1 = time.perf_counter()
    if spill is not None:

        def load(lo: int, hi: int) -> np.ndarray:
            spill.seek(lo * dim * 4)
            data = spill.read((hi - lo) * dim * 4)
            return np.frombuffer(data, dtype=np.float32).reshape(hi - lo, dim)

    else:

        def load(lo: int, hi: int) -> np.ndarray:
            texts = texts_of(lo, hi)
            namespace, keys = document_keys(provider, texts)
            matrix, missing = cache.get_matrix(  # type: ignore[union-attr]
                namespace, keys, dim=dim, unit_norm=provider.normalize
            )
            if missing:  # lost since (a full disk, another process cleared it): embed again
                again = provider.embed([texts[i] for i in missing], kind="document")
                matrix = np.array(matrix) if not matrix.flags.writeable else matrix
                matrix[missing] = again
            return matrix

    index = ShardedIndex(
        [d.id for d in documents],
        dim,
        load,
        rows=rows,
        backend=provider.options.get("index_backend", "auto"),
    )
    if spill is not None:
        weakref.finalize(index, spill.close)  # the temporary file goes with the index
    stats.document_embedding_s += t1 - t0
    stats.index_build_s += time.perf_counter() - t1
    stats.documents += n
    provider.info["index_backend"] = index.backend
    return DenseRetriever(provider, index, cache)


def cache_keys(provider: Embedder, texts: Sequence[str], kind: Kind) -> tuple[str, list[bytes]]:
    """The cache namespace of ``provider`` (loaded: its dimension and revision count) for
    ``kind``, and the key of each text as the model is sent it (its prefix, then the text).
    Query vectors live in the namespace suffixed :data:`QUERY_NAMESPACE_SUFFIX`."""
    from ..cache.store import text_key

    namespace = provider.namespace_key()
    if kind == "query":
        namespace += QUERY_NAMESPACE_SUFFIX
    return namespace, [text_key(provider.prepare(t, kind)) for t in texts]


def document_keys(provider: Embedder, texts: Sequence[str]) -> tuple[str, list[bytes]]:
    """:func:`cache_keys` of documents: the one rule for document keys, which
    :func:`embed_cached` and the Ray path (:mod:`pytest_embedbench.distributed`) both read and
    write through."""
    return cache_keys(provider, texts, "document")


def embed_cached(
    provider: Embedder,
    texts: list[str],
    cache: EmbeddingCache | None,
    *,
    kind: Kind,
    progress: Progress | None = None,
    order: np.ndarray | None = None,
) -> tuple[np.ndarray, int]:
    """Vectors of ``texts`` embedded as ``kind``: stored ones from ``cache``, the rest embedded
    and stored one provider batch at a time (so a run killed at any point keeps what it paid
    for); without a cache, every text embedded. Returns the vectors and how many texts were
    embedded (the cache's misses).

    ``order`` (a permutation of the texts' positions): row ``j`` of the result is the vector of
    ``texts[order[j]]``, gathered as the cache is read (the one copy a caller that wants
    another order, as :class:`~pytest_embedbench.index.ExactIndex` does, would make again).
    The model is still sent the texts in their own order, so its batches are the same."""
    if cache is None:
        vectors = provider.embed(texts, kind=kind, progress=progress)
        return (vectors if order is None else vectors[order]), len(texts)
    namespace, keys = cache_keys(provider, texts, kind)
    asked = keys if order is None else [keys[i] for i in order.tolist()]
    # one matrix in the asked order, straight from the cache (no vector-by-vector copy); a
    # stored row is checked like a response: finite, this dimension, the promised norm
    out, gaps = cache.get_matrix(
        namespace, asked, dim=provider.dimension, unit_norm=provider.normalize
    )
    if provider.dimension is None and len(gaps) < len(keys):
        provider.dimension = int(out.shape[1])  # learned from the cache, as from an answer
    # the texts to embed, in the texts' own order, and the result row of each
    missing = gaps if order is None else sorted(order[gaps].tolist())
    if order is not None and missing:
        row_of = np.empty(len(order), dtype=np.int64)
        row_of[order] = np.arange(len(order))
        rows: Sequence[int] | np.ndarray = row_of[missing]
    else:
        rows = missing
    if missing:

        def sub_progress(done: int, _total: int) -> None:
            if progress is not None:
                progress(len(texts) - len(missing) + done, len(texts))

        def store(positions: list[int], vecs: np.ndarray) -> None:
            # one transaction per provider batch: a run killed at any point keeps it
            cache.put_many(namespace, [keys[missing[p]] for p in positions], vecs)

        vecs = provider.embed(
            [texts[i] for i in missing], kind=kind, progress=sub_progress, on_batch=store
        )
        if out.shape[1] != vecs.shape[1]:  # nothing was cached: the model told the dimension
            out = np.empty((len(keys), vecs.shape[1]), dtype=np.float32)
        out[rows] = vecs
    if progress is not None and not missing:
        progress(len(texts), len(texts))
    return out, len(missing)

"""The one pipeline: a model and a dataset in, a :class:`RetrievalResult` out.

Usage::

    from pytest_embedbench import evaluate

    result = evaluate("hf:sentence-transformers/all-MiniLM-L6-v2", "../shared/data/scifact")
    result.ndcg10                  # Estimate: 0.645 [0.61, 0.68] n=300
    result.recall(100), result.latency.p95_ms, result.timings.document_embedding_s
    result.added_rss_mb            # what this model added to the process's memory

An :class:`Evaluator` keeps loaded models and the embedding cache between calls, so a notebook
or a pytest session loads each model once::

    ev = Evaluator(cache=True, seed=0)
    a = ev.evaluate("bm25", ds)
    b = ev.evaluate("hf:sentence-transformers/all-MiniLM-L6-v2", ds)
    a.compare(b, "ndcg@10")        # paired difference with its interval
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ..cache.store import EmbeddingCache
from ..core.exceptions import ConfigError
from ..core.types import Query
from ..data.datasets import RetrievalDataset, load_dataset
from ..models.providers import BuildStats, ModelSpec, Provider, Retriever, create_provider
from ..retrieval.pooling import (
    PooledRetriever,
    PooledRun,
    check_judged_chunks,
    chunk_pseudo_documents,
    dataset_chunks,
)
from .measure import (
    DEFAULT_LATENCY_PASSES,
    DEFAULT_LATENCY_SAMPLE,
    CacheStats,
    LatencyStats,
    LoadMonitor,
    RSSSampler,
    Timings,
    latency_passes,
    latency_sample,
    thread_settings,
)
from .metrics import DEFAULT_K, parse_cutoffs
from .result import RetrievalResult
from .stats import DEFAULT_RESAMPLES
from .tuning import fusion_info, hybrid_of, tune_fusion

if TYPE_CHECKING:
    from ..core.types import Chunk

__all__ = ["DEFAULT_K", "Evaluator", "RetrievalResult", "evaluate"]

#: progress(stage, done, total), stage is "documents" or "queries"
Progress = Callable[[str, int, int], None]


class Evaluator:
    """Evaluates models on datasets; loads each model once and shares the embedding cache.

    ``cache`` is True (the default folder), False, a folder, or an EmbeddingCache.
    ``progress(stage, done, total)`` is called while documents are embedded and queries run.

    The rankings that are scored come from one batched pass over every query
    (``retriever.search_many``, as a bare script would embed them; a chunked dataset's pooled
    retriever searches query by query for each document's winning chunk). Latency is timed
    after it, on its own: one untimed warm-up query, then ``latency_passes`` timed passes, one
    query at a time, over a sample of ``latency_sample`` queries (default
    :data:`~.measure.DEFAULT_LATENCY_SAMPLE`, 50) drawn with ``seed`` and kept in query order;
    each timed query's latency is its median over the passes, and passes x sample stays within
    :data:`~.measure.MAX_TIMED_SEARCHES` (see :func:`~.measure.latency_passes`).
    ``latency_sample=0`` times every query. ``latency_passes=0`` measures no latency
    (``result.latency`` has no figures, ``n == 0``): the run costs no more than its rankings.
    """

    def __init__(
        self,
        *,
        k: int | Iterable[int] = DEFAULT_K,
        cache: bool | str | Path | EmbeddingCache | None = True,
        seed: int = 0,
        n_resamples: int = DEFAULT_RESAMPLES,
        level: float = 0.95,
        progress: Progress | None = None,
        latency_passes: int = DEFAULT_LATENCY_PASSES,
        latency_sample: int = DEFAULT_LATENCY_SAMPLE,
        memory_budget: int | None = None,
    ) -> None:
        if memory_budget is not None and (not _is_count(memory_budget) or memory_budget < 1):
            raise ConfigError(
                f"memory_budget={memory_budget!r}: give the bytes the exact search may hold of "
                "the corpus vectors, an integer >= 1 (e.g. 2 * 1024**3), or None for no budget"
            )
        #: bytes of corpus vectors an embedding model's exact search may hold (None: all)
        self.memory_budget = memory_budget
        if not _is_count(latency_passes):
            raise ConfigError(
                f"latency_passes={latency_passes!r}: give an integer >= 1, or 0 to measure no "
                "latency and embed the queries in batches"
            )
        if not _is_count(latency_sample):
            raise ConfigError(
                f"latency_sample={latency_sample!r}: give the number of queries to time, an "
                f"integer >= 1 (default {DEFAULT_LATENCY_SAMPLE}), or 0 to time every query"
            )
        self.latency_passes = latency_passes
        self.latency_sample = latency_sample
        self.k = parse_cutoffs(k, "k")
        self.cache = EmbeddingCache.open(cache)
        self.seed = int(seed)
        self.n_resamples = int(n_resamples)
        self.level = level
        self.progress = progress
        self._providers: dict[ModelSpec, Provider] = {}
        self._load_s: dict[ModelSpec, float] = {}
        #: chunks by (dataset fingerprint, tokenizer): computed once per model only when they
        #: are counted in the model's own tokens
        self._chunks: dict[tuple[str, str], list[Chunk]] = {}
        #: called as ``prefill(provider, documents, cache)`` before a provider builds its index
        #: (``--embedbench-ray`` embeds the uncached documents on Ray there)
        self.prefill: Callable[[Provider, Sequence[Any], EmbeddingCache | None], None] | None = None

    def provider(self, model: str | ModelSpec) -> Provider:
        """The loaded provider for ``model`` (loaded on first use, then reused)."""
        spec = ModelSpec.coerce(model)
        if spec not in self._providers:
            provider = create_provider(spec)
            t0 = time.perf_counter()
            provider.ensure_loaded()
            self._load_s[spec] = time.perf_counter() - t0
            self._providers[spec] = provider
        return self._providers[spec]

    def evaluate(
        self,
        model: str | ModelSpec,
        dataset: str | Path | RetrievalDataset,
        *,
        k: int | Iterable[int] | None = None,
        split: str = "test",
        retriever: Retriever | None = None,
        stats: BuildStats | None = None,
    ) -> RetrievalResult:
        """Embed and index ``dataset``'s documents, run its judged queries, score the run.

        ``retriever``: one already built over these documents (and chunks) by this model,
        reused instead of building again; a query-noise sweep passes one for all its seeds,
        so its results show no document embedding or index build time. ``stats``: what
        building that retriever counted (its embedding time and cache lookups), for a caller
        that built it just for this run (the index axis)."""
        spec = ModelSpec.coerce(model)
        ds = load_dataset(dataset, split=split)
        ks = self.k if k is None else parse_cutoffs(k, "k")
        if _by_language(ds):
            if retriever is not None:
                raise ConfigError(
                    f"dataset {ds.name!r} keeps a corpus per language {list(ds.languages)}: "
                    "each language is searched by a retriever of its own, so one retriever "
                    "cannot be given; evaluate each ds.language_part(language) with its own"
                )
            return self._evaluate_languages(spec, ds, ks)
        timings = Timings()
        stats = stats if stats is not None else BuildStats()
        started = time.perf_counter()
        if ds.chunking is not None and not _model_chunked(ds):
            self.chunks(ds)  # the eval-set checks, before any model loads
        with RSSSampler() as rss:
            first_use = spec not in self._providers
            provider = self.provider(spec)
            timings.model_load_s = self._load_s[spec] if first_use else 0.0
            encode_before = provider.encode_seconds()
            batches_before = len(provider.document_batch_seconds())
            provider.reset_vram_peak()
            if retriever is None:
                retriever = self.build_retriever(provider, ds, stats=stats)
            # a hybrid that tunes its fusion weight does so on queries the run does not score
            ds, _ = tune_fusion(retriever, ds, seed=self.seed)
            timings.document_embedding_s = stats.document_embedding_s
            timings.index_build_s = stats.index_build_s
            run = self._run_queries(
                provider, retriever, ds.queries, max(ks), timings, encode_before
            )
        timings.total_s = time.perf_counter() - started
        provider.after_run()
        return self._result(
            spec,
            ds,
            ks,
            provider,
            retriever,
            run,
            timings,
            stats,
            rss,
            cold_model=first_use,
            batches_before=batches_before,
        )

    def _evaluate_languages(
        self, spec: ModelSpec, ds: RetrievalDataset, ks: tuple[int, ...]
    ) -> RetrievalResult:
        """Each language's queries over its own corpus (one index a language, as the seed
        study evaluates MIRACL's languages), then one result of them all: metrics the macro
        average over the languages, ``by_language`` each language's own result."""
        from .languages import combine_languages

        parts = {
            language: self.evaluate(spec, ds.language_part(language), k=ks)
            for language in ds.languages
        }
        return combine_languages(ds, parts, provider=self.provider(spec))

    def _result(
        self,
        spec: ModelSpec,
        ds: RetrievalDataset,
        ks: tuple[int, ...],
        provider: Provider,
        retriever: Retriever,
        run: _QueryRun,
        timings: Timings,
        stats: BuildStats,
        rss: RSSSampler,
        *,
        cold_model: bool,
        batches_before: int,
    ) -> RetrievalResult:
        """The :class:`RetrievalResult` of one measured run: its rankings and timings, what the
        provider reports after it (model info, resources, VRAM peak) and, for a model that
        lives in a server, its resident size as the memory figure."""
        info = _model_info(provider)
        fusion = fusion_info(retriever)
        if fusion is not None:
            info["fusion"] = fusion  # its weights: given, or tuned on other queries
        resources = _resources(provider, retriever, info, cold_model, batches_before)
        resources["cache_vectors"] = _cache_vectors(self.cache, stats)
        chunked = None
        if isinstance(retriever, PooledRetriever):
            chunked = PooledRun(retriever.chunks, run.winners or [], retriever.depths)
        result = RetrievalResult(
            model=spec,
            dataset=ds,
            rankings=run.rankings,
            scores=run.scores,
            k=ks,
            timings=timings,
            latency=LatencyStats.from_seconds(
                run.latencies, run.timed_ids, queries=len(ds.queries)
            ),
            cold_query_ms=run.cold_query_ms,
            documents_per_s=_documents_per_s(stats),
            peak_rss_mb=rss.peak_mb,
            added_rss_mb=rss.added_mb,
            start_rss_mb=rss.start_mb,
            environment={"threads": run.threads, "load": run.load.to_dict()},
            cache=CacheStats(stats.cache_hits, stats.cache_misses),
            query_cache=run.query_cache,
            model_info=info,
            seed=self.seed,
            n_resamples=self.n_resamples,
            level=self.level,
            provider=provider,
            resources=resources,
            chunked=chunked,
        )
        # cut-offs rebuild the retriever (documents or chunks from the cache) on first use
        result.retriever_factory = lambda: _same_fusion(
            self.build_retriever(provider, ds), retriever
        )
        if info.get("resident_mb") is not None:
            # the model lives in a server (Ollama): its resident size is the memory figure
            result.process_peak_rss_mb = result.peak_rss_mb
            result.peak_rss_mb = float(info["resident_mb"])
            result.added_rss_mb = float(info["resident_mb"])
        return result

    def chunks(self, ds: RetrievalDataset, provider: Provider | None = None) -> list[Chunk]:
        """The chunks of chunked dataset ``ds`` (computed once), checked: every judged
        document yields one. In the model's own tokens (``unit: tokens``, no tokenizer named)
        they depend on ``provider``, and are computed once per model."""
        model_key = ""
        tokenizer = None
        if _model_chunked(ds):
            if provider is None:
                raise ValueError("chunks in the model's own tokens need the provider")
            model_key, tokenizer = provider.namespace_key(), provider.tokenizer()
        key = (ds.fingerprint, model_key)
        if key not in self._chunks:
            chunks = dataset_chunks(ds, tokenizer=tokenizer)
            check_judged_chunks(ds, chunks)
            self._chunks[key] = chunks
        return self._chunks[key]

    def build_retriever(
        self, provider: Provider, ds: RetrievalDataset, *, stats: BuildStats | None = None
    ) -> Retriever:
        """``provider``'s retriever over ``ds``: over its documents, or for a chunked dataset a
        :class:`~.docscore.PooledRetriever` over its chunks (the cache reuses unchanged ones)."""
        if _by_language(ds):
            raise ConfigError(
                f"dataset {ds.name!r} keeps a corpus per language {list(ds.languages)}, and "
                "there is no one index over all of them: build a retriever for each "
                "ds.language_part(language)"
            )
        stats = stats if stats is not None else BuildStats()
        progress = self._documents_progress()
        if hasattr(provider, "memory_budget"):
            provider.memory_budget = self.memory_budget
        if ds.chunking is None:
            if self.prefill is not None:
                self.prefill(provider, ds.documents, self.cache)
            return provider.build(ds.documents, cache=self.cache, stats=stats, progress=progress)
        chunks = self.chunks(ds, provider)
        pseudo = chunk_pseudo_documents(chunks)
        if self.prefill is not None:
            self.prefill(provider, pseudo, self.cache)
        inner = provider.build(pseudo, cache=self.cache, stats=stats, progress=progress)
        return PooledRetriever(inner, chunks)

    def _documents_progress(self) -> Callable[[int, int], None] | None:
        """:attr:`progress` for the document stage, in the shape ``build`` calls."""
        if self.progress is None:
            return None
        report = self.progress

        def documents(done: int, total: int) -> None:
            report("documents", done, total)

        return documents

    def _run_queries(
        self,
        provider: Provider,
        retriever: Retriever,
        queries: Sequence[Query],
        depth: int,
        timings: Timings,
        encode_before: float,
    ) -> _QueryRun:
        """The scored pass over every query in batches, then (unless ``latency_passes`` is 0)
        the latency of a seeded sample of queries, timed one at a time (see the class doc).

        The query stage timings (set on ``timings``) are the scored pass's; ``encode_s`` counts
        the model's encode calls from ``encode_before`` (the documents') to the scored pass's end.
        """
        threads = thread_settings()  # after the load: torch's thread count is known
        with LoadMonitor() as load:
            run = self._batched_queries(retriever, queries, depth, timings)
            timings.encode_s = provider.encode_seconds() - encode_before
            run.latencies, run.timed_ids, run.cold_query_ms = self._timed_sample(
                retriever, queries, depth
            )
        run.threads, run.load = threads, load
        return run

    def _batched_queries(
        self, retriever: Retriever, queries: Sequence[Query], depth: int, timings: Timings
    ) -> _QueryRun:
        """The rankings and scores that count, every query once in batches (what a bare script
        does; the query vectors the cache holds read from it), on a chunked dataset each
        retrieved document's winning chunk, and the query cache's hits and misses."""
        embed_before, search_before = retriever.query_embedding_s, retriever.search_s
        hits, misses = retriever.query_cache_hits, retriever.query_cache_misses
        winners: list[list[str]] | None = None
        if isinstance(retriever, PooledRetriever):
            # its winning chunks come query by query: one scored pass, its timing unused
            unused = np.empty(len(queries))
            rankings, scores, winners = self._scored_pass(retriever, queries, depth, unused)
        else:
            rankings, scores = retriever.search_many([q.text for q in queries], depth)
            if self.progress is not None and queries:
                self.progress("queries", len(queries), len(queries))
        timings.query_embedding_s = retriever.query_embedding_s - embed_before
        timings.search_s = retriever.search_s - search_before
        found = CacheStats(retriever.query_cache_hits - hits, retriever.query_cache_misses - misses)
        return _QueryRun(rankings, scores, winners=winners, query_cache=found)

    def _timed_sample(
        self, retriever: Retriever, queries: Sequence[Query], depth: int
    ) -> tuple[np.ndarray, tuple[str, ...], float]:
        """One untimed warm-up query, then the timed passes over the sampled queries: the
        seconds, shape ``(passes, sample)``, the sampled ids in query order, and the warm-up's
        milliseconds. Nothing is timed when ``latency_passes`` is 0 or there is no query."""
        if self.latency_passes == 0 or not queries:
            return np.empty((0, 0)), (), math.nan
        sample = [queries[i] for i in latency_sample(self.latency_sample, len(queries), self.seed)]
        t0 = time.perf_counter()  # untimed warm-up: lazy initialisation is not query latency
        retriever.search(sample[0].text, depth)
        cold_query_ms = (time.perf_counter() - t0) * 1000.0
        passes = latency_passes(self.latency_passes, len(sample))
        latencies = np.empty((passes, len(sample)))
        for p in range(passes):
            for i, query in enumerate(sample):
                t0 = time.perf_counter()
                retriever.search(query.text, depth)  # only the text: never metadata
                latencies[p, i] = time.perf_counter() - t0
        return latencies, tuple(q.id for q in sample), cold_query_ms

    def _scored_pass(
        self, retriever: Retriever, queries: Sequence[Query], depth: int, latencies: np.ndarray
    ) -> tuple[list[list[str]], list[list[float]], list[list[str]] | None]:
        """Every query once, timed into ``latencies``: the rankings and scores that count, and
        on a chunked dataset each retrieved document's winning chunk."""
        rankings: list[list[str]] = []
        scores: list[list[float]] = []
        pooled = retriever if isinstance(retriever, PooledRetriever) else None
        winners: list[list[str]] | None = [] if pooled is not None else None
        for i, query in enumerate(queries):
            t0 = time.perf_counter()
            # only the text: never metadata
            if pooled is not None:
                ids, sc, won = pooled.search_pooled(query.text, depth)
            else:
                ids, sc = retriever.search(query.text, depth)
            latencies[i] = time.perf_counter() - t0
            rankings.append(ids)
            scores.append(sc)
            if winners is not None:
                winners.append(won)
            if self.progress is not None:
                self.progress("queries", i + 1, len(queries))
        return rankings, scores, winners


@dataclass
class _QueryRun:
    """What :meth:`Evaluator._run_queries` measured: the scored pass's rankings, then the
    latency sample and the conditions it ran in."""

    rankings: list[list[str]]
    scores: list[list[float]]
    #: each retrieved document's winning chunk id (chunked datasets only)
    winners: list[list[str]] | None = None
    #: the scored pass's query vectors found in the embedding cache, and embedded
    query_cache: CacheStats = field(default_factory=CacheStats)
    #: seconds, shape ``(passes, timed queries)``
    latencies: np.ndarray = field(default_factory=lambda: np.empty((0, 0)))
    #: the ids of the timed queries, aligned with ``latencies``' columns
    timed_ids: tuple[str, ...] = ()
    cold_query_ms: float = math.nan
    threads: dict[str, Any] = field(default_factory=dict)
    load: LoadMonitor = field(default_factory=LoadMonitor)


def _same_fusion(rebuilt: Retriever, measured: Retriever) -> Retriever:
    """``rebuilt`` with the fusion weights ``measured`` ran with (a tuned hybrid's cut-offs
    are those of its tuned weight)."""
    hybrid, source = hybrid_of(rebuilt), hybrid_of(measured)
    if hybrid is not None and source is not None:
        hybrid.weights = list(source.weights)
        hybrid.tuning = source.tuning
    return rebuilt


def _is_count(value: Any) -> bool:
    """Whether ``value`` is an integer >= 0 (not a bool)."""
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _by_language(ds: RetrievalDataset) -> bool:
    """Whether ``ds``'s languages each have a corpus of their own (each searched apart)."""
    return ds.separate_corpora and len(ds.languages) > 1


def _model_chunked(ds: RetrievalDataset) -> bool:
    """Whether ``ds``'s chunks are counted in the model's own tokens (so differ by model)."""
    return (
        ds.chunking is not None and ds.chunking.unit == "tokens" and ds.chunking.tokenizer is None
    )


def _documents_per_s(stats: BuildStats) -> float:
    """Throughput of the documents actually embedded (cache hits would inflate it); for a
    lexical model, the indexing rate; NaN when every document came from the cache."""
    if stats.cache_misses and stats.document_embedding_s > 0:
        return stats.cache_misses / stats.document_embedding_s
    if stats.document_embedding_s == 0 and stats.index_build_s > 0:
        return stats.documents / stats.index_build_s  # lexical indexing
    return math.nan  # every document came from the cache: nothing measured


def _cache_vectors(cache: EmbeddingCache | None, stats: BuildStats) -> int | None:
    """How many of this run's document (or chunk) vectors the embedding cache holds: those
    found there, and those embedded unless the cache stopped taking writes (None: no cache,
    or a model without vectors)."""
    if cache is None or cache.unavailable is not None:
        return None
    if not stats.cache_hits + stats.cache_misses:
        return None  # a lexical model: nothing embedded
    return stats.cache_hits + (0 if cache.read_only else stats.cache_misses)


def _model_info(provider: Provider) -> dict[str, Any]:
    """What the report says about the model: the provider's info, its cache namespace, the
    settings that change vectors, its price, whether it is free, and its request counts."""
    namespace = provider.namespace()
    return {
        **provider.info,
        "namespace": provider.namespace_key(),
        # what changes vectors besides the weights: prefixes, options, dimensions
        "settings": {k: v for k, v in namespace.items() if k != "revision"},
        "price_per_1m_tokens": provider.price_per_1m_tokens(),
        "free": provider.is_free(),  # local models, lexical and fusion of free models
        "calls": dict(provider.calls),
    }


def _resources(
    provider: Provider,
    retriever: Retriever,
    info: dict[str, Any],
    cold_model: bool,
    batches_before: int,
) -> dict[str, Any]:
    """The report's resources block: vector dimension, index size, the run's document batch
    times (``batches_before`` earlier ones left out), VRAM peak and its source, device."""
    vram_mb, vram_source = provider.vram_peak_mb()
    return {
        "dimension": provider.vector_dimension(),
        "index_bytes": retriever.index_bytes(),
        # a model loaded by this evaluation makes its first batch the cold one
        "cold_model": cold_model,
        "document_batch_s": provider.document_batch_seconds()[batches_before:],
        "vram_peak_mb": vram_mb,
        "vram_source": vram_source,
        "device": info.get("device"),
    }


def evaluate(
    model: str | ModelSpec,
    dataset: str | Path | RetrievalDataset,
    *,
    k: int | Iterable[int] = DEFAULT_K,
    cache: bool | str | Path | EmbeddingCache | None = True,
    seed: int = 0,
    split: str = "test",
    n_resamples: int = DEFAULT_RESAMPLES,
    progress: Progress | None = None,
    latency_passes: int = DEFAULT_LATENCY_PASSES,
    latency_sample: int = DEFAULT_LATENCY_SAMPLE,
    memory_budget: int | None = None,
) -> RetrievalResult:
    """Evaluate one model on one dataset (see :class:`Evaluator` to reuse loaded models).

    ``model`` is a spec string or :class:`ModelSpec`; ``dataset`` a path (see
    :func:`~pytest_embedbench.load_dataset`) or a :class:`RetrievalDataset`; ``cache`` True
    (default folder), False, or a folder. ``latency_passes`` and ``latency_sample``: what is
    timed (see :class:`Evaluator`; by default a seeded sample of 50 queries, median of 3 passes).
    ``memory_budget``: bytes of corpus vectors the exact search may hold (streamed from the
    cache in shards beyond it; None: all in memory).
    """
    return Evaluator(
        k=k,
        cache=cache,
        seed=seed,
        n_resamples=n_resamples,
        progress=progress,
        latency_passes=latency_passes,
        latency_sample=latency_sample,
        memory_budget=memory_budget,
    ).evaluate(model, dataset, split=split)

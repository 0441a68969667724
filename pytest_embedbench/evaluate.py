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
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .cache import CacheStats, EmbeddingCache
from .datasets import RetrievalDataset, load_dataset
from .exceptions import ConfigError, MetricError
from .measure import (
    DEFAULT_LATENCY_PASSES,
    LatencyStats,
    LoadMonitor,
    RSSSampler,
    Timings,
    latency_passes,
    thread_settings,
)
from .metrics import DEFAULT_K, METRICS, compute, grade_matrix, parse_cutoffs, parse_metric
from .providers.base import BuildStats, ModelSpec, Provider, create_provider
from .stats import DEFAULT_RESAMPLES, Estimate, bootstrap, paired_bootstrap

__all__ = ["DEFAULT_K", "Evaluator", "RetrievalResult", "evaluate"]

#: progress(stage, done, total), stage is "documents" or "queries"
Progress = Callable[[str, int, int], None]


class RetrievalResult:
    """Rankings, per-query metrics, latency, timings and memory of one model on one dataset.

    Metrics are :class:`~pytest_embedbench.stats.Estimate` floats with a bootstrap interval::

        result.metric("ndcg@10"), result.ndcg10, result.mrr10, result.recall(100)
        result.per_query("ndcg@10")     # numpy array, one value per judged query
        result.run                      # {qid: {doc_id: score}}, pytrec_eval's shape

    ``documents_per_s`` counts only documents actually embedded (NaN when every document came
    from the cache); for lexical models it is the indexing rate.

    Memory: ``added_rss_mb`` is what this model added (peak RSS during its evaluation, model
    load included, minus the RSS at its start; for a server-side model such as Ollama, the
    server's resident size); ``process_peak_rss_mb`` is this process's peak RSS during the
    evaluation, which includes what earlier models left resident. ``environment`` holds the
    thread settings and the CPU load while the queries were timed.
    """

    def __init__(
        self,
        *,
        model: ModelSpec,
        dataset: RetrievalDataset,
        rankings: Sequence[Sequence[str]],
        scores: Sequence[Sequence[float]],
        k: tuple[int, ...],
        timings: Timings,
        latency: LatencyStats,
        cold_query_ms: float,
        documents_per_s: float,
        peak_rss_mb: float,
        cache: CacheStats,
        added_rss_mb: float = math.nan,
        start_rss_mb: float = math.nan,
        environment: Mapping[str, Any] | None = None,
        model_info: Mapping[str, Any],
        seed: int,
        n_resamples: int,
        level: float = 0.95,
    ) -> None:
        self.model = model
        self.name = model.short_name
        self.dataset_name = dataset.name
        self.dataset_fingerprint = dataset.fingerprint
        self.query_ids: tuple[str, ...] = tuple(q.id for q in dataset.queries)
        self.rankings: dict[str, list[str]] = {
            qid: list(r) for qid, r in zip(self.query_ids, rankings, strict=True)
        }
        self.scores: dict[str, list[float]] = {
            qid: list(s) for qid, s in zip(self.query_ids, scores, strict=True)
        }
        self.k = k
        self.depth = max(k)
        self.n_documents = len(dataset.documents)
        self.timings = timings
        self.latency = latency
        self.cold_query_ms = cold_query_ms
        self.documents_per_s = documents_per_s
        self.peak_rss_mb = peak_rss_mb
        #: this process's peak RSS when ``peak_rss_mb`` is a server's resident size
        self.process_peak_rss_mb = peak_rss_mb
        #: peak RSS during this evaluation minus the RSS at its start (what this model added)
        self.added_rss_mb = added_rss_mb
        #: this process's RSS when the evaluation started
        self.start_rss_mb = start_rss_mb
        #: thread settings and CPU load while the queries were timed (see measure.py)
        self.environment: dict[str, Any] = dict(environment or {})
        self.cache = cache
        self.model_info = dict(model_info)
        self.seed = seed
        self.n_resamples = n_resamples
        self.level = level
        self._token_source: tuple[Any, RetrievalDataset] | None = None
        self._tokens: dict[str, Any] | None = None
        judgements = [dict(dataset.qrels[qid]) for qid in self.query_ids]
        self._qrels = dict(zip(self.query_ids, judgements, strict=True))
        self._grades = grade_matrix(list(self.rankings.values()), judgements, self.depth)
        self._per_query: dict[str, np.ndarray] = {}
        self._estimates: dict[str, Estimate] = {}

    def __repr__(self) -> str:
        return (
            f"RetrievalResult(model={self.name!r}, dataset={self.dataset_name!r}, "
            f"queries={len(self.query_ids)}, ndcg@10={float(self.metric('ndcg@10')):.4f})"
            if self.depth >= 10
            else f"RetrievalResult(model={self.name!r}, dataset={self.dataset_name!r})"
        )

    # -- metrics ---------------------------------------------------------------------------

    def per_query(self, name: str) -> np.ndarray:
        """One value per judged query (in :attr:`query_ids` order) for metric ``name``."""
        metric = parse_metric(name)
        key = str(metric)
        if key not in self._per_query:
            if metric.k > self.depth:
                raise MetricError(
                    f"{key}: this run retrieved only the top {self.depth}; "
                    f"evaluate with k including {metric.k} (e.g. k=(1, 5, 10, {metric.k}))"
                )
            self._per_query[key] = compute([key], *self._grades)[key]
        return self._per_query[key]

    def metric(self, name: str) -> Estimate:
        """The mean of ``name`` over queries with its bootstrap interval (seeded)."""
        key = str(parse_metric(name))
        if key not in self._estimates:
            est = bootstrap(
                self.per_query(key),
                n_resamples=self.n_resamples,
                level=self.level,
                seed=self.seed,
                name=key,
            )
            est.query_ids = self.query_ids
            est.context = f"{self.name} on {self.dataset_name}"
            self._estimates[key] = est
        return self._estimates[key]

    def metrics(self, families: Iterable[str] = tuple(METRICS)) -> dict[str, Estimate]:
        """Every ``family@k`` for the evaluated cut-offs."""
        return {f"{f}@{k}": self.metric(f"{f}@{k}") for f in families for k in self.k}

    def ndcg(self, k: int) -> Estimate:
        return self.metric(f"ndcg@{k}")

    def mrr(self, k: int) -> Estimate:
        return self.metric(f"mrr@{k}")

    def recall(self, k: int) -> Estimate:
        return self.metric(f"recall@{k}")

    def precision(self, k: int) -> Estimate:
        return self.metric(f"precision@{k}")

    def hit(self, k: int) -> Estimate:
        return self.metric(f"hit@{k}")

    def map(self, k: int) -> Estimate:
        return self.metric(f"map@{k}")

    @property
    def ndcg10(self) -> Estimate:
        return self.metric("ndcg@10")

    @property
    def mrr10(self) -> Estimate:
        return self.metric("mrr@10")

    @property
    def recall10(self) -> Estimate:
        return self.metric("recall@10")

    @property
    def recall100(self) -> Estimate:
        return self.metric("recall@100")

    def worst_queries(self, name: str = "ndcg@10", n: int = 3) -> list[tuple[str, float]]:
        """The ``n`` queries scoring lowest on ``name`` (ties by query id), for messages."""
        return self.metric(name).worst(n)

    def paired_scores(
        self, other: RetrievalResult, name: str = "ndcg@10"
    ) -> tuple[list[float], list[float]]:
        """Per-query ``name`` of ``self`` and ``other`` on the queries both share, in this
        result's query order (ConfigError when they share none)."""
        theirs = dict(zip(other.query_ids, other.per_query(name), strict=True))
        mine = dict(zip(self.query_ids, self.per_query(name), strict=True))
        shared = [qid for qid in self.query_ids if qid in theirs]
        if not shared:
            raise ConfigError(
                f"{self.name!r} and {other.name!r} share no query ids; compare on one dataset"
            )
        return [mine[q] for q in shared], [theirs[q] for q in shared]

    def compare(self, other: RetrievalResult, name: str = "ndcg@10") -> Estimate:
        """Paired difference ``self - other`` on the queries both share, with its interval."""
        mine, theirs = self.paired_scores(other, name)
        return paired_bootstrap(
            mine,
            theirs,
            n_resamples=self.n_resamples,
            level=self.level,
            seed=self.seed,
            name=f"{name} {self.name} - {other.name}",
        )

    @property
    def tokens(self) -> dict[str, Any]:
        """Tokens of the documents and queries as sent, and whether they are estimated
        (counted on first use: exact with the model's tokenizer where the provider has one)."""
        if self._tokens is None:
            self._tokens = {"documents": None, "queries": None, "estimated": None}
            if self._token_source is not None:
                provider, ds = self._token_source
                counter = getattr(provider, "count_tokens", None)
                if callable(counter):
                    docs = [provider.prepare(d.embed_text, "document") for d in ds.documents]
                    queries = [provider.prepare(q.text, "query") for q in ds.queries]
                    doc_tokens, estimated = counter(docs)
                    query_tokens, q_estimated = counter(queries)
                    self._tokens = {
                        "documents": doc_tokens,
                        "queries": query_tokens,
                        "estimated": estimated or q_estimated,
                    }
        return self._tokens

    @property
    def cost(self) -> dict[str, Any]:
        """Estimated USD to embed the corpus and the queries once, at the list price (None
        when the price is unknown; 0 for local models)."""
        price = self.model_info.get("price_per_1m_tokens")
        tokens = self.tokens
        usd = None
        if price is not None and tokens["documents"] is not None:
            usd = (tokens["documents"] + tokens["queries"]) * float(price) / 1_000_000
        if price is None and tokens["documents"] is None and self.model_info.get("free"):
            usd = 0.0
        return {"price_per_1m_tokens": price, "usd": usd}

    @property
    def run(self) -> dict[str, dict[str, float]]:
        """The rankings as ``{qid: {doc_id: score}}`` (pytrec_eval's run format)."""
        return {
            qid: dict(zip(ids, self.scores[qid], strict=True)) for qid, ids in self.rankings.items()
        }

    @property
    def qrels(self) -> dict[str, dict[str, int]]:
        return {qid: dict(j) for qid, j in self._qrels.items()}

    def to_dict(self, *, per_query: bool = False) -> dict[str, Any]:
        """A JSON-ready summary (metrics as ``{value, low, high, n}``)."""
        out: dict[str, Any] = {
            "model": self.name,
            "spec": self.model.spec,
            "dataset": self.dataset_name,
            "dataset_fingerprint": self.dataset_fingerprint,
            "queries": len(self.query_ids),
            "documents": self.n_documents,
            "k": list(self.k),
            "metrics": {name: est.to_dict() for name, est in self.metrics().items()},
            "latency": self.latency.to_dict(),
            "cold_query_ms": self.cold_query_ms,
            "timings": self.timings.to_dict(),
            "documents_per_s": self.documents_per_s,
            "peak_rss_mb": self.peak_rss_mb,
            "added_rss_mb": self.added_rss_mb,
            "process_peak_rss_mb": self.process_peak_rss_mb,
            "start_rss_mb": self.start_rss_mb,
            "environment": self.environment,
            "cache": {
                "hits": self.cache.hits,
                "misses": self.cache.misses,
                "hit_rate": self.cache.hit_rate,
            },
            "tokens": self.tokens,
            "cost": self.cost,
            "model_info": {k: v for k, v in self.model_info.items() if _jsonable(v)},
            "seed": self.seed,
        }
        if per_query:
            out["latency"]["per_query_ms"] = dict(
                zip(self.query_ids, self.latency.per_query_ms.tolist(), strict=True)
            )
            out["per_query"] = {
                name: dict(zip(self.query_ids, self.per_query(name).tolist(), strict=True))
                for name in self.metrics()
            }
        return out


def _jsonable(value: Any) -> bool:
    return isinstance(value, (str, int, float, bool, type(None), list, dict))


class Evaluator:
    """Evaluates models on datasets; loads each model once and shares the embedding cache.

    ``cache`` is True (the default folder), False, a folder, or an EmbeddingCache.
    ``progress(stage, done, total)`` is called while documents are embedded and queries run.
    ``latency_passes`` timed passes over the queries (after one untimed warm-up query) give
    each query's latency as its median over the passes; only the first pass's rankings are
    scored, and large query sets get fewer passes (see :func:`~.measure.latency_passes`).
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
    ) -> None:
        if isinstance(latency_passes, bool) or not isinstance(latency_passes, int):
            raise ConfigError(f"latency_passes={latency_passes!r}: give an integer >= 1")
        if latency_passes < 1:
            raise ConfigError(f"latency_passes={latency_passes!r}: give an integer >= 1")
        self.latency_passes = latency_passes
        self.k = parse_cutoffs(k, "k")
        self.cache = EmbeddingCache.open(cache)
        self.seed = int(seed)
        self.n_resamples = int(n_resamples)
        self.level = level
        self.progress = progress
        self._providers: dict[ModelSpec, Provider] = {}
        self._load_s: dict[ModelSpec, float] = {}

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
    ) -> RetrievalResult:
        """Embed and index ``dataset``'s documents, run its judged queries, score the run."""
        spec = ModelSpec.coerce(model)
        ds = load_dataset(dataset, split=split)
        ks = self.k if k is None else parse_cutoffs(k, "k")
        depth = max(ks)
        timings = Timings()
        stats = BuildStats()
        started = time.perf_counter()
        with RSSSampler() as rss:
            first_use = spec not in self._providers
            provider = self.provider(spec)
            timings.model_load_s = self._load_s[spec] if first_use else 0.0
            encode_before = provider.encode_seconds()
            doc_progress = None
            if self.progress is not None:
                report = self.progress

                def doc_progress(done: int, total: int) -> None:
                    report("documents", done, total)

            retriever = provider.build(
                ds.documents, cache=self.cache, stats=stats, progress=doc_progress
            )
            timings.document_embedding_s = stats.document_embedding_s
            timings.index_build_s = stats.index_build_s
            queries = ds.queries
            cold_query_ms = math.nan
            if queries:  # one untimed warm-up: lazy initialisation is not query latency
                t0 = time.perf_counter()
                retriever.search(queries[0].text, depth)
                cold_query_ms = (time.perf_counter() - t0) * 1000.0
            embed_before, search_before = retriever.query_embedding_s, retriever.search_s
            rankings: list[list[str]] = []
            scores: list[list[float]] = []
            passes = latency_passes(self.latency_passes, len(queries))
            latencies = np.empty((passes, len(queries)))
            threads = thread_settings()  # after the load: torch's thread count is known
            with LoadMonitor() as load:
                for i, query in enumerate(queries):
                    t0 = time.perf_counter()
                    ids, sc = retriever.search(query.text, depth)  # only the text: never metadata
                    latencies[0, i] = time.perf_counter() - t0
                    rankings.append(ids)
                    scores.append(sc)
                    if self.progress is not None:
                        self.progress("queries", i + 1, len(queries))
                # the stage timings are the scored pass's; later passes only re-time queries
                timings.query_embedding_s = retriever.query_embedding_s - embed_before
                timings.search_s = retriever.search_s - search_before
                timings.encode_s = provider.encode_seconds() - encode_before
                for p in range(1, passes):
                    for i, query in enumerate(queries):
                        t0 = time.perf_counter()
                        retriever.search(query.text, depth)
                        latencies[p, i] = time.perf_counter() - t0
        timings.total_s = time.perf_counter() - started
        if stats.cache_misses and stats.document_embedding_s > 0:
            # throughput of the documents actually embedded; cache hits would inflate it
            documents_per_s = stats.cache_misses / stats.document_embedding_s
        elif stats.document_embedding_s == 0 and stats.index_build_s > 0:
            documents_per_s = stats.documents / stats.index_build_s  # lexical indexing
        else:
            documents_per_s = math.nan  # every document came from the cache: nothing measured
        provider.after_run()
        price = getattr(provider, "price_per_1m_tokens", None)
        namespace = provider.namespace()
        info = {
            **provider.info,
            "namespace": provider.namespace_key(),
            # what changes vectors besides the weights: prefixes, options, dimensions
            "settings": {k: v for k, v in namespace.items() if k != "revision"},
            "price_per_1m_tokens": price() if callable(price) else None,
            "free": provider.is_free(),  # local models, lexical and fusion of free models
            "calls": dict(getattr(provider, "calls", {})),
        }
        result = RetrievalResult(
            model=spec,
            dataset=ds,
            rankings=rankings,
            scores=scores,
            k=ks,
            timings=timings,
            latency=LatencyStats.from_seconds(latencies),
            cold_query_ms=cold_query_ms,
            documents_per_s=documents_per_s,
            peak_rss_mb=rss.peak_mb,
            added_rss_mb=rss.added_mb,
            start_rss_mb=rss.start_mb,
            environment={"threads": threads, "load": load.to_dict()},
            cache=CacheStats(stats.cache_hits, stats.cache_misses),
            model_info=info,
            seed=self.seed,
            n_resamples=self.n_resamples,
            level=self.level,
        )
        if callable(getattr(provider, "prepare", None)):
            result._token_source = (provider, ds)
        if info.get("resident_mb") is not None:
            # the model lives in a server (Ollama): its resident size is the memory figure
            result.process_peak_rss_mb = result.peak_rss_mb
            result.peak_rss_mb = float(info["resident_mb"])
            result.added_rss_mb = float(info["resident_mb"])
        return result


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
) -> RetrievalResult:
    """Evaluate one model on one dataset (see :class:`Evaluator` to reuse loaded models).

    ``model`` is a spec string or :class:`ModelSpec`; ``dataset`` a path (see
    :func:`~pytest_embedbench.load_dataset`) or a :class:`RetrievalDataset`; ``cache`` True
    (default folder), False, or a folder.
    """
    return Evaluator(
        k=k,
        cache=cache,
        seed=seed,
        n_resamples=n_resamples,
        progress=progress,
        latency_passes=latency_passes,
    ).evaluate(model, dataset, split=split)

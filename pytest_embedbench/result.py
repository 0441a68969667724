"""What an evaluation returns: :class:`RetrievalResult`, one model on one dataset.

Usage::

    result = evaluate("bm25", "../shared/data/scifact")
    result.ndcg10, result.recall(100)          # Estimates: floats with a bootstrap interval
    result.per_query("ndcg@10")                # one value per judged query
    result.compare(other, "ndcg@10")           # paired difference with its interval
    result.to_dict(per_query=True)             # what the JSON report and the baseline keep
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from .cache import CacheStats
from .cutoffs import Cutoffs
from .datasets import RetrievalDataset
from .exceptions import ConfigError, MetricError
from .measure import LatencyStats, Timings
from .metrics import METRICS, compute, grade_matrix, parse_metric
from .providers import ModelSpec, Provider
from .stats import Estimate, bootstrap, paired_bootstrap

__all__ = ["RetrievalResult"]


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
        provider: Provider | None = None,
    ) -> None:
        self.model = model
        self.name = model.short_name
        self.dataset_name = dataset.name
        self.dataset_fingerprint = dataset.fingerprint
        self.k = k
        self.depth = max(k)
        self.n_documents = len(dataset.documents)
        self._set_run(dataset, rankings, scores)
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
        #: the provider and dataset whose tokens :attr:`tokens` counts (on first use)
        self._token_source = (provider, dataset) if provider is not None else None
        self._tokens: dict[str, Any] | None = None
        self._per_query: dict[str, np.ndarray] = {}
        self._estimates: dict[str, Estimate] = {}
        #: the embedding cache the run used (set by the Evaluator), for :attr:`cutoffs`
        self.embedding_cache: Any = None
        self._cutoffs: Cutoffs | None = None

    def _set_run(
        self,
        dataset: RetrievalDataset,
        rankings: Sequence[Sequence[str]],
        scores: Sequence[Sequence[float]],
    ) -> None:
        """The rankings and scores by query id, and the gain matrix the metrics read."""
        self.query_ids: tuple[str, ...] = tuple(q.id for q in dataset.queries)
        #: each query's text, for messages that name queries
        self.query_texts: dict[str, str] = {q.id: q.text for q in dataset.queries}
        self.rankings: dict[str, list[str]] = {
            qid: list(r) for qid, r in zip(self.query_ids, rankings, strict=True)
        }
        self.scores: dict[str, list[float]] = {
            qid: list(s) for qid, s in zip(self.query_ids, scores, strict=True)
        }
        judgements = [dict(dataset.qrels[qid]) for qid in self.query_ids]
        self._qrels = dict(zip(self.query_ids, judgements, strict=True))
        self._grades = grade_matrix(list(self.rankings.values()), judgements, self.depth)

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
            est.query_texts = self.query_texts
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
                docs = [provider.prepare(d.embed_text, "document") for d in ds.documents]
                queries = [provider.prepare(q.text, "query") for q in ds.queries]
                doc_count, query_count = provider.count_tokens(docs), provider.count_tokens(queries)
                if doc_count is not None and query_count is not None:  # None: a ranker
                    self._tokens = {
                        "documents": doc_count[0],
                        "queries": query_count[0],
                        "estimated": doc_count[1] or query_count[1],
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
    def cutoffs(self) -> Cutoffs:
        """Strict / balanced / loose score cut-offs against this model's noise floor and a
        conformal cut-off for recall (see :mod:`~pytest_embedbench.cutoffs`), measured on
        first use: the index is built again (documents from the cache) and every query ranks
        the whole corpus. The JSON report keeps them once measured."""
        if self._cutoffs is None:
            from .cutoffs import cutoffs_for

            if self._token_source is None:
                raise ConfigError(
                    f"{self.name!r} on {self.dataset_name!r}: cut-offs need the model and the "
                    "dataset; this result was built without them"
                )
            provider, ds = self._token_source
            self._cutoffs = cutoffs_for(provider, ds, cache=self.embedding_cache, seed=self.seed)
        return self._cutoffs

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
        if self._cutoffs is not None:
            out["cutoffs"] = self._cutoffs.to_dict()
        if per_query:
            timed = self.latency.per_query_ms.tolist()  # empty when no pass was timed
            out["latency"]["per_query_ms"] = (
                dict(zip(self.query_ids, timed, strict=True)) if timed else {}
            )
            out["per_query"] = {
                name: dict(zip(self.query_ids, self.per_query(name).tolist(), strict=True))
                for name in self.metrics()
            }
        return out


def _jsonable(value: Any) -> bool:
    return isinstance(value, (str, int, float, bool, type(None), list, dict))

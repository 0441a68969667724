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
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Generic, TypeVar, overload

import numpy as np

from ..core.exceptions import ConfigError, MetricError
from ..data.datasets import RetrievalDataset
from ..models.providers import ModelSpec, Provider
from ..records.resultdata import (
    CostData,
    JudgeData,
    LanguageData,
    MetricData,
    ResourcesData,
    ResultData,
    TokensData,
    storage_figures,
)
from .cutoffs import Cutoffs
from .lift import lift_of
from .measure import CacheStats, LatencyStats, Timings
from .metrics import REPORTED, QrelArrays, compute, judge_arrays, parse_metric
from .snapshot import RETRIEVED_KEPT, resources_of, result_data, retrieved_rows
from .stats import Estimate, Resampling, bootstrap, paired_bootstrap

if TYPE_CHECKING:
    from ..core.types import Chunk
    from ..retrieval.indexes import IndexRun
    from ..retrieval.pooling import PooledRun
    from ..retrieval.rerank import RerankRun

__all__ = ["RETRIEVED_KEPT", "RetrievalResult"]

T = TypeVar("T")


class _Reads(Generic[T]):
    """A read-only attribute that reads one named figure through a method of the result
    (``ndcg10 = _Reads(metric, "ndcg@10")`` reads ``result.metric("ndcg@10")``): the
    shortcuts a test asserts on, each one line. The method is looked up on the instance, so
    a subclass's override (a stressed result's means) is the one read."""

    def __init__(self, method: Callable[[Any, str], T], name: str, doc: str = "") -> None:
        self.method, self.name = method.__name__, name
        self.__doc__ = doc or f"``{method.__name__}({name!r})``"

    @overload
    def __get__(self, obj: None, owner: type) -> _Reads[T]: ...
    @overload
    def __get__(self, obj: object, owner: type) -> T: ...
    def __get__(self, obj: object, owner: type) -> T | _Reads[T]:
        if obj is None:
            return self
        read: Callable[[str], T] = getattr(obj, self.method)
        return read(self.name)


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
        resources: Mapping[str, Any] | None = None,
        chunked: PooledRun | None = None,
        query_cache: CacheStats | None = None,
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
        self._set_memory(peak_rss_mb, added_rss_mb, start_rss_mb)
        #: thread settings and CPU load while the queries were timed (see measure.py)
        self.environment: dict[str, Any] = dict(environment or {})
        self.cache = cache
        #: the scored pass's query vectors: read from the embedding cache, or embedded
        self.query_cache = query_cache if query_cache is not None else CacheStats()
        self.model_info = dict(model_info)
        #: what the evaluator measured besides time: dimension, index bytes, batch times, VRAM
        self.measured: dict[str, Any] = dict(resources or {})
        self.seed = seed
        self.n_resamples = n_resamples
        self.level = level
        self._set_chunks(dataset, chunked)
        #: the provider and texts whose tokens :attr:`tokens` counts (on first use)
        self._token_source = (provider, dataset, self._embedded) if provider is not None else None
        self._tokens: TokensData | None = None
        self._per_query: dict[str, np.ndarray] = {}
        self._estimates: dict[str, Estimate] = {}
        #: builds this run's retriever again (set by the Evaluator), for :attr:`cutoffs`
        self.retriever_factory: Any = None
        self._cutoffs: Cutoffs | None = None  # see measured_cutoffs
        #: what the index axis measured (None: the test has no ``indexes=``), see
        #: :meth:`attach_index`
        self.index: IndexRun | None = None
        #: the exact search's result on the same query vectors (with :attr:`index`)
        self.exact: RetrievalResult | None = None
        self.query_load: tuple[Any, ...] = ()  # the provider's queries under load (LoadLevel)
        #: what an LLM judge added (``generate.judge.judge_result``): judged@k before and
        #: after, the metrics on human + LLM grades, the agreement; None without a judge
        self.judge: JudgeData | None = None
        #: what the reranking axis measured (None: no reranker, or ``none``), and the first
        #: stage's result it reranked (see :mod:`~pytest_embedbench.evaluation.reranked`)
        self.rerank: RerankRun | None = None
        self.stage1: RetrievalResult | None = None

    def _set_run(
        self,
        dataset: RetrievalDataset,
        rankings: Sequence[Sequence[str]],
        scores: Sequence[Sequence[float]],
    ) -> None:
        """The rankings and scores by query id, and the gain matrix the metrics read."""
        self.query_ids: tuple[str, ...] = tuple(q.id for q in dataset.queries)
        #: the dataset's languages (() for one language) and each query's, aligned with
        #: :attr:`query_ids` (None for one language): metrics are then macro averages
        self.languages: tuple[str, ...] = dataset.languages
        self.query_languages: tuple[str, ...] | None = (
            tuple(str(q.language) for q in dataset.queries) if dataset.languages else None
        )
        self._dataset = dataset
        self._by_language: dict[str, RetrievalResult] | None = None
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
        # the array path of the metrics: the rankings as one matrix of judged-document numbers
        arrays = QrelArrays.from_dict(self._qrels, self.query_ids)
        docs = arrays.rank_matrix(list(self.rankings.values()), self.depth)
        self._judged = judge_arrays(arrays, docs, self.depth)

    def _set_memory(self, peak_rss_mb: float, added_rss_mb: float, start_rss_mb: float) -> None:
        """The memory figures (see the class doc)."""
        self.peak_rss_mb = peak_rss_mb
        #: this process's peak RSS when ``peak_rss_mb`` is a server's resident size
        self.process_peak_rss_mb = peak_rss_mb
        #: peak RSS during this evaluation minus the RSS at its start (what this model added)
        self.added_rss_mb = added_rss_mb
        #: this process's RSS when the evaluation started
        self.start_rss_mb = start_rss_mb

    def _set_chunks(self, dataset: RetrievalDataset, chunked: PooledRun | None) -> None:
        """On a chunked dataset: the chunks searched and each retrieved document's winning
        chunk, from the run's :class:`~.docscore.PooledRun`."""
        #: the chunking settings (None: documents were embedded whole)
        self.chunking = dataset.chunking
        #: chunk id -> Chunk, the chunks searched (empty when not chunked)
        self.chunks: dict[str, Chunk] = {}
        #: query id -> the winning chunk id of each retrieved document, in ranking order
        self.winning_chunks: dict[str, list[str]] | None = None
        #: the chunk depth each query's search ended at (scored pass and timed passes)
        self.chunk_depths: list[int] = []
        self._embedded: list[str] | None = None
        if chunked is None:
            return
        self.chunks = dict(chunked.chunks)
        self.chunk_depths = list(chunked.depths)
        self._embedded = [chunk.text for chunk in self.chunks.values()]
        self.winning_chunks = {
            qid: list(won) for qid, won in zip(self.query_ids, chunked.winners, strict=True)
        }

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
            self._per_query[key] = compute([key], self._judged)[key]
        return self._per_query[key]

    def metric(self, name: str) -> Estimate:
        """The mean of ``name`` over queries with its bootstrap interval (seeded). On a
        dataset in several languages, the macro average: the mean of the languages' means,
        its bootstrap resampling the queries within each language (see :attr:`by_language`)."""
        key = str(parse_metric(name))
        if key not in self._estimates:
            est = self.estimate(self.per_query(key), key)
            est.query_ids = self.query_ids
            est.context = f"{self.name} on {self.dataset_name}"
            est.query_texts = self.query_texts
            self._estimates[key] = est
        return self._estimates[key]

    def metrics(self, families: Iterable[str] = REPORTED) -> dict[str, Estimate]:
        """Every ``family@k`` for the evaluated cut-offs (by default the reported families:
        the official metrics, judged@k and condensed nDCG; see
        :data:`~.metrics.REPORTED`)."""
        return {f"{f}@{k}": self.metric(f"{f}@{k}") for f in families for k in self.k}

    def estimate(self, values: Sequence[float] | np.ndarray, name: str) -> Estimate:
        """The mean of per-query ``values`` (in :attr:`query_ids` order) with this result's
        bootstrap interval, as its own metrics get theirs: seeded, and the macro average over
        the languages where the queries have some."""
        return bootstrap(values, name=name, **self._resampling(self.query_languages))

    def _resampling(self, strata: Sequence[str] | None) -> Resampling:
        """This result's bootstrap settings, resampled within ``strata`` (macro) when set."""
        return Resampling(
            n_resamples=self.n_resamples,
            level=self.level,
            seed=self.seed,
            strata=strata,
            macro=strata is not None,
        )

    @property
    def by_language(self) -> Mapping[str, RetrievalResult]:
        """Each language's own result on a dataset in several languages (empty for one
        language): ``result.by_language["zh"].ndcg10`` is the mean over the Chinese queries
        with its interval, and :attr:`ndcg10` the macro average of these.

        Where each language has its own corpus, each is the evaluation of that language's
        queries over its documents (its own index, latency and cut-offs); over one shared
        corpus, the same run's rankings of that language's queries."""
        if self._by_language is None:
            self._by_language = {lang: self._language_view(lang) for lang in self.languages}
        return self._by_language

    def _language_view(self, language: str) -> RetrievalResult:
        """The result of ``language``'s queries alone, from this run's rankings."""
        part = self._dataset.language_part(language)
        ids = [q.id for q in part.queries]
        wanted = set(ids)
        timed = [
            (q, ms)
            for q, ms in zip(self.latency.query_ids, self.latency.per_query_ms, strict=True)
            if q in wanted
        ]
        return RetrievalResult(
            model=self.model,
            dataset=part,
            rankings=[self.rankings[q] for q in ids],
            scores=[self.scores[q] for q in ids],
            k=self.k,
            timings=self.timings,
            latency=LatencyStats.from_seconds(
                np.array([ms for _, ms in timed]) / 1000.0,
                [q for q, _ in timed],
                queries=len(ids),
            ),
            cold_query_ms=self.cold_query_ms,
            documents_per_s=self.documents_per_s,
            peak_rss_mb=self.peak_rss_mb,
            cache=self.cache,
            model_info=self.model_info,
            seed=self.seed,
            n_resamples=self.n_resamples,
            level=self.level,
        )

    def languages_data(self) -> dict[str, LanguageData] | None:
        """Each language's queries, documents and metrics (None for one language)."""
        if not self.languages:
            return None
        return {
            language: LanguageData(
                queries=len(part.query_ids),
                documents=part.n_documents,
                metrics={name: MetricData.of(est) for name, est in part.metrics().items()},
            )
            for language, part in self.by_language.items()
        }

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

    def judged(self, k: int = 10) -> Estimate:
        """judged@k: the share of each query's top ``k`` that carries a judgment in the qrels
        (any grade), averaged over the queries; on a chunked corpus per document, after
        max-pooling. Below 0.9 the official metrics may understate a model that finds relevant
        documents nobody judged (compare ``condensed_ndcg@k``)."""
        return self.metric(f"judged@{k}")

    ndcg10 = _Reads(metric, "ndcg@10")
    mrr10 = _Reads(metric, "mrr@10")
    recall10 = _Reads(metric, "recall@10")
    recall100 = _Reads(metric, "recall@100")

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

    def paired_strata(self, other: RetrievalResult) -> list[str] | None:
        """The language of each query :meth:`paired_scores` pairs, in its order (None: a
        dataset in one language), for a comparison that resamples within languages."""
        if self.query_languages is None:
            return None
        theirs = set(other.query_ids)
        return [
            lang
            for qid, lang in zip(self.query_ids, self.query_languages, strict=True)
            if qid in theirs
        ]

    def compare(self, other: RetrievalResult, name: str = "ndcg@10") -> Estimate:
        """Paired difference ``self - other`` on the queries both share, with its interval."""
        return self._paired(other, name, f"{name} {self.name} - {other.name}")

    def _paired(self, other: RetrievalResult, name: str, label: str) -> Estimate:
        """``name``'s paired difference ``self - other`` on their shared queries, with this
        result's bootstrap interval (seeded), named ``label``."""
        mine, theirs = self.paired_scores(other, name)
        strata = self.paired_strata(other)
        return paired_bootstrap(mine, theirs, name=label, **self._resampling(strata))

    # -- the index axis --------------------------------------------------------------------

    def attach_index(self, run: IndexRun, dataset: RetrievalDataset) -> None:
        """Keep what an index run measured, and score the exact rankings of the same query
        vectors (``run.exact_rankings``) so :meth:`delta_vs_exact` pairs them query by query."""
        self.index = run
        self.exact = RetrievalResult(
            model=self.model,
            dataset=dataset,
            rankings=run.exact_rankings,
            scores=run.exact_scores,
            k=self.k,
            timings=Timings(),
            latency=LatencyStats.from_seconds(np.empty((0, 0))),
            cold_query_ms=math.nan,
            documents_per_s=math.nan,
            peak_rss_mb=math.nan,
            cache=CacheStats(),
            model_info={},
            seed=self.seed,
            n_resamples=self.n_resamples,
            level=self.level,
        )

    def _index_run(self) -> IndexRun:
        if self.index is None:
            raise ConfigError(
                f"{self.name!r} on {self.dataset_name!r} ran without an index axis; give the "
                'embedbench marker indexes=["exact", "faiss:hnsw(M=32,efSearch=64)"] (or '
                "indexes: in embedbench.yaml) to measure one"
            )
        return self.index

    def neighbour_recall(self, k: int = 10) -> Estimate:
        """The share of the exact top ``k`` that the index's top ``k`` holds, averaged over
        the queries (ann-benchmarks' recall), with its bootstrap interval."""
        run = self._index_run()
        if k not in run.neighbours:
            raise MetricError(
                f"neighbour_recall({k}): this run measured k={sorted(run.neighbours)}; add {k} "
                "to the cut-offs"
            )
        est = self.estimate(run.neighbours[k], f"neighbour_recall@{k}")
        est.context = f"{self.name} {run.spec} on {self.dataset_name}"
        return est

    def delta_vs_exact(self, name: str = "ndcg@10") -> Estimate:
        """Paired difference ``index - exact`` of metric ``name`` on the same queries, with its
        interval (below 0: the index costs that much)."""
        run = self._index_run()
        assert self.exact is not None
        return self._paired(self.exact, name, f"{name} {run.spec} - exact")

    # -- the reranking axis ----------------------------------------------------------------

    def lift(self, name: str = "ndcg@10") -> Estimate:
        """The reranker's lift on metric ``name``: the paired difference ``reranked - first
        stage`` on the same queries, with its bootstrap interval and, as ``.p_value``, the
        two-sided paired bootstrap p-value (the test the comparisons use). Above 0: the
        reranker helps::

            assert retrieval.lift("ndcg@10") >= 0      # the reranker may not make it worse
        """
        return lift_of(self, name)

    @property
    def tokens(self) -> TokensData:
        """Tokens of the documents and queries as sent, and whether they are estimated
        (counted on first use: exact with the model's tokenizer where the provider has one).
        A typed record, read by key too: ``tokens.documents == tokens["documents"]``."""
        if self._tokens is None:
            self._tokens = TokensData()
            if self._token_source is not None:
                provider, ds, embedded = self._token_source
                texts = embedded if embedded is not None else [d.embed_text for d in ds.documents]
                docs = [provider.prepare(text, "document") for text in texts]
                queries = [provider.prepare(q.text, "query") for q in ds.queries]
                doc_count, query_count = provider.count_tokens(docs), provider.count_tokens(queries)
                if doc_count is not None and query_count is not None:  # None: a ranker
                    self._tokens = TokensData(
                        documents=doc_count[0],
                        queries=query_count[0],
                        estimated=doc_count[1] or query_count[1],
                    )
        return self._tokens

    @property
    def cost(self) -> CostData:
        """Estimated USD to embed the corpus and the queries once, at the list price (None
        when the price is unknown; 0 for local models); read by key too: ``cost["usd"]``."""
        price = self.model_info.get("price_per_1m_tokens")
        tokens = self.tokens
        usd = None
        if price is not None and tokens.documents is not None:
            usd = (tokens.documents + (tokens.queries or 0)) * float(price) / 1_000_000
        if price is None and tokens.documents is None and self.model_info.get("free"):
            usd = 0.0
        return CostData(price_per_1m_tokens=price, usd=usd)

    @property
    def cutoffs(self) -> Cutoffs:
        """Strict / balanced / loose score cut-offs against this model's noise floor and a
        conformal cut-off for recall (see :mod:`~pytest_embedbench.cutoffs`), measured on
        first use: the index is built again (documents from the cache) and every query ranks
        the whole corpus. The JSON report keeps them once measured."""
        if self._cutoffs is None:
            from .cutoffs import cutoffs_of

            if self._token_source is None or self.retriever_factory is None:
                raise ConfigError(
                    f"{self.name!r} on {self.dataset_name!r}: cut-offs need the model and the "
                    "dataset; this result was built without them"
                )
            ds = self._token_source[1]
            self._cutoffs = cutoffs_of(self.retriever_factory(), ds, seed=self.seed)
        return self._cutoffs

    @property
    def measured_cutoffs(self) -> Cutoffs | None:
        """The cut-offs if :attr:`cutoffs` measured them (the test read them), else None:
        what the report keeps, read without measuring anything."""
        return self._cutoffs

    @property
    def resources(self) -> ResourcesData:
        """Index size, vector dimension, model load time, cold and warm document batch times,
        tokens per second and the GPU memory peak (``vram_peak_mb`` None: not on a GPU); a
        typed record, read by key too (``resources["dimension"]``).

        The cold batch is the first document batch after the model loaded (None when the model
        was loaded earlier, or every document came from the cache); warm figures are the
        other batches'. Tokens per second are the embedded documents' tokens over the
        document embedding time (the cached documents' share left out)."""
        return resources_of(self)

    # -- storage and indexing figures (docs/baselines.md "Storage and indexing gates") -------

    def _storage(self, name: str) -> float:
        value = storage_figures(self.resources, self.documents_per_s)[name]
        return math.nan if value is None else float(value)

    bytes_per_doc = _Reads(
        _storage,
        "bytes_per_doc",
        "Bytes the search index holds per document (NaN: the model does not tell).",
    )
    index_mb = _Reads(
        _storage,
        "index_mb",
        "The search index's bytes in MiB (2**20 bytes; NaN: the model does not tell).",
    )
    cache_mb = _Reads(
        _storage,
        "cache_mb",
        "The float32 bytes of this run's document (or chunk) vectors that the embedding cache "
        "holds, in MiB (NaN: no cache, or a model without vectors).",
    )
    docs_per_s = _Reads(
        _storage,
        "docs_per_s",
        "Documents embedded per second (:attr:`documents_per_s`; NaN: all were cached).",
    )

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
        """A JSON-ready summary (metrics as ``{value, low, high, n}``): :meth:`data`'s form."""
        return self.data(per_query=per_query).to_dict()

    def data(self, *, per_query: bool = False) -> ResultData:
        """What the JSON report, an xdist worker and the baseline keep of this result, typed;
        ``per_query``: with each query's scores, text, top ids, judgements and, on a chunked
        dataset, winning chunks, and the timed queries' latencies by id."""
        return result_data(self, per_query=per_query)

    def retrieved(self) -> dict[str, list[dict[str, Any]]]:
        """Per query, each retrieved document with its score and the chunk that won it (id,
        character span, PDF page): the JSON report's per-query detail on a chunked dataset.
        The first :data:`RETRIEVED_KEPT` and the relevant ones also keep the start of the
        chunk's text (:data:`~pytest_embedbench.records.querydiff.EXCERPT_CHARS` characters on
        one line), for the reports' per-query
        diffs."""
        return retrieved_rows(self)

"""A test's results as data, typed: :class:`ResultData` and :class:`GateOutcome`.

What a :class:`~pytest_embedbench.result.RetrievalResult` leaves behind once its test ends (the
JSON report's ``tests[].result``, what an xdist worker sends, what the baseline gate, the
summary and the reports read) and what the baseline gate found. Each class is a frozen
dataclass whose fields are its one list of keys: :func:`~pytest_embedbench.serial.to_data`
writes them and :func:`~pytest_embedbench.serial.from_data` reads them (as pytest-benchmark's
``Stats.fields`` drives its ``as_dict``), so string keys exist only in the JSON. Usage::

    data = result.data(per_query=True)            # a ResultData
    data.metrics["ndcg@10"].value, data.latency.p95_ms, data.cache.hit_rate
    assert ResultData.from_dict(json.loads(json.dumps(data.to_dict()))) == data

Parts whose keys are open (the provider's ``model_info``, the ``environment``, ``timings`` by
stage, the chunking settings, the cut-offs' own JSON) stay mappings.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..core.io import missing
from .figures import MIB, STORAGE, figure
from .keyed import ByKey
from .querydiff import QueryDiff
from .serial import OMIT_NONE, from_data, to_data

__all__ = [
    "MIB",
    "AgreementData",
    "CacheData",
    "ChunkHit",
    "CostData",
    "GateDelta",
    "GateOutcome",
    "GateStatus",
    "IndexData",
    "JudgeData",
    "LoadData",
    "LatencyData",
    "LiftData",
    "MetricData",
    "RerankData",
    "ResourcesData",
    "ResultData",
    "StressData",
    "TokensData",
    "as_result",
    "storage_figures",
]


@dataclass(frozen=True)
class MetricData:
    """A metric's mean over the judged queries with its bootstrap interval (``Estimate``)."""

    value: float | None = None
    low: float | None = None
    high: float | None = None
    n: int = 0

    @classmethod
    def of(cls, estimate: Any) -> MetricData:
        """The record of an ``Estimate`` (anything with the same ``to_dict()``)."""
        return from_data(cls, estimate.to_dict())


@dataclass(frozen=True)
class LatencyData:
    """Per-query latency figures (``LatencyStats``); ``per_query_ms`` by query id, kept in a
    record (the latency gate compares its distribution), absent from a bare summary (records of
    older versions kept a list in query order: :meth:`by_query` reads either)."""

    n: int = 0
    queries: int = 0
    passes: int = 0
    mean_ms: float | None = None
    p50_ms: float | None = None
    p90_ms: float | None = None
    p95_ms: float | None = None
    p99_ms: float | None = None
    max_ms: float | None = None
    qps: float | None = None
    p50_interval_ms: tuple[float | None, ...] = ()
    p95_interval_ms: tuple[float | None, ...] = ()
    per_query_ms: dict[str, float] | list[float] | None = field(default=None, metadata=OMIT_NONE)

    def by_query(self, order: Sequence[str] = ()) -> dict[str, float]:
        """The timed queries' latencies by id (an older record's list is read in ``order``,
        the dataset's query order, when the lengths agree; else nothing is known by id)."""
        found = self.per_query_ms
        if isinstance(found, Mapping):
            return dict(found)
        if isinstance(found, list) and order and len(found) == len(order):
            return dict(zip(order, found, strict=True))
        return {}

    def interval(self, key: str) -> tuple[float, float] | None:
        """``p50_ms``'s or ``p95_ms``'s interval (None when not measured)."""
        found = getattr(self, key.replace("_ms", "_interval_ms"), None)
        if not found or len(found) != 2 or any(missing(v) for v in found):
            return None
        return float(found[0]), float(found[1])


@dataclass(frozen=True)
class CacheData:
    """Embedding-cache lookups of one run."""

    hits: int = 0
    misses: int = 0
    hit_rate: float | None = None


@dataclass(frozen=True)
class TokensData(ByKey):
    """Tokens of the documents and queries as sent (``estimated``: not the model's tokenizer);
    ``RetrievalResult.tokens`` (read by key too: ``tokens["documents"]``)."""

    documents: int | None = None
    queries: int | None = None
    estimated: bool | None = None


@dataclass(frozen=True)
class CostData(ByKey):
    """Estimated USD to embed the corpus and queries once at the list price;
    ``RetrievalResult.cost`` (read by key too: ``cost["usd"]``)."""

    price_per_1m_tokens: float | None = None
    usd: float | None = None


@dataclass(frozen=True)
class ResourcesData(ByKey):
    """Index size, vector dimension, load and batch times, tokens/s and the GPU memory peak;
    ``RetrievalResult.resources`` (read by key too: ``resources["dimension"]``)."""

    dimension: int | None = None
    index_bytes: int | None = None
    bytes_per_document: float | None = None
    #: the float32 bytes of this run's document vectors the embedding cache holds
    cache_bytes: int | None = None
    model_load_s: float | None = None
    document_batches: int = 0
    cold_batch_ms: float | None = None
    warm_batch_p50_ms: float | None = None
    warm_batch_p95_ms: float | None = None
    tokens_per_s: float | None = None
    vram_peak_mb: float | None = None
    vram_source: str | None = None
    device: str | None = None


@dataclass(frozen=True)
class ChunkHit:
    """A retrieved document on a chunked dataset: its score and the chunk that won it (the
    first ones and the relevant ones keep the start of the chunk's ``text``)."""

    doc_id: str
    score: float
    chunk_id: str
    start: int
    end: int
    #: the printed label of the PDF page the chunk starts on (Chunk.page: "iv", "12")
    page: str | None = field(default=None, metadata=OMIT_NONE)
    text: str | None = field(default=None, metadata=OMIT_NONE)


@dataclass(frozen=True)
class StressData:
    """A stress point's workload, what the workload measured (``info``) and, when the clean
    run was paired, the clean figures and the paired differences of the headline metrics."""

    kind: str = ""
    id: str = ""
    spec: str = ""
    params: dict[str, Any] = field(default_factory=dict)
    seeds: tuple[int, ...] = ()
    info: dict[str, Any] = field(default_factory=dict)
    clean: dict[str, MetricData] | None = field(default=None, metadata=OMIT_NONE)
    delta: dict[str, MetricData] | None = field(default=None, metadata=OMIT_NONE)


@dataclass(frozen=True)
class LoadData:
    """The index's queries (or a provider's query embedding) at one concurrency level
    (``--embedbench-concurrency``): requests answered, wall-clock seconds, queries per second
    and the request latency percentiles."""

    concurrency: int = 1
    requests: int = 0
    seconds: float | None = None
    qps: float | None = None
    p50_ms: float | None = None
    p95_ms: float | None = None
    p99_ms: float | None = None


@dataclass(frozen=True)
class IndexData:
    """What the index axis measured (``tests[].result.index``): the index spec, what the
    engine built, its build time, size and own query latency, the neighbour recall of its
    top k against the exact top k, and per metric the paired delta against exact search on
    the same queries, with its interval."""

    spec: str = ""
    engine: str = ""
    description: str = ""
    deterministic: bool = True
    note: str = ""
    build_s: float | None = None
    bytes: int | None = None
    #: ``bytes`` over the documents (or chunks) the index holds
    bytes_per_document: float | None = None
    p50_ms: float | None = None
    p95_ms: float | None = None
    qps: float | None = None
    neighbour_recall: dict[str, MetricData] = field(default_factory=dict)
    delta: dict[str, MetricData] = field(default_factory=dict)
    #: one level per concurrency of ``--embedbench-concurrency`` (absent without it)
    load: tuple[LoadData, ...] | None = field(default=None, metadata=OMIT_NONE)


@dataclass(frozen=True)
class LanguageData:
    """One language of a dataset in several languages: its judged queries, the documents
    they search, and its metrics (means over its queries, with their intervals)."""

    queries: int = 0
    documents: int = 0
    metrics: dict[str, MetricData] = field(default_factory=dict)

    def metric_value(self, name: str) -> float | None:
        """``name``'s mean (None when not measured or not finite)."""
        found = self.metrics.get(name)
        return None if found is None or missing(found.value) else found.value


@dataclass(frozen=True)
class LiftData:
    """A reranker's lift on one metric: the paired mean difference (reranked minus first
    stage) on the same queries, its bootstrap interval and its two-sided bootstrap p-value."""

    value: float | None = None
    low: float | None = None
    high: float | None = None
    n: int = 0
    p_value: float | None = None


@dataclass(frozen=True)
class RerankData:
    """What the reranking axis measured (``tests[].result.rerank``): the reranker (its spec
    with the depth, its test-id name, what it is), the first stage's metrics on the same
    queries and the lift over them, the ceiling (the first stage's recall at the depth: the
    share of relevant documents the reranker was handed) and the share of it the reranked top
    ``realised_at`` holds, the reranking's own latency per query, its tokens and cost per
    1,000 queries; in a record, the first stage's per-query scores and top documents too, for
    the per-query diffs between the stages."""

    spec: str = ""
    name: str = ""
    depth: int = 0
    description: str = ""
    stage1_model: str = ""
    stage1: dict[str, MetricData] = field(default_factory=dict)
    lift: dict[str, LiftData] = field(default_factory=dict)
    ceiling: MetricData | None = None
    realised: float | None = None
    realised_at: int = 0
    p50_ms: float | None = None
    p95_ms: float | None = None
    mean_ms: float | None = None
    load_s: float | None = None
    tokens: int | None = None
    tokens_per_1k_queries: float | None = None
    cost_per_1k_queries: float | None = None
    #: what a hosted reranker was billed by besides tokens (``"search units"``, Bedrock's
    #: ``"queries"``), over every query and per 1,000 queries
    unit: str | None = field(default=None, metadata=OMIT_NONE)
    units: float | None = field(default=None, metadata=OMIT_NONE)
    units_per_1k_queries: float | None = field(default=None, metadata=OMIT_NONE)
    #: what the reranker says of itself: weights, the prompt and its hash, requests, retries
    info: dict[str, Any] | None = field(default=None, metadata=OMIT_NONE)
    stage1_per_query: dict[str, dict[str, float]] | None = field(default=None, metadata=OMIT_NONE)
    stage1_retrieved: dict[str, tuple[str, ...]] | None = field(default=None, metadata=OMIT_NONE)


@dataclass(frozen=True)
class AgreementData(ByKey):
    """The judge against the humans on a seeded sample of human-judged pairs: Cohen's kappa
    binary (relevant: human grade >= 1, judge grade >= 2, the rule of the metrics on human +
    LLM grades) and graded (linear weights, the judge's grade less one), the confusion counts
    by ``"human H / judge J"`` (the judge's own grade), whether agreement is too low to trust
    (``low``: binary kappa below 0.4, or undefined) and what computed kappa (``method``)."""

    pairs: int = 0
    kappa_binary: float | None = None
    kappa_graded: float | None = None
    confusion: dict[str, int] = field(default_factory=dict)
    low: bool = True
    method: str = ""


@dataclass(frozen=True)
class JudgeData(ByKey):
    """An LLM judge's figures on one result (``tests[].result.judge``).

    ``holes``: the unjudged (query, document) pairs of the top ``depth``; ``llm_grades``: how
    many of them an LLM grade filled; ``ungraded``: the pairs asked of the judge (holes and
    agreement sample) whose verdict in the judgments file holds no grade (an answer without
    one, a refusal: recorded, never asked again, counted unjudged); ``judged_before`` /
    ``judged_after``: judged@depth on the human qrels and on human + LLM grades; ``metrics``:
    every metric the result reports, on human + LLM grades (the official ones stay on the
    human qrels); ``asked`` / ``replayed``: verdicts asked now (with or without a grade) and
    read from the judgments ``file``; ``requests`` (every request sent, retries and refused
    structured-output forms included) and ``requests_per_query``; ``tokens`` and
    ``cost_usd`` (None when no price is set: ``price_known`` false); ``failures`` by reason
    with the server's words (``server_errors``) and up to three ``no_grade_answers``;
    ``error``: why the judge stopped (an unreachable server, a missing model, a refused key),
    None when it finished: the official metrics stand either way."""

    judge_id: str = ""
    model: str = ""
    server_model: tuple[str, ...] = ()
    prompt_sha256: str = ""
    file: str = ""
    depth: int = 0
    holes: int = 0
    llm_grades: int = 0
    judged_before: float | None = None
    judged_after: float | None = None
    metrics: dict[str, MetricData] = field(default_factory=dict)
    agreement: AgreementData = field(default_factory=AgreementData)
    asked: int = 0
    replayed: int = 0
    ungraded: int = 0
    requests: int = 0
    requests_per_query: float | None = None
    tokens: int = 0
    price_known: bool = False
    cost_usd: float | None = None
    failures: dict[str, int] = field(default_factory=dict)
    server_errors: dict[str, int] = field(default_factory=dict)
    no_grade_answers: tuple[str, ...] = ()
    error: str | None = field(default=None, metadata=OMIT_NONE)


@dataclass(frozen=True)
class ResultData:
    """One model's results on one dataset, as a record keeps them.

    The per-query detail (``per_query`` scores by metric and query, ``query_texts``, the top
    ``retrieved`` ids, the ``relevant`` judgements and, on a chunked dataset, the
    ``winning_chunks``) is there in a record and absent from a bare summary."""

    model: str = ""
    spec: str = ""
    dataset: str = ""
    dataset_fingerprint: str = ""
    queries: int = 0
    documents: int = 0
    k: tuple[int, ...] = ()
    metrics: dict[str, MetricData] = field(default_factory=dict)
    latency: LatencyData = field(default_factory=LatencyData)
    cold_query_ms: float | None = None
    timings: dict[str, float] = field(default_factory=dict)
    documents_per_s: float | None = None
    peak_rss_mb: float | None = None
    added_rss_mb: float | None = None
    process_peak_rss_mb: float | None = None
    start_rss_mb: float | None = None
    environment: dict[str, Any] = field(default_factory=dict)
    cache: CacheData = field(default_factory=CacheData)
    query_cache: CacheData = field(default_factory=CacheData)
    tokens: TokensData = field(default_factory=TokensData)
    cost: CostData = field(default_factory=CostData)
    model_info: dict[str, Any] = field(default_factory=dict)
    resources: ResourcesData = field(default_factory=ResourcesData)
    seed: int | None = None
    chunking: dict[str, Any] | None = field(default=None, metadata=OMIT_NONE)
    cutoffs: dict[str, Any] | None = field(default=None, metadata=OMIT_NONE)
    stress: StressData | None = field(default=None, metadata=OMIT_NONE)
    per_query: dict[str, dict[str, float]] | None = field(default=None, metadata=OMIT_NONE)
    query_texts: dict[str, str] | None = field(default=None, metadata=OMIT_NONE)
    retrieved: dict[str, tuple[str, ...]] | None = field(default=None, metadata=OMIT_NONE)
    relevant: dict[str, dict[str, int]] | None = field(default=None, metadata=OMIT_NONE)
    winning_chunks: dict[str, tuple[ChunkHit, ...]] | None = field(default=None, metadata=OMIT_NONE)
    #: the index axis's figures (absent when the test has no ``indexes=``)
    index: IndexData | None = field(default=None, metadata=OMIT_NONE)
    #: the provider's query embedding against its loopback server, one level per concurrency
    #: of ``--embedbench-concurrency`` (absent without it, or without such a server)
    query_load: tuple[LoadData, ...] | None = field(default=None, metadata=OMIT_NONE)
    #: a dataset in several languages: each language's figures (``metrics`` are then their
    #: macro average), and each query's language, which the paired comparisons and the gate
    #: resample within (absent for a dataset in one language)
    languages: dict[str, LanguageData] | None = field(default=None, metadata=OMIT_NONE)
    query_languages: dict[str, str] | None = field(default=None, metadata=OMIT_NONE)
    #: what the LLM judge added (absent without ``--embedbench-judge``): judged@k before and
    #: after, the metrics on human + LLM grades (``metrics``), the agreement with the humans,
    #: the requests and the verdicts replayed
    judge: JudgeData | None = field(default=None, metadata=OMIT_NONE)

    def strata(self, query_ids: Sequence[str]) -> list[str] | None:
        """The language of each of ``query_ids`` (None: a dataset in one language), for a
        paired comparison that resamples within languages."""
        if not self.query_languages:
            return None
        return [self.query_languages.get(q, "") for q in query_ids]

    #: the reranking axis's figures (absent when the test has no ``rerankers=``, or for
    #: the first stage alone, reranker ``none``)
    rerank: RerankData | None = field(default=None, metadata=OMIT_NONE)

    def to_dict(self) -> dict[str, Any]:
        """The JSON report's form (non-finite numbers as null)."""
        data: dict[str, Any] = to_data(self)
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], *, at: str = "result") -> ResultData:
        """The result of :meth:`to_dict`'s data (or of an older report: a missing key takes its
        default, an unknown one is ignored, and the shapes older versions wrote are read); a
        value of the wrong shape is a RecordError naming its key path below ``at``."""
        if not isinstance(data, Mapping):
            return from_data(cls, data, at=at)  # the error: expected an object
        return from_data(cls, _upgraded(data), at=at)

    def metric_value(self, name: str) -> float | None:
        """``name``'s mean (None when not measured or not finite)."""
        found = self.metrics.get(name)
        return None if found is None or missing(found.value) else found.value

    @property
    def storage(self) -> dict[str, float | None]:
        """:func:`storage_figures` of this result."""
        return storage_figures(self.resources, self.documents_per_s)

    def scores(self, metric: str) -> dict[str, float]:
        """``metric`` per query id (empty when the detail was not kept)."""
        return dict((self.per_query or {}).get(metric) or {})


def storage_figures(
    resources: ResourcesData, documents_per_s: float | None
) -> dict[str, float | None]:
    """The storage and indexing figures by their gate name (:data:`~.figures.STORAGE`; None:
    not measured), each read as the registry says: ``bytes_per_doc`` (the search index's
    bytes over the documents), ``index_mb`` (those bytes in MiB), ``cache_mb`` (the float32
    bytes of the run's document vectors the embedding cache holds, in MiB) and ``docs_per_s``
    (documents embedded per second)."""
    result = ResultData(resources=resources, documents_per_s=documents_per_s)
    out: dict[str, float | None] = {}
    for name in STORAGE:
        found = figure(name)
        value = found.get(result) if found is not None else None
        out[name] = None if missing(value) else value
    return out


def _upgraded(data: Mapping[str, Any]) -> Mapping[str, Any]:
    """Older reports' shapes in today's: a winning chunk per query instead of one per retrieved
    document is dropped (which documents it won is not known)."""
    chunks = data.get("winning_chunks")
    if not isinstance(chunks, Mapping) or all(isinstance(v, list) for v in chunks.values()):
        return data
    return {**data, "winning_chunks": {q: v for q, v in chunks.items() if isinstance(v, list)}}


def as_result(
    value: ResultData | Mapping[str, Any] | None, *, at: str = "result"
) -> ResultData | None:
    """``value`` as :class:`ResultData` (a mapping is read with :meth:`ResultData.from_dict`)."""
    if value is None or isinstance(value, ResultData):
        return value
    return ResultData.from_dict(value, at=at)


@dataclass(frozen=True)
class GateDelta:
    """The gate's figures for one gated metric (a paired bootstrap of the per-query scores
    against the baseline's) or for ``latency.p95_ms`` (a Mann-Whitney U test's ``p_value``);
    the fields the other kind has no value for are absent from the JSON."""

    baseline: float | None = None
    current: float | None = None
    regressed: bool = False
    difference: float | None = field(default=None, metadata=OMIT_NONE)
    low: float | None = field(default=None, metadata=OMIT_NONE)
    high: float | None = field(default=None, metadata=OMIT_NONE)
    shared_queries: int | None = field(default=None, metadata=OMIT_NONE)
    significant: bool | None = field(default=None, metadata=OMIT_NONE)
    inconclusive: bool | None = field(default=None, metadata=OMIT_NONE)
    minimum_detectable: float | None = field(default=None, metadata=OMIT_NONE)
    #: the latency test's p-value (absent when the baseline kept no per-query latencies)
    p_value: float | None = field(default=None, metadata=OMIT_NONE)


class GateStatus(str, enum.Enum):
    """What the baseline gate decided for one test (a ``str``: the JSON keeps the plain name,
    and ``status == "passed"`` still holds)."""

    MISSING = "missing"  # no baseline entry: nothing to gate against
    PASSED = "passed"
    INCONCLUSIVE = "inconclusive"  # a material drop the queries cannot tell from noise
    REGRESSED = "regressed"
    STALE = "stale"  # too few of the baseline's queries remain
    UNKNOWN = ""  # not said: an outcome read from data without its status (built by hand)

    def __str__(self) -> str:
        return self.value


@dataclass
class GateOutcome:
    """What the baseline gate found for one test: its status, the failure lines and Δ figures.

    ``warnings`` are lines the terminal prints although the test passes (an inconclusive drop
    under ``inconclusive: warn``); ``changes`` name what differs from the baseline's inputs;
    ``queries`` is the per-query diff on the first gated metric, which the summary reads.
    A status given as its name (``GateOutcome("passed")``) is read into :class:`GateStatus`.
    """

    status: GateStatus
    failures: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    changes: list[str] = field(default_factory=list)
    deltas: dict[str, GateDelta] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    queries: QueryDiff | None = field(default=None, metadata=OMIT_NONE)

    def __post_init__(self) -> None:
        self.status = GateStatus(self.status)

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = to_data(self)
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], *, at: str = "baseline") -> GateOutcome:
        if not isinstance(data, Mapping):
            return from_data(cls, data, at=at)  # the error: expected an object
        outcome = from_data(cls, {"status": GateStatus.UNKNOWN.value, **data}, at=at)
        # lists stay lists (the gate appends to them)
        outcome.failures, outcome.warnings = list(outcome.failures), list(outcome.warnings)
        outcome.changes, outcome.notes = list(outcome.changes), list(outcome.notes)
        return outcome


def as_outcome(
    value: GateOutcome | Mapping[str, Any] | None, *, at: str = "baseline"
) -> GateOutcome | None:
    """``value`` as a :class:`GateOutcome` (a mapping is read with ``from_dict``)."""
    if value is None or isinstance(value, GateOutcome):
        return value
    return GateOutcome.from_dict(value, at=at)

"""The one registry of the figures a result has besides its metrics: each one's name, where it
is read from, its unit and scale, which way is better and whether it is noisy.

Every reader takes its figures from here: the summary's table rows and best-in-column marks,
the CSV's and Markdown's columns, the HTML report's resource tables, ``--embedbench-columns``,
the storage and indexing threshold keys, the baseline gate's figures and directions, and a
result's :attr:`~.resultdata.ResultData.storage`. A figure has one :attr:`Figure.key` (the
summary's, the CSV's) and, where users already write another, that name in
:attr:`Figure.aliases` (``bytes_per_doc`` for ``bytes_per_document``: a threshold, gate and
baseline key), accepted wherever the key is. Usage::

    figure("bytes_per_doc").key                  # 'bytes_per_document'
    figure("index.qps").higher_is_better, figure("index.qps").noisy   # True, True
    [f.key for f in FIGURES if f.unit == "ms"]   # the latency and batch times

Adding a figure is one :class:`Figure` line in :data:`FIGURES` (or :data:`INDEX_FIGURES` for the
index axis); a storage figure the baseline gates and thresholds check also goes into
:data:`STORAGE`. This module imports nothing of the package, so every floor can read it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, is_dataclass, replace
from typing import Any

__all__ = [
    "FIGURES",
    "INDEX_FIGURES",
    "JUDGED",
    "JUDGED_FLOOR",
    "LANGUAGE_METRICS",
    "LOAD_FIGURES",
    "MACRO",
    "MIB",
    "NOISY",
    "RERANK_FIGURES",
    "RERANK_GATED",
    "RERANK_METRICS",
    "STORAGE",
    "Figure",
    "figure",
    "gate_keys",
    "path_value",
]

#: bytes in the MB of the storage figures (``index_mb``, ``cache_mb``): a MiB, as in
#: ``peak_rss_mb``
MIB = 1024 * 1024


def _part(value: Any, name: str) -> Any:
    """A field of a typed result part (a dataclass), or a key of its JSON form."""
    if isinstance(value, Mapping):
        return value.get(name)
    if is_dataclass(value):
        return getattr(value, name, None)
    return None


def path_value(result: Any, *path: str) -> Any:
    """The value at ``path`` in a result (``("latency", "p95_ms")``); None when absent."""
    value: Any = result
    for part in path:
        value = _part(value, part)
        if value is None:
            return None
    return value


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


@dataclass(frozen=True)
class Figure:
    """One figure of a result: its key, its table header and number format, where it is read
    from (``path`` into a ``ResultData`` or its JSON, times ``scale``), its unit, which way is
    better (None: neither, no best is marked) and whether it is noisy (a timing, a rate or a
    memory peak, which vary from run to run on the same inputs: the gate compares those only on
    the baseline's machine and only when named)."""

    key: str
    header: str
    path: tuple[str, ...]
    fmt: str
    higher_is_better: bool | None = None
    scale: float = 1.0
    unit: str = ""
    noisy: bool = False
    #: other names of the figure that users write (threshold and gate keys, columns)
    aliases: tuple[str, ...] = ()
    #: how a table shows a figure without a value
    missing: str = "-"

    @property
    def names(self) -> tuple[str, ...]:
        """Every name of the figure: its key, then its aliases."""
        return (self.key, *self.aliases)

    def get(self, result: Any) -> float | None:
        """The figure of ``result`` (a ``ResultData`` or its JSON) in its unit; None when absent
        (NaN stays NaN: the CSV keeps what was measured)."""
        value = _number(path_value(result, *self.path))
        return None if value is None else value * self.scale

    def text(self, value: float | None) -> str:
        """``value`` in the figure's number format (its ``missing`` text when there is none)."""
        if value is None or math.isnan(value):
            return self.missing
        return self.fmt.format(value) if math.isfinite(value) else "inf"


def _timing(key: str, header: str, path: tuple[str, ...], fmt: str, unit: str) -> Figure:
    """A time: lower is better, and noisy."""
    return Figure(key, header, path, fmt, False, unit=unit, noisy=True)


#: every figure of a result besides the metrics, in table order
FIGURES: tuple[Figure, ...] = (
    _timing("p50_ms", "p50 ms", ("latency", "p50_ms"), "{:.1f}", "ms"),
    _timing("p90_ms", "p90 ms", ("latency", "p90_ms"), "{:.1f}", "ms"),
    _timing("p95_ms", "p95 ms", ("latency", "p95_ms"), "{:.1f}", "ms"),
    _timing("p99_ms", "p99 ms", ("latency", "p99_ms"), "{:.1f}", "ms"),
    _timing("cold_query_ms", "cold query ms", ("cold_query_ms",), "{:.1f}", "ms"),
    Figure(
        "queries_per_s", "queries/s", ("latency", "qps"), "{:.1f}", True, unit="1/s", noisy=True
    ),
    Figure(
        "documents_per_s",
        "docs/s",
        ("documents_per_s",),
        "{:.0f}",
        True,
        unit="1/s",
        noisy=True,
        aliases=("docs_per_s",),
    ),
    Figure(
        "tokens_per_s",
        "tokens/s",
        ("resources", "tokens_per_s"),
        "{:.0f}",
        True,
        unit="1/s",
        noisy=True,
    ),
    _timing("model_load_s", "load s", ("resources", "model_load_s"), "{:.2f}", "s"),
    _timing("document_embedding_s", "embed s", ("timings", "document_embedding_s"), "{:.2f}", "s"),
    _timing("index_build_s", "index s", ("timings", "index_build_s"), "{:.3f}", "s"),
    _timing("cold_batch_ms", "cold batch ms", ("resources", "cold_batch_ms"), "{:.1f}", "ms"),
    _timing(
        "warm_batch_p50_ms", "warm batch ms", ("resources", "warm_batch_p50_ms"), "{:.1f}", "ms"
    ),
    Figure("dimension", "dim", ("resources", "dimension"), "{:.0f}"),
    Figure("index_mb", "index MB", ("resources", "index_bytes"), "{:.3f}", False, 1 / MIB, "MiB"),
    Figure(
        "bytes_per_document",
        "bytes/doc",
        ("resources", "bytes_per_document"),
        "{:.0f}",
        False,
        unit="bytes",
        aliases=("bytes_per_doc",),
    ),
    Figure("cache_mb", "cache MB", ("resources", "cache_bytes"), "{:.3f}", False, 1 / MIB, "MiB"),
    # what the model added to the process (its load included), and the process's peak
    Figure("added_rss_mb", "+RSS MB", ("added_rss_mb",), "{:.0f}", False, unit="MiB", noisy=True),
    Figure("peak_rss_mb", "RSS peak MB", ("peak_rss_mb",), "{:.0f}", False, unit="MiB", noisy=True),
    Figure(
        "vram_peak_mb",
        "VRAM MB",
        ("resources", "vram_peak_mb"),
        "{:.0f}",
        False,
        unit="MiB",
        noisy=True,
        missing="n/a",
    ),
    Figure("tokens_documents", "doc tokens", ("tokens", "documents"), "{:.0f}", unit="tokens"),
    Figure("tokens_queries", "query tokens", ("tokens", "queries"), "{:.0f}", unit="tokens"),
    Figure("cost_usd", "cost $", ("cost", "usd"), "{:.6f}", False, unit="USD"),
    Figure("cache_hit_rate", "cache hits", ("cache", "hit_rate"), "{:.0%}", unit="share"),
)

#: the index axis's own figures (``tests[].result.index``), by their threshold and gate key
INDEX_FIGURES: tuple[Figure, ...] = (
    Figure("index.bytes", "size", ("index", "bytes"), "{:.0f}", False, unit="bytes"),
    Figure(
        "index.bytes_per_document",
        "bytes/doc",
        ("index", "bytes_per_document"),
        "{:,.1f}",
        False,
        unit="bytes",
        aliases=("index.bytes_per_doc",),
    ),
    _timing("index.build_s", "build s", ("index", "build_s"), "{:.3f}", "s"),
    Figure("index.qps", "QPS", ("index", "qps"), "{:,.0f}", True, unit="1/s", noisy=True),
    _timing("index.p50_ms", "p50 ms", ("index", "p50_ms"), "{:.3f}", "ms"),
    _timing("index.p95_ms", "p95 ms", ("index", "p95_ms"), "{:.3f}", "ms"),
)

#: judged@10, the share of each top 10 that the qrels judge: a metric (evaluation/metrics.py
#: computes it, every writer has it with the other metrics), which the headline tables of the
#: terminal, HTML, Markdown and job summary add, with a notice, for a dataset where a model's
#: is below :data:`JUDGED_FLOOR`; a threshold and baseline gate key as any metric
JUDGED = Figure(
    "judged@10", "judged@10", ("metrics", "judged@10", "value"), "{:.2f}", True, unit="share"
)
#: the judged@10 below which the reports warn that the metrics may understate unjudged but
#: relevant documents
JUDGED_FLOOR = 0.9
#: the metrics the per-language table of a dataset in several languages shows (each language's
#: mean with its interval, and the macro average over the languages), those the run computed
LANGUAGE_METRICS: tuple[str, ...] = ("ndcg@10", "mrr@10", "recall@10", "recall@100")
#: the name of the macro average's row in the per-language tables
MACRO = "macro"
#: the figures of one concurrency level of an index's queries under load
#: (``tests[].result.index.load[]``, read from a :class:`~.resultdata.LoadData`)
LOAD_FIGURES: tuple[Figure, ...] = (
    Figure("load.qps", "QPS", ("qps",), "{:,.0f}", True, unit="1/s", noisy=True),
    _timing("load.p50_ms", "p50 ms", ("p50_ms",), "{:.3f}", "ms"),
    _timing("load.p95_ms", "p95 ms", ("p95_ms",), "{:.3f}", "ms"),
    _timing("load.p99_ms", "p99 ms", ("p99_ms",), "{:.3f}", "ms"),
)

#: the reranking axis's own figures (``tests[].result.rerank``), by their gate and column key:
#: the reranking's latency per query (what it adds to the first stage's), its tokens and its
#: cost per 1,000 queries, the ceiling (the first stage's recall at the depth) and the share
#: of it the reranked top realises. ``lift.<metric>`` (the paired lift over the first stage,
#: higher is better, not noisy) is a family: :func:`figure` builds it
RERANK_FIGURES: tuple[Figure, ...] = (
    _timing("rerank.p50_ms", "+p50 ms", ("rerank", "p50_ms"), "{:.2f}", "ms"),
    _timing("rerank.p95_ms", "+p95 ms", ("rerank", "p95_ms"), "{:.2f}", "ms"),
    Figure(
        "rerank.tokens_per_1k_queries",
        "tokens/1k q",
        ("rerank", "tokens_per_1k_queries"),
        "{:,.0f}",
        False,
        unit="tokens",
    ),
    Figure(
        "rerank.cost_per_1k_queries",
        "$/1k q",
        ("rerank", "cost_per_1k_queries"),
        "{:.4f}",
        False,
        unit="USD",
    ),
    Figure("rerank.ceiling", "ceiling", ("rerank", "ceiling", "value"), "{:.4f}", True),
    Figure("rerank.realised", "realised", ("rerank", "realised"), "{:.0%}", True, unit="share"),
)
#: the metrics the stages tables show per stage and as lifts, those the run computed
RERANK_METRICS: tuple[str, ...] = ("ndcg@10", "mrr@10", "recall@10")

#: the reranking figures the baseline gate compares when named (``lift.<metric>``, by default
#: ``lift.ndcg@10``, besides): the reranking's own latency, noisy
RERANK_GATED: tuple[str, ...] = ("rerank.p50_ms", "rerank.p95_ms")

#: the storage and indexing figures, by the name the thresholds, the baseline gate, a baseline
#: entry's ``figures`` and :class:`~pytest_embedbench.result.RetrievalResult` use
#: (``retrieval.bytes_per_doc``), in the order their messages list them
STORAGE: tuple[str, ...] = ("bytes_per_doc", "index_mb", "cache_mb", "docs_per_s")


def _family(key: str) -> Figure | None:
    """A figure with a cut-off, a metric or a level in its name: ``index.neighbour_recall@K``
    (the share of exact search's top K the index returns) or ``index.delta.<metric>`` (the
    index's metric minus exact search's), both higher is better and neither noisy (the same
    vectors give the same figure); ``index.load.c<N>.<qps|p50_ms|p95_ms|p99_ms>``, the queries
    under N threads (``--embedbench-concurrency``), and ``query_load.c<N>.<...>``, a
    provider's query embedding under N threads, both noisy."""
    name = key.removeprefix("query_" if key.startswith("query_load.") else "index.")
    if name.startswith("neighbour_recall@"):
        k = name.partition("@")[2]
        path = ("index", "neighbour_recall", name, "value")
        return Figure(key, f"nR@{k}", path, "{:.4f}", True, unit="share")
    if name.startswith("delta."):
        metric = name.removeprefix("delta.")
        return Figure(key, f"Δ {metric}", ("index", "delta", metric, "value"), "{:+.4f}", True)
    if key.startswith("lift."):
        metric = key.removeprefix("lift.")
        return Figure(key, f"lift {metric}", ("rerank", "lift", metric, "value"), "{:+.4f}", True)
    level, _, which = name.removeprefix("load.c").partition(".")
    base = _LOAD.get(f"load.{which}")
    if name.startswith("load.c") and level.isdigit() and int(level) >= 1 and base is not None:
        # one concurrency level's figure (``index.load.c4.qps``): noisy, as every timing; its
        # value is read by level from ``index.load`` (a list), not by a path
        return replace(base, key=key, header=f"{base.header} @{int(level)}", path=())
    return None


_LOAD: dict[str, Figure] = {f.key: f for f in LOAD_FIGURES}
_BY_NAME: dict[str, Figure] = {
    name: f for f in (*FIGURES, *INDEX_FIGURES, *RERANK_FIGURES) for name in f.names
}


def figure(name: str) -> Figure | None:
    """The figure called ``name`` (its key or an alias; ``index.neighbour_recall@K``,
    ``index.delta.<metric>`` and ``lift.<metric>`` too), None when there is none (a metric,
    an unknown name)."""
    found = _BY_NAME.get(name)
    if found is None and name.startswith(("index.", "lift.", "query_load.")):
        return _family(name)
    return found


def gate_keys() -> tuple[str, ...]:
    """The plain figures the baseline gate can compare, by gate key: :data:`STORAGE`, the
    index axis's (``index.neighbour_recall@K`` and ``index.delta.<metric>`` besides), then the
    reranking's latency (``lift.<metric>`` besides)."""
    return (*STORAGE, *(f.key for f in INDEX_FIGURES), *RERANK_GATED)


#: the gate figures that are timings or rates (noisy): compared only on the baseline's machine
NOISY: frozenset[str] = frozenset(k for k in gate_keys() if _BY_NAME[k].noisy)

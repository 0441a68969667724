r"""The figures and columns a report can show: :data:`FIGURES` (every summary figure besides
the metrics: the CSV's columns, the Markdown table's and the HTML report's resource table) and
the terminal table's :class:`Column`\ s, with the names ``--embedbench-columns`` accepts.

One list in one module that imports no report writer, so the option parser can check a column
name without importing the writers (and the writers all read the same list).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, is_dataclass
from typing import Any

from ...core.exceptions import MetricError
from ...evaluation.metrics import parse_metric

__all__ = [
    "FIGURES",
    "Column",
    "Figure",
    "column_names",
    "default_columns",
    "direction",
    "latency_keys",
    "metric_names",
    "path_value",
    "resolve_column",
]


_FAMILY_ORDER = ("ndcg", "recall", "mrr", "precision", "hit", "map")


def metric_names(results: Sequence[Any]) -> list[str]:
    """The metrics any of ``results`` (``ResultData``, or a JSON report's result dicts) has, by
    family (nDCG, recall, MRR ...) then cut-off."""
    names = {name for r in results if r for name in (_part(r, "metrics") or {})}

    def order(name: str) -> tuple[int, int, str]:
        family, _, k = name.partition("@")
        rank = _FAMILY_ORDER.index(family) if family in _FAMILY_ORDER else len(_FAMILY_ORDER)
        return (rank, int(k) if k.isdigit() else 0, name)

    return sorted(names, key=order)


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
    """One summary figure of a result: its CSV key, its header, how to read it and which way
    is better (None: neither; no best is marked)."""

    key: str
    header: str
    path: tuple[str, ...]
    fmt: str
    higher_is_better: bool | None = None
    scale: float = 1.0

    def get(self, result: Any) -> float | None:
        value = _number(path_value(result, *self.path))
        return None if value is None else value * self.scale

    def text(self, value: float | None) -> str:
        if value is None or math.isnan(value):
            return "n/a" if self.key == "vram_peak_mb" else "-"
        return self.fmt.format(value) if math.isfinite(value) else "inf"


#: every summary figure besides the metrics, in table order
FIGURES: tuple[Figure, ...] = (
    Figure("p50_ms", "p50 ms", ("latency", "p50_ms"), "{:.1f}", False),
    Figure("p90_ms", "p90 ms", ("latency", "p90_ms"), "{:.1f}", False),
    Figure("p95_ms", "p95 ms", ("latency", "p95_ms"), "{:.1f}", False),
    Figure("p99_ms", "p99 ms", ("latency", "p99_ms"), "{:.1f}", False),
    Figure("cold_query_ms", "cold query ms", ("cold_query_ms",), "{:.1f}", False),
    Figure("queries_per_s", "queries/s", ("latency", "qps"), "{:.1f}", True),
    Figure("documents_per_s", "docs/s", ("documents_per_s",), "{:.0f}", True),
    Figure("tokens_per_s", "tokens/s", ("resources", "tokens_per_s"), "{:.0f}", True),
    Figure("model_load_s", "load s", ("resources", "model_load_s"), "{:.2f}", False),
    Figure("document_embedding_s", "embed s", ("timings", "document_embedding_s"), "{:.2f}", False),
    Figure("index_build_s", "index s", ("timings", "index_build_s"), "{:.3f}", False),
    Figure("cold_batch_ms", "cold batch ms", ("resources", "cold_batch_ms"), "{:.1f}", False),
    Figure(
        "warm_batch_p50_ms", "warm batch ms", ("resources", "warm_batch_p50_ms"), "{:.1f}", False
    ),
    Figure("dimension", "dim", ("resources", "dimension"), "{:.0f}"),
    Figure("index_mb", "index MB", ("resources", "index_bytes"), "{:.3f}", False, 1 / 1024**2),
    Figure("bytes_per_document", "bytes/doc", ("resources", "bytes_per_document"), "{:.0f}", False),
    Figure("cache_mb", "cache MB", ("resources", "cache_bytes"), "{:.3f}", False, 1 / 1024**2),
    Figure("added_rss_mb", "+RSS MB", ("added_rss_mb",), "{:.0f}", False),
    Figure("peak_rss_mb", "RSS peak MB", ("peak_rss_mb",), "{:.0f}", False),
    Figure("vram_peak_mb", "VRAM MB", ("resources", "vram_peak_mb"), "{:.0f}", False),
    Figure("tokens_documents", "doc tokens", ("tokens", "documents"), "{:.0f}"),
    Figure("tokens_queries", "query tokens", ("tokens", "queries"), "{:.0f}"),
    Figure("cost_usd", "cost $", ("cost", "usd"), "{:.6f}", False),
    Figure("cache_hit_rate", "cache hits", ("cache", "hit_rate"), "{:.0%}"),
)


@dataclass(frozen=True)
class Column:
    """A column of the terminal table: the summary figure it shows (a metric name or a
    :class:`Figure` key), its header, its number format and whether ``-q`` keeps it. The value
    and its best-in-column mark come from the summary's model rows."""

    key: str
    header: str
    fmt: str
    quiet: bool  # shown under -q


_COLUMNS: list[Column] = [
    Column("ndcg@10", "nDCG@10", "{:.4f}", True),
    Column("mrr@10", "MRR@10", "{:.4f}", False),
    Column("recall@10", "R@10", "{:.4f}", False),
    Column("recall@100", "R@100", "{:.4f}", True),
    Column("p50_ms", "p50 ms", "{:.1f}", False),
    Column("p95_ms", "p95 ms", "{:.1f}", True),
    Column("documents_per_s", "docs/s", "{:.0f}", False),
    # what the model added to the process (its load included), not the process's peak
    Column("added_rss_mb", "+RSS MB", "{:.0f}", False),
]


def direction(key: str) -> bool | None:
    """Which way a summary figure is better: True (higher) for every metric, a
    :class:`Figure`'s own direction, None (neither: no best is marked) for the others."""
    figure = next((f for f in FIGURES if f.key == key), None)
    return figure.higher_is_better if figure is not None else True


def latency_keys() -> frozenset[str]:
    """The keys of the columns whose figures come from the timed queries: the figures read
    from a result's ``latency`` block."""
    return frozenset(f.key for f in FIGURES if f.path[0] == "latency")


def _figure_columns() -> dict[str, Column]:
    """Every figure of the CSV (report/tabular.py) as a column ``--embedbench-columns`` can
    choose; the default table keeps :data:`_COLUMNS`."""
    return {f.key: Column(f.key, f.header, f.fmt, True) for f in FIGURES}


def column_names() -> list[str]:
    """The named columns ``--embedbench-columns`` accepts besides any metric (``ndcg@10``)."""
    return sorted({c.key for c in _COLUMNS} | set(_figure_columns()))


#: the names of the storage figures as threshold and gate keys (``bytes_per_doc``), for the
#: columns that show them
_ALIASES = {"bytes_per_doc": "bytes_per_document", "docs_per_s": "documents_per_s"}


def resolve_column(name: str) -> Column | None:
    """The column called ``name``: a default column, a figure (also by its threshold key,
    ``bytes_per_doc``), or any metric ``family@k``."""
    key = name.strip().lower()
    key = _ALIASES.get(key, key)
    for column in _COLUMNS:
        if column.key == key or column.header.lower() == key:
            return column
    figures = _figure_columns()
    if key in figures:
        return figures[key]
    try:
        metric = str(parse_metric(key))
    except MetricError:
        return None
    return Column(metric, metric, "{:.4f}", True)


def default_columns() -> list[Column]:
    """The terminal table's default columns, in order."""
    return list(_COLUMNS)

"""The index axis's sections as text tables (the terminal's and the Markdown's) and as CSV
rows: :func:`index_tables` formats the summary's :class:`~.index_summary.IndexSection`\\ s
cell by cell, so every writer shows the same figures."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ...records.figures import INDEX_FIGURES, LOAD_FIGURES, Figure, figure
from ...records.resultdata import LoadData
from ..summary.indexes import IndexRow, IndexSection, QueryLoadSection
from ..summary.values import Delta, Value
from .stress import TextTable, text_lines

__all__ = [
    "INDEX_LEGEND",
    "PER_DOC",
    "SIZE",
    "TIMED",
    "cell_text",
    "index_columns",
    "index_csv_rows",
    "index_figure",
    "index_tables",
    "level_cells",
    "LEVEL_HEADERS",
    "LOAD_LEGEND",
    "load_columns",
    "load_csv_rows",
    "load_tables",
    "QUERY_LOAD_LEGEND",
    "metric_label",
    "query_load_columns",
    "query_load_csv_rows",
    "query_load_tables",
    "render_indexes",
    "size_text",
]

#: the lines under an index table
INDEX_LEGEND = (
    "nR@k: share of the exact top k the index returns (ann-benchmarks' recall), 95% interval; "
    "Δ: the index's metric minus exact search's on the same queries (paired, 95% interval); "
    "p50/p95/QPS: the index's own search time per query vector, one at a time; "
    "size and bytes/doc: what the engine holds for the index (a database's table and index "
    "pages, a Qdrant shard's folder), so more than the vectors alone"
)


def cell_text(value: Value | None) -> str:
    """A metric with its interval: ``0.6457 [0.549, 0.745]`` (``-``: not computed); the index,
    language and stage tables' one form of it."""
    if value is None or value.value is None:
        return "-"
    if value.low is None or value.high is None:
        return f"{value.value:.4f}"
    return f"{value.value:.4f} [{value.low:.3f}, {value.high:.3f}]"


def _signed(delta: Delta | None) -> str:
    if delta is None or delta.difference is None:
        return "-"
    text = f"{delta.difference:+.4f}"
    if delta.low is not None and delta.high is not None:
        text += f" [{delta.low:+.3f}, {delta.high:+.3f}]"
    return text + (" *" if delta.significant else "")


#: the index's own figures the tables show beside its metric, read from the figure registry
#: (their headers and formats), in table order; its size (``index.bytes``) comes after them
TIMED: tuple[Figure, ...] = tuple(
    found
    for key in ("index.p50_ms", "index.p95_ms", "index.qps", "index.build_s")
    if (found := figure(key)) is not None
)
SIZE: Figure = next(f for f in INDEX_FIGURES if f.key == "index.bytes")
#: the size over the documents: what a width or precision (``+int8``) changes
PER_DOC: Figure = next(f for f in INDEX_FIGURES if f.key == "index.bytes_per_document")


def index_figure(row: IndexRow, found: Figure) -> float | None:
    """The value of index figure ``found`` (``index.p50_ms`` ...) in ``row``."""
    value: float | None = getattr(row, found.key.removeprefix("index."))
    return value


def _num(value: float | None, fmt: str) -> str:
    return "-" if value is None else fmt.format(value)


def size_text(n: int | None) -> str:
    """Bytes as KiB/MiB/GiB."""
    if n is None:
        return "-"
    size = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{n} B"  # pragma: no cover


def metric_label(name: str) -> str:
    family, _, k = name.partition("@")
    labels = {"ndcg": "nDCG", "mrr": "MRR", "recall": "R", "precision": "P", "hit": "Hit"}
    return f"{labels.get(family, family)}@{k}" if k else name


def index_tables(sections: Sequence[IndexSection]) -> list[TextTable]:
    """One table per dataset: test, model, index, metric, Δ vs exact, nR@k, latency, build,
    size; under it the legend and each index's determinism note where it is not deterministic."""
    tables = []
    for section in sections:
        label = metric_label(section.metric)
        rows = tuple(
            (
                r.test,
                r.model,
                r.index,
                cell_text(r.metric),
                _signed(r.delta),
                cell_text(r.neighbour_recall),
                *(_num(index_figure(r, f), f.fmt) for f in TIMED),
                size_text(r.bytes),
                PER_DOC.text(r.bytes_per_document),
                r.status,
            )
            for r in section.rows
        )
        after = [INDEX_LEGEND + "; * the interval excludes 0"]
        after += [
            f"{section.label(r)}: not deterministic: {r.note}"
            for r in section.rows
            if not r.deterministic
        ]
        tables.append(
            TextTable(
                f"indexes on {section.dataset!r}: each against exact search on the same queries",
                (
                    "test",
                    "model",
                    "index",
                    label,
                    f"Δ {label} vs exact",
                    f"nR@{section.k}",
                    *(f.header for f in TIMED),
                    SIZE.header,
                    PER_DOC.header,
                    "status",
                ),
                rows,
                tuple(after),
            )
        )
    return tables


#: the line under a table of queries under load
LOAD_LEGEND = (
    "threads: the index's queries sent from that many threads at once, single query vectors "
    "in a seeded order; QPS: requests answered per second of wall-clock time; p50/p95/p99: "
    "each request's latency at that level"
)


#: the columns of one concurrency level, after a load table's row names
LEVEL_HEADERS = ("threads", "requests", *(f.header for f in LOAD_FIGURES))


def level_cells(level: LoadData) -> tuple[str, ...]:
    """One concurrency level's cells, as :data:`LEVEL_HEADERS` names them."""
    return (
        str(level.concurrency),
        str(level.requests),
        *(f.text(f.get(level)) for f in LOAD_FIGURES),
    )


def _level_csv(level: LoadData) -> dict[str, Any]:
    """One concurrency level's CSV cells, unrounded."""
    return {
        "concurrency": level.concurrency,
        "requests": level.requests,
        "seconds": level.seconds,
        **{f.key.removeprefix("load."): f.get(level) for f in LOAD_FIGURES},
    }


def load_tables(sections: Sequence[IndexSection]) -> list[TextTable]:
    """One table per dataset whose indexes ran under load: a row per test, model, index and
    concurrency level (``--embedbench-concurrency``)."""
    tables = []
    for section in sections:
        rows = tuple(
            (r.test, r.model, r.index, *level_cells(level))
            for r in section.rows
            for level in r.load
        )
        if rows:
            tables.append(
                TextTable(
                    f"indexes on {section.dataset!r} under concurrent load",
                    ("test", "model", "index", *LEVEL_HEADERS),
                    rows,
                    (LOAD_LEGEND,),
                )
            )
    return tables


#: the line under a table of a provider's query embedding under load
QUERY_LOAD_LEGEND = (
    "threads: the dataset's queries sent to the provider's loopback server from that many "
    "threads at once, one query text a request in a seeded order; QPS: requests answered per "
    "second of wall-clock time; p50/p95/p99: each request's latency at that level"
)


def query_load_tables(sections: Sequence[QueryLoadSection]) -> list[TextTable]:
    """One table per dataset whose models' query embedding ran under load: a row per model
    and concurrency level."""
    return [
        TextTable(
            f"query embedding on {section.dataset!r} under concurrent load",
            ("test", "model", *LEVEL_HEADERS),
            tuple((r.test, r.model, *level_cells(level)) for r in section.rows for level in r.load),
            (QUERY_LOAD_LEGEND,),
        )
        for section in sections
        if section.rows
    ]


def query_load_columns() -> list[str]:
    """The columns of ``query_load.csv``."""
    return [
        *("test", "dataset", "model", "concurrency", "requests", "seconds"),
        *(f.key.removeprefix("load.") for f in LOAD_FIGURES),
    ]


def query_load_csv_rows(sections: Sequence[QueryLoadSection]) -> list[dict[str, Any]]:
    """``query_load.csv``: one row per dataset, model and concurrency level, unrounded."""
    return [
        {"test": r.nodeid, "dataset": section.dataset, "model": r.model, **_level_csv(level)}
        for section in sections
        for r in section.rows
        for level in r.load
    ]


def render_indexes(
    sections: Sequence[IndexSection], query_load: Sequence[QueryLoadSection] = ()
) -> list[str]:
    """The index section's lines for the terminal: the index tables, then those under load
    (the indexes', then the providers' query embedding)."""
    return text_lines(
        [*index_tables(sections), *load_tables(sections), *query_load_tables(query_load)]
    )


def load_columns() -> list[str]:
    """The columns of ``index_load.csv``."""
    return [
        *("test", "dataset", "model", "index", "concurrency", "requests", "seconds"),
        *(f.key.removeprefix("load.") for f in LOAD_FIGURES),
    ]


def load_csv_rows(sections: Sequence[IndexSection]) -> list[dict[str, Any]]:
    """``index_load.csv``: one row per test, model, index and concurrency level, unrounded."""
    return [
        {
            "test": r.nodeid,
            "dataset": section.dataset,
            "model": r.model,
            "index": r.index,
            **_level_csv(level),
        }
        for section in sections
        for r in section.rows
        for level in r.load
    ]


def index_columns() -> list[str]:
    """The columns of ``indexes.csv``."""
    return [
        *("test", "dataset", "model", "index", "description", "metric", "value", "low", "high"),
        *("delta", "delta_low", "delta_high", "neighbour_k", "neighbour_recall"),
        *("neighbour_recall_low", "neighbour_recall_high", "p50_ms", "p95_ms", "qps"),
        *("build_s", "bytes", "bytes_per_document", "deterministic", "note", "status"),
    ]


def index_csv_rows(sections: Sequence[IndexSection]) -> list[dict[str, Any]]:
    """``indexes.csv``: one row per test, model and index, the terminal's figures unrounded;
    ``test`` is the full node id, as in ``results.csv`` (the terminal's test plus the
    parameters its model and index columns show)."""

    def cells(value: Value | None) -> tuple[Any, Any, Any]:
        if value is None:
            return None, None, None
        return value.value, value.low, value.high

    rows = []
    for section in sections:
        for r in section.rows:
            value, low, high = cells(r.metric)
            nr, nr_low, nr_high = cells(r.neighbour_recall)
            delta = r.delta
            rows.append(
                {
                    "test": r.nodeid,
                    "dataset": section.dataset,
                    "model": r.model,
                    "index": r.index,
                    "description": r.description,
                    "metric": section.metric,
                    "value": value,
                    "low": low,
                    "high": high,
                    "delta": delta.difference if delta else None,
                    "delta_low": delta.low if delta else None,
                    "delta_high": delta.high if delta else None,
                    "neighbour_k": section.k,
                    "neighbour_recall": nr,
                    "neighbour_recall_low": nr_low,
                    "neighbour_recall_high": nr_high,
                    "p50_ms": r.p50_ms,
                    "p95_ms": r.p95_ms,
                    "qps": r.qps,
                    "build_s": r.build_s,
                    "bytes": r.bytes,
                    "bytes_per_document": r.bytes_per_document,
                    "deterministic": r.deterministic,
                    "note": r.note,
                    "status": r.status,
                }
            )
    return rows

r"""The columns a report can show: the terminal table's :class:`Column`\ s and the names
``--embedbench-columns`` accepts (any metric, every figure of the registry
:data:`~pytest_embedbench.records.figures.FIGURES` by its key or an alias such as
``bytes_per_doc``), and which way each summary figure is better.

One module that imports no report writer, so the option parser can check a column name without
importing the writers (and the writers all read the same registry).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ...core.exceptions import MetricError
from ...evaluation.metrics import parse_metric
from ...records.figures import FIGURES, JUDGED, Figure, figure, path_value

__all__ = [
    "JUDGED_COLUMN",
    "Column",
    "column_names",
    "default_columns",
    "direction",
    "latency_keys",
    "metric_names",
    "resolve_column",
]


_FAMILY_ORDER = ("ndcg", "recall", "mrr", "precision", "hit", "map", "judged")


def metric_names(results: Sequence[Any]) -> list[str]:
    """The metrics any of ``results`` (``ResultData``, or a JSON report's result dicts) has, by
    family (nDCG, recall, MRR ...) then cut-off."""
    names = {name for r in results if r for name in (path_value(r, "metrics") or {})}

    def order(name: str) -> tuple[int, int, str]:
        family, _, k = name.partition("@")
        rank = _FAMILY_ORDER.index(family) if family in _FAMILY_ORDER else len(_FAMILY_ORDER)
        return (rank, int(k) if k.isdigit() else 0, name)

    return sorted(names, key=order)


@dataclass(frozen=True)
class Column:
    """A column of the terminal table: the summary figure it shows (a metric name or a figure's
    key), its header, its number format and whether ``-q`` keeps it. The value and its
    best-in-column mark come from the summary's model rows."""

    key: str
    header: str
    fmt: str
    quiet: bool  # shown under -q


def _figure_column(found: Figure, quiet: bool = True) -> Column:
    """The column of a registry's figure: its key, header and number format are the figure's."""
    return Column(found.key, found.header, found.fmt, quiet)


#: judged@10's column: the default table adds it for a dataset with holes in its judgments
#: (:attr:`~.datasets.DatasetSummary.holes`)
JUDGED_COLUMN = _figure_column(JUDGED)

#: the registry's table figures by key (the index axis's figures are no column)
_BY_KEY = {f.key: f for f in FIGURES}

_COLUMNS: list[Column] = [
    Column("ndcg@10", "nDCG@10", "{:.4f}", True),
    Column("mrr@10", "MRR@10", "{:.4f}", False),
    Column("recall@10", "R@10", "{:.4f}", False),
    Column("recall@100", "R@100", "{:.4f}", True),
    _figure_column(_BY_KEY["p50_ms"], False),
    _figure_column(_BY_KEY["p95_ms"], True),
    _figure_column(_BY_KEY["documents_per_s"], False),
    # what the model added to the process (its load included), not the process's peak
    _figure_column(_BY_KEY["added_rss_mb"], False),
]


def direction(key: str) -> bool | None:
    """Which way a summary figure is better: True (higher) for every metric, a
    :class:`~pytest_embedbench.records.figures.Figure`'s own direction, None (neither: no best is
    marked) for the others."""
    found = figure(key) if key in _BY_KEY else None
    return found.higher_is_better if found is not None else True


def latency_keys() -> frozenset[str]:
    """The keys of the columns whose figures come from the timed queries: the figures read
    from a result's ``latency`` block."""
    return frozenset(f.key for f in FIGURES if f.path[0] == "latency")


def _figure_columns() -> dict[str, Column]:
    """Every figure of the registry (the CSV's) as a column ``--embedbench-columns`` can
    choose; the default table keeps :data:`_COLUMNS`."""
    return {f.key: _figure_column(f) for f in FIGURES}


def column_names() -> list[str]:
    """The named columns ``--embedbench-columns`` accepts besides any metric (``ndcg@10``)."""
    return sorted({c.key for c in _COLUMNS} | set(_figure_columns()))


def resolve_column(name: str) -> Column | None:
    """The column called ``name``: a default column, a figure (also by an alias, the threshold
    key ``bytes_per_doc``), or any metric ``family@k``."""
    key = name.strip().lower()
    found = figure(key)
    key = found.key if found is not None and found.key in _BY_KEY else key
    for column in _COLUMNS:
        if column.key == key or column.header.lower() == key:
            return column
    figures = _figure_columns()
    if key in figures:
        return figures[key]
    if key == JUDGED_COLUMN.key:
        return JUDGED_COLUMN
    try:
        metric = str(parse_metric(key))
    except MetricError:
        return None
    return Column(metric, metric, "{:.4f}", True)


def default_columns() -> list[Column]:
    """The terminal table's default columns, in order."""
    return list(_COLUMNS)

"""The per-language tables of datasets in several languages as text tables (the terminal's,
the Markdown's and the job summary's) and as CSV rows: :func:`language_tables` formats the
summary's :class:`~..summary.languages.LanguageSection`\\ s cell by cell, so every writer
shows the same figures."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ...records.figures import MACRO
from ..summary.languages import LanguageRow, LanguageSection
from .index_tables import cell_text, metric_label
from .stress import TextTable, text_lines

__all__ = [
    "LANGUAGE_LEGEND",
    "language_columns",
    "language_csv_rows",
    "language_tables",
    "render_languages",
]

#: the line under a per-language table
LANGUAGE_LEGEND = (
    "each language's queries search its own documents; macro: the mean of the languages' "
    "means (each language counts once), its 95% interval from resampling the queries within "
    "each language; paired comparisons and the baseline gate resample within languages too"
)


def row_label(row: LanguageRow) -> str:
    """The language column: the code, or ``macro`` for the macro average."""
    return row.language


def language_tables(sections: Sequence[LanguageSection]) -> list[TextTable]:
    """One table per dataset: model, language, queries, documents, each metric with its
    interval; each model's languages, then its macro row."""
    tables = []
    for section in sections:
        rows = tuple(
            (
                r.model,
                row_label(r),
                str(r.queries),
                str(r.documents),
                *(cell_text(r.figures.get(m)) for m in section.metrics),
            )
            for r in section.rows
        )
        tables.append(
            TextTable(
                f"languages of {section.dataset!r}: {', '.join(section.languages)} and their "
                f"{MACRO} average",
                (
                    "model",
                    "language",
                    "queries",
                    "documents",
                    *(metric_label(m) for m in section.metrics),
                ),
                rows,
                (LANGUAGE_LEGEND,),
            )
        )
    return tables


def render_languages(sections: Sequence[LanguageSection]) -> list[str]:
    """The per-language section's lines for the terminal."""
    return text_lines(language_tables(sections))


def language_columns() -> list[str]:
    """The columns of ``languages.csv``."""
    return ["test", "dataset", "model", "language", "queries", "documents", "metric"] + [
        "value",
        "low",
        "high",
        "status",
    ]


def language_csv_rows(sections: Sequence[LanguageSection]) -> list[dict[str, Any]]:
    """``languages.csv``: one row per test, language (and ``macro``) and metric, unrounded."""
    rows = []
    for section in sections:
        for r in section.rows:
            for metric in section.metrics:
                value = r.figures.get(metric)
                rows.append(
                    {
                        "test": r.nodeid,
                        "dataset": section.dataset,
                        "model": r.model,
                        "language": r.language,
                        "queries": r.queries,
                        "documents": r.documents,
                        "metric": metric,
                        "value": value.value if value else None,
                        "low": value.low if value else None,
                        "high": value.high if value else None,
                        "status": r.status,
                    }
                )
    return rows

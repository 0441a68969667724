"""Datasets in several languages in the reports (issue 44): per dataset, a row per model and
language and one for their macro average.

:func:`language_sections` reads the records of tests on such datasets (each result's
``languages``: a :class:`~pytest_embedbench.records.resultdata.LanguageData` a language, and
its ``metrics``, the macro averages) into :class:`LanguageSection`\\ s, the summary's
``languages``; :mod:`..writers.language_tables` formats them for the terminal, Markdown, the
job summary, CSV and HTML. Nothing here computes a figure: the result did (the macro average
is the mean of the languages' means, its interval resampled within each language).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from ...evaluation.record import TestRecord
from ...records.figures import LANGUAGE_METRICS, MACRO
from ...records.resultdata import LanguageData, ResultData
from .values import Value, metric_values

__all__ = ["LanguageRow", "LanguageSection", "language_sections"]


@dataclass(frozen=True)
class LanguageRow:
    """One model on one language of a dataset (``language`` is :data:`MACRO` for the macro
    average over the languages): its queries, the documents they search, and the section's
    metrics (``figures``, by metric name; absent: not computed)."""

    model: str
    language: str
    queries: int = 0
    documents: int = 0
    figures: dict[str, Value] = field(default_factory=dict)
    status: str = ""
    nodeid: str = ""


@dataclass(frozen=True)
class LanguageSection:
    """A dataset's per-language rows: each model's languages in the dataset's order, then its
    macro row; ``metrics`` are the columns (:data:`LANGUAGE_METRICS` the run computed)."""

    dataset: str
    metrics: tuple[str, ...]
    languages: tuple[str, ...]
    rows: tuple[LanguageRow, ...] = ()


def language_sections(records: Iterable[TestRecord]) -> tuple[LanguageSection, ...]:
    """The records of tests on a dataset in several languages, by dataset (sorted), in node
    id order: per test, a row per language (sorted) and the macro row."""
    rows: dict[str, list[LanguageRow]] = {}
    metrics: dict[str, list[str]] = {}
    languages: dict[str, set[str]] = {}
    for record in sorted(records, key=lambda r: r.nodeid):
        result = record.result
        if result is None or not result.languages:
            continue
        names = [m for m in LANGUAGE_METRICS if m in result.metrics]
        known = metrics.setdefault(record.dataset, [])
        known += [m for m in names if m not in known]
        languages.setdefault(record.dataset, set()).update(result.languages)
        found = rows.setdefault(record.dataset, [])
        common = {"model": record.model, "status": record.status.value, "nodeid": record.nodeid}
        # each language (sorted), then the macro row: the whole result's figures
        parts: list[tuple[str, LanguageData | ResultData]] = [
            *sorted(result.languages.items()),
            (MACRO, result),
        ]
        for language, data in parts:
            found.append(
                LanguageRow(
                    language=language,
                    queries=data.queries,
                    documents=data.documents,
                    figures=metric_values(data.metrics, names),
                    **common,
                )
            )
    return tuple(
        LanguageSection(
            name,
            tuple(m for m in LANGUAGE_METRICS if m in metrics[name]),
            tuple(sorted(languages[name])),
            tuple(found),
        )
        for name, found in sorted(rows.items())
    )

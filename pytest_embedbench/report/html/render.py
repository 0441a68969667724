"""Page assembly: the head, the sections in order and the footer."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..summary import model_rows
from .assets import _CSS, CSP
from .page import _anchor, _Page
from .sections import _commit_line, _dataset, _environment, _gate, _stat_cards, _stress


def render_html(
    report: Mapping[str, Any], *, priority: str | None = None, title: str | None = None
) -> str:
    """One self-contained HTML page for a JSON report (see the package doc).

    ``priority`` selects which recommendation is marked (default: the report's);
    ``title`` replaces the page title."""
    page = _Page()
    rec_block = report.get("recommendations") or {}
    priority = priority or rec_block.get("priority") or "balanced"
    title = title or "Embedding retrieval benchmark"
    rows_by_dataset = model_rows(report.get("tests") or [])
    page.add(
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n',
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">\n',
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n',
        '<meta name="generator" content="pytest-embedbench">\n',
        f"<title>{page.esc(title)}</title>\n<style>{_CSS}</style>\n</head>\n<body>\n",
        f"<header><h1>{page.esc(title)}</h1>\n",
        f'<p class="muted">Report created {page.esc(report.get("created") or "unknown")}'
        f" &middot; schema {page.esc(report.get('schema_version', '?'))}"
        f"{_commit_line(page, report.get('commit'))}"
        f" &middot; selected priority: <b>{page.esc(priority)}</b></p></header>\n",
    )
    _stat_cards(page, report, rows_by_dataset)
    if rows_by_dataset:
        page.add('<nav><p class="muted">Datasets: ')
        page.add(
            " &middot; ".join(
                f'<a href="#ds-{_anchor(d)}">{page.esc(d)}</a>' for d in rows_by_dataset
            )
        )
        page.add("</p></nav>\n")
    else:
        page.add("<p>No retrieval test results in this report.</p>\n")
    for dataset, rows in rows_by_dataset.items():
        _dataset(page, report, dataset, rows, priority)
    _gate(page, report)
    _stress(page, report)
    _environment(page, report)
    page.add(
        '<footer><p class="muted">Intervals are 95% bootstrap intervals over queries (seeded); '
        "p-values come from paired randomization tests, Holm-adjusted across the models of a "
        "dataset. Recommendation scores are min-max normalised within this run: they compare "
        "these models on this data, not across runs.</p></footer>\n</body>\n</html>\n"
    )
    return "".join(page.parts)

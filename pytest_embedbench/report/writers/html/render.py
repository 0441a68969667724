"""Page assembly: the head, the sections in order and the footer."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...summary import Summary, summary_of
from .assets import _CSS, CSP
from .indexes import _indexes, _query_load
from .languages import _languages
from .page import _anchor, _Page
from .sections import _commit_line, _dataset, _environment, _gate, _notices, _stat_cards
from .stages import _stages
from .stress import _cutoffs, _stress


def render_html(
    source: Summary | Mapping[str, Any],
    *,
    context: Mapping[str, Any] | None = None,
    priority: str | None = None,
    title: str | None = None,
) -> str:
    """One self-contained HTML page of a run (see the package doc): ``source`` is its
    :class:`~..summary.Summary` (``context``: the JSON report it came from, for the header and
    the environment) or a JSON report dict.

    ``priority`` selects which recommendation is marked (default: the run's);
    ``title`` replaces the page title."""
    summary, context = summary_of(source, context)
    page = _Page()
    priority = priority or summary.priority
    title = title or "Embedding retrieval benchmark"
    page.add(
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n',
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">\n',
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n',
        '<meta name="generator" content="pytest-embedbench">\n',
        f"<title>{page.esc(title)}</title>\n<style>{_CSS}</style>\n</head>\n<body>\n",
        f"<header><h1>{page.esc(title)}</h1>\n",
        f'<p class="muted">Report created {page.esc(context.get("created") or "unknown")}'
        f" &middot; schema {page.esc(context.get('schema_version', '?'))}"
        f"{_commit_line(page, context.get('commit'))}"
        f" &middot; selected priority: <b>{page.esc(priority)}</b></p></header>\n",
    )
    _stat_cards(page, summary)
    links = [(f"ds-{_anchor(d.name)}", d.name) for d in summary.datasets]
    if any(s.chunks or s.noise or s.needles for s in summary.stress):
        links.append(("stress", "stress results"))
    if summary.stages:
        links.append(("stages", "two stages"))
    if summary.languages:
        links.append(("languages", "languages"))
    if summary.indexes:
        links.append(("indexes", "indexes"))
    if summary.query_load:
        links.append(("query-load", "query embedding under load"))
    if summary.cutoffs:
        links.append(("cutoffs", "score cut-offs"))
    if links:
        page.add('<nav><p class="muted">Sections: ')
        page.add(" &middot; ".join(f'<a href="#{a}">{page.esc(t)}</a>' for a, t in links))
        page.add("</p></nav>\n")
    if not summary.datasets:
        page.add("<p>No retrieval test results in this report.</p>\n")
    for dataset in summary.datasets:
        _dataset(page, summary, dataset, priority)
    _gate(page, summary)
    _stages(page, summary)
    _languages(page, summary)
    _indexes(page, summary)
    _query_load(page, summary)
    _stress(page, summary)
    _cutoffs(page, summary)
    _notices(page, summary)
    _environment(page, context)
    page.add(
        '<footer><p class="muted">Intervals are 95% bootstrap intervals over queries (seeded); '
        "p-values come from paired randomization tests, Holm-adjusted across the models of a "
        "dataset. Recommendation scores are min-max normalised within this run: they compare "
        "these models on this data, not across runs.</p></footer>\n</body>\n</html>\n"
    )
    return "".join(page.parts)

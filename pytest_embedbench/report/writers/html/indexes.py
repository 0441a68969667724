"""The index axis's section: per dataset, the ann-benchmarks picture (neighbour recall
against queries per second, a point per model and index) and the table of every figure,
metric and paired delta against exact search included. Every figure is the summary's."""

from __future__ import annotations

import math
from collections.abc import Sequence

from ....records.resultdata import LoadData
from ...summary import Summary
from ...summary.indexes import IndexSection
from ..index_tables import (
    INDEX_LEGEND,
    LEVEL_HEADERS,
    LOAD_LEGEND,
    PER_DOC,
    QUERY_LOAD_LEGEND,
    SIZE,
    TIMED,
    index_figure,
    level_cells,
    metric_label,
    size_text,
)
from .assets import _PALETTE
from .page import _c, _dataset_sections, _f, _Page
from .stress import _value
from .tables import _delta


def _indexes(page: _Page, summary: Summary) -> None:
    """The index section (nothing when no test had ``indexes=``)."""
    title = "Indexes against exact search"
    _dataset_sections(page, ("indexes", "idx"), title, summary.indexes, _index, INDEX_LEGEND)


def _index(page: _Page, section: IndexSection) -> None:
    page.add(_chart(page, section))
    _table(page, section)
    if any(r.load for r in section.rows):
        lines = [(section.label(r), r.load) for r in section.rows]
        page.add(f"<h4>Under concurrent load</h4>\n{_load_chart(page, lines)}")
        _load_table(page, section)


def _chart(page: _Page, section: IndexSection) -> str:
    """Neighbour recall (x) against QPS (y, log scale), a labelled point per row."""
    points = [r for r in section.rows if r.qps and r.neighbour_recall and r.neighbour_recall.value]
    if not points:
        return ""
    longest = max(len(section.label(r)) for r in points)
    right = 40.0 + 6.8 * longest  # the legend beside the plot
    left, bottom, top, plot_w = 56.0, 36.0, 12.0, 340.0
    width, height = left + plot_w + right, max(260.0, 40.0 + 16.0 * len(points))
    plot_h = height - top - bottom
    logs = [math.log10(r.qps) for r in points if r.qps]
    lo, hi = math.floor(min(logs)), math.ceil(max(logs))
    hi = hi if hi > lo else lo + 1
    x_lo = min(0.0, *(r.neighbour_recall.value or 0.0 for r in points if r.neighbour_recall))

    def sx(v: float) -> float:
        return left + (v - x_lo) / (1.0 - x_lo if x_lo < 1.0 else 1.0) * plot_w

    def sy(qps: float) -> float:
        return top + plot_h - (math.log10(qps) - lo) / (hi - lo) * plot_h

    parts = [
        f'<svg viewBox="0 0 {_c(width)} {_c(height)}" width="{_c(width)}" '
        f'height="{_c(height)}" role="img" aria-label="neighbour recall against QPS">',
        f'<path d="M{_c(left)} {_c(top)}V{_c(top + plot_h)}H{_c(left + plot_w)}" '
        'stroke="#888" fill="none"/>',
    ]
    for e in range(lo, hi + 1):
        y = sy(10.0**e)
        parts.append(
            f'<text x="{_c(left - 6)}" y="{_c(y + 4)}" text-anchor="end" font-size="11">'
            f"1e{e}</text>"
        )
    for tick in (x_lo, (x_lo + 1.0) / 2, 1.0):
        parts.append(
            f'<text x="{_c(sx(tick))}" y="{_c(top + plot_h + 16)}" text-anchor="middle" '
            f'font-size="11">{tick:.2f}</text>'
        )
    parts.append(
        f'<text x="{_c(left + plot_w / 2)}" y="{_c(height - 4)}" text-anchor="middle" '
        f'font-size="11">nR@{section.k} (share of the exact top {section.k})</text>'
    )
    parts.append(
        f'<text x="12" y="{_c(top + plot_h / 2)}" font-size="11" text-anchor="middle" '
        f'transform="rotate(-90 12 {_c(top + plot_h / 2)})">QPS (log)</text>'
    )
    for i, r in enumerate(points):
        assert r.neighbour_recall is not None and r.qps is not None
        x, y = sx(r.neighbour_recall.value or 0.0), sy(r.qps)
        color = _PALETTE[i % len(_PALETTE)]
        label = page.esc(section.label(r))
        parts.append(
            f'<circle cx="{_c(x)}" cy="{_c(y)}" r="5" fill="{color}"><title>{label}: nR@'
            f"{section.k} {r.neighbour_recall.value:.4f}, {r.qps:,.0f} QPS</title></circle>"
        )
        parts.append(_legend(left + plot_w, top + 12 + 16 * i, color, label))
    return _figure(parts)


def _legend(x: float, y: float, color: str, label: str) -> str:
    """One legend entry beside a plot whose right edge is ``x``: a dot and the row's label."""
    return (
        f'<circle cx="{_c(x + 16)}" cy="{_c(y - 4)}" r="4" fill="{color}"/>'
        f'<text x="{_c(x + 24)}" y="{_c(y)}" font-size="11">{label}</text>'
    )


def _figure(parts: list[str]) -> str:
    return '<figure class="stress-chart">' + "".join(parts) + "</svg></figure>\n"


def _table(page: _Page, section: IndexSection) -> None:
    label = page.esc(metric_label(section.metric))
    page.add(
        '<div class="wide"><table class="stress"><tr><th class="t">test</th><th>model</th>'
        '<th class="t">index</th>'
        f"<th>{label}</th><th>Δ {label} vs exact</th><th>nR@{section.k}</th>"
        + "".join(f"<th>{f.header}</th>" for f in (*TIMED, SIZE, PER_DOC))
        + '<th class="t">status</th></tr>\n'
    )
    for r in section.rows:
        det = "" if r.deterministic else f'<br><span class="iv">{page.esc(r.note)}</span>'
        page.add(
            f'<tr><td class="t"><code title="{page.esc(r.nodeid)}">{page.esc(r.test)}</code>'
            f'</td><td>{page.esc(r.model)}</td><td class="t"><code>{page.esc(r.index)}</code>'
            f'<br><span class="iv">{page.esc(r.description)}</span>{det}</td>'
            f"<td>{_value(r.metric)}</td><td>{_delta(page, r.delta)}</td>"
            f"<td>{_value(r.neighbour_recall)}</td>"
            + "".join(f"<td>{_f(index_figure(r, f), f.fmt)}</td>" for f in TIMED)
            + f"<td>{page.esc(size_text(r.bytes))}</td>"
            f"<td>{page.esc(PER_DOC.text(r.bytes_per_document))}</td>"
            f'<td class="t {page.esc(r.status)}">{page.esc(r.status)}</td></tr>\n'
        )
    page.add("</table></div>\n")


def _query_load(page: _Page, summary: Summary) -> None:
    """The providers' query embedding under load (nothing without it): per dataset, QPS
    against the number of threads, a line per model, above its table."""
    if not summary.query_load:
        return
    page.add('<section id="query-load"><h2>Query embedding under concurrent load</h2>\n')
    for section in summary.query_load:
        lines = [(section.label(r), r.load) for r in section.rows]
        page.add(f"<h3>On {page.esc(section.dataset)}</h3>\n{_load_chart(page, lines)}")
        _level_rows(
            page, ("model",), [(r.nodeid, r.test, (r.model,), r.load) for r in section.rows]
        )
    page.add(f'<p class="muted">{page.esc(QUERY_LOAD_LEGEND)}.</p>\n</section>\n')


def _load_chart(page: _Page, lines: Sequence[tuple[str, tuple[LoadData, ...]]]) -> str:
    """QPS (y) against the number of threads (x, one step a level), a line per
    ``(label, levels)`` of ``lines``."""
    rows = [(name, load) for name, load in lines if any(level.qps for level in load)]
    levels = sorted({level.concurrency for _, load in rows for level in load})
    if not rows or not levels:
        return ""
    longest = max(len(name) for name, _ in rows)
    left, bottom, top, plot_w = 64.0, 36.0, 12.0, 340.0
    width, height = left + plot_w + 40.0 + 6.8 * longest, max(240.0, 40.0 + 16.0 * len(rows))
    plot_h = height - top - bottom
    peak = max(level.qps or 0.0 for _, load in rows for level in load) or 1.0

    def sx(concurrency: int) -> float:
        step = plot_w / max(1, len(levels) - 1)
        return left + (levels.index(concurrency) * step if len(levels) > 1 else plot_w / 2)

    def sy(qps: float) -> float:
        return top + plot_h - qps / (peak * 1.05) * plot_h

    parts = [
        f'<svg viewBox="0 0 {_c(width)} {_c(height)}" width="{_c(width)}" '
        f'height="{_c(height)}" role="img" aria-label="QPS against concurrent threads">',
        f'<path d="M{_c(left)} {_c(top)}V{_c(top + plot_h)}H{_c(left + plot_w)}" '
        'stroke="#888" fill="none"/>',
    ]
    for tick in (0.0, peak / 2, peak):
        parts.append(
            f'<text x="{_c(left - 6)}" y="{_c(sy(tick) + 4)}" text-anchor="end" '
            f'font-size="11">{tick:,.0f}</text>'
        )
    for concurrency in levels:
        parts.append(
            f'<text x="{_c(sx(concurrency))}" y="{_c(top + plot_h + 16)}" '
            f'text-anchor="middle" font-size="11">{concurrency}</text>'
        )
    parts.append(
        f'<text x="{_c(left + plot_w / 2)}" y="{_c(height - 4)}" text-anchor="middle" '
        'font-size="11">threads sending queries at once</text>'
    )
    parts.append(
        f'<text x="12" y="{_c(top + plot_h / 2)}" font-size="11" text-anchor="middle" '
        f'transform="rotate(-90 12 {_c(top + plot_h / 2)})">QPS</text>'
    )
    for i, (name, load) in enumerate(rows):
        color = _PALETTE[i % len(_PALETTE)]
        label = page.esc(name)
        points = [(sx(lv.concurrency), sy(lv.qps), lv) for lv in load if lv.qps is not None]
        path = "M" + "L".join(f"{_c(x)} {_c(y)}" for x, y, _ in points)
        parts.append(f'<path d="{path}" stroke="{color}" stroke-width="2" fill="none"/>')
        for x, y, lv in points:
            parts.append(
                f'<circle cx="{_c(x)}" cy="{_c(y)}" r="3.5" fill="{color}"><title>{label}: '
                f"{lv.concurrency} threads, {lv.qps:,.0f} QPS, p99 {_f(lv.p99_ms, '{:.3f}')} "
                "ms</title></circle>"
            )
        parts.append(_legend(left + plot_w, top + 12 + 16 * i, color, label))
    return _figure(parts)


def _load_table(page: _Page, section: IndexSection) -> None:
    rows = [(r.nodeid, r.test, (r.model, r.index), r.load) for r in section.rows]
    _level_rows(page, ("model", "index"), rows)
    page.add(f'<p class="muted">{page.esc(LOAD_LEGEND)}.</p>\n')


def _level_rows(
    page: _Page,
    names: tuple[str, ...],
    rows: Sequence[tuple[str, str, tuple[str, ...], tuple[LoadData, ...]]],
) -> None:
    """A table of load levels: per ``(nodeid, test, cells named by names, levels)``, a row a
    level, its cells :func:`~..index_tables.level_cells`'s."""
    page.add(
        '<div class="wide"><table class="stress"><tr><th class="t">test</th>'
        + "".join(f"<th>{page.esc(n)}</th>" for n in names)
        + "".join(f"<th>{page.esc(h)}</th>" for h in LEVEL_HEADERS)
        + "</tr>\n"
    )
    for nodeid, test, cells, load in rows:
        for level in load:
            page.add(
                f'<tr><td class="t"><code title="{page.esc(nodeid)}">{page.esc(test)}</code></td>'
                + "".join(f"<td>{page.esc(c)}</td>" for c in cells)
                + "".join(f"<td>{page.esc(c)}</td>" for c in level_cells(level))
                + "</tr>\n"
            )
    page.add("</table></div>\n")

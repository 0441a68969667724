"""The stress and cut-off sections as tables: per dataset the chunk-size sweep and the noise
workloads (paired differences with their intervals and verdicts), a needle grid per model
(depth x haystack length, hit@1 shaded, truncated cells marked), and the cut-off levels with
their aims and held-out rates. Every figure and flag is the summary's."""

from __future__ import annotations

from collections.abc import Sequence

from ..stress import aim_text, cutoff_notes, needle_title
from ..stress_summary import ChunkPoint, CutoffSection, NeedleGrid, NoisePoint, StressSection
from ..summary import Summary
from ..values import Value
from .page import _anchor, _f, _Page
from .tables import _delta


def _value(value: Value | None, fmt: str = "{:.4f}", interval: str = "{:.3f}") -> str:
    """A value with its interval under it (``-`` when there is none)."""
    if value is None or value.value is None:
        return "-"
    text = _f(value.value, fmt)
    if value.low is not None and value.high is not None:
        text += (
            f'<br><span class="iv">[{_f(value.low, interval)}, {_f(value.high, interval)}]</span>'
        )
    return text


def _stress(page: _Page, summary: Summary) -> None:
    """The stress section (nothing when no stress test ran)."""
    sections = [s for s in summary.stress if s.chunks or s.noise or s.needles]
    if not sections:
        return
    page.add('<section id="stress"><h2>Stress results</h2>\n')
    for section in sections:
        page.add(
            f'<h3 id="stress-{_anchor(section.dataset)}">On {page.esc(section.dataset)}</h3>\n'
        )
        _chunks(page, section.chunks)
        _noise(page, section.noise)
        _needles(page, section)
    page.add("</section>\n")


def _paired_cells(page: _Page, point: ChunkPoint | NoisePoint) -> str:
    return (
        f"<td>{_value(point.clean)}</td><td>{_value(point.stressed)}</td>"
        f"<td>{_delta(page, point.delta)}</td>"
        f'<td class="t {page.esc(point.status)}">{page.esc(point.status)}</td></tr>\n'
    )


def _chunks(page: _Page, points: Sequence[ChunkPoint]) -> None:
    if not points:
        return
    page.add(
        "<h4>Chunk size against the configured chunking (paired)</h4>\n"
        '<div class="wide"><table class="stress"><tr><th>model</th><th>chunk tokens</th>'
        "<th>configured nDCG@10</th><th>re-chunked nDCG@10</th><th>Δ [95%]</th>"
        '<th class="t">status</th></tr>\n'
    )
    for p in points:
        page.add(f"<tr><td>{page.esc(p.model)}</td><td>{p.size}</td>" + _paired_cells(page, p))
    page.add("</table></div>\n")


def _noise(page: _Page, points: Sequence[NoisePoint]) -> None:
    if not points:
        return
    page.add(
        "<h4>Query noise (paired, 95% interval)</h4>\n"
        '<div class="wide"><table class="stress"><tr><th>model</th><th class="t">noise</th>'
        "<th>seeds</th><th>clean nDCG@10</th><th>noisy nDCG@10</th><th>Δ noisy − clean</th>"
        '<th class="t">status</th></tr>\n'
    )
    for p in points:
        page.add(
            f'<tr><td>{page.esc(p.model)}</td><td class="t">{page.esc(p.workload)}</td>'
            f"<td>{p.seeds}</td>" + _paired_cells(page, p)
        )
    page.add(
        '</table></div>\n<p class="muted">Δ: mean paired difference over queries (and seeds) '
        "with its 95% bootstrap interval; worse / better: the interval excludes 0.</p>\n"
    )


def _needles(page: _Page, section: StressSection) -> None:
    if not section.needles:
        return
    page.add('<h4>Needle in a haystack: hit@1</h4>\n<div class="grids">')
    for grid in section.needles:
        _needle_grid(page, grid)
    page.add(
        '</div>\n<p class="muted">Rows: the needle\'s depth in the haystack (0 start, 1 end); '
        "columns: haystack length in tokens; shade: hit@1. ✂: the needle lay past the tokens "
        "the model reads, so a miss there is truncation, not a weak model.</p>\n"
    )


def _needle_grid(page: _Page, grid: NeedleGrid) -> None:
    page.add(
        '<figure class="grid"><div class="wide"><table class="heat"><tr><th>depth</th>'
        + "".join(f"<th>{n} tok</th>" for n in grid.lengths)
        + "</tr>\n"
    )
    for depth in grid.depths:
        page.add(f"<tr><td>{depth:g}</td>")
        for length in grid.lengths:
            cell = grid.cell(depth, length)
            if cell is None:
                page.add("<td></td>")
                continue
            hit = cell.hit1.value if cell.hit1 is not None else None
            shade = f' style="background:rgba(60,169,81,{hit:.2f})"' if hit is not None else ""
            cut = ' <span class="cut" title="needle past the model\'s limit">✂</span>'
            page.add(
                f'<td{shade} title="{page.esc(cell.workload)}">{_f(hit, "{:.2f}")}'
                f"{cut if cell.cut else ''}</td>"
            )
        page.add("</tr>\n")
    page.add(f"</table></div><figcaption>{page.esc(needle_title(grid))}</figcaption></figure>")


def _cutoffs(page: _Page, summary: Summary) -> None:
    """The cut-off section (nothing when no test read ``retrieval.cutoffs``)."""
    if not summary.cutoffs:
        return
    page.add(
        '<section id="cutoffs"><h2>Score cut-offs</h2>\n<p class="muted">Each cut-off is '
        "calibrated on a seeded half of the queries and shown on the other half. Noise-floor "
        "levels (strict, balanced, loose) aim at a share of random pairs let through; the "
        "conformal cut-off at a share of queries that keep their relevant documents. "
        "Held-out rates carry 95% intervals clustered by query; ! the held-out rate missed "
        "its aim.</p>\n"
    )
    for section in summary.cutoffs:
        _cutoff_section(page, section)
    page.add("</section>\n")


def _rate(value: Value | None, flagged: bool = False) -> str:
    if value is None or value.value is None:
        return "<td>-</td>"
    text = f"{100 * value.value:.2f}%"
    if value.low is not None and value.high is not None:
        text += f'<br><span class="iv">[{100 * value.low:.2f}, {100 * value.high:.2f}]%</span>'
    if flagged:
        return f'<td class="miss-aim" title="outside its aim">{text} !</td>'
    return f"<td>{text}</td>"


def _cutoff_section(page: _Page, section: CutoffSection) -> None:
    counts = next(
        (
            f" &middot; calibrated on {m.calibration_queries} queries, shown on {m.heldout_queries}"
            for m in section.models
            if m.calibration_queries is not None
        ),
        "",
    )
    page.add(
        f"<h3>On {page.esc(section.dataset)}"
        f'<span class="muted" style="font-size:13px;font-weight:400">{counts}</span></h3>\n'
    )
    rows = [(m, r) for m in section.models for r in m.rows]
    if rows:
        page.add(
            '<div class="wide"><table class="cutoffs"><tr><th>model</th><th class="t">level'
            '</th><th>cut-off</th><th class="t">aim (expected)</th><th>keeps relevant</th>'
            "<th>lets random</th><th>queries kept whole</th></tr>\n"
        )
        for model, row in rows:
            page.add(
                f'<tr><td>{page.esc(model.model)}</td><td class="t">{page.esc(row.level)}</td>'
                f"<td>{'none' if row.threshold is None else _f(row.threshold)}</td>"
                f'<td class="t">{page.esc(aim_text(row, model))}</td>'
                f"{_rate(row.keeps_relevant)}{_rate(row.lets_random, row.outside_expected)}"
                f"{_rate(row.keeps_queries, row.short_of_target)}</tr>\n"
            )
        page.add("</table></div>\n")
    notes = [line for m in section.models for line in cutoff_notes(m)]
    if notes:
        page.add('<ul class="notes">' + "".join(f"<li>{page.esc(n)}</li>" for n in notes))
        page.add("</ul>\n")

"""The stress and cut-off sections: per dataset the needle heatmaps, the noise workloads'
paired differences as bars and the chunk-size sweep as curves (inline SVG, :mod:`.stress_charts`),
each with its figures as a flat table under a ``<details>``; then the cut-offs drawn on the
held-out score distributions, with the table of their aims and held-out rates. Every figure and
flag is the summary's."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from ...summary import Summary
from ...summary.cutoffs import CutoffSection
from ...summary.stress import ChunkPoint, NoisePoint, StressSection
from ...summary.values import Value
from ..stress import aim_text, cutoff_notes, needle_title
from .assets import _PALETTE
from .charts import _legend
from .page import _dataset_heading, _f, _Page
from .stress_charts import chunk_curves, cutoff_chart, needle_heatmap, noise_bars
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


def model_colors(summary: Summary, dataset: str, models: Iterable[str]) -> dict[str, str]:
    """Each model's colour: the one its dataset's charts give it, then the next free ones."""
    found = summary.dataset(dataset)
    order = [m.model for m in found.models] if found is not None else []
    order += sorted(set(models) - set(order))
    return {m: _PALETTE[i % len(_PALETTE)] for i, m in enumerate(order)}


def _stress(page: _Page, summary: Summary) -> None:
    """The stress section (nothing when no stress test ran)."""
    sections = [s for s in summary.stress if s.chunks or s.noise or s.needles]
    if not sections:
        return
    page.add('<section id="stress"><h2>Stress results</h2>\n')
    for section in sections:
        _dataset_heading(page, "stress", section.dataset)
        models = [p.model for p in section.chunks] + [p.model for p in section.noise]
        colors = model_colors(summary, section.dataset, models)
        _needles(page, section)
        _noise(page, section.noise, colors)
        _chunks(page, section.chunks, colors)
    page.add("</section>\n")


def _paired_cells(page: _Page, point: ChunkPoint | NoisePoint) -> str:
    return (
        f"<td>{_value(point.clean)}</td><td>{_value(point.stressed)}</td>"
        f"<td>{_delta(page, point.delta)}</td>"
        f'<td class="t {page.esc(point.status)}">{page.esc(point.status)}</td></tr>\n'
    )


def _chart(page: _Page, title: str, kind: str, svg: str, caption: str) -> None:
    """A stress chart under its heading, with its caption."""
    page.add(
        f'<h4>{title}</h4>\n<figure class="stress-chart {kind}">{svg}'
        f"<figcaption>{caption}</figcaption></figure>\n"
    )


def _table_open(page: _Page, what: str, headers: str) -> None:
    """A stress chart's figures as a flat table under a ``<details>``: its header row
    (``headers`` before the status column)."""
    page.add(
        f'<details><summary>{what} as a table</summary><div class="wide">'
        f'<table class="stress"><tr>{headers}<th class="t">status</th></tr>\n'
    )


def _chunks(page: _Page, points: Sequence[ChunkPoint], colors: dict[str, str]) -> None:
    if not points:
        return
    _chart(
        page,
        "Chunk size: nDCG@10 after re-chunking, paired with the configured chunking",
        "chunks",
        chunk_curves(page, points, colors),
        "A line per model: nDCG@10 with the documents re-chunked at each size; "
        "band: its 95% bootstrap interval; dashed: the model on the configured chunking.",
    )
    _legend(page, {m: c for m, c in colors.items() if any(p.model == m for p in points)})
    _table_open(
        page,
        "Chunk sizes",
        "<th>model</th><th>chunk tokens</th><th>configured nDCG@10</th>"
        "<th>re-chunked nDCG@10</th><th>Δ [95%]</th>",
    )
    for p in points:
        page.add(f"<tr><td>{page.esc(p.model)}</td><td>{p.size}</td>" + _paired_cells(page, p))
    page.add("</table></div></details>\n")


def _noise(page: _Page, points: Sequence[NoisePoint], colors: dict[str, str]) -> None:
    if not points:
        return
    _chart(
        page,
        "Query noise: nDCG@10 on noisy queries against the clean ones (paired)",
        "noise",
        noise_bars(page, points, colors),
        "Bars: the mean paired difference over queries (and seeds); whiskers: its "
        "95% bootstrap interval; worse / better: the interval excludes 0.",
    )
    _table_open(
        page,
        "Query noise",
        '<th>model</th><th class="t">noise</th><th>seeds</th><th>clean nDCG@10</th>'
        "<th>noisy nDCG@10</th><th>Δ noisy − clean</th>",
    )
    for p in points:
        page.add(
            f'<tr><td>{page.esc(p.model)}</td><td class="t">{page.esc(p.workload)}</td>'
            f"<td>{p.seeds}</td>" + _paired_cells(page, p)
        )
    page.add("</table></div></details>\n")


def _needles(page: _Page, section: StressSection) -> None:
    if not section.needles:
        return
    page.add('<h4>Needle in a haystack: hit@1</h4>\n<div class="grids">')
    for grid in section.needles:
        page.add(
            f'<figure class="grid needle">{needle_heatmap(page, grid)}'
            f"<figcaption>{page.esc(needle_title(grid))}</figcaption></figure>"
        )
    page.add(
        '</div>\n<p class="muted">Rows: the needle\'s depth in the haystack (0% its start, 100% '
        "its end); columns: the haystack's length in tokens; shade and number: hit@1, the share "
        "of needle questions whose haystack came first. ✂ (red outline): the needle lay past "
        "the tokens the model reads, so a miss there is truncation, not a weak model.</p>\n"
    )


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
    charts = [(m, cutoff_chart(page, m)) for m in section.models]
    drawn = [(m, svg) for m, svg in charts if svg]
    if drawn:
        page.add('<div class="grids">')
        for model, svg in drawn:
            page.add(
                f'<figure class="grid cutoff">{svg}<figcaption>{page.esc(model.model)}: the '
                "held-out relevant-pair and random-pair scores (each as shares of its pairs) and "
                "each cut-off, with what it keeps and lets through on the held-out queries."
                "</figcaption></figure>"
            )
        page.add("</div>\n")
    notes = [line for m in section.models for line in cutoff_notes(m)]
    if notes:
        page.add('<ul class="notes">' + "".join(f"<li>{page.esc(n)}</li>" for n in notes))
        page.add("</ul>\n")

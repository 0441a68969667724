"""The stress and cut-off figures as inline SVG: a needle heatmap per model, the noise
workloads' paired differences as bars with their intervals, the chunk-size sweep as a line per
model with its interval band, and each model's cut-offs drawn on the held-out score
distributions they cut.

Each function draws one :mod:`..stress_summary` record and computes nothing but positions:
every value, interval, verdict and flag is the summary's. Labels sit on a grid (rows, columns,
legend lines) or, for the cut-off lines, in as many rows as their spacing needs, with widths
estimated wide (:data:`.charts.CHAR_W`), so none overlaps another or leaves its chart.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from ...summary.cutoffs import CutoffModel, ScoreDistribution
from ...summary.stress import ChunkPoint, NeedleGrid, NoisePoint
from .charts import CHAR_W, _nice_max, _svg_open, _text
from .page import _c, _f, _Page, _short

__all__ = ["chunk_curves", "cutoff_chart", "needle_heatmap", "noise_bars"]

#: the heatmap's ends: hit@1 0 (no needle found) and 1 (every needle first)
_COLD, _HOT = (241, 243, 245), (30, 123, 52)
#: the cut-off levels' line colours (the conformal one solid, the noise-floor ones dashed)
LEVEL_COLORS = {
    "strict": "#6f42c1",
    "balanced": "#d9480f",
    "loose": "#b08800",
    "conformal": "#1864ab",
}
_RELEVANT, _RANDOM = "#2f9e44", "#868e96"


def _shade(value: float) -> str:
    t = max(0.0, min(1.0, value))
    r, g, b = (round(c + (h - c) * t) for c, h in zip(_COLD, _HOT, strict=True))
    return f"#{r:02x}{g:02x}{b:02x}"


def _pct(value: float) -> str:
    return f"{100 * value:.0f}%" if abs(100 * value - round(100 * value)) < 1e-9 else f"{value:g}"


# -- needle heatmap ----------------------------------------------------------------------------


def needle_heatmap(page: _Page, grid: NeedleGrid) -> str:
    """One model's needle points: depth (rows) x haystack length (columns), each cell shaded
    and labelled by hit@1, outlined in red with ✂ where the needle lay past what the model
    reads; a legend with the shade's scale, chance and the ✂."""
    cw, ch, left, top = 64.0, 28.0, 72.0, 26.0
    gw, gh = cw * len(grid.lengths), ch * len(grid.depths)
    cut_line = (
        f"✂ the needle lay past the {grid.reads} tokens the model reads"
        if grid.reads
        else "✂ the needle lay past what the model reads"
    )
    any_cut = any(c.cut for c in grid.cells)
    width = max(left + gw + 12, 360.0, 16 + CHAR_W * len(cut_line) + 8 if any_cut else 0.0)
    legend_y = top + gh + 50
    height = legend_y + (34 if any_cut else 14)
    parts = [
        _svg_open(round(width), round(height), f"needle hit@1 for {grid.model}", page),
        _text(4, 14, "needle depth", cls="h"),
    ]
    for r, depth in enumerate(grid.depths):
        y = top + r * ch
        parts.append(_text(left - 8, y + ch / 2 + 4, _pct(depth), "end"))
        for c, length in enumerate(grid.lengths):
            x = left + c * cw
            cell = grid.cell(depth, length)
            hit = cell.hit1.value if cell is not None and cell.hit1 is not None else None
            fill = _shade(hit) if hit is not None else "#ffffff"
            tip = f"depth {depth:g}, {length} tokens: hit@1 {_f(hit, '{:.2f}')}"
            if cell is not None and cell.cut:
                tip += " (the needle lay past what the model reads)"
            stroke = (
                ' stroke="#b3261e" stroke-width="2" stroke-dasharray="4 2"'
                if cell is not None and cell.cut
                else ' stroke="#ffffff"'
            )
            parts.append(
                f'<rect class="cell" x="{_c(x + 1)}" y="{_c(y + 1)}" width="{_c(cw - 2)}" '
                f'height="{_c(ch - 2)}" fill="{fill}"{stroke}><title>{page.esc(tip)}</title></rect>'
            )
            if cell is None:
                continue
            label = _f(hit, "{:.2f}", "–") + (" ✂" if cell.cut else "")
            dark = hit is not None and hit >= 0.55
            parts.append(
                _text(x + cw / 2, y + ch / 2 + 4, label, "middle", "on-dark" if dark else "")
            )
    for c, length in enumerate(grid.lengths):
        parts.append(_text(left + c * cw + cw / 2, top + gh + 15, str(length), "middle"))
    parts.append(_text(left + gw / 2, top + gh + 32, "haystack length (tokens)", "middle"))
    # the legend: the shade from 0 to 1, chance, and the ✂
    bar_x, steps = 56.0, 10
    parts.append(_text(4, legend_y, "hit@1", cls="h"))
    parts.append(_text(bar_x - 4, legend_y, "0", "end"))
    for i in range(steps):
        parts.append(
            f'<rect x="{_c(bar_x + 12 * i)}" y="{_c(legend_y - 10)}" width="12" height="12" '
            f'fill="{_shade((i + 0.5) / steps)}"/>'
        )
    parts.append(_text(bar_x + 12 * steps + 4, legend_y, "1"))
    if grid.chance is not None:
        cx = bar_x + 12 * steps * max(0.0, min(1.0, grid.chance))
        mark = bar_x + 12 * steps + 22
        parts.append(
            f'<path d="M{_c(cx)} {_c(legend_y - 13)}V{_c(legend_y + 4)}M{_c(mark)} '
            f'{_c(legend_y - 13)}V{_c(legend_y + 4)}" stroke="#1d1f24" stroke-width="2"/>'
        )
        parts.append(_text(mark + 6, legend_y, f"chance {grid.chance:.2f}"))
    if any_cut:
        parts.append(_text(4, legend_y + 22, page.esc(cut_line)))
    parts.append("</svg>")
    return "".join(parts)


# -- noise: paired differences as bars ---------------------------------------------------------


def noise_bars(page: _Page, points: Sequence[NoisePoint], colors: Mapping[str, str]) -> str:
    """A block per noise workload, a bar per model: its paired nDCG@10 difference to the
    clean queries with the 95% interval as a whisker, and the verdict at the right."""
    workloads = sorted({p.workload for p in points})
    names = [_short(p.model) for p in points] + [_short(w) for w in workloads]
    left = 12 + CHAR_W * max(len(n) for n in names)
    plot_w, right_w, row_h = 300.0, 112.0, 20.0
    found = [
        abs(v)
        for p in points
        if p.delta is not None
        for v in (p.delta.difference, p.delta.low, p.delta.high)
        if v is not None
    ]
    top_value = _nice_max(max(found, default=0.0))
    width = left + plot_w + right_w

    def sx(v: float) -> float:
        return left + (max(-top_value, min(top_value, v)) + top_value) / (2 * top_value) * plot_w

    rows: list[str] = []
    y = 6.0
    for workload in workloads:
        rows.append(_text(4, y + 13, page.esc(_short(workload)), cls="h"))
        y += row_h
        for p in (p for p in points if p.workload == workload):
            rows.append(_text(left - 8, y + 13, page.esc(_short(p.model)), "end"))
            d = p.delta
            if d is not None and d.difference is not None:
                x0, x1 = sorted((sx(0.0), sx(d.difference)))
                rows.append(
                    f'<rect class="bar" x="{_c(x0)}" y="{_c(y + 4)}" width="{_c(x1 - x0)}" '
                    f'height="12" fill="{colors.get(p.model, "#4269d0")}"><title>'
                    f"{page.esc(p.model)} {page.esc(workload)}: Δ {d.difference:+.4f} "
                    f"[{_f(d.low, '{:+.3f}')}, {_f(d.high, '{:+.3f}')}]</title></rect>"
                )
                if d.low is not None and d.high is not None:
                    lo, hi, cy = sx(d.low), sx(d.high), y + 10
                    rows.append(
                        f'<path class="whisker" d="M{_c(lo)} {_c(cy)}H{_c(hi)}M{_c(lo)} '
                        f'{_c(cy - 4)}v8M{_c(hi)} {_c(cy - 4)}v8" stroke="#222" fill="none"/>'
                    )
                text = f"{d.difference:+.4f}" + (f" {d.verdict}" if d.verdict else "")
                cls = f"v-{d.verdict}" if d.verdict else ""
                rows.append(_text(left + plot_w + 8, y + 13, page.esc(text), cls=cls))
            else:
                rows.append(_text(left + plot_w + 8, y + 13, page.esc(p.status)))
            y += row_h
        y += 6
    bottom = y
    height = bottom + 40
    parts = [_svg_open(round(width), round(height), "query noise: paired differences", page)]
    for i in range(5):
        v = -top_value + i * top_value / 2
        x = sx(v)
        parts.append(
            f'<line x1="{_c(x)}" y1="6" x2="{_c(x)}" y2="{_c(bottom)}" '
            f'stroke="{"#888" if i == 2 else "#eee"}"/>'
        )
        parts.append(_text(x, bottom + 14, f"{v:+.3g}" if v else "0", "middle"))
    parts.extend(rows)
    parts.append(
        _text(left + plot_w / 2, bottom + 32, "Δ nDCG@10, noisy − clean (95% interval)", "middle")
    )
    parts.append("</svg>")
    return "".join(parts)


# -- chunk sizes: a line per model with its interval band ---------------------------------------


def chunk_curves(page: _Page, points: Sequence[ChunkPoint], colors: Mapping[str, str]) -> str:
    """nDCG@10 after re-chunking at each size, a line per model with its 95% interval as a
    band, and the model's configured chunking as a dashed line."""
    sizes = sorted({p.size for p in points})
    models = sorted({p.model for p in points})
    width, left, right, top, plot_h = 520.0, 48.0, 20.0, 26.0, 180.0
    plot_w = width - left - right
    values = [
        v
        for p in points
        for f in (p.stressed, p.clean)
        if f is not None
        for v in (f.value, f.low, f.high)
        if v is not None and math.isfinite(v)
    ]
    low = math.floor(min(values, default=0.0) * 10) / 10
    high = math.ceil(max(values, default=1.0) * 10) / 10
    low, high = max(0.0, low), min(1.0, high)
    if high - low < 0.2:  # a flat sweep: a band of 0.2 around it, inside [0, 1]
        low = max(0.0, min(low, high - 0.2))
        high = min(1.0, low + 0.2)

    def sx(i: int) -> float:
        return (
            left + plot_w / 2
            if len(sizes) == 1
            else left + 24 + i * (plot_w - 48) / (len(sizes) - 1)
        )

    def sy(v: float) -> float:
        return top + plot_h - (max(low, min(high, v)) - low) / (high - low) * plot_h

    bottom = top + plot_h
    height = bottom + 44
    parts = [
        _svg_open(round(width), round(height), "nDCG@10 by chunk size", page),
        _text(4, 14, "nDCG@10", cls="h"),
    ]
    for i in range(5):
        v = low + (high - low) * i / 4
        parts.append(
            f'<line x1="{_c(left)}" y1="{_c(sy(v))}" x2="{_c(width - right)}" y2="{_c(sy(v))}" '
            f'stroke="{"#888" if i == 0 else "#eee"}"/>'
        )
        parts.append(_text(left - 4, sy(v) + 4, f"{v:.2f}", "end"))
    for i, size in enumerate(sizes):
        parts.append(_text(sx(i), bottom + 15, str(size), "middle"))
    parts.append(_text(left + plot_w / 2, bottom + 34, "chunk size (tokens)", "middle"))
    for model in models:
        color = colors.get(model, "#4269d0")
        mine = {p.size: p for p in points if p.model == model}
        line = [(i, mine[s]) for i, s in enumerate(sizes) if s in mine]
        shown = [(i, p) for i, p in line if p.stressed is not None and p.stressed.value is not None]
        band = [
            (i, p.stressed.low, p.stressed.high)
            for i, p in shown
            if p.stressed is not None and p.stressed.low is not None and p.stressed.high is not None
        ]
        if len(band) > 1:
            upper = " ".join(f"{_c(sx(i))},{_c(sy(hi))}" for i, _, hi in band)
            lower = " ".join(f"{_c(sx(i))},{_c(sy(lo))}" for i, lo, _ in reversed(band))
            parts.append(
                f'<polygon class="band" points="{upper} {lower}" fill="{color}" '
                'fill-opacity="0.15" stroke="none"/>'
            )
        clean = next((p.clean for _, p in line if p.clean is not None), None)
        if clean is not None and clean.value is not None:
            parts.append(
                f'<line class="configured" x1="{_c(left)}" y1="{_c(sy(clean.value))}" '
                f'x2="{_c(width - right)}" y2="{_c(sy(clean.value))}" stroke="{color}" '
                f'stroke-dasharray="5 4"><title>{page.esc(model)}: configured chunking '
                f"{_f(clean.value)}</title></line>"
            )
        if shown:
            path = " ".join(
                f"{_c(sx(i))},{_c(sy(p.stressed.value))}"
                for i, p in shown
                if p.stressed is not None and p.stressed.value is not None
            )
            parts.append(
                f'<polyline class="curve" points="{path}" fill="none" stroke="{color}" '
                'stroke-width="2"/>'
            )
        for i, p in shown:
            assert p.stressed is not None and p.stressed.value is not None
            parts.append(
                f'<circle cx="{_c(sx(i))}" cy="{_c(sy(p.stressed.value))}" r="4" fill="{color}">'
                f"<title>{page.esc(model)}, {p.size} tokens: {_f(p.stressed.value)} "
                f"[{_f(p.stressed.low, '{:.3f}')}, {_f(p.stressed.high, '{:.3f}')}]</title>"
                "</circle>"
            )
    parts.append("</svg>")
    return "".join(parts)


# -- cut-offs on the score distributions --------------------------------------------------------


def cutoff_chart(page: _Page, model: CutoffModel) -> str | None:
    """One model's held-out relevant-pair and random-pair score histograms (each as shares of
    its pairs), each cut-off as a vertical line, and a legend row per cut-off with what it
    keeps and lets through on the held-out queries (None: no distribution to draw)."""
    dist: ScoreDistribution | None = model.distribution
    if dist is None or len(dist.edges) < 2 or not dist.edges[-1] > dist.edges[0]:
        return None
    width, left, right = 600.0, 56.0, 20.0
    plot_w, plot_h = width - left - right, 150.0
    lo, hi = dist.edges[0], dist.edges[-1]

    def sx(v: float) -> float:
        return left + (max(lo, min(hi, v)) - lo) / (hi - lo) * plot_w

    lines = [r for r in model.rows if r.threshold is not None]
    # the level names above the plot, in as many rows as their spacing needs
    rows_of: list[float] = []  # per label row, where its last label ends
    placed: list[tuple[float, int, str, str]] = []
    for row in sorted(lines, key=lambda r: r.threshold or 0.0):
        assert row.threshold is not None
        text = row.level
        half = CHAR_W * len(text) / 2
        x = min(max(sx(row.threshold), left + half), width - right - half)
        for k, end in enumerate(rows_of):
            if x - half > end + 6:
                rows_of[k] = x + half
                break
        else:
            rows_of.append(x + half)
            k = len(rows_of) - 1
        placed.append((x, k, text, row.level))
    top = 10 + 15 * max(len(rows_of), 1)
    bottom = top + plot_h
    ymax = _nice_max(max((*dist.relevant_shares, *dist.random_shares), default=0.0))

    def sy(v: float) -> float:
        return bottom - min(v, ymax) / ymax * plot_h

    legend = _legend_rows(model, dist)
    height = bottom + 44 + 16 * len(legend)
    parts = [_svg_open(round(width), round(height), f"score cut-offs for {model.model}", page)]
    for i in range(3):
        v = ymax * i / 2
        parts.append(
            f'<line x1="{_c(left)}" y1="{_c(sy(v))}" x2="{_c(width - right)}" y2="{_c(sy(v))}" '
            f'stroke="{"#888" if i == 0 else "#eee"}"/>'
        )
        parts.append(_text(left - 4, sy(v) + 4, f"{100 * v:.0f}%", "end"))
    for kind, counts, shares, color in (
        ("random", dist.random, dist.random_shares, _RANDOM),
        ("relevant", dist.relevant, dist.relevant_shares, _RELEVANT),
    ):
        for i, (count, share) in enumerate(zip(counts, shares, strict=True)):
            if not count:
                continue
            x0, x1 = sx(dist.edges[i]), sx(dist.edges[i + 1])
            parts.append(
                f'<rect class="{kind}" x="{_c(x0)}" y="{_c(sy(share))}" '
                f'width="{_c(max(x1 - x0 - 0.5, 0.5))}" height="{_c(bottom - sy(share))}" '
                f'fill="{color}" fill-opacity="0.55"><title>{kind} pairs scoring '
                f"{dist.edges[i]:.3f} to {dist.edges[i + 1]:.3f}: {count} "
                f"({100 * share:.1f}%)</title></rect>"
            )
    for x, k, text, level in placed:
        row = next(r for r in lines if r.level == level)
        assert row.threshold is not None
        at = sx(row.threshold)
        dash = "" if level == "conformal" else ' stroke-dasharray="5 3"'
        color = LEVEL_COLORS.get(level, "#1d1f24")
        label_y = 10 + 15 * (len(rows_of) - 1 - k) + 11
        parts.append(
            f'<line class="cutoff" x1="{_c(at)}" y1="{_c(top - 3)}" x2="{_c(at)}" '
            f'y2="{_c(bottom)}" stroke="{color}" stroke-width="2"{dash}>'
            f"<title>{page.esc(level)}: {row.threshold:.4f}</title></line>"
        )
        parts.append(
            f'<text x="{_c(x)}" y="{_c(label_y)}" text-anchor="middle" style="fill:{color}">'
            f"{page.esc(text)}</text>"
        )
    for i in range(5):
        v = lo + (hi - lo) * i / 4
        # below the y axis' lowest label, which stands at the plot's left bottom corner
        parts.append(_text(sx(v), bottom + 19, f"{v:.2f}", "middle"))
    title = "score (held-out pairs; share of each kind)"
    parts.append(_text(left + plot_w / 2, bottom + 36, title, "middle"))
    y = bottom + 56
    for swatch, dashed, text in legend:
        if dashed is None:
            parts.append(
                f'<rect x="4" y="{_c(y - 9)}" width="14" height="10" fill="{swatch}" '
                'fill-opacity="0.55"/>'
            )
        else:
            dash = ' stroke-dasharray="5 3"' if dashed else ""
            parts.append(
                f'<line x1="4" y1="{_c(y - 4)}" x2="18" y2="{_c(y - 4)}" stroke="{swatch}" '
                f'stroke-width="2"{dash}/>'
            )
        parts.append(_text(24, y, page.esc(text)))
        y += 16
    parts.append("</svg>")
    return "".join(parts)


def _legend_rows(model: CutoffModel, dist: ScoreDistribution) -> list[tuple[str, bool | None, str]]:
    """(colour, dashed line or None for a box, text) per legend row."""

    def unscored(n: int) -> str:
        return f", {n} not returned" if n else ""

    rows: list[tuple[str, bool | None, str]] = [
        (
            _RELEVANT,
            None,
            f"relevant pairs ({dist.relevant_pairs} held-out{unscored(dist.relevant_unscored)})",
        ),
        (
            _RANDOM,
            None,
            f"random pairs ({dist.random_pairs} held-out{unscored(dist.random_unscored)})",
        ),
    ]
    for row in model.rows:
        color = LEVEL_COLORS.get(row.level, "#1d1f24")
        if row.threshold is None:
            rows.append((color, row.level != "conformal", f"{row.level}: no cut-off"))
            continue
        keeps = _f(row.keeps_relevant.value if row.keeps_relevant else None, "{:.1%}")
        lets = _f(row.lets_random.value if row.lets_random else None, "{:.2%}")
        text = f"{row.level} {row.threshold:.4f}: keeps {keeps} of relevant, lets {lets} of random"
        rows.append((color, row.level != "conformal", _short(text, 80)))
    return rows

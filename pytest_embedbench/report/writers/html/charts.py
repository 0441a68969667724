"""Small inline SVG charts: grouped bars with interval whiskers, and accuracy against latency."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from ...summary import DatasetSummary
from ...summary.values import Value
from .page import _c, _f, _num, _Page, _short

#: the width an SVG label of the page's 11px font takes per character, estimated wide: labels
#: whose estimated boxes do not overlap never overlap in a browser either
CHAR_W = 7.0
#: a label's box above and below its baseline
ASCENT, DESCENT = 11.0, 4.0

Box = tuple[float, float, float, float]


def text_box(x: float, y: float, text: str, anchor: str = "start") -> Box:
    """The box ``(x0, y0, x1, y1)`` of a label written at ``(x, y)`` (its baseline)."""
    width = CHAR_W * len(text)
    x0 = x if anchor == "start" else x - width / 2 if anchor == "middle" else x - width
    return (x0, y - ASCENT, x0 + width, y + DESCENT)


class Labels:
    """Places labels inside ``bounds`` without overlapping each other: :meth:`place` takes
    the first candidate position whose box fits, and says None when none does."""

    def __init__(self, bounds: Box) -> None:
        self.bounds = bounds
        self.placed: list[Box] = []

    def fits(self, box: Box) -> bool:
        x0, y0, x1, y1 = self.bounds
        if box[0] < x0 or box[1] < y0 or box[2] > x1 or box[3] > y1:
            return False
        return not any(
            box[0] < b[2] and b[0] < box[2] and box[1] < b[3] and b[1] < box[3] for b in self.placed
        )

    def place(
        self, text: str, candidates: Sequence[tuple[float, float, str]]
    ) -> tuple[float, float, str] | None:
        """The first ``(x, y, anchor)`` of ``candidates`` where ``text`` fits (and keep it)."""
        for x, y, anchor in candidates:
            box = text_box(x, y, text, anchor)
            if self.fits(box):
                self.placed.append(box)
                return x, y, anchor
        return None


def _text(x: float, y: float, text: str, anchor: str = "start", cls: str = "") -> str:
    """An SVG label (``text`` already escaped)."""
    a = "" if anchor == "start" else f' text-anchor="{anchor}"'
    c = f' class="{cls}"' if cls else ""
    return f'<text x="{_c(x)}" y="{_c(y)}"{a}{c}>{text}</text>'


def _legend(page: _Page, colors: Mapping[str, str]) -> None:
    page.add('<p class="legend">')
    for model, color in colors.items():
        page.add(f'<span><i class="sw" style="background:{color}"></i>{page.esc(model)}</span>')
    page.add("</p>\n")


def _svg_open(width: int, height: int, label: str, page: _Page) -> str:
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" '
        f'width="{width}" height="{height}" role="img" aria-label="{page.esc(label)}">'
        f"<title>{page.esc(label)}</title>"
    )


def _axis(x0: float, y0: float, x1: float, y1: float, ticks: Sequence[tuple[float, str]]) -> str:
    """Left axis with horizontal grid lines at ``ticks`` (y position, label)."""
    out = [f'<line x1="{_c(x0)}" y1="{_c(y0)}" x2="{_c(x0)}" y2="{_c(y1)}" stroke="#888"/>']
    out.append(f'<line x1="{_c(x0)}" y1="{_c(y1)}" x2="{_c(x1)}" y2="{_c(y1)}" stroke="#888"/>')
    for y, label in ticks:
        out.append(
            f'<line x1="{_c(x0)}" y1="{_c(y)}" x2="{_c(x1)}" y2="{_c(y)}" stroke="#eee"/>'
            f'<text x="{_c(x0 - 4)}" y="{_c(y + 4)}" text-anchor="end">{label}</text>'
        )
    return "".join(out)


def _nice_max(value: float) -> float:
    if value <= 0 or not math.isfinite(value):
        return 1.0
    exp = 10 ** math.floor(math.log10(value))
    for step in (1, 2, 2.5, 5, 10):
        if value <= step * exp:
            return step * exp
    return 10 * exp


def _chart_metrics(dataset: DatasetSummary) -> list[str]:
    out = []
    for family in ("ndcg", "recall", "mrr", "precision"):
        found = [n for n in dataset.metrics if n.startswith(family + "@")]
        if found:
            out.append(f"{family}@10" if f"{family}@10" in found else found[-1])
    return out


def _triple(v: Value | None) -> tuple[float | None, float | None, float | None]:
    return (None, None, None) if v is None else (v.value, v.low, v.high)


def _bars(
    page: _Page,
    label: str,
    caption: str,
    groups: Sequence[str],
    series: Sequence[tuple[str, str, Sequence[tuple[float | None, float | None, float | None]]]],
    *,
    top: float,
    fmt: str,
) -> None:
    """Grouped vertical bars: ``series`` is (name, colour, [(value, low, high) per group])."""
    width, height, left, bottom, pad = 520, 260, 48, 40, 10
    plot_h = height - bottom - pad
    plot_w = width - left - pad
    group_w = plot_w / max(len(groups), 1)
    bar_w = min(28.0, (group_w - 12) / max(len(series), 1))
    scale = plot_h / top

    def y(v: float) -> float:
        return pad + plot_h - max(0.0, min(v, top)) * scale

    ticks = [(y(top * i / 4), fmt.format(top * i / 4)) for i in range(5)]
    parts = [_svg_open(width, height, label, page), _axis(left, pad, width - pad, y(0), ticks)]
    for g, group in enumerate(groups):
        gx = left + g * group_w + (group_w - bar_w * len(series)) / 2
        for s, (name, color, values) in enumerate(series):
            value, low, high = values[g]
            if value is None or not math.isfinite(value):
                continue
            x = gx + s * bar_w
            parts.append(
                f'<rect class="bar" x="{_c(x + 1)}" y="{_c(y(value))}" width="{_c(bar_w - 2)}" '
                f'height="{_c(y(0) - y(value))}" fill="{color}"><title>{page.esc(name)} '
                f"{page.esc(group)}: {fmt.format(value)}</title></rect>"
            )
            if low is not None and high is not None and math.isfinite(low) and math.isfinite(high):
                cx = x + bar_w / 2
                parts.append(
                    f'<path d="M{_c(cx)} {_c(y(low))}V{_c(y(high))}M{_c(cx - 3)} {_c(y(low))}'
                    f'h6M{_c(cx - 3)} {_c(y(high))}h6" stroke="#222" fill="none"/>'
                )
        parts.append(
            f'<text x="{_c(left + g * group_w + group_w / 2)}" y="{_c(height - bottom + 16)}" '
            f'text-anchor="middle">{page.esc(_short(group))}</text>'
        )
    parts.append("</svg>")
    page.add(f"<figure>{''.join(parts)}<figcaption>{page.esc(caption)}</figcaption></figure>")


def _metric_bars(page: _Page, dataset: DatasetSummary, colors: Mapping[str, str]) -> None:
    names = _chart_metrics(dataset)
    if not names:
        return
    series = [
        (m.model, colors[m.model], [_triple(m.figures.get(n)) for n in names])
        for m in dataset.models
    ]
    _bars(
        page,
        "Retrieval metrics with 95% intervals",
        "Retrieval metrics per model; whiskers: 95% bootstrap interval.",
        names,
        series,
        top=1.0,
        fmt="{:.2f}",
    )


def _latency_bars(page: _Page, dataset: DatasetSummary, colors: Mapping[str, str]) -> None:
    keys = ("p50_ms", "p90_ms", "p95_ms", "p99_ms")
    timed = [m for m in dataset.models if (m.figures.get("p50_ms") or Value(None)).value]
    if not timed:
        return
    found = [_num((m.figures.get(k) or Value(None)).value, 0.0) for m in timed for k in keys]
    top = _nice_max(max(found))
    series = [(m.model, colors[m.model], [_triple(m.figures.get(k)) for k in keys]) for m in timed]
    _bars(
        page,
        "Query latency percentiles (ms)",
        "Query latency percentiles in ms (embedding plus search); whiskers on p50 and p95: "
        "order-statistic 95% intervals.",
        ["p50", "p90", "p95", "p99"],
        series,
        top=top,
        fmt="{:.3g}",
    )


def _cost_bars(page: _Page, dataset: DatasetSummary, colors: Mapping[str, str]) -> None:
    costs = [(m.figures.get("cost_usd") or Value(None)).value for m in dataset.models]
    known = [float(c) for c in costs if c is not None]
    if not known or max(known) <= 0:  # every model is free: the table says so, not a chart
        return
    top = _nice_max(max(known))
    series = [
        (m.model, colors[m.model], [(c, None, None)])
        for m, c in zip(dataset.models, costs, strict=True)
    ]
    _bars(
        page,
        "Estimated cost (USD) to embed the corpus and queries once",
        "Estimated USD to embed the corpus and the queries once at list price (0: local model; "
        "missing: price unknown).",
        ["cost (USD)"],
        series,
        top=top,
        fmt="{:.2g}",
    )


def _scatter(page: _Page, dataset: DatasetSummary, colors: Mapping[str, str]) -> None:
    metric = next(iter(_chart_metrics(dataset)), None)
    # (model, p95, its interval, the metric, its interval)
    points: list[tuple[str, float, tuple[float, float], float, tuple[float, float]]] = []
    for m in dataset.models:
        e = m.figures.get(metric or "")
        p95 = m.figures.get("p95_ms")
        if e is None or e.value is None or p95 is None or p95.value is None:
            continue
        points.append(
            (
                m.model,
                p95.value,
                (_num(p95.low, p95.value), _num(p95.high, p95.value)),
                e.value,
                (_num(e.low, e.value), _num(e.high, e.value)),
            )
        )
    if metric is None or not points:
        return
    width, height, left, bottom, pad = 520, 260, 48, 40, 14
    plot_w, plot_h = width - left - pad, height - bottom - pad
    xmax = _nice_max(max(max(p[1], p[2][1]) for p in points))

    def sx(v: float) -> float:
        return left + max(0.0, min(v, xmax)) / xmax * plot_w

    def sy(v: float) -> float:
        return pad + plot_h - max(0.0, min(v, 1.0)) * plot_h

    ticks = [(sy(i / 4), f"{i / 4:.2f}") for i in range(5)]
    parts = [
        _svg_open(width, height, f"{metric} vs p95 latency", page),
        _axis(left, pad, width - pad, sy(0), ticks),
    ]
    for i in range(5):
        x = sx(xmax * i / 4)
        parts.append(
            f'<text x="{_c(x)}" y="{_c(sy(0) + 14)}" text-anchor="middle">{xmax * i / 4:.3g}</text>'
        )
    parts.append(
        f'<text x="{_c(left + plot_w / 2)}" y="{_c(height - 6)}" text-anchor="middle">'
        "p95 latency (ms)</text>"
    )
    # each point's name beside it, where it overlaps no other name and stays in the plot
    labels = Labels((left + 2, pad, width - 2, sy(0) - 2))
    for model, at, iv, score, (low, high) in points:
        color = colors[model]
        x, y = sx(at), sy(score)
        name = _short(model)
        spots = [
            (x + 8 * side, y + dy, "start" if side > 0 else "end")
            for dy in (-6.0, 14.0, -20.0, 28.0, -34.0, 42.0)
            for side in (1, -1)
        ]
        spot = labels.place(name, spots)
        label = _text(spot[0], spot[1], page.esc(name), spot[2]) if spot else ""
        parts.append(
            f'<path d="M{_c(x)} {_c(sy(low))}V{_c(sy(high))}M{_c(sx(iv[0]))} {_c(y)}'
            f'H{_c(sx(iv[1]))}" stroke="{color}" fill="none" opacity="0.7"/>'
            f'<circle class="point" cx="{_c(x)}" cy="{_c(y)}" r="5" fill="{color}">'
            f"<title>{page.esc(model)}: {metric} {_f(score)}, p95 {at:.1f} ms</title>"
            f"</circle>{label}"
        )
    parts.append("</svg>")
    page.add(
        f"<figure>{''.join(parts)}<figcaption>{page.esc(metric)} against p95 query latency: "
        "up and to the left is better; bars: 95% intervals.</figcaption></figure>"
    )

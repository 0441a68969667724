"""The two stages section: per dataset, each reranker over its model's first stage (what it
was handed, what it realised and cost), each stage's metrics with the lift, its paired
interval, p and Holm-adjusted p, each depth sweep as a curve of nDCG@10 against the p95
latency the reranking adds (inline SVG), and the per-query changes between the stages (the
queries each reranker hurt most, with the relevant documents it pushed out of the top and
those it pushed down, with their ranks before and after).
Every figure is the summary's."""

from __future__ import annotations

import math
from functools import partial

from ...summary import Summary
from ...summary.stages import DepthSweep, StageSection
from ..index_tables import metric_label
from ..stage_tables import STAGE_LEGEND, figure_text, p_text
from .charts import Labels, _nice_max, _svg_open, _text
from .diffs import _diff
from .page import _c, _dataset_sections, _f, _Page
from .stress import _value, model_colors
from .tables import _delta


def _stages(page: _Page, summary: Summary) -> None:
    """The stages section (nothing when no test had a reranker)."""
    write = partial(_stage, summary=summary)
    _dataset_sections(page, ("stages", "stages"), "Two stages", summary.stages, write, STAGE_LEGEND)


def _stage(page: _Page, section: StageSection, summary: Summary) -> None:
    _rerankers(page, section)
    _lifts(page, section)
    colors = model_colors(summary, section.dataset, [s.spec for s in section.sweeps])
    for sweep in section.sweeps:
        _sweep(page, sweep, colors.get(sweep.spec, "#4269d0"))
    diffs = [r.diff for r in section.rows if r.diff is not None]
    if diffs:
        page.add(
            '<h4>Per-query changes between the stages</h4>\n<p class="muted">Each '
            "reranker against its first stage alone on the same queries; the relevant "
            "documents lost are those it pushed out of the top, those pushed down the "
            "relevant candidates it ranked lower, each with its rank in the first stage "
            "&rarr; reranked (out: no longer in the reranked top), highest grade then "
            "farthest fall first.</p>\n"
        )
        for diff in diffs:
            _diff(page, diff)


def _rerankers(page: _Page, section: StageSection) -> None:
    page.add(
        '<div class="wide"><table class="stress"><tr><th>model</th><th class="t">reranker</th>'
        "<th>depth</th><th>ceiling</th><th>realised</th><th>+p50 ms</th><th>+p95 ms</th>"
        "<th>tokens/1k q</th><th>$/1k q</th><th>improved</th><th>degraded</th>"
        '<th class="t">status</th></tr>\n'
    )
    for r in section.rows:
        ceiling = _value(r.figures.get("rerank.ceiling"))
        diff = r.diff
        page.add(
            f'<tr><td><code title="{page.esc(r.nodeid)}">{page.esc(r.model)}</code></td>'
            f'<td class="t"><code title="{page.esc(r.description)}">{page.esc(r.reranker)}'
            f"</code></td><td>{r.depth}</td>"
            f"<td>{'R@' + str(r.depth) + ' ' if ceiling != '-' else ''}{ceiling}</td>"
            f"<td>{page.esc(figure_text(r, 'rerank.realised'))} at R@{r.realised_at}</td>"
            + "".join(
                f"<td>{page.esc(figure_text(r, key))}</td>"
                for key in (
                    "rerank.p50_ms",
                    "rerank.p95_ms",
                    "rerank.tokens_per_1k_queries",
                    "rerank.cost_per_1k_queries",
                )
            )
            + f'<td class="v-better">{diff.improved if diff else "-"}</td>'
            f'<td class="v-worse">{diff.degraded if diff else "-"}</td>'
            f'<td class="t {page.esc(r.status)}">{page.esc(r.status)}</td></tr>\n'
        )
    page.add("</table></div>\n")


def _lifts(page: _Page, section: StageSection) -> None:
    page.add(
        '<div class="wide"><table class="stress"><tr><th>model</th><th class="t">reranker</th>'
        "<th>metric</th><th>first stage</th><th>reranked</th><th>lift</th><th>p</th>"
        "<th>p Holm</th></tr>\n"
    )
    for r in section.rows:
        for m in section.metrics:
            lift = r.lift.get(m)
            page.add(
                f"<tr><td><code>{page.esc(r.model)}</code></td>"
                f'<td class="t"><code>{page.esc(r.reranker)}</code></td>'
                f"<td>{page.esc(metric_label(m))}</td>"
                f"<td>{_value(r.stage1.get(m))}</td><td>{_value(r.reranked.get(m))}</td>"
                f"<td>{_delta(page, lift)}</td>"
                f"<td>{p_text(lift.p_value if lift else None)}</td>"
                f"<td>{p_text(lift.p_holm if lift else None)}</td></tr>\n"
            )
    page.add("</table></div>\n")


def _sweep(page: _Page, sweep: DepthSweep, color: str) -> None:
    """nDCG@10 against the p95 latency the reranking adds, a point per depth (the first stage
    alone at 0 ms), with its 95% interval as a whisker."""
    width, height, left, right, top, bottom = 520.0, 270.0, 52.0, 20.0, 24.0, 44.0
    plot_w, plot_h = width - left - right, height - top - bottom
    points = [p for p in sweep.points if p.value.value is not None]
    xmax = _nice_max(max((p.added_p95_ms for p in points), default=1.0))
    triples = [(p.value.value, p.value.low, p.value.high) for p in points]
    values = [v for triple in triples for v in triple if v is not None]
    low = max(0.0, math.floor(min(values, default=0.0) * 10) / 10)
    high = min(1.0, math.ceil(max(values, default=1.0) * 10) / 10)
    if high - low < 0.2:
        low = max(0.0, min(low, high - 0.2))
        high = min(1.0, low + 0.2)

    def sx(v: float) -> float:
        return left + max(0.0, min(v, xmax)) / xmax * plot_w

    def sy(v: float) -> float:
        return top + plot_h - (max(low, min(high, v)) - low) / (high - low) * plot_h

    label = f"{metric_label(sweep.metric)} by rerank depth for {sweep.spec} over {sweep.model}"
    parts = [
        _svg_open(round(width), round(height), label, page),
        _text(4, 14, page.esc(metric_label(sweep.metric)), cls="h"),
    ]
    step = 0.1 if high - low > 0.3 else 0.05  # grid lines at round values
    for i in range(round((high - low) / step) + 1):
        v = low + i * step
        parts.append(
            f'<line x1="{_c(left)}" y1="{_c(sy(v))}" x2="{_c(width - right)}" y2="{_c(sy(v))}" '
            f'stroke="{"#888" if i == 0 else "#eee"}"/>'
        )
        parts.append(_text(left - 4, sy(v) + 4, f"{v:.2f}", "end"))
    for i in range(5):
        x = sx(xmax * i / 4)
        parts.append(_text(x, top + plot_h + 15, f"{xmax * i / 4:.3g}", "middle"))
    parts.append(
        _text(left + plot_w / 2, height - 8, "p95 latency the reranking adds (ms)", "middle")
    )
    path = " ".join(f"{_c(sx(p.added_p95_ms))},{_c(sy(p.value.value or 0.0))}" for p in points)
    parts.append(
        f'<polyline class="curve" points="{path}" fill="none" stroke="{color}" stroke-width="2"/>'
    )
    labels = Labels((left + 2, top, width - 2, top + plot_h - 2))
    for p in points:
        x, y = sx(p.added_p95_ms), sy(p.value.value or 0.0)
        if p.value.low is not None and p.value.high is not None:
            parts.append(
                f'<path d="M{_c(x)} {_c(sy(p.value.low))}V{_c(sy(p.value.high))}" '
                f'stroke="{color}" fill="none" opacity="0.6"/>'
            )
        name = "first stage" if p.depth == 0 else f"@{p.depth}"
        spots = [
            (x + 8 * side, y + dy, "start" if side > 0 else "end")
            for dy in (-6.0, 14.0, -20.0, 28.0)
            for side in (1, -1)
        ]
        spot = labels.place(name, spots)
        parts.append(
            f'<circle class="point" cx="{_c(x)}" cy="{_c(y)}" r="4" fill="{color}">'
            f"<title>{page.esc(name)}: {page.esc(metric_label(sweep.metric))} "
            f"{_f(p.value.value)} [{_f(p.value.low, '{:.3f}')}, {_f(p.value.high, '{:.3f}')}], "
            f"+p95 {p.added_p95_ms:.2f} ms</title></circle>"
            + (_text(spot[0], spot[1], page.esc(name), spot[2]) if spot else "")
        )
    parts.append("</svg>")
    page.add(
        f"<figure>{''.join(parts)}<figcaption>{page.esc(label)}: each depth's "
        f"{page.esc(metric_label(sweep.metric))} (whiskers: 95% intervals) against the p95 "
        "latency its reranking adds per query; the first stage alone at 0 ms. Up and to the "
        "left is better.</figcaption></figure>\n"
    )

"""The HTML report (``--embedbench-html=PATH``, ``embedbench report r.json -o report.html``).

:func:`render_html` reads the JSON report dict only, so a saved run renders byte for byte as
the run itself did: no clock, no environment lookups besides masking secret values, sorted
keys, fixed number formats. The page is one file: inline CSS and inline SVG charts written
here (no script, no charting library: a library would add hundreds of kilobytes, or a browser
or a runtime, to draw four kinds of bars and points), a Content-Security-Policy that forbids
every remote load, readable without JavaScript and printable. Usage::

    html = render_html(json.loads(Path("report.json").read_text()), priority="speed")

Every piece of user text (model names, query texts, ids, errors, configuration) goes through
:func:`html.escape`; the configuration and the environment are shown redacted as the JSON
report redacts them.
"""

from __future__ import annotations

import html
import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

from .json_report import _secret_env_values, redact
from .summary import ModelRow, model_rows
from .tabular import FIGURES, Figure, metric_names

__all__ = ["CSP", "render_html"]

#: no remote loads of any kind: only inline styles and data: images
CSP = (
    "default-src 'none'; style-src 'unsafe-inline'; img-src data:; "
    "base-uri 'none'; form-action 'none'"
)
_BEST = ' class="best" title="best in column"'
_PALETTE = ("#4269d0", "#efb118", "#ff725c", "#6cc5b0", "#3ca951", "#ff8ab7", "#a463f2", "#97bbf5")
_CSS = """
:root{--fg:#1d1f24;--muted:#5b6270;--line:#d9dde3;--bg:#fff;--card:#f5f7fa;--best:#e4f3e6}
*{box-sizing:border-box}
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:var(--fg);
background:var(--bg);margin:0 auto;max-width:1200px;padding:24px}
h1{font-size:24px;margin:0 0 4px}h2{font-size:20px;margin:32px 0 8px;border-bottom:2px solid
var(--line);padding-bottom:4px}h3{font-size:16px;margin:20px 0 8px}
.muted{color:var(--muted)}.cards{display:flex;flex-wrap:wrap;gap:12px;margin:16px 0}
.card{background:var(--card);border:1px solid var(--line);border-radius:8px;padding:10px 14px;
min-width:150px;flex:1}.card b{display:block;font-size:20px}.card span{color:var(--muted);
font-size:12px}.card.pick{border-color:#3ca951}
table{border-collapse:collapse;margin:8px 0 16px;font-size:13px;width:100%}
th,td{border-bottom:1px solid var(--line);padding:4px 8px;text-align:right;vertical-align:top}
th{background:var(--card);font-weight:600}th:first-child,td:first-child,td.t,th.t{text-align:left}
td.best{background:var(--best);font-weight:600}.iv{color:var(--muted);font-size:11px}
.failed,.error{color:#b3261e;font-weight:600}.passed{color:#1e7b34}
.wide{overflow-x:auto}td:first-child{white-space:nowrap}
.charts{display:flex;flex-wrap:wrap;gap:16px}figure{margin:0;flex:1;min-width:320px}
figcaption{font-size:12px;color:var(--muted)}svg{max-width:100%;height:auto}
svg text{font:11px system-ui,sans-serif;fill:#333}
details{margin:6px 0;border:1px solid var(--line);border-radius:6px;padding:4px 10px}
summary{cursor:pointer;font-weight:600}code,pre{font:12px ui-monospace,Menlo,Consolas,monospace}
pre{background:var(--card);padding:10px;overflow:auto;white-space:pre-wrap}
.hit{color:#1e7b34;font-weight:600}.miss{color:#b3261e}ol.ids{margin:0;padding-left:20px}
.legend span{display:inline-block;margin-right:12px;font-size:12px}
.sw{display:inline-block;width:10px;height:10px;margin-right:4px;vertical-align:middle}
@media print{body{max-width:none;padding:0;font-size:11px}.wide{overflow:visible}
table,figure,.card{break-inside:avoid}details{border:none;padding:0}
a{color:inherit;text-decoration:none}}
"""


def _f(value: Any, fmt: str = "{:.4f}", missing: str = "-") -> str:
    if value is None or isinstance(value, bool) or not isinstance(value, (int, float)):
        return missing
    if math.isnan(value):
        return missing
    if not math.isfinite(value):
        return "inf"
    return fmt.format(value)


def _c(x: float) -> str:
    """An SVG coordinate: two decimals, so output never depends on float noise."""
    return f"{x:.2f}"


class _Page:
    """Collects the page's parts; ``esc`` escapes text and masks secret values."""

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.secrets = _secret_env_values()

    def esc(self, value: Any) -> str:
        return html.escape(redact(str(value), self.secrets), quote=True)

    def add(self, *parts: str) -> None:
        self.parts.extend(parts)


def render_html(
    report: Mapping[str, Any], *, priority: str | None = None, title: str | None = None
) -> str:
    """One self-contained HTML page for a JSON report (see the module doc).

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


def _anchor(name: str) -> str:
    return "".join(ch if ch.isalnum() else "-" for ch in name)


def _commit_line(page: _Page, commit: Any) -> str:
    if not isinstance(commit, Mapping) or not commit.get("id"):
        return ""
    dirty = " (dirty)" if commit.get("dirty") else ""
    return (
        f" &middot; commit <code>{page.esc(str(commit['id'])[:12])}</code>"
        f" on {page.esc(commit.get('branch') or '?')}{dirty}"
    )


def _stat_cards(page: _Page, report: Mapping[str, Any], rows: Mapping[str, Any]) -> None:
    tests = report.get("tests") or []
    statuses: dict[str, int] = {}
    for t in tests:
        statuses[str(t.get("status"))] = statuses.get(str(t.get("status")), 0) + 1
    models = sorted({str(t.get("model")) for t in tests})
    queries = sum(
        (r[0]["result"] or {}).get("queries", 0) if r and r[0]["result"] else 0
        for r in rows.values()
    )
    best = None
    for found in rows.values():
        for row in found:
            value = (((row["result"] or {}).get("metrics") or {}).get("ndcg@10") or {}).get("value")
            if value is not None and (best is None or value > best[0]):
                best = (value, row["model"])
    cache = report.get("cache") or {}
    cards = [
        (str(len(tests)), "tests: " + ", ".join(f"{n} {s}" for s, n in sorted(statuses.items()))),
        (str(len(models)), "models"),
        (str(len(rows)), "datasets"),
        (str(queries), "judged queries"),
        (_f(best[0]) if best else "-", f"best nDCG@10 ({best[1]})" if best else "best nDCG@10"),
        (_f(cache.get("hit_rate"), "{:.0%}"), "embedding cache hits"),
    ]
    page.add('<section class="cards">')
    for value, label in cards:
        page.add(f'<div class="card"><b>{page.esc(value)}</b><span>{page.esc(label)}</span></div>')
    page.add("</section>\n")


def _best(values: Sequence[float | None], higher: bool | None) -> float | None:
    pool = [v for v in values if v is not None and math.isfinite(v)]
    if higher is None or len(pool) < 2:
        return None
    return max(pool) if higher else min(pool)


def _dataset(
    page: _Page,
    report: Mapping[str, Any],
    dataset: str,
    rows: Sequence[ModelRow],
    priority: str,
) -> None:
    results = [r["result"] for r in rows]
    first = next((r for r in results if r), None)
    size = f" &middot; {first['queries']} queries, {first['documents']} documents" if first else ""
    page.add(
        f'<section id="ds-{_anchor(dataset)}"><h2>Dataset {page.esc(dataset)}'
        f'<span class="muted" style="font-size:14px;font-weight:400">{size}</span></h2>\n'
    )
    colors = {row["model"]: _PALETTE[i % len(_PALETTE)] for i, row in enumerate(rows)}
    rec = ((report.get("recommendations") or {}).get("datasets") or {}).get(dataset)
    if rec:
        _recommendation(page, rec, priority)
    _accuracy(page, rows)
    page.add('<div class="charts">')
    _metric_bars(page, rows, colors)
    _scatter(page, rows, colors)
    _latency_bars(page, rows, colors)
    _cost_bars(page, rows, colors)
    page.add("</div>\n")
    _legend(page, colors)
    _figures_table(page, rows)
    _comparisons(page, (report.get("comparisons") or {}).get(dataset) or {})
    _queries(page, report, dataset)
    page.add("</section>\n")


def _recommendation(page: _Page, rec: Mapping[str, Any], priority: str) -> None:
    page.add('<h3>Recommendation</h3>\n<div class="cards">')
    for name, pick in sorted(rec.get("picks", {}).items(), key=lambda kv: kv[0] != priority):
        w, c = pick["weights"], pick["components"]
        selected = name == priority
        page.add(
            f'<div class="card{" pick" if selected else ""}"><span>'
            f"{page.esc(name)}{'-first' if name != 'balanced' else ''}"
            f"{' (selected)' if selected else ''}</span><b>{page.esc(pick['model'])}</b>"
            f"<span>score {_f(pick['score'], '{:.3f}')} = "
            f"{_f(w['accuracy'], '{:.2f}')}&times;accuracy {_f(c['accuracy'], '{:.3f}')} + "
            f"{_f(w['speed'], '{:.2f}')}&times;speed {_f(c['speed'], '{:.3f}')} + "
            f"{_f(w['cost'], '{:.2f}')}&times;cost {_f(c['cost'], '{:.3f}')}</span></div>"
        )
    page.add("</div>\n")
    components = rec.get("components") or {}
    if components:
        page.add("<table><tr><th>model</th><th>accuracy</th><th>speed</th><th>cost</th></tr>")
        for model, comp in sorted(components.items()):
            page.add(
                f"<tr><td>{page.esc(model)}</td><td>{_f(comp.get('accuracy'), '{:.3f}')}</td>"
                f"<td>{_f(comp.get('speed'), '{:.3f}')}</td>"
                f"<td>{_f(comp.get('cost'), '{:.3f}')}</td></tr>"
            )
        page.add("</table>\n")
    tiers = [t for t in rec.get("speed_tiers") or [] if len(t) > 1]
    if tiers:
        page.add(
            '<p class="muted">Equally fast (overlapping p95 intervals): '
            + "; ".join(" = ".join(page.esc(m) for m in t) for t in tiers)
            + "</p>\n"
        )


def _status(page: _Page, row: ModelRow) -> str:
    status = row["status"]
    text = page.esc(status)
    if row["error"]:
        first = str(row["error"]).strip().splitlines()[0] if str(row["error"]).strip() else ""
        text += f'<br><span class="iv">{page.esc(first[:200])}</span>'
    return f'<td class="t {page.esc(status)}">{text}</td>'


#: the comparison table's metrics (every other one is under "all metrics")
KEY_METRICS = ("ndcg@10", "mrr@10", "recall@10", "recall@100")


def _accuracy(page: _Page, rows: Sequence[ModelRow]) -> None:
    names = metric_names([r["result"] for r in rows])
    key = [m for m in KEY_METRICS if m in names] or names[:4]
    page.add("<h3>Accuracy</h3>\n")
    _accuracy_table(page, rows, key)
    if len(names) > len(key):
        page.add(f"<details><summary>All {len(names)} metrics</summary>")
        _accuracy_table(page, rows, names)
        page.add("</details>\n")
    page.add(
        '<p class="muted">★ best in column; [low, high]: 95% bootstrap interval over queries.</p>\n'
    )


def _accuracy_table(page: _Page, rows: Sequence[ModelRow], names: Sequence[str]) -> None:
    page.add('<div class="wide"><table><tr><th>model</th>')
    page.add("".join(f"<th>{page.esc(n)}</th>" for n in names))
    page.add('<th>Δ nDCG@10 vs baseline</th><th class="t">status</th></tr>\n')
    values = {
        n: [(((r["result"] or {}).get("metrics") or {}).get(n) or {}).get("value") for r in rows]
        for n in names
    }
    best = {n: _best(values[n], True) for n in names}
    for i, row in enumerate(rows):
        page.add(f"<tr><td>{page.esc(row['model'])}</td>")
        for n in names:
            entry = ((row["result"] or {}).get("metrics") or {}).get(n)
            if not entry:
                page.add("<td>-</td>")
                continue
            mark = values[n][i] is not None and values[n][i] == best[n]
            page.add(
                f"<td{_BEST if mark else ''}>"
                f'{_f(entry["value"])}{" ★" if mark else ""}<br><span class="iv">'
                f"[{_f(entry.get('low'), '{:.3f}')}, {_f(entry.get('high'), '{:.3f}')}]</span></td>"
            )
        page.add(f"<td>{_delta(row['baseline'])}</td>{_status(page, row)}</tr>\n")
    page.add("</table></div>\n")


def _delta(entry: Mapping[str, Any] | None) -> str:
    if not entry:
        return "-"
    text = (
        f"{_f(entry.get('difference'), '{:+.4f}')} [{_f(entry.get('low'), '{:+.3f}')}, "
        f"{_f(entry.get('high'), '{:+.3f}')}]"
    )
    if entry.get("regressed"):
        text += ' <span class="failed">regressed</span>'
    elif entry.get("significant"):
        text += " significant"
    elif entry.get("inconclusive"):
        text += " inconclusive"
    return text


def _figures_table(page: _Page, rows: Sequence[ModelRow]) -> None:
    """Latency, throughput, memory, index and cost: every :data:`FIGURES` column that any row
    has a value for."""
    shown: list[Figure] = [f for f in FIGURES if any(f.get(r["result"]) is not None for r in rows)]
    if not shown:
        return
    page.add(
        '<h3>Latency, throughput, footprint and cost</h3>\n<div class="wide"><table><tr>'
        "<th>model</th>"
    )
    page.add("".join(f"<th>{page.esc(f.header)}</th>" for f in shown))
    page.add("</tr>\n")
    values = {f.key: [f.get(r["result"]) for r in rows] for f in shown}
    best = {f.key: _best(values[f.key], f.higher_is_better) for f in shown}
    for i, row in enumerate(rows):
        page.add(f"<tr><td>{page.esc(row['model'])}</td>")
        for f in shown:
            value = values[f.key][i]
            mark = value is not None and value == best[f.key]
            text = f.text(value)
            if f.key == "vram_peak_mb" and value is not None:
                source = ((row["result"] or {}).get("resources") or {}).get("vram_source")
                text += f'<br><span class="iv">{page.esc(source or "")}</span>'
            if f.key == "p95_ms":
                iv = ((row["result"] or {}).get("latency") or {}).get("p95_interval_ms")
                if iv and len(iv) == 2:
                    low, high = _f(iv[0], "{:.1f}"), _f(iv[1], "{:.1f}")
                    text += f'<br><span class="iv">[{low}, {high}]</span>'
            page.add(f"<td{_BEST if mark else ''}>{text}{' ★' if mark else ''}</td>")
        page.add("</tr>\n")
    page.add(
        '</table>\n<p class="muted">Latency covers query embedding plus search, the median '
        "over timed passes; queries/s is a reciprocal mean latency, not a load test. docs/s "
        "counts only documents actually embedded. Cold batch: the first document batch after "
        "the model loaded; warm: the median of the others. VRAM: PyTorch's CUDA peak "
        "allocation, or Ollama's /api/ps resident size; n/a on CPU. Index MB: the in-memory "
        "index (vectors, or BM25's sparse matrix). Cost: list price times tokens, a comparison "
        "aid, not a bill.</p>\n"
    )


def _comparisons(page: _Page, versus: Mapping[str, Mapping[str, Any]]) -> None:
    if not versus:
        return
    page.add(
        '<h3>Paired comparisons</h3>\n<table><tr><th>model</th><th class="t">reference</th>'
        "<th>metric</th><th>Δ</th><th>95% interval</th><th>p</th><th>p (Holm)</th>"
        '<th>queries</th><th class="t">test</th></tr>\n'
    )
    for model, e in sorted(versus.items()):
        significant = e.get("p_holm") is not None and e["p_holm"] < 0.05
        page.add(
            f'<tr><td>{page.esc(model)}</td><td class="t">{page.esc(e.get("reference", ""))}'
            f"</td><td>{page.esc(e.get('metric', 'ndcg@10'))}</td>"
            f"<td{_BEST if significant else ''}>{_f(e.get('difference'), '{:+.4f}')}"
            f"</td><td>[{_f(e.get('low'), '{:+.4f}')}, {_f(e.get('high'), '{:+.4f}')}]</td>"
            f"<td>{_f(e.get('p_value'), '{:.3g}')}</td><td>{_f(e.get('p_holm'), '{:.3g}')}</td>"
            f'<td>{_f(e.get("n"), "{:.0f}")}</td><td class="t">{page.esc(e.get("test", ""))}'
            "</td></tr>\n"
        )
    page.add("</table>\n")


# -- charts: small inline SVG ------------------------------------------------------------------


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


def _chart_metrics(rows: Sequence[ModelRow]) -> list[str]:
    names = metric_names([r["result"] for r in rows])
    out = []
    for family in ("ndcg", "recall", "mrr", "precision"):
        found = [n for n in names if n.startswith(family + "@")]
        if found:
            out.append(f"{family}@10" if f"{family}@10" in found else found[-1])
    return out


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


def _short(text: str, width: int = 18) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def _metric_bars(page: _Page, rows: Sequence[ModelRow], colors: Mapping[str, str]) -> None:
    names = _chart_metrics(rows)
    if not names:
        return
    series = []
    for row in rows:
        metrics = (row["result"] or {}).get("metrics") or {}
        values = []
        for n in names:
            e = metrics.get(n) or {}
            values.append((e.get("value"), e.get("low"), e.get("high")))
        series.append((row["model"], colors[row["model"]], values))
    _bars(
        page,
        "Retrieval metrics with 95% intervals",
        "Retrieval metrics per model; whiskers: 95% bootstrap interval.",
        names,
        series,
        top=1.0,
        fmt="{:.2f}",
    )


def _latency_bars(page: _Page, rows: Sequence[ModelRow], colors: Mapping[str, str]) -> None:
    keys = ("p50_ms", "p90_ms", "p95_ms", "p99_ms")
    timed = [r for r in rows if ((r["result"] or {}).get("latency") or {}).get("p50_ms")]
    if not timed:
        return
    found = [
        _num(((r["result"] or {}).get("latency") or {}).get(k), 0.0) for r in timed for k in keys
    ]
    top = _nice_max(max(found))
    series = []
    for row in timed:
        lat = (row["result"] or {}).get("latency") or {}
        values = []
        for k in keys:
            iv = lat.get(k.replace("_ms", "_interval_ms")) or [None, None]
            values.append((lat.get(k), iv[0], iv[1]))
        series.append((row["model"], colors[row["model"]], values))
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


def _cost_bars(page: _Page, rows: Sequence[ModelRow], colors: Mapping[str, str]) -> None:
    costs = [((r["result"] or {}).get("cost") or {}).get("usd") for r in rows]
    if not any(c is not None for c in costs):
        return
    known = [float(c) for c in costs if c is not None]
    if max(known) <= 0:  # every model is free: the table says so, a chart of zeros would not
        return
    top = _nice_max(max(known))
    series = [
        (row["model"], colors[row["model"]], [(c, None, None)])
        for row, c in zip(rows, costs, strict=True)
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


def _scatter(page: _Page, rows: Sequence[ModelRow], colors: Mapping[str, str]) -> None:
    metric = next(iter(_chart_metrics(rows)), None)
    points = []
    for row in rows:
        result = row["result"] or {}
        e = (result.get("metrics") or {}).get(metric or "") or {}
        lat = result.get("latency") or {}
        p95 = lat.get("p95_ms")
        if e.get("value") is None or not isinstance(p95, (int, float)) or not math.isfinite(p95):
            continue
        iv = lat.get("p95_interval_ms") or [p95, p95]
        points.append((row["model"], float(p95), e, iv))
    if metric is None or not points:
        return
    width, height, left, bottom, pad = 520, 260, 48, 40, 14
    plot_w, plot_h = width - left - pad, height - bottom - pad
    xmax = _nice_max(max(max(p[1], _num(p[3][1], p[1])) for p in points))

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
    for model, p95, e, iv in points:
        color = colors[model]
        x, y = sx(p95), sy(float(e["value"]))
        low, high = _num(e.get("low"), e["value"]), _num(e.get("high"), e["value"])
        parts.append(
            f'<path d="M{_c(x)} {_c(sy(low))}V{_c(sy(high))}M{_c(sx(_num(iv[0], p95)))} {_c(y)}'
            f'H{_c(sx(_num(iv[1], p95)))}" stroke="{color}" fill="none" opacity="0.7"/>'
            f'<circle class="point" cx="{_c(x)}" cy="{_c(y)}" r="5" fill="{color}">'
            f"<title>{page.esc(model)}: {metric} {_f(e['value'])}, p95 {p95:.1f} ms</title>"
            f'</circle><text x="{_c(x + 7)}" y="{_c(y - 6)}">{page.esc(_short(model))}</text>'
        )
    parts.append("</svg>")
    page.add(
        f"<figure>{''.join(parts)}<figcaption>{page.esc(metric)} against p95 query latency: "
        "up and to the left is better; bars: 95% intervals.</figcaption></figure>"
    )


def _num(value: Any, default: float) -> float:
    if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
        return float(value)
    return float(default)


# -- per-query drill-down, gate, stress, environment ------------------------------------------


def _queries(page: _Page, report: Mapping[str, Any], dataset: str) -> None:
    """Per test and model, its queries worst first (by nDCG@10 or the first metric), with
    what was retrieved against what was relevant, inside ``<details>``."""
    tests = sorted(
        (
            t
            for t in report.get("tests") or []
            # a stress point's queries are not the dataset's: they are in the stress section
            if t.get("dataset") == dataset and t.get("result") and not t.get("workload")
        ),
        key=lambda t: str(t.get("nodeid")),
    )
    # one model's queries once, even when several tests ran it: the test with most metrics
    by_model: dict[str, Mapping[str, Any]] = {}
    for test in tests:
        model = str(test.get("model"))
        size = len(test["result"].get("per_query") or {})
        if model not in by_model or size > len(by_model[model]["result"].get("per_query") or {}):
            by_model[model] = test
    shown = [by_model[m] for m in sorted(by_model)]
    if not shown:
        return
    page.add("<h3>Per-query results</h3>\n")
    for test in shown:
        _query_table(page, test)


def _query_table(page: _Page, test: Mapping[str, Any]) -> None:
    result = test["result"]
    per_query = result.get("per_query") or {}
    names = [n for n in metric_names([result]) if n in per_query]
    if not names:
        return
    main = "ndcg@10" if "ndcg@10" in names else names[0]
    extra = [n for n in names if n.split("@")[0] in ("recall", "mrr") and n != main][:3]
    scores = per_query[main]
    texts = result.get("query_texts") or {}
    retrieved = result.get("retrieved") or {}
    relevant = result.get("relevant") or {}
    chunks = result.get("winning_chunks") or {}
    latency = (result.get("latency") or {}).get("per_query_ms")
    by_id: Mapping[str, Any] = latency if isinstance(latency, Mapping) else {}
    if isinstance(latency, list) and texts and len(latency) == len(texts):
        by_id = dict(zip(texts, latency, strict=True))
    order = sorted(scores, key=lambda q: (_num(scores[q], 0.0), q))
    page.add(
        f"<details><summary>{page.esc(test.get('model'))}: {len(order)} queries, worst "
        f'{page.esc(main)} first <span class="muted">({page.esc(test.get("nodeid"))})'
        '</span></summary>\n<table><tr><th class="t">query</th>'
        f"<th>{page.esc(main)}</th>"
        + "".join(f"<th>{page.esc(n)}</th>" for n in extra)
        + '<th>ms</th><th class="t">retrieved (relevant in green, with grade)</th>'
        '<th class="t">relevant not retrieved</th></tr>\n'
    )
    for qid in order:
        wanted = relevant.get(qid) or {}
        got = retrieved.get(qid) or []
        rows = chunks.get(qid)
        # a chunked dataset: each retrieved document with the chunk that won it
        won = (
            {r.get("doc_id"): r for r in rows if isinstance(r, Mapping)}
            if isinstance(rows, list)
            else {}
        )
        items = "".join(
            (
                f'<li class="hit">{page.esc(d)} ({page.esc(wanted[d])})'
                if d in wanted
                else f"<li>{page.esc(d)}"
            )
            + (_won_html(page, won[d]) if d in won else "")
            + "</li>"
            for d in got
        )
        missing = ", ".join(page.esc(d) for d in sorted(wanted) if d not in got)
        text = texts.get(qid)
        chunk = None if won else chunks.get(qid)
        chunk_html = (
            f'<br><span class="iv">winning chunk: {page.esc(_chunk_text(chunk))}</span>'
            if chunk
            else ""
        )
        page.add(
            f'<tr><td class="t"><code>{page.esc(qid)}</code>'
            + (f"<br>{page.esc(text)}" if text else "")
            + f"{chunk_html}</td><td>{_f(scores.get(qid))}</td>"
            + "".join(f"<td>{_f((per_query.get(n) or {}).get(qid))}</td>" for n in extra)
            + f"<td>{_f(by_id.get(qid), '{:.1f}')}</td>"
            + f'<td class="t"><ol class="ids">{items}</ol></td>'
            + f'<td class="t miss">{missing}</td></tr>\n'
        )
    page.add("</table></details>\n")


def _won_html(page: _Page, row: Mapping[str, Any]) -> str:
    """The winning chunk of one retrieved document: its id, character span and PDF page."""
    where = f"[{row.get('start')}:{row.get('end')}]"
    if row.get("page") is not None:
        where += f" p. {row.get('page')}"
    return f' <span class="iv">{page.esc(row.get("chunk_id"))} {page.esc(where)}</span>'


def _chunk_text(chunk: Any) -> str:
    if isinstance(chunk, Mapping):
        return ", ".join(f"{k}={chunk[k]}" for k in sorted(chunk))
    return str(chunk)


def _gate(page: _Page, report: Mapping[str, Any]) -> None:
    """Per test, the baseline gate's outcome: status, deltas, failures and warnings."""
    gated = [t for t in report.get("tests") or [] if t.get("baseline")]
    block = report.get("baseline") or {}
    if not gated and not block:
        return
    page.add("<section><h2>Baseline and gates</h2>\n")
    if block.get("path"):
        page.add(
            f'<p class="muted">Baseline file <code>{page.esc(block["path"])}</code>'
            + (f"; updated ({page.esc(block['update'])})" if block.get("update") else "")
            + "</p>\n"
        )
    if gated:
        page.add(
            '<table><tr><th class="t">test</th><th class="t">gate</th><th>metric</th>'
            '<th>baseline</th><th>current</th><th>Δ [95%]</th><th class="t">failures and '
            "warnings</th></tr>\n"
        )
        for test in sorted(gated, key=lambda t: str(t.get("nodeid"))):
            outcome = test["baseline"]
            deltas = outcome.get("deltas") or {"": {}}
            notes = [*outcome.get("failures", []), *outcome.get("warnings", [])]
            for i, (metric, d) in enumerate(sorted(deltas.items())):
                status = str(outcome.get("status", ""))
                page.add(
                    f'<tr><td class="t">{page.esc(test.get("nodeid")) if i == 0 else ""}</td>'
                    f'<td class="t {page.esc(status)}">{page.esc(status) if i == 0 else ""}</td>'
                    f"<td>{page.esc(metric)}</td><td>{_f(d.get('baseline'))}</td>"
                    f"<td>{_f(d.get('current'))}</td><td>{_delta(d) if d else '-'}</td>"
                    f'<td class="t">{"<br>".join(page.esc(n) for n in notes) if i == 0 else ""}'
                    "</td></tr>\n"
                )
        page.add("</table>\n")
    for label, key in (("Orphaned entries", "orphaned"), ("Not recorded", "not_recorded")):
        if block.get(key):
            page.add(f"<p>{label}: " + ", ".join(page.esc(x) for x in block[key]) + "</p>\n")
    page.add("</section>\n")


def _stress(page: _Page, report: Mapping[str, Any]) -> None:
    """Stress results where the report has them (a top-level ``stress`` block, or one per
    result), rendered as nested tables: only what exists is shown."""
    found: list[tuple[str, Any]] = []
    if report.get("stress"):
        found.append(("run", report["stress"]))
    for test in sorted(report.get("tests") or [], key=lambda t: str(t.get("nodeid"))):
        for key in ("stress", "cutoffs"):
            value = (test.get("result") or {}).get(key)
            if value:
                found.append((f"{test.get('nodeid')} ({key})", value))
    if not found:
        return
    page.add("<section><h2>Stress results</h2>\n")
    for label, value in found:
        page.add(f"<h3>{page.esc(label)}</h3>\n{_generic(page, value)}\n")
    page.add("</section>\n")


def _generic(page: _Page, value: Any, depth: int = 0) -> str:
    """Any JSON value as nested tables (depth-limited; deeper levels as JSON text)."""
    if isinstance(value, Mapping):
        if depth > 3:
            return f"<code>{page.esc(json.dumps(value, sort_keys=True))}</code>"
        cells = "".join(
            f'<tr><th class="t">{page.esc(k)}</th><td class="t">'
            f"{_generic(page, value[k], depth + 1)}</td></tr>"
            for k in sorted(value, key=str)
        )
        return f"<table>{cells}</table>"
    if isinstance(value, list):
        if value and all(isinstance(v, Mapping) for v in value) and depth <= 3:
            keys = sorted({str(k) for v in value for k in v})
            head = "".join(f"<th>{page.esc(k)}</th>" for k in keys)
            body = "".join(
                "<tr>"
                + "".join(f"<td>{_generic(page, v.get(k), depth + 1)}</td>" for k in keys)
                + "</tr>"
                for v in value
            )
            return f"<table><tr>{head}</tr>{body}</table>"
        return ", ".join(_generic(page, v, depth + 1) for v in value)
    if isinstance(value, float):
        return _f(value, "{:.4g}")
    if value is None:
        return "-"
    return page.esc(value)


def _environment(page: _Page, report: Mapping[str, Any]) -> None:
    page.add("<section><h2>Environment and configuration</h2>\n")
    for label, key in (
        ("Machine", "machine"),
        ("Packages", "packages"),
        ("Commit", "commit"),
        ("Embedding cache", "cache"),
    ):
        value = report.get(key)
        if value:
            page.add(
                f"<details><summary>{label}</summary>"
                f"{_generic(page, redact(value, page.secrets))}</details>\n"
            )
    config = report.get("configuration")
    if config:
        text = json.dumps(redact(config, page.secrets), indent=2, sort_keys=True, default=str)
        page.add(
            "<details open><summary>Configuration (secrets redacted)</summary>"
            f"<pre>{page.esc(text)}</pre></details>\n"
        )
    page.add("</section>\n")

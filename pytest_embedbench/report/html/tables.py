"""A dataset's tables: accuracy with intervals, latency and footprint figures, comparisons."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from ..summary import ModelRow, latency_basis
from ..tabular import FIGURES, Figure, metric_names
from .assets import _BEST
from .page import _f, _Page


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


def _best(values: Sequence[float | None], higher: bool | None) -> float | None:
    pool = [v for v in values if v is not None and math.isfinite(v)]
    if higher is None or len(pool) < 2:
        return None
    return max(pool) if higher else min(pool)


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
    basis = latency_basis(rows)
    latency = (
        f"Latency covers query embedding plus search, {page.esc(basis)}; queries/s is a "
        "reciprocal mean latency, not a load test."
        if basis
        else "No query was timed in this run: the latency figures are empty."
    )
    page.add(
        f'</table>\n<p class="muted">{latency} docs/s '
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

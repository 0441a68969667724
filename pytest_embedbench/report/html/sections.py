"""The page's sections: summary cards, one section per dataset, the baseline gate, stress
results and the environment."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from ...redaction import redact
from ..summary import ModelRow
from .assets import _PALETTE
from .charts import _cost_bars, _latency_bars, _legend, _metric_bars, _scatter
from .page import _anchor, _f, _Page
from .queries import _queries
from .tables import _accuracy, _comparisons, _delta, _figures_table


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

"""The page's sections: summary cards, one section per dataset, the baseline gate and the
environment (the stress and cut-off sections are in :mod:`.stress`)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from ....core.redaction import redact
from ...summary import DatasetSummary, Recommendation, Summary
from ..text import tier_lines
from .assets import _PALETTE
from .charts import _cost_bars, _latency_bars, _legend, _metric_bars, _scatter
from .diffs import _diffs
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


def _stat_cards(page: _Page, summary: Summary) -> None:
    t = summary.totals
    best = t.best_ndcg is not None
    cards = [
        (str(t.tests), "tests: " + ", ".join(f"{n} {s}" for s, n in t.statuses.items())),
        (str(t.models), "models"),
        (str(t.datasets), "datasets"),
        (str(t.queries), "judged queries"),
        (
            _f(t.best_ndcg) if best else "-",
            f"best nDCG@10 ({t.best_model})" if best else "best nDCG@10",
        ),
        (_f(t.cache_hit_rate, "{:.0%}"), "embedding cache hits"),
    ]
    page.add('<section class="cards">')
    for value, label in cards:
        page.add(f'<div class="card"><b>{page.esc(value)}</b><span>{page.esc(label)}</span></div>')
    page.add("</section>\n")


def _dataset(page: _Page, summary: Summary, dataset: DatasetSummary, priority: str) -> None:
    size = (
        f" &middot; {dataset.queries} queries, {dataset.documents} documents"
        if dataset.queries is not None
        else ""
    )
    page.add(
        f'<section id="ds-{_anchor(dataset.name)}"><h2>Dataset {page.esc(dataset.name)}'
        f'<span class="muted" style="font-size:14px;font-weight:400">{size}</span></h2>\n'
    )
    colors = {m.model: _PALETTE[i % len(_PALETTE)] for i, m in enumerate(dataset.models)}
    rec = dataset.shown_recommendation
    if rec is not None:
        _recommendation(page, rec, priority)
    _accuracy(page, dataset)
    page.add('<div class="charts">')
    _metric_bars(page, dataset, colors)
    _scatter(page, dataset, colors)
    _latency_bars(page, dataset, colors)
    _cost_bars(page, dataset, colors)
    page.add("</div>\n")
    _legend(page, colors)
    _figures_table(page, dataset)
    _comparisons(page, dataset)
    _diffs(page, summary.diffs(dataset.name))
    _queries(page, summary, dataset.name)
    page.add("</section>\n")


def _recommendation(page: _Page, rec: Recommendation, priority: str) -> None:
    page.add('<h3>Recommendation</h3>\n<div class="cards">')
    for pick in sorted(rec.picks, key=lambda p: p.priority != priority):
        w, c = pick.weights, pick.components
        name = pick.priority
        selected = name == priority
        page.add(
            f'<div class="card{" pick" if selected else ""}"><span>'
            f"{page.esc(name)}{'-first' if name != 'balanced' else ''}"
            f"{' (selected)' if selected else ''}</span><b>{page.esc(pick.model)}</b>"
            f"<span>score {_f(pick.score, '{:.3f}')} = "
            f"{_f(w.accuracy, '{:.2f}')}&times;accuracy {_f(c.accuracy, '{:.3f}')} + "
            f"{_f(w.speed, '{:.2f}')}&times;speed {_f(c.speed, '{:.3f}')} + "
            f"{_f(w.cost, '{:.2f}')}&times;cost {_f(c.cost, '{:.3f}')}</span>"
            + (
                f"<span>tied with {page.esc(', '.join(pick.tied_with))}: these figures do not "
                "decide</span>"
                if pick.tied_with
                else ""
            )
            + "</div>"
        )
    page.add("</div>\n")
    if rec.components:
        page.add("<table><tr><th>model</th><th>accuracy</th><th>speed</th><th>cost</th></tr>")
        for model, comp in sorted(rec.components.items()):
            page.add(
                f"<tr><td>{page.esc(model)}</td><td>{_f(comp.accuracy, '{:.3f}')}</td>"
                f"<td>{_f(comp.speed, '{:.3f}')}</td><td>{_f(comp.cost, '{:.3f}')}</td></tr>"
            )
        page.add("</table>\n")
    for line in tier_lines(rec):
        page.add(f'<p class="muted">{page.esc(line[0].upper() + line[1:])}</p>\n')


def _gate(page: _Page, summary: Summary) -> None:
    """Per test, the baseline gate's outcome: status, deltas, failures and warnings."""
    gates = summary.gates
    if not gates and not summary.orphaned and not summary.not_recorded:
        return
    page.add("<section><h2>Baseline and gates</h2>\n")
    if summary.baseline_path:
        update = summary.baseline_update
        page.add(
            f'<p class="muted">Baseline file <code>{page.esc(summary.baseline_path)}</code>'
            + (f"; updated ({page.esc(update)})" if update else "")
            + "</p>\n"
        )
    missing = [g.nodeid for g in gates if g.status == "missing" and not g.metrics]
    gates = tuple(g for g in gates if g.nodeid not in missing)
    if missing:
        listed = ", ".join(page.esc(n) for n in missing[:10])
        more = f" and {len(missing) - 10} more" if len(missing) > 10 else ""
        page.add(
            f'<p class="muted">No baseline entry yet for {len(missing)} '
            f"test{'s' if len(missing) != 1 else ''}: {listed}{more}.</p>\n"
        )
    if gates:
        page.add(
            '<div class="wide"><table><tr><th class="t">test</th><th class="t">gate</th>'
            "<th>metric</th><th>baseline</th><th>current</th><th>Δ [95%]</th>"
            '<th class="t">failures and warnings</th></tr>\n'
        )
        for gate in gates:
            notes = "<br>".join(page.esc(n) for n in (*gate.failures, *gate.warnings))
            status = page.esc(gate.status)
            for i, m in enumerate(gate.metrics or (None,)):
                first = i == 0
                if m is None:
                    figures = "<td>-</td><td>-</td><td>-</td><td>-</td>"
                else:
                    change = (
                        _delta(page, m.delta)
                        if m.delta
                        else ('<span class="v-regressed">regressed</span>' if m.regressed else "-")
                    )
                    figures = (
                        f"<td>{page.esc(m.metric)}</td><td>{_f(m.baseline)}</td>"
                        f"<td>{_f(m.current)}</td><td>{change}</td>"
                    )
                page.add(
                    f'<tr><td class="t">{page.esc(gate.nodeid) if first else ""}</td>'
                    f'<td class="t {status}">{status if first else ""}</td>{figures}'
                    f'<td class="t">{notes if first else ""}</td></tr>\n'
                )
        page.add("</table></div>\n")
    # the diffs of datasets without a table of their own (only stress points were gated)
    tabled = {d.name for d in summary.datasets}
    _diffs(page, [d for d in summary.query_diffs if d.dataset not in tabled])
    for label, found in (
        ("Orphaned entries", summary.orphaned),
        ("Not recorded", summary.not_recorded),
    ):
        if found:
            page.add(f"<p>{label}: " + ", ".join(page.esc(x) for x in found) + "</p>\n")
    page.add("</section>\n")


def _notices(page: _Page, summary: Summary) -> None:
    """The lines the terminal prints under its tables: baseline notes, a busy machine, what
    was written."""
    if not summary.notices:
        return
    page.add("<section><h2>Notes</h2>\n<ul>")
    page.add("".join(f"<li>{page.esc(n)}</li>" for n in summary.notices))
    page.add("</ul></section>\n")


def _generic(page: _Page, value: Any, depth: int = 0) -> str:
    """An environment value (machine, packages) as nested tables (depth-limited; deeper levels
    as JSON text)."""
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
        return ", ".join(_generic(page, v, depth + 1) for v in value)
    if isinstance(value, float):
        return _f(value, "{:.4g}")
    if value is None:
        return "-"
    return page.esc(value)


def _environment(page: _Page, context: Mapping[str, Any]) -> None:
    page.add("<section><h2>Environment and configuration</h2>\n")
    for label, key in (
        ("Machine", "machine"),
        ("Packages", "packages"),
        ("Commit", "commit"),
        ("Embedding cache", "cache"),
    ):
        value = context.get(key)
        if value:
            page.add(
                f"<details><summary>{label}</summary>"
                f'<div class="wide">{_generic(page, redact(value, page.secrets))}</div></details>\n'
            )
    config = context.get("configuration")
    if config:
        text = json.dumps(redact(config, page.secrets), indent=2, sort_keys=True, default=str)
        page.add(
            "<details open><summary>Configuration (secrets redacted)</summary>"
            f"<pre>{page.esc(text)}</pre></details>\n"
        )
    page.add("</section>\n")

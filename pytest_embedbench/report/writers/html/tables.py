"""A dataset's tables: accuracy with intervals, latency and footprint figures, comparisons.

Every value, best mark, difference and verdict is the summary's; these functions write cells.
"""

from __future__ import annotations

from collections.abc import Sequence

from ....records.figures import FIGURES, JUDGED, Figure
from ...summary import DatasetSummary, ModelSummary
from ...summary.values import Delta, Value
from .assets import _BEST
from .page import _f, _Page


def _status(page: _Page, model: ModelSummary) -> str:
    status = model.status
    text = page.esc(status)
    if model.error:
        first = str(model.error).strip().splitlines()[0] if str(model.error).strip() else ""
        text += f'<br><span class="iv">{page.esc(first[:200])}</span>'
    return f'<td class="t {page.esc(status)}">{text}</td>'


#: the comparison table's metrics (every other one is under "all metrics")
KEY_METRICS = ("ndcg@10", "mrr@10", "recall@10", "recall@100")


def _accuracy(page: _Page, dataset: DatasetSummary) -> None:
    names = list(dataset.metrics)
    key = [m for m in KEY_METRICS if m in names] or names[:4]
    if dataset.holes:  # judged@10 beside the metrics it qualifies
        key.append(JUDGED.key)
    page.add("<h3>Accuracy</h3>\n")
    _accuracy_table(page, dataset, key)
    if len(names) > len(key):
        page.add(f"<details><summary>All {len(names)} metrics</summary>")
        _all_metrics(page, dataset, names)
        page.add("</details>\n")
    page.add(
        '<p class="muted">★ best in column; [low, high]: 95% bootstrap interval over queries.</p>\n'
    )
    if dataset.metrics_basis:  # a dataset in several languages
        basis = dataset.metrics_basis
        page.add(f'<p class="muted">{page.esc(basis[0].upper() + basis[1:])}.</p>\n')


def _accuracy_table(page: _Page, dataset: DatasetSummary, names: Sequence[str]) -> None:
    page.add('<div class="wide"><table><tr><th>model</th>')
    page.add("".join(f"<th>{page.esc(n)}</th>" for n in names))
    page.add('<th>Δ nDCG@10 vs baseline</th><th class="t">status</th></tr>\n')
    for model in dataset.models:
        page.add(f"<tr><td>{page.esc(model.model)}</td>")
        page.add("".join(_metric_cell(model.figures.get(n)) for n in names))
        page.add(f"<td>{_delta(page, model.baseline)}</td>{_status(page, model)}</tr>\n")
    page.add("</table></div>\n")


def _metric_cell(v: Value | None) -> str:
    if v is None or v.value is None:
        return "<td>-</td>"
    return (
        f"<td{_BEST if v.best else ''}>"
        f'{_f(v.value)}{" ★" if v.best else ""}<br><span class="iv">'
        f"[{_f(v.low, '{:.3f}')}, {_f(v.high, '{:.3f}')}]</span></td>"
    )


def _all_metrics(page: _Page, dataset: DatasetSummary, names: Sequence[str]) -> None:
    """Every metric, a row each and a column per model (many metrics, few models: the table
    grows down, not sideways)."""
    page.add('<div class="wide"><table><tr><th>metric</th>')
    page.add("".join(f"<th>{page.esc(m.model)}</th>" for m in dataset.models))
    page.add("</tr>\n")
    for n in names:
        page.add(f"<tr><td>{page.esc(n)}</td>")
        page.add("".join(_metric_cell(m.figures.get(n)) for m in dataset.models))
        page.add("</tr>\n")
    page.add("</table></div>\n")


def _delta(page: _Page, delta: Delta | None, *, digits: str = "{:+.3f}") -> str:
    """A difference, its interval and its verdict (styled: regressed and worse in red)."""
    if delta is None or delta.difference is None:
        return "-"
    text = f"{_f(delta.difference, '{:+.4f}')} [{_f(delta.low, digits)}, {_f(delta.high, digits)}]"
    if delta.verdict:
        text += f' <span class="v-{page.esc(delta.verdict)}">{page.esc(delta.verdict)}</span>'
    return text


def _figure_cell(page: _Page, model: ModelSummary, f: Figure) -> str:
    v: Value | None = model.figures.get(f.key)
    text = f.text(v.value if v else None)
    if f.key == "vram_peak_mb" and v is not None:
        text += f'<br><span class="iv">{page.esc(model.vram_source or "")}</span>'
    if f.key == "p95_ms" and v is not None and v.low is not None and v.high is not None:
        text += f'<br><span class="iv">[{_f(v.low, "{:.1f}")}, {_f(v.high, "{:.1f}")}]</span>'
    best = v is not None and v.best
    return f"<td{_BEST if best else ''}>{text}{' ★' if best else ''}</td>"


#: the figures table in three parts, so none is wider than the page: (title, figure keys)
FIGURE_GROUPS: tuple[tuple[str, tuple[str, ...]], ...] = (
    (
        "Query latency and throughput",
        ("p50_ms", "p90_ms", "p95_ms", "p99_ms", "cold_query_ms", "queries_per_s"),
    ),
    (
        "Embedding and index build",
        (
            "documents_per_s",
            "tokens_per_s",
            "model_load_s",
            "document_embedding_s",
            "index_build_s",
            "cold_batch_ms",
            "warm_batch_p50_ms",
        ),
    ),
    (
        "Footprint and cost",
        (
            "dimension",
            "index_mb",
            "bytes_per_document",
            "cache_mb",
            "added_rss_mb",
            "peak_rss_mb",
            "vram_peak_mb",
            "tokens_documents",
            "tokens_queries",
            "cost_usd",
            "cache_hit_rate",
        ),
    ),
)


def _figures_table(page: _Page, dataset: DatasetSummary) -> None:
    """Latency, throughput, memory, index and cost: every :data:`FIGURES` column that any model
    has a value for, in :data:`FIGURE_GROUPS`' three tables."""
    shown = [f for f in FIGURES if any(f.key in m.figures for m in dataset.models)]
    if not shown:
        return
    page.add("<h3>Latency, throughput, footprint and cost</h3>\n")
    grouped = {key for _, keys in FIGURE_GROUPS for key in keys}
    groups = [(t, [f for f in shown if f.key in keys]) for t, keys in FIGURE_GROUPS]
    groups.append(("Other figures", [f for f in shown if f.key not in grouped]))
    for title, figures in groups:
        if not figures:
            continue
        page.add(
            f'<h4>{page.esc(title)}</h4>\n<div class="wide"><table class="figures"><tr>'
            "<th>model</th>"
            + "".join(f"<th>{page.esc(f.header)}</th>" for f in figures)
            + "</tr>\n"
        )
        for model in dataset.models:
            page.add(f"<tr><td>{page.esc(model.model)}</td>")
            page.add("".join(_figure_cell(page, model, f) for f in figures))
            page.add("</tr>\n")
        page.add("</table></div>\n")
    basis = dataset.latency_basis
    latency = (
        f"Latency covers query embedding plus search, {page.esc(basis)}; queries/s is a "
        "reciprocal mean latency, not a load test."
        if basis
        else "No query was timed in this run: the latency figures are empty."
    )
    page.add(
        f'<p class="muted">{latency} docs/s '
        "counts only documents actually embedded. Cold batch: the first document batch after "
        "the model loaded; warm: the median of the others. VRAM: PyTorch's CUDA peak "
        "allocation, or Ollama's /api/ps resident size; n/a on CPU. Index MB: the in-memory "
        "index (vectors, or BM25's sparse matrix). Cost: list price times tokens, a comparison "
        "aid, not a bill.</p>\n"
    )


def _comparisons(page: _Page, dataset: DatasetSummary) -> None:
    compared = [m for m in dataset.compared if m.versus is not None]
    if not compared:
        return
    page.add(
        '<h3>Paired comparisons</h3>\n<div class="wide"><table><tr><th>model</th>'
        '<th class="t">reference</th><th>metric</th><th>Δ [95% interval]</th><th>p</th>'
        '<th>p (Holm)</th><th>queries</th><th class="t">test</th></tr>\n'
    )
    for model in compared:
        d = model.versus
        assert d is not None
        page.add(
            f'<tr><td>{page.esc(model.model)}</td><td class="t">{page.esc(d.against)}'
            f"</td><td>{page.esc(d.metric)}</td><td>{_delta(page, d, digits='{:+.4f}')}</td>"
            f"<td>{_f(d.p_value, '{:.3g}')}</td><td>{_f(d.p_holm, '{:.3g}')}</td>"
            f'<td>{_f(d.n, "{:.0f}")}</td><td class="t">{page.esc(d.test)}</td></tr>\n'
        )
    page.add(
        '</table></div>\n<p class="muted">better / worse: the Holm-adjusted p-value is below '
        "0.05.</p>\n"
    )

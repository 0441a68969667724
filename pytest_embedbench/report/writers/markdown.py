"""The Markdown of a run, formatted from its :class:`~..summary.Summary`: the terminal's
sections as GitHub tables (a PR comment, ``$GITHUB_STEP_SUMMARY``, ``--embedbench-md``), and
the held-out score histograms the cut-offs are cut from as a table per model (the summary's
bins and shares). The model tables' figures are the figure registry's
(:data:`~pytest_embedbench.records.figures.FIGURES`, those in :data:`MARKDOWN_FIGURES`). A
saved JSON report gives the same text as the run itself (``embedbench report r.json --md
s.md``). Usage::

    text = render_markdown(summary, context=report)  # for a PR comment or $GITHUB_STEP_SUMMARY
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ...core.redaction import _secret_env_values, redact
from ...core.text import inert
from ...records.figures import FIGURES, JUDGED, Figure
from ...records.querydiff import QueryChange, QueryDiff, excerpt
from ..summary import DatasetSummary, Summary, summary_of
from ..summary.cutoffs import CutoffSection, score_bins
from ..summary.values import Value
from .index_tables import index_tables, load_tables, query_load_tables
from .language_tables import language_tables
from .stage_tables import stage_tables
from .stress import TextTable, cutoff_tables, stress_tables
from .text import delta_text, pct, tier_lines

__all__ = [
    "DISTRIBUTION_HEADERS",
    "MARKDOWN_FIGURES",
    "MARKDOWN_METRICS",
    "distribution_tables",
    "md_diffs",
    "render_markdown",
]


def _levels_text(levels: Sequence[tuple[str, float]]) -> str:
    return ", ".join(f"{level} {threshold:.4f}" for level, threshold in levels)


def distribution_tables(sections: Iterable[CutoffSection]) -> list[TextTable]:
    """Per dataset and model with a distribution, its held-out score histograms as a table:
    each bin's score range, the relevant and random pairs in it (count and share of the
    kind's held-out pairs) and the cut-offs that fall in it; then the pair totals, the pairs
    not returned at all, and the levels without a cut-off or outside the scores' range."""
    tables = []
    for section in sections:
        for model in section.models:
            dist = model.distribution
            if dist is None:
                continue
            bins = score_bins(model)
            rows = tuple(
                (
                    f"{b.low:.4f}",
                    f"{b.high:.4f}",
                    str(b.relevant),
                    pct(b.relevant_share),
                    str(b.random),
                    pct(b.random_share),
                    _levels_text(b.levels),
                )
                for b in bins
            )
            after = [
                f"{kind} pairs: {pairs} {dist.half}"
                + (f", {unscored} not returned by the retriever (in no bin)" if unscored else "")
                for kind, pairs, unscored in (
                    ("relevant", dist.relevant_pairs, dist.relevant_unscored),
                    ("random", dist.random_pairs, dist.random_unscored),
                )
            ]
            placed = {level for b in bins for level, _ in b.levels}
            for row in model.rows:
                if row.threshold is None:
                    after.append(f"{row.level}: no cut-off (every result kept)")
                elif row.level not in placed:
                    after.append(
                        f"{row.level} {row.threshold:.4f}: outside the {dist.half} scores' range"
                    )
            tables.append(
                TextTable(
                    f"{dist.half} pair scores of {model.model} on {section.dataset!r}, by bin, "
                    "with the cut-offs above",
                    DISTRIBUTION_HEADERS,
                    rows,
                    tuple(after),
                )
            )
    return tables


#: the columns of a Markdown score distribution table
DISTRIBUTION_HEADERS = (
    "score from",
    "to",
    "relevant pairs",
    "share of relevant",
    "random pairs",
    "share of random",
    "cut-offs here",
)


def _md(text: Any) -> str:
    """A Markdown table cell: pipes and newlines escaped, HTML neutralised, control
    characters shown (:func:`~pytest_embedbench.core.text.inert`), their backslash escaped."""
    value = inert(str(text)).replace("\\", "\\\\").replace("|", "\\|")
    value = value.replace("<", "&lt;").replace(">", "&gt;")
    return " ".join(value.split())


def _md_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    lines = ["| " + " | ".join(_md(h) for h in headers) + " |"]
    lines.append("|" + "|".join(" --- " for _ in headers) + "|")
    lines.extend("| " + " | ".join(_md(c) for c in row) + " |" for row in rows)
    return lines


#: the figures of the Markdown table (a PR comment stays readable)
MARKDOWN_FIGURES = (
    "p50_ms",
    "p95_ms",
    "documents_per_s",
    "dimension",
    "index_mb",
    "bytes_per_document",
    "cache_mb",
    "cost_usd",
)
#: the metrics of the Markdown table, where the run has them
MARKDOWN_METRICS = ("ndcg@10", "mrr@10", "recall@10", "recall@100")


def render_markdown(
    source: Summary | Mapping[str, Any],
    *,
    title: str | None = None,
    context: Mapping[str, Any] | None = None,
) -> str:
    """The run's sections as GitHub-flavoured Markdown: per dataset, accuracy with intervals,
    speed and footprint, the recommendation and the paired comparisons; then the baseline
    gate, the stress results, the cut-offs with the score distributions they are cut from,
    and the notices. ``source`` is a :class:`Summary`
    (``context``: the JSON report it came from) or a JSON report dict."""
    summary, context = summary_of(source, context)
    secrets = _secret_env_values()
    lines = [f"## {_md(title or 'Embedding retrieval benchmark')}", ""]
    for dataset in summary.datasets:
        lines += _md_dataset(dataset, summary.priority)
    lines += _md_gates(summary)
    lines += md_diffs(summary.query_diffs)
    lines += _md_section("Two stages", stage_tables(summary.stages))
    lines += _md_section("Languages", language_tables(summary.languages))
    lines += _md_section(
        "Indexes",
        [
            *index_tables(summary.indexes),
            *load_tables(summary.indexes),
            *query_load_tables(summary.query_load),
        ],
    )
    lines += _md_section("Stress", stress_tables(summary.stress))
    lines += _md_section(
        "Cut-offs", [*cutoff_tables(summary.cutoffs), *distribution_tables(summary.cutoffs)]
    )
    if summary.notices:
        lines += ["### Notes", "", *(f"- {_md(n)}" for n in summary.notices), ""]
    lines.append(
        "Bold: best in column. Intervals: 95% bootstrap over queries; p: paired randomization "
        f"test. Report created {_md(context.get('created') or 'unknown')}."
    )
    return redact("\n".join(lines) + "\n", secrets)


def _md_dataset(dataset: DatasetSummary, priority: str) -> list[str]:
    metrics = [m for m in MARKDOWN_METRICS if m in dataset.metrics] or list(dataset.metrics[:3])
    if dataset.holes:  # judged@10 beside the metrics it qualifies
        metrics.append(JUDGED.key)
    figures = [f for f in FIGURES if f.key in MARKDOWN_FIGURES]
    size = (
        f" ({dataset.queries} queries, {dataset.documents} documents)"
        if dataset.queries is not None
        else ""
    )
    lines = [f"### Dataset `{_md(dataset.name)}`{size}", ""]
    lines += _md_models(dataset, metrics, figures) + [""]
    if dataset.latency_basis:
        lines += [f"Latency (query embedding + search): {_md(dataset.latency_basis)}.", ""]
    if dataset.metrics_basis:
        lines += [f"{_md(dataset.metrics_basis[0].upper() + dataset.metrics_basis[1:])}.", ""]
    rec = dataset.shown_recommendation
    pick = rec.pick(priority) if rec is not None else None
    if rec is not None and pick is not None:
        c = pick.components
        lines.append(
            f"**Recommendation ({_md(priority)}):** `{_md(pick.model)}`, score "
            f"{pick.score:.3f} (accuracy {c.accuracy:.3f}, speed {c.speed:.3f}, "
            f"cost {c.cost:.3f})"
            + (
                f"; tied with {', '.join(f'`{_md(m)}`' for m in pick.tied_with)}: these "
                "figures do not decide"
                if pick.tied_with
                else ""
            )
        )
        lines.append("")
        for line in tier_lines(rec):
            lines += [f"{_md(line[0].upper() + line[1:])}.", ""]
    if dataset.compared:
        rows = [
            [
                m.model,
                m.versus.against,
                delta_text(m.versus),
                _p(m.versus.p_value),
                _p(m.versus.p_holm),
            ]
            for m in dataset.compared
            if m.versus is not None
        ]
        lines += _md_table(["model", "reference", "Δ nDCG@10 [95%]", "p", "p (Holm)"], rows)
        lines.append("")
    return lines


def _bold(text: str, value: Value | None) -> str:
    return f"**{text}**" if value is not None and value.best else text


def _md_models(
    dataset: DatasetSummary, metrics: Sequence[str], figures: Sequence[Figure]
) -> list[str]:
    """One dataset's model table: each metric with its interval, the figures, the Δ to the
    baseline when gated, the status."""
    table = []
    for model in dataset.models:
        cells = [model.model]
        for name in metrics:
            v = model.figures.get(name)
            if v is None or v.value is None:
                cells.append("-")
                continue
            interval = (
                f" [{v.low:.3f}, {v.high:.3f}]" if v.low is not None and v.high is not None else ""
            )
            cells.append(_bold(f"{v.value:.4f}", v) + interval)
        for f in figures:
            v = model.figures.get(f.key)
            cells.append(_bold(f.text(v.value if v else None), v))
        if dataset.with_baseline:
            cells.append(delta_text(model.baseline))
        cells.append(model.status)
        table.append(cells)
    headers = ["model", *metrics, *[f.header for f in figures]]
    headers += ["Δ nDCG@10 vs baseline"] if dataset.with_baseline else []
    return _md_table([*headers, "status"], table)


def _md_gates(summary: Summary) -> list[str]:
    if not summary.gates:
        return []
    rows = [
        [
            gate.nodeid,
            gate.status,
            m.metric,
            _f4(m.baseline),
            _f4(m.current),
            delta_text(m.delta) if m.delta else ("regressed" if m.regressed else "-"),
        ]
        for gate in summary.gates
        for m in gate.metrics or ()
    ]
    rows += [[g.nodeid, g.status, "-", "-", "-", "-"] for g in summary.gates if not g.metrics]
    lines = ["### Baseline gate", ""]
    lines += _md_table(["test", "gate", "metric", "baseline", "current", "Δ [95%]"], rows)
    return [*lines, ""]


def md_diffs(diffs: Sequence[QueryDiff], *, top: int | None = None) -> list[str]:
    """The per-query diffs as Markdown: a table of the counts, then per diff its most degraded
    queries (``top`` of them; default: all the diff kept) with what they lost and gained."""
    if not diffs:
        return []
    lines = [
        "### Per-query changes",
        "",
        f"A query counts as improved or degraded when its score moved by more than "
        f"{diffs[0].epsilon:g}.",
        "",
    ]
    lines += _md_table(
        ["test (or model)", "against", "metric", "improved", "degraded", "unchanged", "queries"],
        [
            [
                d.nodeid if d.against_baseline else d.model,
                d.against,
                d.metric,
                str(d.improved),
                str(d.degraded),
                str(d.unchanged),
                str(d.queries),
            ]
            for d in diffs
        ],
    )
    lines.append("")
    for diff in diffs:
        worst = diff.worst[:top] if top is not None else diff.worst
        if not worst:
            continue
        lines += [f"**{_md(diff.title)}: most degraded ({diff.metric})**", ""]
        before = "baseline" if diff.against_baseline else diff.against
        documents = (
            ["relevant lost", "relevant gained"]
            if diff.documents_known
            else [f"relevant not in the top {diff.depth} now"]
        )
        rows = [_md_change(c, diff.documents_known) for c in worst]
        lines += _md_table(["query", f"{before} → now", *documents, "first now"], rows)
        lines.append("")
        if diff.note:
            lines += [f"{_md(diff.note[0].upper() + diff.note[1:])}.", ""]
    return lines


def _md_change(change: QueryChange, known: bool) -> list[str]:
    query = f"{change.query_id} {change.text}" if change.text else change.query_id

    def ids(found: Sequence[str] | None) -> str:
        return ", ".join(found) if found else "none"

    documents = [ids(change.lost), ids(change.gained)] if known else [ids(change.missing)]
    first = change.top or "-"
    if change.top_relevant:
        first += " (relevant)"
    top = next((c for c in change.chunks if c.rank == 1), None)
    if top is not None and top.text:
        first += f" {top.where} “{excerpt(top.text, 80)}”"
    score = f"{change.before:.3f} → {change.after:.3f} ({change.change:+.3f})"
    return [query, score, *documents, first]


def _md_section(heading: str, tables: Sequence[TextTable]) -> list[str]:
    """The stress or cut-off tables under one heading: each with its title and after-lines."""
    if not tables:
        return []
    lines = [f"### {heading}", ""]
    for table in tables:
        lines += [f"**{_md(table.title)}**", ""]
        if table.rows:
            lines += _md_table(table.headers, table.rows) + [""]
        if table.after:
            lines += [*(f"- {_md(a)}" for a in table.after), ""]
    return lines


def _f4(value: float | None) -> str:
    return "-" if value is None else f"{value:.4f}"


def _p(value: Any) -> str:
    return "-" if value is None else f"{value:.3g}"

"""Flat views of a run: the CSV files and the Markdown tables, formatted from its
:class:`~.summary.Summary`.

``results.csv`` (a row per test, every figure) and ``queries.csv`` (a row per model and query)
read the summary's records, the JSON report's ``tests``; ``stress.csv``, ``cutoffs.csv`` and
``gates.csv`` the summary's stress points, cut-off levels and gate outcomes, with the figures the
terminal shows; ``cutoff_scores.csv`` the held-out score histograms the cut-offs are cut from
(the HTML report's cut-off pictures, a row per model and bin). The Markdown has the terminal's
sections as GitHub tables, and the score histograms as a table per model. Each file has its
header even without rows, and every CSV cell goes through :func:`csv_cell`. A saved JSON report
gives the same files as the run itself (``embedbench report r.json --csv out --md s.md``).
:data:`FIGURES` is the one list of summary figures: the CSV's columns, the Markdown table's and
the HTML report's resource table read it, so adding a figure touches one place. Usage::

    summary = Summary.from_json(report)
    write_csv(Path("out"), summary)              # results, queries, stress, cutoffs, ..., gates
    text = render_markdown(summary, context=report)  # for a PR comment or $GITHUB_STEP_SUMMARY
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...core.io import atomic_write_text
from ...core.redaction import _secret_env_values, redact
from ...evaluation.record import TestRecord
from ...records.querydiff import QueryChange, QueryDiff, excerpt
from ..summary.columns import FIGURES, Figure, metric_names
from ..summary.run import DatasetSummary, Summary, summary_of
from ..summary.stress import ChunkPoint, CutoffModel, CutoffSection, NoisePoint
from ..summary.values import Value
from .index_tables import index_columns, index_csv_rows, index_tables
from .stress import TextTable, cutoff_tables, stress_tables
from .text import delta_text, pct, tier_lines

__all__ = [
    "CSV_FILES",
    "DISTRIBUTION_HEADERS",
    "FIGURES",
    "Figure",
    "ScoreBin",
    "csv_cell",
    "cutoff_columns",
    "cutoff_csv_rows",
    "distribution_tables",
    "score_bins",
    "score_columns",
    "score_csv_rows",
    "gate_columns",
    "gate_csv_rows",
    "md_diffs",
    "metric_names",
    "query_columns",
    "query_rows",
    "render_markdown",
    "result_columns",
    "result_rows",
    "stress_columns",
    "stress_csv_rows",
    "summary_of",
    "write_csv",
]

#: written beside :data:`CSV_FILES` when a test had an index axis (``indexes=``)
INDEX_CSV = "indexes.csv"
#: the files ``--embedbench-csv`` writes into its folder
CSV_FILES = (
    "results.csv",
    "queries.csv",
    "stress.csv",
    "cutoffs.csv",
    "cutoff_scores.csv",
    "gates.csv",
)


def _records(source: Summary | Mapping[str, Any]) -> list[TestRecord]:
    """The run's test records, by node id."""
    summary, _ = summary_of(source)
    return sorted(summary.records, key=lambda r: r.nodeid)


def result_columns(metrics: Sequence[str]) -> list[str]:
    """The columns of ``results.csv`` for a run with ``metrics`` (its header, rows or none)."""
    per_metric = [f"{name}{end}" for name in metrics for end in ("", "_low", "_high")]
    return [
        *("test", "dataset", "model", "spec", "status", "queries", "documents"),
        *per_metric,
        *(figure.key for figure in FIGURES),
        *("vram_source", "tokens_estimated", "baseline_status", "error"),
    ]


def query_columns(metrics: Sequence[str]) -> list[str]:
    """The columns of ``queries.csv`` for a run with ``metrics`` (its header, rows or none)."""
    return [
        *("test", "dataset", "model", "query_id", "query"),
        *metrics,
        *("latency_ms", "retrieved", "relevant"),
    ]


def result_rows(source: Summary | Mapping[str, Any]) -> list[dict[str, Any]]:
    """``results.csv``: one row per test (and so per model), every summary figure."""
    records = _records(source)
    metrics = metric_names([r.result for r in records])
    rows = []
    for record in records:
        result = record.result
        row: dict[str, Any] = {
            "test": record.nodeid,
            "dataset": record.dataset,
            "model": record.model,
            "spec": record.spec,
            "status": record.status.value,
            "queries": result.queries if result is not None else None,
            "documents": result.documents if result is not None else None,
        }
        for name in metrics:
            entry = result.metrics.get(name) if result is not None else None
            row[name] = entry.value if entry is not None else None
            row[f"{name}_low"] = entry.low if entry is not None else None
            row[f"{name}_high"] = entry.high if entry is not None else None
        for figure in FIGURES:
            row[figure.key] = figure.get(result)
        row["vram_source"] = result.resources.vram_source if result is not None else None
        row["tokens_estimated"] = result.tokens.estimated if result is not None else None
        row["baseline_status"] = record.baseline.status if record.baseline is not None else None
        row["error"] = record.error
        rows.append(row)
    return rows


def query_rows(source: Summary | Mapping[str, Any]) -> Iterator[dict[str, Any]]:
    """``queries.csv``: one row per test's model and query (a test's own queries in query id
    order): its metrics, latency, retrieved and relevant ids (space-free ids joined by ``|``)."""
    records = _records(source)
    # every row has every column (a test with other cut-offs leaves its cells empty)
    names = metric_names([r.result for r in records])
    for record in records:
        result = record.result
        if result is None:
            continue
        per_query = result.per_query or {}
        texts = result.query_texts or {}
        # the record keeps latencies by query id (an older one: a list in the dataset's query
        # order, read in the order of its query texts; without them, no latency column)
        by_id = result.latency.by_query(list(texts))
        retrieved, relevant = result.retrieved or {}, result.relevant or {}
        for qid in sorted(next(iter(per_query.values()), {})):
            row: dict[str, Any] = {
                "test": record.nodeid,
                "dataset": record.dataset,
                "model": record.model,
                "query_id": qid,
                "query": texts.get(qid),
            }
            for name in names:
                row[name] = (per_query.get(name) or {}).get(qid)
            row["latency_ms"] = by_id.get(qid)
            row["retrieved"] = "|".join(retrieved.get(qid) or ())
            row["relevant"] = "|".join(sorted(relevant.get(qid) or {}))
            yield row


#: what a spreadsheet reads as the start of a formula (OWASP, "CSV Injection")
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def csv_cell(value: Any, secrets: list[str] | None = None) -> str:
    """One CSV cell, the one way this project writes a cell: None empty, floats as ``repr``
    (they read back bit for bit), ints as digits, secrets redacted (``secrets``: the values to
    mask, default the environment's), and a text cell beginning with ``=``, ``+``, ``-``,
    ``@``, tab or CR prefixed with ``'`` (OWASP's rule against formula injection: a spreadsheet
    shows it as text and runs nothing). Numbers stay numbers, negative ones unprefixed."""
    if value is None:
        return ""
    number = isinstance(value, (int, float)) and not isinstance(value, bool)
    text = redact(repr(value) if isinstance(value, float) else str(value), secrets)
    if not number and text.startswith(_FORMULA_START):
        return "'" + text
    return text


def _csv_line(cells: Sequence[str]) -> str:
    """One CSV line (RFC 4180 quoting, ``\n`` line end): a cell holding a comma, a quote, a CR
    or a LF is quoted. The csv module quotes only the line end's characters, so with ``\n`` it
    writes a CR bare, and a reader (Excel, csv.reader) breaks the row there."""
    return (
        ",".join(
            '"' + cell.replace('"', '""') + '"' if any(c in cell for c in ',"\r\n') else cell
            for cell in cells
        )
        + "\n"
    )


def _csv_text(columns: Sequence[str], rows: Iterable[Mapping[str, Any]]) -> str:
    """The CSV file: the header row (always, even with no rows), then one line per row."""
    secrets = _secret_env_values()
    lines = [_csv_line([csv_cell(name, secrets) for name in columns])]
    lines += [_csv_line([csv_cell(row.get(name), secrets) for name in columns]) for row in rows]
    return "".join(lines)


def _value_cells(prefix: str, value: Value | None) -> dict[str, Any]:
    """``{prefix, prefix_low, prefix_high}`` of a figure (empty cells when it has none)."""
    if value is None:
        return {prefix: None, f"{prefix}_low": None, f"{prefix}_high": None}
    return {prefix: value.value, f"{prefix}_low": value.low, f"{prefix}_high": value.high}


def stress_columns() -> list[str]:
    """The columns of ``stress.csv``."""
    return [
        *("dataset", "model", "kind", "workload", "chunk_tokens", "seeds", "depth", "length"),
        *("metric", "clean", "clean_low", "clean_high", "value", "value_low", "value_high"),
        *("delta", "delta_low", "delta_high", "verdict", "chance", "cut", "status", "test"),
    ]


def stress_csv_rows(summary: Summary) -> list[dict[str, Any]]:
    """``stress.csv``: one row per stress point, the figures of the terminal's stress tables:
    a chunk size or a noise workload with its clean and stressed nDCG@10 and their paired
    difference; a needle point with its hit@1."""
    rows: list[dict[str, Any]] = []
    for section in summary.stress:
        paired: list[tuple[str, ChunkPoint | NoisePoint, dict[str, int]]] = [
            ("chunk-size", p, {"chunk_tokens": p.size}) for p in section.chunks
        ]
        paired += [("noise", p, {"seeds": p.seeds}) for p in section.noise]
        for kind, point, extra in paired:
            delta = point.delta
            rows.append(
                {
                    "dataset": section.dataset,
                    "model": point.model,
                    "kind": kind,
                    "workload": point.workload,
                    **extra,
                    "metric": delta.metric if delta is not None else "ndcg@10",
                    **_value_cells("clean", point.clean),
                    **_value_cells("value", point.stressed),
                    "delta": delta.difference if delta else None,
                    "delta_low": delta.low if delta else None,
                    "delta_high": delta.high if delta else None,
                    "verdict": delta.verdict if delta else None,
                    "status": point.status,
                    "test": point.nodeid,
                }
            )
        for grid in section.needles:
            for cell in grid.cells:
                rows.append(
                    {
                        "dataset": section.dataset,
                        "model": grid.model,
                        "kind": "needle",
                        "workload": cell.workload,
                        "depth": cell.depth,
                        "length": cell.length,
                        "metric": "hit@1",
                        **_value_cells("value", cell.hit1),
                        "chance": grid.chance,
                        "cut": cell.cut,
                        "status": cell.status,
                    }
                )
    return rows


def cutoff_columns() -> list[str]:
    """The columns of ``cutoffs.csv``."""
    return [
        *("dataset", "model", "level", "threshold", "target", "expected_low", "expected_high"),
        *("keeps_relevant", "keeps_relevant_low", "keeps_relevant_high"),
        *("lets_random", "lets_random_low", "lets_random_high"),
        *("keeps_queries", "keeps_queries_low", "keeps_queries_high"),
        *("outside_expected", "short_of_target", "relevant_share", "calibration_queries"),
        *("heldout_queries", "meaningful", "reason", "guarantee"),
    ]


def cutoff_csv_rows(summary: Summary) -> list[dict[str, Any]]:
    """``cutoffs.csv``: one row per model and level (shares as fractions, with their 95%
    intervals); a model without a meaningful cut-off has one row with the reason."""
    rows: list[dict[str, Any]] = []
    for section in summary.cutoffs:
        for model in section.models:
            shared = {
                "dataset": section.dataset,
                "model": model.model,
                "relevant_share": model.relevant_share,
                "calibration_queries": model.calibration_queries,
                "heldout_queries": model.heldout_queries,
                "meaningful": model.meaningful,
                "reason": model.reason or None,
                "guarantee": model.guarantee or None,
            }
            if not model.rows:
                rows.append(shared)
            for row in model.rows:
                expected = row.expected_random
                rows.append(
                    {
                        **shared,
                        "level": row.level,
                        "threshold": row.threshold,
                        "target": row.target,
                        "expected_low": expected.low if expected else None,
                        "expected_high": expected.high if expected else None,
                        **_value_cells("keeps_relevant", row.keeps_relevant),
                        **_value_cells("lets_random", row.lets_random),
                        **_value_cells("keeps_queries", row.keeps_queries),
                        "outside_expected": row.outside_expected,
                        "short_of_target": row.short_of_target,
                    }
                )
    return rows


@dataclass(frozen=True)
class ScoreBin:
    """One bin of a model's held-out score histograms (:class:`ScoreDistribution`): its score
    range, the relevant and random pairs scoring in it (counts, and shares of every held-out
    pair of the kind, the HTML picture's heights), and the cut-off levels that fall in it."""

    index: int
    low: float
    high: float
    relevant: int
    random: int
    relevant_share: float
    random_share: float
    #: ``(level, threshold)`` of each cut-off whose threshold lies in this bin
    levels: tuple[tuple[str, float], ...] = ()


#: how far past the histogram's range (its edges are rounded to 6 decimals) a cut-off still
#: counts as in the first or the last bin
_EDGE_SLACK = 1e-6


def _bin_of(edges: Sequence[float], threshold: float) -> int | None:
    """The bin ``threshold`` falls in (``edges[i] <= t < edges[i + 1]``; the last bin holds
    its upper edge); None outside the range."""
    if not edges[0] - _EDGE_SLACK <= threshold <= edges[-1] + _EDGE_SLACK:
        return None
    return min(max(bisect_right(edges, threshold) - 1, 0), len(edges) - 2)


def score_bins(model: CutoffModel) -> list[ScoreBin]:
    """The bins of ``model``'s held-out score histograms with the cut-offs in them (none
    when the summary has no distribution for it)."""
    dist = model.distribution
    if dist is None:
        return []
    levels: dict[int, list[tuple[str, float]]] = {}
    for row in model.rows:
        if row.threshold is None:
            continue
        at = _bin_of(dist.edges, row.threshold)
        if at is not None:
            levels.setdefault(at, []).append((row.level, row.threshold))
    relevant, random = max(dist.relevant_pairs, 1), max(dist.random_pairs, 1)
    return [
        ScoreBin(
            index=i,
            low=dist.edges[i],
            high=dist.edges[i + 1],
            relevant=dist.relevant[i],
            random=dist.random[i],
            relevant_share=dist.relevant[i] / relevant,
            random_share=dist.random[i] / random,
            levels=tuple(levels.get(i, ())),
        )
        for i in range(len(dist.relevant))
    ]


def _levels_text(levels: Sequence[tuple[str, float]]) -> str:
    return ", ".join(f"{level} {threshold:.4f}" for level, threshold in levels)


def score_columns() -> list[str]:
    """The columns of ``cutoff_scores.csv``."""
    return [
        *("dataset", "model", "half", "bin", "score_low", "score_high"),
        *("relevant", "random", "relevant_share", "random_share", "cutoffs"),
        *("relevant_pairs", "random_pairs", "relevant_unscored", "random_unscored"),
    ]


def score_csv_rows(summary: Summary) -> list[dict[str, Any]]:
    """``cutoff_scores.csv``: one row per model and bin of the held-out score histograms the
    cut-offs are cut from (the pairs of each kind and their shares; ``cutoffs``: the levels
    whose threshold lies in the bin, joined by ``|``; their thresholds are in
    ``cutoffs.csv``); the pair totals and
    the pairs the retriever did not return (in no bin) repeat on each of a model's rows."""
    rows: list[dict[str, Any]] = []
    for section in summary.cutoffs:
        for model in section.models:
            dist = model.distribution
            if dist is None:
                continue
            shared = {
                "relevant_pairs": dist.relevant_pairs,
                "random_pairs": dist.random_pairs,
                "relevant_unscored": dist.relevant_unscored,
                "random_unscored": dist.random_unscored,
            }
            for b in score_bins(model):
                rows.append(
                    {
                        "dataset": section.dataset,
                        "model": model.model,
                        "half": dist.half,
                        "bin": b.index,
                        "score_low": b.low,
                        "score_high": b.high,
                        "relevant": b.relevant,
                        "random": b.random,
                        "relevant_share": b.relevant_share,
                        "random_share": b.random_share,
                        "cutoffs": "|".join(level for level, _ in b.levels) or None,
                        **shared,
                    }
                )
    return rows


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


def gate_columns() -> list[str]:
    """The columns of ``gates.csv``."""
    return [
        *("test", "status", "metric", "baseline", "current", "difference", "low", "high"),
        *("p_value", "verdict", "failures", "warnings"),
    ]


def gate_csv_rows(summary: Summary) -> list[dict[str, Any]]:
    """``gates.csv``: one row per gated test and compared figure."""
    rows: list[dict[str, Any]] = []
    for gate in summary.gates:
        shared = {
            "test": gate.nodeid,
            "status": gate.status,
            "failures": " | ".join(gate.failures) or None,
            "warnings": " | ".join(gate.warnings) or None,
        }
        if not gate.metrics:
            rows.append(shared)
        for m in gate.metrics:
            rows.append(
                {
                    **shared,
                    "metric": m.metric,
                    "baseline": m.baseline,
                    "current": m.current,
                    "difference": m.delta.difference if m.delta else None,
                    "low": m.delta.low if m.delta else None,
                    "high": m.delta.high if m.delta else None,
                    "p_value": m.p_value,
                    "verdict": m.delta.verdict
                    if m.delta
                    else ("regressed" if m.regressed else None),
                }
            )
    return rows


def write_csv(folder: Path, source: Summary | Mapping[str, Any]) -> list[Path]:
    """Write :data:`CSV_FILES` into ``folder`` (each atomically, each with its header even
    without rows) from a :class:`Summary` or a JSON report dict; their paths."""
    summary, _ = summary_of(source)
    metrics = metric_names([r.result for r in _records(summary)])
    tables = {
        "results.csv": (result_columns(metrics), result_rows(summary)),
        "queries.csv": (query_columns(metrics), list(query_rows(summary))),
        "stress.csv": (stress_columns(), stress_csv_rows(summary)),
        "cutoffs.csv": (cutoff_columns(), cutoff_csv_rows(summary)),
        "cutoff_scores.csv": (score_columns(), score_csv_rows(summary)),
        "gates.csv": (gate_columns(), gate_csv_rows(summary)),
    }
    names = list(CSV_FILES)
    if summary.indexes:  # the index axis's file, only where a test had indexes=
        tables[INDEX_CSV] = (index_columns(), index_csv_rows(summary.indexes))
        names.append(INDEX_CSV)
    written = []
    for name in names:
        columns, rows = tables[name]
        path = folder / name
        atomic_write_text(path, _csv_text(columns, rows))
        written.append(path)
    return written


# -- Markdown ----------------------------------------------------------------------------------


def _md(text: Any) -> str:
    """A Markdown table cell: pipes and newlines escaped, HTML neutralised."""
    value = str(text).replace("\\", "\\\\").replace("|", "\\|")
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
    lines += _md_section("Indexes", index_tables(summary.indexes))
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

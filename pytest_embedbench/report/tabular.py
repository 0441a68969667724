"""Flat views of a JSON report: the figures of each row, ``results.csv``, ``queries.csv`` and
the Markdown tables.

Everything here reads the JSON report dict (``--embedbench-json``'s content), so a saved run
gives the same files as the run itself. :data:`FIGURES` is the one list of summary figures:
the CSV's columns, the Markdown table's and the HTML report's resource table read it, so adding
a figure touches one place. Usage::

    write_csv(Path("out"), report)          # out/results.csv and out/queries.csv
    text = render_markdown(report)          # for a PR comment or $GITHUB_STEP_SUMMARY
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._io import atomic_write_text
from ..redaction import _secret_env_values, redact
from .columns import FIGURES, Figure, path_value

if TYPE_CHECKING:
    from .summary import ModelRow

__all__ = [
    "FIGURES",
    "Figure",
    "csv_cell",
    "metric_names",
    "query_columns",
    "query_rows",
    "render_markdown",
    "result_columns",
    "result_rows",
    "write_csv",
]

_FAMILY_ORDER = ("ndcg", "recall", "mrr", "precision", "hit", "map")


def metric_names(results: Sequence[Mapping[str, Any] | None]) -> list[str]:
    """The metrics any of ``results`` has, by family (nDCG, recall, MRR ...) then cut-off."""
    names = {name for r in results if r for name in (r.get("metrics") or {})}

    def order(name: str) -> tuple[int, int, str]:
        family, _, k = name.partition("@")
        rank = _FAMILY_ORDER.index(family) if family in _FAMILY_ORDER else len(_FAMILY_ORDER)
        return (rank, int(k) if k.isdigit() else 0, name)

    return sorted(names, key=order)


def _tests(report: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return sorted(report.get("tests") or [], key=lambda t: (str(t.get("nodeid")),))


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


def result_rows(report: Mapping[str, Any]) -> list[dict[str, Any]]:
    """``results.csv``: one row per test (and so per model), every summary figure."""
    tests = _tests(report)
    metrics = metric_names([t.get("result") for t in tests])
    rows = []
    for test in tests:
        result = test.get("result")
        row: dict[str, Any] = {
            "test": test.get("nodeid"),
            "dataset": test.get("dataset"),
            "model": test.get("model"),
            "spec": test.get("spec"),
            "status": test.get("status"),
            "queries": path_value(result, "queries"),
            "documents": path_value(result, "documents"),
        }
        for name in metrics:
            entry = path_value(result, "metrics", name) or {}
            row[name] = entry.get("value")
            row[f"{name}_low"] = entry.get("low")
            row[f"{name}_high"] = entry.get("high")
        for figure in FIGURES:
            row[figure.key] = figure.get(result)
        row["vram_source"] = path_value(result, "resources", "vram_source")
        row["tokens_estimated"] = path_value(result, "tokens", "estimated")
        row["baseline_status"] = path_value(test, "baseline", "status")
        row["error"] = test.get("error")
        rows.append(row)
    return rows


def query_rows(report: Mapping[str, Any]) -> Iterator[dict[str, Any]]:
    """``queries.csv``: one row per test's model and query (a test's own queries in query id
    order): its metrics, latency, retrieved and relevant ids (space-free ids joined by ``|``)."""
    tests = _tests(report)
    # every row has every column (a test with other cut-offs leaves its cells empty)
    names = metric_names([t.get("result") for t in tests])
    for test in tests:
        result = test.get("result")
        if not result:
            continue
        per_query = result.get("per_query") or {}
        latency = path_value(result, "latency", "per_query_ms")
        qids = sorted(next(iter(per_query.values()), {}))
        by_id = latency if isinstance(latency, Mapping) else {}
        if isinstance(latency, list) and len(latency) == len(qids):
            # the record keeps latencies in the dataset's query order; the ids in that order
            # (a report without query_texts cannot tell that order: no latency column then)
            order = list((result.get("query_texts") or {}).keys())
            by_id = dict(zip(order, latency, strict=False))
        for qid in qids:
            row: dict[str, Any] = {
                "test": test.get("nodeid"),
                "dataset": test.get("dataset"),
                "model": test.get("model"),
                "query_id": qid,
                "query": (result.get("query_texts") or {}).get(qid),
            }
            for name in names:
                row[name] = (per_query.get(name) or {}).get(qid)
            row["latency_ms"] = by_id.get(qid)
            row["retrieved"] = "|".join((result.get("retrieved") or {}).get(qid) or [])
            row["relevant"] = "|".join(sorted((result.get("relevant") or {}).get(qid) or {}))
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


def write_csv(folder: Path, report: Mapping[str, Any]) -> list[Path]:
    """Write ``results.csv`` and ``queries.csv`` into ``folder`` (atomically); their paths."""
    tests = _tests(report)
    metrics = metric_names([t.get("result") for t in tests])
    written = []
    for name, columns, rows in (
        ("results.csv", result_columns(metrics), result_rows(report)),
        ("queries.csv", query_columns(metrics), list(query_rows(report))),
    ):
        path = folder / name
        atomic_write_text(path, _csv_text(columns, rows))
        written.append(path)
    return written


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
MARKDOWN_FIGURES = ("p50_ms", "p95_ms", "documents_per_s", "dimension", "index_mb", "cost_usd")


def render_markdown(report: Mapping[str, Any], *, title: str | None = None) -> str:
    """The run's tables as GitHub-flavoured Markdown: per dataset, accuracy with intervals,
    speed and footprint, the recommendation and the paired comparisons."""
    from .summary import latency_basis, model_rows

    secrets = _secret_env_values()
    lines = [f"## {_md(title or 'Embedding retrieval benchmark')}", ""]
    figures = [f for f in FIGURES if f.key in MARKDOWN_FIGURES]
    recs = (report.get("recommendations") or {}).get("datasets") or {}
    priority = (report.get("recommendations") or {}).get("priority") or "balanced"
    comparisons = report.get("comparisons") or {}
    for dataset, rows in model_rows(report.get("tests") or []).items():
        results = [r["result"] for r in rows]
        metrics = _markdown_metrics(results)
        first = next((r for r in results if r), None)
        size = f" ({first['queries']} queries, {first['documents']} documents)" if first else ""
        lines += [f"### Dataset `{_md(dataset)}`{size}", ""]
        lines += _md_models(rows, metrics, figures) + [""]
        basis = latency_basis(rows)
        if basis:
            lines += [f"Latency (query embedding + search): {_md(basis)}.", ""]
        rec = recs.get(dataset)
        if rec:
            pick = rec["picks"].get(priority) or next(iter(rec["picks"].values()))
            c = pick["components"]
            lines.append(
                f"**Recommendation ({_md(priority)}):** `{_md(pick['model'])}`, score "
                f"{pick['score']:.3f} (accuracy {c['accuracy']:.3f}, speed {c['speed']:.3f}, "
                f"cost {c['cost']:.3f})"
            )
            lines.append("")
        versus = comparisons.get(dataset) or {}
        if versus:
            lines += _md_comparisons(versus) + [""]
    lines.append(
        "Intervals: 95% bootstrap over queries; p: paired randomization test. "
        f"Report created {_md(report.get('created') or 'unknown')}."
    )
    return redact("\n".join(lines) + "\n", secrets)


def _md_models(
    rows: Sequence[ModelRow], metrics: Sequence[str], figures: Sequence[Figure]
) -> list[str]:
    """One dataset's model table: each metric with its interval, the figures, the status."""
    table = []
    for row in rows:
        cells = [row["model"]]
        for name in metrics:
            entry = path_value(row["result"], "metrics", name)
            cells.append(
                f"{entry['value']:.4f} [{entry['low']:.3f}, {entry['high']:.3f}]" if entry else "-"
            )
        cells += [f.text(f.get(row["result"])) for f in figures]
        cells.append(row["status"])
        table.append(cells)
    return _md_table(["model", *metrics, *[f.header for f in figures], "status"], table)


def _md_comparisons(versus: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """One dataset's paired comparisons against the reference model."""
    rows = [
        [
            model,
            e.get("reference", ""),
            f"{e['difference']:+.4f} [{e['low']:+.3f}, {e['high']:+.3f}]",
            _p(e.get("p_value")),
            _p(e.get("p_holm")),
        ]
        for model, e in sorted(versus.items())
    ]
    return _md_table(["model", "reference", "Δ nDCG@10 [95%]", "p", "p (Holm)"], rows)


def _markdown_metrics(results: Sequence[Mapping[str, Any] | None]) -> list[str]:
    """nDCG@10, MRR@10, R@10 and R@100 where the run has them (a PR comment stays narrow);
    else the first three metrics."""
    names = metric_names(results)
    wanted: list[str] = [m for m in ("ndcg@10", "mrr@10", "recall@10", "recall@100") if m in names]
    return wanted or names[:3]


def _p(value: Any) -> str:
    return "-" if value is None else f"{value:.3g}"

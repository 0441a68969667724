"""The comparison table printed at the end of a run: one table per dataset, a row per model.

The best value of each column is marked with ``*``; a model that failed shows its error in its
status. Under ``-q`` the table keeps its most important columns and says which it hid.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

from tabulate import tabulate

__all__ = ["busy_notes", "model_rows", "render_tables"]

_RANK = {"error": 4, "failed": 3, "running": 2, "skipped": 1, "passed": 0}


def model_rows(records: Iterable[Mapping[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """Records folded into one row per (dataset, model), datasets and models sorted by name.

    A row's status is the worst status of the tests that used that model on that dataset.
    """
    by_key: dict[tuple[str, str], dict[str, Any]] = {}
    for record in sorted(records, key=lambda r: r["nodeid"]):
        key = (record["dataset"], record["model"])
        row = by_key.get(key)
        if row is None:
            row = by_key[key] = {
                "dataset": record["dataset"],
                "model": record["model"],
                "spec": record.get("spec", ""),
                "baseline": None,
                "result": None,
                "status": "passed",
                "error": None,
                "tests": 0,
            }
        row["tests"] += 1
        found = record.get("result")
        if found is not None and (row["result"] is None or _better(found, row["result"])):
            row["result"] = found  # the same metrics; prefer the run that measured throughput
        deltas = (record.get("baseline") or {}).get("deltas") or {}
        if row["baseline"] is None and "ndcg@10" in deltas:
            row["baseline"] = deltas["ndcg@10"]
        status = record.get("status", "running")
        if _RANK.get(status, 2) > _RANK.get(row["status"], 0):
            row["status"] = status
        if record.get("error") and not row["error"]:
            row["error"] = record["error"]
    out: dict[str, list[dict[str, Any]]] = {}
    for (dataset, _model), row in sorted(by_key.items()):
        out.setdefault(dataset, []).append(row)
    return out


def _better(candidate: Mapping[str, Any], current: Mapping[str, Any]) -> bool:
    """A cold run measured documents/s; a warm one (every document cached) could not."""

    def measured(result: Mapping[str, Any]) -> bool:
        value = result.get("documents_per_s")
        return isinstance(value, (int, float)) and math.isfinite(value)

    return not measured(current) and measured(candidate)


def _metric(result: Mapping[str, Any] | None, name: str) -> float | None:
    if result is None:
        return None
    entry = result["metrics"].get(name)
    return None if entry is None else float(entry["value"])


def _get(result: Mapping[str, Any] | None, *path: str) -> float | None:
    value: Any = result
    for part in path:
        if not isinstance(value, Mapping) or part not in value:
            return None
        value = value[part]
    return None if value is None else float(value)


# (header, getter, format, higher is better, shown under -q)
_COLUMNS: list[tuple[str, Any, str, bool, bool]] = [
    ("nDCG@10", lambda r: _metric(r, "ndcg@10"), "{:.4f}", True, True),
    ("MRR@10", lambda r: _metric(r, "mrr@10"), "{:.4f}", True, False),
    ("R@10", lambda r: _metric(r, "recall@10"), "{:.4f}", True, False),
    ("R@100", lambda r: _metric(r, "recall@100"), "{:.4f}", True, True),
    ("p50 ms", lambda r: _get(r, "latency", "p50_ms"), "{:.1f}", False, False),
    ("p95 ms", lambda r: _get(r, "latency", "p95_ms"), "{:.1f}", False, True),
    ("docs/s", lambda r: _get(r, "documents_per_s"), "{:.0f}", True, False),
    # what the model added to the process (its load included), not the process's peak
    ("+RSS MB", lambda r: _get(r, "added_rss_mb"), "{:.0f}", False, False),
]


def busy_notes(records: Iterable[Mapping[str, Any]]) -> list[str]:
    """A warning when other processes kept the CPUs busy while queries were timed."""
    busy: dict[str, Mapping[str, Any]] = {}
    for record in sorted(records, key=lambda r: r["nodeid"]):
        load = ((record.get("result") or {}).get("environment") or {}).get("load") or {}
        if load.get("busy"):
            busy.setdefault(record["model"], load)
    if not busy:
        return []
    worst = max(busy.values(), key=lambda load: load.get("others_cpus") or 0.0)
    detail = []
    if worst.get("others_cpus") is not None:
        detail.append(
            f"other processes kept {worst['others_cpus']:.1f} of {worst['cpus']} CPUs busy"
        )
    if worst.get("loadavg_before"):
        detail.append(f"load average {worst['loadavg_before'][0]:.1f}")
    return [
        f"embedbench: the machine was busy while the queries of {', '.join(sorted(busy))} were "
        f"timed ({'; '.join(detail)}): their latencies are unreliable. For stable timings run "
        "on an idle machine with OMP_NUM_THREADS set and one pytest worker (README: Stable "
        "timings)."
    ]


def _status(row: Mapping[str, Any], width: int) -> str:
    status = row["status"]
    if row["error"] and status in ("error", "failed"):
        first = str(row["error"]).strip().splitlines()[0] if str(row["error"]).strip() else ""
        text = f"{status}: {first}"
        return text if len(text) <= width else text[: width - 3] + "..."
    return status


def _delta(entry: Mapping[str, Any] | None, significant: bool) -> str:
    if entry is None:
        return "-"
    text = f"{entry['difference']:+.4f} [{entry['low']:+.3f}, {entry['high']:+.3f}]"
    if significant:
        text += " worse" if entry["high"] < 0 else " better"
    elif entry.get("inconclusive"):  # a drop beyond the tolerance the eval set cannot confirm
        text += " inconclusive"
    return text


def render_tables(
    records: Iterable[Mapping[str, Any]],
    *,
    verbosity: int = 0,
    comparisons: Mapping[str, Mapping[str, Mapping[str, Any]]] | None = None,
    reference: str | None = None,
    recommendations: Mapping[str, Any] | None = None,
    priority: str = "balanced",
) -> list[str]:
    """The summary as lines of text (empty when no retrieval test ran).

    ``comparisons[dataset][model]`` holds each model's paired nDCG@10 difference to the
    ``reference`` model; ``recommendations[dataset]`` the picks of :func:`recommend`.
    """
    lines: list[str] = []
    quiet = verbosity < 0
    columns = [c for c in _COLUMNS if c[4] or not quiet]
    hidden = [c[0] for c in _COLUMNS if c not in columns]
    dashes = False  # a cell without a value: the legend then says what "-" means
    for dataset, rows in model_rows(records).items():
        values = [[getter(row["result"]) for _, getter, _, _, _ in columns] for row in rows]
        best: list[float | None] = []
        for j, (_, _, _, higher, _) in enumerate(columns):
            present = [v[j] for v in values if v[j] is not None and not math.isnan(v[j])]
            finite = [x for x in present if math.isfinite(x)]
            pool = finite or present
            best.append((max(pool) if higher else min(pool)) if len(rows) > 1 and pool else None)
        with_baseline = any(row["baseline"] is not None for row in rows)
        versus = (comparisons or {}).get(dataset) or {}
        table = []
        for row, vals in zip(rows, values, strict=True):
            cells = [row["model"]]
            for j, (header, _, fmt, _, _) in enumerate(columns):
                value = vals[j]
                if value is None or math.isnan(value):
                    cells.append("-")
                    continue
                text = fmt.format(value) if math.isfinite(value) else "inf"
                if header == "nDCG@10" and row["result"] is not None:
                    entry = row["result"]["metrics"]["ndcg@10"]
                    text += f" [{entry['low']:.3f}, {entry['high']:.3f}]"
                if best[j] is not None and value == best[j]:
                    text += " *"
                cells.append(text)
            if with_baseline:
                b = row["baseline"]
                cells.append(_delta(b, bool(b and b.get("significant"))))
            if versus:
                c = versus.get(row["model"])
                if row["model"] == reference:
                    cells.append("(reference)")
                elif c is None:
                    cells.append("-")
                else:
                    cells.append(
                        _delta(c, c["p_holm"] is not None and c["p_holm"] < 0.05)
                        + f" p={c['p_holm']:.3g}"
                    )
            cells.append(_status(row, 40 if quiet else 60))
            dashes = dashes or "-" in cells[1:]
            table.append(cells)
        first = next((r["result"] for r in rows if r["result"] is not None), None)
        size = (
            f" ({first['queries']} queries, {first['documents']} documents)"
            if first is not None
            else ""
        )
        lines.append(f"dataset {dataset!r}{size}")
        headers = ["model"] + [c[0] for c in columns]
        if with_baseline:
            headers.append("Δ nDCG@10 vs baseline")
        if versus:
            headers.append(f"Δ nDCG@10 vs {reference}")
        headers.append("status")
        lines.extend(
            tabulate(table, headers=headers, tablefmt="simple", disable_numparse=True).splitlines()
        )
        if hidden:
            lines.append(f"(-q hides {', '.join(hidden)}; run without -q to see every column)")
        rec = (recommendations or {}).get(dataset)
        if rec and len(rows) > 1:
            lines.append("")
            lines.append(f"recommendation (selected priority: {priority}):")
            for name, pick in rec["picks"].items():
                w, c = pick["weights"], pick["components"]
                mark = " <- selected" if name == priority else ""
                lines.append(
                    f"  {name + '-first' if name != 'balanced' else name:<15} {pick['model']:<24}"
                    f" score {pick['score']:.3f} = {w['accuracy']:.2f} x accuracy "
                    f"{c['accuracy']:.3f} + {w['speed']:.2f} x speed {c['speed']:.3f} + "
                    f"{w['cost']:.2f} x cost {c['cost']:.3f}{mark}"
                )
            tied = [tier for tier in rec.get("speed_tiers", []) if len(tier) > 1]
            if tied:
                lines.append(
                    "  equally fast (overlapping p95 intervals): "
                    + "; ".join(" = ".join(tier) for tier in tied)
                )
        lines.append("")
    if lines:
        legend = "* best in column; nDCG@10 shows its 95% bootstrap interval over queries"
        headers_seen = " ".join(line for line in lines if line.startswith("model"))
        if "Δ" in headers_seen:
            legend += "; Δ: paired bootstrap difference [95% interval]"
        if "Δ nDCG@10 vs" in headers_seen.replace("vs baseline", ""):
            legend += ", p: randomization test, Holm-adjusted"
        if dashes:
            legend += (
                "; -: no value (the model failed, or nothing was measured: a cut-off the run "
                "lacks, docs/s when every document came from the cache, Δ when there is no "
                "baseline or reference to pair)"
            )
        lines.append(legend)
    return lines

"""The stress section of a run: every workload point's figures, by dataset, computed once.

:func:`stress_points` reads the records of stress tests (``record.workload`` set) into rows the
terminal, JSON and any other writer render: for a noise point the stressed metric, the clean
one and the paired difference with its interval; for a needle point hit@1, nDCG and whether the
model's maximum sequence length cut the needle off. :func:`render_stress` draws the terminal's
lines: a delta table per dataset for noise, a depth x length grid per model for needles.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from tabulate import tabulate

from ..records import TestRecord, as_record

__all__ = ["cutoff_rows", "point_row", "render_cutoffs", "render_stress", "stress_points"]

#: the metric a noise point's delta shows (when the run computed it)
HEADLINE = "ndcg@10"


def stress_points(
    records: Iterable[TestRecord | Mapping[str, Any]],
) -> dict[str, list[dict[str, Any]]]:
    """Per dataset, one row per stress test (sorted by model, then workload id)."""
    out: dict[str, list[dict[str, Any]]] = {}
    for record in (as_record(r) for r in records):
        if record.workload is None:
            continue
        row = point_row(record.model, record.workload, record.result, record.status.value)
        out.setdefault(record.dataset, []).append({"nodeid": record.nodeid, **row})
    return {
        dataset: sorted(rows, key=lambda r: (r["model"], r["kind"], r["id"]))
        for dataset, rows in sorted(out.items())
    }


def point_row(
    model: str,
    workload: Mapping[str, Any],
    result: Mapping[str, Any] | None,
    status: str,
) -> dict[str, Any]:
    """One point's row from its workload and ``StressedResult.to_dict()`` data."""
    stress = (result or {}).get("stress") or {}
    metrics = (result or {}).get("metrics") or {}
    return {
        "model": model,
        "kind": workload.get("kind"),
        "id": workload.get("id"),
        "params": workload.get("params") or {},
        "seeds": workload.get("seeds") or [],
        "status": status,
        "metrics": {m: metrics[m] for m in (HEADLINE, "hit@1") if m in metrics},
        "clean": (stress.get("clean") or {}).get(HEADLINE),
        "delta": (stress.get("delta") or {}).get(HEADLINE),
        "info": stress.get("info") or {},
    }


def _num(entry: Mapping[str, Any] | None, fmt: str = "{:.4f}") -> str:
    if not entry or entry.get("value") is None:
        return "-"
    return fmt.format(entry["value"])


def _delta(entry: Mapping[str, Any] | None) -> str:
    if not entry or entry.get("value") is None:
        return "-"
    text = f"{entry['value']:+.4f} [{entry['low']:+.3f}, {entry['high']:+.3f}]"
    if entry["high"] < 0:
        text += " worse"
    elif entry["low"] > 0:
        text += " better"
    return text


def render_stress(
    points: Mapping[str, Sequence[Mapping[str, Any]]], *, tablefmt: str = "simple"
) -> list[str]:
    """The stress section's lines (none when no stress test ran); ``tablefmt="github"`` for
    Markdown."""
    lines: list[str] = []
    for dataset, rows in points.items():
        noise = [r for r in rows if r["kind"] == "noise"]
        needles = [r for r in rows if r["kind"] == "needle"]
        chunks = sorted(
            (r for r in rows if r["kind"] == "chunk-size"),
            key=lambda r: (r["model"], int(r["params"].get("size") or 0)),
        )
        if chunks:
            table = [
                [
                    r["model"],
                    r["params"].get("size"),
                    _num(r["clean"]),
                    _num(r["metrics"].get(HEADLINE)),
                    _delta(r["delta"]),
                    r["status"],
                ]
                for r in chunks
            ]
            headers = ["model", "chunk tokens", "configured nDCG@10", "re-chunked", "Δ", "status"]
            title = f"stress on {dataset!r}: chunk size vs the configured chunking (paired)"
            lines.extend(_table(title, headers, table, tablefmt))
        if noise:
            table = [
                [
                    r["model"],
                    r["id"],
                    len(r["seeds"]),
                    _num(r["clean"]),
                    _num(r["metrics"].get(HEADLINE)),
                    _delta(r["delta"]),
                    r["status"],
                ]
                for r in noise
            ]
            headers = ["model", "noise", "seeds", "clean nDCG@10", "noisy", "Δ noisy - clean"]
            title = f"stress on {dataset!r}: query noise (paired, 95% interval)"
            lines.extend(_table(title, [*headers, "status"], table, tablefmt))
        for model in sorted({r["model"] for r in needles}):
            found = [r for r in needles if r["model"] == model]
            lines.extend(_needle_grid(dataset, model, found, tablefmt))
    return lines


def _needle_grid(
    dataset: str, model: str, rows: Sequence[Mapping[str, Any]], tablefmt: str
) -> list[str]:
    """hit@1 by depth (rows) and length (columns); '(cut)' where the needle lay past what the
    model reads; chance is 1/haystacks."""
    lengths = sorted({int(r["params"]["length"]) for r in rows})
    depths = sorted({float(r["params"]["depth"]) for r in rows})
    cell = {(float(r["params"]["depth"]), int(r["params"]["length"])): r for r in rows}
    table = []
    for depth in depths:
        line = [f"{depth:g}"]
        for length in lengths:
            r = cell.get((depth, length))
            if r is None:
                line.append("")
                continue
            text = _num(r["metrics"].get("hit@1"), "{:.2f}")
            if r["info"].get("cut"):
                text += " (cut)"
            line.append(text)
        table.append(line)
    chance = next((r["info"].get("chance_hit@1") for r in rows if r["info"]), None)
    limit = next((r["info"].get("max_seq_length") for r in rows if r["info"]), None)
    title = f"stress on {dataset!r}: needle hit@1 for {model} (depth x length"
    title += f"; chance {chance:.2f}" if chance else ""
    title += f"; reads {limit} tokens)" if limit else ")"
    headers = ["depth", *[f"{n} tok" for n in lengths]]
    return _table(title, headers, table, tablefmt)


def _table(
    title: str, headers: Sequence[str], table: Sequence[Sequence[Any]], tablefmt: str
) -> list[str]:
    """A titled table of the stress section, then a blank line."""
    text = tabulate(table, headers=list(headers), tablefmt=tablefmt, disable_numparse=True)
    return [title, *text.splitlines(), ""]


def cutoff_rows(
    records: Iterable[TestRecord | Mapping[str, Any]],
) -> dict[str, list[dict[str, Any]]]:
    """Per dataset, the cut-offs measured by tests that read ``retrieval.cutoffs`` (one row per
    model and level: strict, balanced, loose, conformal), once per model."""
    out: dict[str, dict[str, list[dict[str, Any]]]] = {}
    for record in sorted((as_record(r) for r in records), key=lambda r: r.nodeid):
        found = (record.result or {}).get("cutoffs")
        if not found or record.workload is not None:
            continue
        per_model = out.setdefault(record.dataset, {})
        if record.model in per_model:
            continue
        levels = [*(found.get("levels") or {}).values(), found.get("conformal") or {}]
        per_model[record.model] = [
            {"model": record.model, **level} for level in levels if level.get("name")
        ]
    return {
        dataset: [row for model in sorted(models) for row in models[model]]
        for dataset, models in sorted(out.items())
    }


def _pct(value: Any) -> str:
    return "-" if value is None else f"{100 * float(value):.2f}%"


def render_cutoffs(rows_by_dataset: Mapping[str, Sequence[Mapping[str, Any]]]) -> list[str]:
    """A table per dataset: each level's score cut-off and what it did on the held-out half."""
    lines: list[str] = []
    for dataset, rows in rows_by_dataset.items():
        table = [
            [
                r["model"],
                r["name"],
                # None: -inf (too few relevant scores to exclude any) or not measured
                "none" if r.get("threshold") is None else f"{r['threshold']:.4f}",
                f"keeps >= {_pct(r['target'])}" if r["name"] == "conformal" else _pct(r["target"]),
                _pct(r.get("keeps_relevant")),
                _pct(r.get("lets_random")),
            ]
            for r in rows
        ]
        headers = ["model", "level", "cut-off", "aim (random)", "keeps relevant", "lets random"]
        title = f"cut-offs on {dataset!r} (calibrated on half the queries, shown on the other)"
        lines.extend(_table(title, headers, table, "simple"))
    return lines

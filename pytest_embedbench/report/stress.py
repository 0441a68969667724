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
    model and level: strict, balanced, loose, conformal), once per model. Each row also
    carries its model's ``meaningful``, ``reason`` and ``notes``."""
    out: dict[str, dict[str, list[dict[str, Any]]]] = {}
    for record in sorted((as_record(r) for r in records), key=lambda r: r.nodeid):
        found = (record.result or {}).get("cutoffs")
        if not found or record.workload is not None:
            continue
        per_model = out.setdefault(record.dataset, {})
        if record.model in per_model:
            continue
        levels = [*(found.get("levels") or {}).values(), found.get("conformal") or {}]
        shared = {
            "meaningful": found.get("meaningful", True),
            "reason": found.get("reason") or "",
            "notes": list(found.get("notes") or []),
        }
        per_model[record.model] = [
            {"model": record.model, **level, **shared} for level in levels if level.get("name")
        ]
    return {
        dataset: [row for model in sorted(models) for row in models[model]]
        for dataset, models in sorted(out.items())
    }


def _pct(value: Any) -> str:
    return "-" if value is None else f"{100 * float(value):.2f}%"


def _interval(value: Any, low: Any, high: Any) -> str:
    """``1.20% (0.80-1.50%)``; the bare share when the row has no interval (older JSON)."""
    if value is None:
        return "-"
    if low is None or high is None:
        return _pct(value)
    return f"{_pct(value)} ({100 * float(low):.2f}-{_pct(high)})"


def _outside(value: Any, low: Any, high: Any) -> bool:
    return None not in (value, low, high) and not float(low) <= float(value) <= float(high)


def _cutoff_cells(r: Mapping[str, Any]) -> list[str]:
    conformal = r["name"] == "conformal"
    if conformal:
        aim = f"{_pct(r['target'])} of queries keep theirs"
    elif r.get("expected_random_low") is not None:
        aim = _interval(r["target"], r["expected_random_low"], r.get("expected_random_high"))
    else:
        aim = _pct(r["target"])
    lets = _interval(r.get("lets_random"), r.get("lets_random_low"), r.get("lets_random_high"))
    if not conformal and _outside(
        r.get("lets_random"), r.get("expected_random_low"), r.get("expected_random_high")
    ):
        lets += " !"
    kept_q = _interval(
        r.get("keeps_queries"), r.get("keeps_queries_low"), r.get("keeps_queries_high")
    )
    if conformal and r.get("keeps_queries_high") is not None:
        kept_q += " !" if float(r["keeps_queries_high"]) < float(r["target"]) else ""
    return [
        r["model"],
        r["name"],
        # None: -inf (too few queries to exclude any) or not measured
        "none" if r.get("threshold") is None else f"{r['threshold']:.4f}",
        aim,
        _interval(
            r.get("keeps_relevant"), r.get("keeps_relevant_low"), r.get("keeps_relevant_high")
        ),
        lets,
        kept_q,
    ]


def render_cutoffs(rows_by_dataset: Mapping[str, Sequence[Mapping[str, Any]]]) -> list[str]:
    """A table per dataset: each level's score cut-off, its aim and what it did on the held-out
    half, with 95% intervals clustered by query; then each model's conformal guarantee, and
    for a model whose scores are not comparable across queries, why it has no cut-off."""
    lines: list[str] = []
    for dataset, rows in rows_by_dataset.items():
        shown = [r for r in rows if r.get("meaningful", True)]
        table = [_cutoff_cells(r) for r in shown]
        headers = [
            "model",
            "level",
            "cut-off",
            "aim (expected)",
            "keeps relevant",
            "lets random",
            "queries kept whole",
        ]
        title = f"cut-offs on {dataset!r} (calibrated on half the queries, shown on the other)"
        if table:
            lines.extend(_table(title, headers, table, "simple")[:-1])
            lines.append(
                "held-out rates with 95% intervals clustered by query; aim (expected): where "
                "the held-out rate should fall if the aim carries over; ! it did not"
            )
        else:
            lines.append(title)
        for r in rows:
            if r["name"] != "conformal":
                continue
            if not r.get("meaningful", True):
                lines.append(f"{r['model']}: no global cut-off: {r.get('reason') or ''}")
                continue
            if r.get("guarantee"):
                lines.append(f"{r['model']} conformal: {r['guarantee']}")
            lines.extend(
                f"{r['model']}: {note}"
                for note in r.get("notes") or []
                if note != r.get("guarantee", "").removeprefix("None: ")
            )
        lines.append("")
    return lines

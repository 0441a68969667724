"""The comparison table printed at the end of a run: one table per dataset, a row per model.

The best value of each column is marked with ``*``; a model that failed shows its error in its
status. Under ``-q`` the table keeps its most important columns and says which it hid. The
table renders a :class:`~.summary.Summary` and computes nothing; :class:`ProgressPrinter`
prints document-embedding progress while a run goes on, through :class:`ProgressLines`.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import nullcontext
from dataclasses import dataclass
from typing import Any

import pytest
from tabulate import tabulate

from ..records import TestRecord
from .columns import Column, column_names, default_columns, latency_keys, resolve_column
from .stress import render_cutoffs, render_stress
from .summary import ModelRow, Summary, busy_notes, latency_basis, model_rows

__all__ = [
    "ProgressLines",
    "ProgressPrinter",
    "busy_notes",
    "model_rows",
    "column_names",
    "render_summary",
    "render_tables",
    "resolve_column",
]


@dataclass
class _Legend:
    """What the tables showed, so the legend explains exactly that."""

    baseline: bool = False  # a Δ vs baseline column
    reference: bool = False  # a Δ vs the reference model column (with p-values)
    dashes: bool = False  # a cell without a value

    def line(self) -> str:
        legend = "* best in column; nDCG@10 shows its 95% bootstrap interval over queries"
        if self.baseline or self.reference:
            legend += "; Δ: paired bootstrap difference [95% interval]"
        if self.reference:
            legend += ", p: randomization test, Holm-adjusted"
        if self.dashes:
            legend += (
                "; -: no value (the model failed, or nothing was measured: a cut-off the run "
                "lacks, docs/s when every document came from the cache, Δ when there is no "
                "baseline or reference to pair)"
            )
        return legend


def _status(row: ModelRow, width: int) -> str:
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


def render_summary(
    summary: Summary, *, verbosity: int = 0, columns: Sequence[str] | None = None
) -> list[str]:
    """The tables of a run's :class:`~.summary.Summary` as lines of text (then its stress
    section: noise deltas and needle grids); ``columns`` names the columns to show
    (``--embedbench-columns``; default: the standard table)."""
    lines = _render(
        summary.rows,
        verbosity=verbosity,
        columns=columns,
        comparisons=summary.comparisons,
        reference=summary.reference,
        recommendations=summary.recommendations,
        priority=summary.priority,
    )
    return lines + render_stress(summary.stress) + render_cutoffs(summary.cutoffs)


def render_tables(
    records: Iterable[TestRecord | Mapping[str, Any]],
    *,
    verbosity: int = 0,
    comparisons: Mapping[str, Mapping[str, Mapping[str, Any]]] | None = None,
    reference: str | None = None,
    recommendations: Mapping[str, Any] | None = None,
    priority: str = "balanced",
    columns: Sequence[str] | None = None,
) -> list[str]:
    """The summary as lines of text (empty when no retrieval test ran).

    ``comparisons[dataset][model]`` holds each model's paired nDCG@10 difference to the
    ``reference`` model; ``recommendations[dataset]`` the picks of :func:`recommend`.
    """
    return _render(
        model_rows(records),
        verbosity=verbosity,
        columns=columns,
        comparisons=comparisons or {},
        reference=reference,
        recommendations=recommendations or {},
        priority=priority,
    )


def _render(
    rows_by_dataset: Mapping[str, Sequence[ModelRow]],
    *,
    verbosity: int,
    comparisons: Mapping[str, Mapping[str, Mapping[str, Any]]],
    reference: str | None,
    recommendations: Mapping[str, Any],
    priority: str,
    columns: Sequence[str] | None = None,
) -> list[str]:
    quiet = verbosity < 0
    chosen = [c for c in (resolve_column(n) for n in columns or ()) if c is not None]
    if chosen:  # the user's choice, in their order, -q or not
        shown, hidden = chosen, []
    else:
        shown = [c for c in default_columns() if c.quiet or not quiet]
        hidden = [c.header for c in default_columns() if c not in shown]
    legend = _Legend()
    latency = latency_keys()
    lines: list[str] = []
    for dataset, rows in rows_by_dataset.items():
        versus = comparisons.get(dataset) or {}
        lines.extend(_table(dataset, rows, shown, versus, reference, quiet, legend))
        basis = latency_basis(rows) if any(c.key in latency for c in shown) else None
        if basis:
            lines.append(f"latency (query embedding + search): {basis}")
        if hidden:
            lines.append(f"(-q hides {', '.join(hidden)}; run without -q to see every column)")
        rec = recommendations.get(dataset)
        if rec and len(rows) > 1:
            lines.extend(_recommendation(rec, priority))
        lines.append("")
    if lines:
        lines.append(legend.line())
    return lines


def _best(
    rows: Sequence[ModelRow], values: list[list[float | None]], columns: list[Column]
) -> list[float | None]:
    """Per column, the best value (None when fewer than two rows, or no value)."""
    best: list[float | None] = []
    for j, column in enumerate(columns):
        present = [x for x in (v[j] for v in values) if x is not None and not math.isnan(x)]
        pool = [x for x in present if math.isfinite(x)] or present
        if len(rows) > 1 and pool and column.ranked:
            best.append(max(pool) if column.higher_is_better else min(pool))
        else:
            best.append(None)
    return best


def _table(
    dataset: str,
    rows: Sequence[ModelRow],
    columns: list[Column],
    versus: Mapping[str, Mapping[str, Any]],
    reference: str | None,
    quiet: bool,
    legend: _Legend,
) -> list[str]:
    """The title and table of one dataset; ``legend`` learns what the table showed."""
    values = [[column.get(row["result"]) for column in columns] for row in rows]
    best = _best(rows, values, columns)
    with_baseline = any(row["baseline"] is not None for row in rows)
    table = []
    for row, vals in zip(rows, values, strict=True):
        cells = [row["model"], *_cells(row, vals, best, columns)]
        if with_baseline:
            b = row["baseline"]
            cells.append(_delta(b, bool(b and b.get("significant"))))
        if versus:
            cells.append(_versus(row, versus, reference))
        cells.append(_status(row, 40 if quiet else 60))
        legend.dashes = legend.dashes or "-" in cells[1:]
        table.append(cells)
    legend.baseline = legend.baseline or with_baseline
    legend.reference = legend.reference or bool(versus)
    headers = ["model"] + [c.header for c in columns]
    if with_baseline:
        headers.append("Δ nDCG@10 vs baseline")
    if versus:
        headers.append(f"Δ nDCG@10 vs {reference}")
    headers.append("status")
    first = next((r["result"] for r in rows if r["result"] is not None), None)
    size = f" ({first['queries']} queries, {first['documents']} documents)" if first else ""
    text = tabulate(table, headers=headers, tablefmt="simple", disable_numparse=True)
    return [f"dataset {dataset!r}{size}", *text.splitlines()]


def _cells(
    row: ModelRow, vals: list[float | None], best: list[float | None], columns: list[Column]
) -> list[str]:
    cells = []
    for value, top, column in zip(vals, best, columns, strict=True):
        if value is None or math.isnan(value):
            cells.append("n/a" if column.key == "vram_peak_mb" else "-")
            continue
        text = column.fmt.format(value) if math.isfinite(value) else "inf"
        if column.key == "ndcg@10" and row["result"] is not None:
            entry = row["result"]["metrics"]["ndcg@10"]
            text += f" [{entry['low']:.3f}, {entry['high']:.3f}]"
        if top is not None and value == top:
            text += " *"
        cells.append(text)
    return cells


def _versus(row: ModelRow, versus: Mapping[str, Mapping[str, Any]], reference: str | None) -> str:
    c = versus.get(row["model"])
    if row["model"] == reference:
        return "(reference)"
    if c is None:
        return "-"
    significant = c["p_holm"] is not None and c["p_holm"] < 0.05
    return _delta(c, significant) + f" p={c['p_holm']:.3g}"


def _recommendation(rec: Mapping[str, Any], priority: str) -> list[str]:
    lines = ["", f"recommendation (selected priority: {priority}):"]
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
    return lines


class ProgressPrinter:
    """Prints document-embedding progress (done, rate) when a cold embedding runs long.

    ``write(line)`` must reach the terminal outside captured output. Nothing is printed for a
    run that finishes within ``delay`` seconds, so warm-cache runs stay quiet.
    """

    def __init__(self, write: Callable[[str], None], *, delay: float = 2.0, every: float = 2.0):
        self.write = write
        self.delay = delay
        self.every = every
        self._start: float | None = None
        self._last = 0.0
        self._printed = False

    def __call__(self, stage: str, done: int, total: int) -> None:
        if stage != "documents":
            return
        now = time.perf_counter()
        if self._start is None or done <= 0:
            self._start, self._last, self._printed = now, now, False
        if done <= 0:
            return
        elapsed = now - self._start
        finished = done >= total
        if (elapsed >= self.delay and now - self._last >= self.every) or (
            finished and self._printed
        ):
            rate = done / elapsed if elapsed > 0 else math.inf
            self.write(
                f"embedbench: embedded {done}/{total} documents ({rate:.0f} docs/s)"
                + (" done" if finished else "")
            )
            self._last = now
            self._printed = True
        if finished:
            self._start = None


class ProgressLines:
    """Writes progress lines to the terminal, outside captured output, each on its own line,
    and keeps pytest's test line whole: after a progress line, the test's location is written
    again before its outcome, so ``test_x.py::test[m] PASSED`` (or ``test_x.py .``) stays one
    line."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.pending = False  # a progress line ended pytest's current line

    def write(self, line: str) -> None:
        reporter = self.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is None:
            return
        capman = self.config.pluginmanager.get_plugin("capturemanager")
        with capman.global_and_fixture_disabled() if capman is not None else nullcontext():
            # start a line of our own; leave it open, so that pytest's next write ends it
            # instead of adding a blank line
            if getattr(reporter._tw, "width_of_current_line", 1):
                reporter.write("\n")
            reporter.write(line, flush=True)
            # pytest writes a test's location again when this differs from what it wrote last
            reporter.currentfspath = None
        self.pending = True

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """Under ``-v`` pytest writes the location again itself; without it, it writes only
        the outcome letter, so the file's name is written first here."""
        if not self.pending or self.config.get_verbosity() > 0:
            return
        status = self.config.hook.pytest_report_teststatus(report=report, config=self.config)
        if not status[1]:  # nothing will be written for this phase (a passed setup)
            return
        reporter = self.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None and getattr(reporter, "showfspath", False):
            reporter.write_fspath_result(report.nodeid, "")
        self.pending = False

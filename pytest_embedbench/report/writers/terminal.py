"""The comparison table printed at the end of a run: one table per dataset, a row per model.

The best value of each column is marked with ``*``; a model that failed shows its error in its
status. Under ``-q`` the table keeps its most important columns and says which it hid. The
table formats a :class:`~.summary.Summary` and computes nothing: the values, their best marks,
the differences and their verdicts are the summary's. :class:`ProgressPrinter` prints
document-embedding progress while a run goes on, through :class:`ProgressLines`.
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

from ...core.text import inert
from ...evaluation.record import TestRecord
from ..summary import (
    DatasetSummary,
    ModelSummary,
    Recommendation,
    Summary,
    busy_notes,
    model_rows,
    summarize,
)
from ..summary.columns import (
    JUDGED_COLUMN,
    Column,
    column_names,
    default_columns,
    latency_keys,
    resolve_column,
)
from ..summary.values import Delta
from .index_tables import render_indexes
from .language_tables import render_languages
from .stage_tables import render_stages
from .stress import render_cutoffs, render_stress
from .text import delta_text, tier_lines

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


def _status(model: ModelSummary, width: int) -> str:
    status = model.status
    if model.error and status in ("error", "failed"):
        first = str(model.error).strip().splitlines()[0] if str(model.error).strip() else ""
        text = inert(f"{status}: {first}", keep="")  # shown, then cut to the width
        return text if len(text) <= width else text[: width - 3] + "..."
    return status


def render_summary(
    summary: Summary, *, verbosity: int = 0, columns: Sequence[str] | None = None
) -> list[str]:
    """The tables of a run's :class:`~.summary.Summary` as lines of text, then its stress
    section (chunk sizes, noise deltas, needle grids) and its cut-offs; ``columns`` names the
    columns to show (``--embedbench-columns``; default: the standard table)."""
    lines = _render(summary, verbosity=verbosity, columns=columns)
    return (
        lines  # the index, stress and cut-off tables show the controls in their texts too
        + render_stages(summary.stages)
        + render_languages(summary.languages)
        + render_indexes(summary.indexes, summary.query_load)
        + render_stress(summary.stress)
        + render_cutoffs(summary.cutoffs)
    )


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
    """The model tables of ``records`` as lines of text (empty when no retrieval test ran):
    :func:`render_summary`'s first part for the summary :func:`~.summary.summarize` makes of
    them.

    ``comparisons[dataset][model]`` holds each model's paired nDCG@10 difference to the
    ``reference`` model; ``recommendations[dataset]`` the picks of :func:`recommend`.
    """
    summary = summarize(
        records,
        reference=reference,
        priority=priority,
        comparisons=comparisons,
        recommendations=recommendations,
    )
    return _render(summary, verbosity=verbosity, columns=columns)


def _render(summary: Summary, *, verbosity: int, columns: Sequence[str] | None) -> list[str]:
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
    for dataset in summary.datasets:
        # holes in the judgments: judged@10 beside the metrics it qualifies (not when the user
        # chose the columns)
        extra = [JUDGED_COLUMN] if dataset.holes and not chosen else []
        lines.extend(_table(dataset, [*shown, *extra], quiet, legend))
        if dataset.latency_basis and any(c.key in latency for c in shown):
            lines.append(f"latency (query embedding + search): {dataset.latency_basis}")
        if dataset.metrics_basis:
            lines.append(dataset.metrics_basis)
        if hidden:
            lines.append(f"(-q hides {', '.join(hidden)}; run without -q to see every column)")
        rec = dataset.shown_recommendation
        if rec is not None:
            lines.extend(_recommendation(rec, summary.priority))
        lines.append("")
    if lines:
        lines.append(legend.line())
    # every name in these lines (models, datasets, errors) with its control characters shown,
    # not run by the terminal
    return [inert(line) for line in lines]


def _table(
    dataset: DatasetSummary, columns: list[Column], quiet: bool, legend: _Legend
) -> list[str]:
    """The title and table of one dataset; ``legend`` learns what the table showed."""
    table = []
    for model in dataset.models:
        cells = [model.model, *_cells(model, columns)]
        if dataset.with_baseline:
            cells.append(delta_text(model.baseline))
        if dataset.reference is not None:
            cells.append(_versus(model))
        cells.append(_status(model, 40 if quiet else 60))
        legend.dashes = legend.dashes or "-" in cells[1:]
        table.append(cells)
    legend.baseline = legend.baseline or dataset.with_baseline
    legend.reference = legend.reference or dataset.reference is not None
    headers = ["model"] + [c.header for c in columns]
    if dataset.with_baseline:
        headers.append("Δ nDCG@10 vs baseline")
    if dataset.reference is not None:
        headers.append(f"Δ nDCG@10 vs {dataset.reference}")
    headers.append("status")
    size = (
        f" ({dataset.queries} queries, {dataset.documents} documents)"
        if dataset.queries is not None
        else ""
    )
    # each cell one line, its controls shown, before tabulate measures the widths
    text = tabulate(
        [[inert(c, keep="") for c in row] for row in table],
        headers=[inert(h, keep="") for h in headers],
        tablefmt="simple",
        disable_numparse=True,
    )
    return [f"dataset {dataset.name!r}{size}", *text.splitlines()]


def _cells(model: ModelSummary, columns: list[Column]) -> list[str]:
    cells = []
    for column in columns:
        found = model.figures.get(column.key)
        if found is None or found.value is None:
            cells.append("n/a" if column.key == "vram_peak_mb" else "-")
            continue
        text = column.fmt.format(found.value)
        if column.key == "ndcg@10" and found.low is not None and found.high is not None:
            text += f" [{found.low:.3f}, {found.high:.3f}]"
        if found.best:
            text += " *"
        cells.append(text)
    return cells


def _versus(model: ModelSummary) -> str:
    if model.is_reference:
        return "(reference)"
    delta: Delta | None = model.versus
    if delta is None:
        return "-"
    p = "-" if delta.p_holm is None else f"{delta.p_holm:.3g}"
    return f"{delta_text(delta)} p={p}"


def _recommendation(rec: Recommendation, priority: str) -> list[str]:
    lines = ["", f"recommendation (selected priority: {priority}):"]
    for pick in rec.picks:
        w, c = pick.weights, pick.components
        name = pick.priority
        mark = " <- selected" if name == priority else ""
        lines.append(
            f"  {name + '-first' if name != 'balanced' else name:<15} {pick.model:<24}"
            f" score {pick.score:.3f} = {w.accuracy:.2f} x accuracy "
            f"{c.accuracy:.3f} + {w.speed:.2f} x speed {c.speed:.3f} + "
            f"{w.cost:.2f} x cost {c.cost:.3f}{mark}"
        )
        if pick.tied_with:
            lines.append(
                f"  {'':<15} tied with {', '.join(pick.tied_with)}: these figures do not decide"
            )
    lines.extend(f"  {line}" for line in tier_lines(rec))
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

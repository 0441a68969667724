"""The stress and cut-off sections as text tables: the terminal's and the Markdown's.

:func:`stress_tables` and :func:`cutoff_tables` format the summary's typed sections
(:mod:`.stress_summary`) into :class:`TextTable`\\ s, cell by cell: the chunk-size sweep and the
noise workloads as paired differences with their intervals and verdicts, one needle grid per
model (depth x length, hit@1, ``(cut)`` where the needle lay past what the model reads), and
the cut-off levels with their aims and held-out rates. The terminal draws them with tabulate
(:func:`render_stress`, :func:`render_cutoffs`), the Markdown writer as GitHub tables, so both
hold the same figures. Nothing here decides a verdict or a miss: the summary did.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tabulate import tabulate

from ...core.text import inert
from ..summary.cutoffs import CutoffModel, CutoffRow, CutoffSection, cutoff_rows, cutoff_sections
from ..summary.stress import (
    HEADLINE,
    NeedleGrid,
    StressSection,
    point_row,
    stress_points,
    stress_sections,
)
from .text import delta_text, number, pct, rate_text

__all__ = [
    "HEADLINE",
    "CUTOFF_LEGEND",
    "TextTable",
    "cutoff_rows",
    "cutoff_tables",
    "delta_text",
    "point_row",
    "render_cutoffs",
    "render_stress",
    "stress_points",
    "stress_tables",
    "text_lines",
]

#: the line under a cut-off table
CUTOFF_LEGEND = (
    "held-out rates with 95% intervals clustered by query; aim (expected): where the held-out "
    "rate should fall if the aim carries over; ! it did not"
)


@dataclass(frozen=True)
class TextTable:
    """A titled table of text cells, and the lines that follow it (a legend, guarantees)."""

    title: str
    headers: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    after: tuple[str, ...] = ()


def stress_tables(sections: Iterable[StressSection]) -> list[TextTable]:
    """Per dataset: the chunk-size sweep, the noise workloads, then a needle grid per model."""
    tables = []
    for section in sections:
        name = section.dataset
        if section.chunks:
            tables.append(
                TextTable(
                    f"stress on {name!r}: chunk size vs the configured chunking (paired)",
                    ("model", "chunk tokens", "configured nDCG@10", "re-chunked", "Δ", "status"),
                    tuple(
                        (
                            p.model,
                            str(p.size),
                            number(p.clean),
                            number(p.stressed),
                            delta_text(p.delta),
                            p.status,
                        )
                        for p in section.chunks
                    ),
                )
            )
        if section.noise:
            tables.append(
                TextTable(
                    f"stress on {name!r}: query noise (paired, 95% interval)",
                    (
                        "model",
                        "noise",
                        "seeds",
                        "clean nDCG@10",
                        "noisy",
                        "Δ noisy - clean",
                        "status",
                    ),
                    tuple(
                        (
                            p.model,
                            p.workload,
                            str(p.seeds),
                            number(p.clean),
                            number(p.stressed),
                            delta_text(p.delta),
                            p.status,
                        )
                        for p in section.noise
                    ),
                )
            )
        tables.extend(_needle_table(name, grid) for grid in section.needles)
    return tables


def needle_title(grid: NeedleGrid) -> str:
    """``needle hit@1 for bm25 (depth x length; chance 0.10; reads 256 tokens)``."""
    title = f"needle hit@1 for {grid.model} (depth x length"
    title += f"; chance {grid.chance:.2f}" if grid.chance else ""
    title += f"; reads {grid.reads} tokens)" if grid.reads else ")"
    return title


def _needle_table(dataset: str, grid: NeedleGrid) -> TextTable:
    """hit@1 by depth (rows) and length (columns); '(cut)' where the needle lay past what the
    model reads; chance is 1/haystacks."""
    rows = []
    for depth in grid.depths:
        line = [f"{depth:g}"]
        for length in grid.lengths:
            cell = grid.cell(depth, length)
            if cell is None:
                line.append("")
                continue
            line.append(number(cell.hit1, "{:.2f}") + (" (cut)" if cell.cut else ""))
        rows.append(tuple(line))
    return TextTable(
        f"stress on {dataset!r}: {needle_title(grid)}",
        ("depth", *(f"{n} tok" for n in grid.lengths)),
        tuple(rows),
    )


def aim_text(row: CutoffRow, model: CutoffModel) -> str:
    """What a level aims at: the share of random pairs it lets through (with the range the
    held-out share should fall in), or, for the conformal cut-off, the share of queries that
    keep all (or the relevant share) of their relevant documents."""
    if row.conformal:
        share = model.relevant_share
        whole = "all" if share >= 1.0 else f">= {100 * share:g}%"
        return f"{pct(row.target)} of queries keep {whole}"
    if row.expected_random is not None:
        return rate_text(row.expected_random)
    return pct(row.target)


def cutoff_cells(row: CutoffRow, model: CutoffModel) -> tuple[str, ...]:
    return (
        model.model,
        row.level,
        # None: -inf (too few queries to exclude any) or not measured
        "none" if row.threshold is None else f"{row.threshold:.4f}",
        aim_text(row, model),
        rate_text(row.keeps_relevant),
        rate_text(row.lets_random) + (" !" if row.outside_expected else ""),
        rate_text(row.keeps_queries) + (" !" if row.short_of_target else ""),
    )


CUTOFF_HEADERS = (
    "model",
    "level",
    "cut-off",
    "aim (expected)",
    "keeps relevant",
    "lets random",
    "queries kept whole",
)


def cutoff_notes(model: CutoffModel) -> list[str]:
    """A model's lines under the table: why it has no cut-off, or its conformal guarantee and
    notes."""
    if not model.meaningful:
        return [f"{model.model}: no global cut-off: {model.reason}"]
    lines = [f"{model.model} conformal: {model.guarantee}"] if model.guarantee else []
    return lines + [f"{model.model}: {note}" for note in model.notes]


def cutoff_tables(sections: Iterable[CutoffSection]) -> list[TextTable]:
    """A table per dataset: each level's score cut-off, its aim and what it did on the held-out
    half, with 95% intervals clustered by query; then each model's conformal guarantee, and
    for a model whose scores are not comparable across queries, why it has no cut-off."""
    tables = []
    for section in sections:
        rows = tuple(cutoff_cells(r, m) for m in section.models for r in m.rows)
        after = [CUTOFF_LEGEND] if rows else []
        for model in section.models:
            after.extend(cutoff_notes(model))
        tables.append(
            TextTable(
                f"cut-offs on {section.dataset!r} (calibrated on half the queries, shown on the "
                "other)",
                CUTOFF_HEADERS if rows else (),
                rows,
                tuple(after),
            )
        )
    return tables


def text_lines(tables: Iterable[TextTable], tablefmt: str = "simple") -> list[str]:
    """Each table as text: its title, the table (tabulate's ``tablefmt``), the lines after it,
    then a blank line."""
    lines: list[str] = []
    for table in tables:
        lines.append(inert(table.title))
        if table.rows:
            # each cell one line, its controls shown (a name from the user's data), before
            # tabulate measures the widths
            text = tabulate(
                [[inert(str(c), keep="") for c in r] for r in table.rows],
                headers=[inert(str(h), keep="") for h in table.headers],
                tablefmt=tablefmt,
                disable_numparse=True,
            )
            lines.extend(text.splitlines())
        lines.extend(inert(line) for line in table.after)
        lines.append("")
    return lines


def render_stress(
    points: Mapping[str, Sequence[Mapping[str, Any]]] | Sequence[StressSection],
    *,
    tablefmt: str = "simple",
) -> list[str]:
    """The stress section's lines (none when no stress test ran), from the summary's sections
    or the JSON report's stress rows (``embedbench stress``); ``tablefmt="github"`` for
    Markdown."""
    sections = stress_sections(points) if isinstance(points, Mapping) else points
    return text_lines(stress_tables(sections), tablefmt)


def render_cutoffs(
    rows: Mapping[str, Sequence[Mapping[str, Any]]] | Sequence[CutoffSection],
) -> list[str]:
    """The cut-off section's lines, from the summary's sections or :func:`cutoff_rows`."""
    sections = cutoff_sections(rows) if isinstance(rows, Mapping) else rows
    return text_lines(cutoff_tables(sections))

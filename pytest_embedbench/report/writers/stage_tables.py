"""The two stages of reranked tests as text tables (the terminal's, the Markdown's and the job
summary's) and as CSV rows: :func:`stage_tables` formats the summary's
:class:`~..summary.stages.StageSection`\\ s cell by cell, so every writer shows the same
figures: per reranker the ceiling, the share realised, the latency it adds, its tokens and
cost per 1,000 queries and the per-query counts; per metric each stage with its interval and
the lift with its paired interval, p and Holm-adjusted p; the queries it hurt most with the
relevant documents it pushed out of the top and those it pushed down (ranks before and after);
and each depth sweep. Nothing here computes a
figure: the summary did."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ...records.figures import RERANK_FIGURES, figure
from ...records.querydiff import FAILURE_QUERIES, QueryDiff, pushed_down_text, query_label
from ..summary.stages import StageRow, StageSection
from ..summary.values import Delta, Value
from .index_tables import cell_text, metric_label
from .stress import TextTable, text_lines
from .text import delta_text

__all__ = [
    "STAGE_LEGEND",
    "figure_text",
    "p_text",
    "pushed_text",
    "render_stages",
    "stage_columns",
    "stage_csv_rows",
    "stage_query_columns",
    "stage_query_rows",
    "stage_tables",
]

#: the lines under the stages tables
STAGE_LEGEND = (
    "lift: reranked minus first stage on the same queries, 95% paired bootstrap interval; p: "
    "the paired bootstrap's, p Holm: adjusted across the rerankers of the same first stage; "
    "ceiling: the first stage's recall at the depth (what the reranker was handed, a bound it "
    "cannot pass); realised: the reranked recall at the cut-off over the ceiling; +p50/+p95: "
    "the reranking's own time per query, added to the first stage's"
)


def figure_text(row: StageRow, key: str) -> str:
    """One of the reranking's figures in the registry's format (``-`` when not measured)."""
    value = row.figures.get(key)
    found = figure(key)
    assert found is not None
    return found.text(value.value if value is not None else None)


def p_text(value: float | None) -> str:
    """A p-value: four decimals, ``<0.0001`` below them, ``-`` when there is none."""
    if value is None:
        return "-"
    return "<0.0001" if value < 0.0001 else f"{value:.4f}"


def _ceiling(row: StageRow) -> str:
    text = cell_text(row.figures.get("rerank.ceiling"))
    return "-" if text == "-" else f"R@{row.depth} {text}"


def _counts(diff: QueryDiff | None) -> tuple[str, str, str]:
    if diff is None:
        return "-", "-", "-"
    return str(diff.improved), str(diff.degraded), str(diff.unchanged)


def pushed_text(ids: Sequence[str] | None) -> str:
    """The relevant documents a reranker pushed out of the top (``none``; ``-``: unknown)."""
    if ids is None:
        return "-"
    return ", ".join(ids) if ids else "none"


def stage_tables(sections: Sequence[StageSection]) -> list[TextTable]:
    """Per dataset: the rerankers (ceiling, realised, cost, per-query counts), the metrics of
    both stages with the lifts, the queries each reranker hurt most, then the depth sweeps."""
    tables = []
    for section in sections:
        name = section.dataset
        tables.append(
            TextTable(
                f"two stages on {name!r}: what each reranker was handed and what it cost",
                (
                    "model",
                    "reranker",
                    "depth",
                    "ceiling",
                    "realised",
                    "+p50 ms",
                    "+p95 ms",
                    "tokens/1k q",
                    "$/1k q",
                    "improved",
                    "degraded",
                    "unchanged",
                ),
                tuple(
                    (
                        r.model,
                        r.reranker,
                        str(r.depth),
                        _ceiling(r),
                        f"{figure_text(r, 'rerank.realised')} at R@{r.realised_at}",
                        figure_text(r, "rerank.p50_ms"),
                        figure_text(r, "rerank.p95_ms"),
                        figure_text(r, "rerank.tokens_per_1k_queries"),
                        figure_text(r, "rerank.cost_per_1k_queries"),
                        *_counts(r.diff),
                    )
                    for r in section.rows
                ),
            )
        )
        tables.append(
            TextTable(
                f"two stages on {name!r}: each stage and the lift",
                ("model", "reranker", "metric", "first stage", "reranked", "lift", "p", "p Holm"),
                tuple(
                    (
                        r.model,
                        r.reranker,
                        metric_label(m),
                        cell_text(r.stage1.get(m)),
                        cell_text(r.reranked.get(m)),
                        delta_text(r.lift.get(m)),
                        p_text(_lift(r, m).p_value),
                        p_text(_lift(r, m).p_holm),
                    )
                    for r in section.rows
                    for m in section.metrics
                ),
                (STAGE_LEGEND,),
            )
        )
        for r in section.rows:
            diff = r.diff
            if diff is None or not diff.worst:
                continue
            tables.append(
                TextTable(
                    f"queries {r.reranker} hurt most over {r.model} on {name!r} "
                    f"({diff.metric}; {diff.degraded} degraded of {diff.queries})",
                    (
                        "query",
                        "first stage → reranked",
                        "pushed out of the top",
                        "brought in",
                        "pushed down (rank → rank)",
                    ),
                    tuple(
                        (
                            query_label(c.query_id, c.text),
                            f"{c.before:.3f} → {c.after:.3f} ({c.change:+.3f})",
                            pushed_text(c.lost),
                            pushed_text(c.gained),
                            pushed_down_text(c.pushed_down),
                        )
                        for c in diff.worst[:FAILURE_QUERIES]
                    ),
                    (
                        f"pushed out: relevant documents in the first stage's top {diff.depth} "
                        "that the reranked top no longer holds",
                        "pushed down: relevant documents of the first stage's top "
                        f"{min(r.depth, diff.depth)} whose rank the reranker made worse (first "
                        f"stage → reranked; out: not in the reranked top {diff.depth}), highest "
                        "grade then farthest fall first; a grade other than 1 is shown",
                    ),
                )
            )
        for sweep in section.sweeps:
            tables.append(
                TextTable(
                    f"depth sweep of {sweep.spec} over {sweep.model} on {name!r}: "
                    f"{metric_label(sweep.metric)} against the p95 latency it adds",
                    ("depth", metric_label(sweep.metric), "+p95 ms"),
                    tuple(
                        (
                            "first stage" if p.depth == 0 else str(p.depth),
                            cell_text(p.value),
                            f"{p.added_p95_ms:.2f}",
                        )
                        for p in sweep.points
                    ),
                )
            )
    return tables


def _lift(row: StageRow, metric: str) -> Delta:
    return row.lift.get(metric) or Delta(None, None, None)


def render_stages(sections: Sequence[StageSection]) -> list[str]:
    """The stages section's lines for the terminal."""
    return text_lines(stage_tables(sections))


def stage_columns() -> list[str]:
    """The columns of ``stages.csv``."""
    return [
        "test",
        "dataset",
        "model",
        "reranker",
        "spec",
        "depth",
        "metric",
        "stage1",
        "stage1_low",
        "stage1_high",
        "reranked",
        "reranked_low",
        "reranked_high",
        "lift",
        "lift_low",
        "lift_high",
        "p_value",
        "p_holm",
        "verdict",
        *(f.key.removeprefix("rerank.") for f in RERANK_FIGURES),
        "improved",
        "degraded",
        "unchanged",
        "status",
    ]


def _parts(value: Value | None) -> tuple[Any, Any, Any]:
    return (None, None, None) if value is None else (value.value, value.low, value.high)


def stage_csv_rows(sections: Sequence[StageSection]) -> list[dict[str, Any]]:
    """``stages.csv``: one row per reranked test and metric, unrounded."""
    rows = []
    for section in sections:
        for r in section.rows:
            shared: dict[str, Any] = {
                "test": r.nodeid,
                "dataset": section.dataset,
                "model": r.model,
                "reranker": r.reranker,
                "spec": r.spec,
                "depth": r.depth,
            }
            tail: dict[str, Any] = {
                f.key.removeprefix("rerank."): (r.figures.get(f.key) or Value(None)).value
                for f in RERANK_FIGURES
            }
            tail.update(
                improved=r.diff.improved if r.diff else None,
                degraded=r.diff.degraded if r.diff else None,
                unchanged=r.diff.unchanged if r.diff else None,
                status=r.status,
            )
            for metric in section.metrics:
                lift = _lift(r, metric)
                s1, s1_low, s1_high = _parts(r.stage1.get(metric))
                rr, rr_low, rr_high = _parts(r.reranked.get(metric))
                rows.append(
                    {
                        **shared,
                        "metric": metric,
                        "stage1": s1,
                        "stage1_low": s1_low,
                        "stage1_high": s1_high,
                        "reranked": rr,
                        "reranked_low": rr_low,
                        "reranked_high": rr_high,
                        "lift": lift.difference,
                        "lift_low": lift.low,
                        "lift_high": lift.high,
                        "p_value": lift.p_value,
                        "p_holm": lift.p_holm,
                        "verdict": lift.verdict or None,
                        **tail,
                    }
                )
    return rows


def stage_query_columns() -> list[str]:
    """The columns of ``stage_queries.csv``."""
    return [
        "test",
        "dataset",
        "model",
        "reranker",
        "metric",
        "query",
        "text",
        "first_stage",
        "reranked",
        "change",
        "pushed_out",
        "brought_in",
        "pushed_down",
    ]


def stage_query_rows(sections: Sequence[StageSection]) -> list[dict[str, Any]]:
    """``stage_queries.csv``: the queries each reranker hurt most (all the diff kept), with the
    relevant documents it pushed out of the top and brought in (ids joined by spaces) and
    those it pushed down with their ranks (``d3 1→7, d5 2→out``, as every writer shows them)."""
    rows = []
    for section in sections:
        for r in section.rows:
            for c in r.diff.worst if r.diff else ():
                rows.append(
                    {
                        "test": r.nodeid,
                        "dataset": section.dataset,
                        "model": r.model,
                        "reranker": r.reranker,
                        "metric": r.diff.metric if r.diff else None,
                        "query": c.query_id,
                        "text": c.text,
                        "first_stage": c.before,
                        "reranked": c.after,
                        "change": c.change,
                        "pushed_out": None if c.lost is None else " ".join(c.lost),
                        "brought_in": None if c.gained is None else " ".join(c.gained),
                        "pushed_down": (
                            None if c.pushed_down is None else pushed_down_text(c.pushed_down)
                        ),
                    }
                )
    return rows

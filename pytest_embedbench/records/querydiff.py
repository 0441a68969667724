"""Per-query diffs: which queries a test improved, which it degraded, and what they lost.

A test's per-query scores on one metric (the gate's, else nDCG@10) are paired with those of
its baseline entry or of the run's reference model: each query whose score moved by more than
:data:`CHANGE_EPSILON` counts as improved or degraded, the rest as unchanged (PyTerrier's
Experiment reports the same counts against a baseline). The most degraded queries are kept with
the relevant documents they lost and gained from the top of the ranking (the retrieved lists a
record keeps, :data:`~pytest_embedbench.result.RETRIEVED_KEPT` deep) and, on a chunked dataset,
the text of the chunks that won this run's top documents. Between a reranker and its first
stage (``candidates``: the depth the reranker reordered) each also keeps the relevant documents
the reranker pushed down, with their ranks before and after (:class:`RankDrop`): a reranker
at depth 10 only reorders the first stage's top 10, so it loses and gains nothing from the top
10 and only these say what it did wrong.

A baseline entry keeps per-query scores, not retrieved lists: against it, what a query lost is
not known, and the diff says so (``documents_known`` False, ``note``) and lists the relevant
documents missing from this run's list instead of inventing a loss.

:func:`query_diff` is the one computation: the baseline gate calls it (its failure message
shows :func:`failure_lines`, the top :data:`FAILURE_QUERIES`) and keeps the result in the
test's record; the summary reads that, and computes the reference model's diffs itself. Every
writer formats the :class:`QueryDiff` records. Usage::

    diff = query_diff(record.result, entry, metric="ndcg@10", against="baseline")
    diff.improved, diff.degraded, diff.unchanged, diff.worst[0].lost
    stages = query_diff(reranked, stage1, metric="ndcg@10", against="bm25 alone", candidates=10)
    stages.worst[0].pushed_down[0]      # RankDrop("d3", grade=1, before=1, after=None)
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .serial import OMIT_NONE

__all__ = [
    "CHANGE_EPSILON",
    "EXCERPT_CHARS",
    "FAILURE_QUERIES",
    "KEPT_QUERIES",
    "PUSHED_KEPT",
    "ChunkExcerpt",
    "QueryChange",
    "QueryDiff",
    "RankDrop",
    "counts_text",
    "excerpt",
    "failure_lines",
    "pushed_down_text",
    "query_diff",
    "query_label",
]

#: a per-query change of at most this much is "unchanged": float noise, and the six decimals a
#: baseline keeps, never count as a change
CHANGE_EPSILON = 0.001
#: the most degraded queries a diff keeps (the HTML and Markdown show them)
KEPT_QUERIES = 10
#: the most degraded queries a failing gate's message lists
FAILURE_QUERIES = 5
#: the characters of a winning chunk's text a report shows
EXCERPT_CHARS = 160
#: the relevant documents a degraded query keeps as pushed down (the highest grades, then the
#: farthest falls)
PUSHED_KEPT = 5
#: winning chunks kept per degraded query: this run's first document's, then relevant ones'
_CHUNKS_PER_QUERY = 3


@dataclass(frozen=True)
class ChunkExcerpt:
    """The chunk that won one retrieved document (its best-scoring chunk), with the start of
    its text, its character offsets in the document and its PDF page when it has one."""

    doc_id: str
    #: the document's rank in this run's list (1 = first)
    rank: int
    relevant: bool = False
    chunk_id: str | None = None
    start: int | None = None
    end: int | None = None
    page: str | None = None
    text: str = ""

    @property
    def where(self) -> str:
        """``[120:240] p. 3``: the offsets, and the page when known."""
        at = f"[{self.start}:{self.end}]" if self.start is not None else ""
        return f"{at} p. {self.page}" if self.page is not None else at


@dataclass(frozen=True)
class RankDrop:
    """A relevant document a reranker pushed down: its grade, its rank in the first stage's
    list (``before``, 1 = first) and in the reranked one (``after``; None: beyond the reranked
    list the record keeps, shown as ``out``)."""

    doc_id: str
    grade: float
    before: int
    after: int | None = None

    @property
    def text(self) -> str:
        """``d3 1→7``, ``d5 2→out``; the grade after it when it is not 1: ``d3 1→7 (grade 2)``."""
        line = f"{self.doc_id} {self.before}→{'out' if self.after is None else self.after}"
        return line if self.grade == 1 else f"{line} (grade {self.grade:g})"


@dataclass(frozen=True)
class QueryChange:
    """One query's score before (the baseline's or the reference model's) and now."""

    query_id: str
    before: float
    after: float
    change: float
    text: str | None = None
    #: relevant documents in the before list and not in this run's (None: not known)
    lost: tuple[str, ...] | None = None
    #: relevant documents in this run's list and not in the before list (None: not known)
    gained: tuple[str, ...] | None = None
    #: relevant documents missing from this run's list
    missing: tuple[str, ...] = ()
    #: this run's first document, and whether it is relevant
    top: str | None = None
    top_relevant: bool = False
    #: on a chunked dataset, the chunks that won this run's first and relevant documents
    chunks: tuple[ChunkExcerpt, ...] = ()
    #: between the stages, the relevant documents among the first stage's candidates whose rank
    #: the reranker made worse: highest grade first, then the farthest fall (at most
    #: :data:`PUSHED_KEPT`; None: not a diff between stages, and absent from the JSON)
    pushed_down: tuple[RankDrop, ...] | None = field(default=None, metadata=OMIT_NONE)


@dataclass(frozen=True)
class QueryDiff:
    """One test's queries against its baseline entry (``against == "baseline"``) or the
    reference model (``against`` its name), on ``metric``."""

    nodeid: str
    dataset: str
    model: str
    against: str
    metric: str
    #: queries scored on both sides
    queries: int
    improved: int
    degraded: int
    unchanged: int
    epsilon: float = CHANGE_EPSILON
    #: how deep the retrieved lists go
    depth: int = 0
    #: whether both sides kept retrieved lists (so lost and gained documents are known)
    documents_known: bool = False
    #: why the documents are not known, when they are not
    note: str = ""
    chunked: bool = False
    #: the most degraded queries, worst first (at most :data:`KEPT_QUERIES`)
    worst: tuple[QueryChange, ...] = ()

    @property
    def against_baseline(self) -> bool:
        return self.against == "baseline"

    @property
    def title(self) -> str:
        """``test_x.py::test[h] against the baseline`` / ``h against bm25``."""
        if self.against_baseline:
            return f"{self.nodeid} against the baseline"
        return f"{self.model} against {self.against}"


def excerpt(text: str, limit: int = EXCERPT_CHARS) -> str:
    """``text`` on one line, cut to ``limit`` characters at a word (an ellipsis marks a cut)."""
    flat = " ".join(str(text).split())
    if len(flat) <= limit:
        return flat
    cut = flat[: limit - 1]
    space = cut.rfind(" ")
    return (cut[:space] if space > limit // 2 else cut).rstrip() + "…"


def query_label(query_id: str, text: str | None, width: int = 50) -> str:
    """``q07 "where is the invoice"``: the id with its text, cut to ``width`` characters."""
    if text is None:
        return query_id
    flat = " ".join(str(text).split())
    if len(flat) > width:
        flat = flat[: width - 3].rstrip() + "..."
    return f"{query_id} {json.dumps(flat, ensure_ascii=False)}"


def _part(data: Any, name: str) -> Any:
    """One part of a side of the diff: a field of a record's typed result (``ResultData``),
    or a key of a baseline entry (JSON read from the baseline file)."""
    if data is None:
        return None
    return data.get(name) if isinstance(data, Mapping) else getattr(data, name, None)


def _scores(data: Any, metric: str) -> dict[str, float]:
    found = (_part(data, "per_query") or {}).get(metric)
    if not isinstance(found, Mapping):
        return {}
    out = {}
    for qid, value in found.items():
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            if math.isfinite(value):
                out[str(qid)] = float(value)
    return out


def _lists(data: Any) -> dict[str, list[str]] | None:
    found = _part(data, "retrieved")
    if not isinstance(found, Mapping):
        return None
    return {
        str(q): [str(d) for d in ids] for q, ids in found.items() if isinstance(ids, (list, tuple))
    }


def query_diff(
    result: Any,
    before: Any,
    *,
    metric: str,
    against: str,
    nodeid: str = "",
    dataset: str = "",
    model: str = "",
    precision: int | None = None,
    query_texts: Mapping[str, str] | None = None,
    keep: int = KEPT_QUERIES,
    candidates: int | None = None,
) -> QueryDiff | None:
    """``result``'s queries (a record's ``ResultData``: ``per_query``, ``retrieved``,
    ``relevant``, ``query_texts``, ``winning_chunks``) against ``before`` (a baseline entry as
    read from its file, or the reference model's ``ResultData``) on ``metric``; None when
    either side lacks its per-query scores.

    ``precision``: round this run's scores to the decimals the baseline keeps (the gate's
    pairs). ``query_texts`` (id -> text) fills in texts the result lacks. ``candidates``: the
    depth of ``before``'s list that ``result`` reranked (a diff between the stages): each
    degraded query then lists the relevant documents among them whose rank fell
    (``pushed_down``, as far as both kept lists go)."""
    now = _scores(result, metric)
    then = _scores(before, metric)
    shared = sorted(set(now) & set(then))
    if not now or not then or not shared:
        return None
    if precision is not None:
        now = {q: round(v, precision) for q, v in now.items()}
    changes = {q: now[q] - then[q] for q in shared}
    improved = sum(1 for c in changes.values() if c > CHANGE_EPSILON)
    degraded = sum(1 for c in changes.values() if c < -CHANGE_EPSILON)
    retrieved = _lists(result) or {}
    earlier = _lists(before)
    relevant = _part(result, "relevant") or {}
    texts = {**(query_texts or {}), **(_part(result, "query_texts") or {})}
    chunks = _part(result, "winning_chunks")
    worst = sorted((c, q) for q, c in changes.items() if c < -CHANGE_EPSILON)[:keep]
    known = earlier is not None
    note = ""
    depth = max((len(ids) for ids in retrieved.values()), default=0)
    if not known:
        whose = "the baseline entry" if against == "baseline" else f"{against}'s result"
        note = (
            f"{whose} keeps no retrieved lists, so the documents each query lost or gained are "
            "not known"
        )
        if depth:
            note += f"; shown instead: its relevant documents missing from this run's top {depth}"
    return QueryDiff(
        nodeid=nodeid,
        dataset=dataset,
        model=model,
        against=against,
        metric=metric,
        queries=len(shared),
        improved=improved,
        degraded=degraded,
        unchanged=len(shared) - improved - degraded,
        depth=depth,
        documents_known=known,
        note=note,
        chunked=isinstance(chunks, Mapping),
        worst=tuple(
            _change(
                q,
                then[q],
                now[q],
                texts.get(q),
                retrieved.get(q) or [],
                None if earlier is None else earlier.get(q) or [],
                relevant.get(q) or {},
                chunks.get(q) if isinstance(chunks, Mapping) else None,
                candidates,
            )
            for _, q in worst
        ),
    )


def _change(
    qid: str,
    before: float,
    after: float,
    text: str | None,
    got: Sequence[str],
    had: Sequence[str] | None,
    relevant: Mapping[str, Any],
    won: Any,
    candidates: int | None = None,
) -> QueryChange:
    wanted = {d for d, grade in relevant.items() if _positive(grade)}
    lost = gained = pushed = None
    if had is not None:
        lost = tuple(d for d in had if d in wanted and d not in got)
        gained = tuple(d for d in got if d in wanted and d not in had)
        if candidates is not None:
            pushed = _pushed_down(had[:candidates], got, relevant)
    return QueryChange(
        query_id=qid,
        before=before,
        after=after,
        change=after - before,
        text=None if text is None else str(text),
        lost=lost,
        gained=gained,
        missing=tuple(sorted(d for d in wanted if d not in got)),
        top=got[0] if got else None,
        top_relevant=bool(got) and got[0] in wanted,
        chunks=_excerpts(won, wanted),
        pushed_down=pushed,
    )


def _pushed_down(
    had: Sequence[str], got: Sequence[str], relevant: Mapping[str, Any]
) -> tuple[RankDrop, ...]:
    """The relevant documents of ``had`` (the candidates, in the first stage's order) ranked
    lower in ``got`` (the reranked list; absent: ``out``), highest grade first, then the
    farthest fall (``out`` falls past the list's end), then the first stage's order."""
    ranks = {doc: rank for rank, doc in enumerate(got, start=1)}
    drops = [
        RankDrop(doc, relevant[doc], before, ranks.get(doc))
        for before, doc in enumerate(had, start=1)
        if _positive(relevant.get(doc)) and ranks.get(doc, math.inf) > before
    ]
    beyond = len(got) + 1
    drops.sort(key=lambda d: (-d.grade, d.before - (d.after or beyond), d.before))
    return tuple(drops[:PUSHED_KEPT])


def _positive(grade: Any) -> bool:
    return isinstance(grade, (int, float)) and not isinstance(grade, bool) and grade > 0


def _excerpts(rows: Any, wanted: set[str]) -> tuple[ChunkExcerpt, ...]:
    """The winning chunks of this run's first document and of its relevant ones."""
    if not isinstance(rows, (list, tuple)):
        return ()
    out = []
    for rank, row in enumerate(rows, start=1):
        doc = str(_part(row, "doc_id"))
        if rank > 1 and doc not in wanted:
            continue
        page, chunk_id = _part(row, "page"), _part(row, "chunk_id")
        start, end = _part(row, "start"), _part(row, "end")
        out.append(
            ChunkExcerpt(
                doc_id=doc,
                rank=rank,
                relevant=doc in wanted,
                chunk_id=None if chunk_id is None else str(chunk_id),
                start=start if isinstance(start, int) else None,
                end=end if isinstance(end, int) else None,
                page=None if page is None else str(page),
                text=excerpt(str(_part(row, "text") or "")),
            )
        )
        if len(out) == _CHUNKS_PER_QUERY:
            break
    return tuple(out)


# -- text ------------------------------------------------------------------------------------


def counts_text(diff: QueryDiff) -> str:
    """``1 improved, 3 degraded, 56 unchanged of 60 (ndcg@10 changed by more than 0.001)``."""
    return (
        f"{diff.improved} improved, {diff.degraded} degraded, {diff.unchanged} unchanged of "
        f"{diff.queries} ({diff.metric} changed by more than {diff.epsilon:g})"
    )


def _ids(ids: Sequence[str]) -> str:
    return ", ".join(ids) if ids else "none"


def pushed_down_text(drops: Sequence[RankDrop] | None) -> str:
    """The relevant documents a reranker pushed down, each with its ranks before and after
    (``d3 1→7, d5 2→out``; ``none``; ``-`` when not known): what every writer shows."""
    if drops is None:
        return "-"
    return ", ".join(d.text for d in drops) if drops else "none"


def change_text(change: QueryChange, diff: QueryDiff) -> str:
    """One degraded query on one line: its scores, and what it lost and gained (or which
    relevant documents are missing now, when the before list is not known), and between the
    stages which relevant documents the reranker pushed down."""
    line = (
        f"{query_label(change.query_id, change.text)}: {change.before:.3f} -> "
        f"{change.after:.3f} ({change.change:+.3f})"
    )
    if change.lost is not None and change.gained is not None:
        line += f"; lost {_ids(change.lost)}; gained {_ids(change.gained)}"
    elif change.missing and diff.depth:
        line += f"; relevant not in the top {diff.depth} now: {_ids(change.missing)}"
    if change.pushed_down is not None:
        line += f"; pushed down {pushed_down_text(change.pushed_down)}"
    if change.top is not None and not change.top_relevant:
        line += f"; first now: {change.top}"
        top = next((c for c in change.chunks if c.rank == 1), None)
        if top is not None and top.text:
            line += f" {top.where} {json.dumps(excerpt(top.text, 60), ensure_ascii=False)}"
    return line


def failure_lines(diff: QueryDiff, count: int = FAILURE_QUERIES) -> list[str]:
    """The lines a failing gate adds under its figures: the counts, the ``count`` most
    degraded queries, and why lost and gained documents are not shown when they are not."""
    lines = [f"per query: {counts_text(diff)}"]
    if diff.worst:
        lines.append(f"most degraded (of {diff.degraded}):")
        lines.extend(f"  {change_text(c, diff)}" for c in diff.worst[:count])
    if diff.worst and diff.note:
        lines.append(f"({diff.note})")
    return lines

"""The per-query diffs of a dataset: for each test against its baseline entry, and each model
against the reference model, how many queries improved, degraded or stayed, and the most
degraded ones with what they lost and gained and the chunks that won this run's documents;
between the stages (a reranker against its first stage), also the relevant documents it pushed
down with their ranks before and after. Every count, change and document list is the summary's
(:mod:`..querydiff`)."""

from __future__ import annotations

from collections.abc import Sequence

from ....records.querydiff import ChunkExcerpt, QueryChange, QueryDiff, RankDrop
from .page import _anchor, _Page


def _diffs(page: _Page, diffs: Sequence[QueryDiff]) -> None:
    """The per-query changes of one dataset (nothing when there is no diff)."""
    if not diffs:
        return
    epsilon = diffs[0].epsilon
    page.add(
        '<h3>Per-query changes</h3>\n<p class="muted">Each test against its baseline entry, and '
        "each model against the reference model: a query whose score moved by more than "
        f"{epsilon:g} counts as improved or degraded, the rest as unchanged. The most degraded "
        "queries follow, with the relevant documents they lost from the top of the ranking and "
        "those they gained.</p>\n"
    )
    for diff in diffs:
        _diff(page, diff)


def _diff(page: _Page, diff: QueryDiff) -> None:
    before = "baseline" if diff.against_baseline else diff.against
    page.add(
        f'<div class="qdiff" id="diff-{_anchor(diff.title)}"><h4>{page.esc(diff.title)} '
        f'<span class="muted">({page.esc(diff.metric)})</span></h4>\n'
        f'<p class="qcounts"><span class="v-better">{diff.improved} improved</span> &middot; '
        f'<span class="v-worse">{diff.degraded} degraded</span> &middot; '
        f"<span>{diff.unchanged} unchanged</span> "
        f'<span class="muted">of {diff.queries} queries (a change of more than '
        f"{diff.epsilon:g} in {page.esc(diff.metric)})</span></p>\n"
    )
    if diff.worst:
        if diff.note:
            page.add(f'<p class="muted">{page.esc(diff.note[0].upper() + diff.note[1:])}.</p>\n')
        known = diff.documents_known
        pushed = any(c.pushed_down is not None for c in diff.worst)
        page.add(
            '<div class="wide"><table class="pq diff"><tr>'
            f'<th class="t score">{page.esc(before)} &rarr; now</th>'
            + (
                '<th class="t">relevant lost</th><th class="t">relevant gained</th>'
                if known
                else f'<th class="t" colspan="2">relevant not in the top {diff.depth} now</th>'
            )
            + (
                '<th class="t" title="relevant documents whose rank the reranker made worse: '
                f'first stage &rarr; reranked (out: not in the top {diff.depth})">'
                "relevant pushed down</th>"
                if pushed
                else ""
            )
            + '<th class="t wide-col">first now'
            + (" (and the chunks that won)" if diff.chunked else "")
            + "</th></tr>\n"
        )
        for change in diff.worst:
            _change(page, change, known, pushed)
        page.add("</table></div>\n")
    page.add("</div>\n")


def _ids(page: _Page, ids: Sequence[str] | None) -> str:
    if not ids:
        return '<span class="muted">none</span>'
    return ", ".join(f"<code>{page.esc(d)}</code>" for d in ids)


def _drops(page: _Page, drops: tuple[RankDrop, ...] | None) -> str:
    """``d3 1→7``: each pushed-down document with its ranks (and its grade when not 1)."""
    if not drops:
        return '<span class="muted">none</span>'
    return ", ".join(
        f'<span class="drop"><code>{page.esc(d.doc_id)}</code>&nbsp;{d.before}&rarr;'
        f"{'out' if d.after is None else d.after}"
        + ("" if d.grade == 1 else f' <span class="muted">(grade {d.grade:g})</span>')
        + "</span>"
        for d in drops
    )


def _change(page: _Page, change: QueryChange, known: bool, pushed: bool = False) -> None:
    text = f" {page.esc(change.text)}" if change.text else ""
    page.add(
        f'<tr class="qtext"><td class="t" colspan="{5 if pushed else 4}">'
        f"<code>{page.esc(change.query_id)}</code>{text}</td></tr>\n"
    )
    documents = (
        f'<td class="t lost">{_ids(page, change.lost)}</td>'
        f'<td class="t gained">{_ids(page, change.gained)}</td>'
        if known
        else f'<td class="t lost" colspan="2">{_ids(page, change.missing)}</td>'
    )
    if pushed:
        documents += f'<td class="t pushed">{_drops(page, change.pushed_down)}</td>'
    first = "-"
    if change.chunks and change.chunks[0].rank == 1:
        first = ""  # the first document is the first winning chunk's
    elif change.top is not None:
        mark = ' class="rel"' if change.top_relevant else ""
        first = f"<code{mark}>{page.esc(change.top)}</code>"
        if change.top_relevant:
            first += ' <span class="muted">(relevant)</span>'
    chunks = "".join(_chunk(page, c) for c in change.chunks)
    page.add(
        f'<tr><td class="t score">{change.before:.3f} &rarr; {change.after:.3f} '
        f'<span class="v-worse">{change.change:+.3f}</span></td>{documents}'
        f'<td class="t wide-col">{first}{chunks}</td></tr>\n'
    )


def _chunk(page: _Page, chunk: ChunkExcerpt) -> str:
    """One winning chunk: the document, its rank, the chunk's offsets (and page) and text."""
    mark = ' class="rel"' if chunk.relevant else ""
    where = f" {page.esc(chunk.where)}" if chunk.where else ""
    relevant = " relevant" if chunk.relevant else ""
    text = f" &ldquo;{page.esc(chunk.text)}&rdquo;" if chunk.text else ""
    return (
        f'<div class="chunk"><code{mark}>{page.esc(chunk.doc_id)}</code> '
        f'<span class="muted">#{chunk.rank}{relevant}{where}</span>{text}</div>'
    )

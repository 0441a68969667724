"""The per-query drill-down: each model's queries worst first, retrieved against relevant."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ....evaluation.record import TestRecord
from ....records.resultdata import ChunkHit, ResultData
from ...summary import Summary
from ...summary.columns import metric_names
from .page import _f, _num, _Page


def _queries(page: _Page, summary: Summary, dataset: str) -> None:
    """Per test and model, its queries worst first (by nDCG@10 or the first metric), with
    what was retrieved against what was relevant, inside ``<details>``."""
    records = sorted(
        (
            r
            for r in summary.records
            # a stress point's queries are not the dataset's: they are in the stress section
            if r.dataset == dataset and r.result and not r.workload
        ),
        key=lambda r: r.nodeid,
    )
    # one model's queries once, even when several tests ran it: the test with most metrics
    by_model: dict[str, TestRecord] = {}
    for record in records:
        size = len(_result(record).per_query or {})
        if record.model not in by_model or size > len(
            _result(by_model[record.model]).per_query or {}
        ):
            by_model[record.model] = record
    shown = [by_model[m] for m in sorted(by_model)]
    if not shown:
        return
    page.add("<h3>Per-query results</h3>\n")
    for record in shown:
        _query_table(page, record)


def _result(record: TestRecord) -> ResultData:
    return record.result or ResultData()


def _query_table(page: _Page, record: TestRecord) -> None:
    result = _result(record)
    per_query = result.per_query or {}
    names = [n for n in metric_names([result]) if n in per_query]
    if not names:
        return
    main = "ndcg@10" if "ndcg@10" in names else names[0]
    extra = [n for n in names if n.split("@")[0] in ("recall", "mrr") and n != main][:3]
    scores = per_query[main]
    texts = result.query_texts or {}
    retrieved = result.retrieved or {}
    relevant = result.relevant or {}
    chunks = result.winning_chunks or {}
    by_id = result.latency.by_query(list(texts))
    order = sorted(scores, key=lambda q: (_num(scores[q], 0.0), q))
    columns = 4 + len(extra)
    page.add(
        f"<details><summary>{page.esc(record.model)}: {len(order)} queries, worst "
        f'{page.esc(main)} first <span class="muted">({page.esc(record.nodeid)})'
        '</span></summary>\n<div class="wide"><table class="pq"><tr>'
        f"<th>{page.esc(main)}</th>"
        + "".join(f"<th>{page.esc(n)}</th>" for n in extra)
        + '<th>ms</th><th class="t wide-col">retrieved, in rank order (relevant in green, with '
        'grade)</th><th class="t">relevant not retrieved</th></tr>\n'
    )
    for qid in order:
        wanted = relevant.get(qid) or {}
        got = retrieved.get(qid) or ()
        # a chunked dataset: each retrieved document with the chunk that won it
        won = {hit.doc_id: hit for hit in chunks.get(qid) or ()}
        items = _retrieved_items(page, got, wanted, won)
        missing = ", ".join(page.esc(d) for d in sorted(wanted) if d not in got)
        text = texts.get(qid)
        first = won.get(got[0]) if got else None
        chunk_html = ""
        if first is not None and first.text:
            chunk_html = (
                f'<div class="chunk"><span class="muted">first: <code>{page.esc(got[0])}'
                f"</code> {page.esc(_where(first))}</span> &ldquo;{page.esc(first.text)}"
                "&rdquo;</div>"
            )
        # the query on a row of its own, the width of the table; its figures under it
        page.add(
            f'<tr class="qtext"><td class="t" colspan="{columns}"><code>{page.esc(qid)}</code>'
            + (f" {page.esc(text)}" if text else "")
            + f"{chunk_html}</td></tr>\n"
            + f"<tr><td>{_f(scores.get(qid))}</td>"
            + "".join(f"<td>{_f((per_query.get(n) or {}).get(qid))}</td>" for n in extra)
            + f"<td>{_f(by_id.get(qid), '{:.1f}')}</td>"
            + f'<td class="t wide-col"><ol class="ids">{items}</ol></td>'
            + f'<td class="t miss">{missing}</td></tr>\n'
        )
    page.add("</table></div></details>\n")


def _retrieved_items(
    page: _Page,
    got: Sequence[str],
    wanted: Mapping[str, Any],
    won: Mapping[str, ChunkHit],
) -> str:
    """One query's retrieved ids as list items: relevant ones green with their grade, each
    with the chunk that won it on a chunked dataset."""
    return "".join(
        (
            f'<li class="hit">{page.esc(d)} ({page.esc(wanted[d])})'
            if d in wanted
            else f"<li>{page.esc(d)}"
        )
        + (_won_html(page, won[d]) if d in won else "")
        + "</li>"
        for d in got
    )


def _where(hit: ChunkHit) -> str:
    """A winning chunk's character span, and its PDF page when it has one."""
    where = f"[{hit.start}:{hit.end}]"
    if hit.page is not None:
        where += f" p. {hit.page}"
    return where


def _won_html(page: _Page, hit: ChunkHit) -> str:
    """The winning chunk of one retrieved document: its id and character span (and PDF
    page); its text's start as the tooltip."""
    tip = f' title="{page.esc(hit.text)}"' if hit.text else ""
    return f' <span class="iv"{tip}>{page.esc(hit.chunk_id)} {page.esc(_where(hit))}</span>'

"""What CI servers read, formatted from the run's :class:`~.summary.Summary`: the GitHub Actions
job summary, a pull-request comment, and the JUnit XML properties of each benchmark test.

Both Markdown texts walk one list of sections (:func:`sections`): per dataset its model table
(headline metrics with their intervals, p95 latency, the differences to the reference model and
to the baseline, the status, the recommended model), the baseline gate's verdicts, the per-query
changes against the baseline or the reference when the summary has them, then, folded in a
``<details>`` block, the stress and cut-off tables and the notes; the files the run wrote close
it. :func:`fit` keeps whole sections in that order of importance until a size limit (GitHub
takes 65,536 characters in a comment and 1 MiB per step summary) and names every section it
left out. Every cell is escaped (:func:`cell`: no table, link, HTML, math or @-mention can come
out of a model's name or a failure text) and every secret redacted
(:mod:`~pytest_embedbench.redaction`). Nothing is computed here: each figure, mark and verdict
is the summary's.

:func:`junit_properties` lists a test record's figures as ``(name, value)`` pairs for
``item.user_properties`` (pytest writes them as ``<property>`` elements with ``--junitxml``):
``embedbench.ndcg@10``, ``embedbench.ndcg@10.low``, ``embedbench.ndcg@10.high`` for every
metric, the latency percentiles, and ``embedbench.gate``. Usage::

    summary = Summary.from_json(json.loads(Path("report.json").read_text()))
    text = render_github_summary(summary, artifacts=[("HTML report", "out/report.html")])
    comment = render_pr_comment(summary, run_url=github_run_url(os.environ))
    assert len(comment) <= GITHUB_COMMENT_LIMIT
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ...core.redaction import _secret_env_values, redact
from ...core.text import inert
from ...evaluation.record import TestRecord, as_record
from ...records.figures import (
    INDEX_FIGURES,
    JUDGED,
    LANGUAGE_METRICS,
    LOAD_FIGURES,
    RERANK_FIGURES,
)
from ...records.querydiff import FAILURE_QUERIES, QueryDiff, pushed_down_text
from ...records.resultdata import ResultData
from ..summary import DatasetSummary, Gate, ModelSummary, Summary
from ..summary.columns import resolve_column
from ..summary.stages import stage_diff, stage_sections
from ..summary.values import Value, finite
from .index_tables import index_tables, load_tables, query_load_tables
from .language_tables import language_tables
from .stage_tables import stage_tables
from .stress import TextTable, cutoff_tables, stress_tables
from .text import delta_text

__all__ = [
    "GITHUB_COMMENT_LIMIT",
    "GITHUB_SUMMARY_LIMIT",
    "MARKER",
    "Section",
    "cell",
    "fit",
    "github_run_url",
    "junit_properties",
    "junit_suite_properties",
    "render_github_summary",
    "render_pr_comment",
    "sections",
]

#: the largest PR comment written, in characters: GitHub rejects a comment body over 65,536
GITHUB_COMMENT_LIMIT = 65_000
#: the largest job summary appended, in UTF-8 bytes: GitHub takes 1 MiB per step's summary
GITHUB_SUMMARY_LIMIT = 1_000_000
#: the first line of a PR comment, so a workflow step can find (and replace) its comment
MARKER = "<!-- pytest-embedbench -->"

#: the model table's columns, where the dataset has them (a CI page stays narrow)
CI_COLUMNS = ("ndcg@10", "recall@10", "p95_ms")
#: the verdict words of a gate, with a sign a reader sees at a glance
_SIGNS = {
    "passed": "✅",
    "regressed": "❌",
    "stale": "❌",
    "inconclusive": "⚠️",
    "missing": "➖",
}
#: the statuses of a test row, signed the same way
_STATUS_SIGNS = {"passed": "✅", "failed": "❌", "error": "❌", "skipped": "➖"}

# every character that means something to GitHub's Markdown inside a line: emphasis, code,
# links and images, tables, strikethrough, math; a backslash makes each a plain character
_ESCAPE = re.compile(r"([\\`*_\[\]|~$])")


#: an @ that GitHub would read as a mention: not after a word character, before a name
_MENTION = re.compile(r"(?<!\w)@(?=\w)")


def cell(value: Any, secrets: list[str] | None = None) -> str:
    """``value`` as one line of Markdown text that renders as itself: secrets redacted first
    (a secret is found before escaping changes it), whitespace folded, Markdown punctuation
    backslash-escaped, HTML neutralised and ``@`` followed by a zero-width space (no mention
    of a person, as Dependabot quotes release notes); a control character (ESC, BEL, C1) is
    shown as ``\\xNN`` (:func:`~pytest_embedbench.core.text.inert`), its backslash escaped."""
    text = redact(str(value), secrets)
    text = inert(" ".join(text.split()), keep="")
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    text = _ESCAPE.sub(r"\\\1", text)
    return _MENTION.sub("@\u200b", text)


def _table(headers: Sequence[str], rows: Iterable[Sequence[str]], secrets: list[str]) -> list[str]:
    """A GitHub table: ``headers`` plain text (escaped here), ``rows`` cells already escaped
    (:func:`cell`, with this module's own bold marks)."""
    lines = [
        "| " + " | ".join(cell(h, secrets) for h in headers) + " |",
        "|" + "|".join(" --- " for _ in headers) + "|",
    ]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return lines


@dataclass(frozen=True)
class Section:
    """One part of a CI text: what it is (named in the note when :func:`fit` leaves it out),
    its Markdown lines, and whether it is folded into the ``<details>`` block."""

    name: str
    lines: tuple[str, ...]
    folded: bool = False


def _number(value: Value | None, fmt: str) -> str:
    if value is None or value.value is None:
        return "-"
    text = fmt.format(value.value)
    return f"**{text}**" if value.best else text


def _model_cells(
    model: ModelSummary, dataset: DatasetSummary, keys: Sequence[str], secrets: list[str]
) -> list[str]:
    cells = [cell(model.model, secrets) + (" (reference)" if model.is_reference else "")]
    for key in keys:
        column = resolve_column(key)
        fmt = column.fmt if column is not None else "{:.4f}"
        value = model.figures.get(key)
        text = _number(value, fmt)
        if _is_metric(key) and value and value.low is not None and value.high is not None:
            text += " " + cell(f"[{value.low:.3f}, {value.high:.3f}]")
        cells.append(text)
    if dataset.compared:
        cells.append(cell(delta_text(model.versus)))
    if dataset.with_baseline:
        cells.append(cell(delta_text(model.baseline)))
    sign = _STATUS_SIGNS.get(model.status, "")
    cells.append(f"{sign} {cell(model.status)}".strip())
    return cells


def _dataset_section(dataset: DatasetSummary, priority: str, secrets: list[str]) -> Section:
    keys = [k for k in CI_COLUMNS if k in dataset.metrics or not _is_metric(k)]
    if not any(_is_metric(k) for k in keys):  # a run without nDCG@10 and R@10: its first two
        keys = [*dataset.metrics[:2], *keys]
    keys = [k for k in keys if any(k in m.figures for m in dataset.models)] or keys
    if dataset.holes:  # judged@10 beside the metrics it qualifies
        keys.insert(sum(map(_is_metric, keys)), JUDGED.key)
    headers = ["model"]
    for key in keys:
        column = resolve_column(key)
        header = column.header if column is not None else key
        headers.append(header + (" [95%]" if _is_metric(key) else ""))
    if dataset.compared:
        headers.append(f"Δ nDCG@10 vs {dataset.reference}")
    if dataset.with_baseline:
        headers.append("Δ nDCG@10 vs baseline")
    headers.append("status")
    size = (
        f" · {dataset.queries} queries · {dataset.documents} documents"
        if dataset.queries is not None
        else ""
    )
    lines = [f"### Dataset `{_code(dataset.name, secrets)}`{size}", ""]
    rows = (_model_cells(m, dataset, keys, secrets) for m in dataset.models)
    lines += _table(headers, rows, secrets)
    if dataset.metrics_basis:
        lines += ["", cell(dataset.metrics_basis[0].upper() + dataset.metrics_basis[1:]) + "."]
    rec = dataset.shown_recommendation
    pick = rec.pick(priority) if rec is not None else None
    if pick is not None:
        tied = (
            " (tied with " + ", ".join(cell(m, secrets) for m in pick.tied_with) + ")"
            if pick.tied_with
            else ""
        )
        lines += ["", f"Recommended ({cell(priority)}): **{cell(pick.model, secrets)}**{tied}"]
    errors = [m for m in dataset.models if m.error]
    if errors:
        lines.append("")
        # the first line: a gate's figures and queries have their own sections below
        lines += [f"- {cell(m.model, secrets)}: {cell(_first(m.error), secrets)}" for m in errors]
    return Section(f"dataset {dataset.name!r}", (*lines, ""))


def _first(text: str | None) -> str:
    """The first line of a message that has text."""
    return next((line for line in str(text or "").splitlines() if line.strip()), "")


def _is_metric(key: str) -> bool:
    return "@" in key


def _code(text: str, secrets: list[str]) -> str:
    """Text for a code span: redacted, one line, no backtick to end the span early, control
    characters shown (:func:`~pytest_embedbench.core.text.inert`)."""
    return inert(" ".join(redact(str(text), secrets).replace("`", "'").split()), keep="")


def _gate_section(gates: Sequence[Gate], secrets: list[str]) -> Section | None:
    if not gates:
        return None
    rows = []
    for gate in (g for g in gates if g.status != "missing"):
        shown = next((m for m in gate.metrics if m.metric == "ndcg@10"), None) or next(
            iter(gate.metrics), None
        )
        regressed = ", ".join(m.metric for m in gate.metrics if m.regressed)
        change = "-"
        if shown is not None and shown.baseline is not None and shown.current is not None:
            change = f"{shown.metric} {shown.baseline:.4f} → {shown.current:.4f}"
        rows.append(
            [
                cell(gate.nodeid, secrets),
                f"{_SIGNS.get(gate.status, '')} {cell(gate.status)}".strip(),
                cell(change),
                cell(delta_text(shown.delta) if shown is not None and shown.delta else "-"),
                cell(regressed or "-"),
            ]
        )
    lines = ["### Baseline gate", ""]
    if rows:
        headers = ["test", "verdict", "baseline → current", "Δ [95%]", "regressed"]
        lines += [*_table(headers, rows, secrets), ""]
    missing = [g for g in gates if g.status == "missing"]
    if missing:
        lines.append(
            f"{_SIGNS['missing']} No baseline entry, not gated: {len(missing)} "
            f"test{'s' if len(missing) != 1 else ''} (re-run with "
            "`--embedbench-update-baseline` to record them)"
        )
    # a failure's first line: the lines under it are the per-query changes, shown below
    failures = [(g.nodeid, _first(f)) for g in gates for f in g.failures if f.strip()]
    if failures:
        lines.append("")
        lines += [f"- {cell(n, secrets)}: {cell(f, secrets)}" for n, f in failures]
    return Section("baseline gate", (*lines, ""))


# -- per-query changes (read by attribute: a summary without them has no section) -------------


def _attr(item: Any, *names: str) -> Any:
    """The first of ``names`` that ``item`` has (an attribute or a mapping key), else None."""
    for name in names:
        found = item.get(name) if isinstance(item, Mapping) else getattr(item, name, None)
        if found is not None:
            return found
    return None


def _query_diffs(summary: Summary) -> list[Any]:
    """The per-query diffs of the summary (``Summary.query_diffs``: each gated test against
    its baseline entry, each model against the reference), read by attribute, so a summary
    without them (an older JSON report) has no such section."""
    found = getattr(summary, "query_diffs", None)
    if found is None or callable(found) or isinstance(found, (str, bytes, Mapping)):
        return []
    return list(found)


def _ids(value: Any) -> str:
    if isinstance(value, (str, bytes)):
        return str(value)
    return ", ".join(str(v) for v in value) or "none"


#: the most degraded queries a CI text lists per diff
CI_QUERIES = 5


def _diff_name(diff: Any) -> str:
    """``test_x.py::test[h] against the baseline`` / ``h against bm25``."""
    title = _attr(diff, "title")
    if title:
        return str(title)
    against = _attr(diff, "against") or "baseline"
    who = _attr(diff, "nodeid", "model") or "?"
    return f"{who} against {'the baseline' if against == 'baseline' else against}"


def _change_line(change: Any, depth: Any, secrets: list[str]) -> str:
    """One degraded query: its id and text, its scores, what it lost and gained."""
    qid = _attr(change, "query_id", "id") or "?"
    line = f"- `{_code(qid, secrets)}`"
    text = _attr(change, "text")
    if text:
        line += f" “{cell(text, secrets)}”"
    before, after = finite(_attr(change, "before")), finite(_attr(change, "after"))
    delta = finite(_attr(change, "change", "difference", "delta"))
    if before is not None and after is not None:
        line += f": {before:.3f} → {after:.3f}"
    if delta is not None:
        line += f" ({delta:+.3f})"
    lost, gained = _attr(change, "lost"), _attr(change, "gained")
    if lost is not None and gained is not None:
        line += f"; lost {cell(_ids(lost), secrets)}; gained {cell(_ids(gained), secrets)}"
    elif _attr(change, "missing"):
        where = f"in the top {depth}" if isinstance(depth, int) and depth > 0 else "retrieved"
        line += f"; relevant not {where} now: {cell(_ids(_attr(change, 'missing')), secrets)}"
    return line


def _diff_sections(summary: Summary, secrets: list[str]) -> list[Section]:
    """The per-query counts of every diff in one table, then each diff's most degraded
    queries as a section of its own (a comment short of room drops those first)."""
    diffs = _query_diffs(summary)
    if not diffs:
        return []
    rows = []
    for diff in diffs:
        epsilon = finite(_attr(diff, "epsilon"))
        metric = str(_attr(diff, "metric") or "ndcg@10")
        counts = [_attr(diff, n) for n in ("improved", "degraded", "unchanged", "queries")]
        rows.append(
            [
                cell(_diff_name(diff), secrets),
                cell(metric if epsilon is None else f"{metric} (by more than {epsilon:g})"),
                *(cell("-" if c is None else c) for c in counts),
            ]
        )
    headers = ["test", "metric changed", "improved", "degraded", "unchanged", "queries"]
    lines = ["### Per-query changes", "", *_table(headers, rows, secrets), ""]
    parts = [Section("per-query counts", tuple(lines))]
    for diff in diffs:
        worst = list(_attr(diff, "worst", "most_degraded") or ())[:CI_QUERIES]
        if not worst:
            continue
        name = _diff_name(diff)
        found = [f"**Most degraded: {cell(name, secrets)}**", ""]
        depth = _attr(diff, "depth")
        found += [_change_line(change, depth, secrets) for change in worst]
        note = _attr(diff, "note")
        if note:
            found += ["", f"_{cell(note, secrets)}_"]
        parts.append(Section(f"most degraded queries of {name}", (*found, "")))
    return parts


# -- stress, cut-offs, notes (folded) ----------------------------------------------------------


def _text_tables(heading: str, tables: Sequence[TextTable], secrets: list[str]) -> Section | None:
    if not tables:
        return None
    lines = [f"#### {heading}", ""]
    for table in tables:
        lines += [f"**{cell(table.title, secrets)}**", ""]
        if table.rows:
            rows = ([cell(c, secrets) for c in row] for row in table.rows)
            lines += [*_table(table.headers, rows, secrets), ""]
        lines += [*(f"- {cell(a, secrets)}" for a in table.after), *([""] if table.after else [])]
    return Section(heading.lower(), tuple(lines), folded=True)


def _notes_section(summary: Summary, secrets: list[str]) -> Section | None:
    if not summary.notices:
        return None
    lines = ["#### Notes", "", *(f"- {cell(n, secrets)}" for n in summary.notices), ""]
    return Section("notes", tuple(lines), folded=True)


def sections(summary: Summary, secrets: list[str] | None = None) -> list[Section]:
    """The sections every CI text walks, most important first (module doc)."""
    found = _secret_env_values() if secrets is None else secrets
    parts: list[Section | None] = [
        *(_dataset_section(d, summary.priority, found) for d in summary.datasets),
        _gate_section(summary.gates, found),
        *_diff_sections(summary, found),
        _text_tables("Two stages", stage_tables(summary.stages), found),
        _text_tables("Languages", language_tables(summary.languages), found),
        _text_tables("Stress", stress_tables(summary.stress), found),
        _text_tables("Cut-offs", cutoff_tables(summary.cutoffs), found),
        _text_tables(
            "Indexes",
            [
                *index_tables(summary.indexes),
                *load_tables(summary.indexes),
                *query_load_tables(summary.query_load),
            ],
            found,
        ),
        _notes_section(summary, found),
    ]
    return [p for p in parts if p is not None]


def _headline(summary: Summary) -> str:
    totals = summary.totals
    statuses = ", ".join(f"{n} {status}" for status, n in totals.statuses.items())
    tests = f"{totals.tests} benchmark test{'s' if totals.tests != 1 else ''}"
    return f"{tests}: {statuses}" if statuses else tests


def _artifact_lines(
    artifacts: Sequence[tuple[str, str]], run_url: str | None, secrets: list[str]
) -> list[str]:
    lines = []
    if run_url:
        url = redact(run_url, secrets).replace(")", "%29").replace(" ", "%20")
        lines.append(f"Reports of this run: [the workflow run's artifacts]({url}#artifacts)")
    if artifacts:
        lines += [
            *([""] if lines else []),
            "Files written:",
            "",
            *(f"- {cell(label, secrets)}: `{_code(path, secrets)}`" for label, path in artifacts),
        ]
    return [*lines, ""] if lines else []


def fit(
    head: Sequence[str],
    parts: Sequence[Section],
    tail: Sequence[str],
    *,
    limit: int,
    size: Callable[[str], int] = len,
    unit: str = "characters",
) -> str:
    """``head``, as many of ``parts`` as fit in ``limit`` (``size`` in ``unit``), then
    ``tail``: whole sections only, in their order, each kept when it fits after the ones
    before it; a note names the sections left out. The folded sections sit in one
    ``<details>`` block."""

    def text(kept: Sequence[Section], left_out: Sequence[Section]) -> str:
        open_ = [p for p in kept if not p.folded]
        folded = [p for p in kept if p.folded]
        lines = [*head]
        for part in open_:
            lines += part.lines
        if folded:
            names = ", ".join(p.name for p in folded)
            lines += [f"<details><summary>{cell(names.capitalize())}</summary>", ""]
            for part in folded:
                lines += part.lines
            lines += ["</details>", ""]
        if left_out:
            lines += [_left_out_note(left_out, limit, unit), ""]
        return "\n".join([*lines, *tail]).rstrip("\n") + "\n"

    whole = text(parts, [])
    if size(whole) <= limit:
        return whole
    # what every outcome holds at most: head and tail, the <details> lines naming every folded
    # section, the note naming the longest names (sizes add up over joined lines, so each
    # section is measured once, not the whole text again for each)
    longest = sorted(parts, key=lambda p: len(p.name), reverse=True)
    overhead = size(text([], []))
    overhead += size(_left_out_note(longest, limit, unit)) + 2
    folded = [p for p in parts if p.folded]
    if folded:
        names = ", ".join(p.name for p in folded)
        overhead += size(
            f"<details><summary>{cell(names.capitalize())}</summary>\n\n</details>\n\n"
        )
    room = limit - overhead
    kept: list[Section] = []
    left_out: list[Section] = []
    for part in parts:
        cost = size("\n".join(part.lines)) + 1
        if cost <= room:
            kept.append(part)
            room -= cost
        else:
            left_out.append(part)
    out = text(kept, left_out)
    while size(out) > limit and kept:  # never expected: the overhead above is an upper bound
        kept.pop()
        left_out = [p for p in parts if p not in kept]
        out = text(kept, left_out)
    return out


#: the sections a note names one by one; the rest are counted
_NAMED = 10


def _left_out_note(left_out: Sequence[Section], limit: int, unit: str) -> str:
    names = [p.name for p in left_out]
    shown = "; ".join(names[:_NAMED])
    if len(names) > _NAMED:
        shown += f" and {len(names) - _NAMED} more"
    return (
        f"> [!NOTE]\n> {len(names)} section{'s' if len(names) != 1 else ''} left out to stay "
        f"under {limit:,} {unit}: {cell(shown)}. The JSON and HTML reports have every section."
    )


def _render(
    summary: Summary,
    *,
    title: str,
    artifacts: Sequence[tuple[str, str]],
    run_url: str | None,
    limit: int,
    size: Callable[[str], int],
    unit: str,
    marker: bool,
) -> str:
    secrets = _secret_env_values()
    head = [MARKER] if marker else []
    head += [f"## {cell(title, secrets)}", "", cell(_headline(summary)), ""]
    tail = _artifact_lines(artifacts, run_url, secrets)
    text = fit(head, sections(summary, secrets), tail, limit=limit, size=size, unit=unit)
    return redact(text, secrets)


def render_github_summary(
    summary: Summary,
    *,
    artifacts: Sequence[tuple[str, str]] = (),
    run_url: str | None = None,
    title: str = "Embedding retrieval benchmark",
) -> str:
    """The Markdown a GitHub Actions step appends to ``$GITHUB_STEP_SUMMARY`` (at most
    :data:`GITHUB_SUMMARY_LIMIT` bytes): ``artifacts`` are the ``(label, path)`` of the files
    the run wrote, ``run_url`` the workflow run's page (:func:`github_run_url`)."""
    return _render(
        summary,
        title=title,
        artifacts=artifacts,
        run_url=run_url,
        limit=GITHUB_SUMMARY_LIMIT,
        size=lambda text: len(text.encode("utf-8")),
        unit="bytes",
        marker=False,
    )


def render_pr_comment(
    summary: Summary,
    *,
    artifacts: Sequence[tuple[str, str]] = (),
    run_url: str | None = None,
    title: str = "Embedding retrieval benchmark",
    limit: int = GITHUB_COMMENT_LIMIT,
) -> str:
    """The Markdown of a pull-request comment (at most ``limit`` characters, whole sections
    left out with a note when the run has more), starting with :data:`MARKER`."""
    return _render(
        summary,
        title=title,
        artifacts=artifacts,
        run_url=run_url,
        limit=limit,
        size=len,
        unit="characters",
        marker=True,
    )


def github_run_url(env: Mapping[str, str]) -> str | None:
    """The page of the GitHub Actions run ``env`` (the environment) belongs to, where its
    uploaded artifacts are listed; None outside GitHub Actions."""
    server, repo, run = (
        env.get(k) for k in ("GITHUB_SERVER_URL", "GITHUB_REPOSITORY", "GITHUB_RUN_ID")
    )
    if not (server and repo and run):
        return None
    return f"{server.rstrip('/')}/{repo}/actions/runs/{run}"


# -- JUnit XML ---------------------------------------------------------------------------------

#: the prefix of every property name
PREFIX = "embedbench."


def junit_properties(record: TestRecord | Mapping[str, Any]) -> list[tuple[str, Any]]:
    """The ``<property>`` pairs of one test record (a :class:`TestRecord`, or a JSON report's
    ``tests`` entry): model, dataset, queries, every metric with its interval bounds
    (``embedbench.ndcg@10``, ``.low``, ``.high``; on a dataset in several languages the
    macro averages, and each language's table metrics as
    ``embedbench.by_language.zh.ndcg@10``), the p50 and p95 latency with theirs, and the
    baseline gate's verdict ``embedbench.gate`` (``none`` when no gate ran: the test failed
    first, or the run updated the baseline); a hybrid that tuned its fusion weight adds
    ``embedbench.fusion.weight`` and ``.tuning_queries``. Values are the record's, so each
    equals the JSON report's; a missing or non-finite one is left out."""
    record = as_record(record)
    out: list[tuple[str, Any]] = []
    result = record.result or ResultData()
    for name, value in (("model", record.model), ("dataset", record.dataset)):
        if value:
            out.append((PREFIX + name, redact(value)))
    workload = (record.workload or {}).get("id")
    if workload:
        out.append((PREFIX + "workload", redact(str(workload))))
    if record.result is not None:
        out.append((PREFIX + "queries", result.queries))
    for name, metric in sorted(result.metrics.items()):
        for suffix, figure in (("", metric.value), (".low", metric.low), (".high", metric.high)):
            if finite(figure) is not None:
                out.append((f"{PREFIX}{name}{suffix}", finite(figure)))
    # a dataset in several languages: the metrics above are macro averages; each language's
    # own, as the per-language table shows them (embedbench.by_language.zh.ndcg@10)
    for language, data in sorted((result.languages or {}).items()):
        for name in LANGUAGE_METRICS:
            found = data.metrics.get(name)
            if found is None:
                continue
            for suffix, figure in (
                ("", found.value),
                (".low", found.low),
                (".high", found.high),
            ):
                if finite(figure) is not None:
                    out.append((f"{PREFIX}by_language.{language}.{name}{suffix}", finite(figure)))
    out.extend(_judge_properties(result))
    for key in ("p50_ms", "p95_ms"):
        latency = finite(getattr(result.latency, key))
        if latency is None:
            continue
        out.append((PREFIX + key, latency))
        interval = result.latency.interval(key)
        for suffix, bound in zip((".low", ".high"), interval or (), strict=False):
            if finite(bound) is not None:
                out.append((PREFIX + key + suffix, finite(bound)))
    fusion = result.model_info.get("fusion")
    tuned = fusion.get("tuned") if isinstance(fusion, Mapping) else None
    if isinstance(tuned, Mapping) and finite(tuned.get("weight")) is not None:
        # a tuned hybrid: the weight its figures were scored with, on held-out queries
        out.append((PREFIX + "fusion.weight", finite(tuned["weight"])))
        out.append((PREFIX + "fusion.tuning_queries", tuned.get("tuning_queries")))
    index = result.index
    if index is not None:  # the index axis's figures, by their gate keys (index.qps ...)
        out.append((PREFIX + "index", redact(index.spec)))
        named = [(f.key, f.get(result)) for f in INDEX_FIGURES]
        named += [(f"index.{n}", m.value) for n, m in sorted(index.neighbour_recall.items())]
        named += [(f"index.delta.{n}", m.value) for n, m in sorted(index.delta.items())]
        for level in index.load or ():  # index.load.c4.qps, index.load.c4.p99_ms ...
            at = f"index.load.c{level.concurrency}."
            named += [(at + f.key.removeprefix("load."), f.get(level)) for f in LOAD_FIGURES]
        out += [(PREFIX + key, finite(v)) for key, v in named if finite(v) is not None]
    out.extend(_rerank_properties(result))
    for level in result.query_load or ():  # the provider's query embedding: query_load.c4.qps ...
        at = f"query_load.c{level.concurrency}."
        for f in LOAD_FIGURES:
            if finite(f.get(level)) is not None:
                out.append((PREFIX + at + f.key.removeprefix("load."), finite(f.get(level))))
    # the plain name (xdist sends user_properties to the controller: plain values only)
    gate = str(record.baseline.status) if record.baseline is not None else ""
    out.append((PREFIX + "gate", gate or "none"))
    return out


def junit_suite_properties(
    records: Iterable[TestRecord | Mapping[str, Any]],
) -> list[tuple[str, Any]]:
    """The ``<testsuite>`` properties of a run: each reranked test's lifts with their p
    Holm-adjusted across the rerankers of its first stage
    (``embedbench.<node id>.lift.ndcg@10.p_holm``), as the summary's stages compute them."""
    out: list[tuple[str, Any]] = []
    for section in stage_sections([as_record(r) for r in records]):
        for row in section.rows:
            for metric, lift in sorted(row.lift.items()):
                if lift.p_holm is not None:
                    out.append((f"{PREFIX}{row.nodeid}.lift.{metric}.p_holm", lift.p_holm))
    return out


def _rerank_properties(result: ResultData) -> list[tuple[str, Any]]:
    """A reranked test's two stages (none without a reranker): ``embedbench.rerank`` (its
    spec) and ``.depth``; per metric the first stage's value with its interval
    (``embedbench.stage1.ndcg@10``, ``.low``, ``.high``) and the lift with its paired interval
    and bootstrap p (``embedbench.lift.ndcg@10``, ``.low``, ``.high``, ``.p_value``); the
    reranking's figures by their registry keys (``embedbench.rerank.ceiling``,
    ``rerank.realised``, ``rerank.p95_ms``, ``rerank.cost_per_1k_queries`` ...) and the
    per-query counts between the stages (``embedbench.rerank.improved``, ``.degraded``) and
    the queries it hurt most (:func:`_hurt_properties`). The
    Holm-adjusted p needs every reranker of the model: it is a ``<testsuite>`` property
    (:func:`junit_suite_properties`), not a test's."""
    rerank = result.rerank
    if rerank is None:
        return []
    out: list[tuple[str, Any]] = [
        (f"{PREFIX}rerank", redact(rerank.spec)),
        (f"{PREFIX}rerank.depth", rerank.depth),
    ]
    values: list[tuple[str, Any]] = []
    for name, metric in sorted(rerank.stage1.items()):
        values += [(f"stage1.{name}", metric.value), (f"stage1.{name}.low", metric.low)]
        values.append((f"stage1.{name}.high", metric.high))
    for name, lift in sorted(rerank.lift.items()):
        values += [(f"lift.{name}", lift.value), (f"lift.{name}.low", lift.low)]
        values += [(f"lift.{name}.high", lift.high), (f"lift.{name}.p_value", lift.p_value)]
    values += [(f.key, f.get(result)) for f in RERANK_FIGURES]
    if rerank.ceiling is not None:
        values += [("rerank.ceiling.low", rerank.ceiling.low)]
        values += [("rerank.ceiling.high", rerank.ceiling.high)]
    diff = stage_diff(result)
    if diff is not None:
        values += [("rerank.improved", diff.improved), ("rerank.degraded", diff.degraded)]
    out += [(PREFIX + key, finite(v)) for key, v in values if finite(v) is not None]
    if diff is not None:
        out += _hurt_properties(diff)
    return out


def _hurt_properties(diff: QueryDiff) -> list[tuple[str, Any]]:
    """The queries the reranker hurt most (the stage diff's, worst first, as many as a
    failure names): ``embedbench.rerank.hurt.1.query``, ``.first_stage``, ``.reranked``,
    ``.change``, the relevant documents it pushed out of the first stage's top and brought
    in (``.pushed_out``, ``.brought_in``: ids joined by spaces, as ``stage_queries.csv`` has
    them; "" for none) and those it pushed down among its candidates with their ranks
    (``.pushed_down``: ``d3 1→7, d5 2→out``, as every writer shows them; "none")."""
    out: list[tuple[str, Any]] = []
    for rank, change in enumerate(diff.worst[:FAILURE_QUERIES], start=1):
        at = f"{PREFIX}rerank.hurt.{rank}."
        out.append((at + "query", redact(change.query_id)))
        for key, value in (
            ("first_stage", change.before),
            ("reranked", change.after),
            ("change", change.change),
        ):
            if finite(value) is not None:
                out.append((at + key, finite(value)))
        for key, ids in (("pushed_out", change.lost), ("brought_in", change.gained)):
            if ids is not None:
                out.append((at + key, redact(" ".join(ids))))
        if change.pushed_down is not None:
            out.append((at + "pushed_down", redact(pushed_down_text(change.pushed_down))))
    return out


def _judge_properties(result: ResultData) -> list[tuple[str, Any]]:
    """An LLM judge's figures (``embedbench.judge.judged_after``, ``.metrics.ndcg@10`` and
    every other metric on human + LLM grades, ``.llm_grades``, ``.ungraded``,
    ``.kappa_binary``, ``.kappa_graded``, ``.requests``, ``.requests_per_query``,
    ``.cost_usd``, ``.error``), the JSON report's values; none without a judge."""
    judge = result.judge
    if judge is None:
        return []
    agreement = judge.agreement
    found: list[tuple[str, Any]] = [
        (f"{PREFIX}judge.model", redact(judge.model)),
        (f"{PREFIX}judge.judge_id", judge.judge_id),
    ]
    values: dict[str, Any] = {
        "judged_before": judge.judged_before,
        "judged_after": judge.judged_after,
        "llm_grades": judge.llm_grades,
        "ungraded": judge.ungraded,
        "kappa_binary": agreement.kappa_binary,
        "kappa_graded": agreement.kappa_graded,
        "agreement_pairs": agreement.pairs,
        "requests": judge.requests,
        "requests_per_query": judge.requests_per_query,
        "cost_usd": judge.cost_usd,
    }
    for name, metric in sorted(judge.metrics.items()):
        values[f"metrics.{name}"] = metric.value
    for name, value in values.items():
        if finite(value) is not None:  # a count stays an integer
            found.append(
                (f"{PREFIX}judge.{name}", value if isinstance(value, int) else finite(value))
            )
    if judge.error:
        found.append((f"{PREFIX}judge.error", redact(judge.error)))
    return found

"""The files a run leaves: the baseline update, the JSON report, the HTML report, the CSV files,
the Markdown tables and the pull-request comment, written at its end (each one atomically), and
the GitHub Actions job summary, appended (GitHub's contract for ``$GITHUB_STEP_SUMMARY``).

A file that cannot be written does not lose the run's results silently: each failure is one
line naming the file, the OS reason and the fix, and the run exits with
:data:`EXIT_ARTIFACT_FAILED` when its tests passed.
"""

from __future__ import annotations

import errno
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..core.io import append_text, atomic_write_json, atomic_write_text, write_target

if TYPE_CHECKING:
    from .summary.run import Summary

__all__ = [
    "EXIT_ARTIFACT_FAILED",
    "nothing_ran",
    "write_ci_reports",
    "write_failure",
    "write_json",
    "write_reports",
]


#: exit status of a run whose tests passed but whose JSON report or baseline was not written
#: (or, when updating a baseline, whose results did not all reach it); see docs/reports.md
EXIT_ARTIFACT_FAILED = 6


def write_failure(what: str, path: Path, exc: BaseException, fix: str) -> str:
    """One line: what was not written, where, the OS reason and the fix."""
    if isinstance(exc, OSError):
        reason = exc.strerror or str(exc)
        where = exc.filename if exc.filename and str(exc.filename) != str(path) else None
        reason = f"{reason} ({where})" if where else reason
        if exc.errno in (errno.ENOSPC, errno.EDQUOT):
            fix = f"free space on that disk, or {fix}"
        elif exc.errno in (errno.EROFS, errno.EACCES, errno.EPERM):
            fix = f"make {_folder_written(path)} writable, or {fix}"
    else:
        reason = str(exc)
    return f"embedbench: the {what} {path} was NOT written: {reason}. Fix: {fix}"


def nothing_ran(
    *,
    json_path: Path | None,
    html_path: Path | None,
    csv_dir: Path | None,
    md_path: Path | None,
    update_baseline: str | None,
    github_summary: Path | None = None,
    pr_comment: Path | None = None,
) -> list[str]:
    """The line of a run in which no benchmark test ran (a collection error, every test
    deselected, ``--collect-only``): it writes nothing, since a report of no test would replace
    the last good one; no line when no file was asked for."""
    asked = [
        name
        for name, path in (
            ("JSON report", json_path),
            ("HTML report", html_path),
            ("CSV files", csv_dir),
            ("Markdown file", md_path),
            ("GitHub job summary", github_summary),
            ("PR comment", pr_comment),
            ("baseline", True if update_baseline is not None else None),
        )
        if path is not None
    ]
    if not asked:
        return []
    what = asked[0] if len(asked) == 1 else ", ".join(asked[:-1]) + " and " + asked[-1]
    return [
        f"embedbench: no benchmark test ran; the {what} {'was' if len(asked) == 1 else 'were'} "
        "not written, existing files left as they were"
    ]


def write_json(path: Path, report: Any) -> str | None:
    """Write the JSON report atomically; the failure line, or None when it was written."""
    try:
        atomic_write_json(path, report)
    except OSError as exc:
        return write_failure(
            "JSON report", path, exc, "choose another path with --embedbench-json=PATH"
        )
    return None


def write_reports(
    report: Any,
    *,
    html: Path | None = None,
    csv: Path | None = None,
    md: Path | None = None,
) -> tuple[list[tuple[str, Path]], list[str]]:
    """Write the HTML report, the CSV files and the Markdown tables that were asked for, each
    formatting the summary the JSON report dict ``report`` keeps (:meth:`Summary.from_json`,
    what ``embedbench report`` reads too): what was written (label, path) and the failure
    lines."""
    from .summary.run import Summary
    from .writers.html import render_html
    from .writers.markdown import render_markdown
    from .writers.tabular import write_csv

    summary = Summary.from_json(report)

    def page(path: Path) -> list[tuple[str, Path]]:
        atomic_write_text(path, render_html(summary, context=report))
        return [("HTML report", path)]

    def tables(folder: Path) -> list[tuple[str, Path]]:
        return [("CSV", found) for found in write_csv(folder, summary)]

    def markdown(path: Path) -> list[tuple[str, Path]]:
        atomic_write_text(path, render_markdown(summary, context=report))
        return [("Markdown", path)]

    return _write_each(
        (
            (html, page, "HTML report", "choose another path with --embedbench-html"),
            (csv, tables, "CSV folder", "choose another folder with --embedbench-csv"),
            (md, markdown, "Markdown file", "choose another path with --embedbench-md"),
        )
    )


#: one file to write: its path (None: not asked for), the writer (what it wrote, labelled),
#: what the file is and the fix a failure line gives
_Job = tuple[Path | None, Callable[[Path], list[tuple[str, Path]]], str, str]


def _write_each(jobs: Sequence[_Job]) -> tuple[list[tuple[str, Path]], list[str]]:
    """Run each job whose path was given, in order: what was written (label, path) and a
    :func:`write_failure` line for each one the OS refused."""
    written: list[tuple[str, Path]] = []
    failures: list[str] = []
    for target, write, what, fix in jobs:
        if target is None:
            continue
        try:
            written.extend(write(target))
        except OSError as exc:
            failures.append(write_failure(what, target, exc, fix))
    return written, failures


def write_ci_reports(
    summary: Summary,
    *,
    github_summary: Path | None = None,
    pr_comment: Path | None = None,
    artifacts: list[tuple[str, Path]] | None = None,
    run_url: str | None = None,
    base: Path | None = None,
    title: str | None = None,
) -> tuple[list[tuple[str, Path]], list[str]]:
    """Append the GitHub job summary to ``github_summary`` and write the pull-request comment
    to ``pr_comment`` (:mod:`.ci`, formatting ``summary``), listing the ``artifacts`` already
    written (paths shown relative to ``base`` when inside it) and the run's page ``run_url``
    (``title``: the heading, default the run's): what was written (label, path) and the
    failure lines."""
    from .writers.ci import render_github_summary, render_pr_comment

    shown = [(label, _shown(path, base)) for label, path in artifacts or []]
    titled: dict[str, Any] = {"title": title} if title else {}

    def job_summary(path: Path) -> list[tuple[str, Path]]:
        text = render_github_summary(summary, artifacts=shown, run_url=run_url, **titled)
        # appended, the whole block or nothing: GitHub collects the file after the step, and
        # other tools of the step may have appended their own summaries before this one;
        # after what is there, on a line of its own (a blank line ends any table)
        append_text(path, text, separator="\n")
        return [("GitHub job summary", path)]

    def comment(path: Path) -> list[tuple[str, Path]]:
        atomic_write_text(
            path, render_pr_comment(summary, artifacts=shown, run_url=run_url, **titled)
        )
        return [("PR comment", path)]

    return _write_each(
        (
            (
                github_summary,
                job_summary,
                "GitHub job summary",
                "choose another path with --embedbench-github-summary",
            ),
            (pr_comment, comment, "PR comment", "choose another path with --embedbench-pr-comment"),
        )
    )


def _shown(path: Path, base: Path | None) -> str:
    """``path`` relative to ``base`` when it lies inside it (a workspace path reads short)."""
    if base is not None:
        try:
            return str(path.relative_to(base))
        except ValueError:
            pass
    return str(path)


def _folder_written(path: Path) -> Path:
    """The folder a write of ``path`` writes in: the link target's when ``path`` is a symlink
    (the writers write through it)."""
    try:
        return write_target(path).parent
    except OSError:
        return path.parent

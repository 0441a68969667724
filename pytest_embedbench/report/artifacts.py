"""The files a run leaves: the baseline update, the JSON report, the HTML report, the CSV files
and the Markdown tables, written at its end (each one atomically).

A file that cannot be written does not lose the run's results silently: each failure is one
line naming the file, the OS reason and the fix, and the run exits with
:data:`EXIT_ARTIFACT_FAILED` when its tests passed.
"""

from __future__ import annotations

import errno
from pathlib import Path
from typing import Any

from .._io import atomic_write_json, atomic_write_text

__all__ = [
    "EXIT_ARTIFACT_FAILED",
    "nothing_ran",
    "write_failure",
    "write_json",
    "write_reports",
]


#: exit status of a run whose tests passed but whose JSON report or baseline was not written
#: (or, when updating a baseline, whose results did not all reach it); see the README
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
            fix = f"make {path.parent} writable, or {fix}"
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
    from .html import render_html
    from .summary import Summary
    from .tabular import render_markdown, write_csv

    written: list[tuple[str, Path]] = []
    failures: list[str] = []
    summary = Summary.from_json(report)
    if html is not None:
        try:
            atomic_write_text(html, render_html(summary, context=report))
            written.append(("HTML report", html))
        except OSError as exc:
            failures.append(
                write_failure(
                    "HTML report", html, exc, "choose another path with --embedbench-html"
                )
            )
    if csv is not None:
        try:
            written.extend(("CSV", path) for path in write_csv(csv, summary))
        except OSError as exc:
            failures.append(
                write_failure("CSV folder", csv, exc, "choose another folder with --embedbench-csv")
            )
    if md is not None:
        try:
            atomic_write_text(md, render_markdown(summary, context=report))
            written.append(("Markdown", md))
        except OSError as exc:
            failures.append(
                write_failure("Markdown file", md, exc, "choose another path with --embedbench-md")
            )
    return written, failures

"""The end of a run, in order: the baseline gate's last word, the summary (computed once),
the JSON report and the files formatted from it, the GitHub job summary and pull-request
comment, then the terminal section. The pytest hooks in :mod:`.plugin` call these; this
module of the pytest layer may import the report writers, which :mod:`.session` may not.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from ..core.io import finite
from ..core.text import inert
from ..report.artifacts import nothing_ran, write_ci_reports, write_json, write_reports
from ..report.summary.run import Summary, build_summary
from ..report.writers.ci import github_run_url
from ..report.writers.json_report import build_report, machine_info, summary_sections
from ..report.writers.terminal import render_summary
from .session import EmbedBenchSession

__all__ = ["end_of_run", "json_report", "run_summary", "terminal_summary"]


def json_report(
    config: pytest.Config, session: EmbedBenchSession, records: list[dict[str, Any]]
) -> dict[str, Any]:
    """The JSON report of ``records`` (the default ``pytest_embedbench_generate_json``)."""
    options = session.options
    configuration = {
        **options.configuration(),
        "args": list(config.invocation_params.args),
        # what embedbench.yaml said (secrets redacted below, in build_report)
        "embedbench_yaml": session.effective_configs(),
    }
    report = build_report(
        records,
        configuration=configuration,
        rootdir=config.rootpath,
        machine=_benchmark_machine_info(config),
    )
    report.update(summary_sections(run_summary(session)))
    return report


def run_summary(state: EmbedBenchSession) -> Summary:
    """The run's summary, built at session finish (or now, if that did not run)."""
    if state.summary is None:
        state.summary = build_summary(state)
    summary: Summary = state.summary
    return summary


def _benchmark_machine_info(config: pytest.Config) -> dict[str, Any] | None:
    """pytest-benchmark's machine info, when it is installed, so both reports agree."""
    if not config.pluginmanager.hasplugin("benchmark"):
        return None
    hook = getattr(config.hook, "pytest_benchmark_generate_machine_info", None)
    if hook is None:
        return None
    try:
        info = hook(config=config)
    except Exception:  # noqa: BLE001 - fall back to our own machine info
        return None
    if not isinstance(info, dict):
        return None
    return {**machine_info(), **info, "format": "pytest-benchmark"}


#: the options that ask for a file, by the names nothing_ran and Options both give them
_ASKED_FILES = (
    "json_path",
    "html_path",
    "csv_dir",
    "md_path",
    "update_baseline",
    "github_summary",
    "pr_comment",
)


def end_of_run(config: pytest.Config, state: EmbedBenchSession) -> bool:
    """The controller's end of the run: gate and baseline, summary, every report asked for.
    True when a file could not be written (the run then exits with its own status)."""
    options = state.options
    if not state.ran:
        # no benchmark test ran (a collection error, all deselected, --co): a report of nothing
        # would replace the last good one, and the baseline has nothing to take
        asked = nothing_ran(**{name: getattr(options, name) for name in _ASKED_FILES})
        state.summary = build_summary(state, [*state.generated(), *asked])
        return False
    notes, failures = state.gatekeeper.finish(state.records, state.not_recorded())
    # computed once; the reports only read it (a set embedbench.yaml generated is said first)
    state.summary = build_summary(state, [*state.generated(), *notes])
    wanted = (options.json_path, options.html_path, options.csv_dir, options.md_path)
    if any(path is not None for path in wanted):
        # one report dict: the HTML, CSV and Markdown format the summary the JSON keeps, so a
        # saved JSON renders the same files later (embedbench report)
        records = [record.to_dict() for record in state.summary.records]
        report = config.hook.pytest_embedbench_generate_json(config=config, records=records)
        config.hook.pytest_embedbench_update_json(config=config, report=report)
        if options.json_path is not None:
            failure = write_json(options.json_path, report)
            state.json_written = failure is None
            failures.extend([failure] if failure else [])
            if failure is None:
                state.artifacts.append(("JSON report", options.json_path))
        # the renderers read plain JSON data: what json.dump would write, read back
        plain = json.loads(json.dumps(finite(report), sort_keys=True, default=str))
        written, failed = write_reports(
            plain, html=options.html_path, csv=options.csv_dir, md=options.md_path
        )
        state.artifacts.extend(written)
        failures.extend(failed)
    # GitHub Actions: the job summary (appended to $GITHUB_STEP_SUMMARY unless a path is
    # given or --embedbench-no-github-summary) and the pull-request comment, listing the files
    # written above
    github = options.github_summary or (None if options.no_github_summary else _step_summary())
    if github is not None or options.pr_comment is not None:
        written, failed = write_ci_reports(
            state.summary,
            github_summary=github,
            pr_comment=options.pr_comment,
            artifacts=list(state.artifacts),
            run_url=github_run_url(os.environ),
            base=config.invocation_params.dir,
        )
        state.artifacts.extend(written)
        failures.extend(failed)
    state.write_failures = failures
    return bool(failures)


def _step_summary() -> Path | None:
    """The job summary file GitHub Actions names in ``$GITHUB_STEP_SUMMARY`` (None outside)."""
    found = os.environ.get("GITHUB_STEP_SUMMARY", "").strip()
    return Path(found) if found else None


def terminal_summary(terminalreporter: Any, state: EmbedBenchSession, verbosity: int) -> None:
    """The ``embedbench`` section: the tables, the notices, what could not be written (red)
    and, last, where every file this run wrote is."""
    summary = run_summary(state)
    lines = render_summary(summary, verbosity=verbosity, columns=state.options.columns)
    notes = summary.notices
    failures = state.write_failures
    if not lines and not notes and not failures and not state.artifacts:
        return
    terminalreporter.section("embedbench", sep="=")
    for line in lines:  # the tables' lines show their control characters already
        terminalreporter.write_line(line)
    # the notices, failures and paths quote names, errors and paths from the user's data:
    # their control characters are shown, not run by the terminal
    for line in notes:
        terminalreporter.write_line(inert(line))
    for line in failures:  # after the table: what was lost and how to fix it
        terminalreporter.write_line(inert(line), red=True, bold=True)
    for label, path in state.artifacts:  # last: where every file this run wrote is
        terminalreporter.write_line(inert(f"{label}: {path}"))

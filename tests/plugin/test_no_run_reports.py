"""Runs that measured nothing, or not everything, as a user runs them (issue 28): a run in
which no benchmark test ran replaces no report and touches no baseline, and no line claims a
timing that did not happen."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import write_config
from .test_plugin import BASIC

REPORTS = [
    "--embedbench-json=out/r.json",
    "--embedbench-html=out/r.html",
    "--embedbench-csv=out/csv",
    "--embedbench-md=out/r.md",
    "--embedbench-update-baseline",
]


def files(root: Path) -> dict[str, bytes]:
    """Every report and baseline file under ``root``, by relative path, with its bytes."""
    found = [*(root / "out").rglob("*"), *(root / ".embedbench").rglob("*")]
    return {str(p.relative_to(root)): p.read_bytes() for p in found if p.is_file()}


@pytest.mark.parametrize(
    "how",
    [
        pytest.param("typo", id="collection-error"),
        pytest.param("-k nothing_matches", id="all-deselected"),
        pytest.param("--co", id="collect-only"),
    ],
)
def test_a_run_where_no_benchmark_test_ran_leaves_the_reports_as_they_were(
    project: pytest.Pytester, how: str
) -> None:
    project.makepyfile(test_basic=BASIC)
    good = project.runpytest(*REPORTS)
    good.assert_outcomes(passed=2)
    before = files(project.path)
    assert {"out/r.json", "out/r.html", "out/r.md", "out/csv/results.csv"} <= set(before)
    assert ".embedbench/baseline.json" in before
    assert len(json.loads(before["out/r.json"])["tests"]) == 2

    if how == "typo":
        write_config(project, "modles: [x]\n")
        args: list[str] = []
    else:
        args = how.split()
    result = project.runpytest(*REPORTS, *args)
    out = result.stdout.str()

    assert result.ret != pytest.ExitCode.OK or how == "--co"
    if how == "typo":
        assert "modles" in out  # the collection error names the key
    assert files(project.path) == before  # every byte of every file as it was
    result.stdout.fnmatch_lines(
        [
            "embedbench: no benchmark test ran; the JSON report, HTML report, CSV files, "
            "Markdown file and baseline were not written, existing files left as they were"
        ]
    )
    assert out.count("no benchmark test ran") == 1
    assert "entries added" not in out and "entry added" not in out


def test_a_report_is_still_written_when_benchmark_tests_ran(project: pytest.Pytester) -> None:
    """The other side: one benchmark test ran (the rest deselected), so the reports are
    rewritten, with that test, and every CSV has its header even with no row."""
    project.makepyfile(test_basic=BASIC)
    result = project.runpytest("--embedbench-json=r.json", "--embedbench-csv=csv", "-k", "bm25")
    result.assert_outcomes(passed=1, deselected=1)
    assert "no benchmark test ran" not in result.stdout.str()
    assert [t["model"] for t in json.loads((project.path / "r.json").read_text())["tests"]] == [
        "bm25"
    ]
    # a test whose model fails records no result: its queries.csv has no row, only the header
    project.makepyfile(
        test_basic="""
        import pytest
        from pytest_embedbench import ModelSpec

        @pytest.mark.embedbench(dataset="tiny", models=[ModelSpec("hashing:h", poison="dim")])
        def test_search(retrieval):
            pass
        """
    )
    project.runpytest("--embedbench-csv=csv").assert_outcomes(errors=1)
    lines = (project.path / "csv" / "queries.csv").read_text().splitlines()
    assert lines == ["test,dataset,model,query_id,query,latency_ms,retrieved,relevant"]
    header, row = (project.path / "csv" / "results.csv").read_text().splitlines()
    assert header.startswith("test,dataset,model,spec,status,") and ",error," in row


def test_an_update_that_changes_nothing_does_not_say_entries_were_added(
    project: pytest.Pytester,
) -> None:
    project.makepyfile(test_basic=BASIC)
    project.runpytest("--embedbench-update-baseline").assert_outcomes(passed=2)
    path = project.path / ".embedbench" / "baseline.json"
    before = path.read_bytes()
    again = project.runpytest("--embedbench-update-baseline=new")
    again.assert_outcomes(passed=2)
    assert path.read_bytes() == before
    again.stdout.fnmatch_lines(
        [f"baseline {path}: unchanged, every test of this run already has an entry (mode 'new')"]
    )
    assert "entries added" not in again.stdout.str()


BUSY_CONFIG = """
datasets:
  tiny: {path: data/tiny}
models: [hashing:h]
providers:
  hashing: {sleep: 0.4}
"""


def test_no_busy_machine_notice_when_nothing_was_timed(project: pytest.Pytester) -> None:
    """``--embedbench-latency-passes 0`` times no query: however busy the machine was while
    the queries were scored, no line says it was busy "while the queries were timed".

    Real processes keep every CPU busy for the run, and the provider's 0.4 s per batch makes the
    monitored block long enough (over 0.25 s) to measure the others' CPU time."""
    project.makefile(".yaml", embedbench=BUSY_CONFIG)
    project.makepyfile(test_basic=BASIC.replace("assert retrieval.latency.p95_ms <= 10_000", ""))
    burners = [
        subprocess.Popen([sys.executable, "-c", "while True: pass"])
        for _ in range(os.cpu_count() or 1)
    ]
    try:
        result = project.runpytest(
            "--embedbench-no-cache", "--embedbench-latency-passes=0", "--embedbench-json=r.json"
        )
    finally:
        for proc in burners:
            proc.kill()
            proc.wait()
    result.assert_outcomes(passed=1)
    (test,) = json.loads((project.path / "r.json").read_text())["tests"]
    assert test["result"]["latency"]["n"] == 0  # nothing was timed
    # the machine was busy while the queries were scored: what the notice used to report
    assert test["result"]["environment"]["load"]["busy"] is True, test["result"]["environment"]
    out = result.stdout.str()
    assert "machine was busy" not in out and "were timed" not in out, out

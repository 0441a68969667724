"""The CI writers on hand-built summaries (issue 30 items 4 and 5): Markdown a GitHub page shows
as written, a pull-request comment that fits GitHub's limit by leaving out whole sections, the
job summary appended, the JUnit properties of a record, and their options."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from pytest_embedbench.config.options import Options
from pytest_embedbench.core.exceptions import ConfigError
from pytest_embedbench.report.artifacts import nothing_ran, write_ci_reports
from pytest_embedbench.report.summary import (
    DatasetSummary,
    Gate,
    GateMetric,
    ModelSummary,
    Summary,
    Totals,
)
from pytest_embedbench.report.summary.values import Delta, Value
from pytest_embedbench.report.writers.ci import (
    GITHUB_COMMENT_LIMIT,
    MARKER,
    Section,
    cell,
    fit,
    github_run_url,
    junit_properties,
    render_github_summary,
    render_pr_comment,
)


@pytest.fixture(autouse=True)
def _no_github(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("GITHUB_STEP_SUMMARY", "GITHUB_SERVER_URL", "GITHUB_REPOSITORY", "GITHUB_RUN_ID"):
        monkeypatch.delenv(name, raising=False)


def model(name: str, ndcg: float, *, best: bool = False, status: str = "passed") -> ModelSummary:
    return ModelSummary(
        model=name,
        spec=f"hashing:{name}",
        status=status,
        tests=1,
        figures={
            "ndcg@10": Value(ndcg, ndcg - 0.05, ndcg + 0.05, best=best),
            "recall@10": Value(0.5, 0.4, 0.6),
            "p95_ms": Value(1.25),
        },
    )


def dataset(name: str, models: int) -> DatasetSummary:
    rows = tuple(model(f"model-{i:03d}", 0.5 + i / 1000, best=i == 0) for i in range(models))
    return DatasetSummary(
        name=name,
        models=rows,
        queries=300,
        documents=5183,
        metrics=("ndcg@10", "recall@10"),
    )


def rows_of(text: str, heading: str) -> list[str]:
    """The table lines under ``heading`` (up to the next blank line after the table)."""
    lines = text.splitlines()
    start = lines.index(heading) + 2
    end = next(i for i in range(start, len(lines)) if not lines[i].startswith("|"))
    return lines[start:end]


# -- cells --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        ("a|b", r"a\|b"),  # a pipe does not split the table cell
        ("*bold* _it_ ~~gone~~", r"\*bold\* \_it\_ \~\~gone\~\~"),
        ("[click](https://x.invalid)", r"\[click\](https://x.invalid)"),
        ("<script>alert(1)</script>", "&lt;script&gt;alert(1)&lt;/script&gt;"),
        ("`code`", r"\`code\`"),
        ("$x^2$", r"\$x^2\$"),  # GitHub renders $...$ as math
        ("two\nlines\r\n here", "two lines here"),
        ("back\\slash", r"back\\slash"),
        ("AT&T", "AT&amp;T"),
    ],
)
def test_a_cell_renders_as_itself(raw: str, shown: str) -> None:
    assert cell(raw, []) == shown


def test_a_cell_mentions_nobody_but_keeps_metric_names() -> None:
    assert cell("@octocat and hf:@org/model", []) == "@\u200boctocat and hf:@\u200borg/model"
    assert cell("ndcg@10 and user@example.org", []) == "ndcg@10 and user@example.org"


def test_a_secret_is_redacted_before_it_is_escaped(monkeypatch: pytest.MonkeyPatch) -> None:
    # escaped first, "sk_live_123|abc" would read "sk\_live\_123\|abc" and the secret survive
    monkeypatch.setenv("VENDOR_API_KEY", "sk_live_123|abc")
    assert cell("model sk_live_123|abc") == "model \\*\\*\\*"
    summary = Summary(datasets=(dataset("d", 1),), notes=("token sk_live_123|abc leaked",))
    for text in (render_pr_comment(summary), render_github_summary(summary)):
        assert "sk_live" not in text and "sk\\_live" not in text


# -- the texts ----------------------------------------------------------------------------------


def small_summary() -> Summary:
    d = DatasetSummary(
        name="support|faq",
        models=(
            model("bm25", 0.61, best=True),
            ModelSummary(
                model="hf:@org/mini",
                spec="hf:org/mini",
                status="failed",
                error="embedbench checks failed for 'mini':\n  ndcg@10 regressed: ...",
                figures={"ndcg@10": Value(0.5, 0.45, 0.55)},
                baseline=Delta(-0.11, -0.15, -0.07, significant=True, verdict="regressed"),
            ),
        ),
        queries=4,
        documents=6,
        metrics=("ndcg@10",),
    )
    gates = (
        Gate(
            nodeid="t.py::test_search[mini]",
            status="regressed",
            metrics=(
                GateMetric(
                    "ndcg@10",
                    0.61,
                    0.5,
                    Delta(-0.11, -0.15, -0.07, significant=True, verdict="regressed"),
                    regressed=True,
                ),
            ),
            failures=("ndcg@10 regressed: baseline 0.6100, current 0.5000\n    per query: ...",),
        ),
        Gate(nodeid="t.py::test_search[bm25]", status="missing"),
    )
    return Summary(
        datasets=(d,),
        gates=gates,
        totals=Totals(tests=2, statuses={"failed": 1, "passed": 1}),
        notes=("baseline b.json: 1 entry added",),
    )


def test_the_comment_formats_the_summary() -> None:
    text = render_pr_comment(
        small_summary(),
        artifacts=[("HTML report", "out/report.html")],
        run_url="https://github.com/o/r/actions/runs/7",
    )
    assert text.startswith(MARKER + "\n## Embedding retrieval benchmark\n")
    assert "2 benchmark tests: 1 failed, 1 passed" in text
    assert "### Dataset `support|faq` · 4 queries · 6 documents" in text
    header = "| model | nDCG@10 \\[95%\\] | p95 ms | Δ nDCG@10 vs baseline | status |"
    assert rows_of(text, header) == [
        "| bm25 | **0.6100** \\[0.560, 0.660\\] | 1.2 | - | ✅ passed |",
        "| hf:@\u200borg/mini | 0.5000 \\[0.450, 0.550\\] | - | -0.1100 \\[-0.150, -0.070\\] "
        "regressed | ❌ failed |",
    ]
    # a failure's first line only: what is under it has its own section
    assert "- hf:@\u200borg/mini: embedbench checks failed for 'mini':\n" in text
    gate = rows_of(text, "| test | verdict | baseline → current | Δ \\[95%\\] | regressed |")
    assert gate == [
        "| t.py::test\\_search\\[mini\\] | ❌ regressed | ndcg@10 0.6100 → 0.5000 | "
        "-0.1100 \\[-0.150, -0.070\\] regressed | ndcg@10 |"
    ]
    assert "➖ No baseline entry, not gated: 1 test" in text
    assert "per query: ..." not in text
    assert "<details><summary>Notes</summary>" in text
    assert "[the workflow run's artifacts](https://github.com/o/r/actions/runs/7#artifacts)" in text
    assert text.endswith("- HTML report: `out/report.html`\n")


def test_the_job_summary_is_the_comment_without_its_marker() -> None:
    summary = small_summary()
    assert render_pr_comment(summary) == MARKER + "\n" + render_github_summary(summary)


def test_the_per_query_changes_are_shown_when_the_summary_has_them() -> None:
    querydiff = pytest.importorskip("pytest_embedbench.records.querydiff")
    change = querydiff.QueryChange(
        query_id="q7",
        before=1.0,
        after=0.25,
        change=-0.75,
        text="reset *my* password",
        lost=("d1",),
        gained=(),
    )
    diff = querydiff.QueryDiff(
        nodeid="t.py::test_search[mini]",
        dataset="support",
        model="mini",
        against="baseline",
        metric="ndcg@10",
        queries=4,
        improved=1,
        degraded=2,
        unchanged=1,
        documents_known=True,
        worst=(change,),
    )
    summary = Summary(datasets=(dataset("support", 1),), query_diffs=(diff,))
    text = render_pr_comment(summary)
    rows = rows_of(text, "| test | metric changed | improved | degraded | unchanged | queries |")
    assert rows == [
        "| t.py::test\\_search\\[mini\\] against the baseline | ndcg@10 (by more than 0.001) "
        "| 1 | 2 | 1 | 4 |"
    ]
    assert "- `q7` “reset \\*my\\* password”: 1.000 → 0.250 (-0.750); lost d1; gained none" in text


# -- the size limit -----------------------------------------------------------------------------


def large_summary(datasets: int = 40, models: int = 30) -> Summary:
    return Summary(
        datasets=tuple(dataset(f"set-{i:02d}", models) for i in range(datasets)),
        totals=Totals(tests=datasets * models, statuses={"passed": datasets * models}),
        notes=tuple(f"note {i}" for i in range(50)),
    )


def test_a_large_run_fits_a_comment_by_leaving_out_whole_sections() -> None:
    summary = large_summary()
    full = render_github_summary(summary)
    assert len(full) > GITHUB_COMMENT_LIMIT  # the run does not fit a comment
    assert full.count("### Dataset ") == 40 and "left out" not in full

    text = render_pr_comment(summary, artifacts=[("HTML report", "out/report.html")])
    assert len(text) <= GITHUB_COMMENT_LIMIT
    kept = re.findall(r"### Dataset `(set-\d+)`", text)
    assert kept == [f"set-{i:02d}" for i in range(len(kept))] and 5 < len(kept) < 40
    blocks = text.split("### Dataset ")[1:]
    assert len(blocks) == len(kept)
    for block in blocks:  # a kept dataset has its whole table
        rows = [line for line in block.splitlines() if line.startswith("| model-")]
        assert [row.split(" |")[0] for row in rows] == [f"| model-{i:03d}" for i in range(30)]
    left = 40 - len(kept)
    note = next(line for line in text.splitlines() if "left out to stay under" in line)
    assert note == (
        f"> {left} sections left out to stay under 65,000 characters: dataset 'set-"
        f"{len(kept):02d}'; " + note.split("; ", 1)[1]
    )
    assert f"and {left - 10} more. The JSON and HTML reports have every section." in note
    # a smaller section after the ones left out still fits: the notes, folded
    assert "<details><summary>Notes</summary>" in text and "- note 49" in text
    assert text.endswith("- HTML report: `out/report.html`\n")  # the files are always listed


def test_fit_keeps_later_sections_that_fit_after_a_large_one_is_left_out() -> None:
    parts = [
        Section("small one", ("a" * 10,)),
        Section("huge", ("b" * 1000,)),
        Section("small two", ("c" * 10,)),
        Section("folded", ("d" * 10,), folded=True),
    ]
    text = fit(["# head"], parts, ["tail"], limit=400)
    assert len(text) <= 400
    assert "a" * 10 in text and "c" * 10 in text and "b" * 10 not in text
    assert "<details><summary>Folded</summary>" in text and "d" * 10 in text
    assert "> 1 section left out to stay under 400 characters: huge." in text
    assert text.endswith("tail\n")
    everything = fit(["# head"], parts, ["tail"], limit=10_000)
    assert "left out" not in everything and "b" * 1000 in everything


# -- writing ------------------------------------------------------------------------------------


def test_the_job_summary_is_appended_and_the_comment_replaced(tmp_path: Path) -> None:
    step = tmp_path / "step_summary"
    step.write_text("## Tests of another tool\n\n| a |\n| --- |\n| 1 |")  # no final newline
    comment = tmp_path / "out" / "comment.md"
    summary = small_summary()
    for _ in range(2):
        written, failures = write_ci_reports(
            summary,
            github_summary=step,
            pr_comment=comment,
            artifacts=[("JSON report", tmp_path / "out" / "r.json")],
            base=tmp_path,
        )
        assert failures == []
        assert written == [("GitHub job summary", step), ("PR comment", comment)]
    text = step.read_text()
    assert text.startswith("## Tests of another tool\n\n| a |\n| --- |\n| 1 |\n## Embedding")
    assert text.count("## Embedding retrieval benchmark") == 2
    assert "- JSON report: `out/r.json`" in text  # relative to the base folder
    assert comment.read_text() == render_pr_comment(
        summary, artifacts=[("JSON report", "out/r.json")]
    )


def test_a_write_failure_is_one_line_naming_the_fix(tmp_path: Path) -> None:
    folder = tmp_path / "a-folder"
    folder.mkdir()
    written, failures = write_ci_reports(small_summary(), github_summary=folder, pr_comment=folder)
    assert written == []
    assert [line.split(" was NOT written: ")[0] for line in failures] == [
        f"embedbench: the GitHub job summary {folder}",
        f"embedbench: the PR comment {folder}",
    ]
    assert failures[0].endswith("Fix: choose another path with --embedbench-github-summary")
    assert failures[1].endswith("Fix: choose another path with --embedbench-pr-comment")


def test_a_run_where_nothing_ran_names_the_ci_files_asked_for(tmp_path: Path) -> None:
    none: dict[str, Any] = {"json_path": None, "html_path": None, "csv_dir": None, "md_path": None}
    assert nothing_ran(**none, update_baseline=None) == []
    assert nothing_ran(
        **none, update_baseline=None, github_summary=tmp_path / "g", pr_comment=tmp_path / "c"
    ) == [
        "embedbench: no benchmark test ran; the GitHub job summary and PR comment were not "
        "written, existing files left as they were"
    ]


def test_the_run_url_needs_all_three_variables() -> None:
    env = {"GITHUB_SERVER_URL": "https://github.com/", "GITHUB_REPOSITORY": "o/r"}
    assert github_run_url(env) is None
    assert (
        github_run_url({**env, "GITHUB_RUN_ID": "42"}) == "https://github.com/o/r/actions/runs/42"
    )


# -- JUnit --------------------------------------------------------------------------------------


def test_junit_properties_of_a_record() -> None:
    record = {
        "model": "bm25",
        "dataset": "tiny",
        "result": {
            "queries": 4,
            "metrics": {
                "recall@10": {"value": 1.0, "low": 1.0, "high": 1.0, "n": 4},
                "ndcg@10": {"value": 0.75, "low": 0.5, "high": None, "n": 4},
                "mrr@10": {"value": float("nan")},
            },
            "latency": {"p50_ms": 0.5, "p95_ms": 1.5, "p95_interval_ms": [1.0, 2.0]},
        },
        "baseline": {"status": "regressed"},
    }
    assert junit_properties(record) == [
        ("embedbench.model", "bm25"),
        ("embedbench.dataset", "tiny"),
        ("embedbench.queries", 4),
        ("embedbench.ndcg@10", 0.75),
        ("embedbench.ndcg@10.low", 0.5),
        ("embedbench.recall@10", 1.0),
        ("embedbench.recall@10.low", 1.0),
        ("embedbench.recall@10.high", 1.0),
        ("embedbench.p50_ms", 0.5),
        ("embedbench.p95_ms", 1.5),
        ("embedbench.p95_ms.low", 1.0),
        ("embedbench.p95_ms.high", 2.0),
        ("embedbench.gate", "regressed"),
    ]
    stressed = {"model": "h", "dataset": "tiny", "workload": {"id": "noise:typo"}, "result": None}
    assert junit_properties(stressed) == [
        ("embedbench.model", "h"),
        ("embedbench.dataset", "tiny"),
        ("embedbench.workload", "noise:typo"),
        ("embedbench.gate", "none"),
    ]


# -- options ------------------------------------------------------------------------------------


def _resolve(tmp_path: Path, cli: dict[str, Any] | None = None, **ini: Any) -> Options:
    return Options.resolve(
        cli=(cli or {}).get, ini=ini.get, cwd=tmp_path / "cwd", ini_base=tmp_path / "ini"
    )


def test_the_ci_options_are_paths_from_where_they_were_given(tmp_path: Path) -> None:
    options = _resolve(
        tmp_path,
        {"embedbench_pr_comment": "c.md"},
        embedbench_github_summary="g.md",
        embedbench_pr_comment="ignored.md",
    )
    assert options.github_summary == tmp_path / "ini" / "g.md"
    assert options.pr_comment == tmp_path / "cwd" / "c.md"
    config = options.configuration()
    assert config["github_summary"] == options.github_summary
    assert config["pr_comment"] == options.pr_comment


def test_the_switch_and_a_summary_path_follow_command_line_over_ini(tmp_path: Path) -> None:
    off, path = "embedbench_no_github_summary", "embedbench_github_summary"
    # the switch alone, on either level: no path, and the plugin leaves $GITHUB_STEP_SUMMARY
    for options in (_resolve(tmp_path, {off: True}), _resolve(tmp_path, **{off: True})):
        assert options.no_github_summary and options.github_summary is None
    # the command line's switch drops the ini's path ...
    options = _resolve(tmp_path, {off: True}, **{path: "g.md"})
    assert options.no_github_summary and options.github_summary is None
    assert options.configuration()["github_summary"] is None
    # ... and the command line's path wins over the ini's switch
    options = _resolve(tmp_path, {path: "g.md"}, **{off: True})
    assert not options.no_github_summary
    assert options.github_summary == tmp_path / "cwd" / "g.md"
    # both on one level say two things: the error names them
    with pytest.raises(
        ConfigError,
        match=r"^--embedbench-no-github-summary and --embedbench-github-summary conflict: one "
        r"turns the GitHub job summary off, the other names its file; keep one$",
    ):
        _resolve(tmp_path, {off: True, path: "g.md"})
    with pytest.raises(
        ConfigError,
        match=r"^ini options embedbench_no_github_summary and embedbench_github_summary conflict",
    ):
        _resolve(tmp_path, **{off: True, path: "g.md"})


def test_a_ci_file_shared_with_another_report_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"--embedbench-md and --embedbench-pr-comment both"):
        _resolve(tmp_path, {"embedbench_md": "s.md", "embedbench_pr_comment": "s.md"})
    with pytest.raises(
        ConfigError, match=r"--embedbench-json and --embedbench-github-summary both write"
    ):
        _resolve(tmp_path, {"embedbench_json": "x", "embedbench_github_summary": "x"})

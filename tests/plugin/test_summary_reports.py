"""One summary, every writer: a stress run with cut-offs written as JSON, HTML, CSV and Markdown
holds the terminal's figures in each file (and the JSON's score distributions under the
cut-offs, in the CSV and Markdown), ``embedbench report`` on its JSON gives the same
bytes (the GitHub job summary and PR comment included) and the terminal's text, and the
summary read back from the JSON is the run's."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from pytest_embedbench.cli import main
from pytest_embedbench.config.options import CSV_FILES
from pytest_embedbench.plugin import hooks as plugin
from pytest_embedbench.report.summary.run import Summary

TESTS = """
import pytest

@pytest.mark.embedbench(models=["bm25", "hashing:h"], dataset="tiny",
                        stress=["noise:typo", "noise:case*3", "needle:2k@0,1", "chunk-size:8,16"])
def test_robust(retrieval):
    assert retrieval.ndcg10 >= 0.0

@pytest.mark.embedbench(models=["bm25", "hashing:h"], dataset="tiny")
def test_cut(retrieval):
    assert retrieval.cutoffs.calibration_queries == 2
"""
OUTPUTS = (
    "-p",
    "no:cacheprovider",
    "--embedbench-json=out/r.json",
    "--embedbench-html=out/r.html",
    "--embedbench-csv=out/csv",
    "--embedbench-md=out/r.md",
    "--embedbench-github-summary=out/job-summary.md",
    "--embedbench-pr-comment=out/comment.md",
)


def _section(lines: list[str]) -> list[str]:
    """The embedbench section of a pytest run's output, up to the lines naming its files."""
    start = next(i for i, line in enumerate(lines) if "= embedbench =" in line) + 1
    while not lines[start]:
        start += 1
    end = next(i for i in range(start, len(lines)) if lines[i].startswith("JSON report: "))
    return lines[start:end]


def _terminal_tables(lines: list[str]) -> dict[str, list[list[str]]]:
    """The stress and cut-off tables the terminal printed: title -> [header, *rows], each
    cell cut at the columns of tabulate's dashed rule."""
    tables: dict[str, list[list[str]]] = {}
    for i, title in enumerate(lines):
        if not title.startswith(("stress on ", "cut-offs on ")):
            continue
        if i + 2 >= len(lines) or not set(lines[i + 2]) <= {"-", " "} or not lines[i + 2]:
            tables[title] = []  # a title without a table (no model with a cut-off)
            continue
        rule = lines[i + 2]
        spans, start = [], None
        for j, ch in enumerate(rule + " "):
            if ch == "-" and start is None:
                start = j
            elif ch != "-" and start is not None:
                spans.append((start, j))
                start = None
        spans[-1] = (spans[-1][0], 10_000)  # the last column may run past its rule

        rows = [_cut(lines[i + 1], spans)]
        for line in lines[i + 3 :]:
            if not line.strip() or line.startswith("held-out rates"):
                break
            rows.append(_cut(line, spans))
        tables[title] = rows
    return tables


def _cut(line: str, spans: list[tuple[int, int]]) -> list[str]:
    return [line[a:b].strip() for a, b in spans]


def _markdown_tables(text: str) -> dict[str, list[list[str]]]:
    """The Markdown's titled tables: ``**title**`` -> [header, *rows]."""
    tables: dict[str, list[list[str]]] = {}
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if not (line.startswith("**") and line.endswith("**")) or "**" in line[2:-2]:
            continue
        rows = []
        for row in lines[i + 2 :]:
            if not row.startswith("|"):
                break
            rows.append([c.strip() for c in row[1:-1].split(" | ")])
        title = line[2:-2].replace("\\\\", "\\")
        tables[title] = [rows[0], *rows[2:]] if rows else []
    return tables


def _csv(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as fh:
        return list(csv.DictReader(fh))


@pytest.fixture
def run(project: pytest.Pytester) -> pytest.RunResult:
    project.makepyfile(test_all=TESTS)
    result = project.runpytest(*OUTPUTS)
    assert result.ret == 0, result.stdout.str()
    return result


def test_markdown_and_csv_hold_the_terminals_stress_and_cutoff_figures(
    project: pytest.Pytester, run: pytest.RunResult
) -> None:
    out = project.path / "out"
    terminal = _terminal_tables(_section(run.stdout.lines))
    titles = list(terminal)
    assert titles == [
        "stress on 'tiny': chunk size vs the configured chunking (paired)",
        "stress on 'tiny': query noise (paired, 95% interval)",
        "stress on 'tiny': needle hit@1 for bm25 (depth x length; chance 0.10)",
        "stress on 'tiny': needle hit@1 for h (depth x length; chance 0.10)",
        "cut-offs on 'tiny' (calibrated on half the queries, shown on the other)",
    ]
    assert all(len(rows) > 1 for rows in terminal.values()), terminal
    # the Markdown holds the very tables, cell for cell
    markdown = _markdown_tables((out / "r.md").read_text())
    for title, rows in terminal.items():
        assert markdown.get(title) == rows, title
    # and the CSV the same figures, as numbers
    noise = {(r[0], r[1]): r for r in terminal[titles[1]][1:]}
    chunks = {(r[0], r[1]): r for r in terminal[titles[0]][1:]}
    stress = _csv(out / "csv" / "stress.csv")
    assert len(stress) == 2 * (2 + 2 + 2)  # two models x (two noises, two needles, two sizes)
    for row in stress:
        if row["kind"] == "needle":
            grid = terminal[
                f"stress on 'tiny': needle hit@1 for {row['model']} (depth x length; chance 0.10)"
            ]
            depth_row = next(r for r in grid[1:] if r[0] == f"{float(row['depth']):g}")
            cell = depth_row[grid[0].index(f"{row['length']} tok")]
            assert cell.split()[0] == f"{float(row['value']):.2f}"
            continue
        shown = (
            noise[(row["model"], row["workload"])]
            if row["kind"] == "noise"
            else chunks[(row["model"], row["chunk_tokens"])]
        )
        clean, stressed, delta = shown[-4], shown[-3], shown[-2]
        assert clean == f"{float(row['clean']):.4f}" and stressed == f"{float(row['value']):.4f}"
        assert delta.startswith(
            f"{float(row['delta']):+.4f} [{float(row['delta_low']):+.3f}, "
            f"{float(row['delta_high']):+.3f}]"
        )
        assert delta.endswith(row["verdict"])
    levels = {(r[0], r[1]): r for r in terminal[titles[4]][1:]}
    cutoffs = _csv(out / "csv" / "cutoffs.csv")
    assert {r["model"] for r in cutoffs} == {"bm25", "h"}
    (bm25,) = [r for r in cutoffs if r["model"] == "bm25"]  # no cut-off for bm25's scores
    assert bm25["meaningful"] == "False" and bm25["reason"].startswith("bm25 scores are sums")
    assert not any(model == "bm25" for model, _ in levels)
    for row in (r for r in cutoffs if r["model"] == "h"):
        shown = levels[("h", row["level"])]
        threshold = "none" if row["threshold"] == "" else f"{float(row['threshold']):.4f}"
        assert shown[2] == threshold
        for column, key in ((4, "keeps_relevant"), (5, "lets_random")):
            expected = "-" if row[key] == "" else f"{100 * float(row[key]):.2f}%"
            assert shown[column].split(" ")[0] == expected, (row["level"], key)


def test_markdown_and_csv_hold_the_cutoff_score_distributions(
    project: pytest.Pytester, run: pytest.RunResult
) -> None:
    """The held-out score histograms the HTML draws under the cut-offs: in cutoff_scores.csv
    the JSON's counts and bin edges, in the Markdown the same bins as a table, with each
    cut-off the terminal printed in the bin that holds its threshold."""
    out = project.path / "out"
    report = json.loads((out / "r.json").read_text())
    (cut,) = [t for t in report["tests"] if t["nodeid"] == "test_all.py::test_cut[h]"]
    dist = cut["result"]["cutoffs"]["distribution"]
    assert len(dist["edges"]) == len(dist["relevant"]) + 1 > 2
    rows = _csv(out / "csv" / "cutoff_scores.csv")
    assert {r["model"] for r in rows} == {"h"}  # bm25's scores have no global cut-off
    assert [int(r["bin"]) for r in rows] == list(range(len(dist["relevant"])))
    assert [float(r["score_low"]) for r in rows] == dist["edges"][:-1]
    assert [float(r["score_high"]) for r in rows] == dist["edges"][1:]
    for kind in ("relevant", "random"):
        assert [int(r[kind]) for r in rows] == dist[kind]
        pairs = sum(dist[kind]) + dist[f"{kind}_unscored"]
        assert {int(r[f"{kind}_pairs"]) for r in rows} == {pairs}
        assert [float(r[f"{kind}_share"]) for r in rows] == [c / pairs for c in dist[kind]]

    # the Markdown: the CSV's bins, formatted as the other tables are
    title = "held-out pair scores of h on 'tiny', by bin, with the cut-offs above"
    table = _markdown_tables((out / "r.md").read_text())[title]
    # the header a reader sees: the CSV's columns in words, then where each cut-off falls
    header = "score from|to|relevant pairs|share of relevant|random pairs|share of random"
    assert table[0] == [*header.split("|"), "cut-offs here"]
    assert len(table) - 1 == len(rows)
    for shown, row in zip(table[1:], rows, strict=True):
        assert shown[:6] == [
            f"{float(row['score_low']):.4f}",
            f"{float(row['score_high']):.4f}",
            row["relevant"],
            f"{100 * float(row['relevant_share']):.2f}%",
            row["random"],
            f"{100 * float(row['random_share']):.2f}%",
        ]
        named = [part.split(" ")[0] for part in shown[6].split(", ") if part]
        assert named == [n for n in row["cutoffs"].split("|") if n]

    # each cut-off the terminal printed lies in the bin that names it
    terminal = _terminal_tables(_section(run.stdout.lines))
    levels = terminal["cut-offs on 'tiny' (calibrated on half the queries, shown on the other)"]
    placed = {
        part.split(" ")[0]: (part.split(" ")[1], float(bin_[0]), float(bin_[1]))
        for bin_ in table[1:]
        for part in bin_[6].split(", ")
        if part
    }
    for model, level, threshold, *_ in levels[1:]:
        if threshold == "none":
            assert level not in placed
            assert f"- {level}: no cut-off (every result kept)" in (out / "r.md").read_text()
            continue
        shown_threshold, low, high = placed[level]
        assert model == "h" and shown_threshold == threshold
        assert low - 1e-4 <= float(threshold) <= high + 1e-4


def test_embedbench_report_reproduces_every_output(
    project: pytest.Pytester,
    run: pytest.RunResult,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    out = project.path / "out"
    again = tmp_path / "again"
    args = ["report", str(out / "r.json"), "-o", str(again / "r.html"), "--csv", str(again)]
    args += ["--github-summary", str(again / "job-summary.md")]
    args += ["--pr-comment", str(again / "comment.md")]
    assert main([*args, "--md", str(again / "r.md")]) == 0
    capsys.readouterr()
    assert (again / "r.html").read_bytes() == (out / "r.html").read_bytes()
    assert (again / "r.md").read_bytes() == (out / "r.md").read_bytes()
    for name in ("job-summary.md", "comment.md"):  # the CI texts too, the files listed
        assert (again / name).read_bytes() == (out / name).read_bytes(), name
    assert "- CSV: `out/csv/cutoff_scores.csv`" in (out / "comment.md").read_text()
    for name in CSV_FILES:
        assert (again / name).read_bytes() == (out / "csv" / name).read_bytes(), name
    assert main(["report", str(out / "r.json")]) == 0
    assert capsys.readouterr().out.splitlines() == _section(run.stdout.lines)
    # the page draws the stress and cut-off sections, tables beside, not a dump of raw keys
    page = (out / "r.html").read_text()
    assert page.count('<figure class="grid needle"><svg') == 2  # a heatmap per model
    assert page.count('<figure class="stress-chart noise"><svg') == 1
    assert page.count('<figure class="stress-chart chunks"><svg') == 1
    assert '<figure class="grid cutoff"><svg' in page and '<table class="cutoffs">' in page
    assert "keeps_relevant_low" not in page and "expected_random_high" not in page


def test_the_summary_read_back_from_the_json_is_the_runs(project: pytest.Pytester) -> None:
    project.makepyfile(test_all=TESTS)
    recorder = project.inline_run(*OUTPUTS)
    recorder.assertoutcome(passed=14)
    (call,) = recorder.getcalls("pytest_terminal_summary")
    summary = plugin._session(call.config).summary
    assert summary is not None and summary.stress and summary.cutoffs
    report = json.loads((project.path / "out" / "r.json").read_text())
    assert Summary.from_json(report) == summary

"""Terminal escapes in the user's data (issue 42 item 3): a model, dataset, query and document
name holding ``ESC ] 0 ; pwned BEL ESC [ 2 J`` (it retitles a terminal and clears a CI log
viewer's screen) and a C1 control (CSI, U+009B) reaches no terminal, report or job summary
raw: each shows the name with its controls written as ``\\xNN``, readable."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from pytest_embedbench.cli import main

from .conftest import CORPUS, MODES, QUERIES, set_ini, write_beir, write_tiny

#: an OSC that retitles the terminal (ended by BEL), a CSI that clears it, a C1 CSI
EVIL = "\x1b]0;pwned\x07\x1b[2J\x9b"
#: what a reader sees instead
SHOWN = "\\x1b]0;pwned\\x07\\x1b[2J\\x9b"
#: the characters that must never come out raw: C0 but tab and newline, DEL, C1
RAW = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")

MODULE = f"""
import pytest
from pytest_embedbench import ModelSpec

EVIL = {EVIL!r}
MODELS = [ModelSpec("hashing:h", name="good" + EVIL), ModelSpec("hashing:h", name="weak", dim=2)]


@pytest.mark.embedbench(models=MODELS, dataset="tiny" + EVIL)
def test_search(retrieval):
    pass


@pytest.mark.embedbench(models=[MODELS[1]], dataset="tiny" + EVIL)
def test_fails(retrieval):
    assert retrieval.ndcg10 >= 0.999
"""


def raw_controls(text: str) -> list[str]:
    return sorted(set(RAW.findall(text)))


@pytest.fixture
def evil_project(pytester: pytest.Pytester) -> pytest.Pytester:
    """The tiny dataset with a control-laden query id and text and document id, under a
    dataset name that holds them too (a double-quoted YAML key)."""
    write_tiny(pytester)
    corpus = [dict(d, _id=d["_id"] + EVIL) if d["_id"] == "d1" else d for d in CORPUS]
    queries = [
        {"_id": "q1" + EVIL, "text": q["text"] + EVIL} if q["_id"] == "q1" else q for q in QUERIES
    ]
    qrels = f"query-id\tcorpus-id\tscore\nq1{EVIL}\td1{EVIL}\t2\nq2\td3\t1\nq3\td2\t2\nq4\td6\t1\n"
    write_beir(pytester.path / "data" / "evil", corpus, queries, qrels)
    key = json.dumps("tiny" + EVIL)  # a JSON string is a YAML double-quoted one
    pytester.makefile(".yaml", embedbench=f"datasets:\n  {key}: {{path: data/evil}}\n")
    set_ini(pytester)
    pytester.makepyfile(test_evil=MODULE)
    return pytester


@pytest.mark.parametrize("mode", MODES)
def test_no_report_and_no_terminal_line_holds_a_raw_control(
    evil_project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, mode: list[str]
) -> None:
    step = evil_project.path / "step.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(step))
    result = evil_project.runpytest(
        *mode,
        "-rA",
        f"--embedbench-reference=good{EVIL}",
        "--embedbench-json=out/r.json",
        "--embedbench-html=out/r.html",
        "--embedbench-md=out/r.md",
        "--embedbench-csv=out/csv",
        "--embedbench-pr-comment=out/comment.md",
    )
    result.assert_outcomes(passed=2, failed=1)
    terminal = result.stdout.str() + result.stderr.str()
    out = evil_project.path / "out"
    files = {path.name: path for path in [*out.rglob("*.*"), step]}
    assert {"r.json", "r.html", "r.md", "comment.md", "step.md", "queries.csv"} <= set(files)
    texts = {name: path.read_text(encoding="utf-8") for name, path in files.items()}
    leaks = {name: raw_controls(text) for name, text in {**texts, "terminal": terminal}.items()}
    assert leaks == dict.fromkeys(leaks, [])
    # the names read as what they hold: the table, the failing assertion's explanation
    assert f"good{SHOWN}" in terminal
    result.stdout.fnmatch_lines(
        [
            f"*over 4 queries (weak on tiny{SHOWN})",
            f"*worst queries: *q1{SHOWN} *",
            "*= embedbench =*",
            f"dataset 'tiny{SHOWN}' (4 queries, 6 documents)",
            f"good{SHOWN} *",
        ]
    )
    # JSON escapes every control itself and keeps the names whole
    report = json.loads(texts["r.json"])
    assert {t["model"] for t in report["tests"]} >= {"good" + EVIL, "weak"}
    assert {t["dataset"] for t in report["tests"]} == {"tiny" + EVIL}
    # each writer shows the names, escaped its own way on top
    assert f"good{SHOWN}" in texts["r.html"]
    assert f"q1{SHOWN}" in texts["r.html"]
    assert f"d1{SHOWN}" in texts["queries.csv"]
    markdown = texts["r.md"]
    assert f"good{SHOWN.replace(chr(92), chr(92) * 2)}" in markdown  # a Markdown backslash
    assert f"q1{SHOWN.replace(chr(92), chr(92) * 2)}" in markdown  # the per-query diffs
    summary = texts["step.md"]
    assert "good\\\\x1b\\]0;pwned\\\\x07\\\\x1b\\[2J\\\\x9b" in summary  # GitHub's escapes


def test_embedbench_report_prints_the_saved_names_inert(
    evil_project: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    evil_project.runpytest("--embedbench-json=r.json").assert_outcomes(passed=2, failed=1)
    capsys.readouterr()
    assert main(["report", str(Path(evil_project.path, "r.json"))]) == 0
    printed = capsys.readouterr().out
    assert raw_controls(printed) == []
    assert f"dataset 'tiny{SHOWN}'" in printed and f"good{SHOWN}" in printed

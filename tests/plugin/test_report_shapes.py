"""``embedbench report`` on a JSON report whose tests, results or summary are malformed: an
error naming the file and the key path and exit status 2, never a traceback (issue 42 item 7).

One real report is written by a pytest run (the tiny BEIR dataset, bm25 and the hashing model,
a baseline recorded and gated), then damaged: keys removed, values null, lists for objects,
objects for lists, strings for numbers."""

from __future__ import annotations

import copy
import json
import random
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pytest_embedbench.cli.main import main

from .conftest import CONFIG, CONFTEST, CORPUS, QRELS, QUERIES, write_beir

MODULE = """
import pytest

@pytest.mark.embedbench(models=["bm25", "hashing:h"], dataset="tiny")
def test_search(retrieval):
    assert retrieval.ndcg10 >= 0
"""


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A report of this version (tests with results and per-query detail, the summary
    section) with a baseline outcome of this version's shape (deltas, a per-query diff) taken
    from the examples' recorded report, so one pytest run is enough."""
    folder = tmp_path_factory.mktemp("project")
    write_beir(folder / "data" / "tiny", CORPUS, QUERIES, QRELS)
    (folder / "conftest.py").write_text(CONFTEST)
    (folder / "embedbench.yaml").write_text(CONFIG)
    (folder / "tox.ini").write_text(
        "[pytest]\nembedbench_cache_dir = .cache-embedbench\nembedbench_bootstrap = 200\n"
    )
    (folder / "test_search.py").write_text(MODULE)
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--embedbench-json=r.json"],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    data: dict[str, Any] = json.loads((folder / "r.json").read_text())
    assert data["tests"][0]["result"]["metrics"]["ndcg@10"]["n"] == 4
    data["tests"][0]["baseline"] = RECORDED["tests"][0]["baseline"]
    assert data["tests"][0]["baseline"]["deltas"]["ndcg@10"]["shared_queries"] == 52
    return data


#: the examples' report, recorded by an older version (no summary section: the summary is
#: built from its tests, comparisons and recommendations)
RECORDED: dict[str, Any] = json.loads(
    (Path(__file__).with_name("data") / "examples_bm25_report.json").read_text()
)


def _set(data: Any, path: tuple[Any, ...], value: Any) -> None:
    """``data`` with the value at ``path`` replaced (``_DROP``: the key removed)."""
    for key in path[:-1]:
        data = data[key]
    if value is _DROP:
        del data[path[-1]]
    else:
        data[path[-1]] = value


_DROP = object()


def _run_report(tmp_path: Path, data: Any, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    path = tmp_path / "damaged.json"
    path.write_text(json.dumps(data))
    status = main(["report", str(path)])
    return status, capsys.readouterr().err


#: (where, what is put there, the key path the error names, what it says)
DAMAGE = [
    (("tests", 1, "result", "metrics"), [1, 2], "tests[1].result.metrics", "expected an object"),
    (("tests", 0, "result", "metrics"), None, "tests[0].result.metrics", "expected an object"),
    (("tests", 0, "result"), [], "tests[0].result", "expected an object, got a list"),
    (("tests", 0), "a test", "tests[0]", "expected an object, got the string 'a test'"),
    (("tests", 0), None, "tests[0]", "expected an object, got null"),
    (
        ("tests", 0, "result", "metrics", "ndcg@10"),
        "high",
        "tests[0].result.metrics['ndcg@10']",
        "expected an object",
    ),
    (
        ("tests", 0, "result", "metrics", "ndcg@10", "value"),
        "0.9",
        "tests[0].result.metrics['ndcg@10'].value",
        "expected a number or null, got the string '0.9'",
    ),
    (
        ("tests", 0, "result", "metrics", "ndcg@10", "n"),
        True,
        "tests[0].result.metrics['ndcg@10'].n",
        "expected an integer, got the boolean true",
    ),
    (("tests", 0, "result", "k"), 10, "tests[0].result.k", "expected a list, got the number 10"),
    (("tests", 0, "result", "k"), ["10"], "tests[0].result.k[0]", "expected an integer"),
    (("tests", 0, "result", "latency"), 3.5, "tests[0].result.latency", "expected an object"),
    (
        ("tests", 0, "result", "per_query"),
        {"ndcg@10": [1]},
        "tests[0].result.per_query['ndcg@10']",
        "expected an object, got a list",
    ),
    (
        ("tests", 0, "result", "retrieved"),
        {"q1": "d1"},
        "tests[0].result.retrieved['q1']",
        "expected a list, got the string 'd1'",
    ),
    (("tests", 0, "status"), "won", "tests[0].status", "'won' is not one of ['error', 'failed'"),
    (("tests", 0, "k"), {"a": 1}, "tests[0].k", "expected a list, got an object"),
    (("tests", 0, "model"), 7, "tests[0].model", "expected a string, got the number 7"),
    (("tests", 0, "baseline"), "passed", "tests[0].baseline", "expected an object"),
    (
        ("tests", 0, "baseline", "status"),
        "great",
        "tests[0].baseline.status",
        "'great' is not one of",
    ),
    (
        ("tests", 0, "baseline", "failures"),
        "none",
        "tests[0].baseline.failures",
        "expected a list",
    ),
    (("tests", 0, "baseline", "deltas"), [], "tests[0].baseline.deltas", "expected an object"),
    (("summary", "datasets"), {"tiny": 1}, "summary.datasets", "expected a list, got an object"),
    (("summary", "datasets", 0), [], "summary.datasets[0]", "expected an object, got a list"),
    (("summary", "datasets", 0, "name"), None, "summary.datasets[0].name", "expected a string"),
]


@pytest.mark.parametrize(("where", "value", "key", "says"), DAMAGE, ids=[d[2] for d in DAMAGE])
def test_a_malformed_report_names_the_key_path(
    tmp_path: Path,
    report: dict[str, Any],
    capsys: pytest.CaptureFixture[str],
    where: tuple[Any, ...],
    value: Any,
    key: str,
    says: str,
) -> None:
    damaged = copy.deepcopy(report)
    _set(damaged, where, value)
    status, err = _run_report(tmp_path, damaged, capsys)
    assert status == 2
    assert err.startswith(f"embedbench report: {tmp_path / 'damaged.json'}: {key}: {says}"), err
    assert err.rstrip().endswith("(write a fresh one with pytest --embedbench-json)")


def test_a_required_key_removed_is_named(
    tmp_path: Path, report: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    damaged = copy.deepcopy(report)
    hits = damaged["tests"][0]["result"].setdefault("winning_chunks", {"q1": [{"doc_id": "d1"}]})
    hits["q1"] = [{"doc_id": "d1", "score": 1.0, "chunk_id": "d1#0", "start": 0}]
    status, err = _run_report(tmp_path, damaged, capsys)
    assert status == 2
    assert "tests[0].result.winning_chunks['q1'][0]: missing key 'end'" in err


def _paths(data: Any, at: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """Every key path under ``data``, parents before children."""
    items = data.items() if isinstance(data, dict) else enumerate(data)
    for key, value in items:
        yield (*at, key)
        if isinstance(value, (dict, list)) and value:
            yield from _paths(value, (*at, key))


#: what the sweep puts at a key path: each JSON kind that a field of another kind must refuse
KINDS: list[Any] = [_DROP, None, [], {}, "x", 1.5, -3, True, [{}], {"a": []}]


def _damaged_once(
    tmp_path: Path,
    source: dict[str, Any],
    where: tuple[Any, ...],
    rng: random.Random,
    capsys: pytest.CaptureFixture[str],
) -> bool:
    """``source`` with a random kind put at ``where``, read by ``embedbench report``: it reads
    (False), or is refused with status 2 naming the file (True); anything else fails."""
    damaged = copy.deepcopy(source)
    kind = rng.choice(KINDS)
    _set(damaged, where, kind if kind is _DROP else copy.deepcopy(kind))
    status, err = _run_report(tmp_path, damaged, capsys)
    assert status in (0, 2), (where, status, err)
    if status == 2:
        assert err.startswith(f"embedbench report: {tmp_path / 'damaged.json'}: "), err
        assert "Traceback" not in err
    return status == 2


@pytest.mark.parametrize("which", ["this version's", "recorded"])
@pytest.mark.slow  # 3-7 s idle: the fast suite keeps it under three minutes
def test_no_damage_anywhere_in_a_test_gives_a_traceback(
    tmp_path: Path, report: dict[str, Any], capsys: pytest.CaptureFixture[str], which: str
) -> None:
    """A seeded sweep: key paths of the first test (its baseline outcome included) and of the
    summary's first dataset, each given a random kind. The report reads, or fails with status
    2 naming the file and the key path; an unhandled exception fails this test."""
    source = report if which == "this version's" else RECORDED
    rng = random.Random(42)
    targets = [("tests", 0, *p) for p in _paths(source["tests"][0])]
    if "summary" in source:
        targets += [
            ("summary", "datasets", 0, *p) for p in _paths(source["summary"]["datasets"][0])
        ]
    targets = rng.sample(targets, min(len(targets), 150))
    refused = sum(_damaged_once(tmp_path, source, where, rng, capsys) for where in targets)
    assert refused > len(targets) // 4


def test_the_console_command_exits_2_without_a_traceback(
    tmp_path: Path, report: dict[str, Any]
) -> None:
    damaged = copy.deepcopy(report)
    damaged["tests"][1]["result"]["metrics"] = [0.5]
    path = tmp_path / "report.json"
    path.write_text(json.dumps(damaged))
    run = subprocess.run(
        [sys.executable, "-m", "pytest_embedbench.cli", "report", str(path)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert (run.returncode, run.stdout) == (2, "")
    assert run.stderr == (
        f"embedbench report: {path}: tests[1].result.metrics: expected an object, got a list; "
        "is it an --embedbench-json report? (write a fresh one with pytest --embedbench-json)\n"
    )


#: an older report's own sections, read when it has no summary section
LEGACY_SECTIONS = ("comparisons", "recommendations", "baseline", "stress")


@pytest.mark.parametrize(
    ("where", "value", "says"),
    [
        (("comparisons",), [1], "comparisons: expected an object, got a list"),
        (("recommendations",), "x", "recommendations: expected an object, got a string"),
        (("baseline",), [1], "baseline: expected an object, got a list"),
        (("baseline", "orphaned"), 5, "baseline.orphaned: expected a list, got a number"),
        (("stress",), [1], "stress: expected an object, got a list"),
    ],
)
def test_an_older_reports_malformed_section_is_named(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    where: tuple[str, ...],
    value: Any,
    says: str,
) -> None:
    damaged = copy.deepcopy(RECORDED)
    damaged.setdefault("baseline", {})
    _set(damaged, where, value)
    status, err = _run_report(tmp_path, damaged, capsys)
    assert status == 2 and "Traceback" not in err
    assert err.startswith(f"embedbench report: {tmp_path / 'damaged.json'}: {says}"), err


@pytest.mark.slow  # 3-7 s idle: the fast suite keeps it under three minutes
def test_no_damage_in_an_older_reports_sections_gives_a_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A seeded sweep over every key path of the recorded report's own sections (the summary
    is built from them): it reads, or fails with status 2 naming the file."""
    rng = random.Random(7)
    targets = [
        (name, *p)
        for name in LEGACY_SECTIONS
        if isinstance(RECORDED.get(name), dict)
        for p in [()] + list(_paths(RECORDED[name]))
        if p
    ] + [(name,) for name in LEGACY_SECTIONS if name in RECORDED]
    assert len(targets) > 10
    for where in rng.sample(targets, min(len(targets), 120)):
        _damaged_once(tmp_path, RECORDED, where, rng, capsys)

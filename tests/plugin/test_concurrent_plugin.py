"""Runs at the same time (issue 28, "not yet probed"): four ``pytest`` processes sharing one
embedding cache through a full run each, and a pytest-xdist worker killed under ``--dist load``
at the moment xdist's own scheduler sends it more tests. Real processes, a real SQLite file."""

from __future__ import annotations

import json
import sqlite3
from types import SimpleNamespace
from typing import Any
from unittest.mock import Mock

import pytest

from pytest_embedbench.cache.store import FILENAME
from pytest_embedbench.plugin.xdist import crash_safe_load

from .conftest import add_to_conftest
from .test_faults_plugin import barrier, finish, project, spawn, write_models_test

__all__ = ["project"]  # the fixture, imported for the tests below

#: holds each run (not its xdist workers) before its first test until EMBEDBENCH_TEST_START_N
#: runs have arrived: their cache opens, reads and writes then overlap
START_BARRIER = barrier(
    "pytest_runtestloop",
    "EMBEDBENCH_TEST_START",
    120,
    "start barrier: the other runs never arrived",
)


def results(report: dict[str, Any]) -> dict[str, Any]:
    """What a run found, test by test: status, metrics, per-query scores and rankings (not its
    timings, nor its cache counts, which depend on which run embedded a text first)."""
    keep = ("metrics", "per_query", "retrieved", "documents", "queries")
    return {t["nodeid"]: (t["status"], {k: t["result"][k] for k in keep}) for t in report["tests"]}


@pytest.mark.slow
def test_four_runs_sharing_one_cache_agree_and_leave_it_whole(project: pytest.Pytester) -> None:
    """Four cold runs of three models each start their tests together on one cache folder:
    each passes with the results of the others, no warning about the cache, no file set aside,
    one row per text and namespace; a fifth run reads every vector."""
    add_to_conftest(project, START_BARRIER)
    write_models_test(project, "test_shared.py", "m", 3)
    start = str(project.path / "start")
    runs = [
        spawn(
            project,
            f"--embedbench-json=r{i}.json",
            "-p",
            "no:randomly",
            EMBEDBENCH_TEST_START=start,
            EMBEDBENCH_TEST_START_N="4",
        )
        for i in range(4)
    ]
    outs = []
    for proc in runs:
        code, out = finish(proc, timeout=300)
        assert code == 0, out
        assert "3 passed" in out, out
        assert "embedding cache" not in out, out  # no warning: locked, corrupt, not stored
        outs.append(out)
    reports = [json.loads((project.path / f"r{i}.json").read_text()) for i in range(4)]
    assert all(results(r) == results(reports[0]) for r in reports[1:])
    assert len(results(reports[0])) == 3
    for test in (t["result"] for r in reports for t in r["tests"]):  # every text, hit or not
        assert test["cache"]["hits"] + test["cache"]["misses"] == 60
        assert test["query_cache"]["hits"] + test["query_cache"]["misses"] == 60
    cache_dir = project.path / ".cache-embedbench"
    assert not [p.name for p in cache_dir.iterdir() if ".corrupt-" in p.name]
    conn = sqlite3.connect(cache_dir / FILENAME)
    assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
    counts = dict(
        conn.execute(
            "SELECT n.name, COUNT(*) FROM entries e JOIN namespaces n ON n.id = e.ns"
            " GROUP BY n.name"
        ).fetchall()
    )
    conn.close()
    assert len(counts) == 6 and set(counts.values()) == {60}, counts  # 3 models x docs, queries

    code, out = finish(spawn(project, "--embedbench-json=warm.json", "-p", "no:randomly"))
    assert code == 0, out
    warm = json.loads((project.path / "warm.json").read_text())
    assert results(warm) == results(reports[0])
    assert all(t["result"]["cache"]["misses"] == 0 for t in warm["tests"])
    assert all(t["result"]["query_cache"]["misses"] == 0 for t in warm["tests"])


# -- a worker killed under --dist load -------------------------------------------------------

#: one worker holds tests 0-9 of 40 (xdist's first chunk), so after test 3 completes it holds
#: six, below xdist's minimum of seven, and the controller sends it more. Test 4 kills the worker.
#: The two hooks force the order of the race: the controller takes test 3's completion only
#: once the worker is dead, and its receiver thread (which would read the closed pipe and mark
#: the worker down) is held meanwhile. xdist's LoadScheduling then sent into a closed channel:
#: INTERNALERROR, and 35 tests never ran
RACE_CONFTEST = """
import os, time
from pathlib import Path
import pytest

HERE = Path(__file__).parent


def _dead(pid):
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return True
    return state in ("Z", "X")


def _wait_for(check, what):
    deadline = time.monotonic() + 60
    while not check():
        assert time.monotonic() < deadline, f"{what} never happened"
        time.sleep(0.01)


@pytest.hookimpl(tryfirst=True)
def pytest_report_from_serializable(config, data):
    if os.environ.get("PYTEST_XDIST_WORKER") or data.get("$report_type") != "TestReport":
        return None
    if data.get("when") == "setup" and data.get("nodeid", "").endswith("test_step[4]"):
        pid = int((HERE / "worker-pid").read_text())
        _wait_for(lambda: _dead(pid), "the worker's death")
        (HERE / "worker-dead").touch()
        time.sleep(1.0)  # the main thread takes test 3's completion and sends
    return None


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_logreport(report):
    if os.environ.get("PYTEST_XDIST_WORKER"):
        return
    if report.when == "teardown" and report.nodeid.endswith("test_step[3]"):
        _wait_for((HERE / "worker-dead").exists, "the worker's death")
"""

RACE_TEST = """
import os
from pathlib import Path
import pytest

HERE = Path(__file__).parent

@pytest.mark.parametrize("n", range(40))
def test_step(n):
    if n == 3:
        (HERE / "worker-pid").write_text(str(os.getpid()))
    if n == 4:
        os.kill(os.getpid(), 9)
"""


@pytest.mark.slow
def test_a_worker_killed_as_xdist_load_sends_it_more_is_one_failure(
    pytester: pytest.Pytester,
) -> None:
    pytester.makeconftest(RACE_CONFTEST)
    pytester.makepyfile(test_race=RACE_TEST)
    code, out = finish(
        spawn(pytester, "-n", "1", "--dist", "load", "-p", "no:randomly"), timeout=180
    )
    assert "INTERNALERROR" not in out, out
    assert "replacing crashed worker" in out, out
    assert "39 passed" in out and "1 failed" in out, out
    failures = out.split("short test summary info")[0]
    assert failures.count("crashed while running 'test_race.py::test_step[4]'") == 1, out
    assert code == pytest.ExitCode.TESTS_FAILED, out


def test_load_scheduling_outlives_a_send_to_a_dead_worker() -> None:
    """The same race without processes: the send fails, then xdist reports the death; the test
    that was running is blamed and the rest go to the other worker."""
    ids = [f"test_x.py::test_step[{n}]" for n in range(40)]
    config = SimpleNamespace(
        getvalue=lambda name: ["2*popen"] if name == "tx" else None,
        getoption=lambda name: None,
    )
    sched = crash_safe_load(config, Mock())
    workers = [Mock(gateway=SimpleNamespace(id=f"gw{i}"), shutting_down=False) for i in (0, 1)]
    for worker in workers:
        sched.add_node(worker)
        sched.add_node_collection(worker, ids)
    sched.schedule()
    gw0, gw1 = workers
    held = list(sched.node2pending[gw0])
    gw0.send_runtest_some.side_effect = OSError("cannot send (already closed?)")
    for index in held[:-2]:  # gw0 falls below the minimum: the controller sends, gw0 is dead
        sched.mark_test_complete(gw0, index)
    assert gw0.send_runtest_some.call_count > 1  # the first call was the initial chunk
    running = sched.node2pending[gw0][0]
    assert sched.remove_node(gw0) == ids[running]
    queued = set(sched.pending) | set(sched.node2pending[gw1])
    done = set(held[:-2]) | {running}
    assert queued == set(range(40)) - done  # nothing lost, nothing run twice

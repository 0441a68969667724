"""Faults around the files a run writes: concurrent baseline updates, a read-only folder, a full
disk, a killed xdist worker. Real processes, real files, real mounts (issue 9)."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any
from unittest.mock import Mock

import pytest
from filelock import FileLock

from pytest_embedbench.plugin.xdist import crash_safe_loadgroup

from .conftest import (
    CONFTEST,
    add_to_conftest,
    bench_module,
    fill,
    make_dataset,
    run_size_limited,
    write_beir,
)

EXIT_ARTIFACT_FAILED = 6


def barrier(hook: str, env: str, seconds: int, timeout_message: str) -> str:
    """A conftest hook ``hook`` that holds each run (not its xdist workers) until as many runs as
    ``$<env>_N`` have arrived in the folder ``$<env>``; ``timeout_message`` after ``seconds``."""
    return f"""
import os, time
import pytest

@pytest.hookimpl(tryfirst=True)
def {hook}(session):
    folder = os.environ.get("{env}")
    if not folder or hasattr(session.config, "workerinput"):
        return
    os.makedirs(folder, exist_ok=True)
    open(os.path.join(folder, str(os.getpid())), "w").close()
    deadline = time.time() + {seconds}
    while len(os.listdir(folder)) < int(os.environ["{env}_N"]):
        if time.time() > deadline:
            raise RuntimeError({timeout_message!r})
        time.sleep(0.02)
"""


#: holds each run at session finish, before the plugin writes anything, until as many runs as
#: EMBEDBENCH_TEST_BARRIER_N have arrived: their writes then overlap
BARRIER = barrier(
    "pytest_sessionfinish", "EMBEDBENCH_TEST_BARRIER", 60, "barrier: the other run never arrived"
)

MODELS_TEST = """
import os
import pytest
from pytest_embedbench import ModelSpec

MODELS = [ModelSpec("hashing:h", name=f"{prefix}{{i}}", dim=32 + i) for i in range({n})]

@pytest.mark.embedbench(dataset="topics", models=MODELS)
def test_search(retrieval):
    pass
"""


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    make_dataset(pytester)
    pytester.makeconftest(CONFTEST + BARRIER)
    pytester.makefile(".yaml", embedbench="datasets:\n  topics: {path: data/topics}\n")
    pytester.makeini(
        "[pytest]\nembedbench_cache_dir = .cache-embedbench\nembedbench_bootstrap = 500\n"
    )
    return pytester


def write_models_test(pytester: pytest.Pytester, name: str, prefix: str, n: int) -> None:
    pytester.makepyfile(**{name: MODELS_TEST.replace("{prefix}", prefix).format(n=n)})


def spawn(pytester: pytest.Pytester, *args: str, **env: str) -> subprocess.Popen:
    """A real `pytest` process in the project (the worktree's plugin through PYTHONPATH)."""
    return subprocess.Popen(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args],
        cwd=pytester.path,
        env={**os.environ, **env},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def finish(proc: subprocess.Popen, timeout: float = 180) -> tuple[int, str]:
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, _ = proc.communicate()
        pytest.fail(f"the run hung (killed after {timeout} s); its output:\n{out}")
    return proc.returncode, out


def entries(pytester: pytest.Pytester) -> dict:
    return json.loads((pytester.path / ".embedbench" / "baseline.json").read_text())["entries"]


# -- item 1: concurrent updates ------------------------------------------------------------


@pytest.mark.slow  # a whole pytest run or several processes: the full suite
def test_two_concurrent_updates_keep_each_others_entries(project: pytest.Pytester) -> None:
    write_models_test(project, "test_one.py", "one", 5)
    write_models_test(project, "test_two.py", "two", 5)
    barrier = str(project.path / "barrier")
    runs = [
        spawn(
            project,
            "--embedbench-update-baseline",
            "-k",
            word,
            EMBEDBENCH_TEST_BARRIER=barrier,
            EMBEDBENCH_TEST_BARRIER_N="2",
        )
        for word in ("one", "two")
    ]
    for proc in runs:
        code, out = finish(proc)
        assert code == 0, out
        assert "5 entries added, 0 replaced" in out, out
    found = entries(project)
    assert sorted(found) == sorted(
        [f"test_one.py::test_search[one{i}]" for i in range(5)]
        + [f"test_two.py::test_search[two{i}]" for i in range(5)]
    )


@pytest.mark.slow  # a whole pytest run or several processes: the full suite
def test_an_update_waits_for_the_lock_and_merges_what_was_written_meanwhile(
    project: pytest.Pytester,
) -> None:
    write_models_test(project, "test_one.py", "one", 3)
    path = project.path / ".embedbench" / "baseline.json"
    path.parent.mkdir()
    barrier = project.path / "barrier"
    other = {"per_query": {"ndcg@10": {"q00": 1.0}}, "model": "from-another-run"}
    with FileLock(str(path.parent / ".baseline.json.lock")):
        proc = spawn(
            project,
            "--embedbench-update-baseline",
            EMBEDBENCH_TEST_BARRIER=str(barrier),
            EMBEDBENCH_TEST_BARRIER_N="1",
        )
        deadline = time.time() + 120
        while not (barrier.is_dir() and any(barrier.iterdir())):
            assert proc.poll() is None and time.time() < deadline, "the run never got to write"
            time.sleep(0.05)
        time.sleep(1.5)
        assert proc.poll() is None, "the run wrote without waiting for the lock"
        # what another run writes while holding the lock
        path.write_text(json.dumps({"schema_version": 1, "entries": {"x.py::t[a]": other}}))
    code, out = finish(proc)
    assert code == 0, out
    found = entries(project)
    assert found["x.py::t[a]"] == other
    assert {f"test_one.py::test_search[one{i}]" for i in range(3)} <= set(found)


# -- item 2: artifact write failures -------------------------------------------------------


@pytest.fixture
def mount_point(tmp_path: Path) -> Iterator[Any]:
    """Mount a tmpfs with the given options at a fresh folder; skip where mounting fails."""
    mounted: list[Path] = []

    def mount(options: str) -> Path:
        target = tmp_path / f"mnt{len(mounted)}"
        target.mkdir()
        done = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(target)],
            capture_output=True,
            text=True,
            check=False,
        )
        if done.returncode != 0:
            pytest.skip(f"cannot mount a tmpfs here ({done.stderr.strip()})")
        mounted.append(target)
        return target

    yield mount
    for target in reversed(mounted):
        subprocess.run(["umount", "-l", str(target)], check=False)


def read_only_folder(tmp_path: Path, mount_point: Any) -> Path:
    """A folder this process cannot write to: chmod where that binds (not root), a read-only
    tmpfs otherwise (root ignores file modes)."""
    if os.geteuid() != 0:
        folder = tmp_path / "ro"
        folder.mkdir()
        folder.chmod(0o555)
        return folder
    return mount_point("ro,size=64k")


def full_folder(mount_point: Any) -> Path:
    """A tmpfs that is full: a filler file grown until the kernel says ENOSPC."""
    folder = mount_point("size=128k")
    fill(folder, 4096)
    return folder


def test_a_json_report_into_a_read_only_folder_is_a_clear_failure(
    project: pytest.Pytester, tmp_path: Path, mount_point: Any
) -> None:
    write_models_test(project, "test_one.py", "one", 1)
    folder = read_only_folder(tmp_path, mount_point)
    result = project.runpytest("--embedbench-json", str(folder / "r.json"))
    result.assert_outcomes(passed=1)
    assert result.ret == EXIT_ARTIFACT_FAILED
    assert "Traceback" not in result.stdout.str() + result.stderr.str()
    result.stdout.fnmatch_lines(
        [
            "*embedbench*",
            "model *nDCG@10*",  # the table comes first
            f"embedbench: the JSON report {folder / 'r.json'} was NOT written: *"
            f"Fix: make {folder} writable, or choose another path with --embedbench-json=PATH",
        ]
    )
    assert "JSON report: " not in result.stdout.str()  # nothing claims it was written
    assert list(folder.iterdir()) == []


def test_a_report_path_that_is_a_folder_names_the_path_not_a_temporary_file(
    project: pytest.Pytester,
) -> None:
    write_models_test(project, "test_one.py", "one", 1)
    folder = project.mkdir("out")
    result = project.runpytest("--embedbench-html", str(folder))
    result.assert_outcomes(passed=1)
    assert result.ret == EXIT_ARTIFACT_FAILED
    result.stdout.fnmatch_lines(
        [
            f"embedbench: the HTML report {folder} was NOT written: it is a folder; give a file"
            " path. Fix: *"
        ]
    )
    assert ".tmp" not in result.stdout.str() and list(folder.iterdir()) == []


def test_a_full_disk_fails_the_report_and_the_baseline_and_leaves_no_temp_file(
    project: pytest.Pytester, mount_point: Any
) -> None:
    write_models_test(project, "test_one.py", "one", 2)
    folder = full_folder(mount_point)
    result = project.runpytest(
        "--embedbench-json",
        str(folder / "r.json"),
        "--embedbench-baseline",
        str(folder / "baseline.json"),
        "--embedbench-update-baseline",
    )
    result.assert_outcomes(passed=2)
    assert result.ret == EXIT_ARTIFACT_FAILED
    result.stdout.fnmatch_lines(
        [
            "model *nDCG@10*",
            f"embedbench: the baseline {folder / 'baseline.json'} was NOT written: No space left "
            "on device. Fix: free space on that disk, or choose another file with "
            "--embedbench-baseline=PATH and re-run the update",
            f"embedbench: the JSON report {folder / 'r.json'} was NOT written: No space left on "
            "device. Fix: free space on that disk, or *",
        ]
    )
    assert "entries added" not in result.stdout.str()
    left = sorted(p.name for p in folder.iterdir())
    assert [n for n in left if n.endswith(".tmp")] == []  # the partial temp files are gone
    assert "r.json" not in left and "baseline.json" not in left


@pytest.mark.slow  # a whole pytest run or several processes: the full suite
def test_writes_the_kernel_refuses_fail_the_run_where_no_tmpfs_can_be_mounted(
    project: pytest.Pytester,
) -> None:
    """The OS-level stand-in for a full disk that needs no mount: RLIMIT_FSIZE makes the kernel
    refuse every write past a size (EFBIG; Python ignores SIGXFSZ), so the report and baseline
    writes fail as they would on a full disk, from the OS, in a real run."""
    write_models_test(project, "test_one.py", "one", 2)
    limit = 2048  # below the JSON report and the two-entry baseline, above pytest's own files
    code, out = run_size_limited(
        project.path, limit, "--embedbench-json=r.json", "--embedbench-update-baseline"
    )
    assert "2 passed" in out, out
    assert code == EXIT_ARTIFACT_FAILED, out
    assert "Traceback" not in out and "INTERNALERROR" not in out, out
    baseline_path = project.path / ".embedbench" / "baseline.json"
    table = out.index("nDCG@10")
    for what, path in (("baseline", baseline_path), ("JSON report", project.path / "r.json")):
        line = f"embedbench: the {what} {path} was NOT written: File too large. Fix: "
        assert line in out, out
        assert out.index(line) > table  # after the table
        assert not path.exists()
    assert "entries added" not in out
    left = [p.name for p in project.path.rglob("*.tmp")]
    assert left == []  # the partial temp files are gone


def test_a_failed_write_does_not_hide_failing_tests(
    project: pytest.Pytester, tmp_path: Path, mount_point: Any
) -> None:
    project.makepyfile(test_fail="def test_fails():\n    assert False\n")
    write_models_test(project, "test_one.py", "one", 1)  # a benchmark test: a report to write
    folder = read_only_folder(tmp_path, mount_point)
    result = project.runpytest("--embedbench-json", str(folder / "r.json"))
    result.assert_outcomes(passed=1, failed=1)
    assert result.ret == pytest.ExitCode.TESTS_FAILED  # the worse status stands
    result.stdout.fnmatch_lines(["*the JSON report * was NOT written*"])


# -- item 5: a killed xdist worker ---------------------------------------------------------

KILLED = """
import os
import pytest
from pytest_embedbench import ModelSpec

MODELS = [ModelSpec("hashing:h", name=f"m{i}", dim=32 + i) for i in range(4)]

@pytest.mark.embedbench(dataset="topics", models=MODELS)
@pytest.mark.parametrize("n", range(4))
def test_search(retrieval, n):
    if retrieval.name == "m1" and n == 2:
        os.kill(os.getpid(), 9)
"""


@pytest.mark.parametrize(
    "dist",
    [
        pytest.param([], id="default-loadgroup", marks=pytest.mark.slow),
        pytest.param(["--dist", "load"], id="load", marks=pytest.mark.slow),
    ],
)
def test_a_killed_worker_neither_hangs_nor_claims_a_record(
    project: pytest.Pytester, dist: list[str]
) -> None:
    project.makepyfile(test_killed=KILLED)
    proc = spawn(
        project, "-n", "2", "--embedbench-update-baseline", "--embedbench-json=r.json", *dist
    )
    code, out = finish(proc, timeout=240)
    killed = "test_killed.py::test_search[m1-2]"
    assert "15 passed" in out and "1 failed" in out, out
    assert code == pytest.ExitCode.TESTS_FAILED, out
    # not re-run: reported once in the failures (the short summary, untruncated when CI=true
    # is set, may repeat the message)
    failures = out.split("short test summary info")[0]
    assert failures.count(f"crashed while running '{killed}") == 1, out
    found = entries(project)
    assert len(found) == 15 and killed not in found  # every passed test is recorded
    assert "embedbench: 1 result was not recorded (the xdist worker running it died " in out
    assert f"sending it): {killed}; they are not in the baseline" in out
    report = json.loads((project.path / "r.json").read_text())
    assert report["baseline"]["not_recorded"] == [killed]
    assert len([t for t in report["tests"] if t["status"] == "passed"]) == 15


#: the order of events that hung, forced through files: k[2] starts once its worker took a second
#: group, a[0] waits for that, and k[2] kills its worker once the other was told to shut down (it
#: takes nothing back). The replacement then finds k[3] and a whole group queued
FORCED = """
import os, time
from pathlib import Path
import pytest
HERE = Path(__file__).parent

def wait_for(name):
    deadline = time.monotonic() + 60
    while not (HERE / name).exists():
        assert time.monotonic() < deadline, f"{name} never appeared"
        time.sleep(0.01)

@pytest.mark.parametrize(
    "group, n",
    [pytest.param(g, n, marks=pytest.mark.xdist_group(g)) for g in "kabc" for n in range(4)],
)
def test_step(group, n):
    if (group, n) == ("k", 2):
        (HERE / "k2-started").touch()
        wait_for("told-to-shut-down")
        os.kill(os.getpid(), 9)
    if (group, n) == ("a", 0):
        wait_for("k2-started")
"""

#: on a worker, a test run with no next one: the worker was told to shut down
SHUTDOWN_SEEN = """
@pytest.hookimpl(tryfirst=True)
def pytest_runtest_protocol(item, nextitem):
    if nextitem is None and hasattr(item.config, "workerinput"):
        (item.config.rootpath / "told-to-shut-down").touch()
"""


@pytest.mark.slow  # a second worker-crash scenario under xdist: the full suite runs it
def test_a_replacement_worker_left_one_test_of_a_group_is_not_left_waiting(
    project: pytest.Pytester,
) -> None:
    # xdist gives a worker that joins late one group, here k[3]: it held it, waiting for a next
    # test or the order to shut down, and the run hung
    add_to_conftest(project, SHUTDOWN_SEEN)
    project.makepyfile(test_forced=FORCED)
    code, out = finish(spawn(project, "-n", "2"), timeout=120)
    assert "replacing crashed worker" in out and "15 passed" in out and "1 failed" in out, out
    assert "crashed while running 'test_forced.py::test_step[k-2]'" in out, out
    assert code == pytest.ExitCode.TESTS_FAILED, out


#: groups k, a, b, c of four tests each, in that order
IDS = [f"test_x.py::test_step[{g}-{n}]" for g in "kabc" for n in range(4)]


def fake_worker(name: str) -> Mock:
    """What the scheduler uses of xdist's WorkerController."""
    worker = Mock(gateway=SimpleNamespace(id=name), shutting_down=False)
    worker.shutdown.side_effect = lambda: setattr(worker, "shutting_down", True)
    return worker


def scheduler_with(tmp_path: Path, *workers: Mock) -> Any:
    """The plugin's scheduler for two workers (``--tx 2*popen``), ``workers`` joined."""
    option = SimpleNamespace(loadscopereorder=True)
    config = SimpleNamespace(getvalue=lambda name: ["2*popen"], option=option)
    sched = crash_safe_loadgroup(config, Mock(), tmp_path)
    for worker in workers:
        join(sched, worker, tmp_path)
    return sched


def join(sched: Any, worker: Mock, tmp_path: Path) -> None:
    """As xdist's controller adds a worker, with the groups file the worker writes."""
    groups = {nodeid: nodeid.split("[")[1][0] for nodeid in IDS}
    (tmp_path / f"groups-{worker.gateway.id}.json").write_text(json.dumps(groups))
    sched.add_node(worker)
    sched.add_node_collection(worker, IDS)
    if sched.collection_is_completed:
        sched.schedule()


def complete(sched: Any, worker: Mock, *nodeids: str) -> None:
    for nodeid in nodeids:
        sched.mark_test_complete(worker, IDS.index(nodeid))


def test_a_replacement_worker_is_given_two_tests_or_told_to_shut_down(tmp_path: Path) -> None:
    # the events of the hang, as xdist's controller logged them: gw0 is told to shut down
    # while gw1 holds k[2] (running), k[3] and group b; gw1 dies in k[2]
    gw0, gw1 = fake_worker("gw0"), fake_worker("gw1")
    sched = scheduler_with(tmp_path, gw1, gw0)
    complete(sched, gw1, *IDS[0:2])  # k[0], k[1]: gw1 takes group b
    complete(sched, gw0, *IDS[4:7])  # a[0]..a[2]: gw0 takes group c, then the queue is empty
    assert gw0.shutting_down and not sched.workqueue
    assert sched.remove_node(gw1) == "test_x.py::test_step[k-2]"
    gw2 = fake_worker("gw2")
    join(sched, gw2, tmp_path)
    sent = [IDS[i] for call in gw2.send_runtest_some.call_args_list for i in call.args[0]]
    assert sent == [IDS[3], *IDS[8:12]] and not sched.workqueue  # xdist's: k[3] alone, held


def test_a_worker_that_died_before_it_was_sent_more_work_does_not_end_the_run(
    tmp_path: Path,
) -> None:
    # gw1 dies in k[2] before the controller sends it group b: the send fails (INTERNALERROR
    # before the fix), then xdist reports the death and what gw1 was given is queued again
    gw0, gw1 = fake_worker("gw0"), fake_worker("gw1")
    sched = scheduler_with(tmp_path, gw1, gw0)
    complete(sched, gw1, IDS[0])
    gw1.send_runtest_some.side_effect = OSError("cannot send (already closed?)")
    complete(sched, gw1, IDS[1])
    assert sched.remove_node(gw1) == "test_x.py::test_step[k-2]"
    queued = {g: [i for i, done in unit.items() if not done] for g, unit in sched.workqueue.items()}
    assert queued == {"c": IDS[12:16], "k": [IDS[3]], "b": IDS[8:12]}


# -- issue 28: what names from the data and the configuration can do to the files ----------

#: ids and texts a spreadsheet would run as formulas (each begins with = + - @ or a tab)
EVIL_CORPUS = [
    {"_id": "=d1", "title": "", "text": "reset your password from the login page"},
    {"_id": "+d2", "title": "", "text": "invoices are emailed every month as pdf"},
    {"_id": "-d3", "title": "", "text": "export workspace data as csv"},
    {"_id": "@d4", "title": "", "text": "the api allows 600 requests per minute"},
]
EVIL_QUERIES = [
    {"_id": "-q1", "text": '=HYPERLINK("http://127.0.0.1:9/x","reset password")'},
    {"_id": "@q2", "text": "@SUM(A1) monthly invoices pdf"},
    {"_id": "+q3", "text": "+export data csv"},
    {"_id": "q4", "text": "-1+1 api requests per minute"},
]
EVIL_QRELS = "query-id\tcorpus-id\tscore\n-q1\t=d1\t1\n@q2\t+d2\t1\n+q3\t-d3\t1\nq4\t@d4\t1\n"


def test_csv_cells_a_spreadsheet_would_run_are_neutralised(project: pytest.Pytester) -> None:
    """OWASP's rule in every CSV cell of text: a leading = + - @ tab or CR gets a ``'``;
    numbers stay numbers. Names, query ids, query texts and document ids all flow in."""
    write_beir(project.path / "data" / "evil", EVIL_CORPUS, EVIL_QUERIES, EVIL_QRELS)
    project.makefile(".yaml", embedbench="datasets:\n  evil: {path: data/evil}\n")
    project.makepyfile(
        test_evil="""
        import pytest
        from pytest_embedbench import ModelSpec

        @pytest.mark.embedbench(dataset="evil", models=[ModelSpec("hashing:h", name="=cmd")])
        def test_search(retrieval):
            pass
        """
    )
    project.runpytest("--embedbench-csv=csv", "--embedbench-json=r.json").assert_outcomes(passed=1)

    def read(name: str) -> list[dict[str, str]]:
        with (project.path / "csv" / name).open(newline="") as fh:
            return list(csv.DictReader(fh))

    (result,) = read("results.csv")
    assert result["model"] == "'=cmd" and result["status"] == "passed"
    assert float(result["ndcg@10"]) > 0 and int(result["queries"]) == 4  # numbers, unprefixed
    queries = {row["query_id"]: row for row in read("queries.csv")}
    assert sorted(queries) == ["'+q3", "'-q1", "'@q2", "q4"]
    assert queries["'-q1"]["query"] == "'" + EVIL_QUERIES[0]["text"]
    assert queries["'@q2"]["query"] == "'@SUM(A1) monthly invoices pdf"
    assert queries["q4"]["query"] == "'-1+1 api requests per minute"
    assert queries["'-q1"]["retrieved"].startswith("'=d1|")  # the top document, first
    assert queries["'-q1"]["relevant"] == "'=d1"
    assert queries["q4"]["model"] == "'=cmd"
    float(queries["q4"]["ndcg@10"])  # a number as written
    for row in [result, *queries.values()]:
        for cell in row.values():
            assert not cell.startswith(("=", "+", "-", "@", "\t", "\r")), (cell, row)
    # only the CSV is neutralised: the JSON keeps the names as they are
    report = json.loads((project.path / "r.json").read_text())
    assert report["tests"][0]["model"] == "=cmd"


@pytest.mark.slow  # a serial and an xdist run of the same project
def test_the_json_report_keeps_embedbench_yaml_under_xdist_as_serially(
    project: pytest.Pytester,
) -> None:
    """The controller of ``-n 2`` collects nothing, so it read no embedbench.yaml: its workers
    send the ones they read, and the report records them as a serial run does."""
    project.makefile(
        ".yaml",
        embedbench="datasets:\n  topics: {path: data/topics}\nmodels: [hashing:h, bm25]\n"
        "providers:\n  hashing: {dim: 48}\nk: [1, 10]\n",
    )
    project.makepyfile(test_yaml=bench_module('dataset="topics"'))
    project.runpytest("--embedbench-json=serial.json").assert_outcomes(passed=2)
    project.runpytest("-n", "2", "--embedbench-json=xdist.json").assert_outcomes(passed=2)

    def yaml_of(name: str) -> list[dict[str, Any]]:
        report = json.loads((project.path / name).read_text())
        return list(report["configuration"]["embedbench_yaml"])

    serial = yaml_of("serial.json")
    assert serial == [
        {
            "path": str(project.path / "embedbench.yaml"),
            "content": {
                "datasets": {"topics": {"path": "data/topics"}},
                "models": ["hashing:h", "bm25"],
                "providers": {"hashing": {"dim": 48}},
                "k": [1, 10],
            },
        }
    ]
    assert yaml_of("xdist.json") == serial

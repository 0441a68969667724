"""A pytest process exits without Python's final garbage collection, unless asked to keep it."""

from __future__ import annotations

import json

import pytest

from .conftest import CONFTEST, set_ini

TEST = """
import pytest

@pytest.mark.embedbench(dataset="tiny")
def test_search(retrieval):
    assert retrieval.ndcg10 >= 0.2
"""

# registered at conftest import, before the plugin's pytest_configure: it runs after the
# plugin's hook (atexit is last in, first out) and records what the process does at exit
AT_EXIT = """
import atexit, gc, json, pathlib

def _record():
    pathlib.Path("exit.json").write_text(json.dumps({"frozen": gc.get_freeze_count()}))

atexit.register(_record)

# a file left open in a reference cycle still alive at exit: only the final collection would
# have flushed it (by finalizing it), so the plugin's hook flushes it before freezing
class _Holder:
    pass

_holder = _Holder()
_holder.me = _holder
_holder.file = open("cycle.txt", "w")
_holder.file.write("written, never closed")
"""


@pytest.mark.parametrize(
    ("args", "skipped"),
    [
        pytest.param([], True, id="default"),
        # the same run keeping the collection: the full suite checks it
        pytest.param(["--embedbench-exit-gc"], False, id="kept", marks=pytest.mark.slow),
    ],
)
@pytest.mark.slow  # a whole pytest run with the model: the full suite
def test_the_final_collection_is_skipped_unless_kept(
    project: pytest.Pytester, args: list[str], skipped: bool
) -> None:
    project.makeconftest(CONFTEST + AT_EXIT)
    project.makepyfile(test_exit=TEST)
    result = project.runpytest_subprocess("--embedbench-json", "r.json", *args)
    result.assert_outcomes(passed=2)
    # a user's atexit hook still runs, after the plugin's; the report was written before it
    frozen = json.loads((project.path / "exit.json").read_text())["frozen"]
    assert (frozen > 0) is skipped, frozen
    assert (project.path / "cycle.txt").read_text() == "written, never closed"
    report = json.loads((project.path / "r.json").read_text())
    assert len(report["tests"]) == 2
    assert report["configuration"]["exit_gc"] is not skipped


@pytest.mark.slow  # the option's ini twin: the full suite checks it
def test_the_ini_key_keeps_the_final_collection(project: pytest.Pytester) -> None:
    project.makeconftest(CONFTEST + AT_EXIT)
    project.makepyfile(test_exit=TEST)
    set_ini(project, "embedbench_exit_gc = true")
    project.runpytest_subprocess().assert_outcomes(passed=2)
    assert json.loads((project.path / "exit.json").read_text())["frozen"] == 0

"""pytest-xdist: one model's tests on one worker, and a killed worker that cannot hang the run.

The plugin marks each retrieval test with ``xdist_group(<model>)`` and picks ``--dist
loadgroup`` so each model loads once. Three things in xdist 3.8 stand in the way, and this
module's scheduler (installed through xdist's ``pytest_xdist_make_scheduler`` hook) mends them:

- **The groups never reach the controller.** xdist tells the controller a test's group by
  appending ``@group`` to the node id a worker sends, which it does by assigning
  ``item._nodeid``. Since pytest 9.2 a node id is ``item._id`` (a structured ``NodeId``), so
  the assignment changes nothing and every test is distributed on its own (pytest-xdist issue
  1386, open). A worker is also started from the command line alone, so it never learns that the
  plugin chose loadgroup and would not append the suffix anyway. Here each worker writes its
  tests' groups (from the ``xdist_group`` marks, named the way xdist names them) to a JSON file
  in a folder the controller made and sent it in ``workerinput``; the scheduler reads it before
  it splits the tests into work units. Node ids stay as pytest makes them (on a pytest before
  9.2 the plugin turns xdist's suffix off on the workers), so records, baselines and reports key
  the same tests alike serially and under xdist.
- **A crashed test is re-run for ever.** xdist's loadscope/loadgroup scheduler puts the test
  that was running when a worker died back into the queue with the rest of its group: a
  replacement worker runs it again (and dies again, for a test that kills its process), and the
  run can then wait forever for a test no worker will finish. ``--dist load`` does not re-run a
  crashed test; neither does this scheduler: the crashed test is reported failed once (by
  xdist) and marked done, the rest of its group goes back to the queue, and a group with
  nothing left is dropped.
- **A replacement worker can wait forever.** A worker runs a test only once it holds the next
  one (pytest's ``nextitem``) or the order to shut down. xdist tops a worker up, one work unit
  at a time, when one of its tests completes, but gives a worker that joins late (the
  replacement of a crashed one) a single unit: when that unit is one test (often what is left
  of the crashed test's group) the worker holds it and waits, no test completes, the other
  groups stay queued and nothing is ever sent to it (pytest-xdist issue 1327). This scheduler
  tops a worker up until it holds two tests, or shuts it down when the queue is empty.

Under ``--dist load`` (the user's choice) xdist's own LoadScheduling runs. It has a race this
module's scheduler also outlives (``_NeverLeftWaiting._assign_work_unit``): a worker that dies
after reporting a test, before the controller sends it more, ended the run with an INTERNALERROR
and left the rest unrun. :func:`crash_safe_load` mends that alone.

A worker on another machine (``--tx ssh=...``) writes its file there: the scheduler then warns
and distributes test by test, as xdist does.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from ..core.exceptions import EmbedBenchWarning
from ..core.io import atomic_write_json
from ..evaluation.measure import share_cores

if TYPE_CHECKING:
    from .session import EmbedBenchSession

__all__ = [
    "GROUPS_DIR_KEY",
    "XDistHooks",
    "configure_worker",
    "crash_safe_load",
    "crash_safe_loadgroup",
    "item_groups",
    "read_groups",
]

#: the ``workerinput`` key naming the folder where workers leave their tests' groups
GROUPS_DIR_KEY = "embedbench_groups_dir"


def configure_worker(config: pytest.Config) -> None:
    """On an xdist worker, at configure: take this worker's share of the CPUs (the workers run
    at once, see :func:`~.measure.share_cores`) and, when the controller sent a groups folder,
    keep xdist (on a pytest before 9.2) from appending ``@group`` to the node ids: the
    scheduler reads the groups from the worker's file, and records and baselines key the tests
    as a serial run does."""
    workerinput = getattr(config, "workerinput", {})
    share_cores(int(workerinput.get("workercount", 1)))
    if GROUPS_DIR_KEY in workerinput:
        config.option.loadgroup = False


def item_groups(items: Iterable[pytest.Item]) -> dict[str, str]:
    """Node id -> group of each item with an ``xdist_group`` mark, named as xdist names it
    (several marks: their names sorted and joined with ``_``)."""
    groups: dict[str, str] = {}
    for item in items:
        names = {
            str(mark.args[0] if mark.args else mark.kwargs.get("name", "default"))
            for mark in item.iter_markers("xdist_group")
        }
        if names:
            groups[item.nodeid] = "_".join(sorted(names))
    return groups


def _groups_file(directory: Path, worker: str) -> Path:
    return directory / f"groups-{worker}.json"


def read_groups(directory: Path, worker: str) -> dict[str, str] | None:
    """The groups worker ``worker`` wrote, or None when its file is not there (or unreadable)."""
    try:
        data = json.loads(_groups_file(directory, worker).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return {str(k): str(v) for k, v in data.items()} if isinstance(data, dict) else None


class XDistHooks:
    """Registered only when pytest-xdist is present. On the controller: merges what workers
    collected and the embedbench.yaml files they read, hands each worker the groups folder and
    installs the scheduler; on a worker: writes its tests' groups."""

    def __init__(self, session: EmbedBenchSession) -> None:
        self.session = session
        self.groups_dir: Path | None = None

    def pytest_configure_node(self, node: Any) -> None:
        if node.config.getvalue("dist") != "loadgroup":
            return
        if self.groups_dir is None:
            self.groups_dir = Path(tempfile.mkdtemp(prefix="embedbench-xdist-"))
        node.workerinput[GROUPS_DIR_KEY] = str(self.groups_dir)

    @pytest.hookimpl(tryfirst=True)  # before xdist's own, which sends the collected ids
    def pytest_collection_finish(self, session: pytest.Session) -> None:
        workerinput = getattr(session.config, "workerinput", {})
        if GROUPS_DIR_KEY in workerinput:
            path = _groups_file(Path(workerinput[GROUPS_DIR_KEY]), workerinput["workerid"])
            try:
                atomic_write_json(path, item_groups(session.items))
            except OSError:  # the controller finds no file and says so; the tests still run
                pass

    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        raw = getattr(node, "workeroutput", {}).get("embedbench")
        if raw:
            sent = json.loads(raw)
            self.session.collected.update(sent["collected"])
            self.session.merge_configs(sent.get("configs") or [], sent.get("generated") or [])

    def pytest_xdist_make_scheduler(self, config: pytest.Config, log: Any) -> Any:
        dist = config.getvalue("dist")
        if dist == "load":  # asked for by the user (the plugin picks loadgroup)
            return crash_safe_load(config, log)
        if dist != "loadgroup":
            return None
        return crash_safe_loadgroup(config, log, self.groups_dir)

    def pytest_unconfigure(self, config: pytest.Config) -> None:
        if self.groups_dir is not None:
            shutil.rmtree(self.groups_dir, ignore_errors=True)
            self.groups_dir = None


class _NeverLeftWaiting:
    """Scheduling of xdist's load schedulers (mixed in before one) that never leaves a worker
    holding a single test, and that outlives a worker dying while it is sent more work."""

    def _reschedule(self, node: Any) -> None:
        # xdist's own gives at most one unit per call: a worker left holding one test would wait
        # for ever (see the module docstring). Each call either assigns a unit (the queue
        # shrinks) or, the queue empty, shuts the worker down, so this ends
        scheduler: Any = super()
        scheduler._reschedule(node)
        while not node.shutting_down and self._holds(node) < 2:
            scheduler._reschedule(node)

    def _holds(self, node: Any) -> int:
        """The tests sent to ``node`` that it has not finished."""
        scheduler: Any = self
        return int(scheduler._pending_of(scheduler.assigned_work[node]))

    def _assign_work_unit(self, node: Any) -> None:
        scheduler: Any = super()
        try:
            scheduler._assign_work_unit(node)
        except OSError:
            # the worker died after the report that freed room for this unit (its channel is
            # closed): the unit is already in its workload, and xdist's report of the death,
            # queued behind this one, re-queues it through remove_node
            pass


def crash_safe_loadgroup(config: Any, log: Any, groups_dir: Path | None = None) -> Any:
    """A LoadGroupScheduling that takes each test's group from the file its worker wrote in
    ``groups_dir`` (not from a node id suffix), whose ``remove_node`` never re-queues the
    crashed test and which never leaves a worker holding a single test."""
    from xdist.scheduler import LoadGroupScheduling

    class CrashSafeLoadGroupScheduling(_NeverLeftWaiting, LoadGroupScheduling):
        def __init__(self, config: Any, log: Any) -> None:
            super().__init__(config, log)
            self.groups: dict[str, str] = {}
            self.warned = False

        def add_node_collection(self, node: Any, collection: Any) -> None:
            found = None if groups_dir is None else read_groups(groups_dir, node.gateway.id)
            if found is None and groups_dir is not None and not self.warned:
                self.warned = True
                config.issue_config_time_warning(
                    EmbedBenchWarning(
                        f"pytest-embedbench: worker {node.gateway.id} left no test groups in "
                        f"{groups_dir} (a worker on another machine, or a full disk?): its "
                        "tests are distributed one by one, so a model may load on several workers"
                    ),
                    stacklevel=2,
                )
            self.groups.update(found or {})
            super().add_node_collection(node, collection)

        def _split_scope(self, nodeid: str) -> str:
            group = self.groups.get(nodeid)
            return group if group is not None else super()._split_scope(nodeid)

        def remove_node(self, node: Any) -> str | None:
            workload = self.assigned_work.get(node)
            if workload is None:
                return super().remove_node(node)  # raises KeyError, as xdist expects
            # tests of a node run in the order sent: the first pending one was running
            crashitem = next(
                (nodeid for unit in workload.values() for nodeid, done in unit.items() if not done),
                None,
            )
            if crashitem is not None:
                for unit in workload.values():
                    if crashitem in unit:
                        unit[crashitem] = True
            for scope in [s for s, unit in workload.items() if all(unit.values())]:
                del workload[scope]  # nothing left of it to re-queue
            super().remove_node(node)
            return crashitem

    return CrashSafeLoadGroupScheduling(config, log)


def crash_safe_load(config: Any, log: Any) -> Any:
    """xdist's LoadScheduling (``--dist load``), except that sending tests to a worker that has
    just died is not an INTERNALERROR.

    The controller tops a worker up when it reports a test complete. A worker that dies right
    after that report (in its next test, or killed while it waits) has a closed channel by
    the time the report is taken, and xdist's send raises ``OSError`` out of the test loop:
    the run ends there, the remaining tests unrun. The tests are in the worker's pending list
    before the send, so dropping the error loses nothing: xdist's report of the death, queued
    behind this one, blames the first of them (the one that was running) and queues the rest
    again for the other workers or a replacement.
    """
    from xdist.scheduler import LoadScheduling

    class CrashSafeLoadScheduling(LoadScheduling):
        def _send_tests(self, node: Any, num: int) -> None:
            try:
                super()._send_tests(node, num)
            except OSError:
                pass  # the worker is gone: remove_node re-queues what it was given

    return CrashSafeLoadScheduling(config, log)

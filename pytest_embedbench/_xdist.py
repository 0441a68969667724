"""pytest-xdist's loadgroup scheduling with its crash handling fixed.

The plugin sends one model's tests to one worker (``xdist_group`` marks, ``--dist loadgroup``),
so each model loads once. xdist's loadscope/loadgroup scheduler puts the test that was running
when a worker died back into the queue with the rest of its group: a replacement worker runs
it again (and dies again, for a test that kills its process), and the run can then wait
forever for a test no worker will finish. ``--dist load`` does not re-run a crashed test; this
scheduler does the same for loadgroup: the crashed test is reported failed once (by xdist) and
marked done, the rest of its group goes back to the queue, and a group with nothing left is
dropped. It is installed through xdist's own ``pytest_xdist_make_scheduler`` hook.
"""

from __future__ import annotations

from typing import Any

__all__ = ["crash_safe_loadgroup"]


def crash_safe_loadgroup(config: Any, log: Any) -> Any:
    """A LoadGroupScheduling whose ``remove_node`` never re-queues the crashed test."""
    from xdist.scheduler import LoadGroupScheduling

    class CrashSafeLoadGroupScheduling(LoadGroupScheduling):
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

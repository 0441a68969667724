"""A pytest process that loaded the embedding libraries exits without Python's final
garbage collection.

When the interpreter shuts down, CPython runs full collections over every object still alive.
Once torch, transformers and sentence-transformers are imported that is about 450,000
objects, and the collections take 1.5-2 s after the last test (measured on the 2-core machine:
``pytest examples`` exits in 1.7-2.2 s, about 0.4 s with this). The bare script the plugin is
measured against pays it too; a CI job gains nothing from it.

:func:`skip_final_collection` registers an :mod:`atexit` hook that flushes every open buffered
file, then calls :func:`gc.freeze`: the objects alive at exit move to the permanent generation,
which no collection visits, and the process ends. Everything else of the shutdown is unchanged:
the other ``atexit`` hooks run (those registered before this one run after it), objects freed by
reference counting are freed (an open file among them is flushed and closed). What is skipped is
only the collection of reference cycles at exit, whose finalizers Python does not promise to run
("It is not guaranteed that ``__del__()`` methods are called for objects that still exist when
the interpreter exits", the data model reference). A file caught in such a cycle would lose what
it buffered, so the hook flushes every open file first (the operating system closes them); the
plugin writes its reports, baselines and cache before that point.
``--embedbench-exit-gc`` (ini ``embedbench_exit_gc``) keeps the final collection. An xdist
worker always keeps it: execnet closes its channels from finalizers at exit. The hang once put
down to skipping them (a crashed worker replaced, then no end) was the scheduler's, inside the
session (see :mod:`._xdist`): it hung with workers keeping the collection too, and with the
scheduler mended the killed-worker run ends with workers skipping it (12 runs of 12).
"""

from __future__ import annotations

import atexit
import contextlib
import gc
import io

__all__ = ["skip_final_collection"]

#: whether a call has decided what this process does at exit
_decided = False


def skip_final_collection(skip: bool) -> None:
    """Register the hook when ``skip``; the first call decides (the outermost pytest session is
    configured first; one run inside it through ``pytester`` does not change what the process
    does at exit)."""
    global _decided
    if not _decided:
        _decided = True
        if skip:
            atexit.register(_flush_and_freeze)


#: buffered file objects: the ones whose data a skipped finalizer could leave unwritten
_BUFFERED = (io.TextIOWrapper, io.BufferedWriter, io.BufferedRandom, io.BufferedRWPair)


def _flush_and_freeze() -> None:
    """Flush every open buffered file (what collecting one caught in a reference cycle would
    have done, by closing it; closing it here would break the ``atexit`` hooks still to run),
    then freeze. The scan is ``type``-based, so no object's ``__class__`` hook runs; ~0.1 s for
    torch's 450,000 objects."""
    for obj in gc.get_objects():
        if issubclass(type(obj), _BUFFERED):
            with contextlib.suppress(OSError, ValueError):  # closed, or a full disk: as at exit
                if not obj.closed:
                    obj.flush()
    gc.freeze()

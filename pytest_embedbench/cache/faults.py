"""The faults of the cache's files, told apart, because only one of them justifies touching
the file:

* corruption (SQLite reports a malformed image that ``PRAGMA quick_check`` confirms, or "file
  is not a database"): the file and its segment files are moved aside for inspection and the
  cache rebuilt, with a warning;
* locked or busy (several processes creating one cache at once): retried for up to
  :data:`BUSY_WAIT_S` seconds, then that read or write is skipped (an open: this run goes on
  without the cache);
* a full disk or another I/O error (of the index or a segment file): the files are left as
  they are, and the run goes on without writing (or, when it cannot even be opened, without
  the cache), with one warning naming the file and the reason.
"""

from __future__ import annotations

import errno
import random
import shutil
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

T = TypeVar("T")

#: how long opening, reading or writing keeps retrying "database is locked" before giving up
BUSY_WAIT_S = 30.0
#: how long SQLite itself waits for another connection's lock before it answers busy
LOCK_WAIT_S = 60.0

# SQLite's primary result codes (the low byte of an extended code)
_BUSY, _LOCKED, _CORRUPT, _FULL, _NOTADB = 5, 6, 11, 13, 26


def kind(exc: sqlite3.Error) -> str:
    """What a SQLite error means here: "corrupt", "busy", "full" or "io" (anything else)."""
    code = getattr(exc, "sqlite_errorcode", None)
    primary = code & 0xFF if isinstance(code, int) else None
    text = str(exc).lower()
    if primary in (_CORRUPT, _NOTADB) or (
        primary is None and ("malformed" in text or "not a database" in text)
    ):
        return "corrupt"
    if primary in (_BUSY, _LOCKED) or (primary is None and ("locked" in text or "busy" in text)):
        return "busy"
    if primary == _FULL or (primary is None and "full" in text):
        return "full"
    return "io"


def retry_busy(action: Callable[[], T]) -> T:
    """``action()``, retried with jittered backoff while SQLite answers busy or locked; the
    last such error is raised after :data:`BUSY_WAIT_S` seconds.

    The busy timeout covers ordinary waits; this covers the cases where SQLite returns
    SQLITE_BUSY at once (switching a fresh file to WAL while another process does the same, a
    stale read snapshot).
    """
    deadline = time.monotonic() + BUSY_WAIT_S
    delay = 0.01
    while True:
        try:
            return action()
        except sqlite3.Error as exc:
            if kind(exc) != "busy" or time.monotonic() >= deadline:
                raise
        time.sleep(delay * (0.5 + random.random()))
        delay = min(delay * 2, 0.5)


def reason(exc: sqlite3.Error | OSError, doing: str, folder: Path) -> str:
    """``exc`` (of the index, or of a segment file in ``folder``) told as what it is: locked,
    a full disk, corruption or an I/O error."""
    if isinstance(exc, OSError):
        name = errno.errorcode.get(exc.errno or 0, type(exc).__name__)
        detail = f"{exc.strerror or exc} ({name}) while {doing}"
        fault = "full" if exc.errno == errno.ENOSPC else "io"
    else:
        name = getattr(exc, "sqlite_errorname", None) or type(exc).__name__
        detail, fault = f"{exc} ({name}) while {doing}", kind(exc)
    if fault == "busy":
        return f"{detail}; other processes held it locked for over {BUSY_WAIT_S:.0f} s"
    if fault == "corrupt":
        return f"{detail}; the file is damaged"
    try:
        free = shutil.disk_usage(folder).free
    except OSError:
        free = None
    if fault == "full" or free == 0:
        return f"{detail}; the disk is full ({free or 0} bytes free)"
    return detail


def corrupt(conn: sqlite3.Connection, exc: sqlite3.Error) -> bool:
    """Whether ``exc`` is real corruption: "not a database", or a malformed image that
    ``PRAGMA quick_check`` confirms."""
    if kind(exc) != "corrupt":
        return False
    if getattr(exc, "sqlite_errorcode", 0) & 0xFF == _NOTADB:
        return True
    try:
        rows = conn.execute("PRAGMA quick_check").fetchall()
    except sqlite3.Error as check:
        return kind(check) == "corrupt"
    return rows != [("ok",)]

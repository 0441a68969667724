"""Space given back: segment files no batch points to are deleted, mostly dead ones compacted.

A segment file only grows; its bytes die when a newer write replaces a vector (a damaged one
embedded again) or a namespace is cleared. A file held by no writer whose live vectors fill at
most :data:`LIVE_SHARE` of it is compacted, in three steps:

1. its live rows are appended to a segment file of the compaction's own and flushed;
2. in one transaction, new batches take them, the entries point there, and the file's batches,
   left without a live slot, are deleted;
3. the file, which no batch points to now, is deleted.

A crash after step 1 leaves the index pointing to the old file (the new bytes are never read;
their file, which no batch points to, goes at the next :func:`collect`); after step 2, the old
file is one no batch points to, deleted by the next :func:`collect`. Nothing live is lost at
any step, and a file whose bytes are not all there, or do not match their checksums, is left
for reads to report.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterable
from pathlib import Path

from . import index, segments

#: a file is compacted once its live vectors fill at most this share of its bytes
LIVE_SHARE = 0.5
#: bytes of live rows a new batch takes at most
BATCH_BYTES = 1 << 20


def reclaim(conn: sqlite3.Connection, folder: Path, files: Iterable[str | None]) -> None:
    """Compact each of ``files`` that is mostly dead and held by no writer, then
    :func:`collect`. A fault (a full disk, a lock held too long) leaves things as they were:
    compaction only saves space."""
    for name in sorted(f for f in set(files) if f is not None and segments.NAME.fullmatch(f)):
        try:
            compact_file(conn, folder, name)
        except (OSError, sqlite3.Error):
            pass
    collect(conn, folder)


def collect(conn: sqlite3.Connection, folder: Path) -> None:
    """Delete the segment files no batch points to and no writer holds: a file is locked by
    its writer from before it has its name until it is closed, and a writer points batches
    only to the file it holds."""
    try:
        used = {f for (f,) in conn.execute("SELECT DISTINCT file FROM batches")}
    except sqlite3.Error:
        return
    for name in segments.names(folder):
        if name in used:
            continue
        fd = segments.unheld(folder / name)
        if fd is None:
            continue  # held by a writer (or gone already)
        try:
            # held now, so no writer can point a batch to it any more: asked again, as its
            # writer may have committed one and closed it since the first look
            _drop(conn, folder / name)
        except (OSError, sqlite3.Error):
            pass
        finally:
            os.close(fd)


def compact_file(conn: sqlite3.Connection, folder: Path, name: str) -> None:
    """Compact segment file ``name`` when it is mostly dead and no writer holds it (the
    module's three steps)."""
    fd = segments.unheld(folder / name)
    if fd is None:
        return
    try:
        if not _mostly_dead(conn, name, fd):  # asked first without the write lock
            return
        writer = segments.Writer(folder)
        try:
            with index.writing(conn):
                if not _mostly_dead(conn, name, fd):
                    return
                _move_live(conn, writer, name, fd)
        except _Damaged:
            return  # rolled back; reads report it
        finally:
            writer.close()
        _drop(conn, folder / name)
    finally:
        os.close(fd)


class _Damaged(Exception):
    """A batch's bytes are not all there or do not match its checksum: moved, they would be
    hashed anew and pass for sound."""


def _mostly_dead(conn: sqlite3.Connection, name: str, fd: int) -> bool:
    """Whether batches point to the file and their live vectors fill at most
    :data:`LIVE_SHARE` of it (the index on the files answers without reading the batches)."""
    live, batches = conn.execute(
        "SELECT COALESCE(SUM(4 * dim * live), 0), COUNT(*) FROM batches WHERE file = ?", (name,)
    ).fetchone()
    return bool(batches) and live <= LIVE_SHARE * os.fstat(fd).st_size


def _move_live(conn: sqlite3.Connection, writer: segments.Writer, name: str, fd: int) -> None:
    """Steps 1 and 2, inside the caller's write transaction (:class:`_Damaged` rolls it back)."""
    pending: dict[tuple[int, int], tuple[list[bytes], list[bytes]]] = {}
    for bid, nsid, dim, count, offset, keys, want in conn.execute(
        "SELECT id, ns, dim, count, offset, keys, hash FROM batches WHERE file = ? ORDER BY id",
        (name,),
    ).fetchall():
        data = b"" if offset is None else os.pread(fd, 4 * dim * count, offset)
        if len(data) != 4 * dim * count or len(keys) != index.KEY_BYTES * count:
            raise _Damaged
        if want is not None and segments.checksum(data) != want:
            raise _Damaged
        mine = [keys[i : i + index.KEY_BYTES] for i in range(0, len(keys), index.KEY_BYTES)]
        keep, parts = pending.setdefault((nsid, dim), ([], []))
        for key, (batch, slot) in index.entries(conn, nsid, mine).items():
            if batch == bid:  # live here (not written again since)
                keep.append(key)
                parts.append(data[4 * dim * slot : 4 * dim * (slot + 1)])
        if 4 * dim * len(keep) >= BATCH_BYTES:
            index.append_batch(conn, writer, nsid, dim, *pending.pop((nsid, dim)))
    for (nsid, dim), (keep, parts) in pending.items():
        if keep:
            index.append_batch(conn, writer, nsid, dim, keep, parts)
    writer.sync()  # step 1 done: the moved rows are on the disk before the index points there


def _drop(conn: sqlite3.Connection, path: Path) -> None:
    """Delete the file once no batch points to it (the caller holds its lock: no writer has it);
    step 3 of a compaction."""
    if not conn.execute("SELECT 1 FROM batches WHERE file = ?", (path.name,)).fetchone():
        path.unlink(missing_ok=True)

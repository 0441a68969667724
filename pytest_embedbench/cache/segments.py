"""Segment files: the cache's vectors as raw float32 rows, and the one way they are read back.

Each writer (a thread of a process) appends to a file of its own, ``vectors-<16 hex>.f32``
beside the index: created under a temporary name, locked (``flock``, so that no other process
deletes or compacts it while it is held) and only then named. Each append reaches the disk
(fdatasync) before the index points to it, so a crash leaves only bytes nothing points to.

Reads never map a file (nothing of it would then count in the process's RSS, and a file cut
short under a map kills the process with SIGBUS): the asked rows are sorted by file and offset,
a row asked twice is read once, and rows that follow one another in a file are read by one
``preadv`` straight into their places in the result, a piece of :data:`PIECE` bytes at a time,
whose rows' norms are taken right after, while they are in the CPU's cache.

Each append's bytes are hashed (:func:`checksum`, xxh3-64), and so is each of its rows
(:func:`row_checksums`); the index keeps both with the batch. A read checks every batch it takes
rows from: one it read whole against the batch's hash (:func:`mismatched`), one it read a few
rows of against those rows' hashes, so that a shard still reads only its rows. A batch or row
that does not match is dropped: finite, unit-norm garbage (bytes overwritten, rows swapped or
negated) passes every other check. A link under a segment file's name is never opened
(``O_NOFOLLOW``): its rows read as gone.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from pathlib import Path
from typing import NamedTuple

import numpy as np
from xxhash import xxh3_64_intdigest

from ..core.vectors import squared_norms

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: no advisory locks, so segments are kept
    fcntl = None  # type: ignore[assignment]

#: the name of a segment file; nothing else is ever read, written or deleted as one, whatever
#: the index says
NAME = re.compile(r"vectors-[0-9a-f]{16}\.f32")
#: a writer starts a new segment file once its current one holds this many bytes
SEGMENT_BYTES = 1 << 30
#: bytes one read fills at most
PIECE = 1 << 21
#: buffers one ``preadv`` takes at most (the platform's IOV_MAX; 1024 on Linux)
try:
    IOV_MAX = max(1, min(1024, int(os.sysconf("SC_IOV_MAX"))))
except (AttributeError, ValueError, OSError):  # pragma: no cover - no such limit to ask
    IOV_MAX = 16
# never through a link: one under our name could make us read, or write into, another file
_OPEN = getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOFOLLOW", 0)
_LOW = (1 << 40) - 1  # a read's place: its file's code above these bits, its offset in them

#: an open segment file: its descriptor and its size in bytes, or None (not a segment name:
#: never opened; gone or unreadable: its rows are damaged, embedded again)
Opened = tuple[int, int] | None


class Place(NamedTuple):
    """Where an append's bytes went, their :func:`checksum` and their rows'."""

    file: str
    offset: int
    hash: int
    row_hashes: bytes


def checksum(data: memoryview | bytes) -> int:
    """The xxh3-64 hash of ``data``'s bytes, as a signed 64-bit int (an SQLite INTEGER).

    xxh3 rather than zlib's crc32: over 100,000 384-d vectors it takes about 11 ms where crc32
    takes 70-95 ms, twice the read itself (benchmarks/README.md).
    """
    value = xxh3_64_intdigest(data)
    return value - (1 << 64) if value >> 63 else value


def row_checksums(data: memoryview, row: int) -> np.ndarray:
    """Each ``row`` bytes of ``data``: the low 32 bits of its xxh3-64 hash (uint32)."""
    mask = 0xFFFFFFFF
    return np.array(
        [xxh3_64_intdigest(data[i : i + row]) & mask for i in range(0, len(data), row)],
        dtype="<u4",
    )


def names(folder: Path) -> list[str]:
    """The segment files in ``folder``, by name."""
    try:
        return sorted(p.name for p in folder.iterdir() if NAME.fullmatch(p.name))
    except OSError:
        return []


def unheld(path: Path) -> int | None:
    """``path`` open and locked, when no writer holds it (None: held, gone, or no locks)."""
    if fcntl is None:
        return None
    try:
        fd = os.open(path, os.O_RDONLY | _OPEN)
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        return None
    return fd


class Writer:
    """One writer's segment file, appended to; a fork's child starts a file of its own."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.fd: int | None = None
        self.name = ""
        self.pid = 0
        self.size = 0
        self.dirty = False  # appended since the last flush

    def append(self, data: memoryview, *, row: int, sync: bool = True) -> Place:
        """Append ``data``, rows of ``row`` bytes (and flush it, unless ``sync`` is False:
        then :meth:`sync` before the index points to it); returns the file's name, the offset
        of ``data`` in it and the checksums."""
        if self.fd is not None and (self.pid != os.getpid() or self.size >= SEGMENT_BYTES):
            self.close()
        if self.fd is None:
            name = f"vectors-{os.urandom(8).hex()}.f32"
            fresh = self.folder / f"{name}.new"
            flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND | _OPEN
            fd = os.open(fresh, flags, 0o644)
            try:
                if fcntl is not None:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                os.replace(fresh, self.folder / name)
            except BaseException:
                os.close(fd)
                fresh.unlink(missing_ok=True)
                raise
            self.fd, self.name, self.pid = fd, name, os.getpid()
        offset = os.fstat(self.fd).st_size  # past any bytes a failed write left: never read
        done = 0
        while done < len(data):
            done += os.write(self.fd, data[done:])
        self.size, self.dirty = offset + len(data), True
        if sync:
            self.sync()
        hashes = row_checksums(data, row).tobytes()
        return Place(self.name, offset, checksum(data), hashes)

    def sync(self) -> None:
        if self.fd is not None and self.dirty:
            getattr(os, "fdatasync", os.fsync)(self.fd)
            self.dirty = False

    def close(self) -> None:
        """Flush what is not yet and give the file (and its lock) up."""
        fd, self.fd = self.fd, None
        if fd is not None and self.pid == os.getpid():
            try:
                if self.dirty:
                    getattr(os, "fdatasync", os.fsync)(fd)
            finally:
                self.dirty = False
                os.close(fd)


def open_files(folder: Path, files: list[str | None], used: Iterable[int]) -> list[Opened]:
    """The files ``used`` (indices into ``files``) open for reading; None for the others."""
    opened: list[Opened] = [None] * len(files)
    for i in used:
        name = files[i]
        if name is None or not NAME.fullmatch(name):
            continue
        try:
            fd = os.open(folder / name, os.O_RDONLY | _OPEN)
        except OSError:
            continue
        try:
            opened[i] = (fd, os.fstat(fd).st_size)
        except OSError:
            os.close(fd)
    return opened


def close_files(opened: list[Opened]) -> None:
    for entry in opened:
        if entry is not None:
            os.close(entry[0])


def mismatched(
    opened: list[Opened],
    code: np.ndarray,
    offsets: np.ndarray,
    nbytes: np.ndarray,
    sums: np.ndarray,
    out: np.ndarray,
    start: np.ndarray,
) -> np.ndarray:
    """Which of the batches (``nbytes[i]`` bytes at ``offsets[i]`` of file ``opened[code[i]]``)
    do not hash to ``sums[i]``: hashed where a read left them whole and in order (rows
    ``start[i]`` on of ``out``), else read again (a batch cut short does not match)."""
    flat = out.reshape(-1).view(np.uint8)
    row = 4 * out.shape[1]
    bad = np.zeros(len(code), dtype=bool)
    for i, (f, at, size, want, lo) in enumerate(
        zip(
            code.tolist(),
            offsets.tolist(),
            nbytes.tolist(),
            sums.tolist(),
            start.tolist(),
            strict=True,
        )
    ):
        data: memoryview | bytes
        if lo >= 0:
            data = flat[lo * row : lo * row + size].data
        else:
            entry = opened[f]
            try:
                data = b"" if entry is None else os.pread(entry[0], size, at)
            except OSError:
                data = b""
            if len(data) != size:
                bad[i] = True
                continue
        bad[i] = checksum(data) != want
    return bad


def read_rows(
    opened: list[Opened], code: np.ndarray, at: np.ndarray, dest: np.ndarray, out: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Read the row at byte ``at[i]`` of file ``opened[code[i]]`` into ``out[dest[i]]``, for
    each ``i``. Returns which ``i`` arrived whole, and each row of ``out``'s squared norm
    (taken right after its read for a run read into one buffer; after all reads, a block of
    ``out`` at a time, for rows read one by one)."""
    row = 4 * out.shape[1]
    squares = np.zeros(len(out), dtype=np.float32)
    got = np.zeros(len(dest), dtype=bool)
    if not len(dest) or not row:
        return got, squares
    place = np.asarray(code, dtype=np.int64) << 40 | at  # files stay far below 2**40 bytes
    order = np.argsort(place) if (np.diff(place) < 0).any() else np.arange(len(place))
    place, where = place[order], dest[order]
    again = np.zeros(len(place), dtype=bool)  # the same row as the one before: read once
    again[1:] = place[1:] == place[:-1]
    place, into = place[~again], where[~again]
    calls, pieces = _plan(place, into, row)
    size = np.diff(np.append(calls, len(place)))
    bounds = np.append(np.searchsorted(pieces, calls), len(pieces))
    lows = into[pieces]
    # each buffer a slice of ``out``, made in C (a Python loop per row costs more than its read)
    views = list(
        map(
            out.__getitem__,
            map(slice, lows.tolist(), (lows + np.diff(np.append(pieces, len(place)))).tolist()),
        )
    )
    arrived = []
    one = (np.diff(bounds) == 1) & (size > 1)  # a run read into one buffer
    for f, offset, want, lo, hi, whole in zip(
        (place[calls] >> 40).tolist(),
        (place[calls] & _LOW).tolist(),
        (size * row).tolist(),
        bounds[:-1].tolist(),
        bounds[1:].tolist(),
        one.tolist(),
        strict=True,
    ):
        entry = opened[f]
        rows = 0 if entry is None else _preadv(entry[0], views[lo:hi], offset, want) // row
        if whole:  # its norms now, while it is in the CPU's cache
            squares[int(lows[lo]) : int(lows[lo]) + rows] = squared_norms(views[lo][:rows])
        arrived.append(rows)
    done = np.arange(len(place)) - np.repeat(calls, size) < np.repeat(arrived, size)
    late = np.zeros(len(out), dtype=bool)
    late[into[done & ~np.repeat(one, size)]] = True
    step = max(1, PIECE // row)
    for lo in np.flatnonzero(np.add.reduceat(late, range(0, len(out), step))).tolist():
        block, mine = slice(lo * step, (lo + 1) * step), late[lo * step : (lo + 1) * step]
        squares[block][mine] = squared_norms(out[block])[mine]
    copies = np.flatnonzero(again)  # a repeat is a copy of the row before it, arrived as it did
    if len(copies):
        source = np.maximum.accumulate(np.where(again, 0, np.arange(len(again))))[copies]
        out[where[copies]] = out[where[source]]
        squares[where[copies]] = squares[where[source]]
    got[order] = done[np.cumsum(~again) - 1]
    return got, squares


def _plan(place: np.ndarray, into: np.ndarray, row: int) -> tuple[np.ndarray, np.ndarray]:
    """Where each ``preadv`` starts (rows that follow one another in one file, :data:`PIECE`
    bytes and :data:`IOV_MAX` buffers at most) and where each of its buffers starts (rows whose
    places in the result follow one another too), as positions in the sorted rows."""
    n = len(place)
    calls = np.ones(n, dtype=bool)
    calls[1:] = place[1:] != place[:-1] + row
    runs = np.flatnonzero(calls)
    calls |= (np.arange(n) - runs[np.cumsum(calls) - 1]) % max(1, PIECE // row) == 0
    buffers = calls.copy()
    buffers[1:] |= into[1:] != into[:-1] + 1
    pieces = np.flatnonzero(buffers)
    owner = np.cumsum(calls)[pieces]
    calls[pieces[(np.arange(len(pieces)) - np.searchsorted(owner, owner)) % IOV_MAX == 0]] = True
    return np.flatnonzero(calls), pieces


def _preadv(fd: int, views: list[np.ndarray], offset: int, want: int) -> int:
    """Read ``want`` bytes from ``offset`` into ``views`` in turn; returns the bytes read
    (fewer: the file ends there, or it could not be read)."""
    done = 0
    try:
        while done < want:
            step = _read(fd, views, offset + done)
            if step <= 0:
                break
            done += step
            if done < want:  # read in part (a signal): the rest from there
                views = _rest(views, step)
    except OSError:
        pass  # an unreadable stretch counts as missing rows
    return done


def _rest(views: list[np.ndarray], skip: int) -> list[np.ndarray]:
    """``views`` without their first ``skip`` bytes."""
    for i, v in enumerate(views):
        if skip < v.nbytes:
            return [v.reshape(-1).view(np.uint8)[skip:], *views[i + 1 :]]
        skip -= v.nbytes
    return []


def _pread(fd: int, views: list[np.ndarray], offset: int) -> int:  # pragma: no cover
    """``os.preadv`` where the platform lacks it: into the first buffer."""
    data = os.pread(fd, views[0].nbytes, offset)
    views[0].reshape(-1).view(np.uint8)[: len(data)] = np.frombuffer(data, dtype=np.uint8)
    return len(data)


_read = getattr(os, "preadv", _pread)

"""Segment files: the cache's vectors as raw float32 rows, and the one way they are read back.

Each writer (a thread of a process) appends to a file of its own, ``vectors-<16 hex>.f32``
beside the index: created under a temporary name, locked (``flock``, so that no other process
deletes or compacts it while it is held) and only then named. Each append reaches the disk
(fdatasync) before the index points to it, so a crash leaves only bytes nothing points to.

Reads never map a file (nothing of it would then count in the process's RSS, and a file cut
short under a map kills the process with SIGBUS): :func:`read_rows` is the one way rows come
back. The asked rows are sorted by file and offset, a row asked twice is read once, and rows
that follow one another in a file are read by one ``preadv`` of about :data:`PIECE` bytes,
straight into the result where their places there follow one another too, else into a buffer
whose rows are then put in place (one contiguous read and a numpy scatter cost less than a
``preadv`` into one buffer per row).

Each append's bytes are hashed (:func:`checksum`, xxh3-64), and so is each of its rows (the
low 32 bits of each row's xxh3-64); the index keeps both with the batch. Right after each read,
while its bytes are in the CPU's cache, its rows' norms are taken and the checksums of what it
read compared: a batch read whole against the batch's hash (a read is never cut inside one),
each row of a batch read in part against its own, so that a shard still reads only its rows. A
batch or row that does not match is dropped: finite, unit-norm garbage (bytes overwritten, rows
swapped or negated) passes every other check. A link under a segment file's name is never opened
(``O_NOFOLLOW``): its rows read as gone.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import NamedTuple, cast

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
#: bytes one read fills (more only where one batch read whole is larger): small enough that its
#: norms and checksums are taken from the CPU's L2 cache (2 MiB pieces made both ~1.5x slower)
PIECE = 1 << 19
# never through a link: one under our name could make us read, or write into, another file
_OPEN = getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOFOLLOW", 0)
#: xxh3-64 of an array's bytes (an ndarray is a buffer; the stubs do not say so)
_hash = cast(Callable[[np.ndarray], int], xxh3_64_intdigest)
_LOW = (1 << 40) - 1  # a read's place: its file's code above these bits, its offset in them
#: a page: the kernel copies a read from the page cache about 3x slower where the destination
#: lies a few bytes (under 32) past the source within a page (AMD EPYC here: 153.6 MB in 63 ms
#: against 20 ms; numpy's large arrays start 16 bytes into a page, so a read from offset 0 of a
#: file landed there): each read's destination is placed 0 to 63 bytes before its source's
#: place in a page, 64-byte aligned (:func:`_placed`; benchmarks/README.md, issue 41)
PAGE = 4096

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
    rows = map(
        data.__getitem__, map(slice, range(0, len(data), row), range(row, len(data) + row, row))
    )
    return (np.fromiter(map(xxh3_64_intdigest, rows), np.uint64) & 0xFFFFFFFF).astype("<u4")


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


@dataclass
class Batches:
    """Batches as a read needs them: per batch its dimension, vector count, offset (-1: none),
    file (its place in ``files``) and checksums (``checked`` False: none recorded; its rows'
    start at ``row_at`` in ``row_hashes``)."""

    dims: np.ndarray
    counts: np.ndarray
    offsets: np.ndarray
    code: np.ndarray
    files: list[str | None]
    hashes: np.ndarray
    checked: np.ndarray
    row_hashes: np.ndarray
    row_at: np.ndarray

    def __add__(self, other: Batches) -> Batches:
        """Both, ``other``'s batches after these (its file codes and row checksums moved up)."""
        files = list(dict.fromkeys(self.files + other.files))
        code = np.array([files.index(f) for f in other.files], dtype=np.int64)[other.code]
        other = replace(other, code=code, row_at=other.row_at + len(self.row_hashes))
        both = {
            f.name: np.concatenate([getattr(self, f.name), getattr(other, f.name)])
            for f in fields(self)
            if f.name != "files"
        }
        return Batches(files=files, **both)


def read_rows(
    opened: list[Opened],
    bt: Batches,
    batch: np.ndarray,
    slot: np.ndarray,
    dest: np.ndarray,
    shape: tuple[int, int],
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Read row ``slot[i]`` of batch ``batch[i]`` into row ``dest[i]`` of a new float32 matrix
    of ``shape``, for each ``i``, and check it against its checksum, as the module says.
    Returns the matrix (a row nothing was read into is left unset), which ``i`` arrived whole,
    which of those do not match their checksum (a batch or row not read whole does not), and
    each row's squared norm."""
    n, row = len(dest), 4 * shape[1]
    squares = np.zeros(shape[0], dtype=np.float32)
    if not n or not row:
        return np.empty(shape, np.float32), np.zeros(n, bool), np.zeros(n, bool), squares
    place = bt.code[batch] << 40 | (bt.offsets[batch] + row * slot)  # files stay below 2**40
    order = np.argsort(place, kind="stable") if (np.diff(place) < 0).any() else np.arange(n)
    place, batch, slot, into = place[order], batch[order], slot[order], dest[order]
    again = np.zeros(n, dtype=bool)  # the same row as the one before: read once
    again[1:] = (place[1:] == place[:-1]) & (batch[1:] == batch[:-1])
    p, b, d = place[~again], batch[~again], into[~again]
    plan = _plan(bt, p, b, slot[~again], d, row)
    out = _placed(shape, _commonest_lag(plan, p, d, row))
    done, unsound = _read(opened, plan, p, d, out, squares)
    copies = np.flatnonzero(again)  # a repeat is a copy of the row before it, arrived as it did
    if len(copies):
        source = np.maximum.accumulate(np.where(again, 0, np.arange(n)))[copies]
        out[into[copies]] = out[into[source]]
        squares[into[copies]] = squares[into[source]]
    got, bad = np.zeros(n, dtype=bool), np.zeros(n, dtype=bool)
    distinct = np.cumsum(~again) - 1
    got[order], bad[order] = done[distinct], unsound[distinct]
    return out, got, bad, squares


def _placed(shape: tuple[int, ...], offset: int) -> np.ndarray:
    """A new float32 array of ``shape`` whose first byte lies, within a page, where ``offset``
    does rounded down to 64 bytes: a read from file offset ``offset`` into it is one of the
    fast copies (see :data:`PAGE`)."""
    nbytes = 4 * int(np.prod(shape))
    raw = np.empty(nbytes + PAGE, dtype=np.uint8)  # not zeroed: numpy then asks for huge pages
    start = _start(raw.ctypes.data, offset)
    return raw[start : start + nbytes].view(np.float32).reshape(shape)


def _start(address: int, offset: int) -> int:
    """How far past ``address`` a buffer starts that lies in its page where ``offset`` does,
    rounded down to 64 bytes (see :data:`PAGE`): less than a page."""
    return (offset // 64 * 64 - address) % PAGE


def _commonest_lag(plan: _Plan, p: np.ndarray, d: np.ndarray, row: int) -> int:
    """Of the calls that read straight into the result, the commonest file offset less the
    result's byte offset (modulo :data:`PAGE`, by 64 bytes, weighted by the rows read): where
    the result goes in its page so that those reads are fast."""
    direct = plan.calls[plan.direct]
    if not len(direct):
        return 0
    lag = ((p[direct] & _LOW) - row * d[direct]) % PAGE // 64
    bins = np.bincount(lag, weights=plan.size[plan.direct], minlength=PAGE // 64)
    return int(np.argmax(bins)) * 64


class _Plan(NamedTuple):
    calls: np.ndarray  # where each ``preadv`` starts, as positions in the sorted rows
    size: np.ndarray  # the rows it reads
    direct: np.ndarray  # whether it reads straight into ``out`` (its rows' places follow)
    mode: np.ndarray  # what it does after its read, in bits (see :func:`_plan`)
    units: np.ndarray  # where each checked unit (a batch read whole, or a row) starts
    ends: np.ndarray  # and ends
    owner: np.ndarray  # the call that reads it
    want: np.ndarray  # its checksum (uint64)
    mask: np.ndarray  # the bits of its xxh3-64 hash that it keeps


def _plan(
    bt: Batches, p: np.ndarray, b: np.ndarray, s: np.ndarray, d: np.ndarray, row: int
) -> _Plan:
    """The calls and checks of the sorted, distinct rows at places ``p`` (of batches ``b``,
    slots ``s``, into rows ``d`` of the result)."""
    m = len(p)
    whole = bt.checked & (np.bincount(b, minlength=len(bt.counts)) == bt.counts)
    new = np.ones(m, dtype=bool)  # where a unit starts: a batch read whole is one unit
    new[1:] = (b[1:] != b[:-1]) | ~whole[b[1:]]
    starts = np.flatnonzero(new)
    units = starts[bt.checked[b[starts]]]
    ends = np.append(starts, m)[np.searchsorted(starts, units) + 1]
    one = whole[b[units]]
    want = np.where(
        one, bt.hashes[b[units]].view(np.uint64), bt.row_hashes[bt.row_at[b[units]] + s[units]]
    )
    mask = np.where(one, np.uint64(2**64 - 1), np.uint64(0xFFFFFFFF))
    # runs of rows that follow one another in a file, cut once a piece is full at the next
    # row that starts a unit
    runs = np.ones(m, dtype=bool)
    runs[1:] = p[1:] != p[:-1] + row
    run_at = np.flatnonzero(runs)
    step = max(1, PIECE // row)
    full = (np.diff(np.append(run_at, m)) - 1) // step
    nth = np.arange(full.sum()) - np.repeat(np.cumsum(full) - full, full) + 1
    at = np.searchsorted(starts, np.repeat(run_at, full) + step * nth)
    calls = np.union1d(run_at, starts[at[at < len(starts)]])
    breaks = np.zeros(m, dtype=np.int64)
    breaks[1:] = np.cumsum(d[1:] != d[:-1] + 1)
    direct = breaks[np.append(calls[1:], m) - 1] == breaks[calls]
    size = np.diff(np.append(calls, m))
    owner = np.searchsorted(calls, units, side="right") - 1
    alone = np.zeros(len(calls), dtype=bool)  # one unit, the whole call: hashed as it is
    alone[owner] = (np.bincount(owner, minlength=len(calls))[owner] == 1) & (units == calls[owner])
    alone[owner] &= ends == np.append(calls[1:], m)[owner]
    several = (np.bincount(owner, minlength=len(calls)) > 0) & ~alone
    norms = ~direct | (size >= 8)  # rows read one or a few at a time: in blocks after
    # after its read, in bits: scatter into place, take norms, hash one unit, hash several
    mode = ~direct * 1 | norms * 2 | alone * 4 | several * 8
    return _Plan(calls, size, direct, mode, units, ends, owner, want, mask)


def _read(
    opened: list[Opened],
    plan: _Plan,
    p: np.ndarray,
    d: np.ndarray,
    out: np.ndarray,
    squares: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """The calls of ``plan``, each read, its norms taken and its units checked; which of the
    rows arrived, and which fail a checksum."""
    m, row, calls, size, owner = len(p), 4 * out.shape[1], plan.calls, plan.size, plan.owner
    # the calls that read into a buffer each take a place in one scratch block where their
    # copy is fast (see PAGE)
    scratch = np.empty(row * int(size[~plan.direct].max(initial=0)) + PAGE, dtype=np.uint8)
    first = np.searchsorted(plan.units, np.append(calls, m)).tolist()
    starts, ends = (plan.units - calls[owner]).tolist(), (plan.ends - calls[owner]).tolist()
    at = d[calls].tolist()
    offsets = (p[calls] & _LOW).tolist()
    # each buffer a slice of ``out`` or of the scratch buffer, made in C (a Python loop per
    # call costs about what its read does)
    bufs = list(map(out.__getitem__, map(slice, at, (d[calls] + size).tolist())))
    for c in np.flatnonzero(~plan.direct).tolist():
        start = _start(scratch.ctypes.data, offsets[c])
        bufs[c] = scratch[start : start + row * int(size[c])].view(np.float32).reshape(-1, row // 4)
    fds = [-1 if entry is None else entry[0] for entry in opened]
    arrived: list[int] = []
    sums: list[int] = []
    for f, offset, lo, to, k, buf, how, u0, u1 in zip(
        (p[calls] >> 40).tolist(),
        offsets,
        calls.tolist(),
        at,
        (size * row).tolist(),
        bufs,
        plan.mode.tolist(),
        first[:-1],
        first[1:],
        strict=True,
    ):
        try:
            got = _read_into(fds[f], [buf], offset)
            if 0 < got < k:
                got = _rest(fds[f], buf, offset, got)
        except OSError:  # an unreadable stretch (or a file never opened): missing rows
            got = 0
        got //= row
        arrived.append(got)
        if how == 4:  # one row (a shard's), or one batch, read straight into place
            sums.append(_hash(buf))
            continue
        if how & 1:
            out[d[lo : lo + got]] = buf[:got]
        if how & 2:  # while it is in the CPU's cache
            if how & 1:
                squares[d[lo : lo + got]] = squared_norms(buf[:got])
            else:
                squares[to : to + got] = squared_norms(buf[:got])
        if how & 4:
            sums.append(_hash(buf))
        elif how & 8:
            sums += map(_hash, map(buf.__getitem__, map(slice, starts[u0:u1], ends[u0:u1])))
    got_rows = np.array(arrived, dtype=np.int64)
    done = np.arange(m) - np.repeat(calls, size) < np.repeat(got_rows, size)
    bad = np.array(sums, dtype=np.uint64) & plan.mask != plan.want
    bad |= plan.ends - calls[owner] > got_rows[owner]  # not read whole
    late = np.zeros(len(out), dtype=bool)
    late[d[done & ~np.repeat(plan.mode & 2 > 0, size)]] = True
    step = max(1, PIECE // row)
    for lo in np.flatnonzero(np.add.reduceat(late, range(0, len(out), step))).tolist():
        block, mine = slice(lo * step, (lo + 1) * step), late[lo * step : (lo + 1) * step]
        squares[block][mine] = squared_norms(out[block])[mine]
    cover = np.zeros(m + 1, dtype=np.int64)
    np.add.at(cover, plan.units[bad], 1)
    np.add.at(cover, plan.ends[bad], -1)
    return done, np.cumsum(cover[:m]) > 0


def _rest(fd: int, buf: np.ndarray, offset: int, done: int) -> int:
    """``buf`` read in part (a signal, or the end of the file): the rest read from there;
    returns the bytes read in all."""
    view = buf.reshape(-1).view(np.uint8)
    while done < len(view):
        step = _read_into(fd, [view[done:]], offset + done)
        if step <= 0:
            break
        done += step
    return done


def _pread(fd: int, buffers: list[np.ndarray], offset: int) -> int:  # pragma: no cover
    """``os.preadv`` where the platform lacks it: into the one buffer."""
    view = buffers[0].reshape(-1).view(np.uint8)
    data = os.pread(fd, len(view), offset)
    view[: len(data)] = np.frombuffer(data, dtype=np.uint8)
    return len(data)


_read_into = cast(Callable[[int, list[np.ndarray], int], int], getattr(os, "preadv", _pread))

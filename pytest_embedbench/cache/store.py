"""The embedding cache: :class:`EmbeddingCache`, its reads and writes.

A stored vector is checked as strictly as a provider's response, with the same checks
(:mod:`pytest_embedbench.core.vectors`: finite, the expected dimension, unit norm when the
namespace normalises); a damaged row, or a batch whose segment file is cut short, gone or named
outside the folder (never opened), is reported missing, so the caller embeds it again and
overwrites it. A fault of the files is told apart as :mod:`.faults` says.
"""

from __future__ import annotations

import errno
import os
import sqlite3
import threading
import time
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, TypedDict, TypeVar

import numpy as np

from ..core.exceptions import CacheError, EmbedBenchWarning
from ..core.vectors import finite_rows, unit_rows
from . import compact, faults, index, migrate, segments
from .faults import corrupt, reason, retry_busy
from .index import FILENAME, SCHEMA_VERSION
from .index import text_key as text_key  # importers of cache.store keep finding it here

if TYPE_CHECKING:  # typing.Unpack from Python 3.11 on; a type checker knows it in any version
    from typing_extensions import Unpack

__all__ = ["EmbeddingCache", "default_cache_dir"]

T = TypeVar("T")


class Checks(TypedDict, total=False):
    """What a read checks its stored vectors against (:meth:`EmbeddingCache.get_matrix`)."""

    dim: int | None
    unit_norm: bool


def default_cache_dir() -> Path:
    """The folder used when ``cache=True``."""
    env = os.environ.get("EMBEDBENCH_CACHE_DIR")
    if env:
        return Path(env)
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg) if xdg else Path.home() / ".cache"
    return base / "pytest-embedbench"


class EmbeddingCache:
    """Embedding vectors stored by (namespace, SHA-256 of text) in ``folder``."""

    def __init__(self, folder: str | Path) -> None:
        self.folder = Path(folder)
        self.path = self.folder / FILENAME
        self._local = threading.local()
        #: writes this object made (any thread): a key index read before one is brought up
        #: to date after it
        self._writes = 0
        #: why this run goes on without the cache (None while it is in use)
        self.unavailable: str | None = None
        #: why this run no longer writes to the cache (reads go on)
        self.read_only: str | None = None
        #: segment files removed as links (their rows read as missing, warned about once)
        self._refused: set[str] = set()
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            if exc.errno != errno.ENOSPC:
                raise CacheError(
                    f"cannot create the embedding cache folder {str(self.folder)!r}: {exc}; "
                    "give another folder (--embedbench-cache-dir in a test run, cache= in "
                    "Python) or run without the cache (--embedbench-no-cache, cache=False)"
                ) from None
            self._turn_off(f"cannot create its folder: {exc.strerror}")
            return
        self._connect()

    @classmethod
    def open(cls, cache: bool | str | Path | EmbeddingCache | None) -> EmbeddingCache | None:
        """``True``: the default folder; ``False``/``None``: no cache; a path: that folder."""
        if isinstance(cache, EmbeddingCache):
            return cache
        if cache is None or cache is False:
            return None
        if cache is True:
            return cls(default_cache_dir())
        if isinstance(cache, (str, os.PathLike)):
            return cls(Path(cache))
        raise CacheError(f"cache={cache!r}: use True, False or a folder path")

    # -- connection and faults -------------------------------------------------------------

    def _conn(self) -> sqlite3.Connection | None:
        """This thread's connection, or None when the run goes on without the cache."""
        if self.unavailable is not None:
            return None
        conn = getattr(self._local, "conn", None)
        if conn is None or getattr(self._local, "pid", None) != os.getpid():
            conn = self._connect()
        return conn

    def _open(self) -> sqlite3.Connection:
        """A configured connection; SQLite errors propagate. An older file is migrated here;
        a file of another schema version is moved aside (a format change, not a fault)."""
        conn = sqlite3.connect(self.path, timeout=faults.LOCK_WAIT_S, isolation_level=None)
        try:
            conn.execute(f"PRAGMA busy_timeout = {int(1000 * faults.LOCK_WAIT_S)}")
            conn.execute("PRAGMA journal_mode = WAL")
            conn.execute("PRAGMA synchronous = NORMAL")
            # no memory map: its pages would count in the process's RSS (a budgeted search
            # that streams a 1.6 GB cache showed 1 GB more), for ~10% faster bulk reads
            conn.execute("PRAGMA mmap_size = 0")
            version, layout = index.prepare(conn)
            if migrate.needed(conn, version, layout):
                version = migrate.run(conn, self.folder)
        except BaseException:
            conn.close()
            raise
        if version != str(SCHEMA_VERSION):
            conn.close()
            self._move_aside(f"schema version {version!r}, expected {SCHEMA_VERSION}")
            return self._open()
        return conn

    def _connect(self) -> sqlite3.Connection | None:
        self._refuse_links()
        moved = False
        while True:
            try:
                conn = retry_busy(self._open)
            except sqlite3.Error as exc:
                if faults.kind(exc) == "corrupt" and not moved:
                    self._move_aside(str(exc))
                    moved = True
                    continue
                self._turn_off(reason(exc, "opening it", self.folder))
                return None
            self._local.conn = conn
            self._local.pid = os.getpid()
            self._local.keys = {}  # read on another connection: not to be trusted
            return conn

    def _refuse_links(self) -> None:
        """The cache's own files are never reached through a symbolic link (SQLite, and a
        read, would follow one into another file, or create the file it names): a link in
        place of the index sets it aside with its segment files, as corruption does; a link in
        place of its WAL or shared-memory file, or of a segment file, is removed (what it
        points to is left as it is). Each with a warning naming the link."""
        if self.path.is_symlink():
            self._move_aside(
                f"it is a symbolic link to {os.readlink(self.path)!r}, and the cache never "
                "follows a link",
                "link",
            )
        for path in [Path(f"{self.path}{s}") for s in ("-wal", "-shm")] + [
            self.folder / name for name in segments.names(self.folder)
        ]:
            if not path.is_symlink():
                continue
            target = os.readlink(path)
            try:
                path.unlink()
                self._refused.add(path.name)
            except OSError as exc:
                self._turn_off(f"{str(path)!r} is a symbolic link that cannot be removed: {exc}")
                return
            what = (
                "its vectors are embedded again"
                if path.suffix == ".f32"
                else "SQLite makes it anew"
            )
            self._warn(
                f"embedding cache {str(self.path)!r}: {str(path)!r} was a symbolic link to "
                f"{target!r}; the cache never follows a link, so it removed the link (its "
                f"target is left as it is) and {what}"
            )

    def _warn(self, message: str) -> None:
        warnings.warn(message, EmbedBenchWarning, stacklevel=5)

    def _turn_off(self, reason: str) -> None:
        """Go on without the cache for the rest of this run; the file stays as it is."""
        if self.unavailable is None:
            self.unavailable = reason
            self.close()
            self._warn(
                f"embedding cache {str(self.path)!r} cannot be used: {reason}. "
                "The file is left as it is; this run goes on without the cache, "
                "so documents are embedded and not stored"
            )

    def _stop_writing(self, reason: str) -> None:
        """Go on reading but stop writing for the rest of this run."""
        if self.read_only is None and self.unavailable is None:
            self.read_only = reason
            self._warn(
                f"embedding cache {str(self.path)!r} cannot store vectors: {reason}. "
                "The file is left as it is; this run goes on reading it but no longer writes "
                "to it, so new vectors will be embedded again next time"
            )

    def _move_aside(self, why: str, tag: str = "corrupt") -> None:
        """Keep a corrupt file (or a link in its place: moved, never followed), its WAL and the
        segment files it indexed for inspection, and start a fresh one."""
        stamp = f".{tag}-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}"
        self._writer().close()
        for name in [FILENAME, f"{FILENAME}-wal", f"{FILENAME}-shm", *segments.names(self.folder)]:
            try:
                os.replace(self.folder / name, self.folder / f"{name}{stamp}")
            except OSError:
                if name.startswith(FILENAME):  # the fresh index must not open it
                    (self.folder / name).unlink(missing_ok=True)
        self._warn(
            f"embedding cache {str(self.path)!r} was unreadable ({why}); moved it to "
            f"{str(self.path) + stamp!r} and started an empty cache, so documents will be "
            "embedded again"
        )

    def _attempt(
        self, conn: sqlite3.Connection, action: Callable[[], T], doing: str, vectors: int
    ) -> T | None:
        """``action()`` (reading or writing ``vectors`` vectors), retried while the file is
        locked; None when it failed (:meth:`_failed`)."""
        try:
            return retry_busy(action)
        except sqlite3.Error as exc:
            self._failed(conn, exc, doing, vectors)
            return None

    def _failed(
        self, conn: sqlite3.Connection, exc: sqlite3.Error, doing: str, vectors: int
    ) -> None:
        """A read or a write failed: a lock held too long skips it; corruption sets the file
        aside and starts a fresh cache; anything else stops what failed for the rest of the run."""
        if faults.kind(exc) == "busy":
            then = "embedded again" if doing == "reading it" else "not stored"
            self._warn(
                f"embedding cache {str(self.path)!r}: {reason(exc, doing, self.folder)}; this "
                f"time its {vectors} vector(s) are {then}, results are unaffected"
            )
        elif corrupt(conn, exc):
            self.close()
            self._move_aside(str(exc))
            self._connect()
        elif doing == "reading it":
            self._turn_off(reason(exc, doing, self.folder))
        else:
            self._stop_writing(reason(exc, doing, self.folder))

    def _writer(self) -> segments.Writer:
        """This thread's segment writer."""
        writer = getattr(self._local, "writer", None)
        if writer is None:
            writer = self._local.writer = segments.Writer(self.folder)
        return writer

    def close(self) -> None:
        self._writer().close()  # its lock goes with it
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None

    # -- reads -----------------------------------------------------------------------------

    def get_matrix(
        self,
        namespace: str,
        keys: Sequence[bytes],
        *,
        dim: int | None = None,
        unit_norm: bool = False,
    ) -> tuple[np.ndarray, list[int]]:
        """Cached vectors as one ``(len(keys), dim)`` float32 matrix in the order of ``keys``
        (rows of missing keys are zero), and the indices of ``keys`` that were missing.

        A stored vector is used only if it is what the namespace promises: ``dim`` values (when
        None, the dimension every stored batch agrees on; 0 columns when none is usable), all
        finite, and of norm 1 when ``unit_norm``. A damaged vector counts as missing, so the
        caller embeds it again and :meth:`put_many` overwrites it; one warning gives the count,
        the namespace and the file.
        """
        matrix, found = self._read(namespace, keys, dim, unit_norm)
        return matrix, np.flatnonzero(~found).tolist()

    def get_many(
        self, namespace: str, keys: Sequence[bytes], **checks: Unpack[Checks]
    ) -> tuple[dict[bytes, np.ndarray], list[int]]:
        """As :meth:`get_matrix` (the same keyword arguments), the vectors found by key."""
        matrix, found = self._read(namespace, keys, **checks)
        if found.all():  # iterating the matrix gives its rows as views, faster than indexing
            return dict(zip(keys, matrix, strict=True)), []
        rows = np.flatnonzero(found).tolist()
        vectors = dict(zip([keys[i] for i in rows], matrix[found], strict=True))
        return vectors, np.flatnonzero(~found).tolist()

    def _read(
        self, namespace: str, keys: Sequence[bytes], dim: int | None = None, unit_norm: bool = False
    ) -> tuple[np.ndarray, np.ndarray]:
        """A ``(len(keys), dim)`` matrix of the stored vectors in the order of ``keys`` (a
        repeated key in each of its rows) and which rows hold a sound one (the others are
        zero: not stored, or damaged)."""
        _check_keys(keys, "a read")
        conn = self._conn()
        located = None
        if conn is not None and len(keys):
            located = self._attempt(
                conn, lambda: self._locate(conn, namespace, keys), "reading it", len(keys)
            )
        if located is None:
            return _empty(len(keys), dim), np.zeros(len(keys), dtype=bool)
        return self._checked(namespace, located, dim, unit_norm)

    def _locate(
        self, conn: sqlite3.Connection, namespace: str, keys: Sequence[bytes]
    ) -> index.Located | None:
        """Where the stored ``keys`` are, in one read snapshot (None: no such namespace)."""
        # read before the snapshot: a commit by another connection after it changes it, so
        # what is known of the keys is never reused stale (this object's own writes are
        # counted apart)
        (data_version,) = conn.execute("PRAGMA data_version").fetchone()
        version = (int(data_version), self._writes)
        known: dict[str, index.Known] = self._local.keys
        conn.execute("BEGIN")
        try:
            nsid = index.namespace_id(conn, namespace, create=False)
            if nsid is None:
                known.pop(namespace, None)
                return None
            known[namespace] = index.refresh(conn, nsid, version, known.get(namespace))
        finally:
            if conn.in_transaction:
                conn.execute("COMMIT")
        return index.locate(known[namespace], keys)

    def _checked(
        self, namespace: str, loc: index.Located, dim: int | None, unit_norm: bool
    ) -> tuple[np.ndarray, np.ndarray]:
        """The located vectors read into one matrix in key order and checked in bulk: per
        batch its bytes and dimension, per vector finite values and the norm; one warning
        counts the damaged ones (each distinct key once) by fault."""
        which, slot, bt = loc.which, loc.slot, loc.batches
        n = len(which)
        stored = which >= 0
        if not stored.any():
            return _empty(n, dim), stored
        b = np.where(stored, which, 0)
        used = np.flatnonzero(np.bincount(bt.code[which[stored]], minlength=len(bt.files)))
        opened = segments.open_files(self.folder, bt.files, used.tolist())
        try:
            size = np.array([-1 if f is None else f[1] for f in opened], dtype=np.int64)
            # a batch is whole when its file holds every byte of it (a file gone, cut short,
            # or named outside the folder holds none)
            whole = (bt.dims > 0) & (bt.offsets >= 0)
            whole &= size[bt.code] >= bt.offsets + 4 * bt.dims * bt.counts
            fits = stored & whole[b] & (slot < bt.counts[b])
            if dim is None:  # the provider learns its dimension from its first answer
                dims = set(bt.dims[np.unique(which[fits])].tolist())
                if len(dims) > 1:
                    # the batches disagree and nothing says which dimension is the model's:
                    # guessing (the most rows) fails the run with the model blamed when the
                    # damaged rows are the most, so none is used and the model's answers
                    # replace them all
                    self._warn(
                        f"embedding cache {str(self.path)!r}: the "
                        f"{_distinct(stored, which, slot)} vector(s) found in namespace "
                        f"{namespace!r} have {len(dims)} dimensions "
                        f"({', '.join(map(str, sorted(dims)))}) and the model has not told "
                        "its own yet; none is used: they are embedded again and overwritten"
                    )
                    return _empty(n, None), np.zeros(n, dtype=bool)
                dim = dims.pop() if dims else 0
            rows = np.flatnonzero(fits & (bt.dims[b] == dim))
            # every row of the matrix is written (a missing or damaged one with zeros)
            matrix, got, unsound, squares = segments.read_rows(
                opened, bt, b[rows], slot[rows], rows, (n, dim)
            )
        finally:
            segments.close_files(opened)
        ok = np.zeros(n, dtype=bool)
        ok[rows[got & ~unsound]] = True
        if not ok.all():
            matrix[~ok] = 0.0  # not stored, damaged, or never read
            squares[~ok] = 0.0
        finite = finite_rows(matrix, squares)
        good = ok & finite & (unit_rows(squares) if unit_norm else True)
        if np.count_nonzero(good) == np.count_nonzero(stored):
            return matrix, good
        matrix[ok & ~good] = 0.0  # a damaged vector reads as missing: a zero row
        broken = stored & ~fits
        broken[rows[~got]] = True  # its file cut short since it was opened, or unreadable
        garbled = np.zeros(n, dtype=bool)
        garbled[rows[got & unsound]] = True
        faults = {
            "a byte length that does not match its dimension": broken,
            "bytes that do not match their batch's checksum": garbled,
            f"a dimension other than {dim}": fits & (bt.dims[b] != dim),
            "NaN or infinite values": ok & ~finite,
            "a norm other than 1 (the namespace normalises)": ok & finite & ~good,
        }
        message = self._damage(namespace, loc, faults)
        if message:  # warned here, so that the warning names the caller of the read
            self._warn(message)
        return matrix, good

    def _damage(self, namespace: str, loc: index.Located, faults: dict[str, np.ndarray]) -> str:
        """The warning that counts the damaged vectors (each distinct one once) by fault and
        names the segment files of those whose bytes are damaged. The rows of a segment file
        removed as a link are not counted: that was told when it was removed."""
        which, slot, bt = loc.which, loc.slot, loc.batches
        b = np.where(which >= 0, which, 0)
        broken = faults["a byte length that does not match its dimension"]
        if self._refused:
            refused = np.array([f in self._refused for f in bt.files], dtype=bool)
            broken &= ~refused[bt.code[b]]
        counts = {what: _distinct(mask, which, slot) for what, mask in faults.items() if mask.any()}
        if not counts:
            return ""
        detail = ", ".join(f"{k} with {what}" for what, k in sorted(counts.items()))
        codes = bt.code[b[broken | faults["bytes that do not match their batch's checksum"]]]
        files = sorted({bt.files[c] or "" for c in codes.tolist()} - {""})
        where = f" in {', '.join(repr(str(self.folder / f)) for f in files)}" if files else ""
        return (
            f"embedding cache {str(self.path)!r}: {sum(counts.values())} damaged vector(s) "
            f"in namespace {namespace!r}{where} ({detail}) were dropped; they are embedded "
            "again and overwritten"
        )

    # -- writes ----------------------------------------------------------------------------

    def put_many(self, namespace: str, keys: Sequence[bytes], vectors: np.ndarray) -> None:
        """Store ``vectors[i]`` under ``keys[i]`` (a :func:`text_key`) in one transaction, as
        one batch.

        Never raises for a fault of the file or the disk: a full disk stops writes for the
        rest of the run, a lock that outlasts :data:`BUSY_WAIT_S` skips this batch, each with
        a warning; results are unaffected.
        """
        arr = np.ascontiguousarray(vectors, dtype=np.float32)
        if arr.ndim != 2 or arr.shape[0] != len(keys):
            raise CacheError(f"put_many: {len(keys)} keys for vectors of shape {arr.shape}")
        _check_keys(keys, "put_many")
        if self.read_only is not None or not len(keys):
            return
        conn = self._conn()
        if conn is None:
            return
        keys = [bytes(k) for k in keys]
        self._writes += 1  # what a read knew of the keys before this write is brought up to date
        try:  # the vectors reach the disk before the index points to them
            place = self._writer().append(arr.data.cast("B"), row=4 * arr.shape[1])
        except OSError as exc:
            self._stop_writing(reason(exc, "writing a segment file", self.folder))
            return

        def write() -> set[str | None]:
            with index.writing(conn):
                nsid = index.namespace_id(conn, namespace, create=True)
                assert nsid is not None  # created when missing
                return index.insert_batch(conn, nsid, keys, arr.shape[1], place)

        touched = self._attempt(conn, write, "writing to it", len(keys))
        if touched:  # older vectors died: their files may be mostly dead now
            compact.reclaim(conn, self.folder, touched)

    def _require(self) -> sqlite3.Connection:
        conn = self._conn()
        if conn is None:
            raise CacheError(
                f"embedding cache {str(self.path)!r} is not in use: {self.unavailable}"
            )
        return conn

    def count(self, namespace: str | None = None) -> int:
        """Number of stored vectors (in one namespace, or all)."""
        sql = f"SELECT COUNT(*) FROM entries{_IN_NS}"
        return int(self._require().execute(sql, (namespace,)).fetchone()[0])

    def clear(self, namespace: str | None = None) -> None:
        """Drop every vector (of one namespace, or all)."""
        conn = self._require()
        self._writes += 1
        with index.writing(conn):
            touched = {
                f for (f,) in conn.execute(f"SELECT file FROM batches{_IN_NS}", (namespace,))
            }
            for table in ("entries", "batches"):
                conn.execute(f"DELETE FROM {table}{_IN_NS}", (namespace,))
            conn.execute("DELETE FROM namespaces WHERE ?1 IS NULL OR name = ?1", (namespace,))
        self._writer().close()  # this writer's own segment may hold nothing live now
        compact.reclaim(conn, self.folder, touched)

    def compact(self) -> int:
        """Compact every segment file held by no writer whose live vectors fill at most half
        of it, and delete those no batch points to (a write or a clear does so for the files
        it touched); returns the bytes given back."""
        conn = self._require()
        self._writes += 1
        before = _bytes(self.folder)
        compact.reclaim(conn, self.folder, segments.names(self.folder))
        return before - _bytes(self.folder)


#: rows of the namespace named by the one parameter (None: of every namespace)
_IN_NS = " WHERE ns IN (SELECT id FROM namespaces WHERE ?1 IS NULL OR name = ?1)"


def _check_keys(keys: Sequence[bytes], doing: str) -> None:
    if len(keys) and set(map(len, keys)) != {index.KEY_BYTES}:
        raise CacheError(f"{doing}: a cache key is a text_key digest ({index.KEY_BYTES} bytes)")


def _bytes(folder: Path) -> int:
    """The bytes of the segment files in ``folder``."""
    total = 0
    for name in segments.names(folder):
        try:
            total += (folder / name).stat().st_size
        except OSError:
            pass
    return total


def _distinct(mask: np.ndarray, which: np.ndarray, slot: np.ndarray) -> int:
    """How many distinct stored vectors the asked keys under ``mask`` point to (a key asked
    twice counts once)."""
    places = which[mask] * (int(slot.max()) + 1) + slot[mask]
    return len(np.unique(places))


def _empty(n: int, dim: int | None) -> np.ndarray:
    return np.zeros((n, dim or 0), dtype=np.float32)

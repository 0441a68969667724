"""Persistent embedding cache (documents, and the queries of a scored pass), safe when several
processes share it.

Each namespace is the model's; each key the SHA-256 of the text that was embedded; no raw text
is stored. Each write (callers write once per provider batch) is one SQLite transaction, so an
interrupted run keeps what it finished and readers never see half a batch.

Layout (schema 3): a write appends its vectors, as raw float32 rows, to a segment file of the
writer's own (``vectors-<16 hex>.f32`` beside the index; each thread of each process has one,
locked while it is open) and flushes it to the disk (fdatasync); only then does the
transaction of the SQLite index (WAL journal, busy timeout) record the batch (table
``batches``: namespace, dimension, count, live slots, its keys, segment file and offset) and
one small row per vector mapping (namespace, key) to its batch and slot (table ``entries``,
WITHOUT ROWID). A crash between the two leaves bytes no row points to: never read. The folder
holds about 1.06x the raw vector bytes at 384 dimensions (the index: ~90 bytes a vector).
A vector written again (a damaged one re-embedded) points its entry to the new batch; a batch
none of whose slots is live any more is deleted, and a segment file no batch points to and no
writer holds is deleted with it (a partly dead one keeps its dead bytes). Files of older
schemas are migrated in place on first open, in one transaction: schema 2 (each batch one blob
in the SQLite file) gains the segment columns and its blobs are read where they are; schema 1
(one row per vector, ~3x the raw bytes) is regrouped into such blobs, then VACUUMed.

Reading many keys of a namespace matches them against its batches' key lists in numpy and
reads each segment's batches with one ``preadv`` into the result (keys in the stored order: a
corpus read back in the order it was embedded) or into a buffer gathered once in key order; no
memory map, so nothing of the files counts in the process's RSS.

Faults are told apart, because only one of them justifies touching the file:

* corruption (SQLite reports a malformed image that ``PRAGMA quick_check`` confirms, or "file
  is not a database"): the file and its segment files are moved aside for inspection and the
  cache rebuilt, with a warning;
* locked or busy (several processes creating one cache at once): retried for up to
  ``BUSY_WAIT_S`` seconds, then this run goes on without the cache;
* a full disk or another I/O error (of the index or a segment file): the files are left as
  they are, and the run goes on without writing (or, when it cannot even be opened, without
  the cache), with one warning naming the file and the reason.

A stored vector is checked as strictly as a provider's response (finite, the expected
dimension, unit norm when the namespace normalises); a damaged row, or a batch whose segment
file is cut short, gone or named outside the folder (never opened), is reported missing, so the
caller embeds it again and overwrites it.

Usage::

    cache = EmbeddingCache.open(True)            # default folder; False -> None; a path -> there
    vectors, missing = cache.get_many(namespace, keys, dim=384, unit_norm=True)
    cache.put_many(namespace, new_keys, new_vectors)

The default folder is ``$EMBEDBENCH_CACHE_DIR``, else ``$XDG_CACHE_HOME/pytest-embedbench``,
else ``~/.cache/pytest-embedbench``.
"""

from __future__ import annotations

import errno
import hashlib
import os
import random
import re
import shutil
import sqlite3
import threading
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import numpy as np

from ..core.exceptions import CacheError, EmbedBenchWarning

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: no advisory locks, so segments are kept
    fcntl = None  # type: ignore[assignment]

__all__ = ["CacheStats", "EmbeddingCache", "default_cache_dir", "text_key"]

T = TypeVar("T")

FILENAME = "embeddings.sqlite3"
SCHEMA_VERSION = 3
#: older schemas that are migrated in place rather than moved aside
_MIGRATES = ("1", "2")
#: a writer starts a new segment file once its current one holds this many bytes
SEGMENT_BYTES = 1 << 30
#: the name of a segment file (vectors appended by one writer); nothing else is ever read,
#: written or deleted as a segment, whatever the index says
_SEGMENT = re.compile(r"vectors-[0-9a-f]{16}\.f32")
#: vectors per batch when a schema-1 file is migrated
_MIGRATE_BATCH = 1024
#: a read of at least SCAN_MIN keys matches them against the namespace's key index (built in
#: one pass over its key lists, then kept while nothing is written) once the keys asked since
#: it was last built reach SCAN_SHARE of the namespace; until then, and for fewer keys, each
#: key is looked up in SQLite's B-tree (building the index of 1M keys costs about what 80k
#: B-tree lookups do)
SCAN_MIN, SCAN_SHARE = 2000, 0.05
_KEY_BYTES = 32  # a SHA-256 digest (text_key)
#: bytes of the file SQLite reads through a memory map (the rest through read()); 0: none
MMAP_BYTES = 0
_CHUNK = 500  # SQLite's default limit on host parameters is 999
#: bytes of a segment read at a time, so that checking them finds them in the CPU's cache
_PIECE = 1 << 21
#: bytes of batches read side by side at a time before their rows are gathered in key order
_STAGE_BYTES = 1 << 22
#: buffers one ``preadv`` takes at most (the platform's IOV_MAX; 1024 on Linux)
try:
    _IOV_MAX = max(1, min(1024, int(os.sysconf("SC_IOV_MAX"))))
except (AttributeError, ValueError, OSError):  # pragma: no cover - no such limit to ask
    _IOV_MAX = 16
#: how long opening, reading or writing keeps retrying "database is locked" before giving up
BUSY_WAIT_S = 30.0
#: how far a stored vector's norm may be from 1 in a namespace that normalises (float32 rounding
#: stays below 1e-5 even at 4096 dimensions)
NORM_TOLERANCE = 1e-3

# SQLite's primary result codes (the low byte of an extended code)
_SQLITE_BUSY, _SQLITE_LOCKED, _SQLITE_CORRUPT, _SQLITE_FULL, _SQLITE_NOTADB = 5, 6, 11, 13, 26


def _fault(exc: sqlite3.Error) -> str:
    """What a SQLite error means here: "corrupt", "busy", "full" or "io" (anything else)."""
    code = getattr(exc, "sqlite_errorcode", None)
    primary = code & 0xFF if isinstance(code, int) else None
    text = str(exc).lower()
    if primary in (_SQLITE_CORRUPT, _SQLITE_NOTADB) or (
        primary is None and ("malformed" in text or "not a database" in text)
    ):
        return "corrupt"
    if primary in (_SQLITE_BUSY, _SQLITE_LOCKED) or (
        primary is None and ("locked" in text or "busy" in text)
    ):
        return "busy"
    if primary == _SQLITE_FULL or (primary is None and "full" in text):
        return "full"
    return "io"


class _Busy(Exception):
    """Retrying "database is locked" ran out of time."""

    def __init__(self, exc: sqlite3.Error) -> None:
        super().__init__(str(exc))
        self.exc = exc


def _retry_busy(action: Callable[[], T]) -> T:
    """``action()``, retried with jittered backoff while SQLite answers busy or locked.

    The busy timeout covers ordinary waits; this covers the cases where SQLite returns
    SQLITE_BUSY at once (switching a fresh file to WAL while another process does the same, a
    stale read snapshot), for at most :data:`BUSY_WAIT_S` seconds.
    """
    deadline = time.monotonic() + BUSY_WAIT_S
    delay = 0.01
    while True:
        try:
            return action()
        except sqlite3.Error as exc:
            if _fault(exc) != "busy":
                raise
            if time.monotonic() >= deadline:
                raise _Busy(exc) from None
        time.sleep(delay * (0.5 + random.random()))
        delay = min(delay * 2, 0.5)


def default_cache_dir() -> Path:
    """The folder used when ``cache=True``."""
    env = os.environ.get("EMBEDBENCH_CACHE_DIR")
    if env:
        return Path(env)
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg) if xdg else Path.home() / ".cache"
    return base / "pytest-embedbench"


def text_key(text: str) -> bytes:
    """SHA-256 digest of the text as embedded: the cache key within a namespace."""
    return hashlib.sha256(text.encode("utf-8")).digest()


@dataclass
class CacheStats:
    """Hits and misses of one evaluation's lookups (its documents, or its scored queries)."""

    hits: int = 0
    misses: int = 0

    @property
    def hit_rate(self) -> float:
        total = self.hits + self.misses
        return self.hits / total if total else 0.0

    def to_dict(self) -> dict[str, float]:
        """``hits``, ``misses`` and ``hit_rate``, as a result's JSON record keeps them."""
        return {"hits": self.hits, "misses": self.misses, "hit_rate": self.hit_rate}


class EmbeddingCache:
    """Embedding vectors stored by (namespace, SHA-256 of text) in ``folder``."""

    def __init__(self, folder: str | Path) -> None:
        self.folder = Path(folder)
        self.path = self.folder / FILENAME
        self._local = threading.local()
        #: writes this object made (any thread): a key index built before one is rebuilt
        self._writes = 0
        #: keys asked per namespace since its key index was last built or found stale
        self._asked: dict[str, int] = {}
        #: why this run goes on without the cache (None while it is in use)
        self.unavailable: str | None = None
        #: why this run no longer writes to the cache (reads go on)
        self.read_only: str | None = None
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

    # -- connection ------------------------------------------------------------------------

    def _conn(self) -> sqlite3.Connection | None:
        """This thread's connection, or None when the run goes on without the cache."""
        if self.unavailable is not None:
            return None
        conn = getattr(self._local, "conn", None)
        if conn is None or getattr(self._local, "pid", None) != os.getpid():
            conn = self._connect()
        return conn

    def _open(self) -> sqlite3.Connection:
        """A configured connection; SQLite errors propagate. A schema-1 file is migrated here;
        a file of another schema version is moved aside (a format change, not a fault)."""
        conn = sqlite3.connect(self.path, timeout=60.0, isolation_level=None)
        try:
            conn.execute("PRAGMA busy_timeout = 60000")
            conn.execute("PRAGMA journal_mode = WAL")
            conn.execute("PRAGMA synchronous = NORMAL")
            # no memory map: its pages would count in the process's RSS (a budgeted search
            # that streams a 1.6 GB cache showed 1 GB more), for ~10% faster bulk reads
            conn.execute(f"PRAGMA mmap_size = {MMAP_BYTES}")
            conn.execute(
                "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)"
            )
            conn.execute(
                "INSERT OR IGNORE INTO meta VALUES ('schema_version', ?)",
                (str(SCHEMA_VERSION),),
            )
            conn.execute(
                "CREATE TABLE IF NOT EXISTS namespaces (id INTEGER PRIMARY KEY,"
                " name TEXT NOT NULL UNIQUE, size INTEGER NOT NULL DEFAULT 0)"
            )
            conn.execute(
                "CREATE TABLE IF NOT EXISTS batches (id INTEGER PRIMARY KEY,"
                " ns INTEGER NOT NULL, dim INTEGER NOT NULL, count INTEGER NOT NULL,"
                " live INTEGER NOT NULL, keys BLOB NOT NULL, data BLOB NOT NULL,"
                " file TEXT, offset INTEGER)"
            )
            conn.execute("CREATE INDEX IF NOT EXISTS batches_ns ON batches (ns)")
            conn.execute(
                "CREATE TABLE IF NOT EXISTS entries (ns INTEGER NOT NULL, key BLOB NOT NULL,"
                " batch INTEGER NOT NULL, slot INTEGER NOT NULL, PRIMARY KEY (ns, key))"
                " WITHOUT ROWID"
            )
            (version,) = conn.execute(
                "SELECT value FROM meta WHERE key = 'schema_version'"
            ).fetchone()
            if version in _MIGRATES:
                version = self._migrate(conn)
        except BaseException:
            conn.close()
            raise
        if version != str(SCHEMA_VERSION):
            conn.close()
            self._move_aside(f"schema version {version!r}, expected {SCHEMA_VERSION}")
            return self._open()
        return conn

    def _migrate(self, conn: sqlite3.Connection) -> str:
        """Migrate an older file in place, in one transaction (another process opening the file
        at the same time waits, then finds it migrated). Schema 1: its rows (one row per vector
        in table ``vectors``) move into batches of :data:`_MIGRATE_BATCH` held in the file, then
        VACUUM gives the space back; a row whose byte length does not match its dimension is
        left out (it would have been reported damaged and embedded again anyway). Schema 2:
        table ``batches`` gains the columns that point a batch to a segment file; its batches
        stay in the file and are read from there. Returns the schema version now."""
        conn.execute("BEGIN IMMEDIATE")
        vacuum = False
        try:
            (version,) = conn.execute(
                "SELECT value FROM meta WHERE key = 'schema_version'"
            ).fetchone()
            if version in _MIGRATES:
                columns = {row[1] for row in conn.execute("PRAGMA table_info(batches)")}
                for column in ("file TEXT", "offset INTEGER"):
                    if column.split()[0] not in columns:
                        conn.execute(f"ALTER TABLE batches ADD COLUMN {column}")
            if version == "1":
                vacuum = True
                has_rows = conn.execute(
                    "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'vectors'"
                ).fetchone()
                if has_rows:
                    names = [n for (n,) in conn.execute("SELECT DISTINCT ns FROM vectors")]
                    for name in names:
                        self._migrate_namespace(conn, name)
                    conn.execute("DROP TABLE vectors")
            if version in _MIGRATES:
                conn.execute(
                    "UPDATE meta SET value = ? WHERE key = 'schema_version'",
                    (str(SCHEMA_VERSION),),
                )
                version = str(SCHEMA_VERSION)
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
        if vacuum:
            try:
                conn.execute("VACUUM")
            except sqlite3.Error:
                pass  # the space comes back at a later VACUUM; the file is migrated either way
        return version

    def _migrate_namespace(self, conn: sqlite3.Connection, name: str) -> None:
        nsid = _namespace_id(conn, name, create=True)
        assert nsid is not None  # created when missing
        rows = conn.execute(
            "SELECT key, dim, vec FROM vectors WHERE ns = ? ORDER BY dim", (name,)
        ).fetchall()
        by_dim: dict[int, list[tuple[bytes, bytes]]] = {}
        for key, dim, vec in rows:
            if dim > 0 and len(vec) == 4 * dim:
                by_dim.setdefault(dim, []).append((bytes(key), bytes(vec)))
        for dim, items in by_dim.items():
            for start in range(0, len(items), _MIGRATE_BATCH):
                part = items[start : start + _MIGRATE_BATCH]
                _insert_batch(conn, nsid, [k for k, _ in part], dim, b"".join(v for _, v in part))

    def _connect(self) -> sqlite3.Connection | None:
        moved = False
        while True:
            try:
                conn = _retry_busy(self._open)
            except _Busy as busy:
                self._turn_off(self._reason(busy.exc, "opening it"))
                return None
            except sqlite3.Error as exc:
                if _fault(exc) == "corrupt" and not moved:
                    self._move_aside(str(exc))
                    moved = True
                    continue
                self._turn_off(self._reason(exc, "opening it"))
                return None
            self._local.conn = conn
            self._local.pid = os.getpid()
            self._local.key_indexes = {}  # built on another connection: not to be trusted
            return conn

    def _reason(self, exc: sqlite3.Error, doing: str) -> str:
        """``exc`` told as what it is: locked, a full disk, corruption or an I/O error."""
        name = getattr(exc, "sqlite_errorname", None) or type(exc).__name__
        fault = _fault(exc)
        detail = f"{exc} ({name}) while {doing}"
        if fault == "busy":
            return f"{detail}; other processes held it locked for over {BUSY_WAIT_S:.0f} s"
        if fault == "corrupt":
            return f"{detail}; the file is damaged"
        try:
            free = shutil.disk_usage(self.folder).free
        except OSError:
            free = None
        if fault == "full" or free == 0:
            return f"{detail}; the disk is full ({free or 0} bytes free)"
        return detail

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

    def _move_aside(self, why: str) -> None:
        """Keep a corrupt file for inspection and start a fresh one."""
        stamp = time.strftime("%Y%m%d-%H%M%S")
        target = self.path.with_name(f"{FILENAME}.corrupt-{stamp}-{os.getpid()}")
        for suffix in ("", "-wal", "-shm"):
            src = Path(f"{self.path}{suffix}")
            if src.exists():
                try:
                    os.replace(src, Path(f"{target}{suffix}"))
                except OSError:
                    src.unlink(missing_ok=True)
        self._close_segment()
        for name in self._segment_names():  # the vectors that file indexed go with it
            try:
                os.replace(
                    self.folder / name, self.folder / f"{name}.corrupt-{stamp}-{os.getpid()}"
                )
            except OSError:
                pass
        warnings.warn(
            f"embedding cache {str(self.path)!r} was unreadable ({why}); moved it to "
            f"{str(target)!r} and started an empty cache, so documents will be embedded again",
            EmbedBenchWarning,
            stacklevel=5,
        )

    def _corrupt(self, conn: sqlite3.Connection, exc: sqlite3.Error) -> bool:
        """Whether ``exc`` is real corruption: "not a database", or a malformed image that
        ``PRAGMA quick_check`` confirms."""
        if _fault(exc) != "corrupt":
            return False
        if getattr(exc, "sqlite_errorcode", 0) & 0xFF == _SQLITE_NOTADB:
            return True
        try:
            rows = conn.execute("PRAGMA quick_check").fetchall()
        except sqlite3.Error as check:
            return _fault(check) == "corrupt"
        return rows != [("ok",)]

    def _recover(self, why: str) -> None:
        """A read found the file corrupt: set it aside and continue with a fresh cache."""
        self.close()
        self._move_aside(why)
        self._connect()

    def close(self) -> None:
        self._close_segment()
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None

    # -- segment files ---------------------------------------------------------------------

    def _segment_names(self) -> list[str]:
        """The segment files in the folder (by name; nothing else is one)."""
        try:
            return sorted(p.name for p in self.folder.iterdir() if _SEGMENT.fullmatch(p.name))
        except OSError:
            return []

    def _close_segment(self) -> None:
        segment = getattr(self._local, "segment", None)
        self._local.segment = None
        if segment is not None and segment[2] == os.getpid():
            os.close(segment[0])  # its lock goes with it

    def _append(self, data: memoryview) -> tuple[str, int]:
        """Append ``data`` to this writer's segment file and flush it to the disk; returns the
        file's name and the offset of ``data`` in it. Each thread of each process appends to a
        file of its own, created under a temporary name, locked (so that no other process
        deletes it while it is in use) and only then given its segment name."""
        segment = getattr(self._local, "segment", None)
        if segment is not None and (segment[2] != os.getpid() or segment[3] >= SEGMENT_BYTES):
            self._close_segment()
            segment = None
        if segment is None:
            name = f"vectors-{os.urandom(8).hex()}.f32"
            fresh = self.folder / f"{name}.new"
            flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND | getattr(os, "O_CLOEXEC", 0)
            fd = os.open(fresh, flags, 0o644)
            try:
                if fcntl is not None:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                os.replace(fresh, self.folder / name)
            except BaseException:
                os.close(fd)
                fresh.unlink(missing_ok=True)
                raise
            segment = [fd, name, os.getpid(), 0]
            self._local.segment = segment
        fd, name = segment[0], segment[1]
        offset = os.fstat(fd).st_size  # past any bytes a failed write left: never read
        done = 0
        while done < len(data):
            done += os.write(fd, data[done:])
        getattr(os, "fdatasync", os.fsync)(fd)
        segment[3] = offset + len(data)
        return name, offset

    def _collect(self, conn: sqlite3.Connection) -> None:
        """Delete the segment files no batch points to any more and no writer holds: a file
        is locked by its writer from before it has its name until it is closed, and a writer
        points batches only to the file it holds."""
        if fcntl is None:
            return
        try:
            used = {f for (f,) in conn.execute("SELECT DISTINCT file FROM batches")}
        except sqlite3.Error:
            return
        for name in self._segment_names():
            if name in used:
                continue
            path = self.folder / name
            try:
                fd = os.open(path, os.O_RDONLY)
            except OSError:
                continue
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                # held now, so no writer can point a batch to it any more: asked again, as
                # its writer may have committed one and closed it since the first look
                if conn.execute("SELECT 1 FROM batches WHERE file = ?", (name,)).fetchone():
                    continue
                path.unlink()
            except (OSError, sqlite3.Error):
                pass  # held by a writer (or gone already)
            finally:
                os.close(fd)

    # -- reads and writes ------------------------------------------------------------------

    def get_many(
        self,
        namespace: str,
        keys: Sequence[bytes],
        *,
        dim: int | None = None,
        unit_norm: bool = False,
    ) -> tuple[dict[bytes, np.ndarray], list[int]]:
        """Cached vectors by key, and the indices of ``keys`` that were missing.

        A stored vector is used only if it is what the namespace promises: ``dim`` values (when
        None, the dimension every stored batch agrees on), all finite, and of norm 1 when
        ``unit_norm``. A damaged vector counts as missing, so the caller embeds it again and
        :meth:`put_many` overwrites it; one warning gives the count, the namespace and the file.
        """
        matrix, found = self._read(namespace, keys, dim, unit_norm)
        if found.all():  # iterating the matrix gives its rows as views, faster than indexing
            return dict(zip(keys, matrix, strict=True)), []
        rows = np.flatnonzero(found).tolist()
        vectors = dict(zip([keys[i] for i in rows], matrix[found], strict=True))
        return vectors, np.flatnonzero(~found).tolist()

    def get_matrix(
        self,
        namespace: str,
        keys: Sequence[bytes],
        *,
        dim: int | None = None,
        unit_norm: bool = False,
    ) -> tuple[np.ndarray, list[int]]:
        """As :meth:`get_many`, as one ``(len(keys), dim)`` float32 matrix in the order of
        ``keys`` (rows of missing keys are zero) and the indices of the missing keys. With
        ``dim`` None the stored vectors tell it (0 columns when none is usable)."""
        matrix, found = self._read(namespace, keys, dim, unit_norm)
        return matrix, np.flatnonzero(~found).tolist()

    def _read(
        self, namespace: str, keys: Sequence[bytes], dim: int | None, unit_norm: bool
    ) -> tuple[np.ndarray, np.ndarray]:
        """A ``(len(keys), dim)`` matrix of the stored vectors in the order of ``keys`` (a
        repeated key in each of its rows) and which rows hold a sound one (the others are
        zero: not stored, or damaged)."""
        conn = self._conn()
        located: list[_Located] = []

        def read() -> None:
            located.clear()
            # read before the snapshot: a commit by another connection after it changes it,
            # so a key index built from a snapshot that holds that commit is never reused
            # stale (PRAGMA data_version; this object's own writes are counted apart)
            (data_version,) = conn.execute("PRAGMA data_version").fetchone()  # type: ignore[union-attr]
            version = (int(data_version), self._writes)
            conn.execute("BEGIN")  # type: ignore[union-attr]  # one snapshot for both steps
            try:
                nsid = _namespace_id(conn, namespace, create=False)  # type: ignore[arg-type]
                if nsid is not None:
                    located.append(self._locate(conn, nsid, namespace, keys, version))  # type: ignore[arg-type]
            finally:
                if conn.in_transaction:  # type: ignore[union-attr]
                    conn.execute("COMMIT")  # type: ignore[union-attr]

        if conn is not None and len(keys):
            try:
                _retry_busy(read)
            except _Busy as busy:
                self._warn(
                    f"embedding cache {str(self.path)!r} could not be read: "
                    f"{self._reason(busy.exc, 'reading it')}; its vectors are embedded again"
                )
                located.clear()
            except sqlite3.Error as exc:
                located.clear()
                if self._corrupt(conn, exc):
                    self._recover(str(exc))
                else:
                    self._turn_off(self._reason(exc, "reading it"))
        if not located:
            return _empty(len(keys), dim), np.zeros(len(keys), dtype=bool)
        return self._checked(namespace, located[0], dim, unit_norm)

    def _checked(
        self, namespace: str, loc: _Located, dim: int | None, unit_norm: bool
    ) -> tuple[np.ndarray, np.ndarray]:
        """The located vectors copied into one matrix in key order and checked in bulk: per
        batch its byte length and dimension, per vector finite values and the norm; one warning
        counts the damaged ones (each distinct key once) by fault."""
        which, slot = loc.which, loc.slot
        n = len(which)
        stored = which >= 0
        if not stored.any():
            return _empty(n, dim), stored
        expected = 4 * loc.dims * loc.counts
        held = np.array([file is None for file in loc.files], dtype=bool)
        sizes = np.array([len(data) for data in loc.blobs], dtype=np.int64)
        # a batch is whole when its bytes match its dimension and count: known now for one
        # held in the index file, once read for one in a segment file
        whole = (loc.dims > 0) & (~held | (sizes == expected))
        b = np.where(stored, which, 0)
        if dim is None:  # the provider learns its dimension from its first answer
            fits = stored & whole[b] & (slot < loc.counts[b])
            dims = set(loc.dims[np.unique(which[fits])].tolist())
            if len(dims) > 1:
                # the batches disagree and nothing says which dimension is the model's:
                # guessing (the most rows) fails the run with the model blamed when the
                # damaged rows are the most, so none is used and the model's answers replace
                # them all
                self._warn(
                    f"embedding cache {str(self.path)!r}: the {_distinct(stored, which, slot)} "
                    f"vector(s) found in namespace {namespace!r} have {len(dims)} dimensions "
                    f"({', '.join(map(str, sorted(dims)))}) and the model has not told its own "
                    "yet; none is used: they are embedded again and overwritten"
                )
                return _empty(n, None), np.zeros(n, dtype=bool)
            dim = dims.pop() if dims else 0
        wanted = stored & whole[b] & (slot < loc.counts[b]) & (loc.dims[b] == dim)
        used = np.zeros(len(loc.files), dtype=bool)
        used[which[wanted]] = True
        chosen = np.flatnonzero(used)
        # not np.zeros: numpy asks for huge pages only for memory it does not zero, and the
        # rows are all written below (a missing or damaged one with zeros)
        matrix = np.empty((n, dim), dtype=np.float32)
        # the stored order (a corpus read back in the order it was embedded): the batches are
        # read end to end straight into the result, one copy; keys that fill at least half of
        # the batches holding them: the batches laid side by side and gathered once in key
        # order; fewer (a shard of a corpus the cache holds in another order): each row read
        # straight into its place, so that no more than the asked rows is ever held or read
        direct = loc.in_order and bool(wanted.all())
        spread = not direct and 2 * int(wanted.sum()) < int(loc.counts[chosen].sum())
        if spread:
            whole &= ~_scatter(self.folder, loc, np.flatnonzero(wanted), matrix)
        elif direct:
            # squared norms in float32 (a relative error near 1e-7, far inside
            # NORM_TOLERANCE), taken piece by piece as the pieces are read, while they are in
            # the CPU's cache: a NaN or infinite value makes them non-finite, and only those
            # rows are looked at
            got, staged_squares = _fill(self.folder, loc, chosen, expected[chosen], matrix)
            whole[chosen] &= got == expected[chosen]
        else:
            staged_squares = _staged(self.folder, loc, chosen, expected, wanted, whole, matrix)
        broken = stored & (~whole[b] | (slot >= loc.counts[b]))
        faults: dict[str, int] = {}
        other = stored & ~broken & (loc.dims[b] != dim)
        if broken.any():
            faults["a byte length that does not match its dimension"] = _distinct(
                broken, which, slot
            )
        if other.any():
            faults[f"a dimension other than {dim}"] = _distinct(other, which, slot)
        ok = stored & ~broken & ~other
        if direct:
            squares = staged_squares
            if not ok.all():
                matrix[~ok] = 0.0  # what a short read left of a batch
        elif spread:
            if not ok.all():
                matrix[~ok] = 0.0  # not stored, damaged, or never read
            squares = _squares(matrix)
        else:
            squares = staged_squares  # of each row, by _staged
            if not ok.all():
                matrix[~ok] = 0.0  # not stored, or damaged
                squares[~ok] = 0.0
        good = ok.copy()
        odd = np.flatnonzero(ok & ~np.isfinite(squares))
        if len(odd):
            good[odd] = np.isfinite(matrix[odd]).all(axis=1)
        if not good[ok].all():
            faults["NaN or infinite values"] = _distinct(ok & ~good, which, slot)
        if unit_norm and good.any():
            off = good & ~(
                np.abs(np.sqrt(squares, where=good, out=np.ones_like(squares)) - 1.0)
                <= NORM_TOLERANCE
            )
            if off.any():
                faults["a norm other than 1 (the namespace normalises)"] = _distinct(
                    off, which, slot
                )
                good &= ~off
        if faults:
            matrix[ok & ~good] = 0.0  # a damaged vector reads as missing: a zero row
            total = sum(faults.values())
            detail = ", ".join(f"{k} with {what}" for what, k in sorted(faults.items()))
            self._warn(
                f"embedding cache {str(self.path)!r}: {total} damaged vector(s) in namespace "
                f"{namespace!r} ({detail}) were dropped; they are embedded again and "
                "overwritten"
            )
        return matrix, good

    def _locate(
        self,
        conn: sqlite3.Connection,
        nsid: int,
        namespace: str,
        keys: Sequence[bytes],
        version: tuple[int, int],
    ) -> _Located:
        """Where the stored ``keys`` are, and the data of the batches holding them. Many keys
        (a corpus, a shard of one) are matched in numpy against the namespace's key index:
        one pass over its key lists, kept while nothing is written (so that reading a corpus
        a shard at a time costs one pass, not one per shard, nor a B-tree search per key);
        it is built once the keys asked since the last build reach :data:`SCAN_SHARE` of the
        namespace. Few keys: a B-tree search per key. The newest batch holding a key wins, as
        its entry says."""
        if len(keys) >= SCAN_MIN and set(map(len, keys)) == {_KEY_BYTES}:
            indexes: dict[str, _KeyIndex] = getattr(self._local, "key_indexes", {})
            index = indexes.get(namespace)
            if index is None or index.version != version or index.nsid != nsid:
                indexes.pop(namespace, None)
                index = None
                (size,) = conn.execute(
                    "SELECT size FROM namespaces WHERE id = ?", (nsid,)
                ).fetchone()
                asked = self._asked.get(namespace, 0) + len(keys)
                self._asked[namespace] = asked
                if asked >= SCAN_SHARE * size:
                    index = _key_index(conn, nsid, version)
                    indexes[namespace] = index
                    self._local.key_indexes = indexes
                    self._asked[namespace] = 0
            if index is not None:
                return _match(conn, nsid, index, keys)
        return _lookup_located(conn, nsid, keys)

    def put_many(self, namespace: str, keys: Sequence[bytes], vectors: np.ndarray) -> None:
        """Store ``vectors[i]`` under ``keys[i]`` in one transaction, as one batch.

        Never raises for a fault of the file or the disk: a full disk stops writes for the
        rest of the run, a lock that outlasts :data:`BUSY_WAIT_S` skips this batch, each with
        a warning; results are unaffected.
        """
        arr = np.ascontiguousarray(vectors, dtype=np.float32)
        if arr.ndim != 2 or arr.shape[0] != len(keys):
            raise CacheError(f"put_many: {len(keys)} keys for vectors of shape {arr.shape}")
        if self.read_only is not None or not len(keys):
            return
        conn = self._conn()
        if conn is None:
            return
        keys = [bytes(k) for k in keys]
        self._writes += 1  # a key index built before this write is not used after it
        try:  # the vectors reach the disk before the index points to them
            segment, offset = self._append(arr.data.cast("B"))
        except OSError as exc:
            self._stop_writing(self._os_reason(exc, "writing a segment file"))
            return
        deleted = 0

        def write() -> None:
            nonlocal deleted
            try:
                conn.execute("BEGIN IMMEDIATE")
                nsid = _namespace_id(conn, namespace, create=True)
                deleted = _insert_batch(
                    conn,
                    nsid,  # type: ignore[arg-type]
                    keys,
                    arr.shape[1],
                    b"",
                    segment=(segment, offset),
                )
                conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise

        try:
            _retry_busy(write)
            if deleted:
                self._collect(conn)
        except _Busy as busy:
            self._warn(
                f"embedding cache {str(self.path)!r}: {len(keys)} vector(s) not stored: "
                f"{self._reason(busy.exc, 'writing to it')}; results are unaffected"
            )
        except sqlite3.Error as exc:
            if self._corrupt(conn, exc):
                self._recover(str(exc))
            else:
                self._stop_writing(self._reason(exc, "writing to it"))

    def _os_reason(self, exc: OSError, doing: str) -> str:
        """An error of the segment files told as :meth:`_reason` tells SQLite's."""
        name = errno.errorcode.get(exc.errno or 0, type(exc).__name__)
        detail = f"{exc.strerror or exc} ({name}) while {doing}"
        try:
            free = shutil.disk_usage(self.folder).free
        except OSError:
            free = None
        if exc.errno == errno.ENOSPC or free == 0:
            return f"{detail}; the disk is full ({free or 0} bytes free)"
        return detail

    def _require(self) -> sqlite3.Connection:
        conn = self._conn()
        if conn is None:
            raise CacheError(
                f"embedding cache {str(self.path)!r} is not in use: {self.unavailable}"
            )
        return conn

    def count(self, namespace: str | None = None) -> int:
        """Number of stored vectors (in one namespace, or all)."""
        conn = self._require()
        if namespace is None:
            return int(conn.execute("SELECT COUNT(*) FROM entries").fetchone()[0])
        return int(
            conn.execute(
                "SELECT COUNT(*) FROM entries WHERE ns = (SELECT id FROM namespaces"
                " WHERE name = ?)",
                (namespace,),
            ).fetchone()[0]
        )

    def clear(self, namespace: str | None = None) -> None:
        """Drop every vector (of one namespace, or all)."""
        conn = self._require()
        self._writes += 1
        conn.execute("BEGIN IMMEDIATE")
        try:
            if namespace is None:
                for table in ("entries", "batches", "namespaces"):
                    conn.execute(f"DELETE FROM {table}")
            else:
                nsid = _namespace_id(conn, namespace, create=False)
                if nsid is not None:
                    for table in ("entries", "batches"):
                        conn.execute(f"DELETE FROM {table} WHERE ns = ?", (nsid,))
                    conn.execute("DELETE FROM namespaces WHERE id = ?", (nsid,))
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
        self._close_segment()  # this writer's own segment may hold nothing live now
        self._collect(conn)


# -- the schema-3 layout, inside the caller's transaction ------------------------------------


def _namespace_id(conn: sqlite3.Connection, name: str, *, create: bool) -> int | None:
    """The row id of namespace ``name``; created when ``create`` (in a write transaction)."""
    row = conn.execute("SELECT id FROM namespaces WHERE name = ?", (name,)).fetchone()
    if row is not None:
        return int(row[0])
    if not create:
        return None
    return int(conn.execute("INSERT INTO namespaces (name) VALUES (?)", (name,)).lastrowid or 0)


@dataclass
class _Located:
    """Where the asked keys are stored: the batches read (their dimension, vector count, and
    segment file and offset, or data held in the index file) and, per asked key, the index of
    its batch there (``which``, -1 when not stored) and its ``slot``; ``in_order`` when the
    keys are exactly those batches' keys end to end."""

    dims: np.ndarray
    counts: np.ndarray
    files: list[str | None]
    offsets: list[int | None]
    blobs: list[bytes]
    which: np.ndarray
    slot: np.ndarray
    in_order: bool = False


def _lookup(conn: sqlite3.Connection, nsid: int, keys: Sequence[bytes]) -> dict:
    """``{key: (batch, slot)}`` of the stored ``keys``, looked up :data:`_CHUNK` at a time."""
    out: dict[bytes, tuple[int, int]] = {}
    for start in range(0, len(keys), _CHUNK):
        chunk = keys[start : start + _CHUNK]
        marks = ",".join("?" * len(chunk))
        for key, batch, slot in conn.execute(
            f"SELECT key, batch, slot FROM entries WHERE ns = ? AND key IN ({marks})",
            (nsid, *chunk),
        ):
            out[bytes(key)] = (batch, slot)
    return out


def _lookup_located(conn: sqlite3.Connection, nsid: int, keys: Sequence[bytes]) -> _Located:
    """:class:`_Located` of ``keys`` by a B-tree search per key."""
    located = _lookup(conn, nsid, list(dict.fromkeys(keys)))
    ids = sorted({batch for batch, _ in located.values()})
    index: dict[int, int] = {}
    rows: list[tuple] = []
    for start in range(0, len(ids), _CHUNK):
        chunk = ids[start : start + _CHUNK]
        marks = ",".join("?" * len(chunk))
        for row in conn.execute(
            f"SELECT id, dim, count, file, offset FROM batches WHERE id IN ({marks})", chunk
        ):
            index[row[0]] = len(rows)
            rows.append(row)
    which = np.full(len(keys), -1, dtype=np.int64)
    slot = np.zeros(len(keys), dtype=np.int64)
    for i, key in enumerate(keys):
        place = located.get(key)
        if place is not None and place[0] in index:  # else deleted since: embedded again
            which[i], slot[i] = index[place[0]], place[1]
    return _batches(conn, nsid, rows, which, slot, every=False)


@dataclass
class _KeyIndex:
    """A namespace's key lists, sorted for matching in numpy: built in one pass over its
    batches, valid while ``version`` (the connection's data_version and the cache's own write
    count, read before the snapshot it was built from) is unchanged."""

    version: tuple[int, int]
    nsid: int
    rows: list[tuple]  # (id, dim, count, file, offset) of each batch, by id
    raw: bytes  # their key lists end to end
    starts: np.ndarray  # each batch's first position in raw (in keys)
    batch_of: np.ndarray  # each position's batch
    order: np.ndarray  # positions sorted by the keys' first 8 bytes
    sorted_prefix: np.ndarray
    every_slot_live: bool


def _key_index(conn: sqlite3.Connection, nsid: int, version: tuple[int, int]) -> _KeyIndex:
    rows = conn.execute(
        "SELECT id, dim, count, file, offset, live, keys FROM batches WHERE ns = ? ORDER BY id",
        (nsid,),
    ).fetchall()
    # a batch whose key list does not match its count: its keys are unknown, embedded again
    rows = [row for row in rows if len(row[6]) == _KEY_BYTES * row[2]]
    every_slot_live = all(row[5] == row[2] for row in rows)
    raw = b"".join(row[6] for row in rows)
    count_of = np.array([row[2] for row in rows], dtype=np.int64)
    starts = np.cumsum(count_of) - count_of
    # keys are SHA-256 digests: sorted on their first 8 bytes, then whole keys compared (a
    # shared prefix, about 1 in 2**64, at worst reports a key missing: embedded again); where
    # a key may have older copies a stable sort keeps them in batch order, so the last is the
    # newest (else the faster unstable sort)
    prefix = np.frombuffer(raw, dtype=">u8")[:: _KEY_BYTES // 8]
    order = np.argsort(prefix, kind=None if every_slot_live else "stable")
    # kept while the cache lives: 48 bytes a key (the key, its sorted prefix, two int32s)
    small = np.int32 if len(prefix) < 2**31 else np.int64
    return _KeyIndex(
        version=version,
        nsid=nsid,
        rows=[row[:5] for row in rows],
        raw=raw,
        starts=starts,
        batch_of=np.repeat(np.arange(len(rows), dtype=small), count_of),
        order=order.astype(small),
        sorted_prefix=prefix[order],
        every_slot_live=every_slot_live,
    )


def _match(
    conn: sqlite3.Connection, nsid: int, index: _KeyIndex, keys: Sequence[bytes]
) -> _Located:
    """:class:`_Located` of ``keys`` (each :data:`_KEY_BYTES` long) matched against
    ``index`` in numpy, then the data of the batches that hold them."""
    n = len(keys)
    joined = b"".join(keys)
    rows = index.rows
    if index.every_slot_live and joined == index.raw:
        # asked for exactly what is stored, in the stored order (a corpus read back in the
        # order it was embedded), and no key has an older copy: no matching to do
        which = index.batch_of.astype(np.int64)
        slot = np.arange(n, dtype=np.int64) - index.starts[which]
        return _batches(conn, nsid, rows, which, slot, every=True, in_order=True)
    which = np.full(n, -1, dtype=np.int64)
    slot = np.zeros(n, dtype=np.int64)
    if index.raw:
        stored = np.frombuffer(index.raw, dtype=f"S{_KEY_BYTES}")
        wanted = np.frombuffer(joined, dtype=f"S{_KEY_BYTES}")
        # the asked keys are sorted too, so that the search walks the stored ones once
        want_prefix = np.frombuffer(joined, dtype=">u8")[:: _KEY_BYTES // 8]
        asked = np.argsort(want_prefix)
        pos = np.empty(n, dtype=np.int64)
        pos[asked] = np.searchsorted(index.sorted_prefix, want_prefix[asked], side="right") - 1
        flat = index.order[np.maximum(pos, 0)]
        hit = (pos >= 0) & (stored[flat] == wanted)
        flat = flat[hit]
        owner = index.batch_of[flat]
        which[hit], slot[hit] = owner, flat - index.starts[owner]
    used = np.unique(which[which >= 0])
    renumber = np.full(len(rows), -1, dtype=np.int64)
    renumber[used] = np.arange(len(used))
    which = np.where(which >= 0, renumber[which], -1)
    chosen = [rows[i] for i in used.tolist()]
    return _batches(conn, nsid, chosen, which, slot, every=len(chosen) == len(rows))


def _batches(
    conn: sqlite3.Connection,
    nsid: int,
    rows: list[tuple],
    which: np.ndarray,
    slot: np.ndarray,
    *,
    every: bool,
    in_order: bool = False,
) -> _Located:
    """:class:`_Located` of the batches ``rows`` (id, dim, count, file, offset, ...), with the
    data of those the index file holds (schema 2 and migrated schema 1 files; a batch in a
    segment file has none there); ``every``: they are all of the namespace's batches whose keys
    were read, so one pass over the namespace finds that data."""
    held = [row[0] for row in rows if row[3] is None]
    data: dict[int, bytes] = {}
    if held and every:
        wanted = set(held)
        for bid, blob in conn.execute(
            "SELECT id, data FROM batches WHERE ns = ? AND file IS NULL", (nsid,)
        ):
            if bid in wanted:
                data[bid] = blob
    else:
        for start in range(0, len(held), _CHUNK):
            chunk = held[start : start + _CHUNK]
            marks = ",".join("?" * len(chunk))
            data.update(conn.execute(f"SELECT id, data FROM batches WHERE id IN ({marks})", chunk))
    return _Located(
        np.array([row[1] for row in rows], dtype=np.int64),
        np.array([row[2] for row in rows], dtype=np.int64),
        [row[3] for row in rows],
        [row[4] for row in rows],
        [data.get(row[0], b"") for row in rows],
        which,
        slot,
        in_order,
    )


def _fill(
    folder: Path, loc: _Located, chosen: np.ndarray, lengths: np.ndarray, staged: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Copy the data of batches ``chosen`` (``lengths`` bytes each) side by side into the rows
    of ``staged``: from the index file, or read from their segment files (batches that follow
    one another in a file and in ``staged`` in one run of reads of :data:`_PIECE` bytes), and
    take each row's squared norm as it arrives. Returns how many bytes each batch had (fewer
    than its length: damaged, its file cut short or gone) and the squared norms."""
    buffer = staged.reshape(-1).view(np.uint8)
    row = 4 * staged.shape[1]
    squares = np.zeros(len(staged), dtype=np.float32)

    def norms(start: int, end: int) -> None:
        if row:
            rows = staged[start // row : end // row]
            squares[start // row : end // row] = np.einsum("ij,ij->i", rows, rows)

    got = np.zeros(len(chosen), dtype=np.int64)
    positions = np.cumsum(lengths) - lengths
    picked = chosen.tolist()
    names = [loc.files[i] for i in picked]
    offsets = [loc.offsets[i] for i in picked]
    in_segments = []
    for j, (name, offset) in enumerate(zip(names, offsets, strict=True)):
        if name is None:
            data = loc.blobs[picked[j]]
            if len(data) == lengths[j]:
                start = int(positions[j])
                buffer[start : start + len(data)] = np.frombuffer(data, dtype=np.uint8)
                norms(start, start + len(data))
            got[j] = len(data)
        elif isinstance(offset, int) and offset >= 0:
            in_segments.append(j)
    if not in_segments:
        return got, squares
    js = np.array(in_segments, dtype=np.int64)
    codes: dict[str, int] = {}
    code = np.array([codes.setdefault(names[j], len(codes)) for j in in_segments])
    off = np.array([offsets[j] for j in in_segments], dtype=np.int64)
    follows = np.zeros(len(js), dtype=bool)
    follows[1:] = (
        (code[1:] == code[:-1])
        & (off[1:] == off[:-1] + lengths[js[:-1]])
        & (positions[js[1:]] == positions[js[:-1]] + lengths[js[:-1]])
    )
    firsts = np.flatnonzero(~follows)
    lasts = np.append(firsts[1:], len(js)) - 1
    by_file: dict[str, list[tuple[int, int]]] = {}
    for first, last in zip(firsts.tolist(), lasts.tolist(), strict=True):
        by_file.setdefault(names[in_segments[first]], []).append((first, last))
    piece = max(row, _PIECE // row * row) if row else _PIECE
    for name, runs in by_file.items():
        fd = _open_segment(folder, name)
        if fd is None:
            continue  # its batches are damaged, embedded again
        try:
            for first, last in runs:
                start = int(positions[js[first]])
                end = int(positions[js[last]] + lengths[js[last]])
                done = start
                while done < end:
                    stop = min(end, done + piece)
                    step = _read_into(fd, buffer[done:stop].data, int(off[first]) + done - start)
                    norms(done, done + step)
                    done += step
                    if done < stop:
                        break  # the file ends here
                part = js[first : last + 1]
                got[part] = np.clip(done - positions[part], 0, lengths[part])
        finally:
            os.close(fd)
    return got, squares


def _staged(
    folder: Path,
    loc: _Located,
    chosen: np.ndarray,
    expected: np.ndarray,
    wanted: np.ndarray,
    whole: np.ndarray,
    matrix: np.ndarray,
) -> np.ndarray:
    """Copy the vectors of the ``wanted`` rows into ``matrix`` in key order through one small
    buffer: the ``chosen`` batches are read a group at a time (:data:`_STAGE_BYTES` or one
    batch) side by side into it, then each wanted row of the group is gathered into its place.
    ``whole`` loses the batches that lacked bytes. Returns each row's squared norm (zero for a
    row not wanted). Staging the whole read at once held a second copy of it: 1.5 GB more at
    1M x 384, and fresh memory touched for the first time."""
    n, dim = matrix.shape
    squares = np.zeros(n, dtype=np.float32)
    rows = np.flatnonzero(wanted)
    if not len(rows) or not dim:
        return squares
    counts = loc.counts[chosen]
    first = np.cumsum(counts) - counts  # each chosen batch's first row, all side by side
    group_rows = max(1, _STAGE_BYTES // (4 * dim))
    group = first // group_rows  # a batch never split: a group ends past its last batch
    bounds = np.flatnonzero(np.diff(group, prepend=-1)).tolist() + [len(chosen)]
    local = np.zeros(len(loc.files), dtype=np.int64)  # a chosen batch's first row in its group
    group_of = np.full(len(loc.files), -1, dtype=np.int64)
    spans = list(zip(bounds[:-1], bounds[1:], strict=True))
    for lo, hi in spans:
        local[chosen[lo:hi]] = first[lo:hi] - first[lo]
        group_of[chosen[lo:hi]] = lo
    which = loc.which[rows]
    by_group = np.argsort(group_of[which], kind="stable")
    rows, which = rows[by_group], which[by_group]
    source = local[which] + loc.slot[rows]
    edges = np.searchsorted(group_of[which], bounds[:-1]).tolist() + [len(rows)]
    sizes = [int(first[hi - 1] + counts[hi - 1] - first[lo]) for lo, hi in spans]
    widest = max(sizes)
    buffer = np.empty((widest, dim), dtype=np.float32)
    # rows as single items (numpy copies each with one memcpy, faster than a row of floats)
    item = np.dtype((np.void, 4 * dim))
    into, out_of = matrix.view(item).reshape(n), buffer.view(item).reshape(widest)
    for g, ((lo, hi), size) in enumerate(zip(spans, sizes, strict=True)):
        got, part_squares = _fill(
            folder, loc, chosen[lo:hi], expected[chosen[lo:hi]], buffer[:size]
        )
        whole[chosen[lo:hi]] &= got == expected[chosen[lo:hi]]
        mine = slice(edges[g], edges[g + 1])
        into[rows[mine]] = out_of[source[mine]]
        squares[rows[mine]] = part_squares[source[mine]]
    return squares


def _scatter(folder: Path, loc: _Located, rows: np.ndarray, matrix: np.ndarray) -> np.ndarray:
    """Read the stored vector of each result row in ``rows`` straight into its row of
    ``matrix``: from the index file's data, or from a segment file, rows next to one another in
    a file in one ``preadv`` into their own places (a vector asked twice is read once). Only the
    asked bytes are read and nothing is staged, so a shard of a corpus stored in another order
    costs its own rows, not the batches around them. Returns, per batch of ``loc``, whether it
    lacks bytes (its file cut short or gone: damaged, as a short read is in :func:`_fill`)."""
    dim = matrix.shape[1]
    row = 4 * dim
    short = np.zeros(len(loc.files), dtype=bool)
    if not len(rows) or not row:
        return short
    which, slot = loc.which[rows], loc.slot[rows]
    in_file = np.array([name is not None for name in loc.files], dtype=bool)
    for batch in np.unique(which[~in_file[which]]).tolist():  # held in the index file
        data = np.frombuffer(loc.blobs[batch], dtype=np.float32)
        mine = which == batch
        if len(data) == loc.counts[batch] * dim:
            matrix[rows[mine]] = data.reshape(-1, dim)[slot[mine]]
        else:
            short[batch] = True
    keep = in_file[which]
    rows, which, slot = rows[keep], which[keep], slot[keep]
    codes: dict[str, int] = {}
    code_of = np.array([codes.setdefault(str(name), len(codes)) for name in loc.files])
    base = np.array([o if isinstance(o, int) else -1 for o in loc.offsets], dtype=np.int64)
    code = code_of[which]
    at = base[which] + slot * row
    order = np.lexsort((at, code))
    rows, which, code, at = rows[order], which[order], code[order], at[order]
    # a vector asked twice (the same key in two rows) is read once, then copied
    again = np.zeros(len(rows), dtype=bool)
    again[1:] = (code[1:] == code[:-1]) & (at[1:] == at[:-1])
    first = np.maximum.accumulate(np.where(again, 0, np.arange(len(rows))))
    copies, sources = rows[again], rows[first[again]]
    rows, which, code, at = rows[~again], which[~again], code[~again], at[~again]
    # runs of rows that follow one another in a file, at most IOV_MAX rows each
    new_run = np.ones(len(rows), dtype=bool)
    new_run[1:] = (code[1:] != code[:-1]) | (at[1:] != at[:-1] + row)
    run_no = np.cumsum(new_run) - 1
    run_start = np.flatnonzero(new_run)
    new_run |= (np.arange(len(rows)) - run_start[run_no]) % _IOV_MAX == 0
    starts = np.flatnonzero(new_run).tolist()
    ends = starts[1:] + [len(rows)]
    view = memoryview(matrix).cast("B")  # type: ignore[arg-type]
    places = (rows * row).tolist()
    names = {c: name for name, c in codes.items()}
    got = np.zeros(len(rows), dtype=bool)
    fds: dict[int, tuple[int, int] | None] = {}
    try:
        for start, end in zip(starts, ends, strict=True):
            c = int(code[start])
            if c not in fds:
                fd = _open_segment(folder, names[c])
                fds[c] = None if fd is None else (fd, _size(fd))
            opened = fds[c]
            if opened is None:
                continue
            fd, size = opened
            if int(at[end - 1]) + row > size:  # cut short: read what is there below
                end = start + max(0, int(np.searchsorted(at[start:end] + row, size, "right")))
                if end == start:
                    continue
            buffers = [view[p : p + row] for p in places[start:end]]
            done = _read_rows(fd, buffers, int(at[start]))
            got[start : start + done] = True
    finally:
        for opened in fds.values():
            if opened is not None:
                os.close(opened[0])
    if not got.all():
        short[np.unique(which[~got])] = True
    if len(copies):
        matrix[copies] = matrix[sources]
    return short


def _open_segment(folder: Path, name: str) -> int | None:
    """A segment file open for reading, or None (not a name the cache writes: never opened;
    gone or unreadable: its batches are damaged, embedded again)."""
    if not _SEGMENT.fullmatch(name):
        return None
    try:
        return os.open(folder / name, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return None


def _size(fd: int) -> int:
    """The open file's size in bytes (0 when it cannot be told: nothing in it is read)."""
    try:
        return os.fstat(fd).st_size
    except OSError:
        return 0


def _read_rows(fd: int, buffers: list[memoryview], offset: int) -> int:
    """Read the rows that follow one another in the file from ``offset`` into ``buffers``
    (one row each, in one ``preadv`` where the platform has it); returns how many rows
    arrived whole."""
    row = len(buffers[0])
    done = 0
    try:
        if hasattr(os, "preadv"):
            while done < len(buffers):
                step = os.preadv(fd, buffers[done:], offset + done * row)
                if step <= 0:
                    break
                whole, part = divmod(step, row)
                done += whole
                if part:  # a row read in part (a signal): the rest of it, then go on
                    rest = _read_into(fd, buffers[done][part:], offset + done * row + part)
                    if rest < row - part:
                        break
                    done += 1
        else:  # pragma: no cover - platforms without preadv
            for buffer in buffers:
                if _read_into(fd, buffer, offset + done * row) < row:
                    break
                done += 1
    except OSError:
        pass  # an unreadable stretch counts as missing rows
    return done


def _squares(matrix: np.ndarray) -> np.ndarray:
    """Each row's squared norm in float32, a block of rows at a time (no copy of them)."""
    out = np.empty(len(matrix), dtype=np.float32)
    step = max(1, _PIECE // max(1, 4 * matrix.shape[1]))
    for lo in range(0, len(matrix), step):
        part = matrix[lo : lo + step]
        out[lo : lo + step] = np.einsum("ij,ij->i", part, part)
    return out


def _read_into(fd: int, view: memoryview, offset: int) -> int:
    """Read ``len(view)`` bytes at ``offset`` into ``view`` (no copy in between); returns how
    many there were."""
    done = 0
    try:
        while done < len(view):
            if hasattr(os, "preadv"):
                step = os.preadv(fd, [view[done:]], offset + done)
            else:  # pragma: no cover - platforms without preadv
                chunk = os.pread(fd, len(view) - done, offset + done)
                step = len(chunk)
                view[done : done + step] = chunk
            if step <= 0:
                break
            done += step
    except OSError:
        pass  # an unreadable stretch counts as missing bytes
    return done


def _distinct(mask: np.ndarray, which: np.ndarray, slot: np.ndarray) -> int:
    """How many distinct stored vectors the asked keys under ``mask`` point to (a key asked
    twice counts once)."""
    places = which[mask] * (int(slot.max()) + 1) + slot[mask]
    return len(np.unique(places))


def _empty(n: int, dim: int | None) -> np.ndarray:
    return np.zeros((n, dim or 0), dtype=np.float32)


def _insert_batch(
    conn: sqlite3.Connection,
    nsid: int,
    keys: Sequence[bytes],
    dim: int,
    data: bytes,
    segment: tuple[str, int] | None = None,
) -> int:
    """Store one batch (``data``, or the bytes at ``segment``'s (file, offset), holds
    ``len(keys)`` vectors of ``dim`` float32 values) and point its keys' entries at it; batches
    left with no live slot are deleted (returns how many). A key given twice keeps its last
    vector."""
    slots = {bytes(key): i for i, key in enumerate(keys)}  # the last of a repeated key wins
    old = _lookup(conn, nsid, list(slots))
    file, offset = segment if segment is not None else (None, None)
    batch = conn.execute(
        "INSERT INTO batches (ns, dim, count, live, keys, data, file, offset)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        (nsid, dim, len(keys), len(slots), b"".join(bytes(k) for k in keys), data, file, offset),
    ).lastrowid
    conn.executemany(
        "INSERT OR REPLACE INTO entries VALUES (?, ?, ?, ?)",
        [(nsid, key, batch, slot) for key, slot in slots.items()],
    )
    stale: dict[int, int] = {}
    for previous, _ in old.values():
        stale[previous] = stale.get(previous, 0) + 1
    conn.executemany(
        "UPDATE batches SET live = live - ? WHERE id = ?", [(n, b) for b, n in stale.items()]
    )
    before = conn.total_changes
    conn.executemany("DELETE FROM batches WHERE id = ? AND live <= 0", [(b,) for b in stale])
    deleted = conn.total_changes - before
    conn.execute(
        "UPDATE namespaces SET size = size + ? WHERE id = ?", (len(slots) - len(old), nsid)
    )
    return deleted

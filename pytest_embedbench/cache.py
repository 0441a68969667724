"""Persistent embedding cache (documents, and the queries of a scored pass), safe when several
processes share it.

Vectors live in one SQLite file (WAL journal, busy timeout) keyed by the model's namespace and
the SHA-256 of the text that was embedded; no raw text is stored. Each write is one
transaction (callers write once per provider batch), so an interrupted run keeps what it
finished and readers never see half a batch.

Faults are told apart, because only one of them justifies touching the file:

* corruption (SQLite reports a malformed image that ``PRAGMA quick_check`` confirms, or "file
  is not a database"): the file is moved aside for inspection and rebuilt, with a warning;
* locked or busy (several processes creating one cache at once): retried for up to
  ``BUSY_WAIT_S`` seconds, then this run goes on without the cache;
* a full disk or another I/O error: the file is left as it is, and the run goes on without
  writing (or, when it cannot even be opened, without the cache), with one warning naming the
  file and the reason.

A stored vector is checked as strictly as a provider's response (finite, the expected
dimension, unit norm when the namespace normalises); a damaged row is reported missing, so the
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

from .exceptions import CacheError, EmbedBenchWarning

__all__ = ["CacheStats", "EmbeddingCache", "default_cache_dir", "text_key"]

T = TypeVar("T")

FILENAME = "embeddings.sqlite3"
SCHEMA_VERSION = 1
_CHUNK = 500  # SQLite's default limit on host parameters is 999
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
        """A configured connection; SQLite errors propagate. A file of another schema version
        is moved aside here (a format change, not a fault)."""
        conn = sqlite3.connect(self.path, timeout=60.0, isolation_level=None)
        try:
            conn.execute("PRAGMA busy_timeout = 60000")
            conn.execute("PRAGMA journal_mode = WAL")
            conn.execute("PRAGMA synchronous = NORMAL")
            conn.execute(
                "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)"
            )
            conn.execute(
                "CREATE TABLE IF NOT EXISTS vectors ("
                " ns TEXT NOT NULL, key BLOB NOT NULL, dim INTEGER NOT NULL,"
                " vec BLOB NOT NULL, PRIMARY KEY (ns, key)) WITHOUT ROWID"
            )
            conn.execute(
                "INSERT OR IGNORE INTO meta VALUES ('schema_version', ?)",
                (str(SCHEMA_VERSION),),
            )
            (version,) = conn.execute(
                "SELECT value FROM meta WHERE key = 'schema_version'"
            ).fetchone()
        except BaseException:
            conn.close()
            raise
        if version != str(SCHEMA_VERSION):
            conn.close()
            self._move_aside(f"schema version {version!r}, expected {SCHEMA_VERSION}")
            return self._open()
        return conn

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
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None

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

        A stored row is used only if it is what the namespace promises: ``dim`` values (when
        None, the dimension most rows have), all finite, and of norm 1 when ``unit_norm``. A
        damaged row counts as missing, so the caller embeds it again and :meth:`put_many`
        overwrites it; one warning gives the count, the namespace and the file.
        """
        found: dict[bytes, np.ndarray] = {}
        conn = self._conn()
        unique = list(dict.fromkeys(keys))
        rows: list[tuple[bytes, int, bytes]] = []

        def read() -> None:
            rows.clear()
            for start in range(0, len(unique), _CHUNK):
                chunk = unique[start : start + _CHUNK]
                marks = ",".join("?" * len(chunk))
                rows.extend(
                    conn.execute(  # type: ignore[union-attr]
                        f"SELECT key, dim, vec FROM vectors WHERE ns = ? AND key IN ({marks})",
                        (namespace, *chunk),
                    ).fetchall()
                )

        if conn is not None:
            try:
                _retry_busy(read)
            except _Busy as busy:
                self._warn(
                    f"embedding cache {str(self.path)!r} could not be read: "
                    f"{self._reason(busy.exc, 'reading it')}; its vectors are embedded again"
                )
                rows = []
            except sqlite3.Error as exc:
                rows = []
                if self._corrupt(conn, exc):
                    self._recover(str(exc))
                else:
                    self._turn_off(self._reason(exc, "reading it"))
        for key, vec in self._checked(namespace, rows, dim, unit_norm).items():
            found[key] = vec
        missing = [i for i, key in enumerate(keys) if key not in found]
        return found, missing

    def _checked(
        self,
        namespace: str,
        rows: list[tuple[bytes, int, bytes]],
        dim: int | None,
        unit_norm: bool,
    ) -> dict[bytes, np.ndarray]:
        """The rows that hold sound vectors; one warning counts the others by fault."""
        if not rows:
            return {}
        if dim is None:  # the provider learns its dimension from its first answer
            dims = {d for _, d, blob in rows if d > 0 and len(blob) == 4 * d}
            if len(dims) > 1:
                # the rows disagree and nothing says which dimension is the model's: guessing
                # (the most rows) fails the run with the model blamed when the damaged rows are
                # the most, so none is used and the model's own answers replace them all
                self._warn(
                    f"embedding cache {str(self.path)!r}: the {len(rows)} vector(s) found in "
                    f"namespace {namespace!r} have {len(dims)} dimensions "
                    f"({', '.join(map(str, sorted(dims)))}) and the model has not told its own "
                    "yet; none is used: they are embedded again and overwritten"
                )
                return {}
            dim = dims.pop() if dims else 0
        good: dict[bytes, np.ndarray] = {}
        faults: dict[str, int] = {}
        for key, stored_dim, blob in rows:
            fault = None
            if len(blob) != 4 * stored_dim:
                fault = "a byte length that does not match its dimension"
            elif stored_dim != dim:
                fault = f"a dimension other than {dim}"
            else:
                vec = np.frombuffer(blob, dtype=np.float32)
                if not np.isfinite(vec).all():
                    fault = "NaN or infinite values"
                elif unit_norm:
                    norm = float(np.linalg.norm(vec.astype(np.float64)))
                    if abs(norm - 1.0) > NORM_TOLERANCE:
                        fault = "a norm other than 1 (the namespace normalises)"
            if fault is None:
                good[bytes(key)] = vec
            else:
                faults[fault] = faults.get(fault, 0) + 1
        if faults:
            total = sum(faults.values())
            detail = ", ".join(f"{n} with {what}" for what, n in sorted(faults.items()))
            self._warn(
                f"embedding cache {str(self.path)!r}: {total} damaged vector(s) in namespace "
                f"{namespace!r} ({detail}) were dropped; they are embedded again and "
                "overwritten"
            )
        return good

    def put_many(self, namespace: str, keys: Sequence[bytes], vectors: np.ndarray) -> None:
        """Store ``vectors[i]`` under ``keys[i]`` in one transaction.

        Never raises for a fault of the file or the disk: a full disk stops writes for the
        rest of the run, a lock that outlasts :data:`BUSY_WAIT_S` skips this batch, each with
        a warning; results are unaffected.
        """
        arr = np.ascontiguousarray(vectors, dtype=np.float32)
        if arr.ndim != 2 or arr.shape[0] != len(keys):
            raise CacheError(f"put_many: {len(keys)} keys for vectors of shape {arr.shape}")
        if self.read_only is not None:
            return
        conn = self._conn()
        if conn is None:
            return
        dim = arr.shape[1]
        rows = [(namespace, key, dim, arr[i].tobytes()) for i, key in enumerate(keys)]

        def write() -> None:
            try:
                conn.execute("BEGIN IMMEDIATE")
                conn.executemany("INSERT OR REPLACE INTO vectors VALUES (?, ?, ?, ?)", rows)
                conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise

        try:
            _retry_busy(write)
        except _Busy as busy:
            self._warn(
                f"embedding cache {str(self.path)!r}: {len(rows)} vector(s) not stored: "
                f"{self._reason(busy.exc, 'writing to it')}; results are unaffected"
            )
        except sqlite3.Error as exc:
            if self._corrupt(conn, exc):
                self._recover(str(exc))
            else:
                self._stop_writing(self._reason(exc, "writing to it"))

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
            return int(conn.execute("SELECT COUNT(*) FROM vectors").fetchone()[0])
        return int(
            conn.execute("SELECT COUNT(*) FROM vectors WHERE ns = ?", (namespace,)).fetchone()[0]
        )

    def clear(self, namespace: str | None = None) -> None:
        """Drop every vector (of one namespace, or all)."""
        conn = self._require()
        if namespace is None:
            conn.execute("DELETE FROM vectors")
        else:
            conn.execute("DELETE FROM vectors WHERE ns = ?", (namespace,))

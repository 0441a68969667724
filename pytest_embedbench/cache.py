"""Persistent document-embedding cache, safe when several processes share it.

Vectors live in one SQLite file (WAL journal, busy timeout) keyed by the model's namespace and
the SHA-256 of the text that was embedded; no raw text is stored. Each write is one
transaction, so an interrupted run keeps what it finished and readers never see half a batch.
A corrupt file is moved aside and rebuilt with a warning, never a crash.

Usage::

    cache = EmbeddingCache.open(True)            # default folder; False -> None; a path -> there
    vectors, missing = cache.get_many(namespace, keys, dim=None)
    cache.put_many(namespace, new_keys, new_vectors)

The default folder is ``$EMBEDBENCH_CACHE_DIR``, else ``$XDG_CACHE_HOME/pytest-embedbench``,
else ``~/.cache/pytest-embedbench``.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
import threading
import time
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .exceptions import CacheError, EmbedBenchWarning

__all__ = ["CacheStats", "EmbeddingCache", "default_cache_dir", "text_key"]

FILENAME = "embeddings.sqlite3"
SCHEMA_VERSION = 1
_CHUNK = 500  # SQLite's default limit on host parameters is 999


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
    """Hits and misses of one evaluation's document lookups."""

    hits: int = 0
    misses: int = 0

    @property
    def hit_rate(self) -> float:
        total = self.hits + self.misses
        return self.hits / total if total else 0.0


class EmbeddingCache:
    """Embedding vectors stored by (namespace, SHA-256 of text) in ``folder``."""

    def __init__(self, folder: str | Path) -> None:
        self.folder = Path(folder)
        self.path = self.folder / FILENAME
        self._local = threading.local()
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise CacheError(
                f"cannot create the embedding cache folder {str(self.folder)!r}: {exc}; "
                "pass cache=False or another folder"
            ) from None
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

    def _conn(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None or getattr(self._local, "pid", None) != os.getpid():
            conn = self._connect()
        return conn

    def _connect(self) -> sqlite3.Connection:
        for attempt in (1, 2):
            try:
                conn = sqlite3.connect(self.path, timeout=60.0, isolation_level=None)
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
                if version != str(SCHEMA_VERSION):
                    conn.close()
                    self._move_aside(f"schema version {version!r}, expected {SCHEMA_VERSION}")
                    continue
            except sqlite3.DatabaseError as exc:
                if attempt == 2:
                    raise CacheError(
                        f"embedding cache {str(self.path)!r} is unusable: {exc}"
                    ) from None
                self._move_aside(str(exc))
                continue
            self._local.conn = conn
            self._local.pid = os.getpid()
            return conn
        raise CacheError(f"embedding cache {str(self.path)!r} could not be opened")

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
            stacklevel=4,
        )

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
        self, namespace: str, keys: Sequence[bytes]
    ) -> tuple[dict[bytes, np.ndarray], list[int]]:
        """Cached vectors by key, and the indices of ``keys`` that were missing.

        A row whose stored bytes do not match its dimension counts as missing (and is
        overwritten by the next :meth:`put_many`).
        """
        found: dict[bytes, np.ndarray] = {}
        conn = self._conn()
        unique = list(dict.fromkeys(keys))
        try:
            for start in range(0, len(unique), _CHUNK):
                chunk = unique[start : start + _CHUNK]
                marks = ",".join("?" * len(chunk))
                rows = conn.execute(
                    f"SELECT key, dim, vec FROM vectors WHERE ns = ? AND key IN ({marks})",
                    (namespace, *chunk),
                ).fetchall()
                for key, dim, blob in rows:
                    if dim > 0 and len(blob) == 4 * dim:
                        found[bytes(key)] = np.frombuffer(blob, dtype=np.float32)
        except sqlite3.DatabaseError as exc:
            self._recover(str(exc))
            found = {}
        missing = [i for i, key in enumerate(keys) if key not in found]
        return found, missing

    def put_many(self, namespace: str, keys: Sequence[bytes], vectors: np.ndarray) -> None:
        """Store ``vectors[i]`` under ``keys[i]`` in one transaction."""
        arr = np.ascontiguousarray(vectors, dtype=np.float32)
        if arr.ndim != 2 or arr.shape[0] != len(keys):
            raise CacheError(f"put_many: {len(keys)} keys for vectors of shape {arr.shape}")
        dim = arr.shape[1]
        rows = [(namespace, key, dim, arr[i].tobytes()) for i, key in enumerate(keys)]
        conn = self._conn()
        try:
            conn.execute("BEGIN IMMEDIATE")
            conn.executemany("INSERT OR REPLACE INTO vectors VALUES (?, ?, ?, ?)", rows)
            conn.execute("COMMIT")
        except sqlite3.DatabaseError as exc:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            warnings.warn(
                f"embedding cache {str(self.path)!r} write failed ({exc}); "
                "results are unaffected, the vectors will be embedded again next time",
                EmbedBenchWarning,
                stacklevel=2,
            )

    def count(self, namespace: str | None = None) -> int:
        """Number of stored vectors (in one namespace, or all)."""
        conn = self._conn()
        if namespace is None:
            return int(conn.execute("SELECT COUNT(*) FROM vectors").fetchone()[0])
        return int(
            conn.execute("SELECT COUNT(*) FROM vectors WHERE ns = ?", (namespace,)).fetchone()[0]
        )

    def clear(self, namespace: str | None = None) -> None:
        """Drop every vector (of one namespace, or all)."""
        conn = self._conn()
        if namespace is None:
            conn.execute("DELETE FROM vectors")
        else:
            conn.execute("DELETE FROM vectors WHERE ns = ?", (namespace,))

"""The cache's SQLite index: its schema, the rows a write adds, and the one way keys are found.

Table ``batches`` holds one row per write: namespace, dimension, vector count, live slots (the
vectors no newer write replaced), its keys end to end, the segment file and offset of its
vectors, and their checksums (``hash``: xxh3-64 of the bytes; ``row_hashes``: each row's, 32
bits; NULL for a batch written before checksums, whose bytes are read unchecked); table
``entries`` maps (namespace, key) to its batch and slot (WITHOUT ROWID: the write path's
B-tree). A batch's keys, dimension and place never change once committed: a newer write, or a
compaction, adds a batch with a higher id and points the entries there, and a batch left
without a live slot is deleted.

Reads match the asked keys in numpy against a key index of the namespace: its batches' key
lists, sorted on the keys' first 8 bytes, kept by the connection. After a write (anyone's) it
is not built again: the batches above the highest it holds are a small second level, matched
first (a newer copy of a key wins), and folded in once they pass an eighth of it. So a corpus
read a shard at a time costs one pass over the key lists, and a few keys asked right after a
write cost a look at the batches written since.
"""

from __future__ import annotations

import hashlib
import sqlite3
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from itertools import compress

import numpy as np

from .segments import Batches, Place, Writer

FILENAME = "embeddings.sqlite3"
SCHEMA_VERSION = 3
#: meta ``layout``: every batch's vectors are in a segment file, none held in the index file
#: (what files of schemas 1 and 2, and schema-3 files migrated from them, still do)
LAYOUT = "segments"
KEY_BYTES = 32  # a SHA-256 digest (text_key)
_CHUNK = 500  # SQLite's default limit on host parameters is 999
TABLES = (
    "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS namespaces (id INTEGER PRIMARY KEY,"
    " name TEXT NOT NULL UNIQUE, size INTEGER NOT NULL DEFAULT 0)",
    "CREATE TABLE IF NOT EXISTS batches (id INTEGER PRIMARY KEY,"
    " ns INTEGER NOT NULL, dim INTEGER NOT NULL, count INTEGER NOT NULL,"
    " live INTEGER NOT NULL, keys BLOB NOT NULL, data BLOB NOT NULL,"
    " file TEXT, offset INTEGER, hash INTEGER, row_hashes BLOB)",
    "CREATE INDEX IF NOT EXISTS batches_ns ON batches (ns)",
    "CREATE TABLE IF NOT EXISTS entries (ns INTEGER NOT NULL, key BLOB NOT NULL,"
    " batch INTEGER NOT NULL, slot INTEGER NOT NULL, PRIMARY KEY (ns, key)) WITHOUT ROWID",
)
#: what a segment file holds, live, without reading the batches' rows (compaction asks it)
FILE_INDEX = "CREATE INDEX IF NOT EXISTS batches_file ON batches (file, dim, live)"


def text_key(text: str) -> bytes:
    """SHA-256 digest of the text as embedded: the cache key within a namespace."""
    return hashlib.sha256(text.encode("utf-8")).digest()


def prepare(conn: sqlite3.Connection) -> tuple[str, str | None]:
    """The file's schema version and layout; a fresh file gets today's, in one transaction
    (other processes creating it at the same time wait, then find it made)."""
    found = meta(conn)
    if found[0] is None:
        with writing(conn):
            for statement in (*TABLES, FILE_INDEX):
                conn.execute(statement)
            conn.executemany(
                "INSERT OR IGNORE INTO meta VALUES (?, ?)",
                [("schema_version", str(SCHEMA_VERSION)), ("layout", LAYOUT)],
            )
        found = meta(conn)
    return str(found[0]), found[1]


@contextmanager
def writing(conn: sqlite3.Connection) -> Iterator[None]:
    """One write transaction (taking the write lock at once): committed, or rolled back."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise


def meta(conn: sqlite3.Connection) -> tuple[str | None, str | None]:
    """The schema version and layout the file records (None, None: a fresh file)."""
    if not conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'meta'").fetchone():
        return None, None
    values = dict(conn.execute("SELECT key, value FROM meta"))
    return values.get("schema_version"), values.get("layout")


def namespace_id(conn: sqlite3.Connection, name: str, *, create: bool) -> int | None:
    """The row id of namespace ``name``; created when ``create`` (in a write transaction)."""
    row = conn.execute("SELECT id FROM namespaces WHERE name = ?", (name,)).fetchone()
    if row is not None:
        return int(row[0])
    if not create:
        return None
    return int(conn.execute("INSERT INTO namespaces (name) VALUES (?)", (name,)).lastrowid or 0)


def entries(conn: sqlite3.Connection, nsid: int, keys: Sequence[bytes]) -> dict:
    """``{key: (batch, slot)}`` of the stored ``keys`` (the write path's B-tree search)."""
    sql = "SELECT key, batch, slot FROM entries WHERE ns = ? AND key IN ({})"
    return {bytes(k): (b, s) for k, b, s in _select_in(conn, sql, list(keys), nsid)}


def _select_in(conn: sqlite3.Connection, sql: str, values: list, *head: object) -> Iterator:
    """The rows of ``sql`` with its ``IN ({})`` filled by ``values``, :data:`_CHUNK` at a time
    (after the parameters ``head``)."""
    for start in range(0, len(values), _CHUNK):
        chunk = values[start : start + _CHUNK]
        yield from conn.execute(sql.format(",".join("?" * len(chunk))), (*head, *chunk))


def insert_batch(
    conn: sqlite3.Connection, nsid: int, keys: Sequence[bytes], dim: int, place: Place
) -> set[str | None]:
    """Record one batch (``len(keys)`` vectors of ``dim`` float32 values where ``place`` says,
    with their checksum) and point its keys' entries at it, inside the caller's transaction; a key
    given twice keeps its last vector. Returns the files of the older batches that lost live
    slots (those left with none are deleted)."""
    slots = {bytes(key): i for i, key in enumerate(keys)}
    old = entries(conn, nsid, list(slots))
    batch = conn.execute(
        "INSERT INTO batches (ns, dim, count, live, keys, data, file, offset, hash, row_hashes)"
        " VALUES (?, ?, ?, ?, ?, X'', ?, ?, ?, ?)",
        (nsid, dim, len(keys), len(slots), b"".join(bytes(k) for k in keys), *place),
    ).lastrowid
    conn.executemany(
        "INSERT OR REPLACE INTO entries VALUES (?, ?, ?, ?)",
        [(nsid, key, batch, slot) for key, slot in slots.items()],
    )
    stale = Counter(previous for previous, _ in old.values())
    sql = "SELECT file FROM batches WHERE id IN ({})"
    touched: set[str | None] = {f for (f,) in _select_in(conn, sql, list(stale))}
    conn.executemany(
        "UPDATE batches SET live = live - ? WHERE id = ?", [(n, b) for b, n in stale.items()]
    )
    conn.executemany("DELETE FROM batches WHERE id = ? AND live <= 0", [(b,) for b in stale])
    conn.execute(
        "UPDATE namespaces SET size = size + ? WHERE id = ?", (len(slots) - len(old), nsid)
    )
    return touched


def append_batch(
    conn: sqlite3.Connection,
    writer: Writer,
    nsid: int,
    dim: int,
    keys: Sequence[bytes],
    rows: Sequence[bytes],
) -> set[str | None]:
    """:func:`insert_batch` of ``rows`` appended to ``writer``'s file unflushed: the caller
    calls ``writer.sync()`` before its transaction commits (a rewrite: compaction, migration)."""
    place = writer.append(memoryview(b"".join(rows)), row=4 * dim, sync=False)
    return insert_batch(conn, nsid, keys, dim, place)


@dataclass
class KeyIndex:
    """The key lists of a namespace's batches above id ``since``, sorted for matching: 48
    bytes a key (the key, its sorted prefix, two int32s)."""

    top: int  # the highest batch id it read (``since`` when none)
    batches: Batches  # by id
    raw: bytes  # their key lists end to end
    starts: np.ndarray  # each batch's first position in raw (in keys)
    batch_of: np.ndarray  # each position's batch
    order: np.ndarray  # positions sorted by the keys' first 8 bytes
    sorted_prefix: np.ndarray
    every_slot_live: bool


def key_index(conn: sqlite3.Connection, nsid: int, since: int = 0) -> KeyIndex:
    """:class:`KeyIndex` of namespace ``nsid``'s batches above ``since``, in one pass."""
    rows = conn.execute(
        "SELECT id, dim, count, file, COALESCE(offset, -1), live = count, keys, COALESCE(hash, 0),"
        " hash IS NOT NULL AND COALESCE(length(row_hashes), 0) = 4 * count, row_hashes"
        " FROM batches WHERE ns = ? AND id > ? ORDER BY id",
        (nsid, since),
    ).fetchall()
    top = rows[-1][0] if rows else since
    # a batch whose key list does not match its count: its keys are unknown, embedded again
    sound = [row for row in rows if len(row[6]) == KEY_BYTES * row[2]]
    columns = list(zip(*sound, strict=True)) or [()] * 10
    _, dims, count, names, offsets, live, keys, hashes, checked, row_hashes = columns
    counts, ok = np.array(count, dtype=np.int64), np.array(checked, dtype=bool)
    files = {name: i for i, name in enumerate(dict.fromkeys(names))}
    every_slot_live = all(live)
    raw = b"".join(keys)
    # keys are SHA-256 digests: sorted on their first 8 bytes, then whole keys compared (a
    # shared prefix, about 1 in 2**64, at worst reports a key missing: embedded again); where
    # a key may have older copies a stable sort keeps them in batch order, so the last is the
    # newest (else the faster unstable sort)
    prefix = np.frombuffer(raw, dtype=">u8")[:: KEY_BYTES // 8]
    order = np.argsort(prefix, kind=None if every_slot_live else "stable")
    small = np.int32 if len(prefix) < 2**31 else np.int64
    batches = Batches(
        np.array(dims, dtype=np.int64),
        counts,
        np.array(offsets, dtype=np.int64),
        np.array([files[name] for name in names], dtype=np.int64),
        list(files),
        np.array(hashes, dtype=np.int64),
        ok,
        np.frombuffer(b"".join(compress(row_hashes, checked)), dtype="<u4"),
        np.cumsum(counts * ok) - counts * ok,
    )
    return KeyIndex(
        top,
        batches,
        raw,
        starts=np.cumsum(counts) - counts,
        batch_of=np.repeat(np.arange(len(counts), dtype=small), counts),
        order=order.astype(small),
        sorted_prefix=prefix[order],
        every_slot_live=every_slot_live,
    )


@dataclass
class Known:
    """What a connection knows of a namespace's keys: a key index and one of the batches
    written since (``newer``), valid while ``version`` (the connection's data_version and the
    cache's own write count, read before the snapshot) is unchanged."""

    nsid: int
    version: tuple[int, int]
    main: KeyIndex
    newer: KeyIndex | None = None
    batches: Batches = field(init=False)  # the main level's, then the newer level's

    def __post_init__(self) -> None:
        newer = self.newer
        self.batches = self.main.batches if newer is None else self.main.batches + newer.batches


def refresh(
    conn: sqlite3.Connection, nsid: int, version: tuple[int, int], known: Known | None
) -> Known:
    """``known`` brought up to date inside the caller's read snapshot. Its batches still hold
    what they held (a batch never changes), so only the batches above its highest are read,
    unless that one is gone: a clear, or a compaction of its file, may have taken any key, and
    a batch id can be reused once the highest is deleted, so the index is built again; so it
    is once the newer batches hold an eighth as many keys."""
    if known is not None and known.nsid == nsid:
        if known.version == version:
            return known
        top = known.main.top
        if (
            not top
            or conn.execute("SELECT 1 FROM batches WHERE id = ? AND ns = ?", (top, nsid)).fetchone()
        ):
            newer = key_index(conn, nsid, since=top)
            if 8 * len(newer.raw) <= len(known.main.raw):
                return Known(nsid, version, known.main, newer if newer.raw else None)
    return Known(nsid, version, key_index(conn, nsid))


@dataclass
class Located:
    """Where the asked keys are stored: per asked key the index of its batch in ``batches``
    (``which``, -1 when not stored) and its ``slot``."""

    which: np.ndarray
    slot: np.ndarray
    batches: Batches


def locate(known: Known, asked: Sequence[bytes]) -> Located:
    """:class:`Located` of ``asked`` (each :data:`KEY_BYTES` long): the newest stored copy of
    each key."""
    n, main = len(asked), known.main
    which = np.full(n, -1, dtype=np.int64)
    slot = np.zeros(n, dtype=np.int64)
    joined = b"".join(asked)
    if known.newer is None and main.every_slot_live and joined == main.raw:
        # asked for exactly what is stored, in the stored order (a corpus read back in the
        # order it was embedded), and no key has an older copy: no matching to do
        which[:] = main.batch_of
        slot[:] = np.arange(n) - main.starts[which]
        return Located(which, slot, known.batches)
    wanted = np.frombuffer(joined, dtype=f"S{KEY_BYTES}")
    prefix = np.frombuffer(joined, dtype=">u8")[:: KEY_BYTES // 8]
    by_prefix = np.argsort(prefix)  # sorted too, so that each search walks the stored keys once
    levels = (
        [(main, 0)] if known.newer is None else [(known.newer, len(main.batches.dims)), (main, 0)]
    )
    for level, base in levels:  # the newest first: a key found there is not looked for again
        todo = by_prefix[which[by_prefix] < 0]
        if not len(todo) or not level.raw:
            continue
        pos = np.searchsorted(level.sorted_prefix, prefix[todo], side="right") - 1
        flat = level.order[np.maximum(pos, 0)]
        stored = np.frombuffer(level.raw, dtype=f"S{KEY_BYTES}")
        hit = (pos >= 0) & (stored[flat] == wanted[todo])
        owner = level.batch_of[flat[hit]]
        which[todo[hit]] = owner + base
        slot[todo[hit]] = flat[hit] - level.starts[owner]
    return Located(which, slot, known.batches)

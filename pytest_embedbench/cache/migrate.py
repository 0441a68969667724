"""Files of older schemas, brought to today's layout in place on first open, never on the hot
path (:func:`needed` is asked once per connection).

* schema 1 (one row per vector in table ``vectors``, ~3x the raw bytes): the rows of each
  namespace and dimension become batches of :data:`BATCH` vectors, a row whose byte length
  does not match its dimension left out (it would be reported damaged and embedded again);
* schema 2 (each batch one blob in table ``batches``): the table gains the columns that point a
  batch to a segment file;
* both, and schema-3 files that older code migrated from them (their blobs kept in the index
  file): every blob moves to a segment file (one whose length does not match its dimension and
  count stays, and reads as damaged), with its checksum, then VACUUM gives the index file's
  space back;
* schema-3 files written before checksums: table ``batches`` gains columns ``hash`` and
  ``row_hashes``; their batches keep none (NULL) and are read unchecked, as before, until they
  are written again (hashing them now would vouch for whatever bytes the files hold today).
  Older code can go on sharing such a file: the batches it writes are unchecked too.

One transaction, the moved vectors flushed before it commits: another process opening the file
meanwhile waits, then finds it migrated; a crash before the commit leaves the file as it was
(and bytes in a segment file that nothing points to, deleted later).
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from . import index
from .index import writing
from .segments import Writer

#: older schemas that are migrated in place rather than moved aside
OLDER = ("1", "2")
#: vectors per batch when a schema-1 file is migrated
BATCH = 1024


def needed(conn: sqlite3.Connection, version: str, layout: str | None) -> bool:
    if version in OLDER:
        return True
    if version != str(index.SCHEMA_VERSION):
        return False
    columns = {row[1] for row in conn.execute("PRAGMA table_info(batches)")}
    return layout != index.LAYOUT or "row_hashes" not in columns


def run(conn: sqlite3.Connection, folder: Path) -> str:
    """Migrate the file of ``conn`` (see the module); returns its schema version now."""
    writer = Writer(folder)
    try:
        with writing(conn):
            version, layout = index.meta(conn)  # as another process may have left it
            moved = False
            if version is not None and needed(conn, version, layout):
                moved = _migrate(conn, writer, version)
                version = str(index.SCHEMA_VERSION)
    finally:
        writer.close()
    if moved:
        try:
            conn.execute("VACUUM")
        except sqlite3.Error:
            pass  # the space comes back at a later VACUUM; the file is migrated either way
    return str(version)


def _migrate(conn: sqlite3.Connection, writer: Writer, version: str) -> bool:
    """Today's tables and layout, inside the caller's transaction; whether vectors moved."""
    for statement in index.TABLES:
        conn.execute(statement)
    columns = {row[1] for row in conn.execute("PRAGMA table_info(batches)")}
    for column in ("file TEXT", "offset INTEGER", "hash INTEGER", "row_hashes BLOB"):
        if column.split()[0] not in columns:
            conn.execute(f"ALTER TABLE batches ADD COLUMN {column}")
    moved = False
    if (
        version == "1"
        and conn.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'vectors'"
        ).fetchone()
    ):
        for (name,) in conn.execute("SELECT DISTINCT ns FROM vectors").fetchall():
            _regroup(conn, writer, name)
        conn.execute("DROP TABLE vectors")
        moved = True
    moved |= _move_blobs(conn, writer)
    writer.sync()  # the vectors reach the disk before the index points to them
    conn.execute(index.FILE_INDEX)
    conn.executemany(
        "INSERT OR REPLACE INTO meta VALUES (?, ?)",
        [("schema_version", str(index.SCHEMA_VERSION)), ("layout", index.LAYOUT)],
    )
    return moved


def _regroup(conn: sqlite3.Connection, writer: Writer, name: str) -> None:
    """Namespace ``name``'s schema-1 rows as batches in a segment file."""
    nsid = index.namespace_id(conn, name, create=True)
    assert nsid is not None  # created when missing
    by_dim: dict[int, list[tuple[bytes, bytes]]] = {}
    for key, dim, vec in conn.execute(
        "SELECT key, dim, vec FROM vectors WHERE ns = ? ORDER BY dim", (name,)
    ):
        if dim > 0 and len(vec) == 4 * dim:
            by_dim.setdefault(dim, []).append((bytes(key), bytes(vec)))
    for dim, items in by_dim.items():
        for start in range(0, len(items), BATCH):
            keys, rows = zip(*items[start : start + BATCH], strict=True)
            index.append_batch(conn, writer, nsid, dim, keys, rows)


def _move_blobs(conn: sqlite3.Connection, writer: Writer) -> bool:
    """Each whole batch held in the index file moved to a segment file; whether any was."""
    held = conn.execute("SELECT id FROM batches WHERE file IS NULL").fetchall()
    for (bid,) in held:
        dim, count, data = conn.execute(
            "SELECT dim, count, data FROM batches WHERE id = ?", (bid,)
        ).fetchone()
        if dim > 0 and len(data) == 4 * dim * count:
            conn.execute(
                "UPDATE batches SET file = ?, offset = ?, hash = ?, row_hashes = ?, data = X''"
                " WHERE id = ?",
                (*writer.append(memoryview(data), row=4 * dim, sync=False), bid),
            )
    return bool(held)

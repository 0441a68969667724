"""The embedding cache file seen as one row per vector, as the fault tests damage it.

The cache stores each write as one run of vectors in a segment file (or, in a file written
before schema 3, one blob in table ``batches``) and one entry per key (table ``entries``);
these helpers read every key's stored vector as ``(namespace, key, dim, vec)`` and overwrite
one key's vector the way a damaged file would hold it: its entry points to a one-vector batch
whose segment file holds ``vec`` (any bytes: fewer than ``dim`` values read as a file cut
short) under ``dim``.
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path


def rows(path: Path) -> list[tuple[str, bytes, int, bytes]]:
    """``(namespace, key, dim, vec)`` of every stored key, ordered by namespace and key."""
    conn = sqlite3.connect(path)
    try:
        found = conn.execute(
            "SELECT n.name, e.key, b.dim, b.data, e.slot, b.file, b.offset FROM entries e"
            " JOIN namespaces n ON n.id = e.ns JOIN batches b ON b.id = e.batch"
            " ORDER BY n.name, e.key"
        ).fetchall()
    finally:
        conn.close()
    out = []
    for ns, key, dim, data, slot, file, offset in found:
        if file is not None:  # the batch's vectors are in a segment file beside the index
            with (path.parent / file).open("rb") as fh:
                fh.seek(offset + 4 * dim * slot)
                vec = fh.read(4 * dim)
        else:
            vec = bytes(data[4 * dim * slot : 4 * dim * (slot + 1)])
        out.append((ns, bytes(key), dim, vec))
    return out


def set_vector(conn: sqlite3.Connection, namespace: str, key: bytes, dim: int, vec: bytes) -> int:
    """Point ``key``'s entry at a new one-vector batch of ``vec`` stored as dimension ``dim``;
    returns how many entries changed (1, or 0 when the key is not stored)."""
    (nsid,) = conn.execute("SELECT id FROM namespaces WHERE name = ?", (namespace,)).fetchone()
    old = conn.execute("SELECT batch FROM entries WHERE ns = ? AND key = ?", (nsid, key)).fetchone()
    if old is None:
        return 0
    ((_, _, index),) = conn.execute("PRAGMA database_list").fetchall()
    segment = f"vectors-{os.urandom(8).hex()}.f32"
    (Path(index).parent / segment).write_bytes(vec)
    batch = conn.execute(
        "INSERT INTO batches (ns, dim, count, live, keys, data, file, offset)"
        " VALUES (?, ?, 1, 1, ?, X'', ?, 0)",
        (nsid, dim, key, segment),
    ).lastrowid
    conn.execute(
        "UPDATE entries SET batch = ?, slot = 0 WHERE ns = ? AND key = ?", (batch, nsid, key)
    )
    conn.execute("UPDATE batches SET live = live - 1 WHERE id = ?", (old[0],))
    return 1


def set_vectors(path: Path, changes: list[tuple[str, bytes, int, bytes]]) -> int:
    """:func:`set_vector` for each ``(namespace, key, dim, vec)``, in one transaction."""
    conn = sqlite3.connect(path)
    try:
        with conn:
            return sum(set_vector(conn, *change) for change in changes)
    finally:
        conn.close()

"""The cache's compact layout (issues 33 and 41): one run of vectors per written batch in a
segment file, and a key index.

* the file holds at most 1.1x the raw float32 bytes for the common dimensions;
* caches written by the schema-1, schema-2 and schema-3 code before issue 41 are migrated in
  place and read;
* the one way of finding keys gives the same vectors, the newest copy of a key written twice,
  and the same damaged vectors, whether its key index is built by the read or brought up to
  date with the batches written since it was built;
* a batch whose vectors were all written again is deleted.
"""

from __future__ import annotations

import os
import sqlite3
import warnings
from pathlib import Path

import numpy as np
import pytest

from pytest_embedbench import EmbedBenchWarning, EmbeddingCache
from pytest_embedbench.cache import FILENAME, SCHEMA_VERSION, segments, text_key

from ..cacherows import set_vectors


def _unit(n: int, dim: int, seed: int = 0) -> np.ndarray:
    vectors = np.random.default_rng(seed).standard_normal((n, dim)).astype(np.float32)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def _stored_in_batches(folder: Path, n: int, seed: int = 0) -> tuple[np.ndarray, list[bytes]]:
    """``n`` unit 8-d vectors stored under keys ``t0``, ``t1``, ... in namespace "ns", 32 per
    batch, in one segment file, the cache closed."""
    vectors = _unit(n, 8, seed)
    keys = [text_key(f"t{i}") for i in range(n)]
    cache = EmbeddingCache(folder)
    for start in range(0, n, 32):
        cache.put_many("ns", keys[start : start + 32], vectors[start : start + 32])
    cache.close()
    return vectors, keys


def _bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.iterdir() if p.is_file())


@pytest.mark.parametrize("dim", [384, 768, 1024, 1536])
def test_the_file_holds_at_most_1_1x_the_raw_vector_bytes(tmp_path: Path, dim: int) -> None:
    vectors = _unit(2000, dim)
    keys = [text_key(f"document {i}") for i in range(len(vectors))]
    cache = EmbeddingCache(tmp_path)
    for start in range(0, len(keys), 32):  # the default provider batch
        cache.put_many("st:model:0123456789abcdef", keys[start : start + 32], vectors[start:][:32])
    cache.close()
    assert _bytes(tmp_path) <= 1.1 * vectors.nbytes, _bytes(tmp_path) / vectors.nbytes


def _schema_1(path: Path, rows: list[tuple[str, bytes, int, bytes]]) -> None:
    """A cache file as the schema-1 code wrote it: one row per vector."""
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
    conn.execute(
        "CREATE TABLE vectors (ns TEXT NOT NULL, key BLOB NOT NULL, dim INTEGER NOT NULL,"
        " vec BLOB NOT NULL, PRIMARY KEY (ns, key)) WITHOUT ROWID"
    )
    conn.execute("INSERT INTO meta VALUES ('schema_version', '1')")
    conn.executemany("INSERT INTO vectors VALUES (?, ?, ?, ?)", rows)
    conn.close()


def test_a_schema_1_cache_is_migrated_in_place_and_read(tmp_path: Path) -> None:
    docs, queries = _unit(1500, 384, seed=1), _unit(20, 384, seed=2)
    doc_keys = [text_key(f"d{i}") for i in range(len(docs))]
    query_keys = [text_key(f"q{i}") for i in range(len(queries))]
    rows = [("m", k, 384, v.tobytes()) for k, v in zip(doc_keys, docs, strict=True)]
    rows += [("m:query", k, 384, v.tobytes()) for k, v in zip(query_keys, queries, strict=True)]
    nan = docs[0].copy()
    nan[5] = np.nan
    rows[0] = ("m", doc_keys[0], 384, nan.tobytes())  # damaged: found, dropped, warned
    rows[1] = ("m", doc_keys[1], 384, docs[1].tobytes()[:-4])  # damaged: left out
    _schema_1(tmp_path / FILENAME, rows)
    old_size = _bytes(tmp_path)

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a migration is not a fault: no warning, nothing aside
        cache = EmbeddingCache(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir() if ".corrupt-" in p.name) == []
    with pytest.warns(EmbedBenchWarning, match=r"1 damaged vector.*1 with NaN"):
        found, missing = cache.get_many("m", doc_keys, dim=384, unit_norm=True)
    assert missing == [0, 1]
    assert all(np.array_equal(found[doc_keys[i]], docs[i]) for i in range(2, len(docs)))
    matrix, missing = cache.get_matrix("m:query", query_keys, dim=384, unit_norm=True)
    assert missing == [] and np.array_equal(matrix, queries)
    assert cache.count() == 1499 + 20
    cache.close()

    conn = sqlite3.connect(tmp_path / FILENAME)
    tables = {name for (name,) in conn.execute("SELECT name FROM sqlite_master")}
    (version,) = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
    conn.close()
    assert "vectors" not in tables and version == str(SCHEMA_VERSION) == "3"
    assert _bytes(tmp_path) <= 1.1 * (docs.nbytes + queries.nbytes) < old_size  # VACUUMed
    again = EmbeddingCache(tmp_path)  # opened again: already migrated
    assert again.count("m") == 1499


#: how the reading cache knows the namespace's keys: a key index built by the read itself (a
#: fresh cache object), or one an earlier read built, brought up to date with the batches
#: written since (the object that wrote them)
KNOWN = ["built", "brought up to date"]


def _reader(cache: EmbeddingCache, known: str, namespace: str = "ns") -> EmbeddingCache:
    """The cache that reads ``namespace``, known as ``known`` says (a read first, so that the
    object that wrote knows the keys it holds now; its later writes are the newer level)."""
    if known == "built":
        return EmbeddingCache(cache.folder)
    cache.get_matrix(namespace, [text_key("nothing")])
    assert cache._local.keys[namespace].newer is None
    return cache


def _brought_up_to_date(cache: EmbeddingCache, known: str, namespace: str = "ns") -> None:
    """The read went through the level it was meant to: a key index built by it (one level),
    or the one an earlier read built and the batches written since (two)."""
    newer = cache._local.keys[namespace].newer
    assert (newer is not None) == (known == "brought up to date")


@pytest.mark.parametrize("known", KNOWN)
def test_a_built_and_a_brought_up_to_date_key_index_agree(tmp_path: Path, known: str) -> None:
    vectors = _unit(600, 16)
    keys = [text_key(f"t{i}") for i in range(len(vectors))]
    writer = EmbeddingCache(tmp_path)
    for start in range(0, len(keys), 50):
        writer.put_many("ns", keys[start : start + 50], vectors[start : start + 50])
    cache = _reader(writer, known)
    writer.put_many("other", keys[:10], _unit(10, 16, seed=9))
    newer = _unit(30, 16, seed=3)
    writer.put_many("ns", keys[100:130], newer)  # written again: the newest copy counts
    bad = [("ns", keys[200], 16, np.full(16, np.inf, np.float32).tobytes())]
    bad.append(("ns", keys[201], 16, b"\x00" * 12))  # a wrong byte length
    bad.append(("ns", keys[202], 16, (2 * vectors[202]).tobytes()))  # norm 2
    set_vectors(tmp_path / FILENAME, bad)
    asked = [keys[i] for i in np.random.default_rng(4).permutation(len(keys))]
    asked += [text_key("never stored"), asked[0]]  # a missing key and a repeated one

    with pytest.warns(EmbedBenchWarning) as caught:
        found, missing = cache.get_many("ns", asked, dim=16, unit_norm=True)
    _brought_up_to_date(cache, known)
    assert len(caught) == 1
    message = str(caught[0].message)
    assert "3 damaged vector(s) in namespace 'ns'" in message
    assert "1 with NaN or infinite values" in message and "1 with a norm other than 1" in message
    assert "1 with a byte length that does not match its dimension" in message
    damaged = {keys[200], keys[201], keys[202]}
    assert [asked[i] for i in missing] == sorted(
        damaged | {text_key("never stored")}, key=asked.index
    )
    expected = {k: v for k, v in zip(keys, vectors, strict=True)}
    expected.update(zip(keys[100:130], newer, strict=True))
    assert set(found) == set(keys) - damaged
    assert all(np.array_equal(found[k], expected[k]) for k in found)
    with pytest.warns(EmbedBenchWarning, match="3 damaged"):
        matrix, missing_rows = cache.get_matrix("ns", asked, dim=16, unit_norm=True)
    assert missing_rows == missing
    for i, key in enumerate(asked):
        assert np.array_equal(matrix[i], expected[key] if i not in missing else np.zeros(16))


def test_a_batch_whose_vectors_were_all_written_again_is_deleted(tmp_path: Path) -> None:
    keys = [text_key(f"t{i}") for i in range(8)]
    cache = EmbeddingCache(tmp_path)
    cache.put_many("ns", keys[:4], _unit(4, 8))
    cache.put_many("ns", keys[4:], _unit(4, 8, seed=1))
    cache.put_many("ns", keys[:4], _unit(4, 8, seed=2))  # the first batch has no live slot
    cache.put_many("ns", keys[4:6], _unit(2, 8, seed=3))  # the second keeps two
    conn = sqlite3.connect(tmp_path / FILENAME)
    batches = conn.execute("SELECT count, live FROM batches ORDER BY id").fetchall()
    conn.close()
    assert batches == [(4, 2), (4, 4), (2, 2)]
    assert cache.count("ns") == 8


@pytest.mark.parametrize("known", KNOWN)
def test_keys_none_of_which_is_stored_are_all_missing(tmp_path: Path, known: str) -> None:
    writer = EmbeddingCache(tmp_path)
    writer.put_many("ns", [text_key(f"stored {i}") for i in range(16)], _unit(16, 8))
    cache = _reader(writer, known)
    writer.put_many("ns", [text_key("stored")], _unit(1, 8))
    asked = [text_key(f"never {i}") for i in range(3)]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert cache.get_many("ns", asked, dim=8) == ({}, [0, 1, 2])
        matrix, missing = cache.get_matrix("ns", asked, dim=8)
    _brought_up_to_date(cache, known)
    assert missing == [0, 1, 2] and matrix.shape == (3, 8) and not matrix.any()


def test_reading_all_keys_in_the_stored_order_equals_reading_them_one_by_one(
    tmp_path: Path,
) -> None:
    """The stored order (a corpus read back in the order it was embedded) is read batch after
    batch without matching keys; it must give what a lookup of each key gives, also once some
    keys have a newer copy or a damaged vector, and what a fresh cache object reads."""
    vectors = _unit(300, 24)
    keys = [text_key(f"t{i}") for i in range(len(vectors))]
    cache = EmbeddingCache(tmp_path)
    for start in range(0, len(keys), 32):
        cache.put_many("ns", keys[start : start + 32], vectors[start : start + 32])

    def one_by_one() -> np.ndarray:
        return np.vstack([cache.get_matrix("ns", [k], dim=24, unit_norm=True)[0] for k in keys])

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        matrix, missing = cache.get_matrix("ns", keys, dim=24, unit_norm=True)
        assert missing == [] and matrix.flags.writeable
        assert np.array_equal(matrix, vectors) and np.array_equal(matrix, one_by_one())
        found, missing = cache.get_many("ns", keys, dim=24, unit_norm=True)
        assert missing == [] and all(
            np.array_equal(found[k], v) for k, v in zip(keys, vectors, strict=True)
        )

    newer = _unit(5, 24, seed=5)
    cache.put_many("ns", keys[40:45], newer)  # an older copy of five keys stays in its batch
    set_vectors(tmp_path / FILENAME, [("ns", keys[7], 24, (3 * vectors[7]).tobytes())])
    expected = vectors.copy()
    expected[40:45] = newer
    expected[7] = 0.0
    with pytest.warns(EmbedBenchWarning, match=r"1 damaged vector.*1 with a norm other than 1"):
        matrix, missing = cache.get_matrix("ns", keys, dim=24, unit_norm=True)
    assert missing == [7] and np.array_equal(matrix, expected)
    with pytest.warns(EmbedBenchWarning, match=r"1 damaged"):
        assert np.array_equal(one_by_one(), expected)
    _brought_up_to_date(cache, "brought up to date")
    with pytest.warns(EmbedBenchWarning, match=r"1 damaged"):
        fresh, missing = EmbeddingCache(tmp_path).get_matrix("ns", keys, dim=24, unit_norm=True)
    assert missing == [7] and np.array_equal(fresh, expected)


def test_a_damaged_key_asked_twice_is_counted_once(tmp_path: Path) -> None:
    keys = [text_key(f"t{i}") for i in range(3)]
    cache = EmbeddingCache(tmp_path)
    cache.put_many("ns", keys, _unit(3, 8))
    set_vectors(
        tmp_path / FILENAME, [("ns", keys[1], 8, np.full(8, np.nan).astype("f4").tobytes())]
    )
    with pytest.warns(EmbedBenchWarning, match=r": 1 damaged vector.*1 with NaN"):
        matrix, missing = cache.get_matrix("ns", [keys[1], keys[0], keys[1]], dim=8)
    assert missing == [0, 2] and not matrix[[0, 2]].any() and matrix[1].any()


# -- schema 3: vectors in segment files beside the SQLite index ------------------------------


def _schema_2(path: Path, namespace: str, keys: list[bytes], vectors: np.ndarray) -> None:
    """A cache file as the schema-2 code wrote it: each batch of 32 one blob in the file."""
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
    conn.execute("INSERT INTO meta VALUES ('schema_version', '2')")
    conn.execute(
        "CREATE TABLE namespaces (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE,"
        " size INTEGER NOT NULL DEFAULT 0)"
    )
    conn.execute(
        "CREATE TABLE batches (id INTEGER PRIMARY KEY, ns INTEGER NOT NULL, dim INTEGER NOT NULL,"
        " count INTEGER NOT NULL, live INTEGER NOT NULL, keys BLOB NOT NULL, data BLOB NOT NULL)"
    )
    conn.execute("CREATE INDEX batches_ns ON batches (ns)")
    conn.execute(
        "CREATE TABLE entries (ns INTEGER NOT NULL, key BLOB NOT NULL, batch INTEGER NOT NULL,"
        " slot INTEGER NOT NULL, PRIMARY KEY (ns, key)) WITHOUT ROWID"
    )
    conn.execute("INSERT INTO namespaces (id, name, size) VALUES (1, ?, ?)", (namespace, len(keys)))
    dim = vectors.shape[1]
    for start in range(0, len(keys), 32):
        part = keys[start : start + 32]
        batch = conn.execute(
            "INSERT INTO batches (ns, dim, count, live, keys, data) VALUES (1, ?, ?, ?, ?, ?)",
            (dim, len(part), len(part), b"".join(part), vectors[start : start + 32].tobytes()),
        ).lastrowid
        conn.executemany(
            "INSERT INTO entries VALUES (1, ?, ?, ?)", [(k, batch, i) for i, k in enumerate(part)]
        )
    conn.close()


def _segments(folder: Path) -> list[Path]:
    return sorted(folder.glob("vectors-*.f32"))


@pytest.mark.parametrize("written_by", ["schema 2", "schema 3 migrated from schema 2"])
def test_a_schema_2_cache_is_migrated_and_reads_back_equal_vectors(
    tmp_path: Path, written_by: str
) -> None:
    """Its batches (blobs in the index file, where the code before issue 41 left them when it
    migrated such a file to schema 3) move to a segment file, and the index file shrinks; new
    writes go to a segment file of their own; a read of both, in the stored order or shuffled,
    gives every vector back."""
    vectors = _unit(200, 16)
    keys = [text_key(f"t{i}") for i in range(len(vectors))]
    _schema_2(tmp_path / FILENAME, "ns", keys[:150], vectors[:150])
    if written_by != "schema 2":  # what that code's migration left: blobs in a schema-3 file
        conn = sqlite3.connect(tmp_path / FILENAME, isolation_level=None)
        conn.execute("ALTER TABLE batches ADD COLUMN file TEXT")
        conn.execute("ALTER TABLE batches ADD COLUMN offset INTEGER")
        conn.execute("UPDATE meta SET value = '3' WHERE key = 'schema_version'")
        conn.close()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a migration is not a fault: no warning, nothing aside
        cache = EmbeddingCache(tmp_path)
        assert len(_segments(tmp_path)) == 1
        matrix, missing = cache.get_matrix("ns", keys[:150], dim=16, unit_norm=True)
        assert missing == [] and np.array_equal(matrix, vectors[:150])
        cache.put_many("ns", keys[150:], vectors[150:])
        assert len(_segments(tmp_path)) == 2
        shuffled = np.random.default_rng(1).permutation(len(keys))
        for order in (np.arange(len(keys)), shuffled):
            matrix, missing = cache.get_matrix("ns", [keys[i] for i in order], dim=16)
            assert missing == [] and np.array_equal(matrix, vectors[order])
    conn = sqlite3.connect(tmp_path / FILENAME)
    meta = dict(conn.execute("SELECT key, value FROM meta"))
    held = conn.execute("SELECT COUNT(*) FROM batches WHERE file IS NULL OR data != X''")
    assert held.fetchone() == (0,)  # no vector left in the index file
    conn.close()
    assert meta == {"schema_version": "3", "layout": "segments"}
    assert not any(".corrupt-" in p.name for p in tmp_path.iterdir())


@pytest.mark.parametrize("how", ["cut short", "deleted", "a name outside the folder"])
def test_a_damaged_segment_file_is_reported_and_its_vectors_written_again(
    tmp_path: Path, how: str
) -> None:
    vectors, keys = _stored_in_batches(tmp_path, 96)
    (segment,) = _segments(tmp_path)
    outside = tmp_path.parent / f"{tmp_path.name}-outside.f32"
    if how == "cut short":  # the last batch loses its last vector and a half
        os.truncate(segment, segment.stat().st_size - 6 * 8)
    elif how == "deleted":
        segment.unlink()
    else:
        outside.write_bytes(vectors.tobytes())  # never opened: not a segment name
        conn = sqlite3.connect(tmp_path / FILENAME)
        with conn:
            conn.execute("UPDATE batches SET file = ? WHERE id = 2", (f"../{outside.name}",))
        conn.close()
    lost = {"cut short": list(range(64, 96)), "deleted": list(range(96))}.get(
        how, list(range(32, 64))
    )
    cache = EmbeddingCache(tmp_path)
    with pytest.warns(EmbedBenchWarning, match=rf"{len(lost)} damaged.*byte length"):
        matrix, missing = cache.get_matrix("ns", keys, dim=8, unit_norm=True)
    assert missing == lost and not matrix[lost].any()
    kept = [i for i in range(96) if i not in lost]
    assert np.array_equal(matrix[kept], vectors[kept])
    cache.put_many("ns", [keys[i] for i in lost], vectors[lost])  # embedded again
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        matrix, missing = cache.get_matrix("ns", keys, dim=8, unit_norm=True)
    assert missing == [] and np.array_equal(matrix, vectors)
    if how == "a name outside the folder":
        assert outside.read_bytes() == vectors.tobytes()  # read nothing, wrote nothing there


def test_bytes_a_write_left_without_its_index_row_are_harmless(tmp_path: Path) -> None:
    """A process killed after writing its vectors but before committing their index row
    leaves orphan bytes at the end of its segment: never read, and the next writer (a new
    process) appends to a segment of its own."""
    vectors = _unit(64, 8)
    keys = [text_key(f"t{i}") for i in range(len(vectors))]
    cache = EmbeddingCache(tmp_path)
    cache.put_many("ns", keys[:32], vectors[:32])
    cache.close()
    (first,) = _segments(tmp_path)
    with first.open("ab") as fh:
        fh.write(b"\xff" * 1000)  # half a batch of NaNs, indexed by nothing
    cache = EmbeddingCache(tmp_path)
    cache.put_many("ns", keys[32:], vectors[32:])
    assert len(_segments(tmp_path)) == 2
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        matrix, missing = cache.get_matrix("ns", keys, dim=8, unit_norm=True)
    assert missing == [] and np.array_equal(matrix, vectors)


def test_segment_files_no_batch_points_to_are_deleted_but_not_a_writers(tmp_path: Path) -> None:
    vectors = _unit(64, 8)
    keys = [text_key(f"t{i}") for i in range(len(vectors))]
    first = EmbeddingCache(tmp_path)
    first.put_many("ns", keys[:32], vectors[:32])
    first.close()  # its segment is no writer's any more
    (old,) = _segments(tmp_path)
    second = EmbeddingCache(tmp_path)
    second.put_many("ns", keys[32:], vectors[32:])  # the second writer's segment, held open
    third = EmbeddingCache(tmp_path)
    third.put_many("ns", keys, vectors[::-1].copy())  # every vector written again
    names = {p.name for p in _segments(tmp_path)}
    assert old.name not in names and len(names) == 2  # the held one stays while held
    matrix, missing = third.get_matrix("ns", keys, dim=8)
    assert missing == [] and np.array_equal(matrix, vectors[::-1])
    second.close()
    third.clear()
    assert _segments(tmp_path) == [] and third.count() == 0


@pytest.mark.parametrize("how", ["cut short", "deleted", "a name outside the folder"])
def test_a_damaged_segment_file_read_row_by_row_is_reported_the_same(
    tmp_path: Path, how: str
) -> None:
    """A third of the keys (each row read straight into its place, not the batches around
    it): the rows of a batch whose bytes are not all there are damaged, the others read."""
    vectors, keys = _stored_in_batches(tmp_path, 96)
    (segment,) = _segments(tmp_path)
    if how == "cut short":  # row 95 lost whole, row 94 in half
        os.truncate(segment, segment.stat().st_size - 6 * 8)
    elif how == "deleted":
        segment.unlink()
    else:
        conn = sqlite3.connect(tmp_path / FILENAME)
        with conn:
            conn.execute("UPDATE batches SET file = ? WHERE id = 2", ("../elsewhere.f32",))
        conn.close()
    rows = list(range(2, 96, 3))  # 2, 5, ..., 95
    batch_lost = {"cut short": range(64, 96), "deleted": range(96)}.get(how, range(32, 64))
    lost = [j for j, i in enumerate(rows) if i in batch_lost]
    cache = EmbeddingCache(tmp_path)
    with pytest.warns(EmbedBenchWarning, match=rf"{len(lost)} damaged.*byte length"):
        matrix, missing = cache.get_matrix("ns", [keys[i] for i in rows], dim=8, unit_norm=True)
    assert missing == lost and not matrix[lost].any()
    kept = [j for j in range(len(rows)) if j not in lost]
    assert np.array_equal(matrix[kept], vectors[[rows[j] for j in kept]])


@pytest.mark.skipif(not Path("/proc/self/io").exists(), reason="needs Linux's /proc/self/io")
def test_a_shard_of_a_corpus_stored_in_another_order_reads_only_its_rows(
    tmp_path: Path,
) -> None:
    """A memory budget reads the corpus back a shard at a time; when the cache holds it in
    another order (a run without the budget wrote it in the model's length-sorted batches),
    each shard's keys are spread over nearly every batch. Reading those batches whole held
    and read the whole namespace for every shard; only the asked rows may be read."""
    n, dim = 20_000, 256  # 1 KiB a vector: 20 MiB in all
    vectors = _unit(n, dim, seed=4)
    keys = [text_key(f"document {i}") for i in range(n)]
    written = np.random.default_rng(1).permutation(n)  # stored in another order
    cache = EmbeddingCache(tmp_path)
    for start in range(0, n, 32):
        part = written[start : start + 32]
        cache.put_many("ns", [keys[i] for i in part], vectors[part])
    cache.close()

    def bytes_read() -> int:
        io = dict(line.split(": ") for line in Path("/proc/self/io").read_text().splitlines())
        return int(io["rchar"])

    cache = EmbeddingCache(tmp_path)
    shard = slice(5000, 6000)  # 1 MiB of vectors, spread over all 625 batches
    before = bytes_read()
    matrix, missing = cache.get_matrix("ns", keys[shard], dim=dim, unit_norm=True)
    read = bytes_read() - before
    assert missing == [] and np.array_equal(matrix, vectors[shard])
    # the rows (1 MiB) and the index's pages; reading the batches whole is over 19 MiB
    assert read < 6 * 2**20, read


def test_a_corpus_read_a_shard_at_a_time_sees_every_write_made_in_between(
    tmp_path: Path,
) -> None:
    """Shards of a corpus are matched against the namespace's key index, built once and kept
    while nothing is written; a write by this cache object, by another connection (another
    process sharing the folder), or a clear makes the next read see the new vectors."""
    n, dim = 12_000, 8
    vectors = _unit(n, dim, seed=2)
    keys = [text_key(f"document {i}") for i in range(n)]
    written = np.random.default_rng(3).permutation(n)
    cache = EmbeddingCache(tmp_path)
    for start in range(0, n, 32):
        part = written[start : start + 32]
        cache.put_many("ns", [keys[i] for i in part], vectors[part])
    shards = [slice(lo, lo + 3000) for lo in range(0, n, 3000)]
    for shard in shards * 2:  # the second round reads through the index the first built
        matrix, missing = cache.get_matrix("ns", keys[shard], dim=dim, unit_norm=True)
        assert missing == [] and np.array_equal(matrix, vectors[shard])
    known = cache._local.keys["ns"]
    assert known.newer is None  # built once, and kept
    newer = _unit(n, dim, seed=9)
    other = EmbeddingCache(tmp_path)  # another connection writes 40 keys of the last shard
    changed = list(range(9000, 9040))
    other.put_many("ns", [keys[i] for i in changed], newer[changed])
    other.close()
    expected = vectors.copy()
    expected[changed] = newer[changed]
    matrix, missing = cache.get_matrix("ns", keys[9000:12000], dim=dim, unit_norm=True)
    assert missing == [] and np.array_equal(matrix, expected[9000:12000])
    # not built again: the batch written since is the second level
    assert cache._local.keys["ns"].main is known.main and cache._local.keys["ns"].newer
    changed = list(range(3000, 3100))  # this object writes
    cache.put_many("ns", [keys[i] for i in changed], newer[changed])
    expected[changed] = newer[changed]
    for shard in shards:
        matrix, missing = cache.get_matrix("ns", keys[shard], dim=dim, unit_norm=True)
        assert missing == [] and np.array_equal(matrix, expected[shard])
    cache.clear("ns")
    matrix, missing = cache.get_matrix("ns", keys[0:3000], dim=dim, unit_norm=True)
    assert missing == list(range(3000)) and not matrix.any()


@pytest.mark.parametrize("piece", [1 << 21, 100])
@pytest.mark.parametrize("how", ["intact", "cut short"])
def test_a_read_in_another_order_is_read_straight_into_place_a_piece_at_a_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, piece: int, how: str
) -> None:
    """Every key, in reverse (asked twice for some): the rows, sorted by file and offset, are
    read by calls of at most ``piece`` bytes (100: three 8-d rows a call) straight into their
    places; a batch cut short is damaged whichever call reads it."""
    monkeypatch.setattr(segments, "PIECE", piece)
    vectors, keys = _stored_in_batches(tmp_path, 160, seed=6)
    if how == "cut short":  # the last batch loses its last vector and a half
        (segment,) = _segments(tmp_path)
        os.truncate(segment, segment.stat().st_size - 6 * 8)
    rows = list(range(159, -1, -1)) + [3, 100, 3]
    cache = EmbeddingCache(tmp_path)
    lost = [j for j, i in enumerate(rows) if how == "cut short" and i >= 128]
    if lost:
        with pytest.warns(EmbedBenchWarning, match="32 damaged.*byte length"):
            matrix, missing = cache.get_matrix("ns", [keys[i] for i in rows], dim=8)
    else:
        matrix, missing = cache.get_matrix("ns", [keys[i] for i in rows], dim=8)
    assert missing == lost and not matrix[lost].any()
    kept = [j for j in range(len(rows)) if j not in lost]
    assert np.array_equal(matrix[kept], vectors[[rows[j] for j in kept]])


@pytest.mark.parametrize("dim", [384, 385])
def test_a_read_lands_where_the_kernel_copies_it_fast(tmp_path: Path, dim: int) -> None:
    """Each read's destination starts 0-63 bytes before its source's place in a page, 64-byte
    aligned (segments.PAGE: a few bytes past it, the kernel's copy runs ~3x slower; numpy's own
    large arrays start 16 bytes into a page, past a read from offset 0). Two batches of a stored
    order read straight into the result, from a second file whose rows start at a place in its
    page that the first file's do not share; a shuffled read goes through the scratch buffer."""
    vectors = _unit(6000, dim)
    keys = [text_key(f"t{i}") for i in range(len(vectors))]
    first = EmbeddingCache(tmp_path)
    first.put_many("ns", keys[:1000], vectors[:1000])
    first.close()
    second = EmbeddingCache(tmp_path)  # another writer: rows 1000-5999 in a file of their own
    second.put_many("ns", keys[1000:], vectors[1000:])
    matrix, missing = second.get_matrix("ns", keys, dim=dim, unit_norm=True)
    assert not missing and np.array_equal(matrix, vectors)
    lag = (0 - 4 * dim * 1000) % segments.PAGE  # the commonest: the second file's 5000 rows
    assert matrix.ctypes.data % segments.PAGE == lag // 64 * 64
    assert matrix.flags.c_contiguous and matrix.dtype == np.float32

    order = np.random.default_rng(1).permutation(len(keys))
    shuffled, missing = second.get_matrix("ns", [keys[i] for i in order], dim=dim)
    assert not missing and np.array_equal(shuffled, vectors[order])
    second.close()


@pytest.mark.parametrize("offset", [0, 16, 100, 4095, 4096 + 130])
def test_placed_puts_the_first_byte_where_the_offset_is_in_a_page(offset: int) -> None:
    out = segments._placed((37, 5), offset)
    assert out.shape == (37, 5) and out.dtype == np.float32 and out.flags.c_contiguous
    assert out.ctypes.data % 64 == 0
    assert out.ctypes.data % segments.PAGE == offset % segments.PAGE // 64 * 64
    out[:] = 1.0  # its memory is its own, all of it writable
    assert out.sum() == 37 * 5

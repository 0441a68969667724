"""The cache's compact layout (issue 33): one blob per written batch and a key index.

* the file holds at most 1.1x the raw float32 bytes for the common dimensions;
* a cache written by the schema-1 code (one row per vector) is migrated in place and read;
* the two ways of finding keys (a B-tree search per key, or one pass over the namespace when
  most of it is asked for) give the same vectors, the newest copy of a key written twice, and
  the same damaged vectors;
* a batch whose vectors were all written again is deleted.
"""

from __future__ import annotations

import sqlite3
import warnings
from pathlib import Path

import numpy as np
import pytest

from pytest_embedbench import EmbedBenchWarning, EmbeddingCache
from pytest_embedbench import cache as cache_module
from pytest_embedbench.cache import FILENAME, text_key

from ..cacherows import set_vectors


def _unit(n: int, dim: int, seed: int = 0) -> np.ndarray:
    vectors = np.random.default_rng(seed).standard_normal((n, dim)).astype(np.float32)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


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
    assert "vectors" not in tables and version == "2"
    assert _bytes(tmp_path) <= 1.1 * (docs.nbytes + queries.nbytes) < old_size  # VACUUMed
    again = EmbeddingCache(tmp_path)  # opened again: already migrated
    assert again.count("m") == 1499


@pytest.mark.parametrize("scan_min", [1, 10**9], ids=["one-pass", "per-key"])
def test_both_ways_of_finding_keys_agree(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, scan_min: int
) -> None:
    monkeypatch.setattr(cache_module, "SCAN_MIN", scan_min)
    vectors = _unit(600, 16)
    keys = [text_key(f"t{i}") for i in range(len(vectors))]
    cache = EmbeddingCache(tmp_path)
    for start in range(0, len(keys), 50):
        cache.put_many("ns", keys[start : start + 50], vectors[start : start + 50])
    cache.put_many("other", keys[:10], _unit(10, 16, seed=9))
    newer = _unit(30, 16, seed=3)
    cache.put_many("ns", keys[100:130], newer)  # written again: the newest copy counts
    bad = [("ns", keys[200], 16, np.full(16, np.inf, np.float32).tobytes())]
    bad.append(("ns", keys[201], 16, b"\x00" * 12))  # a wrong byte length
    bad.append(("ns", keys[202], 16, (2 * vectors[202]).tobytes()))  # norm 2
    set_vectors(tmp_path / FILENAME, bad)
    asked = [keys[i] for i in np.random.default_rng(4).permutation(len(keys))]
    asked += [text_key("never stored"), asked[0]]  # a missing key and a repeated one

    with pytest.warns(EmbedBenchWarning) as caught:
        found, missing = cache.get_many("ns", asked, dim=16, unit_norm=True)
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


@pytest.mark.parametrize("scan_min", [1, 10**9], ids=["one-pass", "per-key"])
def test_keys_none_of_which_is_stored_are_all_missing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, scan_min: int
) -> None:
    monkeypatch.setattr(cache_module, "SCAN_MIN", scan_min)
    cache = EmbeddingCache(tmp_path)
    cache.put_many("ns", [text_key("stored")], _unit(1, 8))
    asked = [text_key(f"never {i}") for i in range(3)]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert cache.get_many("ns", asked, dim=8) == ({}, [0, 1, 2])
        matrix, missing = cache.get_matrix("ns", asked, dim=8)
    assert missing == [0, 1, 2] and matrix.shape == (3, 8) and not matrix.any()


@pytest.mark.parametrize("scan_min", [1, 10**9], ids=["one-pass", "per-key"])
def test_reading_all_keys_in_the_stored_order_equals_reading_them_one_by_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, scan_min: int
) -> None:
    """The stored order (a corpus read back in the order it was embedded) is copied blob by
    blob without matching keys; it must give what a lookup of each key gives, also once some
    keys have a newer copy or a damaged vector."""
    monkeypatch.setattr(cache_module, "SCAN_MIN", scan_min)
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

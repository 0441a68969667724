"""Issue 42, items 1 and 6: damaged segment bytes found by their checksums, and links in place
of the cache's own files refused, as the fourth probe made them.

Each damage is done to the real segment file of a real run (the hashing provider, a real
cache): finite, unit-norm garbage passes every other check, so before checksums the next run
reported only hits, no warning, and scored with the damaged vectors.
"""

from __future__ import annotations

import os
import sqlite3
import warnings
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from pytest_embedbench import EmbedBenchWarning, EmbeddingCache, Evaluator, RetrievalDataset
from pytest_embedbench.cache import FILENAME, text_key
from pytest_embedbench.cache.segments import names

from ..helpers import word_dataset

DIM = 64
ROW = 4 * DIM


def _dataset(n_docs: int = 160) -> RetrievalDataset:
    return word_dataset(n_docs, name="checksums")


def _run(folder: Path, ds: RetrievalDataset):  # noqa: ANN202
    """One evaluation on the cache in ``folder``; its result and the warnings it gave."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ev = Evaluator(cache=folder)
        result = ev.evaluate("hashing:h", ds)
        ev.cache.close()  # type: ignore[union-attr]
    return result, [str(w.message) for w in caught if issubclass(w.category, EmbedBenchWarning)]


def _rows(data: bytearray, first: int, n: int) -> np.ndarray:
    return np.frombuffer(data, dtype=np.float32)[first * DIM : (first + n) * DIM].reshape(n, DIM)


def _random_bytes(data: bytearray) -> None:
    middle = len(data) // 2
    data[middle : middle + 1000] = np.random.default_rng(1).bytes(1000)


def _zeros(data: bytearray) -> None:
    middle = len(data) // 2
    data[middle : middle + 1000] = bytes(1000)


def _first_100_randomised(data: bytearray) -> None:
    garbage = np.random.default_rng(2).standard_normal((100, DIM)).astype(np.float32)
    garbage /= np.linalg.norm(garbage, axis=1, keepdims=True)  # finite, unit norm
    data[: 100 * ROW] = garbage.tobytes()


def _sign_flipped(data: bytearray) -> None:
    data[40 * ROW : 41 * ROW] = (-_rows(data, 40, 1)).tobytes()


def _two_swapped(data: bytearray) -> None:
    a, b = _rows(data, 3, 1).tobytes(), _rows(data, 70, 1).tobytes()
    data[3 * ROW : 4 * ROW], data[70 * ROW : 71 * ROW] = b, a


def _cut_short(data: bytearray) -> None:
    del data[-1:]


DAMAGE: dict[str, Callable[[bytearray], None]] = {
    "random bytes in the middle": _random_bytes,
    "zeros in the middle": _zeros,
    "the first 100 rows randomised": _first_100_randomised,
    "one row's sign flipped": _sign_flipped,
    "two rows swapped": _two_swapped,
    "cut short by one byte": _cut_short,
}


@pytest.mark.parametrize("damage", list(DAMAGE))
def test_damaged_segment_bytes_are_found_reported_once_and_embedded_again(
    tmp_path: Path, damage: str
) -> None:
    ds = _dataset()
    clean = Evaluator(cache=False).evaluate("hashing:h", ds)
    first, messages = _run(tmp_path, ds)
    assert messages == [] and first.run == clean.run
    (segment,) = names(tmp_path)  # the documents' batches first, then the queries'
    path = tmp_path / segment
    data = bytearray(path.read_bytes())
    DAMAGE[damage](data)
    path.write_bytes(bytes(data))

    damaged, messages = _run(tmp_path, ds)
    assert len(messages) == 1, messages
    assert str(path) in messages[0]
    assert "checksum" in messages[0] or "byte length" in messages[0], messages[0]
    misses = damaged.cache.misses + damaged.query_cache.misses
    assert misses > 0  # embedded again
    assert damaged.run == clean.run and float(damaged.ndcg10) == float(clean.ndcg10)

    again, messages = _run(tmp_path, ds)
    assert messages == []  # rewritten: the next run is clean
    assert (again.cache.misses, again.query_cache.misses) == (0, 0)
    assert again.run == clean.run


def test_a_shard_of_damaged_batches_is_checked_row_by_row(tmp_path: Path) -> None:
    """A read of a few rows of each batch checks those rows, not the batches around them."""
    cache = EmbeddingCache(tmp_path)
    keys = [text_key(f"k{i}") for i in range(256)]
    vectors = np.random.default_rng(3).standard_normal((256, DIM)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    cache.put_many("ns", keys, vectors)
    cache.close()
    (segment,) = names(tmp_path)
    data = bytearray((tmp_path / segment).read_bytes())
    a, b = _rows(data, 3, 1).tobytes(), _rows(data, 69, 1).tobytes()
    data[3 * ROW : 4 * ROW], data[69 * ROW : 70 * ROW] = b, a  # rows 3 and 69 swapped
    (tmp_path / segment).write_bytes(bytes(data))
    cache = EmbeddingCache(tmp_path)
    with pytest.warns(EmbedBenchWarning, match=r"2 damaged vector.*checksum"):
        matrix, missing = cache.get_matrix("ns", keys[::3], dim=DIM, unit_norm=True)
    assert missing == [1, 23]  # keys 3 and 69
    sound = [i for i in range(len(keys[::3])) if i not in missing]
    assert np.array_equal(matrix[sound], vectors[::3][sound])
    cache.close()


def test_a_cache_written_before_checksums_is_read_unchecked(tmp_path: Path) -> None:
    """A schema-3 file without the checksum columns (as written until issue 42) opens and reads
    as before; its batches are unchecked, the ones written from then on checked."""
    cache = EmbeddingCache(tmp_path)
    keys = [text_key(f"k{i}") for i in range(40)]
    vectors = np.eye(40, DIM, dtype=np.float32)
    cache.put_many("ns", keys[:20], vectors[:20])
    cache.close()
    conn = sqlite3.connect(tmp_path / FILENAME)
    conn.execute("ALTER TABLE batches DROP COLUMN hash")
    conn.execute("ALTER TABLE batches DROP COLUMN row_hashes")
    conn.commit()
    conn.close()
    cache = EmbeddingCache(tmp_path)
    found, missing = cache.get_matrix("ns", keys[:20], dim=DIM, unit_norm=True)
    assert missing == [] and np.array_equal(found, vectors[:20])
    cache.put_many("ns", keys[20:], vectors[20:])
    cache.close()
    conn = sqlite3.connect(tmp_path / FILENAME)
    sums = conn.execute("SELECT hash IS NOT NULL FROM batches ORDER BY id").fetchall()
    conn.close()
    assert sums == [(0,), (1,)]


# -- links in place of the cache's own files -----------------------------------------------


def _link_target(tmp_path: Path, kind: str) -> Path:
    if kind == "/dev/null":
        return Path(os.devnull)
    other = tmp_path / "elsewhere" / "a-file-of-the-user.txt"
    other.parent.mkdir()
    if kind == "another file":
        other.write_bytes(b"the user's own bytes\n")
    return other  # "nothing": a link to a path that does not exist


@pytest.mark.parametrize("kind", ["/dev/null", "another file", "nothing"])
@pytest.mark.parametrize("name", [FILENAME, f"{FILENAME}-wal", f"{FILENAME}-shm", "segment"])
def test_a_link_in_place_of_a_cache_file_is_refused_and_the_cache_rebuilt(
    tmp_path: Path, name: str, kind: str
) -> None:
    folder = tmp_path / "cache"
    ds = _dataset(n_docs=60)
    clean = Evaluator(cache=False).evaluate("hashing:h", ds)
    _, messages = _run(folder, ds)
    assert messages == []
    if name == "segment":
        (name,) = names(folder)
    link = folder / name
    target = _link_target(tmp_path, kind)
    before = target.read_bytes() if kind == "another file" else None
    link.unlink(missing_ok=True)
    link.symlink_to(target)

    result, messages = _run(folder, ds)
    assert len(messages) == 1, messages
    assert str(link) in messages[0] and "symbolic link" in messages[0], messages[0]
    assert "cannot be used" not in messages[0]
    assert result.run == clean.run
    if kind == "another file":
        assert target.read_bytes() == before  # never written through
    else:
        assert kind == "/dev/null" or not target.exists()  # nothing created where it pointed
    assert not link.is_symlink()
    again, messages = _run(folder, ds)  # rebuilt in place: the next run is all hits
    assert messages == []
    assert (again.cache.misses, again.query_cache.misses) == (0, 0)


ORDERS: dict[str, Callable[[int], list[int]]] = {
    "stored": lambda n: list(range(n)),
    "reversed": lambda n: list(range(n - 1, -1, -1)),
    "shuffled, some twice": lambda n: [
        *np.random.default_rng(5).permutation(n).tolist(),
        3,
        69,
        3,
    ],
    "every third (a shard)": lambda n: list(range(0, n, 3)),
}


@pytest.mark.parametrize("piece", [None, 100])
@pytest.mark.parametrize("order", list(ORDERS))
def test_two_rows_swapped_are_found_in_any_order_and_any_piece_size(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, order: str, piece: int | None
) -> None:
    """Rows 3 and 69 (of the first and second of four batches of 64) swapped in the file: a
    read of whole batches, straight into place or through the buffer of a shuffled read, in
    pieces of 512 KiB or of 100 bytes (a batch read whole is never cut, whatever the piece),
    drops both batches; a shard drops the two rows alone. The rest reads back exactly."""
    from pytest_embedbench.cache import segments

    if piece is not None:
        monkeypatch.setattr(segments, "PIECE", piece)
    keys, vectors, segment = _four_batches(tmp_path, seed=4)
    data = bytearray((tmp_path / segment).read_bytes())
    _two_swapped_at(data, 3, 69)
    (tmp_path / segment).write_bytes(bytes(data))
    rows = ORDERS[order](256)
    shard = order.startswith("every")
    damaged = {3, 69} if shard else set(range(128))
    cache = EmbeddingCache(tmp_path)
    with pytest.warns(EmbedBenchWarning, match=rf"{len(damaged)} damaged vector.*checksum"):
        matrix, missing = cache.get_matrix("ns", [keys[i] for i in rows], dim=DIM, unit_norm=True)
    cache.close()
    assert missing == [j for j, i in enumerate(rows) if i in damaged]
    sound = [j for j, i in enumerate(rows) if i not in damaged]
    assert np.array_equal(matrix[sound], vectors[[rows[j] for j in sound]])
    assert not matrix[missing].any()


def _four_batches(folder: Path, *, seed: int) -> tuple[list[bytes], np.ndarray, str]:
    """A cache in ``folder`` holding 256 unit vectors stored as four batches of 64 in one
    segment file: their keys, the vectors and the file's name."""
    keys = [text_key(f"k{i}") for i in range(256)]
    vectors = np.random.default_rng(seed).standard_normal((256, DIM)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    cache = EmbeddingCache(folder)
    for start in range(0, 256, 64):
        cache.put_many("ns", keys[start : start + 64], vectors[start : start + 64])
    cache.close()
    (segment,) = names(folder)
    return keys, vectors, segment


def _two_swapped_at(data: bytearray, a: int, b: int) -> None:
    first, second = _rows(data, a, 1).tobytes(), _rows(data, b, 1).tobytes()
    data[a * ROW : (a + 1) * ROW], data[b * ROW : (b + 1) * ROW] = second, first


@pytest.mark.parametrize("order", ["stored", "shuffled, some twice"])
def test_a_segment_cut_short_while_it_is_read_drops_what_did_not_arrive_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, order: str
) -> None:
    """Another process truncates the file between its opening and its read (row 150 of four
    batches of 64): the rows that never arrived are damaged by their length, the batch cut in
    two by its checksum (its hash cannot be taken), the two batches before read back exactly."""
    from pytest_embedbench.cache import segments

    keys, vectors, segment = _four_batches(tmp_path, seed=8)
    opened = segments.open_files

    def open_then_cut(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        files = opened(*args, **kwargs)
        os.truncate(tmp_path / segment, 150 * ROW)
        return files

    monkeypatch.setattr(segments, "open_files", open_then_cut)
    rows = ORDERS[order](256)
    cache = EmbeddingCache(tmp_path)
    with pytest.warns(EmbedBenchWarning) as caught:
        matrix, missing = cache.get_matrix("ns", [keys[i] for i in rows], dim=DIM, unit_norm=True)
    cache.close()
    (message,) = [str(w.message) for w in caught]
    assert "22 with bytes that do not match their batch's checksum" in message, message
    assert "106 with a byte length that does not match its dimension" in message, message
    assert str(tmp_path / segment) in message
    assert missing == [j for j, i in enumerate(rows) if i >= 128]
    kept = [j for j, i in enumerate(rows) if i < 128]
    assert np.array_equal(matrix[kept], vectors[[rows[j] for j in kept]])

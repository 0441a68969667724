"""Compaction of the cache's segment files (issue 41), and caches written before it.

* a segment file mostly dead (its vectors written again, or their namespace cleared) is
  rewritten: the space comes back and every live vector reads back equal;
* a crash between the steps of a compaction loses nothing, and the next one finishes the job;
* a cache the code before issue 41 wrote (schema 3 without the layout mark) reads as it was.
"""

from __future__ import annotations

import os
import sqlite3
import warnings
from pathlib import Path

import numpy as np
import pytest

from pytest_embedbench import CacheError, EmbedBenchWarning, EmbeddingCache
from pytest_embedbench.cache import FILENAME, compact, segments, text_key


def _unit(n: int, dim: int, seed: int) -> np.ndarray:
    vectors = np.random.default_rng(seed).standard_normal((n, dim)).astype(np.float32)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def _segments(folder: Path) -> dict[str, int]:
    return {p.name: p.stat().st_size for p in sorted(folder.glob("vectors-*.f32"))}


ROW = 16 * 4  # bytes of a vector here


def _fill(
    folder: Path, written_again: int
) -> tuple[dict[str, list[bytes]], dict[bytes, np.ndarray]]:
    """One writer stores 256 vectors of namespace "ns" and 64 of "other" (16-d, 32 a write);
    while it still holds its file (so that nothing is compacted), a second writer writes the
    first ``written_again`` of "ns" again. Returns the keys by namespace and each key's vector
    now."""
    keys = {ns: [text_key(f"{ns} {i}") for i in range(n)] for ns, n in (("ns", 256), ("other", 64))}
    now = {}
    first, second = EmbeddingCache(folder), EmbeddingCache(folder)
    for seed, (ns, mine) in enumerate(keys.items()):
        vectors = _unit(len(mine), 16, seed)
        for start in range(0, len(mine), 32):
            first.put_many(ns, mine[start : start + 32], vectors[start : start + 32])
        now.update(zip(mine, vectors, strict=True))
    again = _unit(written_again, 16, seed=7)
    for start in range(0, written_again, 32):
        second.put_many("ns", keys["ns"][start : start + 32], again[start : start + 32])
    now.update(zip(keys["ns"][:written_again], again, strict=True))
    first.close()
    second.close()
    return keys, now


def _reads_back(folder: Path, keys: dict[str, list[bytes]], now: dict[bytes, np.ndarray]) -> None:
    """Every key of ``keys`` reads back as ``now`` says, from a fresh cache object, without a
    warning."""
    cache = EmbeddingCache(folder)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for ns, mine in keys.items():
            matrix, missing = cache.get_matrix(ns, mine, dim=16, unit_norm=True)
            assert missing == [] and np.array_equal(matrix, np.stack([now[k] for k in mine]))
    cache.close()


def test_a_mostly_dead_segment_file_is_compacted_and_reads_back_equal(tmp_path: Path) -> None:
    keys, now = _fill(tmp_path, written_again=224)  # 96 of the first file's 320 rows live
    before = _segments(tmp_path)
    (first,) = [name for name, size in before.items() if size == 320 * ROW]
    cache = EmbeddingCache(tmp_path)
    given_back = cache.compact()
    after = _segments(tmp_path)
    assert first not in after and len(after) == 2  # its live rows went to a new file
    assert sum(after.values()) == (256 + 64) * ROW  # the live vectors, nothing else
    assert given_back == sum(before.values()) - sum(after.values()) == 224 * ROW
    _reads_back(tmp_path, keys, now)
    assert cache.count() == 256 + 64
    assert cache.compact() == 0  # nothing dead left


def test_a_file_over_half_alive_or_held_by_a_writer_is_left_as_it_is(tmp_path: Path) -> None:
    keys, now = _fill(tmp_path, written_again=96)  # 224 of the first file's 320 rows live
    before = _segments(tmp_path)
    assert EmbeddingCache(tmp_path).compact() == 0 and _segments(tmp_path) == before
    writer = EmbeddingCache(tmp_path)  # 64 vectors, then the same 64 again: half its file
    fresh = [text_key(f"fresh {i}") for i in range(64)]
    for seed in (10, 11):
        writer.put_many("fresh", fresh, _unit(64, 16, seed))
    now.update(zip(fresh, _unit(64, 16, 11), strict=True))
    (held,) = set(_segments(tmp_path)) - set(before)
    assert EmbeddingCache(tmp_path).compact() == 0 and held in _segments(tmp_path)
    writer.close()  # held by no writer now: compacted
    assert EmbeddingCache(tmp_path).compact() == 64 * ROW and held not in _segments(tmp_path)
    _reads_back(tmp_path, {**keys, "fresh": fresh}, now)


def test_writes_that_kill_most_of_a_file_compact_it(tmp_path: Path) -> None:
    """No call to compact(): the write that leaves a file (held by no writer) mostly dead
    compacts it."""
    keys, now = _fill(tmp_path, written_again=0)
    (first,) = _segments(tmp_path)
    cache = EmbeddingCache(tmp_path)
    again = _unit(192, 16, seed=9)
    for start in range(0, 192, 32):
        cache.put_many("ns", keys["ns"][start : start + 32], again[start : start + 32])
        # the fifth write leaves half of the file's 320 rows live: compacted by it
        assert (first in _segments(tmp_path)) == (start < 128)
    now.update(zip(keys["ns"][:192], again, strict=True))
    cache.close()
    _reads_back(tmp_path, keys, now)


def test_clearing_a_namespace_compacts_the_files_it_shared(tmp_path: Path) -> None:
    keys, now = _fill(tmp_path, written_again=0)
    (first,) = _segments(tmp_path)
    cache = EmbeddingCache(tmp_path)
    cache.clear("ns")  # 256 of 320 rows dead
    assert list(_segments(tmp_path).values()) == [64 * ROW] and first not in _segments(tmp_path)
    _reads_back(tmp_path, {"other": keys["other"]}, now)
    assert cache.get_matrix("ns", keys["ns"][:3], dim=16)[1] == [0, 1, 2]


class Crash(BaseException):
    """The process dies here: nothing after this step runs (a BaseException, so that no
    handler in the code under test treats it as a fault)."""


@pytest.mark.parametrize("step", ["after the live rows are flushed", "after the index commits"])
def test_a_crash_between_the_steps_of_a_compaction_loses_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, step: str
) -> None:
    keys, now = _fill(tmp_path, written_again=224)
    (first,) = [name for name, size in _segments(tmp_path).items() if size == 320 * ROW]
    with monkeypatch.context() as patch:
        if step == "after the live rows are flushed":
            flush = segments.Writer.sync

            def crash(writer: segments.Writer) -> None:
                flush(writer)
                raise Crash

            patch.setattr(segments.Writer, "sync", crash)
        else:

            def crash(conn: sqlite3.Connection, path: Path) -> None:  # type: ignore[misc]
                raise Crash

            patch.setattr(compact, "_drop", crash)
        with pytest.raises(Crash):
            EmbeddingCache(tmp_path).compact()
    assert first in _segments(tmp_path)  # not deleted yet
    # after the flush, a new file that nothing points to; after the commit, the old file is one
    assert len(_segments(tmp_path)) == 3
    _reads_back(tmp_path, keys, now)
    EmbeddingCache(tmp_path).compact()  # the next compaction finishes the job
    assert first not in _segments(tmp_path) and len(_segments(tmp_path)) == 2
    assert sum(_segments(tmp_path).values()) == (256 + 64) * ROW
    _reads_back(tmp_path, keys, now)


def test_a_cache_written_before_issue_41_is_read_as_it_was(tmp_path: Path) -> None:
    """Schema 3 as that code wrote it: vectors in segment files, no layout mark, no index on
    the files. Opened, it gains both, moves nothing, and reads every vector back."""
    keys, now = _fill(tmp_path, written_again=32)
    conn = sqlite3.connect(tmp_path / FILENAME, isolation_level=None)
    conn.execute("DELETE FROM meta WHERE key = 'layout'")
    conn.execute("DROP INDEX batches_file")
    conn.close()
    before = _segments(tmp_path)
    _reads_back(tmp_path, keys, now)
    assert _segments(tmp_path) == before
    conn = sqlite3.connect(tmp_path / FILENAME)
    meta = dict(conn.execute("SELECT key, value FROM meta"))
    indexes = {n for (n,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'index'")}
    conn.close()
    assert meta == {"schema_version": "3", "layout": "segments"} and "batches_file" in indexes


def test_a_key_that_is_not_a_text_key_is_refused(tmp_path: Path) -> None:
    cache = EmbeddingCache(tmp_path)
    with pytest.raises(CacheError, match="text_key"):
        cache.put_many("ns", [b"short"], np.ones((1, 4), dtype=np.float32))
    with pytest.raises(CacheError, match="text_key"):
        cache.get_matrix("ns", [text_key("a"), b"short"])


def test_a_file_cut_short_is_not_compacted_and_reads_report_it(tmp_path: Path) -> None:
    """A file whose bytes are not all there is left as it is: the reads report its rows
    damaged (embedded again), and compacting it would make them look sound."""
    keys, now = _fill(tmp_path, written_again=224)
    (first,) = [name for name, size in _segments(tmp_path).items() if size == 320 * ROW]
    os.truncate(tmp_path / first, 319 * ROW)  # the last row of "other" cut off
    assert EmbeddingCache(tmp_path).compact() == 0 and first in _segments(tmp_path)
    with pytest.warns(EmbedBenchWarning, match=r"32 damaged vector.*byte length"):
        _, missing = EmbeddingCache(tmp_path).get_matrix("other", keys["other"], dim=16)
    assert missing == list(range(32, 64))  # the last batch of "other", which lost its row

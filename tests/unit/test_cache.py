"""The embedding cache: round trips, namespaces, no raw text, corruption, several processes."""

from __future__ import annotations

import multiprocessing as mp
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from pytest_embedbench import CacheError, EmbedBenchWarning, EmbeddingCache
from pytest_embedbench.cache.store import FILENAME, default_cache_dir, text_key

from ..cacherows import set_vectors


def test_round_trip_and_namespaces(tmp_path: Path) -> None:
    cache = EmbeddingCache(tmp_path)
    keys = [text_key("alpha"), text_key("beta")]
    vectors = np.arange(8, dtype=np.float32).reshape(2, 4)
    cache.put_many("m1", keys, vectors)
    found, missing = cache.get_many("m1", keys + [text_key("gamma")])
    assert missing == [2]
    np.testing.assert_array_equal(found[keys[1]], vectors[1])
    _, missing_other = cache.get_many("m2", keys)
    assert missing_other == [0, 1]
    assert cache.count("m1") == 2 and cache.count() == 2
    cache.clear("m1")
    assert cache.count() == 0


def test_stores_no_raw_text(tmp_path: Path) -> None:
    cache = EmbeddingCache(tmp_path)
    secret = "the launch code is swordfish-4711"
    cache.put_many("m", [text_key(secret)], np.ones((1, 3), dtype=np.float32))
    cache.close()
    blob = b"".join(p.read_bytes() for p in tmp_path.iterdir() if p.is_file())
    assert b"swordfish" not in blob
    assert text_key(secret) in blob


def test_open_variants(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EMBEDBENCH_CACHE_DIR", str(tmp_path / "env"))
    assert default_cache_dir() == tmp_path / "env"
    assert EmbeddingCache.open(False) is None
    assert EmbeddingCache.open(True).folder == tmp_path / "env"  # type: ignore[union-attr]
    assert EmbeddingCache.open(tmp_path / "x").folder == tmp_path / "x"  # type: ignore[union-attr]
    with pytest.raises(CacheError, match="cache=3"):
        EmbeddingCache.open(3)  # type: ignore[arg-type]


def test_corrupt_file_is_rebuilt_with_a_warning(tmp_path: Path) -> None:
    (tmp_path / FILENAME).write_bytes(b"this is not a database" * 100)
    with pytest.warns(EmbedBenchWarning, match="unreadable.*moved it to"):
        cache = EmbeddingCache(tmp_path)
    cache.put_many("m", [text_key("a")], np.ones((1, 2), dtype=np.float32))
    assert cache.count() == 1
    assert any(p.name.startswith(f"{FILENAME}.corrupt-") for p in tmp_path.iterdir())


def test_truncated_vector_counts_as_missing_with_a_warning(tmp_path: Path) -> None:
    cache = EmbeddingCache(tmp_path)
    key = text_key("a")
    cache.put_many("m", [key], np.ones((1, 4), dtype=np.float32))
    assert set_vectors(tmp_path / FILENAME, [("m", key, 4, b"\x00\x01")]) == 1
    with pytest.warns(EmbedBenchWarning, match=r"1 damaged vector.*byte length"):
        found, missing = cache.get_many("m", [key])
    assert found == {} and missing == [0]


def _writer(folder: str, worker: int, rounds: int) -> int:
    cache = EmbeddingCache(folder)
    for r in range(rounds):
        keys = [text_key(f"shared-{i}") for i in range(50)] + [text_key(f"w{worker}-{r}")]
        vectors = np.full((51, 8), float(worker), dtype=np.float32)
        cache.put_many("ns", keys, vectors)
        found, _ = cache.get_many("ns", keys)
        assert len(found) == 51
    return cache.count("ns")


def test_several_processes_share_one_cache(tmp_path: Path) -> None:
    ctx = mp.get_context("spawn")
    with ctx.Pool(4) as pool:
        counts = pool.starmap(_writer, [(str(tmp_path), w, 20) for w in range(4)])
    assert all(c >= 50 for c in counts)
    assert EmbeddingCache(tmp_path).count("ns") == 50 + 4 * 20


def test_a_malformed_file_found_by_a_read_is_moved_aside(tmp_path: Path) -> None:
    """Real corruption (pages overwritten, confirmed by quick_check) is still set aside."""
    cache = EmbeddingCache(tmp_path)
    keys = [text_key(f"k{i}") for i in range(400)]
    vectors = np.random.default_rng(0).standard_normal((400, 64)).astype(np.float32)
    cache.put_many("ns", keys, vectors / np.linalg.norm(vectors, axis=1, keepdims=True))
    cache.close()
    path = tmp_path / FILENAME
    size = path.stat().st_size
    with path.open("r+b") as fh:  # keep the header and the schema, wipe the vector pages
        for page in range(3, size // 4096):
            fh.seek(page * 4096)
            fh.write(b"\xff" * 4096)
    cache = EmbeddingCache(tmp_path)
    with pytest.warns(EmbedBenchWarning, match=r"unreadable \(database disk image is malformed"):
        found, missing = cache.get_many("ns", keys, dim=64, unit_norm=True)
    assert found == {} and len(missing) == 400
    assert any(p.name.startswith(f"{FILENAME}.corrupt-") for p in tmp_path.iterdir())
    cache.put_many("ns", keys[:1], np.ones((1, 64), dtype=np.float32) / 8.0)
    assert cache.count() == 1  # the fresh file works


def loaded() -> Any:
    """The hashing provider as a run holds it: loaded before its namespace is asked."""
    from pytest_embedbench.models.providers import create_provider

    provider = create_provider("hashing:h")
    provider.ensure_loaded()
    return provider


def test_embed_cached_reads_a_partly_cached_corpus_in_any_asked_order(tmp_path: Path) -> None:
    """The document path asks the cache for the index's order (descending id) while the cache
    holds the vectors in the order the model's length-sorted batches wrote them: every row is
    the vector of its text, the model is sent only the missing texts and in their own order
    (so its batches are what they would be without ``order``), and a warm run embeds none."""
    from pytest_embedbench.retrieval.dense import embed_cached

    texts = [f"document {i} on topic {i % 5} " + "word " * (i % 7) for i in range(40)]
    reference = loaded().embed(texts, kind="document")
    cache = EmbeddingCache(tmp_path)
    first = loaded()
    embed_cached(first, texts[::3], cache, kind="document")  # a third cached, length-sorted
    order = np.random.default_rng(7).permutation(len(texts))
    provider = loaded()
    vectors, embedded = embed_cached(provider, texts, cache, kind="document", order=order)
    missing = [i for i in range(len(texts)) if i % 3]
    assert embedded == len(missing)
    assert sorted(provider.seen) == sorted(texts[i] for i in missing)
    np.testing.assert_array_equal(vectors, reference[order])
    warm = loaded()
    again, embedded = embed_cached(warm, texts, cache, kind="document", order=order)
    assert embedded == 0 and warm.seen == []
    np.testing.assert_array_equal(again, reference[order])
    # without a cache, and without an order: the same rows
    plain, _ = embed_cached(loaded(), texts, None, kind="document", order=order)
    np.testing.assert_array_equal(plain, reference[order])
    np.testing.assert_array_equal(embed_cached(warm, texts, cache, kind="document")[0], reference)


def test_embed_cached_sends_the_model_the_same_batches_with_or_without_an_order(
    tmp_path: Path,
) -> None:
    """Texts of equal length: the provider's length sort keeps their given order, so asking
    for another result order must not reorder what the model is sent."""
    from pytest_embedbench.retrieval.dense import embed_cached

    texts = [f"text {i:03d}" for i in range(70)]  # all one length
    plain = loaded()
    embed_cached(plain, texts, EmbeddingCache(tmp_path / "a"), kind="document")
    ordered = loaded()
    order = np.arange(len(texts))[::-1].copy()
    embed_cached(ordered, texts, EmbeddingCache(tmp_path / "b"), kind="document", order=order)
    assert ordered.seen == plain.seen

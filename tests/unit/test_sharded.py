"""Exact search under a memory budget (issue 33): shards read back one at a time, a running
top k merged by the tie rule, rankings identical to the in-memory search."""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pytest

from pytest_embedbench import ConfigError, Evaluator, RetrievalDataset
from pytest_embedbench.config.optionspec import parse_bytes
from pytest_embedbench.retrieval.exact import ExactIndex, ShardedIndex, faiss_available, shard_rows

BACKENDS = ["numpy", *(["faiss"] if faiss_available() else [])]


def _tied_corpus(n: int, dim: int, seed: int) -> tuple[np.ndarray, list[str], np.ndarray]:
    """Vectors drawn from a few distinct ones (many exact ties, across any shard boundary),
    ids in shuffled order, and queries among them."""
    rng = np.random.default_rng(seed)
    distinct = rng.standard_normal((7, dim)).astype(np.float32)
    vectors = distinct[rng.integers(0, 7, n)]
    ids = [f"doc-{i:04d}" for i in rng.permutation(n)]
    queries = np.concatenate([distinct[:3], rng.standard_normal((5, dim)).astype(np.float32)])
    return vectors, ids, queries


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("rows", [1, 7, 64, 1000])
@pytest.mark.parametrize("k", [1, 10, 150])
def test_sharded_rankings_equal_the_in_memory_search(backend: str, rows: int, k: int) -> None:
    vectors, ids, queries = _tied_corpus(300, 16, seed=rows + k)
    whole = ExactIndex(vectors, ids, backend=backend)  # type: ignore[arg-type]
    loads: list[tuple[int, int]] = []

    def load(lo: int, hi: int) -> np.ndarray:
        loads.append((lo, hi))
        return vectors[lo:hi].copy()

    sharded = ShardedIndex(ids, 16, load, rows=rows, backend=backend)  # type: ignore[arg-type]
    expected_pos, expected_val = whole.search(queries, k)
    pos, val = sharded.search(queries, k)
    np.testing.assert_array_equal(pos, expected_pos)
    np.testing.assert_array_equal(val, expected_val)
    assert max(hi - lo for lo, hi in loads) <= rows  # never more than a shard at once
    assert sharded.nbytes == min(rows, 300) * 16 * 4
    np.testing.assert_array_equal(sharded.vectors_in_order(), whole.vectors_in_order())


def test_shard_rows_follow_the_budget() -> None:
    assert shard_rows(2**30, 384) == 2**30 // (5 * 4 * 384)
    assert shard_rows(10, 1536) == 1  # a tiny budget still makes progress


def _dataset(n_docs: int = 120) -> RetrievalDataset:
    rng = np.random.default_rng(5)
    words = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu".split()
    corpus = {f"d{i:03d}": " ".join(rng.choice(words, 3)) for i in range(n_docs)}
    ids = sorted(corpus)
    queries = {f"q{j}": corpus[ids[5 * j]] for j in range(20)}  # duplicate texts: exact ties
    qrels = {f"q{j}": {ids[5 * j]: 1} for j in range(20)}
    return RetrievalDataset.from_dicts(corpus, queries, qrels, name="budget")


@pytest.mark.parametrize("cache", ["folder", None], ids=["from-the-cache", "spill-file"])
def test_a_budgeted_evaluation_ranks_as_the_in_memory_one(
    tmp_path: Path, cache: str | None
) -> None:
    ds = _dataset()
    where = tmp_path / "cache" if cache else False
    plain = Evaluator(cache=where, latency_passes=0).evaluate("hashing:h", ds)
    budget = 64 * 4 * 5 * 10  # ten 64-d documents per shard: twelve shards
    budgeted = Evaluator(cache=where, latency_passes=0, memory_budget=budget).evaluate(
        "hashing:h", ds
    )
    assert budgeted.run == plain.run
    assert float(budgeted.ndcg10) == float(plain.ndcg10)
    if cache:  # the second run found every document in the cache
        assert (budgeted.cache.hits, budgeted.cache.misses) == (120, 0)


def test_a_bad_budget_is_named() -> None:
    with pytest.raises(ConfigError, match="memory_budget=0"):
        Evaluator(cache=False, memory_budget=0)
    assert parse_bytes("2GiB") == 2 * 1024**3
    assert parse_bytes("512MB") == 512 * 1000**2
    assert parse_bytes("4096") == 4096
    with pytest.raises(argparse.ArgumentTypeError, match="'lots' is not a size"):
        parse_bytes("lots")


def test_vectors_the_cache_lost_after_the_build_are_embedded_again(tmp_path: Path) -> None:
    from pytest_embedbench import EmbeddingCache
    from pytest_embedbench.models.providers import create_provider
    from pytest_embedbench.retrieval.dense import build_dense

    ds = _dataset()
    texts = [q.text for q in ds.queries]
    provider = create_provider("hashing:h")
    plain = build_dense(provider, ds.documents, cache=None)
    cache = EmbeddingCache(tmp_path)
    budgeted = build_dense(provider, ds.documents, cache=cache, memory_budget=64 * 4 * 5 * 10)
    cache.clear()  # another process cleared the cache between the build and the search
    assert budgeted.search_many(texts, 10) == plain.search_many(texts, 10)

"""Exact search: FAISS and NumPy give identical rankings, ties by document id descending."""

from __future__ import annotations

import numpy as np
import pytest

from pytest_embedbench import ConfigError, ExactIndex
from pytest_embedbench.index import topk_desc


def reference(vectors: np.ndarray, ids: list[str], query: np.ndarray, k: int) -> list[str]:
    scores = vectors @ query
    return [
        ids[i] for i in sorted(range(len(ids)), key=lambda i: (scores[i], ids[i]), reverse=True)[:k]
    ]


def tied_corpus(seed: int) -> tuple[np.ndarray, list[str], np.ndarray]:
    rng = np.random.default_rng(seed)
    # few distinct (exactly representable) vectors, so most scores tie
    base = rng.integers(-2, 3, size=(6, 8)).astype(np.float32)
    vectors = base[rng.integers(0, 6, size=300)]
    ids = [f"doc{int(i)}" for i in rng.permutation(300)]
    queries = rng.integers(-2, 3, size=(25, 8)).astype(np.float32)
    return vectors, ids, queries


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("k", [1, 7, 50, 300, 400])
def test_numpy_matches_reference_with_ties(seed: int, k: int) -> None:
    vectors, ids, queries = tied_corpus(seed)
    index = ExactIndex(vectors, ids, backend="numpy", max_block_bytes=4 * 300 * 7)
    positions, _ = index.search(queries, k)
    for row, query in zip(positions, queries, strict=True):
        assert index.ids_of(row) == reference(vectors, ids, query, k)


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("k", [1, 7, 50, 300, 400])
def test_faiss_and_numpy_rankings_identical(seed: int, k: int) -> None:
    pytest.importorskip("faiss")
    vectors, ids, queries = tied_corpus(seed)
    np_pos, np_scores = ExactIndex(vectors, ids, backend="numpy").search(queries, k)
    fa_pos, fa_scores = ExactIndex(vectors, ids, backend="faiss").search(queries, k)
    np.testing.assert_array_equal(np_pos, fa_pos)
    np.testing.assert_allclose(np_scores, fa_scores, rtol=1e-6)


def test_padding_and_errors() -> None:
    index = ExactIndex(np.eye(3, dtype=np.float32), ["a", "b", "c"], backend="numpy")
    positions, scores = index.search(np.array([1.0, 0.0, 0.0]), 5)
    assert positions[0].tolist() == [0, 2, 1, -1, -1]
    assert np.isneginf(scores[0, 3:]).all()
    assert index.ids_of(positions[0]) == ["a", "c", "b"]
    with pytest.raises(ConfigError, match="3-d vectors"):
        index.search(np.ones((1, 4)), 2)
    with pytest.raises(ConfigError, match="at least one"):
        index.search(np.ones((1, 3)), 0)
    with pytest.raises(ConfigError, match="backend 'annoy'"):
        ExactIndex(np.eye(3), ["a", "b", "c"], backend="annoy")  # type: ignore[arg-type]


def test_topk_keeps_lowest_columns_among_ties_at_the_cut() -> None:
    scores = np.array([[0.5, 0.9, 0.5, 0.5, 0.1]], dtype=np.float32)
    cols, vals = topk_desc(scores, 3)
    assert cols.tolist() == [[1, 0, 2]]
    assert vals.tolist() == [[pytest.approx(0.9), 0.5, 0.5]]


def test_backends_agree_on_near_ties_of_random_vectors() -> None:
    pytest.importorskip("faiss")
    rng = np.random.default_rng(0)
    vectors = rng.standard_normal((20_000, 64), dtype=np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    queries = rng.standard_normal((64, 64), dtype=np.float32)
    ids = [f"d{i:05d}" for i in range(len(vectors))]
    np_pos, np_scores = ExactIndex(vectors, ids, backend="numpy").search(queries, 100)
    fa_pos, fa_scores = ExactIndex(vectors, ids, backend="faiss").search(queries, 100)
    np.testing.assert_array_equal(np_pos, fa_pos)
    np.testing.assert_array_equal(np_scores, fa_scores)  # the same float64 rescoring
    exact = vectors.astype(np.float64) @ queries.astype(np.float64).T
    for r in range(len(queries)):  # the order is by the float64 score, ties by id descending
        order = sorted(range(len(ids)), key=lambda i: (exact[i, r], ids[i]), reverse=True)[:100]
        assert np_pos[r].tolist() == order

"""Exact search: FAISS and NumPy give identical rankings, ties by document id descending."""

from __future__ import annotations

import numpy as np
import pytest

from pytest_embedbench import ConfigError, ExactIndex
from pytest_embedbench.retrieval.exact import topk_desc


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


def reference64(vectors: np.ndarray, ids: list[str], query: np.ndarray, k: int) -> list[str]:
    """The exact order: float64 score descending, then document id descending."""
    scores = vectors.astype(np.float64) @ query.astype(np.float64)
    return [
        ids[i] for i in sorted(range(len(ids)), key=lambda i: (scores[i], ids[i]), reverse=True)[:k]
    ]


def backends() -> list[str]:
    try:
        import faiss  # noqa: F401
    except ImportError:
        return ["numpy"]
    return ["numpy", "faiss"]


@pytest.mark.parametrize(
    ("budget_floats", "n_queries"),
    # budgets give (query block, doc chunk) of (1, 40), (2, 150), (3, 173), (7, 300), (all, 300)
    [(40, 5), (300, 3), (300, 5), (520, 2), (520, 3), (520, 4), (520, 7), (2100, 13), (10**7, 9)],
)
@pytest.mark.parametrize("k", [1, 5, 30, 299, 300, 301])
def test_numpy_blocks_and_chunks_match_reference(
    budget_floats: int, n_queries: int, k: int
) -> None:
    # query counts straddle the block size; chunks both smaller and larger than k + margin
    rng = np.random.default_rng(budget_floats + n_queries)
    vectors, ids, _ = tied_corpus(budget_floats)
    vectors = vectors + rng.integers(0, 2, size=vectors.shape).astype(np.float32) * 0.25
    queries = rng.integers(-2, 3, size=(n_queries, 8)).astype(np.float32)
    index = ExactIndex(vectors, ids, backend="numpy", max_block_bytes=4 * budget_floats)
    batch, chunk = index._numpy_blocks(n_queries)
    assert batch * chunk <= max(budget_floats, 1) and chunk <= len(ids)
    positions, scores = index.search(queries, k)
    for row, srow, query in zip(positions, scores, queries, strict=True):
        expected = reference64(vectors, ids, query, k)
        assert index.ids_of(row) == expected
        assert (row[len(expected) :] == -1).all() and np.isneginf(srow[len(expected) :]).all()
    # the same bits whatever the blocking
    whole = ExactIndex(vectors, ids, backend="numpy").search(queries, k)
    np.testing.assert_array_equal(whole[0], positions)
    np.testing.assert_array_equal(whole[1], scores)


@pytest.mark.parametrize("backend", backends())
@pytest.mark.parametrize("k", [1, 10, 64, 250])
def test_ties_across_chunk_boundaries_and_past_the_margin(backend: str, k: int) -> None:
    # 240 identical vectors tie for the top: the tie spans every doc chunk and is far wider
    # than k plus the candidate margin, so the order is decided by id alone
    rng = np.random.default_rng(k)
    top = np.ones(16, dtype=np.float32)
    rest = rng.standard_normal((260, 16)).astype(np.float32) * 0.1
    vectors = np.concatenate([np.repeat(top[None, :], 240, axis=0), rest])
    order = rng.permutation(len(vectors))
    vectors = vectors[order]
    ids = [f"doc-{i:04d}" for i in rng.permutation(len(vectors))]
    queries = np.concatenate([top[None, :], rng.standard_normal((4, 16)).astype(np.float32)])
    index = ExactIndex(vectors, ids, backend=backend, max_block_bytes=4 * 2 * 37)  # type: ignore[arg-type]
    positions, _ = index.search(queries, k)
    for row, query in zip(positions, queries, strict=True):
        assert index.ids_of(row) == reference64(vectors, ids, query, k)


@pytest.mark.parametrize("backend", backends())
def test_float32_ties_broken_by_float64_scores(backend: str) -> None:
    # near-duplicates one float32 ulp apart in a coordinate: many float32 scores collide,
    # float64 scores differ; the order must be the float64 one
    rng = np.random.default_rng(3)
    base = rng.standard_normal(32).astype(np.float32)
    vectors = np.repeat(base[None, :], 400, axis=0)
    for i in range(400):
        j = rng.integers(0, 32, size=3)
        vectors[i, j] = np.nextafter(vectors[i, j], np.float32(rng.choice([-np.inf, np.inf])))
    ids = [f"n{i:03d}" for i in rng.permutation(400)]
    queries = (base[None, :] + 0.01 * rng.standard_normal((6, 32))).astype(np.float32)
    index = ExactIndex(vectors, ids, backend=backend, max_block_bytes=4 * 3 * 50)  # type: ignore[arg-type]
    positions, scores = index.search(queries, 20)
    for row, query in zip(positions, queries, strict=True):
        assert index.ids_of(row) == reference64(vectors, ids, query, 20)
    assert (np.diff(scores, axis=1) <= 0).all()


def test_scores_do_not_depend_on_the_query_batch() -> None:
    rng = np.random.default_rng(5)
    vectors = rng.standard_normal((3000, 48)).astype(np.float32)
    queries = rng.standard_normal((11, 48)).astype(np.float32)
    ids = [f"d{i:04d}" for i in range(3000)]
    runs = []
    for backend in backends():
        for budget in (4 * 48, 4 * 1000, 4 * 10**7):
            index = ExactIndex(vectors, ids, backend=backend, max_block_bytes=budget)  # type: ignore[arg-type]
            runs.append(index.search(queries, 25))
            one = index.search(queries[7], 25)
            np.testing.assert_array_equal(one[0][0], runs[-1][0][7])
            np.testing.assert_array_equal(one[1][0], runs[-1][1][7])
    for positions, scores in runs[1:]:
        np.testing.assert_array_equal(positions, runs[0][0])
        np.testing.assert_array_equal(scores, runs[0][1])


@pytest.mark.parametrize("backend", backends())
def test_empty_corpus_and_no_queries(backend: str) -> None:
    empty = ExactIndex(np.zeros((0, 3), dtype=np.float32), [], backend=backend)  # type: ignore[arg-type]
    positions, scores = empty.search(np.ones((2, 3)), 4)
    assert (positions == -1).all() and np.isneginf(scores).all()
    index = ExactIndex(np.eye(3, dtype=np.float32), ["a", "b", "c"], backend=backend)  # type: ignore[arg-type]
    positions, scores = index.search(np.zeros((0, 3)), 2)
    assert positions.shape == (0, 2) and scores.shape == (0, 2)


@pytest.mark.parametrize("backend", backends())
def test_vectors_given_in_storage_order_search_as_the_given_order(backend: str) -> None:
    """A caller that read the vectors straight into the index's order (descending id) gets
    the same positions and scores as one that hands them in the ids' order."""
    from pytest_embedbench.retrieval.exact import storage_order

    rng = np.random.default_rng(3)
    ids = [f"d{int(i)}" for i in rng.permutation(300)]
    vectors = np.round(rng.standard_normal((300, 8)), 1).astype(np.float32)  # many ties
    queries = np.round(rng.standard_normal((20, 8)), 1).astype(np.float32)
    given = ExactIndex(vectors, ids, backend=backend)
    order = storage_order(ids)
    assert [ids[i] for i in order] == sorted(ids, reverse=True)
    stored = ExactIndex(vectors[order], ids, backend=backend, stored_order=order)
    for a, b in zip(given.search(queries, 25), stored.search(queries, 25), strict=True):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(stored.vectors_in_order(), vectors)


def test_a_stored_order_that_is_not_the_storage_order_is_refused() -> None:
    """A wrong order would pair vectors with the wrong ids: refused, never used."""
    from pytest_embedbench.retrieval.exact import storage_order

    ids = ["b", "a", "c"]
    vectors = np.eye(3, dtype=np.float32)
    good = storage_order(ids)
    assert good.tolist() == [2, 0, 1]
    with pytest.raises(ConfigError, match="descending"):
        ExactIndex(vectors, ids, stored_order=np.array([0, 1, 2]))
    with pytest.raises(ConfigError, match="each position of ids once"):
        ExactIndex(vectors, ids, stored_order=np.array([2, 2, 1]))
    with pytest.raises(ConfigError, match="3 integer positions"):
        ExactIndex(vectors, ids, stored_order=np.array([2, 0]))
    index = ExactIndex(vectors[good], ids, stored_order=good)
    assert index.ids_of(index.search(vectors[:1], 1)[0][0]) == ["b"]

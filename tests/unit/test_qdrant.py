"""The qdrant engine (issue 45): qdrant-client's local mode as ``qdrant:exact`` (it has no
index: a brute-force scan, whatever HNSW settings it is given) and Qdrant's own HNSW in process
through qdrant-edge-py as ``qdrant:hnsw``, against exact search on a seeded set."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from pytest_embedbench.core.exceptions import ConfigError
from pytest_embedbench.retrieval.exact import ExactIndex
from pytest_embedbench.retrieval.indexes import IndexSpec, create_index, neighbour_recall
from tests.index_engines import require_engine


def _vectors(n: int = 1500, dim: int = 32) -> tuple[np.ndarray, np.ndarray, list[str]]:
    rng = np.random.default_rng(5)
    docs = rng.standard_normal((n, dim)).astype(np.float32)
    docs /= np.linalg.norm(docs, axis=1, keepdims=True)
    queries = rng.standard_normal((30, dim)).astype(np.float32)
    return docs, queries, [f"d{i:04d}" for i in range(n)]


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ("qdrant:hnsw(ef_construction=8)", "did you mean 'ef_construct'?"),
        ("qdrant:hsnw", "has no kind 'hsnw'; did you mean 'hnsw'?"),
        ("qdrant:exact(m=4)", "'m=4' is not a parameter of qdrant:exact"),
        # a quantisation the engine would ignore, or that is not the spec's, is refused: why
        ("qdrant:exact+int8", "cannot store int8: qdrant:exact is qdrant-client's local mode"),
        ("qdrant:exact+binary", "ignores a search's quantization parameters"),
        ("qdrant:hnsw(m=16)+binary", "keeps the float32 vectors beside its codes"),
        ("qdrant:hnsw+float16", "engine 'qdrant' cannot store float16: qdrant:hnsw's"),
    ],
)
def test_bad_specs_name_the_spec(raw: str, message: str) -> None:
    with pytest.raises(ConfigError, match="^here: ") as info:
        IndexSpec.parse(raw, "here")
    assert message in str(info.value)


@pytest.mark.slow  # qdrant-client's import alone takes seconds (pydantic models, grpc)
def test_local_mode_is_exact_search() -> None:
    require_engine("qdrant_client", "qdrant")
    docs, queries, ids = _vectors(n=300)
    want, want_scores = ExactIndex(docs, ids).search(queries, 10)
    index = create_index(IndexSpec.parse("qdrant:exact", "here"))
    index.build(docs, ids)
    found, scores = index.search(queries, 10)
    assert (neighbour_recall(found, want, 10) == 1.0).all()
    np.testing.assert_allclose(scores, want_scores, atol=1e-5)
    assert index.deterministic and "brute-force scan, no index" in index.description
    assert index.nbytes is not None and index.nbytes > 0
    # what the local mode does with an HNSW search setting: it says it ignores it
    from qdrant_client import models

    with pytest.warns(UserWarning, match="Local mode performs exact"):
        index._store.query_points(  # type: ignore[attr-defined]
            "documents",
            query=queries[0].tolist(),
            limit=3,
            search_params=models.SearchParams(hnsw_ef=1),
        )


def test_qdrant_hnsw_is_a_real_graph() -> None:
    require_engine("qdrant_edge", "qdrant")
    docs, queries, ids = _vectors()
    want, _ = ExactIndex(docs, ids).search(queries, 10)
    recall = {}
    for raw in ("qdrant:hnsw(m=16,ef=64)", "qdrant:hnsw(m=4,ef_construct=8,ef=1)"):
        index = create_index(IndexSpec.parse(raw, "here"))
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # nothing warns on the way
            index.build(docs, ids)
        found, scores = index.search(queries, 10)
        recall[raw] = neighbour_recall(found, want, 10).mean()
        exact = queries.astype(np.float64) @ docs.T.astype(np.float64)
        for row, got, pos in zip(exact, scores, found, strict=True):
            np.testing.assert_allclose(got, row[pos], atol=1e-5)  # Dot: the inner product
        assert f"{len(docs)} of {len(docs)} vectors indexed" in index.description
        assert not index.deterministic and "takes no seed" in index.note
        # allocated bytes, not the preallocated files' apparent size (tens of MB)
        assert index.nbytes is not None and len(docs) * 32 * 4 < index.nbytes < 8_000_000
    # a graph of four neighbours searched with one candidate misses most of the exact top 10
    assert (
        recall["qdrant:hnsw(m=16,ef=64)"]
        >= 0.9
        > 0.5
        > recall["qdrant:hnsw(m=4,ef_construct=8,ef=1)"]
    ), recall

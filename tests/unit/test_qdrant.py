"""The qdrant engine (issue 45): qdrant-client's local mode as ``qdrant:exact`` (it has no
index: a brute-force scan, whatever HNSW settings it is given) and Qdrant's own HNSW in process
through qdrant-edge-py as ``qdrant:hnsw``, against exact search on a seeded set."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from pytest_embedbench.core.exceptions import ConfigError, EmbedBenchError
from pytest_embedbench.retrieval.exact import ExactIndex
from pytest_embedbench.retrieval.indexes import IndexSpec, create_index, neighbour_recall
from pytest_embedbench.retrieval.indexes.precision import open_index
from pytest_embedbench.retrieval.indexes.qdrant import read_stored
from tests.index_engines import random_vectors, require_engine


def _vectors(n: int = 1500, dim: int = 32) -> tuple[np.ndarray, np.ndarray, list[str]]:
    return random_vectors(n, dim, 30, seed=5)


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ("qdrant:hnsw(ef_construction=8)", "did you mean 'ef_construct'?"),
        ("qdrant:hsnw", "has no kind 'hsnw'; did you mean 'hnsw'?"),
        ("qdrant:exact(m=4)", "'m=4' is not a parameter of qdrant:exact"),
        # a quantisation the engine would ignore, or that is not the spec's, is refused: why
        ("qdrant:exact+int8", "cannot store int8: qdrant:exact is qdrant-client's local mode"),
        ("qdrant:exact+binary", "ignores a search's quantization parameters"),
        ("qdrant:exact+float16", "cannot store float16: qdrant:exact is qdrant-client's"),
        # Qdrant's int8 takes its range itself: a calibration sample is not a Qdrant setting
        (
            "qdrant:hnsw+int8(calibration=500)",
            "engine 'qdrant' takes no calibration for int8: Qdrant's scalar quantisation takes "
            "its int8 range itself",
        ),
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


def _unit() -> tuple[np.ndarray, np.ndarray, list[str], np.ndarray]:
    """Unit-length documents and queries, as embeddings are (Qdrant's int8 quantises the
    query with the corpus' range: a longer query would be clipped), the documents' ids, and
    the exact top 10 of each query, which the quantised indexes are measured against."""
    docs, queries, ids = _vectors()
    queries = queries / np.linalg.norm(queries, axis=1, keepdims=True)
    want, _ = ExactIndex(docs, ids).search(queries, 10)
    return docs, queries, ids, want


def _built(raw: str, docs: np.ndarray, ids: list[str]) -> Any:
    index = open_index(IndexSpec.parse(raw, "here"))
    index.build(docs, ids)
    return index


def test_qdrant_hnsw_float16_is_qdrants_datatype() -> None:
    require_engine("qdrant_edge", "qdrant")
    docs, queries, ids, want = _unit()
    index = _built("qdrant:hnsw+float16", docs, ids)
    found, scores = index.search(queries, 10)
    assert neighbour_recall(found, want, 10).mean() >= 0.9
    # Qdrant scores the float16 vectors with the query converted to float16 too: the scores
    # are those half-precision inner products, not float32's
    half = np.einsum(
        "ij,ikj->ik",
        queries.astype(np.float16).astype(np.float64),
        docs[found].astype(np.float16).astype(np.float64),
    )
    full = np.einsum("ij,ikj->ik", queries.astype(np.float64), docs[found].astype(np.float64))
    np.testing.assert_allclose(scores, half, atol=1e-6)
    assert np.abs(scores - full).max() > 1e-5
    stored = read_stored(index.inner._folder.name)
    assert stored["datatype"] == "float16" and stored["quantization"] == ""
    assert stored["vectors"] < len(docs) * 32 * 2 + 64  # half of float32's 4 bytes a value
    float32 = _built("qdrant:hnsw", docs, ids)
    assert index.nbytes < float32.nbytes
    assert "stored as Qdrant's float16 datatype (64 bytes a vector)" in index.description


def test_qdrant_hnsw_int8_is_qdrants_scalar_quantisation() -> None:
    require_engine("qdrant_edge", "qdrant")
    docs, queries, ids, want = _unit()
    full = queries.astype(np.float64) @ docs.T.astype(np.float64)
    codes = _built("qdrant:hnsw+int8", docs, ids)
    rescored = _built("qdrant:hnsw+int8(rescore=4)", docs, ids)
    found, scores = codes.search(queries, 10)
    found_r, scores_r = rescored.search(queries, 10)
    recall = neighbour_recall(found, want, 10).mean()
    assert 0.9 <= recall <= neighbour_recall(found_r, want, 10).mean()
    # without rescore the scores are Qdrant's int8 estimates, not the inner products; with
    # rescore=4 Qdrant scores its top 4 x k again with the float32 originals
    exact_of = np.take_along_axis(full, found, axis=1)
    assert np.abs(scores - exact_of).max() > 1e-3
    np.testing.assert_allclose(scores_r, np.take_along_axis(full, found_r, axis=1), atol=1e-5)
    for index in (codes, rescored):
        stored = read_stored(index.inner._folder.name)
        assert stored["quantization"] == "scalar int8" and stored["datatype"] == "float32"
        # the codes (a byte a value) beside the float32 originals, all in the folder's bytes
        assert len(docs) * 32 <= stored["codes"] < stored["vectors"] / 3
        assert index.nbytes > stored["vectors"] + stored["codes"]
        assert "Qdrant keeps the float32 originals beside the int8 codes" in index.note
    assert "scored by the codes alone (rescore=False)" in codes.description
    assert "the top 4 x k (oversampling=4) rescored by Qdrant" in rescored.description


def test_qdrant_hnsw_binary_scores_the_sign_bits() -> None:
    require_engine("qdrant_edge", "qdrant")
    docs, queries, ids, want = _unit()
    index = _built("qdrant:hnsw+binary", docs, ids)
    found, scores = index.search(queries, 10)
    # Qdrant's binary score of the sign bits: bits - 2 x Hamming, as exact+binary scores
    bits, query_bits = np.packbits(docs > 0, axis=1), np.packbits(queries > 0, axis=1)
    popcount = np.array([bin(i).count("1") for i in range(256)])
    hamming = popcount[np.bitwise_xor(bits[None, :, :], query_bits[:, None, :])].sum(axis=2)
    np.testing.assert_array_equal(scores, np.take_along_axis(32 - 2 * hamming, found, axis=1))
    assert (scores[:, 0] == (32 - 2 * hamming).max(axis=1)).all()  # the graph finds the best
    rescored = _built("qdrant:hnsw+binary(rescore=4)", docs, ids)
    found_r, scores_r = rescored.search(queries, 10)
    full = queries.astype(np.float64) @ docs.T.astype(np.float64)
    np.testing.assert_allclose(scores_r, np.take_along_axis(full, found_r, axis=1), atol=1e-5)
    recall, recall_r = (neighbour_recall(f, want, 10).mean() for f in (found, found_r))
    assert recall < recall_r < 1.0, (recall, recall_r)  # 32 bits lose neighbours
    stored = read_stored(index.inner._folder.name)
    assert stored["quantization"] == "binary" and stored["codes"] < stored["vectors"] / 4
    assert "Qdrant's binary quantisation" in index.description


@pytest.mark.parametrize("precision", ["int8", "binary"])
def test_qdrant_codes_of_an_unindexed_shard_are_refused(precision: str) -> None:
    """Qdrant quantises the segments its optimizer indexes: five 8-d vectors stay under its
    least indexing threshold, a plain float32 scan, which must not be reported as codes."""
    require_engine("qdrant_edge", "qdrant")
    docs = np.random.default_rng(1).standard_normal((5, 8)).astype(np.float32)
    index = open_index(IndexSpec.parse(f"qdrant:hnsw+{precision}", "here"))
    with pytest.raises(EmbedBenchError, match="Qdrant indexed 0 of 5 vectors") as info:
        index.build(docs, [str(i) for i in range(5)])
    assert f"the figures would not be {precision}'s" in str(info.value)
    assert not Path(index.inner._folder.name).exists()  # the shard closed, its folder removed

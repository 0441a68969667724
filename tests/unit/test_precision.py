"""Vector width and precision as index specs (issue 45): the spec's syntax and its errors, int8
and binary against a direct sentence-transformers ``quantize_embeddings`` computation on the
same vectors (rankings, neighbour recall, bytes per document), rescoring, float16, Matryoshka
truncation against sentence-transformers' ``truncate_dim``, and the same figures through the
dense retriever."""

from __future__ import annotations

import numpy as np
import pytest

from pytest_embedbench.core.exceptions import ConfigError
from pytest_embedbench.retrieval.indexes import IndexSpec, neighbour_recall, parse_indexes
from pytest_embedbench.retrieval.indexes.precision import open_index, truncated
from pytest_embedbench.retrieval.indexes.spec import named_indexes

st = pytest.importorskip("sentence_transformers")


def _unit(rows: np.ndarray) -> np.ndarray:
    return (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32)


def _corpus(n: int = 400, dim: int = 48, queries: int = 30, seed: int = 3):
    """Unit vectors with a shared direction (as a model's are) and queries near documents."""
    rng = np.random.default_rng(seed)
    docs = _unit(rng.normal(size=(n, dim)) + 0.8 * rng.normal(size=dim))
    q = _unit(docs[rng.choice(n, queries, replace=False)] + 0.6 * rng.normal(size=(queries, dim)))
    return docs, q, [f"d{i:04d}" for i in range(n)]


def _ranked(scores: np.ndarray, ids: list[str], k: int) -> np.ndarray:
    """Top k positions per row: score descending, then document id descending (the tie rule)."""
    rank = np.argsort(np.argsort(ids)[::-1])  # lower rank: higher id
    out = np.empty((len(scores), k), dtype=np.int64)
    for i, row in enumerate(scores):
        out[i] = np.lexsort((rank, -row))[:k]
    return out


def _search(raw: str, docs: np.ndarray, q: np.ndarray, ids: list[str], k: int = 10, seed: int = 0):
    index = open_index(IndexSpec.parse(raw, "t"), seed=seed)
    index.build(docs, ids)
    return index, *index.search(q, k)


def test_specs_compose_width_and_precision_canonically() -> None:
    spec = IndexSpec.parse("faiss:hnsw(M=16) + dim=32 + binary( rescore=4 )", "t")
    assert spec.spec == "faiss:hnsw(M=16)+dim=32+binary(rescore=4)"
    assert spec.sizing.dim == 32 and spec.sizing.precision == "binary"
    assert IndexSpec.parse(spec.spec, "t") == spec
    assert not IndexSpec.parse("exact+int8", "t").is_exact
    assert IndexSpec.parse("exact+int8(rescore=2,calibration=50)", "t").spec == (
        "exact+int8(calibration=50,rescore=2)"
    )
    # a width is no index name: 'exact+dim=32' is one spec, 'prod=exact+dim=32' a named one
    assert named_indexes(["exact+dim=32", "prod=exact+dim=16"], "t") == (
        (None, IndexSpec.parse("exact+dim=32", "t")),
        ("prod", IndexSpec.parse("exact+dim=16", "t")),
    )


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ("exact+int4", "'+int4' is not a width or precision; did you mean 'int8'?"),
        ("exact+int8+binary", "one precision at most, got 'int8' and 'binary'"),
        ("exact+dim=8+dim=16", "dim is given twice"),
        ("exact+dim=0", "dim='0' must be a whole number >= 1"),
        ("exact+binary(rescor=4)", "'rescor=4' is not a parameter of binary; did you mean"),
        ("exact+float16(rescore=2)", "is not a parameter of float16"),
        ("exact+int8(calibration=x)", "calibration='x' must be a whole number >= 1"),
        (
            "lancedb:ivf_flat+int8",
            "engine 'lancedb' stores float32 vectors only; int8 is measured with the engines "
            "['exact', 'faiss', 'qdrant']",
        ),
    ],
)
def test_bad_width_and_precision_name_the_spec_and_the_fix(raw: str, message: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_indexes([raw], "where")
    assert str(info.value).startswith(f"where[0]: index {raw!r}")
    assert message in str(info.value)


def test_build_errors_name_the_spec() -> None:
    docs, q, ids = _corpus(n=60, dim=16)
    with pytest.raises(ConfigError, match=r"'exact\+dim=32': dim=32 is above the model's 16"):
        _search("exact+dim=32", docs, q, ids)
    with pytest.raises(ConfigError, match=r"calibration=61 documents for a corpus of 60"):
        _search("exact+int8(calibration=61)", docs, q, ids)
    pytest.importorskip("faiss")
    with pytest.raises(ConfigError, match="ivfpq compresses the vectors itself"):
        _search("faiss:ivfpq(nlist=2,m=4,nbits=4)+int8", docs, q, ids)


def test_int8_equals_a_direct_quantize_embeddings_computation() -> None:
    docs, q, ids = _corpus()
    n, dim = docs.shape
    truth = _ranked((q.astype(np.float64) @ docs.T.astype(np.float64)), ids, 10)
    # calibration on the whole corpus: the sample is every document, no draw to reproduce
    index, found, scores = _search(f"exact+int8(calibration={n})", docs, q, ids)
    d8 = st.quantize_embeddings(docs, "int8", calibration_embeddings=docs)
    q8 = st.quantize_embeddings(q, "int8", calibration_embeddings=docs)
    direct = q8.astype(np.int64) @ d8.astype(np.int64).T
    expected = _ranked(direct.astype(np.float64), ids, 10)
    np.testing.assert_array_equal(found, expected)
    np.testing.assert_array_equal(scores, np.take_along_axis(direct, expected, axis=1))
    recall = neighbour_recall(found, truth, 10)
    np.testing.assert_array_equal(recall, neighbour_recall(expected, truth, 10))
    assert 0.5 < recall.mean() < 1.0  # int8 loses some neighbours, not most
    assert index.nbytes == n * dim and index.bytes_per_document == dim  # 1 byte a dimension


def test_int8_calibrates_on_a_seeded_sample() -> None:
    docs, q, ids = _corpus()
    first = _search("exact+int8(calibration=50)", docs, q, ids, seed=1)[0].codec
    again = _search("exact+int8(calibration=50)", docs, q, ids, seed=1)[0].codec
    other = _search("exact+int8(calibration=50)", docs, q, ids, seed=2)[0].codec
    np.testing.assert_array_equal(first.ranges, again.ranges)
    assert not np.array_equal(first.ranges, other.ranges)
    assert first.calibrated_on == 50
    # the default: 1,000 documents, or the corpus when smaller
    assert _search("exact+int8", docs, q, ids)[0].codec.calibrated_on == len(docs)


def test_binary_equals_a_direct_quantize_embeddings_computation() -> None:
    docs, q, ids = _corpus()
    n, dim = docs.shape
    index, found, scores = _search("exact+binary", docs, q, ids)
    bits_d = np.unpackbits(st.quantize_embeddings(docs, "ubinary"), axis=1)[:, :dim]
    bits_q = np.unpackbits(st.quantize_embeddings(q, "ubinary"), axis=1)[:, :dim]
    hamming = (bits_q[:, None, :] != bits_d[None, :, :]).sum(axis=2)
    direct = (dim - 2 * hamming).astype(np.float64)  # the +-1 dot product
    expected = _ranked(direct, ids, 10)
    np.testing.assert_array_equal(found, expected)
    np.testing.assert_array_equal(scores, np.take_along_axis(direct, expected, axis=1))
    float32 = _search("exact", docs, q, ids)[0]
    assert index.nbytes * 32 == float32.nbytes  # 1/32 of float32's bytes
    assert index.bytes_per_document == dim / 8


def test_binary_rescoring_scores_the_top_r_k_with_the_float_query() -> None:
    docs, q, ids = _corpus()
    dim = docs.shape[1]
    truth = _ranked(q.astype(np.float64) @ docs.T.astype(np.float64), ids, 10)
    plain = _search("exact+binary", docs, q, ids)[1]
    _, found, scores = _search("exact+binary(rescore=4)", docs, q, ids)
    # direct: the top 40 by Hamming, then the float query against their bits (0/1), as
    # sentence-transformers' semantic_search_faiss rescores
    candidates = _search("exact+binary", docs, q, ids, k=40)[1]
    bits = np.unpackbits(st.quantize_embeddings(docs, "ubinary"), axis=1)[:, :dim]
    for i in range(len(q)):
        again = bits[candidates[i]].astype(np.float64) @ q[i].astype(np.float64)
        top = np.argsort(-again, kind="stable")[:10]
        np.testing.assert_allclose(scores[i], again[top])
        assert set(found[i]) <= set(candidates[i])
    assert neighbour_recall(found, truth, 10).mean() > neighbour_recall(plain, truth, 10).mean()


def test_float16_halves_the_bytes_and_keeps_the_neighbours() -> None:
    docs, q, ids = _corpus()
    truth = _search("exact", docs, q, ids)
    index, found, _ = _search("exact+float16", docs, q, ids)
    assert index.nbytes * 2 == truth[0].nbytes
    assert neighbour_recall(found, truth[1], 10).mean() >= 0.99


def test_faiss_stores_the_same_codes_as_exact() -> None:
    pytest.importorskip("faiss")
    docs, q, ids = _corpus()
    for precision in ("float16", f"int8(calibration={len(docs)})", "binary"):
        exact = _search(f"exact+{precision}", docs, q, ids)
        flat = _search(f"faiss:flat+{precision}", docs, q, ids)
        # the same scores (FAISS may order equal scores its own way)
        np.testing.assert_allclose(flat[2], exact[2], rtol=1e-5)
    hnsw = _search("faiss:hnsw(M=16,efSearch=64)+binary(rescore=4)", docs, q, ids)[0]
    assert "BHNSW16" in hnsw.description and "rescored" in hnsw.description


def test_truncation_renormalises_what_truncate_dim_gives(minilm_texts: list[str]) -> None:
    from pytest_embedbench.models.providers import ModelSpec, create_provider

    provider = create_provider(ModelSpec("hf:sentence-transformers/all-MiniLM-L6-v2", device="cpu"))
    provider.ensure_loaded()
    full = provider.embed(minilm_texts, kind="document")
    model = st.SentenceTransformer(provider.info["weights"], device="cpu", truncate_dim=128)
    cut = model.encode(minilm_texts, convert_to_numpy=True)
    assert cut.shape == (len(minilm_texts), 128)
    ours = truncated(full, 128, "exact+dim=128")
    np.testing.assert_allclose(np.linalg.norm(ours, axis=1), 1.0, rtol=1e-6)
    np.testing.assert_allclose(ours, _unit(cut), atol=1e-5)


@pytest.fixture
def minilm_texts() -> list[str]:
    return ["How do I reset my password?", "Refunds take five days", "Export a CSV report"]


def test_the_dense_retriever_measures_a_quantised_index() -> None:
    from pytest_embedbench.retrieval.dense import DenseRetriever
    from pytest_embedbench.retrieval.exact import ExactIndex
    from pytest_embedbench.retrieval.indexes import measure_index

    docs, q, ids = _corpus()

    class Fixed:  # the corpus's vectors as a provider gives them (no model in this test)
        options: dict = {}
        info: dict = {}

    exact = DenseRetriever(Fixed(), ExactIndex(docs, ids))  # type: ignore[arg-type]
    binary = exact.with_index(IndexSpec.parse("exact+binary", "t"), seed=0)
    run = measure_index(binary, [f"q{i}" for i in range(len(q))], (1, 10), vectors=q)
    assert run.bytes_per_document == docs.shape[1] / 8
    assert run.documents == len(ids)
    truth = exact.index.search(q, 10)[0]
    np.testing.assert_array_equal(
        run.neighbours[10], neighbour_recall(binary.index.search(q, 10)[0], truth, 10)
    )
    assert run.neighbours[10].mean() < 1.0


@pytest.mark.parametrize("raw", ["exact+int8", "exact+binary(rescore=2)", "exact+float16"])
def test_an_empty_corpus_answers_nothing_at_any_precision(raw: str) -> None:
    index = open_index(IndexSpec.parse(raw, "t"))
    index.build(np.zeros((0, 8), dtype=np.float32), [])
    positions, scores = index.search(np.ones((2, 8), dtype=np.float32), 3)
    assert positions.shape == (2, 3) and (positions == -1).all() and np.isneginf(scores).all()
    assert index.bytes_per_document is None

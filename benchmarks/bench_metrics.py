"""score_run against pytrec_eval, side by side (issue 11, row 3).

10,000 queries x 100 retrieved documents, graded qrels, nDCG@10 + Recall@100 + MRR: pytrec_eval
(``RelevanceEvaluator(qrels, {"ndcg_cut.10", "recall.100", "recip_rank"}).evaluate(run)``, the
anchor) and ``score_run(qrels, run, ["ndcg@10", "recall@100", "mrr@100"])`` on the same dicts,
alternating anchor and ours; prints the median of ``--rounds`` (at least 3) and the ratio
ours / anchor, and checks that every per-query value is equal.

``--ranx`` measures ranx's kernel instead (issue 33), on one thread, against
``score_arrays``, the array path of the metrics, at the issue's size (1M queries x 100): the run
is made as arrays (document numbers and scores, ``(queries, depth)``, in trec_eval's order) and
converted beforehand, outside the timing, to ranx's input (numba typed lists of ``[doc, score]``
and ``[doc, grade]`` rows, sorted as ranx sorts them) and ours (the arrays as they are). ranx
0.3 compiles its metrics with numba on first use, so both sides are warmed first on two queries;
ranx runs with ``threads=1`` and ``numba.set_num_threads(1)``. Two figures of ours:
``score_arrays(qrels, docs)`` on rows already in rank order (what a search returns) and
``score_arrays(qrels, docs, scores=scores)``, which ranks every relevant document again from
the scores with trec_eval's tie rule. The values of the first ``--check`` queries are compared
with pytrec_eval's (bit for bit) and all with ranx's.

Usage::

    python benchmarks/bench_metrics.py [--queries 10000] [--depth 100] [--rounds 7] [--ties]
    python benchmarks/bench_metrics.py --ranx --queries 1000000 --rounds 3
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytrec_eval

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # measure this checkout's package
from pytest_embedbench import score_run  # noqa: E402
from pytest_embedbench.evaluation.metrics import QrelArrays, score_arrays  # noqa: E402

PAIRS = {"ndcg@10": "ndcg_cut_10", "recall@100": "recall_100", "mrr@100": "recip_rank"}


def make_run(
    n_queries: int, depth: int, n_docs: int, ties: bool, seed: int = 0
) -> tuple[dict[str, dict[str, int]], dict[str, dict[str, float]]]:
    """Graded qrels (1-6 judged documents per query, grades 0-3) and a run of ``depth``
    documents per query; random float scores, or few distinct values with ``ties``."""
    rng = np.random.default_rng(seed)
    doc_ids = [f"doc{i:06d}" for i in range(n_docs)]
    qrels: dict[str, dict[str, int]] = {}
    run: dict[str, dict[str, float]] = {}
    for q in range(n_queries):
        qid = f"q{q:05d}"
        picked = rng.choice(n_docs, size=depth, replace=False)
        scores = rng.integers(0, 8, size=depth) / 8 if ties else rng.random(depth)
        run[qid] = {doc_ids[j]: float(s) for j, s in zip(picked, scores, strict=True)}
        n_judged = int(rng.integers(1, 7))
        # about half the judged documents are among the retrieved ones
        judged = np.concatenate([picked[:n_judged], rng.choice(n_docs, size=n_judged)])
        judged = rng.choice(judged, size=n_judged, replace=False)
        qrels[qid] = {doc_ids[j]: int(rng.integers(0, 4)) for j in judged}
    return qrels, run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=10_000)
    parser.add_argument("--depth", type=int, default=100)
    parser.add_argument("--docs", type=int, default=500_000)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--ties", action="store_true", help="few distinct scores: many ties")
    parser.add_argument("--ranx", action="store_true", help="side by side with ranx, one thread")
    parser.add_argument(
        "--check", type=int, default=20_000, help="--ranx: queries checked against pytrec_eval"
    )
    args = parser.parse_args()
    if args.rounds < 3:
        parser.error("--rounds: take the median of at least 3")
    if args.ranx:
        against_ranx(args)
        return
    qrels, run = make_run(args.queries, args.depth, args.docs, args.ties)
    measures = {"ndcg_cut.10", "recall.100", "recip_rank"}
    times: dict[str, list[float]] = {"anchor": [], "ours": []}
    out = {}
    for _ in range(args.rounds):
        t0 = time.perf_counter()
        out["anchor"] = pytrec_eval.RelevanceEvaluator(qrels, measures).evaluate(run)
        times["anchor"].append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        out["ours"] = score_run(qrels, run, list(PAIRS))
        times["ours"].append(time.perf_counter() - t0)
    anchor, ours = statistics.median(times["anchor"]), statistics.median(times["ours"])
    print(
        f"{args.queries} queries x {args.depth} documents{' (tied scores)' if args.ties else ''}"
        f", nDCG@10 + Recall@100 + MRR, median of {args.rounds} alternating rounds"
    )
    print(f"pytrec_eval {1000 * anchor:.0f} ms, score_run {1000 * ours:.0f} ms")
    print(f"ratio {ours / anchor:.3f}x (target <= 1.0x)")
    worst = max(
        abs(out["ours"][ours_name][qid] - out["anchor"][qid][trec])
        for ours_name, trec in PAIRS.items()
        for qid in qrels
    )
    print(f"largest per-query difference from pytrec_eval: {worst:.3g}")


def make_arrays(
    n_queries: int, depth: int, n_docs: int, ties: bool, seed: int = 0
) -> tuple[np.ndarray, np.ndarray, QrelArrays]:
    """The same kind of run as :func:`make_run`, made as arrays without a dict (1M queries x
    100 in seconds): ``depth`` distinct document numbers per query in trec_eval's order (score
    descending, then number descending; the numbers follow the ids ``doc%06d``), their scores,
    and 1-6 judgements per query (grades 0-3, about half on retrieved documents)."""
    rng = np.random.default_rng(seed)
    # distinct numbers per row: a random start plus positive gaps that sum to less than n_docs
    gaps = rng.integers(1, max(2, n_docs // depth), size=(n_queries, depth))
    docs = (rng.integers(0, n_docs, size=(n_queries, 1)) + np.cumsum(gaps, axis=1)) % n_docs
    scores = rng.integers(0, 8, size=docs.shape) / 8 if ties else rng.random(docs.shape)
    order = np.lexsort((-docs, -scores), axis=1)
    docs = np.take_along_axis(docs, order, axis=1)
    scores = np.take_along_axis(scores, order, axis=1)
    n_judged = rng.integers(1, 7, size=n_queries)
    query = np.repeat(np.arange(n_queries), n_judged)
    retrieved = docs[query, rng.integers(0, depth, size=len(query))]
    doc = np.where(rng.random(len(query)) < 0.5, retrieved, rng.integers(0, n_docs, len(query)))
    _, first = np.unique(query * n_docs + doc, return_index=True)  # one grade per document
    first.sort()
    grade = rng.integers(0, 4, size=len(query))
    return docs, scores, QrelArrays(n_queries, query[first], doc[first], grade[first])


def as_dicts(
    docs: np.ndarray, scores: np.ndarray, qrels: QrelArrays, rows: int
) -> tuple[dict[str, dict[str, int]], dict[str, dict[str, float]]]:
    """The first ``rows`` queries of an array run as pytrec_eval dicts (ids ``doc%06d``)."""
    name = [f"q{q:07d}" for q in range(rows)]
    qrels_d: dict[str, dict[str, int]] = {qid: {} for qid in name}
    for q, d, g in zip(qrels.query.tolist(), qrels.doc.tolist(), qrels.grade.tolist(), strict=True):
        if q < rows:
            qrels_d[name[q]][f"doc{d:06d}"] = g
    run_d = {
        name[q]: {
            f"doc{d:06d}": s for d, s in zip(docs[q].tolist(), scores[q].tolist(), strict=True)
        }
        for q in range(rows)
    }
    return qrels_d, run_d


def ranx_lists(docs: np.ndarray, scores: np.ndarray, qrels: QrelArrays) -> tuple[Any, Any]:
    """ranx's input, made from the arrays once (outside the timing): numba typed lists of
    ``(n, 2)`` float64 arrays, one per query, [document, score] rows best first and
    [document, grade] rows largest grade first (the order ranx's ``to_typed_list`` sorts to)."""
    import numba
    from numba.typed import List

    @numba.njit(cache=False)
    def typed(first: np.ndarray, second: np.ndarray, offsets: np.ndarray) -> Any:
        out = List()
        for i in range(len(offsets) - 1):
            a, b = offsets[i], offsets[i + 1]
            block = np.empty((b - a, 2), dtype=np.float64)
            block[:, 0] = first[a:b]
            block[:, 1] = second[a:b]
            out.append(block)
        return out

    n, depth = docs.shape
    run_offsets = np.arange(0, n * depth + 1, depth)
    run = typed(docs.ravel().astype(np.float64), scores.ravel(), run_offsets)
    order = np.lexsort((-qrels.grade, qrels.query))
    counts = np.bincount(qrels.query, minlength=n)
    offsets = np.concatenate([[0], np.cumsum(counts)])
    judged = typed(
        qrels.doc[order].astype(np.float64), qrels.grade[order].astype(np.float64), offsets
    )
    return judged, run


def against_ranx(args: argparse.Namespace) -> None:
    """score_arrays beside ranx's kernel on one thread, both on inputs prepared beforehand and
    warmed; see the module docstring."""
    import numba
    import ranx

    names = list(PAIRS)
    numba.set_num_threads(1)
    t0 = time.perf_counter()
    docs, scores, qrels = make_arrays(args.queries, args.depth, args.docs, args.ties)
    typed_q, typed_r = ranx_lists(docs, scores, qrels)
    print(f"inputs made in {time.perf_counter() - t0:.1f} s (not timed)")
    tiny = slice(0, 2)
    tiny_q = QrelArrays(2, *(a[qrels.query < 2] for a in (qrels.query, qrels.doc, qrels.grade)))
    tiny_lists = ranx_lists(docs[tiny], scores[tiny], tiny_q)
    ranx.evaluate(*tiny_lists, names, return_mean=False, threads=1)  # compile every kernel
    score_arrays(tiny_q, docs[tiny], names)
    times: dict[str, list[float]] = {"ranx kernel": [], "ours ranked": [], "ours scores": []}
    out: dict[str, Any] = {}
    for _ in range(args.rounds):
        t0 = time.perf_counter()
        out["ranx"] = ranx.evaluate(typed_q, typed_r, names, return_mean=False, threads=1)
        times["ranx kernel"].append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        out["ranked"] = score_arrays(qrels, docs, names)
        times["ours ranked"].append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        out["scores"] = score_arrays(qrels, docs, names, scores=scores)
        times["ours scores"].append(time.perf_counter() - t0)
    med = {key: statistics.median(values) for key, values in times.items()}
    print(
        f"{args.queries} queries x {args.depth} documents{' (tied scores)' if args.ties else ''}"
        f", nDCG@10 + Recall@100 + MRR@100, median of {args.rounds} alternating rounds, "
        "one thread, inputs prepared beforehand"
    )
    for key, value in med.items():
        print(f"{key:12} {value:8.3f} s  {args.queries / value:10,.0f} queries/s")
    for key in ("ours ranked", "ours scores"):
        print(f"{key} / ranx's kernel: {med[key] / med['ranx kernel']:.3f}x (target <= 1.0x)")
    for name in names:
        same = np.array_equal(out["ranked"][name], out["scores"][name])
        diff = np.abs(out["ranked"][name] - np.asarray(out["ranx"][name])).max()
        print(f"{name}: ranked == scores {same}; largest difference from ranx {diff:.3g}")
    rows = min(args.queries, args.check)
    qrels_d, run_d = as_dicts(docs, scores, qrels, rows)
    raw = pytrec_eval.RelevanceEvaluator(qrels_d, {"ndcg_cut.10", "recall.100", "recip_rank"})
    expected = raw.evaluate(run_d)
    for name, trec in PAIRS.items():
        theirs = [expected[qid][trec] if qid in expected else 0.0 for qid in qrels_d]
        equal = out["ranked"][name][:rows].tolist() == theirs
        print(f"{name}: equal to pytrec_eval bit for bit on the first {rows:,} queries: {equal}")


if __name__ == "__main__":
    main()

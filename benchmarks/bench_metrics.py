"""score_run against pytrec_eval, side by side (issue 11, row 3).

10,000 queries x 100 retrieved documents, graded qrels, nDCG@10 + Recall@100 + MRR: pytrec_eval
(``RelevanceEvaluator(qrels, {"ndcg_cut.10", "recall.100", "recip_rank"}).evaluate(run)``, the
anchor) and ``score_run(qrels, run, ["ndcg@10", "recall@100", "mrr@100"])`` on the same dicts,
alternating anchor and ours; prints the median of ``--rounds`` (at least 3) and the ratio
ours / anchor, and checks that every per-query value is equal.

Usage::

    python benchmarks/bench_metrics.py [--queries 10000] [--depth 100] [--rounds 7] [--ties]
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
import pytrec_eval

from pytest_embedbench import score_run

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
    args = parser.parse_args()
    if args.rounds < 3:
        parser.error("--rounds: take the median of at least 3")
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


if __name__ == "__main__":
    main()

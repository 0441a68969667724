"""score_run against pytrec_eval, side by side (issue 11, row 3).

10,000 queries x 100 retrieved documents, graded qrels, nDCG@10 + Recall@100 + MRR: pytrec_eval
(``RelevanceEvaluator(qrels, {"ndcg_cut.10", "recall.100", "recip_rank"}).evaluate(run)``, the
anchor) and ``score_run(qrels, run, ["ndcg@10", "recall@100", "mrr@100"])`` on the same dicts,
alternating anchor and ours; prints the median of ``--rounds`` (at least 3) and the ratio
ours / anchor, and checks that every per-query value is equal.

``--ranx`` measures ranx instead of pytrec_eval (issue 33): ranx 0.3 compiles its metrics with
numba on first use, so both sides are warmed first (ranx on a two-query run of the same metrics,
which compiles every kernel; ours on the same tiny run) and ranx runs on one thread
(``threads=1``). Two ranx figures are printed: ``ranx.evaluate`` on the same dicts (what a caller
with pytrec_eval-style dicts pays: ranx converts them to numba lists on every call) and ranx's
kernel alone on its numba lists converted beforehand (the figure of ranx's efficiency notebook).

Usage::

    python benchmarks/bench_metrics.py [--queries 10000] [--depth 100] [--rounds 7] [--ties]
    python benchmarks/bench_metrics.py --ranx --queries 200000 --rounds 3
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
    parser.add_argument("--ranx", action="store_true", help="side by side with ranx, one thread")
    args = parser.parse_args()
    if args.rounds < 3:
        parser.error("--rounds: take the median of at least 3")
    qrels, run = make_run(args.queries, args.depth, args.docs, args.ties)
    if args.ranx:
        against_ranx(qrels, run, args)
        return
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


def against_ranx(qrels: dict, run: dict, args: argparse.Namespace) -> None:
    """score_run beside ranx on one thread, both warmed; see the module docstring."""
    import numba
    import ranx
    from ranx.meta.evaluate import convert_qrels, convert_run

    names = list(PAIRS)
    numba.set_num_threads(1)
    tiny_q, tiny_r = make_run(2, 10, 50, False, seed=1)
    ranx.evaluate(tiny_q, tiny_r, names, return_mean=False, threads=1)  # compile every kernel
    score_run(tiny_q, tiny_r, names)
    typed_q = convert_qrels(ranx.Qrels.from_dict(qrels))
    typed_r = convert_run(ranx.Run.from_dict(run))
    times: dict[str, list[float]] = {"ranx dicts": [], "ranx kernel": [], "ours": []}
    out: dict[str, object] = {}
    for _ in range(args.rounds):
        t0 = time.perf_counter()
        out["ranx"] = ranx.evaluate(qrels, run, names, return_mean=False, threads=1)
        times["ranx dicts"].append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        ranx.evaluate(typed_q, typed_r, names, return_mean=False, threads=1)
        times["ranx kernel"].append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        out["ours"] = score_run(qrels, run, names)
        times["ours"].append(time.perf_counter() - t0)
    med = {key: statistics.median(values) for key, values in times.items()}
    print(
        f"{args.queries} queries x {args.depth} documents{' (tied scores)' if args.ties else ''}"
        f", nDCG@10 + Recall@100 + MRR, median of {args.rounds} alternating rounds, one thread"
    )
    for key, value in med.items():
        print(f"{key:12} {value:8.3f} s  {args.queries / value:10,.0f} queries/s")
    print(f"ours / ranx on the same dicts: {med['ours'] / med['ranx dicts']:.3f}x (target <= 1.0x)")
    print(f"ours / ranx's kernel alone:    {med['ours'] / med['ranx kernel']:.3f}x")


if __name__ == "__main__":
    main()

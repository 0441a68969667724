"""Cost of a typo x10 sweep on SciFact relative to the clean run.

A noise point keeps the documents and changes only the query texts, so with the embedding cache
a sweep re-embeds the queries only. This script runs, with one cache folder:

* clean, cold: the model over SciFact with an empty cache (every document embedded), unless
  ``--cache`` names a folder that already holds the corpus;
* clean, warm: the same again from a new Evaluator (documents from the cache);
* the sweep: ``noise:typo*10`` (ten seeds) through ``evaluate_workload``, reusing the clean
  result, from the same warm cache;

and prints the sweep's wall time against each clean run, and how many documents the sweep
embedded (target: 0, only the 10 x 300 queries).

Usage::

    python benchmarks/bench_stress.py [--data ../shared/data/scifact] [--model SPEC]
        [--cache DIR] [--seeds 10] [--latency-passes 0] [--json OUT]
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # measure this checkout's package
from scifact import scifact_parser  # noqa: E402

from pytest_embedbench import Evaluator, load_dataset  # noqa: E402
from pytest_embedbench.evaluation.workloads import evaluate_workload, parse_workloads  # noqa: E402


def main() -> None:
    parser = scifact_parser(__doc__)
    parser.add_argument("--cache", help="a cache folder to use (and keep); default: a temp one")
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--latency-passes", type=int, default=0)
    parser.add_argument("--json", help="also write the figures to this file")
    args = parser.parse_args()
    dataset = load_dataset(args.data, split="test")
    print(f"dataset: {dataset}")
    with tempfile.TemporaryDirectory(prefix="embedbench-stress-") as tmp:
        cache = args.cache or tmp
        passes = args.latency_passes
        t0 = time.perf_counter()
        first = Evaluator(cache=cache, latency_passes=passes).evaluate(args.model, dataset)
        first_wall = time.perf_counter() - t0
        evaluator = Evaluator(cache=cache, latency_passes=passes)
        t0 = time.perf_counter()
        clean = evaluator.evaluate(args.model, dataset)
        warm_wall = time.perf_counter() - t0
        (point,) = parse_workloads([f"noise:typo*{args.seeds}"])
        t0 = time.perf_counter()
        swept = evaluate_workload(evaluator, args.model, dataset, point, clean=clean)
        sweep_wall = time.perf_counter() - t0
    embedded = sum(r.cache.misses for r in swept.runs)
    figures = {
        "model": args.model,
        "seeds": args.seeds,
        "latency_passes": passes,
        "first_clean_s": first_wall,
        "first_clean_documents_embedded": first.cache.misses,
        "warm_clean_s": warm_wall,
        "sweep_s": sweep_wall,
        "sweep_documents_embedded": embedded,
        "sweep_queries_embedded": args.seeds * len(dataset.queries),
        "sweep_over_first": sweep_wall / first_wall,
        "sweep_over_warm": sweep_wall / warm_wall,
        "ndcg@10_clean": float(clean.ndcg10),
        "ndcg@10_typo": float(swept.ndcg10),
        "delta_ndcg@10": str(swept.delta("ndcg@10")),
    }
    for key, value in figures.items():
        print(f"{key:32s} {value:.4g}" if isinstance(value, float) else f"{key:32s} {value}")
    print("target: sweep_documents_embedded == 0 (only the queries are embedded again)")
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=2) + "\n")


if __name__ == "__main__":
    main()

"""SciFact benchmark: engine overhead and warm-cache speed-up.

Runs all-MiniLM-L6-v2 over the full SciFact test split twice with one fresh cache folder:

* cold: every document embedded; prints the share of wall time spent outside the model's own
  encode calls (target <= 5%);
* warm: a new Evaluator (the model is loaded again, as in a new CI run) that finds every
  document in the cache; prints cold / warm wall time (target >= 20x).

Usage::

    python benchmarks/bench_scifact.py [--data ../shared/data/scifact] [--model SPEC] [--json OUT]
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


def main() -> None:
    parser = scifact_parser(__doc__)
    parser.add_argument("--json", help="also write the figures to this file")
    args = parser.parse_args()

    t0 = time.perf_counter()
    dataset = load_dataset(args.data, split="test")
    load_s = time.perf_counter() - t0
    print(f"dataset: {dataset} loaded in {load_s:.2f}s")

    with tempfile.TemporaryDirectory(prefix="embedbench-bench-") as cache_dir:
        t0 = time.perf_counter()
        cold = Evaluator(cache=cache_dir).evaluate(args.model, dataset)
        cold_wall = time.perf_counter() - t0
        t0 = time.perf_counter()
        warm = Evaluator(cache=cache_dir).evaluate(args.model, dataset)
        warm_wall = time.perf_counter() - t0

    outside = cold_wall - cold.timings.encode_s
    figures = {
        "model": args.model,
        "documents": cold.n_documents,
        "queries": len(cold.query_ids),
        "ndcg@10": float(cold.ndcg10),
        "ndcg@10_warm": float(warm.ndcg10),
        "cold_wall_s": cold_wall,
        "cold_encode_s": cold.timings.encode_s,
        "outside_encode_share": outside / cold_wall,
        "outside_encode_share_with_dataset_load": (outside + load_s) / (cold_wall + load_s),
        "warm_wall_s": warm_wall,
        "warm_cache_hit_rate": warm.cache.hit_rate,
        "cold_over_warm": cold_wall / warm_wall,
        "cold_timings": cold.timings.to_dict(),
        "warm_timings": warm.timings.to_dict(),
        "latency_p50_ms": cold.latency.p50_ms,
        "latency_p95_ms": cold.latency.p95_ms,
        "documents_per_s_cold": cold.documents_per_s,
        "peak_rss_mb": cold.peak_rss_mb,
    }
    print(f"nDCG@10 cold {cold.ndcg10}  warm {float(warm.ndcg10):.5f}  (MTEB: 0.64508)")
    print(
        f"cold run: {cold_wall:.1f}s wall, {cold.timings.encode_s:.1f}s inside encode -> "
        f"{100 * figures['outside_encode_share']:.2f}% outside encode "
        f"({100 * figures['outside_encode_share_with_dataset_load']:.2f}% counting the "
        f"dataset load) [target <= 5%]"
    )
    print(
        f"warm run: {warm_wall:.2f}s wall, cache hit rate {warm.cache.hit_rate:.3f} -> "
        f"{figures['cold_over_warm']:.1f}x faster than cold [target >= 20x]"
    )
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=2, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()

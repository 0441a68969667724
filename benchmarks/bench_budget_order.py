"""A memory budget over a cache filled in another order (issue 33).

``--embedbench-memory-budget`` reads the corpus vectors back from the cache a shard at a time.
When the run that filled the cache had no budget, the model's batches were sorted by text
length over the whole corpus; when the corpus order changed since, its documents come in
another order too. Either way a shard's keys are spread over nearly every stored batch. This
benchmark fills a fresh cache both ways with ``bench_million.py``'s seeded synthetic corpus and
384-d synthetic model (no weights, no network):

* ``budgeted``: the cold run under the same budget, in the corpus order (as
  ``bench_million.py`` fills it: each shard's batches hold that shard only);
* ``shuffled``: the cold run without a budget, over the corpus in a shuffled (seeded) order;

then evaluates the corpus under ``--budget`` with the vectors read from the cache, each case in
its own process, and prints the wall time of that ``evaluate``, its search stage, the RSS it
added over what was resident before it (``RSSSampler``), and the budget. Run it against
another checkout with ``PYTHONPATH=<checkout>`` to compare code versions.

Usage::

    python benchmarks/bench_budget_order.py [--size 200000] [--budget 32MB]
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # measure this checkout's package
import bench_million  # noqa: E402  (its corpus and synthetic model)


def child(size: int, budget: int, fill: str) -> None:
    from pytest_embedbench import Evaluator, RetrievalDataset
    from pytest_embedbench.evaluation.measure import RSSSampler

    docs, queries, qrels = bench_million.corpus(size)
    ds = RetrievalDataset.from_dicts(docs, queries, qrels, name=f"synthetic-{size}")
    bench_million.register_synthetic()
    with tempfile.TemporaryDirectory() as cache:
        if fill == "shuffled":
            items = sorted(docs.items())
            random.Random(0).shuffle(items)
            cold_ds = RetrievalDataset.from_dicts(dict(items), queries, qrels, name="cold")
            cold = Evaluator(cache=cache, latency_passes=0)
        else:
            cold_ds = ds
            cold = Evaluator(cache=cache, latency_passes=0, memory_budget=budget)
        cold.evaluate("synthetic:s", cold_ds)
        cold.cache.close()  # type: ignore[union-attr]
        del docs, cold_ds, cold
        ev = Evaluator(cache=cache, latency_passes=0, memory_budget=budget)
        t0 = time.perf_counter()
        with RSSSampler() as rss:
            result = ev.evaluate("synthetic:s", ds)
        wall = time.perf_counter() - t0
        assert result.cache.misses == 0
        print(
            json.dumps(
                {
                    "fill": fill,
                    "evaluate_s": round(wall, 2),
                    "search_s": round(result.timings.to_dict()["search_s"], 2),
                    "added_rss_mb": round(rss.added_mb, 1),
                    "ndcg10": float(result.ndcg10),
                }
            )
        )
        ev.cache.close()  # type: ignore[union-attr]


def main() -> None:
    from pytest_embedbench.config.optionspec import parse_bytes

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=200_000)
    parser.add_argument("--budget", default="32MB")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    budget = parse_bytes(args.budget)
    if args.child:
        child(args.size, budget, args.child)
        return
    print(f"{args.size} documents, budget {args.budget} ({budget / 2**20:.1f} MiB)")
    for fill in ("budgeted", "shuffled"):
        cmd = [sys.executable, __file__, "--size", str(args.size), "--budget", args.budget]
        out = subprocess.run(cmd + ["--child", fill], capture_output=True, text=True, check=True)
        print(out.stdout.strip().splitlines()[-1])


if __name__ == "__main__":
    main()

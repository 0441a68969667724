"""Bootstrap speed: 10,000 resamples of 300 queries (target: well under 100 ms).

Usage::

    python benchmarks/bench_stats.py [--queries 300] [--resamples 10000] [--repeat 20]
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # measure this checkout's package
from pytest_embedbench import bootstrap, compare_scores  # noqa: E402


def best_of(repeat: int, fn: Callable[[], object]) -> tuple[float, float]:
    """Best and median wall time of ``repeat`` calls, in milliseconds."""
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times) * 1000, float(np.median(times)) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--resamples", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    a, b = rng.random(args.queries), rng.random(args.queries)
    for label, fn in [
        ("bootstrap interval", lambda: bootstrap(a, n_resamples=args.resamples)),
        (
            "paired comparison (bootstrap p)",
            lambda: compare_scores(a, b, n_resamples=args.resamples),
        ),
        (
            "paired comparison (randomization p)",
            lambda: compare_scores(a, b, test="randomization", n_resamples=args.resamples),
        ),
    ]:
        best, median = best_of(args.repeat, fn)
        print(
            f"{label}: {args.resamples} resamples of {args.queries} queries: best {best:.1f} ms, "
            f"median {median:.1f} ms [target well under 100 ms]"
        )


if __name__ == "__main__":
    main()

"""Exact search at scale: a million 384-d vectors, memory bounded by the query blocks.

Prints, for each backend, the wall time per query and the peak RSS growth while searching,
against the size of the vectors themselves and of the full query x corpus score matrix that
the blocked search never builds.

Usage::

    python benchmarks/bench_index.py [--docs 1000000] [--queries 256] [--dim 384]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from pytest_embedbench import ExactIndex
from pytest_embedbench.index import faiss_available
from pytest_embedbench.measure import RSSSampler

MB = 1024 * 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=1_000_000)
    parser.add_argument("--queries", type=int, default=256)
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--k", type=int, default=100)
    args = parser.parse_args()

    rng = np.random.default_rng(0)
    vectors = rng.standard_normal((args.docs, args.dim), dtype=np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    queries = rng.standard_normal((args.queries, args.dim), dtype=np.float32)
    ids = [f"d{i:07d}" for i in range(args.docs)]
    full_matrix_mb = args.queries * args.docs * 4 / MB
    print(
        f"{args.docs} x {args.dim} vectors = {vectors.nbytes / MB:.0f} MB; a full "
        f"{args.queries} x {args.docs} score matrix would be {full_matrix_mb:.0f} MB"
    )
    backends = ["numpy"] + (["faiss"] if faiss_available() else [])
    rankings = {}
    for backend in backends:
        index = ExactIndex(vectors, ids, backend=backend)  # type: ignore[arg-type]
        with RSSSampler(interval=0.01) as rss:
            start_mb = rss.peak_mb
            t0 = time.perf_counter()
            positions, _ = index.search(queries, args.k)
            wall = time.perf_counter() - t0
        rankings[backend] = positions
        print(
            f"{backend:>6}: {1000 * wall / args.queries:.1f} ms/query, peak RSS growth while "
            f"searching {rss.peak_mb - start_mb:.0f} MB (block limit "
            f"{index.max_block_bytes / MB:.0f} MB) vs {full_matrix_mb:.0f} MB unblocked"
        )
        del index
    if len(rankings) == 2:
        same = np.array_equal(rankings["numpy"], rankings["faiss"])
        print(f"numpy and faiss rankings identical: {same}")


if __name__ == "__main__":
    main()

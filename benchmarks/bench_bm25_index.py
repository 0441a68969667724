"""bm25 indexing: ``BM25Index`` beside bm25s alone, side by side (issue 33).

The corpus of ``bench_million.py`` (seeded; documents of 8-24 Zipf words) at each ``--sizes``;
per round, alternating: bm25s alone (``bm25s.tokenize`` + ``BM25.index``, what BM25Index did
before issue 33: a Python loop per token and per document, the cyclic GC on) and
``BM25Index`` (its ``WordTokenizer``, flat token arrays, the score matrix built by numpy, the GC
off while indexing); the same stopwords ("en") and stemmer ("english"), bm25s's defaults
otherwise. Prints the median wall seconds, seconds per 1,000 documents (linear: flat across the
sizes) and the ratio, the same in CPU seconds of this process (less moved by other processes on
a shared machine), and checks that both score matrices are equal bit for bit, term by term (the
two number their terms in different orders).

``--linear SMALL LARGE`` measures only ``BM25Index`` and whether its cost per document is flat
between two sizes, fairly on a shared machine: a round indexes the SMALL corpus LARGE / SMALL
times (as many documents as LARGE, as long a stretch of time) and the LARGE corpus once, in
alternating order; it prints each round's CPU seconds per 1,000 documents and their ratio
(LARGE / SMALL; 1.00 is linear), then the medians.

Usage::

    python benchmarks/bench_bm25_index.py [--sizes 10000 100000 1000000] [--rounds 3]
    python benchmarks/bench_bm25_index.py --linear 100000 1000000 [--rounds 5]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # measure this checkout's package
from bench_million import corpus  # noqa: E402


def bm25s_alone(texts: list[str]) -> object:
    import bm25s

    from pytest_embedbench.retrieval.lexical.tokenize import make_stemmer

    tokens = bm25s.tokenize(
        texts, stopwords="en", stemmer=make_stemmer("english"), show_progress=False
    )
    model = bm25s.BM25(k1=1.5, b=0.75, method="lucene")
    model.index(tokens, show_progress=False)
    return model


def same_matrix(ours: object, plain: object) -> bool:
    """Whether two bm25s score matrices hold the same columns, bit for bit, term by term."""
    a, b = ours.scores, plain.scores  # type: ignore[attr-defined]
    if any(len(a[key]) != len(b[key]) for key in ("data", "indices", "indptr")):
        return False
    for term, i in ours.vocab_dict.items():  # type: ignore[attr-defined]
        j = plain.vocab_dict[term]  # type: ignore[attr-defined]
        if i >= len(a["indptr"]) - 1:  # the empty token: no column
            continue
        mine, theirs = slice(*a["indptr"][i : i + 2]), slice(*b["indptr"][j : j + 2])
        for key in ("data", "indices"):
            if not np.array_equal(a[key][mine], b[key][theirs]):
                return False
    return True


def linear(small: int, large: int, rounds: int) -> None:
    """CPU seconds per 1,000 documents of ``BM25Index`` at two sizes, time-balanced rounds."""
    from pytest_embedbench.retrieval.lexical.bm25 import BM25Index

    corpora = {}
    for size in (small, large):
        docs, _, _ = corpus(size)
        corpora[size] = (list(docs.values()), list(docs))
    repeats = large // small
    print(f"CPU seconds per 1,000 documents: {small:,} (x{repeats} a round), {large:,}, ratio")
    per_k: dict[int, list[float]] = {small: [], large: []}
    ratios = []
    for round_ in range(rounds):
        order = (small, large) if round_ % 2 == 0 else (large, small)
        for size in order:
            texts, ids = corpora[size]
            c0 = time.process_time()
            for _ in range(repeats if size == small else 1):
                BM25Index(texts, ids)
            done = size * (repeats if size == small else 1)
            per_k[size].append(1000 * (time.process_time() - c0) / done)
        ratios.append(per_k[large][-1] / per_k[small][-1])
        last = f"{per_k[small][-1]:.5f} {per_k[large][-1]:.5f}"
        print(f"round {round_ + 1}: {last} {ratios[-1]:.3f}x", flush=True)
    print(
        f"median: {statistics.median(per_k[small]):.5f} {statistics.median(per_k[large]):.5f}"
        f" {statistics.median(ratios):.3f}x (median of the rounds' ratios)",
        flush=True,
    )


def main() -> None:
    from pytest_embedbench.retrieval.lexical.bm25 import BM25Index

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--linear", type=int, nargs=2, metavar=("SMALL", "LARGE"))
    args = parser.parse_args()
    BM25Index(["warm up the stemmer", "and bm25s"], ["a", "b"])
    if args.linear:
        linear(*args.linear, rounds=args.rounds)
        return
    print("size       bm25s alone, BM25Index: seconds and seconds per 1,000 documents, ratio;")
    print("           then CPU seconds per 1,000 documents (time.process_time) and ratio")
    for size in args.sizes:
        docs, _, _ = corpus(size)
        texts, ids = list(docs.values()), list(docs)
        del docs
        times: dict[str, list[float]] = {"alone": [], "ours": [], "alone cpu": [], "ours cpu": []}
        for _ in range(args.rounds):
            t0, c0 = time.perf_counter(), time.process_time()
            plain = bm25s_alone(texts)
            times["alone"].append(time.perf_counter() - t0)
            times["alone cpu"].append(time.process_time() - c0)
            t0, c0 = time.perf_counter(), time.process_time()
            ours = BM25Index(texts, ids)._retriever
            times["ours"].append(time.perf_counter() - t0)
            times["ours cpu"].append(time.process_time() - c0)
        assert same_matrix(ours, plain)
        del plain, ours
        med = {key: statistics.median(values) for key, values in times.items()}
        print(
            f"{size:>9,}  wall {med['alone']:7.2f} s {1000 * med['alone'] / size:7.4f}   "
            f"{med['ours']:7.2f} s {1000 * med['ours'] / size:7.4f}   "
            f"{med['ours'] / med['alone']:.3f}x | cpu {1000 * med['alone cpu'] / size:7.4f}   "
            f"{1000 * med['ours cpu'] / size:7.4f}   {med['ours cpu'] / med['alone cpu']:.3f}x",
            flush=True,
        )


if __name__ == "__main__":
    main()

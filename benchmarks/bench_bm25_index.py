"""bm25 indexing: ``BM25Index`` beside bm25s alone, side by side (issue 33).

The corpus of ``bench_million.py`` (seeded; documents of 8-24 Zipf words) at each ``--sizes``;
per round, alternating: bm25s alone (``bm25s.tokenize`` + ``BM25.index``, what BM25Index did
before issue 33: a Python loop per token and per document, the cyclic GC on) and
``BM25Index`` (flat token arrays, the score matrix built by numpy, the GC off while indexing);
the same stopwords ("en") and stemmer ("english"), bm25s's defaults otherwise. Prints the
median seconds, seconds per 1,000 documents (linear: flat across the sizes) and the ratio, and
checks that both score matrices are equal bit for bit.

Usage::

    python benchmarks/bench_bm25_index.py [--sizes 10000 100000 1000000] [--rounds 3]
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
from bench_million import corpus


def bm25s_alone(texts: list[str]) -> object:
    import bm25s

    from pytest_embedbench.lexical import make_stemmer

    tokens = bm25s.tokenize(
        texts, stopwords="en", stemmer=make_stemmer("english"), show_progress=False
    )
    model = bm25s.BM25(k1=1.5, b=0.75, method="lucene")
    model.index(tokens, show_progress=False)
    return model


def main() -> None:
    from pytest_embedbench.lexical import BM25Index

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    BM25Index(["warm up the stemmer", "and bm25s"], ["a", "b"])
    print("size       bm25s alone (s, per 1k)   BM25Index (s, per 1k)   ratio")
    for size in args.sizes:
        docs, _, _ = corpus(size)
        texts, ids = list(docs.values()), list(docs)
        del docs
        times: dict[str, list[float]] = {"alone": [], "ours": []}
        for _ in range(args.rounds):
            t0 = time.perf_counter()
            plain = bm25s_alone(texts)
            times["alone"].append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            ours = BM25Index(texts, ids)._retriever
            times["ours"].append(time.perf_counter() - t0)
        for key in ("data", "indices", "indptr"):
            assert np.array_equal(ours.scores[key], plain.scores[key]), key  # type: ignore[attr-defined]
        del plain, ours
        alone, mine = (statistics.median(times[k]) for k in ("alone", "ours"))
        print(
            f"{size:>9,}  {alone:8.2f} {1000 * alone / size:8.4f}         "
            f"{mine:8.2f} {1000 * mine / size:8.4f}      {mine / alone:.3f}x",
            flush=True,
        )


if __name__ == "__main__":
    main()

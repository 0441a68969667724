"""A million documents end to end through ``evaluate`` (issue 33): bm25 and exact dense search.

A seeded synthetic corpus (documents of 8-24 words drawn from a 20,000-word Zipf vocabulary;
1,000 queries, each 4 words of one target document, which is its one relevant document) at each
``--sizes``; every (size, model) runs in its own process, so its peak RSS is its own:

* ``bm25``: one ``evaluate`` (bm25s indexing, then the queries);
* ``dense``: a deterministic 384-d "synthetic" embedding model (a unit vector seeded by each
  text's SHA-256, so no model weights and no network) whose document vectors are computed and
  stored in a fresh cache first (``precompute``: a cold run), then the measured run reads them
  back from the cache: exact search from precomputed vectors, under ``--budget`` (the corpus
  vectors streamed from the cache in shards, ``--embedbench-memory-budget``; 0: all in memory).

Printed per run: wall seconds per stage (corpus generation, precompute, document vectors from
the cache or bm25 indexing, index build, query embedding, search, the rest of ``evaluate``:
metrics, intervals and the result), the total, the process's peak RSS (corpus generation
included), the RSS the measured ``evaluate`` added over what was resident before it, and the
cache's bytes on disk; then the
cost of each stage per 1,000 documents at each size (linear or better: flat or falling).

Usage::

    python benchmarks/bench_million.py [--sizes 10000 100000 1000000] [--budget 256MB]
    python benchmarks/bench_million.py --sizes 10000 --models bm25     # a quick look
"""

from __future__ import annotations

import argparse
import hashlib
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # measure this checkout's package
DIM = 384
N_QUERIES = 1000


def corpus(n_docs: int, seed: int = 0) -> tuple[dict, dict, dict]:
    rng = np.random.default_rng(seed)
    vocab = np.array([f"w{i}" for i in range(20_000)])
    weights = 1.0 / np.arange(1, len(vocab) + 1)
    weights /= weights.sum()
    lengths = rng.integers(8, 25, n_docs)
    words = vocab[rng.choice(len(vocab), size=int(lengths.sum()), p=weights)]
    ends = np.cumsum(lengths)
    docs = {}
    for i, (lo, hi) in enumerate(zip(ends - lengths, ends, strict=True)):
        docs[f"doc{i:08d}"] = " ".join(words[lo:hi])
    ids = list(docs)
    targets = rng.choice(n_docs, size=N_QUERIES, replace=False)
    queries, qrels = {}, {}
    for j, t in enumerate(targets):
        text = docs[ids[t]].split()
        pick = rng.choice(len(text), size=4, replace=False)
        queries[f"q{j:04d}"] = " ".join(text[p] for p in sorted(pick))
        qrels[f"q{j:04d}"] = {ids[t]: 1}
    return docs, queries, qrels


def register_synthetic() -> None:
    from pytest_embedbench.models.providers.base import EmbeddingProvider
    from pytest_embedbench.models.providers.registry import register_provider

    class SyntheticProvider(EmbeddingProvider):
        """A unit vector per text, seeded by the text's SHA-256: deterministic, no weights."""

        name = "synthetic"
        default_batch_size = 256

        def load(self) -> None:
            self.dimension = DIM

        def embed_batch(self, texts: list[str], *, kind: str) -> np.ndarray:
            out = np.empty((len(texts), DIM), dtype=np.float32)
            for i, text in enumerate(texts):
                seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")
                out[i] = np.random.default_rng(seed).standard_normal(DIM, dtype=np.float32)
            return out / np.linalg.norm(out, axis=1, keepdims=True)

    register_provider(SyntheticProvider)


def child(args: argparse.Namespace) -> None:
    from pytest_embedbench import Evaluator, RetrievalDataset
    from pytest_embedbench.evaluation.measure import RSSSampler

    out: dict[str, float] = {}
    t0 = time.perf_counter()
    docs, queries, qrels = corpus(args.size)
    ds = RetrievalDataset.from_dicts(docs, queries, qrels, name=f"synthetic-{args.size}")
    del docs
    out["corpus_s"] = time.perf_counter() - t0
    budget = args.budget or None
    if args.model == "dense":
        register_synthetic()
        t0 = time.perf_counter()
        cold = Evaluator(cache=args.cache, latency_passes=0, memory_budget=budget)
        cold.evaluate("synthetic:s", ds)
        cold.cache.close()  # type: ignore[union-attr]
        out["precompute_s"] = time.perf_counter() - t0
        spec = "synthetic:s"
    else:
        spec = "bm25"
    t0 = time.perf_counter()
    ev = Evaluator(cache=args.cache, latency_passes=0, memory_budget=budget)
    with RSSSampler() as rss:
        result = ev.evaluate(spec, ds)
    out["evaluate_s"] = time.perf_counter() - t0
    out["evaluate_peak_rss_mb"] = rss.peak_mb
    out["evaluate_added_rss_mb"] = rss.added_mb
    timings = result.timings.to_dict()
    for key in ("document_embedding_s", "index_build_s", "query_embedding_s", "search_s"):
        out[key] = timings[key]
    out["rest_s"] = out["evaluate_s"] - sum(out[k] for k in timings if k in out)
    ev.cache.close()  # type: ignore[union-attr]  # folds the WAL into the file
    out["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    out["cache_mb"] = sum(p.stat().st_size for p in Path(args.cache).iterdir()) / 1e6
    out["ndcg10"] = float(result.ndcg10)
    out["misses"] = result.cache.misses if args.model == "dense" else -1
    print(json.dumps(out))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    parser.add_argument("--models", nargs="+", default=["bm25", "dense"])
    parser.add_argument("--budget", default="256MB", help="0: all in memory")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--size", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--model", help=argparse.SUPPRESS)
    parser.add_argument("--cache", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        from pytest_embedbench.config.optionspec import parse_bytes

        args.budget = 0 if args.budget == "0" else parse_bytes(args.budget)
        child(args)
        return
    rows = []
    for model in args.models:
        for size in args.sizes:
            with tempfile.TemporaryDirectory() as cache:
                cmd = [sys.executable, __file__, "--child", "--size", str(size), "--model", model]
                cmd += ["--cache", cache, "--budget", str(args.budget)]
                done = subprocess.run(cmd, capture_output=True, text=True, check=False)
            if done.returncode != 0:
                print(done.stderr[-3000:], file=sys.stderr)
                raise SystemExit(f"{model} at {size} documents failed")
            figures = json.loads(done.stdout.strip().splitlines()[-1])
            rows.append({"model": model, "size": size, **figures})
            print(json.dumps(rows[-1]), flush=True)
    stages = ["corpus_s", "precompute_s", "document_embedding_s", "index_build_s", "search_s"]
    stages += ["rest_s", "evaluate_s"]
    print(f"\nbudget {args.budget}; seconds per 1,000 documents (linear: flat across sizes)")
    for model in args.models:
        mine = [r for r in rows if r["model"] == model]
        print(f"{model}: " + " | ".join(f"{r['size']:,}" for r in mine))
        for stage in stages:
            if all(stage in r for r in mine):
                per = [1000 * r[stage] / r["size"] for r in mine]
                print(f"  {stage:22}" + " ".join(f"{p:9.4f}" for p in per))
        print("  peak RSS MB           " + " ".join(f"{r['peak_rss_mb']:9.0f}" for r in mine))
        added = " ".join(f"{r['evaluate_added_rss_mb']:9.0f}" for r in mine)
        print("  RSS added by evaluate " + added)
        print("  cache MB              " + " ".join(f"{r['cache_mb']:9.1f}" for r in mine))
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()

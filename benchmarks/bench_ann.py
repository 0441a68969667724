"""The index axis on real vectors (issue 35): build time, size, QPS and recall per index.

all-MiniLM-L6-v2 over the SciFact test split (5,183 documents, 300 queries): the corpus is
embedded once into one cache folder (the first run's cost; later runs read it), then indexed
once per spec through :func:`~evaluation.indexed.evaluate_indexed`, exactly what a test
with ``indexes=[...]`` runs. Per index it prints the build time, the size, the index's own
query latency (one query vector at a time: p50, p95, QPS) with QPS as a ratio to exact search
(the anchor), the neighbour recall@10 against exact search and nDCG@10 with its paired delta
against exact on the same queries. LanceDB, Chroma, pgvector and Qdrant rows are skipped when
their packages are not installed (the ``lancedb``, ``chroma``, ``pgvector`` and ``qdrant``
extras). pgvector's HNSW returns at most ``ef_search`` rows: run its rows with ``--k 1,10``.
With ``--concurrency 1,4,16`` each index's queries also go from that many threads at once
(``--embedbench-concurrency``'s measure: 1,000 requests a level, at most 10 s), and a second
table gives QPS and p99 per level, QPS as a ratio to the same index at one thread (the anchor).

Usage::

    python benchmarks/bench_ann.py [--data ../shared/data/scifact] [--model SPEC]
        [--cache DIR] [--json OUT] [--index SPEC ...] [--k 1,10,100] [--concurrency 1,4,16]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # measure this checkout's package
from pytest_embedbench import load_dataset  # noqa: E402
from pytest_embedbench.config.optionspec import parse_concurrency  # noqa: E402
from pytest_embedbench.evaluation.evaluate import Evaluator  # noqa: E402
from pytest_embedbench.evaluation.indexed import evaluate_indexed  # noqa: E402
from pytest_embedbench.models.providers import ModelSpec  # noqa: E402
from pytest_embedbench.retrieval.indexes import IndexSpec, close_engines  # noqa: E402

INDEXES = (
    "exact",
    "faiss:flat",
    "faiss:hnsw(M=32,efSearch=16)",
    "faiss:hnsw(M=32,efSearch=64)",
    "faiss:hnsw(M=32,efSearch=1)",
    "faiss:ivf(nlist=256,nprobe=1)",
    "faiss:ivf(nlist=256,nprobe=8)",
    "faiss:ivf(nlist=256,nprobe=32)",
    "faiss:ivfpq(nlist=256,nprobe=8,m=48,nbits=8)",
    "lancedb",
    "lancedb:ivf_pq(num_partitions=64,num_sub_vectors=48,nprobes=8)",
    "lancedb:ivf_hnsw_sq(num_partitions=4,nprobes=4,ef=128)",
    "chroma",
    "chroma:hnsw(max_neighbors=32,ef_construction=40,ef_search=16)",
    "chroma:hnsw(max_neighbors=32,ef_construction=40,ef_search=64)",
    "chroma:hnsw(max_neighbors=32,ef_construction=40,ef_search=1)",
    "pgvector:exact",
    "pgvector:hnsw(m=16,ef_construction=64,ef_search=40)",
    "pgvector:hnsw(m=16,ef_construction=64,ef_search=10)",
    "pgvector:ivfflat(lists=100,probes=10)",
    "pgvector:ivfflat(lists=100,probes=1)",
    "qdrant:exact",
    "qdrant:hnsw(m=16,ef=64)",
    "qdrant:hnsw(m=16,ef=16)",
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    root = Path(__file__).resolve().parents[1]
    parser.add_argument("--data", default=str(root.parent / "shared" / "data" / "scifact"))
    parser.add_argument("--model", default="hf:sentence-transformers/all-MiniLM-L6-v2")
    parser.add_argument("--cache", default="/tmp/embedbench-bench-ann-cache")
    parser.add_argument("--json", help="write the figures here")
    parser.add_argument("--index", action="append", help="an index spec (default: a sweep)")
    parser.add_argument(
        "--k",
        default="1,10,100",
        help="cut-offs, comma-separated (default 1,10,100); the largest is the search depth, "
        "which an hnswlib-based engine (Chroma) takes as its ef when above ef_search",
    )
    parser.add_argument(
        "--concurrency",
        type=parse_concurrency,
        default=(),
        help="thread counts each index's queries are sent from, e.g. 1,4,16 (default: none)",
    )
    args = parser.parse_args()
    ks = tuple(int(k) for k in args.k.split(","))

    ds = load_dataset(args.data)
    spec = ModelSpec(args.model)
    ev = Evaluator(k=ks, cache=args.cache, seed=0, latency_passes=0)
    t0 = time.perf_counter()
    provider = ev.provider(spec)
    ev.build_retriever(provider, ds)  # the corpus into the cache: embedded once for all
    corpus_s = time.perf_counter() - t0
    print(
        f"{spec.short_name} on {ds.name}: {len(ds.documents)} documents, {len(ds.queries)} "
        f"queries; corpus ready in {corpus_s:.1f} s (model load and any embedding)"
    )
    available = {
        "lancedb": _importable("lancedb"),
        "faiss": _importable("faiss"),
        "chroma": _importable("chromadb"),
        "pgvector": _importable("psycopg") and _importable("pgserver"),
        "qdrant": _importable("qdrant_client") and _importable("qdrant_edge"),
    }
    rows = []
    for raw in args.index or INDEXES:
        index = IndexSpec.parse(raw, "--index")
        if not available.get(index.engine, True):
            print(f"{index.spec}: skipped, {index.engine} is not installed")
            continue
        t1 = time.perf_counter()
        result = evaluate_indexed(ev, spec, ds, index, k=ks, concurrency=args.concurrency)
        run = result.index
        assert run is not None
        delta = result.delta_vs_exact("ndcg@10")
        recall = result.neighbour_recall(10)
        rows.append(
            {
                "index": index.spec,
                "description": run.description,
                "build_s": run.build_s,
                "bytes": run.nbytes,
                "p50_ms": run.p50_ms,
                "p95_ms": run.p95_ms,
                "qps": run.qps,
                "neighbour_recall@10": [float(recall), recall.low, recall.high],
                "ndcg@10": [float(result.ndcg10), result.ndcg10.low, result.ndcg10.high],
                "delta_ndcg@10": [float(delta), delta.low, delta.high],
                "load": [
                    {"threads": lv.concurrency, "requests": lv.requests, "qps": lv.qps}
                    | {"p50_ms": lv.p50_ms, "p95_ms": lv.p95_ms, "p99_ms": lv.p99_ms}
                    for lv in run.load
                ],
                "wall_s": time.perf_counter() - t1,
            }
        )
    anchor = next((r["qps"] for r in rows if r["index"] == "exact"), None)
    print(
        "| index | build s | size | p50 ms | p95 ms | QPS | QPS / exact | nR@10 | nDCG@10 "
        "| Δ nDCG@10 vs exact |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in rows:
        nr, nd, d = r["neighbour_recall@10"], r["ndcg@10"], r["delta_ndcg@10"]
        ratio = f"{r['qps'] / anchor:.1f}x" if anchor else "-"
        size = f"{r['bytes'] / 1024 / 1024:.2f} MiB" if r["bytes"] is not None else "-"
        print(
            f"| `{r['index']}` | {r['build_s']:.3f} | {size} | {r['p50_ms']:.3f} | "
            f"{r['p95_ms']:.3f} | {r['qps']:,.0f} | {ratio} | {nr[0]:.4f} [{nr[1]:.3f}, "
            f"{nr[2]:.3f}] | {nd[0]:.4f} | {d[0]:+.4f} [{d[1]:+.4f}, {d[2]:+.4f}] |"
        )
    if args.concurrency:
        levels = args.concurrency
        print()
        print(
            "| index | "
            + " | ".join(f"QPS at {n} | x{n} / x1 | p99 ms at {n}" for n in levels)
            + " |"
        )
        print("| --- |" + " --- | --- | --- |" * len(levels))
        for r in rows:
            by = {lv["threads"]: lv for lv in r["load"]}
            one = by.get(1, {}).get("qps")
            cells = []
            for n in levels:
                lv = by[n]
                ratio = f"{lv['qps'] / one:.2f}x" if one else "-"
                cells.append(f"{lv['qps']:,.0f} | {ratio} | {lv['p99_ms']:.3f}")
            print(f"| `{r['index']}` | " + " | ".join(cells) + " |")
    if args.json:
        Path(args.json).write_text(
            json.dumps({"corpus_s": corpus_s, "model": spec.spec, "k": ks, "rows": rows}, indent=2)
        )


def _importable(module: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(module) is not None


if __name__ == "__main__":
    try:
        main()
    finally:
        close_engines()  # pgvector's own server stopped, its folder removed

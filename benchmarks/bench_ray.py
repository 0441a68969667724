"""Whole-process side by side: SciFact's documents embedded by MiniLM in-process against through a
local Ray with two workers (issue 16).

Every figure is the wall time of a fresh Python process, from start to exit, each into an empty
embedding cache, with the same documents (the first ``--documents`` of SciFact's corpus, in
corpus order) and the same batch size (the model's default, 32):

* anchor, in-process: what a test run without ``--embedbench-ray`` does for the documents, the
  provider's ``build`` with the cache (load the model, embed the missing documents longest
  first, write them to the cache, build the exact index). Torch uses its default threads (one
  per core, 2 on the 2-core machine).
* ours, Ray: ``embed_documents`` with ``RaySettings(address="local", workers=2,
  cpus_per_worker=1, local_cpus=2)``: start a local Ray, load the model in the driver (its
  dimension enters the cache namespace) and in each worker, embed through Ray Data, write each
  batch to the cache, shut Ray down. Ray sets ``OMP_NUM_THREADS`` to an actor's CPUs, so each
  worker's torch uses 1 thread (an untimed probe process prints what the workers see).

Target: Ray / in-process <= 1.15x. Anchor and ours alternate, a round is (anchor, ours), and the
figure is the median over rounds of both the ratio of medians and the paired ratio (ours against
the mean of the anchor runs just before and after it), which cancels most of the drift of a
shared machine. The Ray run's own report gives the per-worker throughput (documents/s per
worker) used by the 10-million-chunk plan in ``benchmarks/README.md``.

Usage::

    python benchmarks/bench_ray.py [--documents 1000] [--rounds 3] [--json /tmp/ray.json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # measure this checkout's package
from sidebyside import ROOT, run_process, summarise, write  # noqa: E402

MODEL = "hf:sentence-transformers/all-MiniLM-L6-v2"
TARGET = 1.15

IN_PROCESS = r"""
import json, sys
from pytest_embedbench import load_dataset
from pytest_embedbench.cache.store import EmbeddingCache
from pytest_embedbench.models.providers import create_provider
from pytest_embedbench.retrieval.base import BuildStats

spec = json.load(open(sys.argv[1]))
documents = load_dataset(spec["data"], split="test").documents[: spec["documents"]]
provider = create_provider(spec["model"])
stats = BuildStats()
provider.build(documents, cache=EmbeddingCache(spec["cache"]), stats=stats)
import torch
print(json.dumps({
    "embedded": stats.cache_misses,
    "cached": stats.cache_hits,
    "document_embedding_s": stats.document_embedding_s,
    "torch_threads": torch.get_num_threads(),
}))
"""

RAY = r"""
import json, sys
from pytest_embedbench import load_dataset
from pytest_embedbench.cache.store import EmbeddingCache
from pytest_embedbench.distributed import RaySettings, embed_documents
from pytest_embedbench.models.providers import create_provider

spec = json.load(open(sys.argv[1]))
documents = load_dataset(spec["data"], split="test").documents[: spec["documents"]]
provider = create_provider(spec["model"])
settings = RaySettings(
    address="local", workers=spec["workers"], cpus_per_worker=1.0, local_cpus=spec["workers"]
)
report = embed_documents(
    provider, [d.embed_text for d in documents], EmbeddingCache(spec["cache"]), settings
)
import ray
ray.shutdown()
print(json.dumps({
    "embedded": report.embedded,
    "cached": report.cached,
    "workers": report.workers,
    "batches": report.batches,
    "ray_s": report.seconds,
    "first_batch_s": report.first_batch_s,
    # the first batch of each worker: they come back at about the same time
    "first_batches_size": sum(report.batch_sizes[: report.workers]),
    "documents_per_s": report.documents_per_s,
}))
"""

# Untimed: what torch sees inside a Ray Data actor that reserves one CPU, as distributed.py's
# actors do (map_batches with a class, ActorPoolStrategy, num_cpus=1).
PROBE = r"""
import json, os, sys
import numpy as np
import ray

ray.init(num_cpus=2, include_dashboard=False, logging_level="ERROR")
ray.data.DataContext.get_current().enable_progress_bars = False

class Probe:
    def __init__(self):
        import torch
        self.threads = torch.get_num_threads()

    def __call__(self, batch):
        n = len(batch["x"])
        return {
            "threads": np.array([self.threads] * n),
            "omp": np.array([os.environ.get("OMP_NUM_THREADS", "unset")] * n),
        }

rows = ray.data.from_items([{"x": i} for i in range(4)], override_num_blocks=4).map_batches(
    Probe, batch_size=1, compute=ray.data.ActorPoolStrategy(size=2), num_cpus=1.0
).take_all()
ray.shutdown()
print(json.dumps({
    "worker_torch_threads": sorted({int(r["threads"]) for r in rows}),
    "worker_omp_num_threads": sorted({str(r["omp"]) for r in rows}),
}))
"""


def loadavg() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "n/a"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--data",
        default=os.environ.get("EMBEDBENCH_SCIFACT", str(ROOT.parent / "shared/data/scifact")),
    )
    parser.add_argument(
        "--documents", type=int, default=1000, help="the first N SciFact documents (default 1000)"
    )
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--workers", type=int, default=2, help="Ray workers, 1 CPU each")
    parser.add_argument("--json", help="also write the figures to this file")
    args = parser.parse_args()

    print(
        f"{MODEL}: the first {args.documents} SciFact documents, in-process against Ray with "
        f"{args.workers} workers; {args.rounds} rounds; {os.cpu_count()} CPUs; "
        f"load average {loadavg()}"
    )
    load_before = loadavg()
    base = {"data": args.data, "documents": args.documents, "model": MODEL}
    anchors: list[float] = []
    ours: list[float] = []
    anchor_out: list[dict] = []
    ours_out: list[dict] = []
    with tempfile.TemporaryDirectory(prefix="embedbench-bench-ray-") as tmp:
        folder = Path(tmp)
        _, probe = run_process(PROBE, write(folder / "probe.json", {}))
        print(
            f"  Ray workers (1 CPU each): torch threads {probe['worker_torch_threads']}, "
            f"OMP_NUM_THREADS {probe['worker_omp_num_threads']}"
        )

        def anchor(tag: str) -> None:
            spec = write(folder / f"in-{tag}.json", {**base, "cache": str(folder / f"c-in-{tag}")})
            wall, out = run_process(IN_PROCESS, spec)
            anchors.append(wall)
            anchor_out.append(out)
            rate = out["embedded"] / out["document_embedding_s"]
            print(
                f"  round {tag}: in-process {wall:.1f} s ({out['embedded']} embedded in "
                f"{out['document_embedding_s']:.1f} s, {rate:.1f} documents/s with "
                f"{out['torch_threads']} torch threads; load {loadavg()})"
            )

        for r in range(1, args.rounds + 1):
            anchor(str(r))
            spec = write(
                folder / f"ray-{r}.json",
                {**base, "cache": str(folder / f"c-ray-{r}"), "workers": args.workers},
            )
            wall, out = run_process(RAY, spec)
            ours.append(wall)
            ours_out.append(out)
            print(
                f"  round {r}: ray        {wall:.1f} s ({out['embedded']} embedded by "
                f"{out['workers']} workers in {out['batches']} batches; Ray part "
                f"{out['ray_s']:.1f} s, first batch after {out['first_batch_s']:.1f} s; "
                f"load {loadavg()})"
            )
        anchor("close")  # closes the last pair
    figures = summarise(
        anchors, ours, TARGET, anchor="in-process", mine="ray", row="ray / in-process"
    )

    # per-worker throughput, from the Ray runs' own reports: over the whole Ray part (actor
    # start and model loads included), and after the first batch (the steady state, which is
    # what a long run sees): the documents after each worker's first batch over the seconds
    # after the first batch came back
    def per_worker(out: dict, steady: bool) -> float:
        if steady:
            docs = out["embedded"] - out["first_batches_size"]
            return docs / (out["ray_s"] - out["first_batch_s"]) / out["workers"]
        return out["embedded"] / out["ray_s"] / out["workers"]

    whole = statistics.median(per_worker(o, False) for o in ours_out)
    steady = statistics.median(per_worker(o, True) for o in ours_out)
    in_rate = statistics.median(o["embedded"] / o["document_embedding_s"] for o in anchor_out)
    print(
        f"per Ray worker (1 CPU): {whole:.2f} documents/s over the Ray part, {steady:.2f} after "
        f"the first batch; in-process: {in_rate:.2f} documents/s over the embedding "
        f"({anchor_out[0]['torch_threads']} threads)"
    )
    load_after = loadavg()
    print(f"load average before {load_before}, after {load_after}")
    figures.update(
        model=MODEL,
        documents=args.documents,
        workers=args.workers,
        embedded=[o["embedded"] for o in ours_out],
        ray_runs=ours_out,
        in_process_runs=anchor_out,
        per_worker_documents_per_s=whole,
        per_worker_documents_per_s_after_first_batch=steady,
        in_process_documents_per_s=in_rate,
        probe=probe,
        load_before=load_before,
        load_after=load_after,
    )
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()

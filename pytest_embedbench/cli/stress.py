"""``embedbench stress needle|noise|chunk-size``: a workload for several models, written as JSON and
Markdown (``<workload>.json`` and ``<workload>.md`` under ``--output-dir``, default
``results/stress``), outside a test run.

Usage::

    embedbench stress needle -m hf:sentence-transformers/all-MiniLM-L6-v2,bm25 \\
        --context-sizes 2k,8k --depths 0,0.5,1
    embedbench stress noise -m bm25 --dataset ../shared/data/scifact --noise typo,case --seeds 3
    embedbench stress chunk-size -m bm25 --dataset ../shared/data/scifact --chunk-sizes 128,512
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from ..core.exceptions import EmbedBenchError
from ..core.io import atomic_write_text
from ..core.text import inert
from ..report.artifacts import EXIT_ARTIFACT_FAILED, write_failure

__all__ = ["add_arguments", "run"]

#: the command, its line in embedbench --help, and its description
NAME = "stress"
HELP = "run a stress workload (needle, noise) and write JSON and Markdown"
DESCRIPTION = (
    "Needle-in-a-haystack or query-noise workloads for several models; writes <workload>.json "
    "and <workload>.md."
)


def add_arguments(stress: argparse.ArgumentParser) -> None:
    """The workloads of ``embedbench stress``, each with its options."""
    kinds = stress.add_subparsers(dest="workload", required=True, metavar="WORKLOAD")
    for name, text in (
        ("needle", "a needle fact at depths of long synthetic haystacks"),
        ("noise", "typos, case, truncation, shuffled words in a dataset's queries"),
        ("chunk-size", "a dataset's documents re-chunked at sizes in tokens, scored by document"),
    ):
        p = kinds.add_parser(name, help=text, description=text)
        p.add_argument("-m", "--models", required=True, help="comma-separated model specs")
        p.add_argument("-o", "--output-dir", default="results/stress", type=Path)
        p.add_argument("--seed", type=int, default=0, help="seed of every random choice")
        p.add_argument("--k", default="1,10", help="cut-offs (default 1,10)")
        p.add_argument("--bootstrap", type=int, default=2000, help="bootstrap resamples")
        p.add_argument("--no-cache", action="store_true", help="embed without the cache")
        if name == "needle":
            p.add_argument("--context-sizes", default="2k,8k,32k", help="tokens: 2k,8k,32k")
            p.add_argument("--depths", default="0,0.5,1", help="needle depths from 0 to 1")
            p.add_argument(
                "--language", default="en", help="the haystacks' language: en (default) or zh"
            )
        else:
            p.add_argument("--dataset", required=True, help="a dataset path (BEIR, eval set)")
            p.add_argument("--split", default="test")
        if name == "chunk-size":
            p.add_argument("--chunk-sizes", default="128,256,512,1024", help="sizes in tokens")
        elif name == "noise":
            p.add_argument("--noise", default="typo,case,truncate:0.5,shuffle", help="noise kinds")
            p.add_argument("--seeds", type=int, default=1, help="seeds per noise kind")


def _specs(args: argparse.Namespace) -> list[str]:
    if args.workload == "needle":
        language = "" if args.language == "en" else f"{args.language}:"
        return [f"needle:{language}{args.context_sizes}@{args.depths}"]
    if args.workload == "chunk-size":
        return [f"chunk-size:{args.chunk_sizes}"]
    star = f"*{args.seeds}" if args.seeds > 1 else ""
    return [f"noise:{kind.strip()}{star}" for kind in args.noise.split(",") if kind.strip()]


def _cutoff_list(value: str) -> list[int]:
    """``--k 1,10,100``: the cut-offs, or a ValueError naming the flag and the bad part."""
    parts = [part.strip() for part in str(value).split(",")]
    bad = [part for part in parts if not part.lstrip("-").isdigit()]
    if bad:
        raise ValueError(f"--k {value!r}: {bad[0]!r} is not a whole number; give e.g. --k 1,10,100")
    return [int(part) for part in parts]


def run(args: argparse.Namespace) -> int:
    """Evaluate every model on every point; write the JSON and Markdown; exit 1 when every
    model failed (a failed point is recorded with its error)."""
    from ..data.datasets import load_dataset
    from ..evaluation.evaluate import Evaluator
    from ..evaluation.metrics import parse_cutoffs
    from ..evaluation.workloads import evaluate_workload, parse_workloads
    from ..report.writers.stress import point_row, render_stress

    try:
        points = parse_workloads(_specs(args), seed=args.seed)
        k = parse_cutoffs(_cutoff_list(args.k), "--k")
        dataset = (
            load_dataset(args.dataset, split=args.split) if args.workload != "needle" else None
        )
    except (EmbedBenchError, ValueError) as exc:
        print(f"embedbench stress {args.workload}: {exc}", file=sys.stderr)
        return 2
    evaluator = Evaluator(
        cache=not args.no_cache, seed=args.seed, n_resamples=args.bootstrap, latency_passes=0
    )
    rows: list[dict[str, Any]] = []
    models = [m.strip() for m in args.models.split(",") if m.strip()]
    for model in models:
        for point in points:
            try:
                result = evaluate_workload(evaluator, model, dataset, point, k=k)
                row = point_row(result.name, point.to_dict(), result.data(), "passed")
            except EmbedBenchError as exc:
                row = point_row(model, point.to_dict(), None, "error")
                row["error"] = f"{type(exc).__name__}: {exc}"
            rows.append(row)
    name = dataset.name if dataset is not None else "synthetic haystacks"
    out = args.output_dir
    report = {"workload": args.workload, "seed": args.seed, "k": list(k), "points": rows}
    json_path = out / f"{args.workload}.json"
    md = [f"# embedbench stress {args.workload}", ""]
    md += render_stress({name: rows}, tablefmt="github")
    errors = [
        f"- {inert(r['model'])} {inert(r['id'])}: {inert(r['error'])}"
        for r in rows
        if r.get("error")
    ]
    md += ["## Errors", "", *errors, ""] if errors else []
    md_path = out / f"{args.workload}.md"
    # atomic, through a symlink to its target, as every report writer (core.io); a file not
    # written is one line naming it and exit 6, never a traceback or half a file
    for what, path, text in (
        (
            "stress JSON report",
            json_path,
            json.dumps(report, indent=2, sort_keys=True, default=str) + "\n",
        ),
        ("stress Markdown report", md_path, "\n".join(md) + "\n"),
    ):
        try:
            out.mkdir(parents=True, exist_ok=True)
            atomic_write_text(path, text)
        except OSError as exc:
            fix = "pass another --output-dir"
            print(write_failure(what, path, exc, fix), file=sys.stderr)
            return EXIT_ARTIFACT_FAILED
    print("\n".join(render_stress({name: rows})))
    print(f"wrote {json_path} and {md_path}")
    if errors:  # why, not only in the files
        print("errors:\n" + "\n".join(errors), file=sys.stderr)
    failed = {r["model"] for r in rows if r["status"] == "error"}
    return 1 if models and failed >= set(models) else 0

"""Do the cut-offs' stated levels hold on new queries? 20 seeded calibration/held-out splits.

For each seed ``s`` in ``range(--splits)``, :func:`~evaluation.cutoffs.cutoffs_of` draws
the random documents and the half split of the queries from ``s`` (what ``retrieval.cutoffs``
does with the run's seed), calibrates on one half and reports on the other. The model's index is
built once (documents from the cache) and every split reads the query vectors from the cache, so
a split costs one full ranking of every query. Figures:

* conformal (``alpha``, ``delta``): in how many splits the cut-off kept >= 1 - alpha of the
  held-out queries' relevant documents (pooled pairs), and >= 1 - alpha of the held-out queries
  whole (all their relevant documents: the quantity the guarantee is about). Target: at least
  1 - delta of the splits. Beside it, the pair-level cut-off of the module's first version (the
  PAC rank over the calibration half's relevant pairs pooled), on the same splits;
* each noise-floor level: in how many splits the held-out random-pair rate fell within the
  interval the level reported from its calibration queries (``expected_random_low/high``; target
  >= 90%), with the same interval computed as if pairs were independent (design effect 1) for
  comparison; in how many the aim lay within the held-out rate's own 95% interval; and the
  held-out rate's median and range against the aim.

Usage::

    python benchmarks/bench_cutoffs.py --cache /tmp/eb-cache-cutoffs [--splits 20]
        [--model SPEC] [--data ../shared/data/scifact] [--alpha 0.05] [--delta 0.1]
        [--json OUT]
"""

from __future__ import annotations

import json
import math
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # measure this checkout's package
from scifact import scifact_parser  # noqa: E402

from pytest_embedbench import load_dataset  # noqa: E402
from pytest_embedbench.cache.store import EmbeddingCache  # noqa: E402
from pytest_embedbench.evaluation.cutoffs import (  # noqa: E402
    _split,
    clopper_pearson,
    compute_cutoffs,
    conformal_threshold,
    incomparable_scores,
    pair_scores,
)
from pytest_embedbench.models.providers import ModelSpec, create_provider  # noqa: E402


def pair_level(relevant: dict, random: dict, seed: int, alpha: float, delta: float) -> float:
    """The first version's conformal cut-off: the PAC rank over pooled calibration pairs, and
    the share of held-out relevant pairs at or above it."""
    calib, held = _split(list(random), seed)
    pooled = np.concatenate([relevant[q] for q in calib if len(relevant[q])])
    threshold = conformal_threshold(pooled, alpha, delta)
    kept = np.concatenate([relevant[q] for q in held if len(relevant[q])])
    return float(np.mean(kept >= threshold))


def independent_range(random: dict, seed: int, threshold: float) -> tuple[float, float]:
    """The expected range of the held-out random-pair rate if every pair were independent
    (design effect 1): what the calibration alone would promise counting pairs, not queries."""
    calib, held = _split(list(random), seed)
    n_c = sum(len(random[q]) for q in calib)
    n_h = sum(len(random[q]) for q in held)
    passed = sum(int(np.sum(random[q] > threshold)) for q in calib)
    size = 1.0 / (1.0 / n_c + 1.0 / n_h)
    return clopper_pearson(passed / n_c * size, size)


def main() -> None:
    parser = scifact_parser(__doc__)
    parser.add_argument("--cache", required=True, help="the embedding cache folder")
    parser.add_argument("--splits", type=int, default=20)
    parser.add_argument("--alpha", type=float, default=0.05)
    parser.add_argument("--delta", type=float, default=0.1)
    parser.add_argument("--json", help="also write the per-split figures to this file")
    args = parser.parse_args()
    alpha, delta = args.alpha, args.delta
    dataset = load_dataset(args.data, split="test")
    print(f"dataset: {dataset}")
    t0 = time.perf_counter()
    retriever = create_provider(ModelSpec(args.model)).build(
        dataset.documents, cache=EmbeddingCache(args.cache)
    )
    print(f"index built in {time.perf_counter() - t0:.1f} s")
    incomparable = incomparable_scores(retriever)
    splits: list[dict[str, Any]] = []
    for seed in range(args.splits):
        t1 = time.perf_counter()
        relevant, random = pair_scores(retriever, dataset, seed=seed)
        cut = compute_cutoffs(
            relevant, random, seed=seed, alpha=alpha, delta=delta, incomparable=incomparable
        )
        if not cut.meaningful:
            print(f"no global cut-off for {args.model}: {cut.reason}")
            return
        c = cut.conformal
        row: dict[str, Any] = {
            "seed": seed,
            "conformal": {
                "threshold": c.threshold,
                "keeps_relevant": c.keeps_relevant,
                "keeps_relevant_interval": [c.keeps_relevant_low, c.keeps_relevant_high],
                "keeps_queries": c.keeps_queries,
                "keeps_queries_interval": [c.keeps_queries_low, c.keeps_queries_high],
                "pair_level_keeps_relevant": pair_level(relevant, random, seed, alpha, delta),
            },
            "levels": {},
        }
        for name, level in cut.levels.items():
            row["levels"][name] = {
                "aim": level.target,
                "threshold": level.threshold,
                "lets_random": level.lets_random,
                "interval": [level.lets_random_low, level.lets_random_high],
                "expected": [level.expected_random_low, level.expected_random_high],
                "independent_expected": list(independent_range(random, seed, level.threshold)),
                "keeps_relevant": level.keeps_relevant,
            }
        splits.append(row)
        print(
            f"split {seed:2d}: conformal {c.threshold:.4f} keeps {100 * c.keeps_relevant:.1f}% "
            f"of pairs, {100 * c.keeps_queries:.1f}% of queries whole (pair-level cut-off: "
            f"{100 * row['conformal']['pair_level_keeps_relevant']:.1f}%); lets random "
            + ", ".join(
                f"{n} {100 * v['lets_random']:.2f}% [{100 * v['expected'][0]:.2f}, "
                f"{100 * v['expected'][1]:.2f}]"
                for n, v in row["levels"].items()
            )
            + f" ({time.perf_counter() - t1:.1f} s)",
            flush=True,
        )
    summary = summarise(splits, alpha, delta)
    print()
    for line in summary["lines"]:
        print(line)
    if args.json:
        out = {"model": args.model, "alpha": alpha, "delta": delta, "splits": splits}
        out["summary"] = {k: v for k, v in summary.items() if k != "lines"}
        Path(args.json).write_text(json.dumps(out, indent=1, default=_json_float))


def _json_float(value: Any) -> Any:
    return None if isinstance(value, float) and not math.isfinite(value) else value


def summarise(splits: list[dict[str, Any]], alpha: float, delta: float) -> dict[str, Any]:
    n = len(splits)
    aim = 1 - alpha

    def count(flags: list[bool]) -> str:
        return f"{sum(flags)} of {n} ({100 * sum(flags) / n:.0f}%)"

    conf = [s["conformal"] for s in splits]
    pairs_ok = [c["keeps_relevant"] >= aim for c in conf]
    whole_ok = [c["keeps_queries"] >= aim for c in conf]
    old_ok = [c["pair_level_keeps_relevant"] >= aim for c in conf]
    keeps = [c["keeps_relevant"] for c in conf]
    old = [c["pair_level_keeps_relevant"] for c in conf]
    lines = [
        f"conformal (alpha={alpha:g}, delta={delta:g}; target: >= {100 * (1 - delta):.0f}% "
        "of splits)",
        f"  held-out relevant pairs kept >= {100 * aim:g}%: {count(pairs_ok)}; "
        f"median {100 * np.median(keeps):.1f}%, range {100 * min(keeps):.1f}-"
        f"{100 * max(keeps):.1f}%",
        f"  held-out queries kept whole >= {100 * aim:g}%: {count(whole_ok)}",
        f"  pair-level cut-off (before): {count(old_ok)}; median {100 * np.median(old):.1f}%, "
        f"range {100 * min(old):.1f}-{100 * max(old):.1f}%",
        "noise-floor levels (target: held-out rate within the reported range in >= 90%)",
    ]
    out: dict[str, Any] = {
        "conformal_pairs_ok": sum(pairs_ok),
        "conformal_queries_ok": sum(whole_ok),
        "pair_level_ok": sum(old_ok),
        "splits": n,
    }
    for name in splits[0]["levels"]:
        rows = [s["levels"][name] for s in splits]
        within = [r["expected"][0] <= r["lets_random"] <= r["expected"][1] for r in rows]
        naive = [
            r["independent_expected"][0] <= r["lets_random"] <= r["independent_expected"][1]
            for r in rows
        ]
        covered = [r["interval"][0] <= r["aim"] <= r["interval"][1] for r in rows]
        rates = [r["lets_random"] for r in rows]
        lines.append(
            f"  {name} (aim {100 * rows[0]['aim']:g}%): within the reported range "
            f"{count(within)} (counting pairs as independent: {count(naive)}); aim within "
            f"the held-out 95% interval {count(covered)}; held-out median "
            f"{100 * np.median(rates):.3f}%, range {100 * min(rates):.3f}-"
            f"{100 * max(rates):.3f}%"
        )
        out[name] = {
            "within_expected": sum(within),
            "within_independent_expected": sum(naive),
            "aim_in_heldout_interval": sum(covered),
        }
    out["lines"] = lines
    return out


if __name__ == "__main__":
    main()

"""Stress workloads: dataset transforms that ask how retrieval holds up under strain.

- :mod:`.noise`: typos, case, truncation, word shuffle and paraphrase of the queries;
- :mod:`.needle`: a needle fact at a depth of a long synthetic haystack;
- :mod:`.workloads`: the ``stress=[...]`` marker strings parsed into workload points, and
  :func:`evaluate_workload`, which runs one point for one model without pytest;
- :mod:`.cli`: ``embedbench stress needle|noise``.

- :mod:`.chunks`: the same documents re-chunked at each size in tokens, scored by document.

Usage::

    from pytest_embedbench import Evaluator
    from pytest_embedbench.stress import evaluate_workload, noisy_dataset, parse_workloads

    noisy = noisy_dataset(dataset, "typo", seed=0)
    (point,) = parse_workloads(["noise:typo*10"])
    result = evaluate_workload(Evaluator(), "bm25", dataset, point)
    result.delta("ndcg@10")          # paired bootstrap, stressed - clean
"""

from __future__ import annotations

from ..data.stress.needle import NeedlePoint, needle_dataset
from ..data.stress.noise import NOISE, noisy_dataset, parse_noise, perturb
from ..evaluation.workloads import STRESS, StressedResult, Workload, evaluate_workload, parse_workloads

__all__ = [
    "NOISE",
    "STRESS",
    "NeedlePoint",
    "StressedResult",
    "Workload",
    "evaluate_workload",
    "needle_dataset",
    "noisy_dataset",
    "parse_noise",
    "parse_workloads",
    "perturb",
]

"""Stress workloads: dataset transforms that ask how retrieval holds up under strain.

- :mod:`.noise`: typos, case, truncation, word shuffle and paraphrase of the queries;
- :mod:`.needle`: a needle fact at a depth of a long synthetic haystack;
- :mod:`.workloads`: the ``stress=[...]`` marker strings parsed into workload points.

Usage::

    from pytest_embedbench.stress import noisy_dataset, perturb
    noisy = noisy_dataset(dataset, "typo", seed=0)
"""

from __future__ import annotations

from .noise import NOISE, noisy_dataset, parse_noise, perturb

__all__ = ["NOISE", "noisy_dataset", "parse_noise", "perturb"]

"""Similarity cut-offs: the noise floor by hand, the conformal rank, and SciFact out of sample."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from pytest_embedbench import Evaluator, RetrievalDataset
from pytest_embedbench.cutoffs import (
    LEVELS,
    compute_cutoffs,
    conformal_rank,
    conformal_threshold,
    noise_floor,
    random_documents,
)
from pytest_embedbench.exceptions import ConfigError

MINILM = "hf:sentence-transformers/all-MiniLM-L6-v2"


def test_noise_floor_by_hand() -> None:
    scores = np.arange(1000, dtype=float)  # 0 .. 999
    assert noise_floor(scores, 0.01) == 989.0  # 990 .. 999 pass: 10 of 1000
    assert noise_floor(scores, 0.001) == 998.0  # 999 passes
    assert noise_floor(scores, 0.0001) == 999.0  # nothing may pass
    # ties at the floor never pass, so the share stays at most the target
    tied = np.array([0.0] * 97 + [1.0, 2.0, 3.0])
    assert noise_floor(tied, 0.05) == 0.0
    assert float(np.mean(tied > noise_floor(tied, 0.05))) == 0.03


def test_conformal_rank() -> None:
    assert conformal_rank(99, 0.05, None) == 5  # floor(0.05 * 100)
    assert conformal_rank(10, 0.05, None) == 0  # too few scores to exclude any
    assert conformal_threshold(np.arange(10.0), 0.05, None) == -math.inf
    # the PAC rank is smaller (safer): P(Binomial(n, alpha) <= r - 1) <= delta
    from scipy.stats import binom

    r = conformal_rank(200, 0.05, 0.1)
    assert 0 < r < conformal_rank(200, 0.05, None)
    assert binom.cdf(r - 1, 200, 0.05) <= 0.1 < binom.cdf(r, 200, 0.05)
    assert conformal_threshold(np.arange(200.0)[::-1], 0.05, 0.1) == float(r - 1)


def test_random_documents_are_unjudged_seeded_and_model_independent() -> None:
    ds = RetrievalDataset.from_dicts(
        {f"d{i}": f"text {i}" for i in range(100)},
        {"q1": "a", "q2": "b"},
        {"q1": {"d1": 1, "d2": 0}, "q2": {"d3": 1}},
    )
    a = random_documents(ds, seed=0, per_query=10)
    assert a == random_documents(ds, seed=0, per_query=10)
    assert a != random_documents(ds, seed=1, per_query=10)
    assert not {"d1", "d2"} & set(a["q1"]) and "d3" not in a["q2"]
    assert len(a["q1"]) == len(set(a["q1"])) == 10


def test_bad_alpha() -> None:
    with pytest.raises(ConfigError, match="alpha"):
        compute_cutoffs({"q": np.ones(3)}, {"q": np.ones(3)}, alpha=1.5)


def check_on_scifact(model: str, scifact_path: Path, cache: object) -> None:
    ev = Evaluator(cache=cache, latency_passes=0, n_resamples=200)  # type: ignore[arg-type]
    result = ev.evaluate(model, scifact_path, k=(10,))
    cut = result.cutoffs
    assert cut.calibration_queries == cut.heldout_queries == 150
    assert cut.random_pairs == 300 * 64
    for name, target in LEVELS.items():
        level = cut.levels[name]
        # calibrated on one half, the other half lets through 0.5x - 2x of the target
        assert 0.5 * target <= level.lets_random <= 2.0 * target, (name, level)
        assert level.calibration_lets_random <= target
    assert cut.levels["strict"].threshold > cut.levels["balanced"].threshold
    assert cut.levels["balanced"].threshold > cut.levels["loose"].threshold
    assert cut.conformal.keeps_relevant >= 1 - cut.alpha, cut.conformal
    assert result.to_dict()["cutoffs"]["levels"]["balanced"]["target"] == 0.01


def test_scifact_bm25(scifact_path: Path) -> None:
    check_on_scifact("bm25", scifact_path, False)


@pytest.mark.slow
def test_scifact_minilm(scifact_path: Path, scifact_cache: Path) -> None:
    pytest.importorskip("sentence_transformers")
    check_on_scifact(MINILM, scifact_path, scifact_cache)

"""Paired comparisons: p-values against scipy, Holm's correction, Comparison objects."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats as scipy_stats

from pytest_embedbench import ConfigError, compare_scores
from pytest_embedbench.evaluation.stats import holm


def pair(n: int, shift: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    base = rng.random(n)
    return base + shift + rng.normal(0, 0.15, n), base


@pytest.mark.parametrize("seed", range(5))
def test_t_test_equals_scipy_ttest_rel(seed: int) -> None:
    a, b = pair(50, 0.03, seed)
    ours = compare_scores(a, b, test="t")
    assert ours.p_value == pytest.approx(scipy_stats.ttest_rel(a, b).pvalue, rel=1e-10)
    assert float(ours) == pytest.approx((a - b).mean())


@pytest.mark.parametrize("seed", range(5))
def test_randomization_is_exact_for_small_n(seed: int) -> None:
    a, b = pair(11, 0.05, seed)
    ours = compare_scores(a, b, test="randomization", n_resamples=4096)
    ref = scipy_stats.permutation_test(
        (a, b),
        lambda x, y, axis: np.mean(x - y, axis=axis),
        permutation_type="samples",
        n_resamples=np.inf,
        vectorized=True,
    )
    assert ours.p_value == pytest.approx(ref.pvalue, abs=1e-12)


def test_randomization_monte_carlo_agrees_with_scipy() -> None:
    a, b = pair(300, 0.02, 7)
    ours = compare_scores(a, b, test="randomization", n_resamples=20_000, seed=3)
    ref = scipy_stats.permutation_test(
        (a, b),
        lambda x, y, axis: np.mean(x - y, axis=axis),
        permutation_type="samples",
        n_resamples=20_000,
        vectorized=True,
        random_state=3,
    )
    assert ours.p_value == pytest.approx(ref.pvalue, abs=0.01)
    again = compare_scores(a, b, test="randomization", n_resamples=20_000, seed=3)
    assert again.p_value == ours.p_value  # seeded


def test_bootstrap_p_value_agrees_with_its_interval_and_the_t_test() -> None:
    for shift, significant in [(0.08, True), (0.0, False)]:
        a, b = pair(200, shift, 11)
        boot = compare_scores(a, b, test="bootstrap", n_resamples=20_000)
        excludes_zero = boot.low > 0 or boot.high < 0
        assert (boot.p_value < 0.05) == excludes_zero == significant
        t = compare_scores(a, b, test="t")
        assert boot.p_value == pytest.approx(t.p_value, abs=0.02)


def test_holm_by_hand_and_comparison_fields() -> None:
    assert holm([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert holm([0.5, 0.9]) == pytest.approx([1.0, 1.0])  # 2 x 0.5, then the running max
    assert holm([0.04, 0.01]) == pytest.approx([0.04, 0.02])
    assert holm([]) == []
    a, b = pair(40, 0.1, 0)
    c = compare_scores(a, b, test="t", name="ndcg@10 a - b")
    assert c.significant() and c.low <= float(c) <= c.high and c.n == 40
    c.p_holm = 0.2
    assert not c.significant()
    assert "t p=" in repr(c) and c.to_dict()["p_holm"] == 0.2
    with pytest.raises(ConfigError, match="test='wilcoxon'"):
        compare_scores(a, b, test="wilcoxon")
    with pytest.raises(ConfigError, match="same queries"):
        compare_scores(a, b[:-1])

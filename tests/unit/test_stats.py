"""Bootstrap intervals, paired differences and the Estimate float."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
from scipy import stats as scipy_stats

from pytest_embedbench import ConfigError, Estimate, bootstrap, paired_bootstrap
from pytest_embedbench.evaluation.stats import bootstrap_interval


def test_estimate_is_a_float_with_an_interval() -> None:
    est = Estimate(0.65, low=0.6, high=0.7, n=300, per_query=[0.6, 0.7], name="ndcg@10")
    assert est >= 0.6 and est < 0.66 and est + 1 == pytest.approx(1.65)
    assert (est.low, est.high, est.n) == (0.6, 0.7, 300)
    assert str(est) == "0.6500 [0.6000, 0.7000] n=300"
    assert "ndcg@10=0.65" in repr(est)
    back = pickle.loads(pickle.dumps(est))
    assert isinstance(back, Estimate) and back == est
    assert (back.low, back.high, back.n, back.name) == (0.6, 0.7, 300, "ndcg@10")
    np.testing.assert_array_equal(back.per_query, [0.6, 0.7])


def test_bootstrap_is_seeded_and_brackets_the_mean() -> None:
    values = np.random.default_rng(1).random(300)
    a = bootstrap(values, seed=7)
    b = bootstrap(values, seed=7)
    c = bootstrap(values, seed=8)
    assert (a.low, a.high) == (b.low, b.high)
    assert (a.low, a.high) != (c.low, c.high)
    assert a.low < float(a) < a.high
    assert float(a) == pytest.approx(values.mean())


def test_bootstrap_agrees_with_scipy_percentile() -> None:
    values = np.random.default_rng(2).random(400)
    ours = bootstrap_interval(values, n_resamples=20_000, seed=0)
    ref = scipy_stats.bootstrap(
        (values,), np.mean, n_resamples=20_000, method="percentile", random_state=0
    ).confidence_interval
    # different random streams: the two intervals agree to Monte-Carlo error
    assert ours[0] == pytest.approx(ref.low, abs=2e-3)
    assert ours[1] == pytest.approx(ref.high, abs=2e-3)


def test_paired_bootstrap_is_bootstrap_of_differences() -> None:
    rng = np.random.default_rng(3)
    a, b = rng.random(200), rng.random(200)
    diff = paired_bootstrap(a, b, seed=5)
    ref = bootstrap(a - b, seed=5)
    assert float(diff) == pytest.approx((a - b).mean())
    assert (diff.low, diff.high) == (ref.low, ref.high)
    # a clear improvement has an interval wholly above zero
    better = paired_bootstrap(a + 0.2, a, seed=0)
    assert better.low > 0
    with pytest.raises(ConfigError, match="same queries"):
        paired_bootstrap(a, b[:-1])


def test_stratified_resampling_keeps_strata_sizes() -> None:
    # constant within each stratum: a stratified resample always has the same mean
    values = np.array([0.0] * 50 + [1.0] * 150)
    strata = np.array(["a"] * 50 + ["b"] * 150)
    low, high = bootstrap_interval(values, strata=strata, seed=0)
    assert low == pytest.approx(0.75) and high == pytest.approx(0.75)
    plain = bootstrap_interval(values, seed=0)
    assert plain[0] < 0.75 < plain[1]


def test_edge_cases_and_errors() -> None:
    empty = bootstrap([])
    assert np.isnan(float(empty)) and empty.n == 0
    one = bootstrap([0.5])
    assert (one.low, one.high) == (0.5, 0.5)
    with pytest.raises(ConfigError, match="level"):
        bootstrap([0.1, 0.2], level=1.5)
    with pytest.raises(ConfigError, match="NaN"):
        bootstrap([0.1, float("nan")])
    with pytest.raises(ConfigError, match="resample"):
        bootstrap([0.1], n_resamples=0)

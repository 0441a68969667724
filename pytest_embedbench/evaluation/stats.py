"""Bootstrap intervals over queries and paired differences between two runs.

Queries are the unit of resampling: a 95% percentile interval of the mean comes from
``n_resamples`` resamples of the queries with replacement, drawn from a seeded generator, so the
same inputs always give the same interval. Paired comparisons resample the same query indices
for both sides, which is a bootstrap of the per-query differences (stratified by subset when
strata are given).

Usage::

    from pytest_embedbench.stats import bootstrap, paired_bootstrap
    est = bootstrap(per_query_ndcg, seed=0)          # Estimate: est.low, est.high, est.n
    diff = paired_bootstrap(new, old, seed=0)       # Estimate of mean(new - old)
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, TypedDict

import numpy as np

from ..core.exceptions import ConfigError

__all__ = [
    "DEFAULT_RESAMPLES",
    "Comparison",
    "Estimate",
    "bootstrap",
    "bootstrap_interval",
    "compare_scores",
    "excludes_zero",
    "holm",
    "macro_mean",
    "minimum_detectable_effect",
    "paired_bootstrap",
]

DEFAULT_RESAMPLES = 10_000
#: Resamples are drawn in blocks of at most this many indices, to bound memory for big n.
_BLOCK = 4_000_000


class Resampling(TypedDict):
    """How a result draws its intervals: the keywords :func:`bootstrap` and
    :func:`paired_bootstrap` share (``strata``: each query's language, None for one)."""

    n_resamples: int
    level: float
    seed: int
    strata: Sequence[Any] | np.ndarray | None
    macro: bool


class Estimate(float):
    """A float (the mean over queries) that carries its bootstrap interval.

    ``low`` and ``high`` bound the interval, ``level`` is its coverage, ``n`` the number of
    queries and ``per_query`` the values it was computed from. Plain comparisons work::

        assert result.ndcg10 >= 0.6
        print(result.ndcg10)            # 0.6451 [0.6102, 0.6790] n=300
    """

    low: float
    high: float
    n: int
    level: float
    per_query: np.ndarray
    name: str | None
    #: the query ids of ``per_query`` and what was measured ("bm25 on support"), for messages
    query_ids: tuple[str, ...] | None
    context: str | None
    #: query id -> query text, so a failure shows what each listed query asks
    query_texts: Mapping[str, str] | None

    def __new__(
        cls,
        value: float,
        *,
        low: float,
        high: float,
        n: int,
        per_query: Sequence[float] | np.ndarray | None = None,
        level: float = 0.95,
        name: str | None = None,
        query_ids: Sequence[str] | None = None,
        context: str | None = None,
        query_texts: Mapping[str, str] | None = None,
    ) -> Estimate:
        obj = super().__new__(cls, value)
        obj.low = float(low)
        obj.high = float(high)
        obj.n = int(n)
        obj.level = float(level)
        obj.per_query = (
            np.asarray(per_query, dtype=np.float64) if per_query is not None else np.empty(0)
        )
        obj.name = name
        obj.query_ids = tuple(query_ids) if query_ids is not None else None
        obj.context = context
        obj.query_texts = query_texts
        return obj

    @property
    def value(self) -> float:
        """The point estimate as a plain float."""
        return float(self)

    @property
    def interval(self) -> tuple[float, float]:
        """``(low, high)``."""
        return (self.low, self.high)

    def __str__(self) -> str:
        return f"{float(self):.4f} [{self.low:.4f}, {self.high:.4f}] n={self.n}"

    def __repr__(self) -> str:
        label = f"{self.name}=" if self.name else ""
        return (
            f"Estimate({label}{float(self):.6g}, {int(round(self.level * 100))}% "
            f"[{self.low:.6g}, {self.high:.6g}], n={self.n})"
        )

    def __reduce__(self) -> tuple[Any, ...]:
        # float subclasses pickle through __reduce__; keep the interval across processes (xdist)
        return (
            _rebuild_estimate,
            (
                float(self),
                self.low,
                self.high,
                self.n,
                self.per_query,
                self.level,
                self.name,
                self.query_ids,
                self.context,
                self.query_texts,
            ),
        )

    def worst(self, n: int = 3) -> list[tuple[str, float]]:
        """The ``n`` lowest per-query values with their query ids (ties by id)."""
        ids = self.query_ids
        if ids is None or len(self.per_query) != len(ids):
            return []
        values = self.per_query
        order = sorted(range(len(values)), key=lambda i: (values[i], ids[i]))
        return [(ids[i], float(values[i])) for i in order[:n]]

    def to_dict(self) -> dict[str, float | int]:
        """``{"value", "low", "high", "n"}`` for reports."""
        return {"value": float(self), "low": self.low, "high": self.high, "n": self.n}


def _rebuild_estimate(
    value: float,
    low: float,
    high: float,
    n: int,
    per_query: np.ndarray,
    level: float,
    name: str | None,
    query_ids: tuple[str, ...] | None = None,
    context: str | None = None,
    query_texts: Mapping[str, str] | None = None,
) -> Estimate:
    return Estimate(
        value,
        low=low,
        high=high,
        n=n,
        per_query=per_query,
        level=level,
        name=name,
        query_ids=query_ids,
        context=context,
        query_texts=query_texts,
    )


def _check(level: float, n_resamples: int) -> None:
    if not 0.0 < level < 1.0:
        raise ConfigError(f"confidence level {level!r} must lie strictly between 0 and 1")
    if n_resamples < 1:
        raise ConfigError(f"n_resamples={n_resamples!r}: need at least 1 bootstrap resample")


def _resampled_means(
    values: np.ndarray,
    n_resamples: int,
    rng: np.random.Generator,
    strata: np.ndarray | None,
    macro: bool = False,
) -> np.ndarray:
    """Means of ``n_resamples`` resamples with replacement, drawn in memory-bounded blocks.

    With ``strata`` each stratum is resampled within itself, keeping its size, strata in
    sorted order; the mean is over all queries (as the point value), or with ``macro`` the
    mean of the strata's means (each stratum counts once, whatever its size)."""
    n = len(values)
    means = np.empty(n_resamples, dtype=np.float64)
    block = max(1, _BLOCK // max(n, 1))
    if strata is None:
        for start in range(0, n_resamples, block):
            stop = min(n_resamples, start + block)
            idx = rng.integers(0, n, size=(stop - start, n))
            means[start:stop] = values[idx].mean(axis=1)
        return means
    groups = [np.flatnonzero(strata == s) for s in np.unique(strata)]
    for start in range(0, n_resamples, block):
        stop = min(n_resamples, start + block)
        total = np.zeros(stop - start)
        for members in groups:
            idx = rng.integers(0, len(members), size=(stop - start, len(members)))
            drawn = values[members[idx]]
            total += drawn.mean(axis=1) if macro else drawn.sum(axis=1)
        means[start:stop] = total / (len(groups) if macro else n)
    return means


def _strata(strata: Sequence[Any] | np.ndarray | None, shape: tuple[int, ...]) -> np.ndarray | None:
    """``strata`` as an array, one per value (ConfigError when the shapes differ)."""
    if strata is None:
        return None
    strata_arr = np.asarray(strata)
    if strata_arr.shape != shape:
        raise ConfigError(
            f"strata has shape {strata_arr.shape}, values {shape}: give one per query"
        )
    return strata_arr


def macro_mean(values: Sequence[float] | np.ndarray, strata: Sequence[Any] | np.ndarray) -> float:
    """The mean of the strata's means (each stratum, a language, counts once): the macro
    average of a dataset in several languages. NaN when empty."""
    arr = np.asarray(values, dtype=np.float64)
    strata_arr = _strata(strata, arr.shape)
    assert strata_arr is not None
    if len(arr) == 0:
        return math.nan
    return float(np.mean([arr[strata_arr == s].mean() for s in np.unique(strata_arr)]))


def bootstrap_interval(
    values: Sequence[float] | np.ndarray,
    *,
    n_resamples: int = DEFAULT_RESAMPLES,
    level: float = 0.95,
    seed: int = 0,
    strata: Sequence[Any] | np.ndarray | None = None,
    macro: bool = False,
) -> tuple[float, float]:
    """Percentile bootstrap interval of the mean of ``values`` (NaN, NaN when empty);
    ``strata`` (one label a value): resampled within each stratum; ``macro``: of the mean of
    the strata's means."""
    _check(level, n_resamples)
    arr = np.asarray(values, dtype=np.float64)
    if arr.ndim != 1:
        raise ConfigError(f"bootstrap needs a 1-d array of per-query values, got shape {arr.shape}")
    if len(arr) == 0:
        return (math.nan, math.nan)
    if not np.all(np.isfinite(arr)):
        raise ConfigError("bootstrap: per-query values contain NaN or infinity")
    strata_arr = _strata(strata, arr.shape)
    if macro and strata_arr is None:
        raise ConfigError("bootstrap: macro=True needs strata (the language of each query)")
    rng = np.random.default_rng(seed)
    means = _resampled_means(arr, n_resamples, rng, strata_arr, macro)
    alpha = (1.0 - level) / 2.0
    low, high = np.quantile(means, [alpha, 1.0 - alpha])
    return (float(low), float(high))


def bootstrap(
    values: Sequence[float] | np.ndarray,
    *,
    n_resamples: int = DEFAULT_RESAMPLES,
    level: float = 0.95,
    seed: int = 0,
    strata: Sequence[Any] | np.ndarray | None = None,
    macro: bool = False,
    name: str | None = None,
) -> Estimate:
    """The mean of ``values`` as an :class:`Estimate` with its percentile bootstrap interval.

    ``strata`` (one label a value, e.g. each query's language) resamples within each stratum,
    keeping its size; ``macro`` makes the estimate the mean of the strata's means (the macro
    average over languages), its interval from the same stratified resamples::

        est = bootstrap(ndcg, strata=["en", "en", "zh"], macro=True)   # (mean(en) + zh) / 2
    """
    arr = np.asarray(values, dtype=np.float64)
    low, high = bootstrap_interval(
        arr, n_resamples=n_resamples, level=level, seed=seed, strata=strata, macro=macro
    )
    if macro and len(arr):
        mean = macro_mean(arr, strata)  # type: ignore[arg-type]
    else:
        mean = float(arr.mean()) if len(arr) else math.nan
    return Estimate(mean, low=low, high=high, n=len(arr), per_query=arr, level=level, name=name)


def paired_bootstrap(
    a: Sequence[float] | np.ndarray,
    b: Sequence[float] | np.ndarray,
    *,
    n_resamples: int = DEFAULT_RESAMPLES,
    level: float = 0.95,
    seed: int = 0,
    strata: Sequence[Any] | np.ndarray | None = None,
    macro: bool = False,
    name: str | None = None,
) -> Estimate:
    """Mean of ``a - b`` over paired queries, with the interval from resampling the same queries.

    ``a[i]`` and ``b[i]`` must score the same query. The interval lies wholly below 0 when
    ``a`` is significantly worse at this level. ``strata`` and ``macro`` as in
    :func:`bootstrap` (a dataset in several languages: resampled within each language, the
    macro average's difference).
    """
    arr_a = np.asarray(a, dtype=np.float64)
    arr_b = np.asarray(b, dtype=np.float64)
    if arr_a.shape != arr_b.shape:
        raise ConfigError(
            f"paired comparison needs the same queries on both sides: {arr_a.shape} vs "
            f"{arr_b.shape}"
        )
    return bootstrap(
        arr_a - arr_b,
        n_resamples=n_resamples,
        level=level,
        seed=seed,
        strata=strata,
        macro=macro,
        name=name,
    )


def minimum_detectable_effect(
    diff: Sequence[float] | np.ndarray, *, alpha: float = 0.05, power: float = 0.8
) -> float:
    """The smallest mean difference a paired test over these queries detects with ``power``.

    Normal approximation to the paired bootstrap (whose percentile interval of the mean tends
    to mean ± z·SE), two-sided at ``alpha``::

        MDE = (z[1 - alpha/2] + z[power]) · sd(d) / sqrt(n)

    with ``d`` the per-query differences (current - baseline), ``sd`` their sample standard
    deviation (ddof=1) and ``n`` their number; at alpha 0.05 and 80% power the factor is
    1.960 + 0.842 = 2.802 (Cohen, *Statistical Power Analysis*, 1988, ch. 2; van Belle,
    *Statistical Rules of Thumb*, 2.3). A drop smaller than this is likely to be missed, so a
    non-significant drop says little unless the MDE is below the tolerance. NaN under 2 queries.
    """
    from scipy.stats import norm

    arr = np.asarray(diff, dtype=np.float64)
    if len(arr) < 2:
        return math.nan
    factor = float(norm.ppf(1.0 - alpha / 2.0) + norm.ppf(power))
    return factor * float(arr.std(ddof=1)) / math.sqrt(len(arr))


TESTS = ("bootstrap", "t", "randomization")


def excludes_zero(low: float | None, high: float | None) -> bool:
    """The one rule for a difference without a p-value (a paired bootstrap's): significant when
    its 95% interval ``[low, high]`` lies wholly above or below 0 (False without an interval,
    or with a NaN bound)."""
    return bool(low is not None and high is not None and (high < 0 or low > 0))


class Comparison:
    """A paired comparison of two per-query arrays: the mean difference ``a - b`` with its
    bootstrap interval, and a two-sided p-value from the chosen test.

    ``p_holm`` is set when the comparison is one of several (see :func:`holm`).
    """

    def __init__(
        self, difference: Estimate, p_value: float, test: str, n_resamples: int | None
    ) -> None:
        self.difference = difference
        self.p_value = float(p_value)
        self.test = test
        self.n_resamples = n_resamples
        self.p_holm: float | None = None

    @property
    def low(self) -> float:
        return self.difference.low

    @property
    def high(self) -> float:
        return self.difference.high

    @property
    def n(self) -> int:
        return self.difference.n

    def significant(self, alpha: float = 0.05) -> bool:
        """p (Holm-adjusted when set) below ``alpha``."""
        return (self.p_holm if self.p_holm is not None else self.p_value) < alpha

    def __float__(self) -> float:
        return float(self.difference)

    def __repr__(self) -> str:
        holm = f", p_holm={self.p_holm:.4g}" if self.p_holm is not None else ""
        return (
            f"Comparison({self.difference.name or 'a - b'}: {float(self.difference):+.4f} "
            f"[{self.low:+.4f}, {self.high:+.4f}], n={self.n}, {self.test} "
            f"p={self.p_value:.4g}{holm})"
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            **self.difference.to_dict(),
            "p_value": self.p_value,
            "p_holm": self.p_holm,
            "test": self.test,
        }


def paired_t_pvalue(diff: np.ndarray) -> float:
    """Two-sided p-value of the paired t-test on per-query differences (scipy ttest_rel)."""
    from scipy import stats as scipy_stats

    n = len(diff)
    if n < 2:
        return math.nan
    sd = diff.std(ddof=1)
    if sd == 0:
        return 1.0 if diff.mean() == 0 else 0.0
    t = diff.mean() / (sd / math.sqrt(n))
    return float(2.0 * scipy_stats.t.sf(abs(t), df=n - 1))


def randomization_pvalue(diff: np.ndarray, *, n_resamples: int, seed: int) -> float:
    """Fisher's paired randomization test: flip the sign of each query's difference.

    Two-sided p = share of sign assignments whose |mean| reaches the observed |mean|. Every
    assignment is enumerated when there are no more than ``n_resamples`` of them (exact, as
    scipy's ``permutation_test`` with ``permutation_type="samples"``); otherwise
    ``n_resamples`` random ones are drawn with ``seed`` and p = (hits + 1) / (draws + 1).
    """
    n = len(diff)
    if n == 0:
        return math.nan
    observed = abs(diff.mean())
    # a float tolerance, as scipy uses, so ties with the observed statistic count
    tol = observed * 1e-14 + 1e-15
    if n <= 20 and 2**n <= n_resamples:
        signs = ((np.arange(2**n)[:, None] >> np.arange(n)) & 1) * 2 - 1
        means = np.abs((signs * diff).mean(axis=1))
        return float((means >= observed - tol).mean())
    rng = np.random.default_rng(seed)
    hits = 0
    block = max(1, _BLOCK // n)
    for start in range(0, n_resamples, block):
        size = min(block, n_resamples - start)
        signs = rng.integers(0, 2, size=(size, n)) * 2 - 1
        hits += int((np.abs((signs * diff).mean(axis=1)) >= observed - tol).sum())
    return (hits + 1) / (n_resamples + 1)


def bootstrap_pvalue(
    diff: np.ndarray,
    *,
    n_resamples: int,
    seed: int,
    strata: np.ndarray | None = None,
    macro: bool = False,
) -> float:
    """Two-sided bootstrap p-value: resampled means shifted to the null (mean 0) that reach
    the observed |mean|, as (hits + 1) / (resamples + 1) (Efron and Tibshirani, 16.4);
    ``strata``/``macro`` as in :func:`bootstrap` (the macro mean, resampled within strata)."""
    n = len(diff)
    if n == 0:
        return math.nan
    rng = np.random.default_rng(seed)
    means = _resampled_means(diff, n_resamples, rng, strata, macro)
    point = macro_mean(diff, strata) if macro and strata is not None else diff.mean()
    observed = abs(point)
    hits = int((np.abs(means - point) >= observed).sum())
    return (hits + 1) / (n_resamples + 1)


def macro_weighted(diff: np.ndarray, strata: Sequence[Any] | np.ndarray) -> np.ndarray:
    """``diff`` scaled so its plain mean is the macro mean over ``strata``: each value times
    n / (strata * its stratum's size). A sign-flip test of these flips each query's
    difference and weighs it as the macro average does."""
    labels, inverse, counts = np.unique(np.asarray(strata), return_inverse=True, return_counts=True)
    return diff * (len(diff) / (len(labels) * counts[inverse]))


def compare_scores(
    a: Sequence[float] | np.ndarray,
    b: Sequence[float] | np.ndarray,
    *,
    test: str = "bootstrap",
    seed: int = 0,
    n_resamples: int = DEFAULT_RESAMPLES,
    level: float = 0.95,
    name: str | None = None,
    strata: Sequence[Any] | np.ndarray | None = None,
) -> Comparison:
    """Compare paired per-query scores: difference ``a - b``, its interval and a p-value.

    ``test`` is ``"bootstrap"`` (paired bootstrap), ``"t"`` (paired t-test) or
    ``"randomization"`` (Fisher's sign-flip test, seeded). The interval is always the paired
    percentile bootstrap.

    ``strata`` (each query's language, in a dataset in several languages): the difference is
    that of the macro averages (the mean of the per-language means); the bootstrap resamples
    within each language, and the sign-flip and t tests read each query's difference weighted
    as the macro average weighs it (the t test's variance then also holds the spread between
    the languages' means, so it errs on the side of no difference).

    Usage::

        c = compare_scores(new_ndcg, old_ndcg, test="t")
        c.difference, c.low, c.high, c.p_value
    """
    if test not in TESTS:
        raise ConfigError(f"test={test!r}: use one of {list(TESTS)}")
    difference = paired_bootstrap(
        a,
        b,
        n_resamples=n_resamples,
        level=level,
        seed=seed,
        name=name,
        strata=strata,
        macro=strata is not None,
    )
    diff = difference.per_query
    strata_arr = _strata(strata, diff.shape)
    weighted = diff if strata_arr is None else macro_weighted(diff, strata_arr)
    if test == "t":
        p = paired_t_pvalue(weighted)
    elif test == "randomization":
        p = randomization_pvalue(weighted, n_resamples=n_resamples, seed=seed)
    else:
        p = bootstrap_pvalue(
            diff, n_resamples=n_resamples, seed=seed, strata=strata_arr, macro=strata is not None
        )
    return Comparison(difference, p, test, None if test == "t" else n_resamples)


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm-Bonferroni adjusted p-values, in the order given (step-down, monotone, <= 1)."""
    m = len(p_values)
    order = sorted(range(m), key=lambda i: p_values[i])
    adjusted = [0.0] * m
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p_values[i]))
        adjusted[i] = running
    return adjusted

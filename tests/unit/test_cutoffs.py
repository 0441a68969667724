"""Similarity cut-offs: the noise floor by hand, the conformal rank, the query-level guarantee
checked by simulation, intervals, the too-small and not-comparable cases, and SciFact."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from pytest_embedbench import Evaluator, RetrievalDataset
from pytest_embedbench.core.exceptions import ConfigError
from pytest_embedbench.evaluation.cutoffs import (
    DISTRIBUTION_BINS,
    LEVELS,
    _split,
    clopper_pearson,
    clustered_interval,
    compute_cutoffs,
    conformal_rank,
    conformal_threshold,
    cutoffs_for,
    incomparable_scores,
    noise_floor,
    query_statistic,
    random_documents,
    smallest_alpha,
)
from pytest_embedbench.report.writers.stress import cutoff_rows, render_cutoffs

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
    assert conformal_rank(0, 0.05, 0.1) == 0
    assert conformal_threshold(np.arange(10.0), 0.05, None) == -math.inf
    # the PAC rank is smaller (safer): P(Binomial(n, alpha) <= r - 1) <= delta
    from scipy.stats import binom

    r = conformal_rank(200, 0.05, 0.1)
    assert 0 < r < conformal_rank(200, 0.05, None)
    assert binom.cdf(r - 1, 200, 0.05) <= 0.1 < binom.cdf(r, 200, 0.05)
    assert conformal_threshold(np.arange(200.0)[::-1], 0.05, 0.1) == float(r - 1)


def test_smallest_alpha_is_where_the_rank_starts() -> None:
    for n in (1, 5, 22, 150):
        a = smallest_alpha(n, 0.1)
        assert (1 - a) ** n == pytest.approx(0.1)
        assert conformal_rank(n, a * 1.001, 0.1) == 1
        assert conformal_rank(n, a * 0.999, 0.1) == 0
    assert smallest_alpha(19, None) == 0.05  # floor(0.05 * 20) = 1
    assert conformal_rank(19, 0.05, None) == 1
    assert math.isnan(smallest_alpha(0, 0.1))


def test_query_statistic_by_hand() -> None:
    rel = np.array([0.9, 0.1, 0.5])
    assert query_statistic(rel) == 0.1  # keep all: the lowest
    assert query_statistic(rel, 0.5) == 0.5  # keep 2 of 3: the 2nd highest
    assert query_statistic(rel, 0.3) == 0.9  # keep 1 of 3
    ten = np.arange(10.0)
    assert query_statistic(ten, 0.7) == 3.0  # 7 of 10 (0.7 * 10 is 7.000000000000001)
    assert math.isnan(query_statistic(np.empty(0)))
    # the cut-off keeps the share exactly when it is at or below the statistic
    for t in np.linspace(-1, 10, 45):
        assert (np.mean(ten >= t) >= 0.7) == (t <= query_statistic(ten, 0.7))


def _draw(rng: np.random.Generator, n: int) -> tuple[dict, dict]:
    """``n`` queries whose relevant scores share a query effect (strong within-query
    correlation) and who have 1-8 relevant documents; 16 random pairs each. Scores in (-1, 1)."""
    sizes = rng.integers(1, 9, size=n)
    owner = np.repeat(np.arange(n), sizes)
    scores = np.tanh(0.4 + 0.25 * (rng.normal(size=n)[owner] + 0.3 * rng.normal(size=len(owner))))
    noise = np.tanh(0.25 * (rng.normal(size=(n, 1)) + rng.normal(size=(n, 16))) - 0.2)
    ids = [f"q{i:05d}" for i in range(n)]
    parts = np.split(scores, np.cumsum(sizes)[:-1])
    return dict(zip(ids, parts, strict=True)), dict(zip(ids, noise, strict=True))


def test_query_level_guarantee_holds_where_the_pair_level_one_failed() -> None:
    """200 seeded draws of 80 queries (40 calibrate): the query-level cut-off keeps all of a
    new query's relevant documents with probability >= 1 - alpha in at least 1 - delta of the
    draws; the old pair-level cut-off (the relevant pairs pooled as if independent) keeps
    >= 1 - alpha of new relevant pairs in far fewer. Truth: 20,000 queries of the same law."""
    alpha, delta, draws = 0.1, 0.1, 200
    population, _ = _draw(np.random.default_rng(12345), 20_000)
    lowest = np.sort([v.min() for v in population.values()])
    pairs = np.sort(np.concatenate(list(population.values())))

    def share_at_or_above(sorted_values: np.ndarray, t: float) -> float:
        return 1.0 - np.searchsorted(sorted_values, t, side="left") / len(sorted_values)

    query_short = pair_short = 0
    for seed in range(draws):
        relevant, random = _draw(np.random.default_rng(seed), 80)
        calib, _ = _split(list(random), seed)
        stats = np.array([query_statistic(relevant[q]) for q in calib])
        t_query = conformal_threshold(stats, alpha, delta)
        t_pair = conformal_threshold(np.concatenate([relevant[q] for q in calib]), alpha, delta)
        query_short += share_at_or_above(lowest, t_query) < 1 - alpha
        pair_short += share_at_or_above(pairs, t_pair) < 1 - alpha
    assert query_short / draws <= delta  # measured: 0.075
    assert pair_short / draws >= 2 * delta  # measured: 0.26
    # compute_cutoffs takes the same cut-off
    relevant, random = _draw(np.random.default_rng(0), 80)
    cut = compute_cutoffs(relevant, random, seed=0, alpha=alpha, delta=delta)
    calib, _ = _split(list(random), 0)
    stats = np.array([query_statistic(relevant[q]) for q in calib])
    assert cut.conformal.threshold == conformal_threshold(stats, alpha, delta)
    assert cut.conformal_queries == 40
    assert cut.conformal.guarantee == (
        "With probability >= 90% over the draw of the 40 calibration queries, a new query "
        "drawn like them (with a relevant document) keeps all of its relevant documents at "
        "this cut-off with probability >= 90%."
    )


def test_clustered_interval_covers_where_the_pair_interval_does_not() -> None:
    """Random-pair rates that differ by query: over 200 seeded draws of 100 queries x 64
    pairs, the interval clustered by query covers the true rate in about 95%; a
    Clopper-Pearson interval that counts pairs as independent covers far less."""
    truth, clustered, naive = 0.02, 0, 0
    for seed in range(200):
        rng = np.random.default_rng(seed)
        rates = rng.beta(0.2, 0.2 / truth - 0.2, size=100)  # mean 0.02, most queries near 0
        passed = rng.binomial(64, rates)
        share, low, high = clustered_interval(passed, np.full(100, 64))
        assert low <= share <= high
        clustered += low <= truth <= high
        n_low, n_high = clopper_pearson(passed.sum(), 6400)
        naive += n_low <= truth <= n_high
    assert clustered >= 180  # measured: 187
    assert naive <= 150  # measured: 113
    # independent pairs: a design effect of 1, the plain Clopper-Pearson interval
    share, low, high = clustered_interval([1] * 10 + [0] * 90, [1] * 100)
    cp = clopper_pearson(10, 100)
    assert share == 0.1 and low == pytest.approx(cp[0], rel=0.05)
    assert high == pytest.approx(cp[1], rel=0.05)
    assert all(math.isnan(x) for x in clustered_interval([], []))


def test_every_figure_has_an_interval_around_it_and_is_seeded() -> None:
    relevant, random = _draw(np.random.default_rng(7), 300)
    cut = compute_cutoffs(relevant, random, seed=3)
    assert cut.meaningful and cut.reason == ""
    for level in [*cut.levels.values(), cut.conformal]:
        for name in ("keeps_relevant", "lets_random", "keeps_queries"):
            value = getattr(level, name)
            low, high = getattr(level, f"{name}_low"), getattr(level, f"{name}_high")
            assert 0.0 <= low <= value <= high <= 1.0, (level.name, name)
        assert level.guarantee
    for level in cut.levels.values():
        assert level.expected_random_low <= level.target <= level.expected_random_high
        assert level.guarantee.startswith("An estimate, not a guarantee")
    assert cut.conformal.guarantee.startswith("With probability >= 90%")
    assert cut.conformal_queries == 150 and cut.supported_alpha == smallest_alpha(150, 0.1)
    assert compute_cutoffs(relevant, random, seed=3).to_dict() == cut.to_dict()
    other = compute_cutoffs(relevant, random, seed=4)
    assert other.conformal.threshold != cut.conformal.threshold
    data = cut.to_dict()
    assert data["levels"]["balanced"]["lets_random_high"] > 0
    assert data["conformal"]["keeps_queries_low"] > 0


def test_relevant_share_keeps_a_share_of_each_query() -> None:
    relevant, random = _draw(np.random.default_rng(8), 200)
    every = compute_cutoffs(relevant, random, seed=0)
    half = compute_cutoffs(relevant, random, seed=0, relevant_share=0.5)
    assert half.conformal.threshold > every.conformal.threshold
    assert "keeps at least 50% of its relevant documents" in half.conformal.guarantee
    with pytest.raises(ConfigError, match="relevant_share"):
        compute_cutoffs(relevant, random, relevant_share=0.0)


def test_too_few_calibration_queries_say_what_they_support() -> None:
    relevant, random = _draw(np.random.default_rng(1), 10)  # 5 calibrate
    cut = compute_cutoffs(relevant, random, seed=0, alpha=0.05, delta=0.1)
    support = 1 - 0.1 ** (1 / 5)
    assert cut.conformal.threshold == -math.inf and cut.to_dict()["conformal"]["threshold"] is None
    assert cut.supported_alpha == pytest.approx(support)
    message = (
        "5 calibration queries are too few for alpha=0.05 at delta=0.1 (the smallest alpha "
        f"they support is {support:.4g}); every result is kept."
    )
    assert cut.conformal.guarantee == "No cut-off: " + message
    assert message in cut.notes
    assert any("strict (0.1%)" in note and "too few" in note for note in cut.notes)
    # at the level they support, there is a cut-off
    ok = compute_cutoffs(relevant, random, seed=0, alpha=support * 1.01, delta=0.1)
    assert math.isfinite(ok.conformal.threshold)
    marginal = compute_cutoffs(relevant, random, seed=0, delta=None)
    assert "(the smallest alpha they support is 0.1667)" in marginal.conformal.guarantee


def test_unbounded_scores_get_no_cut_off() -> None:
    relevant, random = _draw(np.random.default_rng(2), 40)
    scaled = {q: 12.0 * v + 12.0 for q, v in relevant.items()}  # bm25-like: 0 .. 24
    cut = compute_cutoffs(scaled, {q: 12.0 * v + 12.0 for q, v in random.items()})
    assert not cut.meaningful and "outside [-1, 1]" in cut.reason
    data = cut.to_dict()
    assert data["conformal"]["threshold"] is None and data["conformal"]["lets_random"] is None
    assert all(level["threshold"] is None for level in data["levels"].values())
    assert cut.conformal.guarantee.startswith("No cut-off: a global cut-off has no meaning here")
    told = compute_cutoffs(relevant, random, incomparable="made up")
    assert not told.meaningful and told.reason == "made up"


def test_bm25_is_not_comparable_across_queries() -> None:
    pytest.importorskip("bm25s")
    from pytest_embedbench.models.providers import ModelSpec, create_provider

    docs = {f"d{i}": f"alpha beta {'gamma ' * (i % 3)}text {i}" for i in range(30)}
    ds = RetrievalDataset.from_dicts(
        docs,
        {f"q{i}": f"gamma text {i}" for i in range(6)},
        {f"q{i}": {f"d{i}": 1} for i in range(6)},
    )
    provider = create_provider(ModelSpec("bm25"))
    cut = cutoffs_for(provider, ds, seed=0)
    assert not cut.meaningful and cut.reason.startswith("bm25 scores are sums of term weights")
    assert math.isnan(cut.conformal.threshold)
    assert incomparable_scores(provider.build(ds.documents)) == cut.reason
    # a fusion of two bm25 legs scores by rank only: comparable, and a note says what it means
    fused = cutoffs_for(create_provider(ModelSpec("hybrid:bm25+bm25")), ds, seed=0)
    assert fused.meaningful and any("cut-offs on fused rank" in n for n in fused.notes)


def _record(model: str, cut: object) -> dict:
    return {
        "nodeid": f"test_x.py::test[{model}]",
        "model": model,
        "dataset": "tiny",
        "status": "passed",
        "result": {"cutoffs": cut.to_dict()},  # type: ignore[attr-defined]
    }


def test_terminal_shows_intervals_the_guarantee_and_why_bm25_has_none() -> None:
    relevant, random = _draw(np.random.default_rng(7), 300)
    good = compute_cutoffs(relevant, random, seed=3)
    bad = compute_cutoffs(relevant, random, seed=3, incomparable="bm25 scores are unbounded")
    rows = cutoff_rows([_record("minilm", good), _record("bm25", bad)])
    assert {r["meaningful"] for r in rows["tiny"]} == {True, False}
    text = "\n".join(render_cutoffs(rows))
    assert "bm25: no global cut-off: bm25 scores are unbounded" in text
    assert f"minilm conformal: {good.conformal.guarantee}" in text
    level = good.levels["balanced"]
    lets = f"{100 * level.lets_random:.2f}% ({100 * level.lets_random_low:.2f}-"
    assert lets in text
    assert "bm25 " not in text.split("no global cut-off")[0]  # no bm25 rows with 0.0
    # a row without intervals (a report written before them) still renders
    old = {"model": "m", "name": "strict", "target": 0.001, "threshold": 0.5}
    assert "0.5000" in "\n".join(render_cutoffs({"d": [old | {"keeps_relevant": 0.5}]}))


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
    with pytest.raises(ConfigError, match="delta"):
        compute_cutoffs({"q": np.ones(3)}, {"q": np.ones(3)}, delta=0.0)


def check_on_scifact(model: str, scifact_path: Path, cache: object) -> None:
    ev = Evaluator(cache=cache, latency_passes=0, n_resamples=200)  # type: ignore[arg-type]
    result = ev.evaluate(model, scifact_path, k=(10,))
    cut = result.cutoffs
    assert cut.calibration_queries == cut.heldout_queries == 150
    assert cut.random_pairs == 300 * 64
    assert cut.meaningful, cut.reason
    for name, target in LEVELS.items():
        level = cut.levels[name]
        assert level.calibration_lets_random <= target
        # the held-out rate falls in the range expected if the aim carries over
        assert level.expected_random_low <= level.lets_random <= level.expected_random_high
    assert cut.levels["strict"].threshold > cut.levels["balanced"].threshold
    assert cut.levels["balanced"].threshold > cut.levels["loose"].threshold
    conformal = cut.conformal
    assert conformal.keeps_queries_high >= 1 - cut.alpha, conformal
    assert conformal.keeps_relevant_low <= conformal.keeps_relevant <= conformal.keeps_relevant_high
    data = result.to_dict()["cutoffs"]
    assert data["levels"]["balanced"]["target"] == 0.01
    assert data["conformal"]["guarantee"].startswith("With probability >= 90% over the draw")


@pytest.mark.slow
def test_scifact_bm25_has_no_cut_off(scifact_path: Path) -> None:
    ev = Evaluator(cache=False, latency_passes=0, n_resamples=200)
    cut = ev.evaluate("bm25", scifact_path, k=(10,)).cutoffs
    assert not cut.meaningful and "bm25" in cut.reason
    assert cut.to_dict()["conformal"]["threshold"] is None


@pytest.mark.slow
def test_scifact_minilm(scifact_path: Path, scifact_cache: Path) -> None:
    pytest.importorskip("sentence_transformers")
    check_on_scifact(MINILM, scifact_path, scifact_cache)


def test_the_held_out_scores_are_kept_as_histograms_over_every_pair_scores_range() -> None:
    relevant, random = _draw(np.random.default_rng(8), 40)
    relevant["q00000"] = np.array([-math.inf, *relevant["q00000"]])  # a pair never returned
    cut = compute_cutoffs(relevant, random, seed=0)
    found = cut.to_dict()["distribution"]
    assert found["half"] == "held-out" and len(found["edges"]) == DISTRIBUTION_BINS + 1
    every = np.concatenate([v for s in (relevant, random) for v in s.values()])
    finite = every[np.isfinite(every)]
    assert found["edges"][0] == round(float(finite.min()), 6)
    assert found["edges"][-1] == round(float(finite.max()), 6)
    held = [q for q in random if q not in _split(list(random), 0)[0]]
    assert sum(found["random"]) == sum(len(random[q]) for q in held)
    unscored = 1 if "q00000" in held else 0
    assert found["relevant_unscored"] == unscored
    assert sum(found["relevant"]) + unscored == sum(len(relevant[q]) for q in held)
    # the thresholds fall inside the bins, so the report can draw each as a line
    for level in [*cut.levels.values(), cut.conformal]:
        if math.isfinite(level.threshold):
            assert found["edges"][0] <= level.threshold <= found["edges"][-1]
    # scores without a meaningful cut-off have no picture either
    loose = compute_cutoffs(relevant, random, seed=0, incomparable="bm25 scores are sums")
    assert loose.to_dict()["distribution"] == {}

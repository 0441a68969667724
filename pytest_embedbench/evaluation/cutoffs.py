"""Similarity cut-offs against a measured noise floor, and a conformal cut-off for recall.

A search box that shows only results above a score needs a cut-off, and no single number fits
every model (002_9629ab742594b964.txt, "Cutoffs": a cosine distance of 0.6 lets nearly every
random passage through for one model and keeps 72-87% of relevant ones for another). So the
cut-offs are measured per model and dataset, on a seeded half of the queries (calibration),
and reported on the other half (held-out):

- the **noise floor**: the scores of a fixed-seed random sample of 64 unjudged documents per
  query (the same documents for every model);
- **strict / balanced / loose**: the scores above which 0.1% / 1% / 5% of the calibration
  queries' random pairs fall;
- **conformal**: a cut-off with a stated guarantee for recall on new queries (below).

The query is the unit, not the pair. Pairs of one query are not independent: a query whose
words are all over the corpus lifts all of its random pairs at once, and a query the model
misreads drops all of its relevant ones. A pair-level calibration (this module's first
version) treated 339 relevant pairs as 339 independent draws, and on SciFact its "keeps >= 95%"
cut-off kept 88.7% on the held-out half; its noise-floor levels let through 2-5x their aim.

**Conformal** (split conformal over queries: Vovk, Gammerman and Shafer, *Algorithmic Learning
in a Random World*, 2005; Angelopoulos and Bates, "A Gentle Introduction to Conformal
Prediction", 2021, sections 1 and 3.2). Each calibration query with ``m_q >= 1`` relevant
documents gives one number, :func:`query_statistic`: ``s_q``, the ``ceil(relevant_share *
m_q)``-th highest of its relevant scores (with the default ``relevant_share=1.0``, its lowest).
A cut-off ``t`` (a score at or above it passes) keeps at least ``relevant_share`` of a query's
relevant documents exactly when ``t <= s_q``. The cut-off is the ``r``-th smallest of the ``n``
calibration queries' ``s_q``:

- ``delta`` given (the default 0.1): the training-conditional (PAC) rank of Vovk,
  "Conditional validity of inductive conformal predictors" (ACML 2012), the largest ``r``
  with ``P(Binomial(n, alpha) <= r - 1) <= delta``. Guarantee: *with probability >= 1 - delta
  over the draw of the calibration queries, a new query exchangeable with them keeps all (or
  ``relevant_share``) of its relevant documents with probability >= 1 - alpha*. It holds for
  any score distribution, ties included: with ``G(x) = P(s < x)`` for a new query's ``s``, the
  ``G(s_q)`` are independent and no larger than uniform in distribution, so ``G(s_(r)) >
  alpha`` needs fewer than ``r`` of them at or below ``alpha``: probability at most
  ``P(Binomial(n, alpha) <= r - 1)``. Averaged over new queries, each keeps at least
  ``(1 - alpha) * relevant_share`` of its relevant documents.
- ``delta=None``: ``r = floor(alpha (n + 1))``, the marginal guarantee (a new query keeps its
  documents with probability >= 1 - alpha on average over calibration draws; one draw can fall
  short).

When ``n`` is too small for any ``r >= 1`` there is no cut-off (every result kept, threshold
``-inf``), and the note gives the smallest ``alpha`` the ``n`` queries support at ``delta``:
``1 - delta ** (1 / n)`` (``1 / (n + 1)`` for the marginal rank). Queries without a relevant
document are left out: they keep everything at any cut-off. The guarantee is over the dataset's
queries: a new query "exchangeable with them" is one drawn as they were.

**Noise-floor levels** are estimates, not guarantees: no distribution-free bound on a mean
random-pair rate reaches 0.1% from a few hundred queries (a rare query type with many random
pairs above the floor can hide from every calibration draw). Each level is calibrated on the
calibration queries' random pairs pooled (every query has the same number of them, so the pooled
share is the mean of the per-query rates) and carries three query-level 95% intervals (level
``confidence``), each a Clopper-Pearson interval on an effective sample size that divides the
pair count by the design effect of clustering by query, with a degrees-of-freedom correction
(Korn and Graubard, "Confidence intervals for proportions with small expected number of positive
counts estimated from survey data", Survey Methodology 24(2), 1998; :func:`clustered_interval`):

- ``lets_random_low/high`` and ``keeps_relevant_low/high``: the held-out rates' intervals, for
  what the cut-off does on new queries;
- ``expected_random_low/high``: from the calibration queries alone, the range the held-out
  rate should fall in if the level lets through what the calibration saw (a prediction
  interval: the calibration's and the held-out set's sampling error together, both with the
  calibration's design effect). A held-out rate outside it says the aim did not carry over.

The intervals treat queries as the only clusters. On a corpus so small that every query's
random sample is most of it (the 59-document support set), the same documents are random pairs
of every query, the pairs are clustered by document too, and the intervals are too narrow: a
held-out rate outside its expected range there says as much.

``distribution`` draws what the cut-offs are cut from: histograms of the held-out relevant-pair
and random-pair scores (:data:`DISTRIBUTION_BINS` equal bins over the range of every finite
pair score, so every cut-off falls inside it; a pair the retriever did not return is counted as
unscored), for the HTML report's picture of each cut-off against the two distributions.

``keeps_queries`` (with an exact Clopper-Pearson interval over held-out queries) is the share of
held-out queries that keep all (``relevant_share``) of their relevant documents: the quantity
the conformal guarantee is about.

**Scores that are not comparable across queries** get no cut-off (``meaningful=False``, the
reason in ``reason``, every threshold NaN): bm25 (a sum of term weights whose scale depends on
the query's terms and length), inner products of unnormalised vectors, and any scores outside
[-1, 1] (:func:`incomparable_scores`). Cut-offs for these would need a per-query normalisation,
which this module does not do. Reciprocal-rank fusion scores depend only on ranks: a cut-off on
them is a cut-off on fused rank (a note says so).

A pair the retriever does not return at all (a fusion keeps only its depth) scores -inf. Every
random choice (the random documents, the split) comes from ``seed``; the intervals are
analytic, so the same scores and seed give the same figures.

Usage::

    result = evaluate("hf:sentence-transformers/all-MiniLM-L6-v2", "../shared/data/scifact")
    c = result.cutoffs
    c.levels["balanced"].threshold, c.levels["balanced"].lets_random
    c.levels["balanced"].lets_random_low, c.levels["balanced"].lets_random_high
    c.conformal.threshold, c.conformal.guarantee
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from ..core.exceptions import ConfigError
from ..core.io import finite as finite_data

if TYPE_CHECKING:
    from ..cache.store import EmbeddingCache
    from ..data.datasets import RetrievalDataset
    from ..models.providers import Provider, Retriever

__all__ = [
    "CONFIDENCE",
    "DISTRIBUTION_BINS",
    "LEVELS",
    "RANDOM_PER_QUERY",
    "CutoffLevel",
    "Cutoffs",
    "clopper_pearson",
    "clustered_interval",
    "compute_cutoffs",
    "conformal_rank",
    "conformal_threshold",
    "cutoffs_for",
    "cutoffs_of",
    "incomparable_scores",
    "noise_floor",
    "pair_scores",
    "query_statistic",
    "random_documents",
    "score_distribution",
    "smallest_alpha",
]

#: share of random pairs each level lets through
LEVELS: dict[str, float] = {"strict": 0.001, "balanced": 0.01, "loose": 0.05}
#: unjudged documents drawn per query for the noise floor
RANDOM_PER_QUERY = 64
#: level of every interval
CONFIDENCE = 0.95
#: bins of the held-out score histograms (``Cutoffs.distribution``)
DISTRIBUTION_BINS = 32
#: queries scored per search_many call (bounds the full rankings held at once)
_BATCH = 32
#: a score further than this outside [-1, 1] is not a cosine (float rounding stays inside)
_BOUND_SLACK = 1e-4

NAN = math.nan


@dataclass(frozen=True)
class CutoffLevel:
    """One cut-off: a result passes when its score is above ``threshold`` (at or above, for
    the conformal one). Rates are shares of pairs; ``_low``/``_high`` their intervals at the
    :class:`Cutoffs`' ``confidence`` (see the module doc)."""

    name: str
    #: the share of random pairs it aims to let through (strict 0.001 ...), or 1 - alpha
    target: float
    threshold: float
    #: on the held-out queries: share of relevant pairs that pass
    keeps_relevant: float
    #: on the held-out queries: share of random pairs that pass
    lets_random: float
    #: on the calibration queries, for comparison
    calibration_keeps_relevant: float = NAN
    calibration_lets_random: float = NAN
    keeps_relevant_low: float = NAN
    keeps_relevant_high: float = NAN
    lets_random_low: float = NAN
    lets_random_high: float = NAN
    #: from the calibration queries: where the held-out random-pair rate should fall
    expected_random_low: float = NAN
    expected_random_high: float = NAN
    #: on the held-out queries: share of queries (with a relevant document) that keep all
    #: (``relevant_share``) of their relevant documents, with an exact interval
    keeps_queries: float = NAN
    keeps_queries_low: float = NAN
    keeps_queries_high: float = NAN
    #: what the cut-off promises for new queries, in one sentence
    guarantee: str = ""


@dataclass
class Cutoffs:
    """The measured cut-offs of one model on one dataset (see the module doc)."""

    levels: dict[str, CutoffLevel]
    conformal: CutoffLevel
    alpha: float
    #: the conformal cut-off's confidence: None for the marginal guarantee (module doc)
    delta: float | None
    seed: int
    calibration_queries: int
    heldout_queries: int
    relevant_pairs: int
    random_pairs: int
    random_per_query: int = RANDOM_PER_QUERY
    notes: list[str] = field(default_factory=list)
    #: share of a query's relevant documents the conformal cut-off keeps (1.0: all of them)
    relevant_share: float = 1.0
    #: level of every interval
    confidence: float = CONFIDENCE
    #: calibration queries with a relevant document: the conformal cut-off's ``n``
    conformal_queries: int = 0
    #: the smallest alpha those queries support at ``delta`` (module doc)
    supported_alpha: float = NAN
    #: False when a global cut-off has no meaning for these scores; ``reason`` says why
    meaningful: bool = True
    reason: str = ""
    #: the held-out pair scores as histograms (module doc): ``edges`` (bins + 1 scores),
    #: ``relevant`` and ``random`` (pairs per bin), ``relevant_unscored`` and
    #: ``random_unscored`` (pairs scored -inf); empty when the scores have no cut-off
    distribution: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready (infinite or NaN figures as None)."""
        out: dict[str, Any] = finite_data(asdict(self))
        return out


def _rng(seed: int, query_id: str) -> np.random.Generator:
    digest = hashlib.sha256(f"{int(seed)}\0cutoffs\0{query_id}".encode()).digest()
    return np.random.default_rng(int.from_bytes(digest[:8], "little"))


def random_documents(
    dataset: RetrievalDataset, *, seed: int = 0, per_query: int = RANDOM_PER_QUERY
) -> dict[str, list[str]]:
    """Per query, ``per_query`` unjudged documents drawn with a seed from (seed, query id),
    in corpus order: the same documents for every model."""
    ids = [d.id for d in dataset.documents]
    out = {}
    for query in dataset.queries:
        judged = dataset.qrels[query.id]
        pool = [d for d in ids if d not in judged]
        n = min(per_query, len(pool))
        picked = _rng(seed, query.id).choice(len(pool), size=n, replace=False)
        out[query.id] = [pool[i] for i in sorted(picked)]
    return out


def pair_scores(
    retriever: Retriever,
    dataset: RetrievalDataset,
    *,
    seed: int = 0,
    per_query: int = RANDOM_PER_QUERY,
) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """``(relevant, random)``: per query, the scores of its judged relevant documents (grade
    >= 1) and of its random unjudged sample, from the retriever's full ranking."""
    randoms = random_documents(dataset, seed=seed, per_query=per_query)
    depth = len(dataset.documents)
    relevant: dict[str, np.ndarray] = {}
    noise: dict[str, np.ndarray] = {}
    queries = list(dataset.queries)
    for start in range(0, len(queries), _BATCH):
        batch = queries[start : start + _BATCH]
        rankings, scores = retriever.search_many([q.text for q in batch], depth)
        for query, ids, values in zip(batch, rankings, scores, strict=True):
            found = dict(zip(ids, values, strict=True))
            rel = [d for d, g in dataset.qrels[query.id].items() if g >= 1]
            relevant[query.id] = np.array([found.get(d, -math.inf) for d in rel], dtype=float)
            noise[query.id] = np.array(
                [found.get(d, -math.inf) for d in randoms[query.id]], dtype=float
            )
    return relevant, noise


def _split(query_ids: Sequence[str], seed: int) -> tuple[list[str], list[str]]:
    """A seeded half split of the queries (sorted first, so the input order does not matter)."""
    ordered = sorted(query_ids)
    digest = hashlib.sha256(f"{int(seed)}\0split".encode()).digest()
    order = np.random.default_rng(int.from_bytes(digest[:8], "little")).permutation(len(ordered))
    half = len(ordered) // 2
    return [ordered[i] for i in order[:half]], [ordered[i] for i in order[half:]]


def noise_floor(random: np.ndarray, share: float) -> float:
    """The score above which at most ``share`` of ``random`` lies: the largest score that must
    not pass (ties at it do not pass either), so the calibration share is <= ``share``."""
    if len(random) == 0:
        return math.nan
    ordered = np.sort(random)
    allowed = int(math.floor(share * len(ordered)))
    return float(ordered[len(ordered) - allowed - 1])


def query_statistic(relevant: np.ndarray, share: float = 1.0) -> float:
    """The highest cut-off at which a query keeps at least ``share`` of its relevant documents
    (a score at or above the cut-off passes): its ``ceil(share * m)``-th highest relevant score
    (NaN without relevant documents). ``share=1.0``: its lowest relevant score."""
    m = len(relevant)
    if m == 0:
        return math.nan
    needed = max(1, math.ceil(share * m - 1e-9))  # 0.7 * 10 is 7.000000000000001
    return float(np.sort(relevant)[m - needed])


def conformal_rank(n: int, alpha: float, delta: float | None = 0.1) -> int:
    """The rank ``r`` of the conformal cut-off among ``n`` ascending calibration statistics
    (0: too few to exclude any); see the module doc for ``delta``."""
    if delta is None:
        return int(math.floor(alpha * (n + 1)))
    from scipy.special import bdtr

    # P(coverage < 1 - alpha) = P(Beta(r, n + 1 - r) > alpha) = P(Binomial(n, alpha) <= r - 1);
    # the cdf rises with r, so the rank is how many of r - 1 = 0 .. n - 1 stay within delta
    if n < 1:
        return 0
    return int(np.sum(bdtr(np.arange(n), n, alpha) <= delta))


def smallest_alpha(n: int, delta: float | None = 0.1) -> float:
    """The smallest ``alpha`` for which ``n`` calibration queries give a cut-off (rank >= 1):
    ``(1 - alpha) ** n <= delta``, or ``floor(alpha (n + 1)) >= 1`` for the marginal rank."""
    if n < 1:
        return math.nan
    if delta is None:
        return 1.0 / (n + 1)
    return 1.0 - delta ** (1.0 / n)


def conformal_threshold(relevant: np.ndarray, alpha: float, delta: float | None = 0.1) -> float:
    """Split conformal: the :func:`conformal_rank`-th smallest of ``relevant`` (one statistic
    per calibration query, :func:`query_statistic`; -inf when the rank is 0: too few to exclude
    any); a score at or above it passes."""
    rank = conformal_rank(len(relevant), alpha, delta)
    if rank < 1:
        return -math.inf
    return float(np.sort(relevant)[rank - 1])


def clopper_pearson(
    successes: float, trials: float, confidence: float = CONFIDENCE
) -> tuple[float, float]:
    """The Clopper-Pearson interval of a binomial share (Clopper and Pearson, Biometrika 26,
    1934): beta quantiles, exact for whole counts; fractional counts (an effective sample
    size) use the same formula."""
    if trials <= 0:
        return NAN, NAN
    from scipy.special import betaincinv  # the beta distribution's quantile function

    tail = (1.0 - confidence) / 2.0
    low = 0.0 if successes <= 0 else float(betaincinv(successes, trials - successes + 1, tail))
    high = (
        1.0
        if successes >= trials
        else float(betaincinv(successes + 1, trials - successes, 1.0 - tail))
    )
    return low, high


def _design(passed: np.ndarray, totals: np.ndarray) -> tuple[float, float, int]:
    """``(share, design effect, clusters)`` of pairs clustered by query: the ratio estimator's
    between-query variance over the binomial one, at least 1 (Korn and Graubard 1998)."""
    keep = totals > 0
    passed, totals = passed[keep], totals[keep]
    n, total = len(totals), float(totals.sum())
    if total == 0:
        return NAN, 1.0, 0
    share = float(passed.sum()) / total
    if n < 2 or share in (0.0, 1.0):
        return share, 1.0, n
    variance = n / (n - 1) * float(np.sum((passed - share * totals) ** 2)) / total**2
    binomial = share * (1.0 - share) / total
    return share, max(1.0, variance / binomial), n


def _df_factor(clusters: int, confidence: float) -> float:
    """Korn and Graubard's degrees-of-freedom correction of an effective sample size:
    ``(z / t_{clusters - 1})**2``."""
    if clusters < 2:
        return 1.0
    from scipy.special import ndtri, stdtrit  # normal and Student t quantiles

    tail = 1.0 - (1.0 - confidence) / 2.0
    return float((ndtri(tail) / stdtrit(clusters - 1, tail)) ** 2)


def clustered_interval(
    passed: Sequence[float] | np.ndarray,
    totals: Sequence[float] | np.ndarray,
    confidence: float = CONFIDENCE,
    *,
    predict: float | None = None,
) -> tuple[float, float, float]:
    """``(share, low, high)``: the share of pairs that pass, ``passed[i]`` of ``totals[i]``
    pairs per query, with a Clopper-Pearson interval on the effective sample size
    ``sum(totals) / design effect`` corrected for ``queries - 1`` degrees of freedom (Korn
    and Graubard 1998). With ``predict`` (a pair count): a prediction interval for the share
    a new set of that many pairs, clustered alike, will show (effective size
    ``1 / (deff / sum(totals) + deff / predict)``).

        clustered_interval([1, 0, 0, 3], [64, 64, 64, 64])
    """
    passed_a = np.asarray(passed, dtype=float)
    totals_a = np.asarray(totals, dtype=float)
    share, deff, clusters = _design(passed_a, totals_a)
    if clusters == 0:
        return NAN, NAN, NAN
    total = float(totals_a.sum())
    size = total / deff if predict is None else 1.0 / (deff / total + deff / float(predict))
    size *= _df_factor(clusters, confidence)
    low, high = clopper_pearson(share * size, size, confidence)
    return share, low, high


def incomparable_scores(retriever: Retriever) -> str | None:
    """Why one score means different things for different queries of ``retriever`` (None
    when its scores are cosines, ranks, or of a kind the score range must decide)."""
    from ..retrieval.dense import DenseRetriever
    from ..retrieval.lexical.bm25 import BM25Retriever
    from ..retrieval.pooling import PooledRetriever

    while isinstance(retriever, PooledRetriever):  # a document's score is its best chunk's
        retriever = retriever.inner
    if isinstance(retriever, BM25Retriever):
        return (
            "bm25 scores are sums of term weights: unbounded, and their scale depends on "
            "the query's terms and length, so one score means different things for "
            "different queries"
        )
    if isinstance(retriever, DenseRetriever) and not getattr(retriever.provider, "normalize", True):
        return (
            "inner products of unnormalised vectors (normalize=False): their scale depends "
            "on each query vector's length"
        )
    return None


def _range_problem(*groups: Mapping[str, np.ndarray]) -> str | None:
    values = [v[np.isfinite(v)] for scores in groups for v in scores.values() if len(v)]
    finite = np.concatenate(values) if values else np.empty(0)
    if len(finite) == 0:
        return None
    low, high = float(finite.min()), float(finite.max())
    if low < -1.0 - _BOUND_SLACK or high > 1.0 + _BOUND_SLACK:
        return (
            f"scores range from {low:.4g} to {high:.4g}, outside [-1, 1]: not cosines, and "
            "without a bound their scale can differ from query to query"
        )
    return None


def _pct(share: float) -> str:
    return f"{100 * share:.4g}%"


class _Pairs:
    """One half's pair scores of one kind, flat, with each pair's query: counting the pairs
    of every query that pass a cut-off is one ``bincount``."""

    def __init__(self, scores: Mapping[str, np.ndarray], qids: Sequence[str]) -> None:
        parts = [np.asarray(scores[q], dtype=float) for q in qids if len(scores.get(q, ()))]
        self.totals = np.array([len(p) for p in parts], dtype=float)
        self.values = np.concatenate(parts) if parts else np.empty(0)
        self.owner = np.repeat(np.arange(len(parts)), [len(p) for p in parts])

    def passes(self, threshold: float, inclusive: bool) -> tuple[np.ndarray, np.ndarray]:
        """Per query: pairs that pass and pairs in all."""
        ok = self.values >= threshold if inclusive else self.values > threshold
        passed = np.bincount(self.owner[ok], minlength=len(self.totals)).astype(float)
        return passed, self.totals


def _level(
    name: str,
    target: float,
    threshold: float,
    halves: Mapping[str, _Pairs],
    *,
    inclusive: bool,
    share: float,
    confidence: float,
    guarantee: str,
) -> CutoffLevel:
    """A cut-off's figures on both halves, with the intervals of the module doc."""
    if math.isnan(threshold):
        return CutoffLevel(name, target, NAN, NAN, NAN, guarantee=guarantee)
    rel_h = halves["relevant_held"].passes(threshold, inclusive)
    rnd_h = halves["random_held"].passes(threshold, inclusive)
    rel_c = halves["relevant_calib"].passes(threshold, inclusive)
    rnd_c = halves["random_calib"].passes(threshold, inclusive)
    keeps, keeps_low, keeps_high = clustered_interval(*rel_h, confidence)
    lets, lets_low, lets_high = clustered_interval(*rnd_h, confidence)
    _, exp_low, exp_high = clustered_interval(
        *rnd_c, confidence, predict=float(rnd_h[1].sum()) or None
    )
    if not len(rnd_h[1]):
        exp_low = exp_high = NAN
    # a query keeps `share` of its relevant documents: passed >= ceil(share * m)
    whole = [p >= max(1, math.ceil(share * t - 1e-9)) for p, t in zip(*rel_h, strict=True)]
    kept_q = float(np.mean(whole)) if whole else NAN
    q_low, q_high = clopper_pearson(float(sum(whole)), float(len(whole)), confidence)
    return CutoffLevel(
        name,
        target,
        threshold,
        keeps_relevant=keeps,
        lets_random=lets,
        calibration_keeps_relevant=_share(*rel_c),
        calibration_lets_random=_share(*rnd_c),
        keeps_relevant_low=keeps_low,
        keeps_relevant_high=keeps_high,
        lets_random_low=lets_low,
        lets_random_high=lets_high,
        expected_random_low=exp_low,
        expected_random_high=exp_high,
        keeps_queries=kept_q,
        keeps_queries_low=q_low,
        keeps_queries_high=q_high,
        guarantee=guarantee,
    )


def score_distribution(
    halves: Mapping[str, _Pairs], bins: int = DISTRIBUTION_BINS
) -> dict[str, Any]:
    """The held-out relevant and random pair scores as histograms over ``bins`` equal bins
    spanning every finite pair score of both halves (empty when there is none). Scores only,
    no random draw: the same scores and split give the same bins."""
    every = np.concatenate([h.values for h in halves.values()]) if halves else np.empty(0)
    finite = every[np.isfinite(every)]
    if len(finite) == 0:
        return {}
    low, high = float(finite.min()), float(finite.max())
    if high - low < 1e-9:  # one score: a bin around it
        low, high = low - 0.5e-3, high + 0.5e-3
    edges = np.linspace(low, high, bins + 1)
    out: dict[str, Any] = {"half": "held-out", "edges": [round(float(e), 6) for e in edges]}
    for kind in ("relevant", "random"):
        values = halves[f"{kind}_held"].values
        scored = values[np.isfinite(values)]
        counts, _ = np.histogram(scored, bins=edges)
        out[kind] = [int(c) for c in counts]
        out[f"{kind}_unscored"] = int(len(values) - len(scored))
    return out


def _share(passed: np.ndarray, totals: np.ndarray) -> float:
    total = float(totals.sum())
    return float(passed.sum()) / total if total else NAN


def _conformal_guarantee(n: int, alpha: float, delta: float | None, share: float, rank: int) -> str:
    kept = "all" if share >= 1.0 else f"at least {_pct(share)}"
    if rank < 1:
        support = smallest_alpha(n, delta)
        at = "" if delta is None else f" at delta={delta:g}"
        return (
            f"No cut-off: {n} calibration queries are too few for alpha={alpha:g}{at} (the "
            f"smallest alpha they support is {support:.4g}); every result is kept."
        )
    if delta is None:
        return (
            f"A new query drawn like the {n} calibration queries (with a relevant document) "
            f"keeps {kept} of its relevant documents at this cut-off with probability >= "
            f"{_pct(1 - alpha)}, on average over calibration draws (one draw can fall short)."
        )
    return (
        f"With probability >= {_pct(1 - delta)} over the draw of the {n} calibration queries, "
        f"a new query drawn like them (with a relevant document) keeps {kept} of its relevant "
        f"documents at this cut-off with probability >= {_pct(1 - alpha)}."
    )


def _level_guarantee(share: float, n: int) -> str:
    return (
        f"An estimate, not a guarantee: {_pct(share)} of the random pairs of {n} calibration "
        "queries pass; the held-out rate should fall within the expected range if that "
        "carries over to new queries."
    )


def compute_cutoffs(
    relevant: Mapping[str, np.ndarray],
    random: Mapping[str, np.ndarray],
    *,
    seed: int = 0,
    alpha: float = 0.05,
    delta: float | None = 0.1,
    levels: Mapping[str, float] | None = None,
    per_query: int = RANDOM_PER_QUERY,
    relevant_share: float = 1.0,
    confidence: float = CONFIDENCE,
    incomparable: str | None = None,
) -> Cutoffs:
    """The cut-offs of pair scores from :func:`pair_scores`, calibrated on a seeded half of
    the queries and reported on the other half (module doc). ``incomparable``: why these
    scores are not comparable across queries (:func:`incomparable_scores`); without it, scores
    outside [-1, 1] are taken as not comparable.

        compute_cutoffs(relevant, random, seed=0, alpha=0.05, delta=0.1)
    """
    if not 0.0 < alpha < 1.0:
        raise ConfigError(f"conformal alpha={alpha!r} must lie strictly between 0 and 1")
    if delta is not None and not 0.0 < delta < 1.0:
        raise ConfigError(f"conformal delta={delta!r} must lie strictly between 0 and 1")
    if not 0.0 < relevant_share <= 1.0:
        raise ConfigError(f"relevant_share={relevant_share!r}: a share in (0, 1], e.g. 1.0")
    if not 0.0 < confidence < 1.0:
        raise ConfigError(f"confidence={confidence!r} must lie strictly between 0 and 1")
    levels = dict(LEVELS if levels is None else levels)
    for name, share in levels.items():
        if not 0.0 < share < 1.0:
            raise ConfigError(f"cut-off level {name}={share!r}: a share between 0 and 1")
    calib, held = _split(list(random), seed)
    reason = incomparable or _range_problem(relevant, random)
    stats = np.array(
        [query_statistic(relevant[q], relevant_share) for q in calib if len(relevant.get(q, ()))]
    )
    n = len(stats)
    halves = {
        f"{kind}_{half}": _Pairs(scores, qids)
        for kind, scores in (("relevant", relevant), ("random", random))
        for half, qids in (("calib", calib), ("held", held))
    }
    rnd_c = halves["random_calib"].values
    notes: list[str] = []

    def level(
        name: str, target: float, threshold: float, inclusive: bool, says: str
    ) -> CutoffLevel:
        return _level(
            name,
            target,
            threshold,
            halves,
            inclusive=inclusive,
            share=relevant_share,
            confidence=confidence,
            guarantee=says,
        )

    out: dict[str, CutoffLevel] = {}
    for name, share in levels.items():
        threshold = NAN if reason else noise_floor(rnd_c, share)
        if not reason and len(rnd_c) and math.floor(share * len(rnd_c)) == 0:
            notes.append(
                f"{name} ({_pct(share)}): the calibration queries' {len(rnd_c)} random pairs "
                f"are too few to resolve it (it needs {math.ceil(1 / share)}); its cut-off "
                "is their highest score"
            )
        says = "" if reason else _level_guarantee(share, len(calib))
        out[name] = level(name, share, threshold, False, says)
    if not reason and len(rnd_c) == 0:
        notes.append("no random pairs to calibrate the noise floor: its levels are NaN")
    rank = conformal_rank(n, alpha, delta)
    if reason:
        threshold = NAN
        says = f"No cut-off: a global cut-off has no meaning here ({reason})."
    elif n == 0:
        threshold = NAN
        says = "No cut-off: no calibration query has a relevant document."
        notes.append("no calibration query has a relevant document: the conformal cut-off is NaN")
    else:
        threshold = conformal_threshold(stats, alpha, delta)
        says = _conformal_guarantee(n, alpha, delta, relevant_share, rank)
        if rank < 1:
            notes.append(says.removeprefix("No cut-off: "))
    conformal = level("conformal", 1.0 - alpha, threshold, True, says)
    return Cutoffs(
        levels=out,
        conformal=conformal,
        alpha=alpha,
        delta=delta,
        seed=seed,
        calibration_queries=len(calib),
        heldout_queries=len(held),
        relevant_pairs=int(sum(len(v) for v in relevant.values())),
        random_pairs=int(sum(len(v) for v in random.values())),
        random_per_query=per_query,
        notes=notes,
        relevant_share=relevant_share,
        confidence=confidence,
        conformal_queries=n,
        supported_alpha=smallest_alpha(n, delta),
        meaningful=reason is None,
        reason=reason or "",
        distribution={} if reason else score_distribution(halves),
    )


def cutoffs_for(
    provider: Provider,
    dataset: RetrievalDataset,
    *,
    cache: EmbeddingCache | None = None,
    seed: int = 0,
    alpha: float = 0.05,
    delta: float | None = 0.1,
    relevant_share: float = 1.0,
) -> Cutoffs:
    """Build ``provider``'s index over ``dataset`` (the cache makes embedded documents free),
    score the relevant and random pairs, and compute the cut-offs."""
    retriever = provider.build(dataset.documents, cache=cache)
    return cutoffs_of(
        retriever, dataset, seed=seed, alpha=alpha, delta=delta, relevant_share=relevant_share
    )


def cutoffs_of(
    retriever: Retriever,
    dataset: RetrievalDataset,
    *,
    seed: int = 0,
    alpha: float = 0.05,
    delta: float | None = 0.1,
    relevant_share: float = 1.0,
) -> Cutoffs:
    """The cut-offs of a built retriever over ``dataset`` (a chunked dataset's retriever
    answers with documents, so its pairs are scored by document, as its run). Scores that
    are not comparable across queries (bm25, :func:`incomparable_scores`) get none."""
    relevant, random = pair_scores(retriever, dataset, seed=seed)
    cut = compute_cutoffs(
        relevant,
        random,
        seed=seed,
        alpha=alpha,
        delta=delta,
        relevant_share=relevant_share,
        incomparable=incomparable_scores(retriever),
    )
    if cut.meaningful and _fused(retriever):
        cut.notes.append(
            "reciprocal-rank fusion scores depend only on ranks: these cut-offs are cut-offs "
            "on fused rank, and a document beyond the fusion's depth scores -inf"
        )
    return cut


def _fused(retriever: Retriever) -> bool:
    from ..retrieval.fusion import HybridRetriever
    from ..retrieval.pooling import PooledRetriever

    while isinstance(retriever, PooledRetriever):
        retriever = retriever.inner
    return isinstance(retriever, HybridRetriever)

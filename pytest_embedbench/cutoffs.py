"""Similarity cut-offs against a measured noise floor, and a conformal cut-off for recall.

A search box that shows only results above a score needs a cut-off, and no single number fits
every model (002_9629ab742594b964.txt, "Cutoffs": a cosine distance of 0.6 lets nearly every
random passage through for one model and keeps 72-87% of relevant ones for another). So the
cut-offs are measured per model and dataset:

- the **noise floor**: the scores of a fixed-seed random sample of 64 unjudged documents per
  query (the same documents for every model);
- **strict / balanced / loose**: the scores above which 0.1% / 1% / 5% of those random pairs
  fall, calibrated on one half of the queries (a seeded split) and reported on the other half:
  ``keeps_relevant`` (share of judged relevant pairs scoring above the cut-off) and
  ``lets_random`` (share of random pairs above it), so the figures are out-of-sample;
- **conformal**: split conformal prediction on the relevant pairs' scores (Vovk, Gammerman and
  Shafer, *Algorithmic Learning in a Random World*, 2005; Angelopoulos and Bates, "A Gentle
  Introduction to Conformal Prediction", 2021, sections 1 and 3.2): with ``n`` calibration
  scores sorted ascending, the cut-off is the ``r``-th smallest. ``delta=None`` takes
  ``r = floor(alpha (n + 1))``, the marginal guarantee: a new relevant pair exchangeable with
  them scores at or above it with probability >= 1 - alpha, on average over calibration sets
  (one calibration set can fall short by sampling luck). The default ``delta=0.1`` is the
  training-conditional (PAC) version (Vovk, "Conditional validity of inductive conformal
  predictors", 2012): the largest ``r`` with ``P(Binomial(n, alpha) <= r - 1) <= delta``, so
  that with probability >= 1 - delta over the calibration draw, the cut-off keeps >= 1 - alpha
  of new relevant pairs. Pairs of one query are not independent, so both guarantees hold for
  exchangeable queries only approximately; the held-out half shows what it kept.

A pair the retriever does not return at all (a fusion keeps only its depth) scores -inf.

Usage::

    result = evaluate("bm25", "../shared/data/scifact")
    c = result.cutoffs
    c.levels["balanced"].threshold, c.levels["balanced"].keeps_relevant
    c.conformal.threshold           # keeps >= 95% of relevant pairs on new queries
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from .exceptions import ConfigError

if TYPE_CHECKING:
    from .cache import EmbeddingCache
    from .datasets import RetrievalDataset
    from .providers import Provider, Retriever

__all__ = [
    "LEVELS",
    "RANDOM_PER_QUERY",
    "CutoffLevel",
    "Cutoffs",
    "compute_cutoffs",
    "conformal_rank",
    "conformal_threshold",
    "cutoffs_for",
    "cutoffs_of",
    "noise_floor",
    "pair_scores",
    "random_documents",
]

#: share of random pairs each level lets through
LEVELS: dict[str, float] = {"strict": 0.001, "balanced": 0.01, "loose": 0.05}
#: unjudged documents drawn per query for the noise floor
RANDOM_PER_QUERY = 64
#: queries scored per search_many call (bounds the full rankings held at once)
_BATCH = 32


@dataclass(frozen=True)
class CutoffLevel:
    """One cut-off: a result passes when its score is above ``threshold``."""

    name: str
    #: the share of random pairs it aims to let through (strict 0.001 ...), or 1 - alpha
    target: float
    threshold: float
    #: on the held-out queries: share of relevant pairs that pass
    keeps_relevant: float
    #: on the held-out queries: share of random pairs that pass
    lets_random: float
    #: on the calibration queries, for comparison
    calibration_keeps_relevant: float = math.nan
    calibration_lets_random: float = math.nan


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

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready (infinite or NaN figures as None)."""
        out = asdict(self)
        return _finite(out)


def _finite(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_finite(v) for v in value]
    return value


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


def _pool(scores: Mapping[str, np.ndarray], qids: Sequence[str]) -> np.ndarray:
    parts = [scores[q] for q in qids if q in scores and len(scores[q])]
    return np.concatenate(parts) if parts else np.empty(0)


def _share_above(values: np.ndarray, threshold: float, *, inclusive: bool = False) -> float:
    if len(values) == 0:
        return math.nan
    passed = values >= threshold if inclusive else values > threshold
    return float(np.mean(passed))


def noise_floor(random: np.ndarray, share: float) -> float:
    """The score above which at most ``share`` of ``random`` lies: the largest score that must
    not pass (ties at it do not pass either), so the calibration share is <= ``share``."""
    if len(random) == 0:
        return math.nan
    ordered = np.sort(random)
    allowed = int(math.floor(share * len(ordered)))
    return float(ordered[len(ordered) - allowed - 1])


def conformal_rank(n: int, alpha: float, delta: float | None = 0.1) -> int:
    """The rank ``r`` of the conformal cut-off among ``n`` ascending calibration scores (0:
    too few scores to exclude any); see the module doc for ``delta``."""
    if delta is None:
        return int(math.floor(alpha * (n + 1)))
    from scipy.stats import binom

    # P(coverage < 1 - alpha) = P(Beta(r, n + 1 - r) > alpha) = P(Binomial(n, alpha) <= r - 1)
    rank = 0
    while rank < n and float(binom.cdf(rank, n, alpha)) <= delta:
        rank += 1
    return rank


def conformal_threshold(relevant: np.ndarray, alpha: float, delta: float | None = 0.1) -> float:
    """Split conformal: the :func:`conformal_rank`-th smallest relevant score (-inf when the
    rank is 0: too few scores to exclude any); a score at or above it passes."""
    rank = conformal_rank(len(relevant), alpha, delta)
    if rank < 1:
        return -math.inf
    return float(np.sort(relevant)[rank - 1])


def compute_cutoffs(
    relevant: Mapping[str, np.ndarray],
    random: Mapping[str, np.ndarray],
    *,
    seed: int = 0,
    alpha: float = 0.05,
    delta: float | None = 0.1,
    levels: Mapping[str, float] | None = None,
    per_query: int = RANDOM_PER_QUERY,
) -> Cutoffs:
    """The cut-offs of pair scores from :func:`pair_scores`, calibrated on a seeded half of
    the queries and reported on the other half."""
    if not 0.0 < alpha < 1.0:
        raise ConfigError(f"conformal alpha={alpha!r} must lie strictly between 0 and 1")
    levels = dict(LEVELS if levels is None else levels)
    calib, held = _split(list(random), seed)
    rel_c, rel_h = _pool(relevant, calib), _pool(relevant, held)
    rnd_c, rnd_h = _pool(random, calib), _pool(random, held)
    notes = []
    if len(rel_c) == 0 or len(rnd_c) == 0:
        notes.append("too few queries to calibrate: every cut-off is NaN")
    out = {}
    for name, share in levels.items():
        if not 0.0 < share < 1.0:
            raise ConfigError(f"cut-off level {name}={share!r}: a share between 0 and 1")
        threshold = noise_floor(rnd_c, share)
        out[name] = CutoffLevel(
            name,
            share,
            threshold,
            keeps_relevant=_share_above(rel_h, threshold),
            lets_random=_share_above(rnd_h, threshold),
            calibration_keeps_relevant=_share_above(rel_c, threshold),
            calibration_lets_random=_share_above(rnd_c, threshold),
        )
    if delta is not None and not 0.0 < delta < 1.0:
        raise ConfigError(f"conformal delta={delta!r} must lie strictly between 0 and 1")
    threshold = conformal_threshold(rel_c, alpha, delta) if len(rel_c) else math.nan
    conformal = CutoffLevel(
        "conformal",
        1.0 - alpha,
        threshold,
        keeps_relevant=_share_above(rel_h, threshold, inclusive=True),
        lets_random=_share_above(rnd_h, threshold, inclusive=True),
        calibration_keeps_relevant=_share_above(rel_c, threshold, inclusive=True),
        calibration_lets_random=_share_above(rnd_c, threshold, inclusive=True),
    )
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
    )


def cutoffs_for(
    provider: Provider,
    dataset: RetrievalDataset,
    *,
    cache: EmbeddingCache | None = None,
    seed: int = 0,
    alpha: float = 0.05,
    delta: float | None = 0.1,
) -> Cutoffs:
    """Build ``provider``'s index over ``dataset`` (the cache makes embedded documents free),
    score the relevant and random pairs, and compute the cut-offs."""
    retriever = provider.build(dataset.documents, cache=cache)
    return cutoffs_of(retriever, dataset, seed=seed, alpha=alpha, delta=delta)


def cutoffs_of(
    retriever: Retriever,
    dataset: RetrievalDataset,
    *,
    seed: int = 0,
    alpha: float = 0.05,
    delta: float | None = 0.1,
) -> Cutoffs:
    """The cut-offs of a built retriever over ``dataset`` (a chunked dataset's retriever
    answers with documents, so its pairs are scored by document, as its run)."""
    relevant, random = pair_scores(retriever, dataset, seed=seed)
    return compute_cutoffs(relevant, random, seed=seed, alpha=alpha, delta=delta)

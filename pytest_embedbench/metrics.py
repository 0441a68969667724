"""Per-query retrieval metrics, equal to trec_eval's (through pytrec_eval) on the same run.

Every metric returns one float64 per query; averages are taken by the caller, so intervals and
paired tests can use the per-query arrays. All metrics are computed from one ``(n_queries, k)``
grade matrix: the relevance grade of the document at each rank (0 for unjudged or missing).

Conventions (trec_eval's):

* a ranking is ordered by score descending, then document id descending;
* a document is relevant for the binary metrics when its grade is >= 1;
* nDCG's gain is the grade itself (linear), discounted by ``log2(rank + 1)``;
* a judged query with no retrieved documents scores 0; queries outside the qrels are ignored.

Usage::

    from pytest_embedbench import score_run
    score_run({"q1": {"d1": 2, "d2": 1}}, {"q1": {"d1": 0.9, "d3": 0.8}}, ["ndcg@10", "mrr@10"])
    # {'ndcg@10': {'q1': 0.7967...}, 'mrr@10': {'q1': 1.0}}
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from .exceptions import ConfigError, MetricError

__all__ = [
    "DEFAULT_K",
    "METRICS",
    "MetricName",
    "grade_matrix",
    "parse_cutoffs",
    "parse_metric",
    "rank_run",
    "score_run",
]

#: the cut-offs a run computes when neither the marker, embedbench.yaml nor evaluate() names any
DEFAULT_K: tuple[int, ...] = (1, 5, 10, 100)

MetricFn = Callable[[np.ndarray, np.ndarray, np.ndarray, int], np.ndarray]


def _discounts(k: int) -> np.ndarray:
    return 1.0 / np.log2(np.arange(2, k + 2, dtype=np.float64))


def ndcg(grades: np.ndarray, ideal: np.ndarray, num_rel: np.ndarray, k: int) -> np.ndarray:
    """nDCG@k = DCG@k / IDCG@k with DCG@k = sum_{i<=k} grade_i / log2(i + 1).

    IDCG@k uses the query's judged grades sorted descending (trec_eval ``ndcg_cut``,
    Järvelin and Kekäläinen 2002). 0 when the query has no positive grade.
    """
    disc = _discounts(k)
    dcg = grades[:, :k] @ disc
    idcg = ideal[:, :k] @ disc
    out = np.zeros(len(grades))
    np.divide(dcg, idcg, out=out, where=idcg > 0)
    return out


def mrr(grades: np.ndarray, ideal: np.ndarray, num_rel: np.ndarray, k: int) -> np.ndarray:
    """MRR@k = 1 / rank of the first relevant document within the top k, else 0.

    trec_eval ``recip_rank`` on the run cut at k.
    """
    rel = grades[:, :k] >= 1
    first = rel.argmax(axis=1)
    return np.asarray(np.where(rel.any(axis=1), 1.0 / (first + 1.0), 0.0), dtype=np.float64)


def recall(grades: np.ndarray, ideal: np.ndarray, num_rel: np.ndarray, k: int) -> np.ndarray:
    """Recall@k = |relevant in top k| / |relevant| (trec_eval ``recall_k``); 0 without relevant."""
    hits = (grades[:, :k] >= 1).sum(axis=1).astype(np.float64)
    out = np.zeros(len(grades))
    np.divide(hits, num_rel, out=out, where=num_rel > 0)
    return out


def precision(grades: np.ndarray, ideal: np.ndarray, num_rel: np.ndarray, k: int) -> np.ndarray:
    """Precision@k = |relevant in top k| / k, even when fewer were retrieved (trec_eval ``P_k``)."""
    return np.asarray((grades[:, :k] >= 1).sum(axis=1) / float(k), dtype=np.float64)


def hit(grades: np.ndarray, ideal: np.ndarray, num_rel: np.ndarray, k: int) -> np.ndarray:
    """Hit@k = 1 when any relevant document is in the top k (trec_eval ``success_k``)."""
    return np.asarray((grades[:, :k] >= 1).any(axis=1), dtype=np.float64)


def average_precision(
    grades: np.ndarray, ideal: np.ndarray, num_rel: np.ndarray, k: int
) -> np.ndarray:
    """MAP@k = sum over relevant ranks i <= k of precision@i, divided by |relevant|.

    trec_eval ``map_cut_k``: the divisor is every relevant document, retrieved or not.
    """
    rel = (grades[:, :k] >= 1).astype(np.float64)
    prec_at = np.cumsum(rel, axis=1) / np.arange(1, rel.shape[1] + 1)
    total = (rel * prec_at).sum(axis=1)
    out = np.zeros(len(grades))
    np.divide(total, num_rel, out=out, where=num_rel > 0)
    return out


#: Metric families by name; a metric is named ``"<family>@<k>"``, e.g. ``"ndcg@10"``.
METRICS: dict[str, MetricFn] = {
    "hit": hit,
    "map": average_precision,
    "mrr": mrr,
    "ndcg": ndcg,
    "precision": precision,
    "recall": recall,
}

_NAME = re.compile(r"^\s*([a-z_]+)\s*@\s*(\d+)\s*$")


@dataclass(frozen=True, order=True)
class MetricName:
    """A parsed metric name: family and cut-off."""

    family: str
    k: int

    def __str__(self) -> str:
        return f"{self.family}@{self.k}"


def parse_metric(name: str | MetricName) -> MetricName:
    """Parse ``"ndcg@10"`` into ``MetricName("ndcg", 10)``; unknown names list the known ones."""
    if isinstance(name, MetricName):
        return name
    match = _NAME.match(str(name).lower())
    if not match:
        raise MetricError(
            f"metric {name!r} is not of the form '<name>@<k>', e.g. 'ndcg@10'; "
            f"known names: {sorted(METRICS)}"
        )
    family, k = match.group(1), int(match.group(2))
    if family not in METRICS:
        raise MetricError(f"unknown metric {family!r} in {name!r}; known: {sorted(METRICS)}")
    if k < 1:
        raise MetricError(f"metric {name!r}: the cut-off must be at least 1")
    return MetricName(family, k)


def parse_cutoffs(value: object, where: str = "k") -> tuple[int, ...]:
    """The cut-offs ``k`` of a run, sorted and without repeats: the one check behind the
    marker's ``k=``, ``k:`` in ``embedbench.yaml`` and ``evaluate(k=...)``.

    ``value`` is an integer or a list of integers >= 1; ``None`` means :data:`DEFAULT_K`. The run
    computes exactly these (``k=5`` computes ``@5`` only); a bad value is a ConfigError that
    starts with ``where`` (the file and key, or the marker)::

        parse_cutoffs(10)          # (10,)
        parse_cutoffs([10, 1, 10]) # (1, 10)
    """
    if value is None:
        return DEFAULT_K
    values = [value] if isinstance(value, int) and not isinstance(value, bool) else value
    if isinstance(values, (str, bytes, Mapping)) or not isinstance(values, Iterable):
        values = None
    else:
        values = list(values)
    if values is None or not all(
        isinstance(v, int) and not isinstance(v, bool) and v >= 1 for v in values
    ):
        raise ConfigError(
            f"{where}: {value!r}: cut-offs must be integers >= 1, e.g. [1, 5, 10, 100]"
        )
    if not values:
        raise ConfigError(
            f"{where}: [] computes nothing: list the cut-offs, e.g. [1, 5, 10], or leave it out "
            f"for the default {list(DEFAULT_K)}"
        )
    return tuple(sorted(set(values)))


def grade_matrix(
    rankings: Sequence[Sequence[str]],
    judgements: Sequence[Mapping[str, int]],
    depth: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The ``(n_queries, depth)`` grade matrix, the ideal grade matrix and relevant counts.

    ``rankings[i]`` is query i's ranked document ids (already in tie-broken order);
    ``judgements[i]`` its qrels. Ranks past a ranking's end have grade 0.
    """
    n = len(rankings)
    grades = np.zeros((n, depth), dtype=np.float64)
    ideal = np.zeros((n, depth), dtype=np.float64)
    num_rel = np.zeros(n, dtype=np.float64)
    for i, (ranking, judged) in enumerate(zip(rankings, judgements, strict=True)):
        if judged:
            for r, doc_id in enumerate(ranking[:depth]):
                grade = judged.get(doc_id, 0)
                if grade > 0:
                    grades[i, r] = grade
            positive = sorted((g for g in judged.values() if g > 0), reverse=True)[:depth]
            ideal[i, : len(positive)] = positive
            num_rel[i] = sum(1 for g in judged.values() if g >= 1)
    return grades, ideal, num_rel


def compute(
    names: Iterable[str | MetricName],
    grades: np.ndarray,
    ideal: np.ndarray,
    num_rel: np.ndarray,
) -> dict[str, np.ndarray]:
    """Per-query arrays for each metric name from a grade matrix (see :func:`grade_matrix`)."""
    out: dict[str, np.ndarray] = {}
    for raw in names:
        metric = parse_metric(raw)
        g, ide = grades, ideal
        if metric.k > grades.shape[1]:  # pad: ranks past the run's depth hold nothing
            pad = metric.k - grades.shape[1]
            g = np.pad(grades, ((0, 0), (0, pad)))
            ide = np.pad(ideal, ((0, 0), (0, pad)))
        out[str(metric)] = METRICS[metric.family](g, ide, num_rel, metric.k)
    return out


def rank_run(scores: Mapping[str, float]) -> list[str]:
    """Document ids of one query's run ordered by score descending, then id descending."""
    items = []
    for doc_id, score in scores.items():
        value = float(score)
        if math.isnan(value):
            raise MetricError(f"run score for document {doc_id!r} is NaN")
        items.append((value, str(doc_id)))
    items.sort(reverse=True)
    return [doc_id for _, doc_id in items]


def score_run(
    qrels: Mapping[str, Mapping[str, int]],
    run: Mapping[str, Mapping[str, float]],
    metrics: Iterable[str],
) -> dict[str, dict[str, float]]:
    """Score a pytrec_eval-style run: ``{metric: {query_id: value}}`` for every judged query.

    ``qrels`` is ``{qid: {docid: grade}}`` with integer grades >= 0, ``run`` is
    ``{qid: {docid: score}}``. Ties are broken as trec_eval does (score desc, then doc id desc);
    a judged query missing from the run scores 0; run queries without judgements are ignored.

    Usage::

        score_run(qrels, run, ["ndcg@10", "recall@100"])["ndcg@10"]["q1"]
    """
    names = [str(parse_metric(m)) for m in metrics]
    if not names:
        raise MetricError("score_run: no metric names given; e.g. ['ndcg@10']")
    qids = list(qrels)
    judgements = []
    for qid in qids:
        judged = {}
        for doc_id, grade in qrels[qid].items():
            if isinstance(grade, bool) or not isinstance(grade, (int, np.integer)) or grade < 0:
                raise MetricError(
                    f"qrels[{qid!r}][{doc_id!r}] = {grade!r}: grades must be integers >= 0"
                )
            judged[str(doc_id)] = int(grade)
        judgements.append(judged)
    rankings = [rank_run(run.get(qid, {})) for qid in qids]
    depth = max([parse_metric(m).k for m in names])
    grades, ideal, num_rel = grade_matrix(rankings, judgements, depth)
    arrays = compute(names, grades, ideal, num_rel)
    return {
        name: {qid: float(v) for qid, v in zip(qids, values, strict=True)}
        for name, values in arrays.items()
    }

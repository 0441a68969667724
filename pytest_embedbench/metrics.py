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
from itertools import chain, compress

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

#: comparisons per chunk when ranking the relevant documents of a run (memory: ~17 bytes each)
COMPARE_CHUNK = 4 * 1024 * 1024

MetricFn = Callable[[np.ndarray, np.ndarray, np.ndarray, int], np.ndarray]


def _log2_ranks(k: int) -> np.ndarray:
    """``log2(rank + 1)`` for ranks 1..k, from C's log2 as trec_eval calls it."""
    return np.array([math.log2(i + 2) for i in range(k)], dtype=np.float64)


def _sequential_sum(terms: np.ndarray) -> np.ndarray:
    """Row sums added left to right, as trec_eval's loops do (a pairwise or BLAS sum could
    differ in the last bit); zero terms add exactly nothing."""
    if terms.shape[1] == 0:
        return np.zeros(len(terms))
    return np.cumsum(terms, axis=1)[:, -1]


def ndcg(grades: np.ndarray, ideal: np.ndarray, num_rel: np.ndarray, k: int) -> np.ndarray:
    """nDCG@k = DCG@k / IDCG@k with DCG@k = sum_{i<=k} grade_i / log2(i + 1).

    IDCG@k uses the query's judged grades sorted descending (trec_eval ``ndcg_cut``,
    Järvelin and Kekäläinen 2002). 0 when the query has no positive grade.
    """
    logs = _log2_ranks(k)
    dcg = _sequential_sum(grades[:, :k] / logs)
    idcg = _sequential_sum(ideal[:, :k] / logs)
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
    total = _sequential_sum(rel * prec_at)
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


def _values(row: Mapping[str, float]) -> Iterable[float]:
    return row.values()


def _run_scores(rows: Sequence[Mapping[str, float]], count: int) -> np.ndarray:
    """Every score of ``rows``, in order, as one float64 array; a NaN is an error naming it."""
    try:
        scores = np.fromiter(chain.from_iterable(map(_values, rows)), dtype=np.float64, count=count)
    except (TypeError, ValueError):  # scores that only float() understands: the slow path
        scores = np.array([float(v) for row in rows for v in row.values()], dtype=np.float64)
    if np.isnan(scores).any():
        for row in rows:
            rank_run(row)  # raises, naming the document
    return scores


def score_run(
    qrels: Mapping[str, Mapping[str, int]],
    run: Mapping[str, Mapping[str, float]],
    metrics: Iterable[str],
) -> dict[str, dict[str, float]]:
    """Score a pytrec_eval-style run: ``{metric: {query_id: value}}`` for every judged query.

    ``qrels`` is ``{qid: {docid: grade}}`` with integer grades >= 0, ``run`` is
    ``{qid: {docid: score}}``. Ties are broken as trec_eval does (score desc, then doc id desc);
    a judged query missing from the run scores 0; run queries without judgements are ignored.
    Values equal pytrec_eval's bit for bit (the same sums in the same order).

    Usage::

        score_run(qrels, run, ["ndcg@10", "recall@100"])["ndcg@10"]["q1"]
    """
    names = [str(parse_metric(m)) for m in metrics]
    if not names:
        raise MetricError("score_run: no metric names given; e.g. ['ndcg@10']")
    depth = max(parse_metric(m).k for m in names)
    qids = list(qrels)
    n = len(qids)
    # only documents with a positive grade can change a metric: place each one by its rank,
    # counted from the run's scores, instead of sorting every run
    rel_q, rel_doc, rel_grade, ideal, num_rel = _positive_judgements(qids, qrels, depth)
    rows = [run.get(qid) or {} for qid in qids]
    lengths = np.fromiter(map(len, rows), dtype=np.int64, count=n)
    scores = _run_scores(rows, int(lengths.sum()))
    grades = _place_relevant(rows, scores, lengths, rel_q, rel_doc, rel_grade, depth)
    arrays = compute(names, grades, ideal, num_rel)
    return {name: dict(zip(qids, values.tolist(), strict=True)) for name, values in arrays.items()}


def _reject_grade(qids: Sequence[str], qrels: Mapping[str, Mapping[str, int]]) -> None:
    """Raise the MetricError naming the first grade that is not an integer >= 0."""
    for qid in qids:
        for doc_id, grade in qrels[qid].items():
            if isinstance(grade, bool) or not isinstance(grade, (int, np.integer)) or grade < 0:
                raise MetricError(
                    f"qrels[{qid!r}][{doc_id!r}] = {grade!r}: grades must be integers >= 0"
                )


def _positive_judgements(
    qids: Sequence[str], qrels: Mapping[str, Mapping[str, int]], depth: int
) -> tuple[np.ndarray, list[str], np.ndarray, np.ndarray, np.ndarray]:
    """The positively graded documents of every query, as flat arrays (query index, document
    id, grade), the ``(n_queries, depth)`` ideal grade matrix and the relevant counts.

    The grades are checked in bulk (their types, then their signs); a bad one is a MetricError
    naming its query and document."""
    n = len(qids)
    judged = [qrels[qid] for qid in qids]
    raw = list(chain.from_iterable(map(_values, judged)))
    if not all(k is not bool and issubclass(k, (int, np.integer)) for k in set(map(type, raw))):
        _reject_grade(qids, qrels)
    try:
        grades = np.fromiter(raw, dtype=np.int64, count=len(raw))
    except OverflowError:
        raise MetricError(
            "qrels: a grade does not fit in 64 bits; grades are small integers >= 0"
        ) from None
    if (grades < 0).any():
        _reject_grade(qids, qrels)
    sizes = np.fromiter(map(len, judged), dtype=np.int64, count=n)
    positive = grades > 0
    rel_q = np.repeat(np.arange(n, dtype=np.int64), sizes)[positive]
    rel_grade = grades[positive]
    rel_doc = list(compress(chain.from_iterable(judged), positive.tolist()))
    counts = np.bincount(rel_q, minlength=n)
    # the ideal ranking: each query's positive grades, largest first
    order = np.lexsort((-rel_grade, rel_q))
    sorted_q = rel_q[order]
    place = np.arange(len(order)) - (np.cumsum(counts) - counts)[sorted_q]
    keep = place < depth
    ideal = np.zeros((n, depth), dtype=np.float64)
    ideal[sorted_q[keep], place[keep]] = rel_grade[order][keep]
    return rel_q, rel_doc, rel_grade, ideal, counts.astype(np.float64)


def _place_relevant(
    rows: Sequence[Mapping[str, float]],
    scores: np.ndarray,
    lengths: np.ndarray,
    rel_q: np.ndarray,
    rel_doc: list[str],
    rel_grade: np.ndarray,
    depth: int,
) -> np.ndarray:
    """The ``(n_queries, depth)`` grade matrix from the positively graded documents' ranks.

    A retrieved document's 0-based rank is the number of its query's documents with a higher
    score, plus those with an equal score and a larger id (trec_eval's order). ``scores`` holds
    every row's values in order, ``lengths`` the row sizes.
    """
    grades = np.zeros((len(rows), depth), dtype=np.float64)
    found = [rows[q].get(doc_id) for q, doc_id in zip(rel_q.tolist(), rel_doc, strict=True)]
    inside_run = np.fromiter((v is not None for v in found), dtype=bool, count=len(found))
    if not inside_run.any():
        return grades
    picked = np.flatnonzero(inside_run)
    iq = rel_q[picked]
    sv = np.array([float(found[j]) for j in picked.tolist()], dtype=np.float64)
    item_g = rel_grade[picked].astype(np.float64)
    widest = int(lengths.max())
    if len(rows) * widest <= 2 * len(scores) + 1024:
        higher, equal = _count_padded(scores, lengths, widest, iq, sv)
    else:  # a few very long rows: compare each item with its own row only
        higher, equal = _count_segments(scores, lengths, iq, sv)
    for j in np.flatnonzero((equal > 1) & (higher < depth)):
        # tied scores: trec_eval puts larger document ids first
        doc, value = str(rel_doc[picked[j]]), float(sv[j])
        row = rows[int(iq[j])]
        higher[j] += sum(1 for d, v in row.items() if float(v) == value and str(d) > doc)
    inside = higher < depth
    grades[iq[inside], higher[inside]] = item_g[inside]
    return grades


def _count_padded(
    scores: np.ndarray, lengths: np.ndarray, widest: int, iq: np.ndarray, sv: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Per item, how many of its row's scores are higher and how many equal, from the rows laid
    out as one ``(n_rows, widest)`` matrix padded with NaN (which compares neither higher nor
    equal); items are compared in blocks of about :data:`COMPARE_CHUNK` cells."""
    if widest == 0 or len(scores) == len(lengths) * widest:
        matrix = scores.reshape(len(lengths), widest)
    else:
        matrix = np.full((len(lengths), widest), np.nan)
        matrix[np.arange(widest) < lengths[:, None]] = scores
    higher = np.empty(len(iq), dtype=np.int64)
    equal = np.empty(len(iq), dtype=np.int64)
    step = max(1, COMPARE_CHUNK // max(widest, 1))
    for start in range(0, len(iq), step):
        block = matrix[iq[start : start + step]]
        ref = sv[start : start + step, None]
        higher[start : start + step] = np.count_nonzero(block > ref, axis=1)
        equal[start : start + step] = np.count_nonzero(block == ref, axis=1)
    return higher, equal


def _count_segments(
    scores: np.ndarray, lengths: np.ndarray, iq: np.ndarray, sv: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """As :func:`_count_padded`, for rows of very different lengths: each item is compared with
    its own row's segment of ``scores``, in chunks of about :data:`COMPARE_CHUNK` comparisons."""
    offsets = np.cumsum(lengths) - lengths
    higher = np.empty(len(iq), dtype=np.int64)
    equal = np.empty(len(iq), dtype=np.int64)
    # compare each item with its row's scores, in chunks of about 4M comparisons
    seg = lengths[iq]
    start = 0
    while start < len(iq):
        stop, budget = start, 0
        while stop < len(iq) and (stop == start or budget + seg[stop] <= COMPARE_CHUNK):
            budget += int(seg[stop])
            stop += 1
        L = seg[start:stop]
        before = np.cumsum(L) - L
        idx = np.arange(int(L.sum())) - np.repeat(before, L) + np.repeat(offsets[iq[start:stop]], L)
        vals = scores[idx]
        ref = np.repeat(sv[start:stop], L)
        higher[start:stop] = np.add.reduceat(vals > ref, before)
        equal[start:stop] = np.add.reduceat(vals == ref, before)
        start = stop
    return higher, equal

"""Per-query retrieval metrics, equal to trec_eval's (through pytrec_eval) on the same run.

Every metric returns one float64 per query; averages are taken by the caller, so intervals and
paired tests can use the per-query arrays. All metrics are computed from what a run found
(:class:`Judged`): the rank and grade of each positively graded document within the deepest
cut-off, and each query's ideal ranking; never a ``(n_queries, k)`` matrix. A run comes as
pytrec_eval-style dicts (:func:`score_run`) or as arrays (:func:`score_arrays`: a search's
top-k document numbers, no dict per query). The kernels that score a :class:`Judged` and the
registry of families (:data:`METRICS`) are in :mod:`.kernels`.

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

import itertools
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import chain

import numpy as np

from ..core.exceptions import ConfigError, MetricError
from .kernels import CONDENSED, METRICS, REPORTED, Judged

__all__ = [
    "CONDENSED",
    "DEFAULT_K",
    "MAX_CUTOFF",
    "METRICS",
    "REPORTED",
    "Judged",
    "MetricName",
    "QrelArrays",
    "compute",
    "judge_arrays",
    "parse_cutoffs",
    "parse_metric",
    "rank_run",
    "score_arrays",
    "score_run",
]

#: the cut-offs a run computes when neither the marker, embedbench.yaml nor evaluate() names any
DEFAULT_K: tuple[int, ...] = (1, 5, 10, 100)
#: the deepest cut-off a run takes: each query's ranking is held to the deepest k (a search
#: allocates queries x k), and BEIR and MTEB stop at 1,000; a k past the corpus is fine (it
#: scores the whole ranking), 10**12 would ask for terabytes
MAX_CUTOFF = 10_000

#: comparisons per chunk when ranking the relevant documents of a run (memory: ~17 bytes each)
COMPARE_CHUNK = 4 * 1024 * 1024

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

    ``value`` is an integer or a list of integers from 1 to :data:`MAX_CUTOFF`; ``None`` means
    :data:`DEFAULT_K`. The run computes exactly these (``k=5`` computes ``@5`` only); a bad
    value is a ConfigError that starts with ``where`` (the file and key, or the marker)::

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
    if max(values) > MAX_CUTOFF:
        raise ConfigError(
            f"{where}: {max(values)!r} is deeper than the {MAX_CUTOFF:,} a run retrieves per "
            f"query (each query's ranking is held to the deepest k); a k beyond the corpus "
            f"scores the whole ranking, so use at most {MAX_CUTOFF}, e.g. [1, 10, 100, 1000]"
        )
    return tuple(sorted(set(values)))


def _names(metrics: Iterable[str | MetricName], where: str) -> tuple[list[str], int]:
    """The canonical metric names and the deepest cut-off; no name is an error."""
    parsed = [parse_metric(m) for m in metrics]
    if not parsed:
        raise MetricError(f"{where}: no metric names given; e.g. ['ndcg@10']")
    return [str(m) for m in parsed], max(m.k for m in parsed)


def compute(names: Iterable[str | MetricName], judged: Judged) -> dict[str, np.ndarray]:
    """Per-query arrays for each metric name from what a run found (see :class:`Judged`)."""
    out: dict[str, np.ndarray] = {}
    for raw in names:
        metric = parse_metric(raw)
        out[str(metric)] = METRICS[metric.family](judged, metric.k)
    return out


def _judged(
    n: int,
    depth: int,
    items: tuple[np.ndarray, np.ndarray, np.ndarray],
    ideal: tuple[np.ndarray, np.ndarray, np.ndarray],
    num_rel: np.ndarray,
    retrieved: np.ndarray | None = None,
) -> Judged:
    """A :class:`Judged` from found judged items (any grade, 0 included) in any order, sorted
    here by query, then rank; the positively graded ones are what the metrics score."""
    q, rank, grade = items
    order = np.lexsort((rank, q))
    q, rank, grade = q[order], rank[order], grade[order]
    positive = grade > 0
    return Judged(
        n,
        depth,
        q[positive],
        rank[positive],
        grade[positive].astype(np.float64),
        *ideal,
        num_rel,
        q,
        rank,
        retrieved,
    )


def _ideal(
    rel_q: np.ndarray, rel_grade: np.ndarray, n: int, depth: int
) -> tuple[tuple[np.ndarray, np.ndarray, np.ndarray], np.ndarray]:
    """Each query's ideal ranking (its positive grades, largest first, cut at ``depth``) as
    (query, place, grade) sorted by query then place, and the relevant counts (float64)."""
    counts = np.bincount(rel_q, minlength=n)
    order = np.lexsort((-rel_grade, rel_q))
    sorted_q = rel_q[order]
    place = np.arange(len(order)) - (np.cumsum(counts) - counts)[sorted_q]
    keep = place < depth
    grades = rel_grade[order][keep].astype(np.float64)
    return (sorted_q[keep], place[keep], grades), counts.astype(np.float64)


@dataclass(frozen=True)
class QrelArrays:
    """Qrels as flat arrays, for :func:`score_arrays`: judgement ``i`` gives document number
    ``doc[i]`` the grade ``grade[i]`` (an integer >= 0) for query row ``query[i]`` (0 to
    ``n_queries - 1``). ``numbers`` maps document ids to their numbers when the arrays were
    made by :meth:`from_dict`.

    Usage::

        qrels = QrelArrays.from_dict({"q1": {"d1": 2, "d2": 1}})
        docs = qrels.rank_matrix([["d3", "d1"]], depth=10)   # [[2, 0, -1, ...]]
        score_arrays(qrels, docs, ["ndcg@10"])["ndcg@10"]    # array([0.4...])
    """

    n_queries: int
    query: np.ndarray
    doc: np.ndarray
    grade: np.ndarray
    numbers: Mapping[str, int] = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self) -> None:
        arrays = {"query": self.query, "doc": self.doc, "grade": self.grade}
        for name, value in arrays.items():
            value = np.asarray(value)
            if value.ndim != 1 or not (value.size == 0 or np.issubdtype(value.dtype, np.integer)):
                raise MetricError(
                    f"QrelArrays.{name}: {value.dtype} array of shape {value.shape}; "
                    "use a 1-d integer array"
                )
            object.__setattr__(self, name, value.astype(np.int64, copy=False))
        if not len(self.query) == len(self.doc) == len(self.grade):
            raise MetricError(
                f"QrelArrays: query, doc and grade have {len(self.query)}, {len(self.doc)} and "
                f"{len(self.grade)} entries; give one of each per judgement"
            )
        for name, bad in (
            ("query", (self.query < 0) | (self.query >= self.n_queries)),
            ("doc", self.doc < 0),
            ("grade", self.grade < 0),
        ):
            if bad.any():
                i = int(np.argmax(bad))
                rule = f"within [0, {self.n_queries})" if name == "query" else "integers >= 0"
                raise MetricError(
                    f"QrelArrays.{name}[{i}] = {int(getattr(self, name)[i])}: must be {rule}"
                )

    @classmethod
    def from_dict(
        cls, qrels: Mapping[str, Mapping[str, int]], qids: Sequence[str] | None = None
    ) -> QrelArrays:
        """Arrays for pytrec_eval-style qrels ``{qid: {docid: grade}}``, one row per query of
        ``qids`` (default: the qrels' own order); the judged documents are numbered 0, 1, ...
        in the order first seen (:attr:`numbers`). A bad grade is a MetricError naming it."""
        qids = list(qrels) if qids is None else list(qids)
        judged = [qrels[qid] for qid in qids]
        grades = _grades(qids, qrels, judged)
        sizes = np.fromiter(map(len, judged), dtype=np.int64, count=len(judged))
        ids = list(chain.from_iterable(judged))
        numbers = {doc_id: i for i, doc_id in enumerate(dict.fromkeys(ids))}
        doc = np.fromiter(map(numbers.__getitem__, ids), dtype=np.int64, count=len(ids))
        query = np.repeat(np.arange(len(qids), dtype=np.int64), sizes)
        return cls(len(qids), query, doc, grades, numbers)

    def rank_matrix(self, rankings: Sequence[Sequence[str]], depth: int) -> np.ndarray:
        """The ``(len(rankings), depth)`` document numbers of ranked id lists, best first, for
        :func:`judge_arrays` without scores: ``len(numbers)`` for every document outside
        :attr:`numbers` (never judged: any number no judgement has), -1 past a ranking's end."""
        cut = [ranking[:depth] for ranking in rankings]
        lengths = np.fromiter(map(len, cut), dtype=np.int64, count=len(cut))
        flat = np.fromiter(
            map(self.numbers.get, chain.from_iterable(cut), itertools.repeat(len(self.numbers))),
            dtype=np.int64,
            count=int(lengths.sum()),
        )
        out = np.full((len(cut), depth), -1, dtype=np.int64)
        out[np.arange(depth) < lengths[:, None]] = flat
        return out


def judge_arrays(
    qrels: QrelArrays, docs: np.ndarray, depth: int, *, scores: np.ndarray | None = None
) -> Judged:
    """What the metrics read (:class:`Judged`) from a run as arrays.

    ``docs`` is ``(n_queries, width)``: each row's document numbers (>= 0; any negative number
    marks an empty place, e.g. -1 past the end of a short row). Without ``scores`` the rows are
    in rank order (best first, empty places last), as a search returns them. With ``scores``
    (the same shape) the rows are in any order and ranked as trec_eval does: score descending,
    then document number descending, so the numbers must compare as the ids do (number the
    documents in sorted id order). A document appears at most once per row.
    """
    docs = np.asarray(docs)
    if docs.ndim != 2 or not (docs.size == 0 or np.issubdtype(docs.dtype, np.integer)):
        raise MetricError(
            f"run documents: {docs.dtype} array of shape {docs.shape}; use a 2-d integer "
            "array, one row per query"
        )
    if len(docs) != qrels.n_queries:
        raise MetricError(
            f"run documents: {len(docs)} rows for {qrels.n_queries} queries in the qrels; "
            "give one row per query (an empty row is all -1)"
        )
    n = qrels.n_queries
    if scores is not None:
        scores = _check_scores(docs, scores)
    else:
        docs = docs[:, :depth]  # ranks past the deepest cut-off change nothing
        _check_ranked(docs)
    positive = qrels.grade > 0
    ideal, num_rel = _ideal(qrels.query[positive], qrels.grade[positive], n, depth)
    # every judgement is placed (grade 0 too: judged@k and the condensed lists count them)
    rel_q, rel_doc, rel_grade = qrels.query, qrels.doc, qrels.grade
    width = docs.shape[1]
    retrieved = np.minimum(np.count_nonzero(docs >= 0, axis=1), depth).astype(np.int64)
    if width == 0 or len(rel_q) == 0:
        empty = np.zeros(0, dtype=np.int64)
        return _judged(n, depth, (empty, empty, empty), ideal, num_rel, retrieved)
    found_q, found_rank, found_grade = [], [], []
    step = max(1, COMPARE_CHUNK // width)
    for start in range(0, len(rel_q), step):
        iq, doc = rel_q[start : start + step], rel_doc[start : start + step]
        block = docs[iq]
        same = block == doc[:, None]
        count = np.count_nonzero(same, axis=1)
        if (count > 1).any():
            j = int(np.argmax(count > 1))
            raise MetricError(
                f"run documents: row {int(iq[j])} lists document {int(doc[j])} {int(count[j])} "
                "times; a document appears at most once per row"
            )
        inside = count == 1
        pos = np.argmax(same, axis=1)[inside]
        iq, doc = iq[inside], doc[inside]
        if scores is None:
            rank = pos
        else:
            block = block[inside]
            row_scores, valid = scores[iq], block >= 0
            value = row_scores[np.arange(len(iq)), pos][:, None]
            higher = np.count_nonzero((row_scores > value) & valid, axis=1)
            tied = (row_scores == value) & valid & (block > doc[:, None])
            rank = higher + np.count_nonzero(tied, axis=1)
        keep = rank < depth
        found_q.append(iq[keep])
        found_rank.append(rank[keep])
        found_grade.append(rel_grade[start : start + step][inside][keep])
    items = (np.concatenate(found_q), np.concatenate(found_rank), np.concatenate(found_grade))
    return _judged(n, depth, items, ideal, num_rel, retrieved)


def _check_scores(docs: np.ndarray, scores: np.ndarray) -> np.ndarray:
    """``scores`` as float64 of ``docs``' shape; a NaN at a filled place is an error."""
    scores = np.asarray(scores)
    if scores.shape != docs.shape or not (
        scores.size == 0 or np.issubdtype(scores.dtype, np.number)
    ):
        raise MetricError(
            f"run scores: {scores.dtype} array of shape {scores.shape} for documents of shape "
            f"{docs.shape}; give one number per document"
        )
    scores = scores.astype(np.float64, copy=False)
    if np.isnan(scores).any():
        bad = np.isnan(scores) & (docs >= 0)
        if bad.any():
            row, col = (int(x) for x in np.unravel_index(int(np.argmax(bad)), bad.shape))
            raise MetricError(
                f"run scores[{row}, {col}] (document {int(docs[row, col])}) is NaN; "
                "every retrieved document needs a score"
            )
    return scores


def _check_ranked(docs: np.ndarray) -> None:
    """Rows in rank order keep their empty places (negative numbers) at the end."""
    if docs.shape[1] < 2 or docs.size == 0 or docs.min() >= 0:  # one pass when rows are full
        return
    gap = (docs[:, :-1] < 0) & (docs[:, 1:] >= 0)
    if gap.any():
        row, col = (int(x) for x in np.unravel_index(int(np.argmax(gap)), gap.shape))
        raise MetricError(
            f"run documents: row {row} has an empty place at rank {col + 1} before document "
            f"{int(docs[row, col + 1])}; rows in rank order keep empty places (-1) at the end, "
            "or pass scores= to rank them"
        )


def score_arrays(
    qrels: QrelArrays,
    docs: np.ndarray,
    metrics: Iterable[str | MetricName],
    *,
    scores: np.ndarray | None = None,
) -> dict[str, np.ndarray]:
    """Score a run given as arrays: ``{metric: per-query values}``, one value per qrels row.

    The array path of :func:`score_run`, for a run that is already arrays (a search's top-k
    document numbers, ``(n_queries, depth)``): no dict per query. See :func:`judge_arrays`
    for the layout of ``docs`` and ``scores``. Values equal pytrec_eval's bit for bit.

    Usage::

        qrels = QrelArrays(2, query=[0, 1], doc=[7, 3], grade=[1, 2])
        score_arrays(qrels, np.array([[7, 2], [5, 3]]), ["mrr@10"])  # {'mrr@10': [1.0, 0.5]}
    """
    names, depth = _names(metrics, "score_arrays")
    return compute(names, judge_arrays(qrels, docs, depth, scores=scores))


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
    Values equal pytrec_eval's bit for bit (the same sums in the same order). A run that is
    already arrays (a search's top-k) is scored faster by :func:`score_arrays`.

    Usage::

        score_run(qrels, run, ["ndcg@10", "recall@100"])["ndcg@10"]["q1"]
    """
    names, depth = _names(metrics, "score_run")
    qids = list(qrels)
    n = len(qids)
    # only judged documents can change a metric (the positively graded ones the official
    # metrics, every judged one judged@k and the condensed lists): place each one by its
    # rank, counted from the run's scores, instead of sorting every run
    rel_q, rel_doc, rel_grade = _judgements(qids, qrels)
    positive = rel_grade > 0
    ideal, num_rel = _ideal(rel_q[positive], rel_grade[positive], n, depth)
    rows = [run.get(qid) or {} for qid in qids]
    lengths = np.fromiter(map(len, rows), dtype=np.int64, count=n)
    scores = _run_scores(rows, int(lengths.sum()))
    items = _place_relevant(rows, scores, lengths, rel_q, rel_doc, rel_grade, depth)
    retrieved = np.minimum(lengths, depth)
    arrays = compute(names, _judged(n, depth, items, ideal, num_rel, retrieved))
    return {name: dict(zip(qids, values.tolist(), strict=True)) for name, values in arrays.items()}


def _reject_grade(qids: Sequence[str], qrels: Mapping[str, Mapping[str, int]]) -> None:
    """Raise the MetricError naming the first grade that is not an integer >= 0."""
    for qid in qids:
        for doc_id, grade in qrels[qid].items():
            if isinstance(grade, bool) or not isinstance(grade, (int, np.integer)) or grade < 0:
                raise MetricError(
                    f"qrels[{qid!r}][{doc_id!r}] = {grade!r}: grades must be integers >= 0"
                )


def _grades(
    qids: Sequence[str],
    qrels: Mapping[str, Mapping[str, int]],
    judged: Sequence[Mapping[str, int]],
) -> np.ndarray:
    """Every grade of ``judged`` (the qrels of ``qids``) in order, as int64, checked in bulk
    (their types, then their signs); a bad one is a MetricError naming its query and
    document."""
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
    return grades


def _judgements(
    qids: Sequence[str], qrels: Mapping[str, Mapping[str, int]]
) -> tuple[np.ndarray, list[str], np.ndarray]:
    """The judged documents of every query (any grade), as flat arrays: query index, document
    id, grade."""
    judged = [qrels[qid] for qid in qids]
    grades = _grades(qids, qrels, judged)
    sizes = np.fromiter(map(len, judged), dtype=np.int64, count=len(qids))
    rel_q = np.repeat(np.arange(len(qids), dtype=np.int64), sizes)
    return rel_q, list(chain.from_iterable(judged)), grades


def _place_relevant(
    rows: Sequence[Mapping[str, float]],
    scores: np.ndarray,
    lengths: np.ndarray,
    rel_q: np.ndarray,
    rel_doc: list[str],
    rel_grade: np.ndarray,
    depth: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The judged documents found in the top ``depth``: query, rank, grade.

    A retrieved document's 0-based rank is the number of its query's documents with a higher
    score, plus those with an equal score and a larger id (trec_eval's order). ``scores`` holds
    every row's values in order, ``lengths`` the row sizes.
    """
    found = [rows[q].get(doc_id) for q, doc_id in zip(rel_q.tolist(), rel_doc, strict=True)]
    inside_run = np.fromiter((v is not None for v in found), dtype=bool, count=len(found))
    if not inside_run.any():
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty, empty
    picked = np.flatnonzero(inside_run)
    iq = rel_q[picked]
    sv = np.array([float(found[j]) for j in picked.tolist()], dtype=np.float64)
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
    return iq[inside], higher[inside], rel_grade[picked][inside]


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

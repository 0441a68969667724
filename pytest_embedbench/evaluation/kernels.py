"""The metric kernels: what a run found (:class:`Judged`) in, one float64 per query out, each
kernel with its formula and the trec_eval name it equals; and the registry of metric families
(:data:`METRICS`). :mod:`.metrics` builds a :class:`Judged` from a run and names the metrics
(``"ndcg@10"``); this module only scores, as ranx keeps its per-query kernels apart from the
documented public functions. Usage::

    from pytest_embedbench.evaluation.metrics import QrelArrays, judge_arrays
    judged = judge_arrays(QrelArrays.from_dict({"q": {"d1": 1}}), docs, depth=10)
    METRICS["ndcg"](judged, 10)        # one value per query
    METRICS["judged"](judged.condensed, 10)
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

__all__ = ["CONDENSED", "METRICS", "REPORTED", "Judged", "MetricFn"]

MetricFn = Callable[["Judged", int], np.ndarray]


def _log2_ranks(k: int) -> np.ndarray:
    """``log2(rank + 1)`` for ranks 1..k, from C's log2 as trec_eval calls it."""
    return np.array([math.log2(i + 2) for i in range(k)], dtype=np.float64)


def _slots(q: np.ndarray) -> np.ndarray:
    """For items sorted by query: each item's place within its query (0, 1, 2, ...)."""
    if len(q) == 0:
        return np.zeros(0, dtype=np.int64)
    first = np.empty(len(q), dtype=bool)
    first[0] = True
    np.not_equal(q[1:], q[:-1], out=first[1:])
    starts = np.flatnonzero(first)
    return np.arange(len(q), dtype=np.int64) - starts[np.cumsum(first) - 1]


def _ordered_sum(q: np.ndarray, slot: np.ndarray, terms: np.ndarray, n: int) -> np.ndarray:
    """Per query, its terms added left to right in slot order, starting from 0.0, as
    trec_eval's loops do (a pairwise or BLAS sum could differ in the last bit): vectorised over
    the queries, one step per slot. The ranks between two terms hold zero terms, which add
    exactly nothing, so only the non-zero terms are stored."""
    out = np.zeros(n, dtype=np.float64)
    if len(q) == 0:
        return out
    order = np.argsort(slot, kind="stable")
    q, terms, slot = q[order], terms[order], slot[order]
    bounds = np.searchsorted(slot, np.arange(int(slot[-1]) + 2))
    for a, b in itertools.pairwise(bounds.tolist()):
        out[q[a:b]] += terms[a:b]  # one term per query in a slot: no repeated index
    return out


@dataclass(frozen=True)
class Judged:
    """What every metric reads, for ``n`` queries, without a ``(queries, depth)`` matrix.

    ``q``, ``rank``, ``grade``: each positively graded document found in its query's top
    ``depth`` (query row, 0-based rank in trec_eval's order, grade), sorted by query then rank;
    ``ideal_q``, ``ideal_rank``, ``ideal_grade``: each query's ideal ranking (its positive
    grades, largest first, cut at ``depth``) in the same layout; ``num_rel``: each query's
    count of documents graded >= 1, retrieved or not. ``seen_q``, ``seen_rank``: every judged
    document (any grade, 0 included) found in the top ``depth``, in the same layout;
    ``retrieved``: each query's count of retrieved documents within ``depth`` (what judged@k
    and the condensed lists read; empty arrays when built without them: nothing judged).
    """

    n: int
    depth: int
    q: np.ndarray
    rank: np.ndarray
    grade: np.ndarray
    ideal_q: np.ndarray
    ideal_rank: np.ndarray
    ideal_grade: np.ndarray
    num_rel: np.ndarray
    seen_q: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    seen_rank: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    retrieved: np.ndarray | None = None

    @cached_property
    def condensed(self) -> Judged:
        """The same run as a condensed list (Sakai 2007, "Alternatives to Bpref"): every
        unjudged document removed from each ranking, the judged ones moved up in their order,
        so each judged document's rank is the number of judged documents above it. The
        ranking is the run's own, to its ``depth``; trec_eval's ``-J`` (pytrec_eval's
        ``judged_docs_only_flag``) scores the same lists."""
        seen_slot = _slots(self.seen_q)
        # each positive item is one of the seen items: its condensed rank is its slot there
        width = np.int64(self.depth + 1)
        keys = self.seen_q * width + self.seen_rank
        at = np.searchsorted(keys, self.q * width + self.rank)
        counts = np.bincount(self.seen_q, minlength=self.n).astype(np.int64)
        return Judged(
            self.n,
            self.depth,
            self.q,
            seen_slot[at] if len(at) else np.zeros(0, dtype=np.int64),
            self.grade,
            self.ideal_q,
            self.ideal_rank,
            self.ideal_grade,
            self.num_rel,
            self.seen_q,
            seen_slot,
            counts,
        )

    def top(self, k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """The found items within the top ``k``: query, rank, grade and place in the query."""
        keep = self.rank < k
        q = self.q[keep]
        return q, self.rank[keep], self.grade[keep], _slots(q)

    def hits(self, k: int) -> np.ndarray:
        """Per query, how many relevant documents are in the top ``k`` (float64)."""
        return np.bincount(self.q[self.rank < k], minlength=self.n).astype(np.float64)


def ndcg(judged: Judged, k: int) -> np.ndarray:
    """nDCG@k = DCG@k / IDCG@k with DCG@k = sum_{i<=k} grade_i / log2(i + 1).

    IDCG@k uses the query's judged grades sorted descending (trec_eval ``ndcg_cut``,
    Järvelin and Kekäläinen 2002). 0 when the query has no positive grade.
    """
    logs = _log2_ranks(k)
    q, rank, grade, slot = judged.top(k)
    dcg = _ordered_sum(q, slot, grade / logs[rank], judged.n)
    keep = judged.ideal_rank < k
    irank = judged.ideal_rank[keep]
    idcg = _ordered_sum(
        judged.ideal_q[keep], irank, judged.ideal_grade[keep] / logs[irank], judged.n
    )
    out = np.zeros(judged.n)
    np.divide(dcg, idcg, out=out, where=idcg > 0)
    return out


def mrr(judged: Judged, k: int) -> np.ndarray:
    """MRR@k = 1 / rank of the first relevant document within the top k, else 0.

    trec_eval ``recip_rank`` on the run cut at k.
    """
    q, rank, _, slot = judged.top(k)
    first = slot == 0
    out = np.zeros(judged.n)
    out[q[first]] = 1.0 / (rank[first] + 1.0)
    return out


def recall(judged: Judged, k: int) -> np.ndarray:
    """Recall@k = |relevant in top k| / |relevant| (trec_eval ``recall_k``); 0 without relevant."""
    out = np.zeros(judged.n)
    np.divide(judged.hits(k), judged.num_rel, out=out, where=judged.num_rel > 0)
    return out


def precision(judged: Judged, k: int) -> np.ndarray:
    """Precision@k = |relevant in top k| / k, even when fewer were retrieved (trec_eval ``P_k``)."""
    return judged.hits(k) / float(k)


def hit(judged: Judged, k: int) -> np.ndarray:
    """Hit@k = 1 when any relevant document is in the top k (trec_eval ``success_k``)."""
    return (judged.hits(k) > 0).astype(np.float64)


def average_precision(judged: Judged, k: int) -> np.ndarray:
    """MAP@k = sum over relevant ranks i <= k of precision@i, divided by |relevant|.

    trec_eval ``map_cut_k``: the divisor is every relevant document, retrieved or not.
    """
    q, rank, _, slot = judged.top(k)
    # precision at the i-th relevant document's rank r: i / r (both counted from 1)
    total = _ordered_sum(q, slot, (slot + 1.0) / (rank + 1.0), judged.n)
    out = np.zeros(judged.n)
    np.divide(total, judged.num_rel, out=out, where=judged.num_rel > 0)
    return out


def judged_share(judged: Judged, k: int) -> np.ndarray:
    """Judged@k = |documents in the top k that carry any judgment (grade 0 included)| /
    min(k, |retrieved|); 0 when nothing was retrieved.

    How much of a top k the qrels cover: every unjudged document counts as not relevant, so a
    low judged@k says the official metrics may understate a model that finds good documents
    nobody judged. ir_measures' ``Judged@k`` (OpenNIR's judgment rate), i.e. trec_eval's
    ``P_k`` with every judged document counted relevant, over the ranks the run filled.
    """
    count = np.bincount(judged.seen_q[judged.seen_rank < k], minlength=judged.n)
    retrieved = judged.retrieved if judged.retrieved is not None else np.zeros(judged.n)
    shown = np.minimum(retrieved, k).astype(np.float64)
    out = np.zeros(judged.n)
    np.divide(count.astype(np.float64), shown, out=out, where=shown > 0)
    return out


def _condensed(fn: MetricFn) -> MetricFn:
    """``fn`` scored on the condensed lists (:attr:`Judged.condensed`)."""

    def condensed(judged: Judged, k: int) -> np.ndarray:
        return fn(judged.condensed, k)

    condensed.__name__ = f"condensed_{fn.__name__}"
    condensed.__doc__ = (
        f"{fn.__name__} on the condensed lists: unjudged documents removed from each ranking "
        "before it is scored (trec_eval -J; Sakai 2007).\n\n" + (fn.__doc__ or "")
    )
    return condensed


_OFFICIAL: dict[str, MetricFn] = {
    "hit": hit,
    "map": average_precision,
    "mrr": mrr,
    "ndcg": ndcg,
    "precision": precision,
    "recall": recall,
}

#: the condensed-list variant of every official family, by its name (``condensed_ndcg``)
CONDENSED: dict[str, str] = {f"condensed_{name}": name for name in _OFFICIAL}

#: Metric families by name; a metric is named ``"<family>@<k>"``, e.g. ``"ndcg@10"``: the
#: official ones (on the human judgments as they are), ``judged`` (judged@k) and the
#: condensed-list variants (``condensed_ndcg@10``: scored with the unjudged documents removed)
METRICS: dict[str, MetricFn] = {
    **_OFFICIAL,
    "judged": judged_share,
    **{name: _condensed(_OFFICIAL[base]) for name, base in CONDENSED.items()},
}

#: the families every result reports (``result.metrics()``, the reports, the JSON): the
#: official ones, judged@k and condensed nDCG; the other condensed families on request
#: (``result.metric("condensed_map@100")``, a threshold key)
REPORTED: tuple[str, ...] = (*_OFFICIAL, "judged", "condensed_ndcg")

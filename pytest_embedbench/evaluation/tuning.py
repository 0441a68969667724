"""Tuning a hybrid's fusion weight on queries it is not scored on.

``hybrid:A+B`` with ``tune`` searches the first leg's weight ``w`` (the second leg takes
``1 - w``) over a grid, maximising a metric (nDCG@10 by default) on tuning queries, then the run
is scored with the best weight on the other queries only, so the figure it reports was not fit on
the queries it reports (Bruch et al. find the convex weight can be tuned from few queries; ranx's
``optimize_fusion`` and Anserini's weighted fusion do the same search):

* ``tune: dev`` (``split``): the queries and judgments of another split of the same BEIR folder
  tune; every test query they share is left out of the scored run;
* ``tune: {share: 0.2}``: a seeded share of the test queries tunes (the evaluator's seed unless
  ``seed`` is given), the others are scored.

Each leg searches a tuning query once; the grid only re-fuses those answers (a chunked corpus
re-pools each weight's fused chunks). Ties between weights go to the first in grid order. The
search is recorded on the retriever (:class:`Tuning`) and reaches the report as the model's
``fusion`` info.

Usage::

    ev = Evaluator(seed=0)
    result = ev.evaluate(ModelSpec("hybrid:hf:...+bm25", fusion="convex", tune={"share": 0.2}), ds)
    result.model_info["fusion"]["tuned"]["weight"]       # the weight the run used
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..core.exceptions import ConfigError, DatasetError
from ..data.datasets import RetrievalDataset, load_dataset
from ..models.providers import Retriever
from ..retrieval.fusion import HybridRetriever, TuneSettings
from ..retrieval.pooling import PooledRetriever
from .metrics import parse_metric, score_run

__all__ = ["Tuning", "fusion_info", "hybrid_of", "tune_fusion"]


@dataclass(frozen=True)
class Tuning:
    """What a weight search found: the weights the run used, where they were tuned and the
    grid's scores (the mean of ``metric`` over the tuning queries, one per weight)."""

    weights: tuple[float, float]
    on: str
    metric: str
    tuning_queries: int
    held_out_queries: int
    seed: int | None
    grid: tuple[float, ...]
    grid_scores: tuple[float, ...]
    seconds: float
    #: the ids of the tuning queries (left out of the scored run)
    query_ids: tuple[str, ...]

    @property
    def best_score(self) -> float:
        return max(self.grid_scores)

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        del out["query_ids"], out["seconds"]  # bulky, and a timing in a fingerprinted block
        out["weights"] = list(self.weights)
        out["grid"] = list(self.grid)
        out["grid_scores"] = list(self.grid_scores)
        out["weight"] = self.weights[0]
        out["score"] = self.best_score
        return out


def hybrid_of(retriever: Retriever) -> HybridRetriever | None:
    """The fusing retriever inside ``retriever`` (through chunk pooling), or None."""
    while isinstance(retriever, PooledRetriever):
        retriever = retriever.inner
    return retriever if isinstance(retriever, HybridRetriever) else None


def fusion_info(retriever: Retriever) -> dict[str, Any] | None:
    """The report's ``fusion`` block of a hybrid: its function, normalisation, weights and,
    when tuned, the search (None for a retriever that fuses nothing)."""
    hybrid = hybrid_of(retriever)
    if hybrid is None:
        return None
    info: dict[str, Any] = {"fusion": hybrid.fusion, "weights": list(hybrid.weights)}
    if hybrid.fusion == "convex":
        info["norm"] = hybrid.norm
    else:
        info["rrf_k"] = hybrid.rrf_k
    if hybrid.tuning is not None:
        info["tuned"] = hybrid.tuning.to_dict()
    return info


def tune_fusion(
    retriever: Retriever, ds: RetrievalDataset, *, seed: int
) -> tuple[RetrievalDataset, Tuning | None]:
    """Tune ``retriever``'s fusion weight when its hybrid asks to (``tune``), and the dataset
    its run is scored on: ``ds`` without the tuning queries. A hybrid tuned before (a noise
    sweep reuses the retriever) keeps its weight and leaves out the same queries."""
    hybrid = hybrid_of(retriever)
    if hybrid is None or hybrid.tune is None:
        return ds, None
    settings = hybrid.tune
    if hybrid.tuning is None:
        hybrid.tuning = _search(retriever, hybrid, ds, settings, seed)
    tuning = hybrid.tuning
    held_out = ds.without_queries(tuning.query_ids, reason=f"fusion weight tuned on {tuning.on}")
    return held_out, tuning


def _tuning_set(
    ds: RetrievalDataset, settings: TuneSettings, seed: int
) -> tuple[dict[str, str], dict[str, dict[str, int]], str]:
    """The tuning queries (id -> text), their judgments and where they came from."""
    if settings.share is not None:
        n = len(ds.queries)
        count = round(settings.share * n)
        if count < 1 or count >= n:
            raise ConfigError(
                f"hybrid tune share={settings.share:g} of {n} queries picks {count}: tuning "
                "needs at least one query and the scored run at least one other; use a "
                "share between "
                f"{1 / n:.3g} and {(n - 1) / n:.3g}, or tune on a split (tune: dev)"
            )
        rng = np.random.default_rng(settings.seed if settings.seed is not None else seed)
        picked = sorted(rng.choice(n, size=count, replace=False).tolist())
        queries = [ds.queries[i] for i in picked]
        return (
            {q.id: q.text for q in queries},
            {q.id: dict(ds.qrels[q.id]) for q in queries},
            f"{settings.describe()} ({count} of {n} queries)",
        )
    split = str(settings.split)
    root = Path(ds.source) if ds.source else None
    if root is None or not (root / "corpus.jsonl").is_file():
        raise ConfigError(
            f"hybrid tune split={split!r}: tuning on a split needs a BEIR folder (corpus.jsonl "
            f"and qrels/{split}.tsv); dataset {ds.name!r} has none. Tune on a share of its "
            "queries instead: tune: {share: 0.2}"
        )
    if not (root / "qrels" / f"{split}.tsv").is_file():
        found = sorted(p.stem for p in (root / "qrels").glob("*.tsv"))
        raise ConfigError(
            f"hybrid tune split={split!r}: {root / 'qrels' / (split + '.tsv')} does not exist "
            f"(splits there: {', '.join(found) or 'none'}); name one of them, or tune on a "
            "share of the test queries: tune: {share: 0.2}"
        )
    try:
        other = load_dataset(root, split=split)
    except DatasetError as exc:
        raise ConfigError(f"hybrid tune split={split!r}: {exc}") from exc
    return (
        {q.id: q.text for q in other.queries},
        {qid: dict(j) for qid, j in other.qrels.items()},
        f"{settings.describe()} ({len(other.queries)} queries)",
    )


def _search(
    retriever: Retriever,
    hybrid: HybridRetriever,
    ds: RetrievalDataset,
    settings: TuneSettings,
    seed: int,
) -> Tuning:
    """The grid search: each leg answers each tuning query once, every weight re-fuses."""
    try:
        metric = parse_metric(settings.metric)
    except Exception as exc:  # the metric parser names the known metrics
        raise ConfigError(f"hybrid tune metric={settings.metric!r}: {exc}") from exc
    t0 = time.perf_counter()
    texts, qrels, on = _tuning_set(ds, settings, seed)
    held_out = len([q for q in ds.queries if q.id not in texts])
    if held_out == 0:
        raise ConfigError(
            f"hybrid tune split={settings.split!r}: its queries are every test query, so "
            "nothing would be left to score; tune on another split or on a share"
        )
    pooled = retriever if isinstance(retriever, PooledRetriever) else None
    depth = metric.k
    answers = {}
    for qid, text in texts.items():
        encoded = hybrid.encode(text)
        if pooled is not None:
            answers[qid] = encoded
        else:
            answers[qid] = hybrid.leg_answers(encoded, depth)
    scores = []
    for w in settings.grid:
        weights = (w, round(1.0 - w, 12))
        run: dict[str, dict[str, float]] = {}
        for qid, answer in answers.items():
            if pooled is not None:
                ids, values = _pooled_search(pooled, hybrid, answer, depth, weights)
            else:
                ids, values = hybrid.fuse(answer, weights)
                ids, values = ids[:depth], values[:depth]
            run[qid] = dict(zip(ids, values, strict=True))
        per_query = score_run(qrels, run, [str(metric)])[str(metric)]
        scores.append(float(np.mean(list(per_query.values()))) if per_query else 0.0)
    best = int(np.argmax(scores))  # the first of equal scores
    weight = settings.grid[best]
    hybrid.weights = [weight, round(1.0 - weight, 12)]
    return Tuning(
        weights=(hybrid.weights[0], hybrid.weights[1]),
        on=on,
        metric=str(metric),
        tuning_queries=len(texts),
        held_out_queries=held_out,
        seed=(settings.seed if settings.seed is not None else seed)
        if settings.share is not None
        else None,
        grid=settings.grid,
        grid_scores=tuple(scores),
        seconds=time.perf_counter() - t0,
        query_ids=tuple(texts),
    )


def _pooled_search(
    pooled: PooledRetriever,
    hybrid: HybridRetriever,
    encoded: Any,
    k: int,
    weights: tuple[float, float],
) -> tuple[list[str], list[float]]:
    """A chunked corpus: the documents of the chunks fused with ``weights``."""
    saved = hybrid.weights
    hybrid.weights = list(weights)
    try:
        ids, values, _ = pooled.search_pooled_encoded(encoded, k)
    finally:
        hybrid.weights = saved
    pooled.depths.pop()  # a tuning search is not one of the run's
    return ids, values

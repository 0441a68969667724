"""The lift of a reranked result over its first stage, and what a record keeps of the two
stages (:class:`~pytest_embedbench.records.resultdata.RerankData`): read by
:meth:`RetrievalResult.lift <pytest_embedbench.evaluation.result.RetrievalResult.lift>` and
its ``data()``. The lift is the paired bootstrap of the per-query differences (reranked minus
first stage, the same queries resampled for both), with the paired bootstrap's p-value: the
test the comparisons use (:func:`~.stats.compare_scores`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..core.exceptions import ConfigError, MetricError
from ..core.io import finite
from ..records.resultdata import LiftData, MetricData, RerankData
from .metrics import parse_metric
from .stats import Estimate, compare_scores

if TYPE_CHECKING:
    RetrievalResult = Any  # evaluation.result imports this module: no import back

__all__ = ["lift_of", "realised_cutoff", "rerank_data"]


def lift_of(result: RetrievalResult, name: str) -> Estimate:
    """``result.lift(name)``: the paired difference reranked minus first stage with its
    interval; ``.p_value`` is the paired bootstrap's (seeded). Named queries: the most hurt
    (``.worst()``)."""
    stage1 = result.stage1
    if stage1 is None:
        raise ConfigError(
            f"{result.name!r} on {result.dataset_name!r} ran without a reranker; give the "
            "embedbench marker rerankers=['none', 'hf-ce:/models/my-ce@100'] (or rerankers: in "
            "embedbench.yaml) to measure a lift"
        )
    key = str(parse_metric(name))
    if parse_metric(key).k > result.depth:
        raise MetricError(
            f"lift({key!r}): this test computes k={list(result.k)}; add {parse_metric(key).k} to k"
        )
    cache_key = f"lift:{key}"
    if cache_key not in result._estimates:
        mine, theirs = result.paired_scores(stage1, key)
        comparison = compare_scores(
            mine,
            theirs,
            test="bootstrap",
            seed=result.seed,
            n_resamples=result.n_resamples,
            level=result.level,
            name=f"lift.{key}",
        )
        est = comparison.difference
        est.p_value = comparison.p_value  # type: ignore[attr-defined]
        est.query_ids = result.query_ids
        est.query_texts = result.query_texts
        assert result.rerank is not None
        est.context = f"{result.name} reranked by {result.rerank.spec.id} on {result.dataset_name}"
        result._estimates[cache_key] = est
    return result._estimates[cache_key]


def realised_cutoff(k: tuple[int, ...]) -> int:
    """The cut-off the realised share of the ceiling is read at: 10 when computed, else the
    largest."""
    return 10 if 10 in k else max(k)


def rerank_data(result: RetrievalResult, *, per_query: bool, kept: int) -> RerankData:
    """What a record and the JSON report keep of ``result``'s reranking (see RerankData);
    ``per_query``: with the first stage's per-query scores and top ``kept`` documents."""
    run, stage1 = result.rerank, result.stage1
    assert run is not None and stage1 is not None

    names = list(result.metrics())
    lift = {}
    for name in names:
        est = lift_of(result, name)
        lift[name] = LiftData(
            value=float(est),
            low=est.low,
            high=est.high,
            n=est.n,
            p_value=est.p_value,  # type: ignore[attr-defined]
        )
    ceiling = stage1.recall(run.depth) if run.depth in stage1.k else None
    at = realised_cutoff(result.k)
    realised = None
    if ceiling is not None and float(ceiling) > 0:
        realised = float(result.recall(at)) / float(ceiling)
    detail: dict[str, Any] = {}
    if per_query:
        detail["stage1_per_query"] = {
            name: dict(zip(stage1.query_ids, stage1.per_query(name).tolist(), strict=True))
            for name in names
        }
        detail["stage1_retrieved"] = {
            qid: tuple(ids[:kept]) for qid, ids in stage1.rankings.items()
        }
    return RerankData(
        spec=run.spec.text,
        name=run.spec.id,
        depth=run.depth,
        description=run.description,
        stage1_model=stage1.name,
        stage1={name: MetricData.of(stage1.metric(name)) for name in names},
        lift=lift,
        ceiling=MetricData.of(ceiling) if ceiling is not None else None,
        realised=realised,
        realised_at=at,
        p50_ms=finite(run.p50_ms),
        p95_ms=finite(run.p95_ms),
        mean_ms=finite(run.mean_ms),
        load_s=run.load_s,
        tokens=run.tokens,
        tokens_per_1k_queries=run.tokens_per_1k_queries,
        cost_per_1k_queries=run.cost_per_1k_queries,
        unit=run.unit or None,
        units=run.units,
        units_per_1k_queries=run.units_per_1k_queries,
        info=dict(run.info) or None,
        **detail,
    )

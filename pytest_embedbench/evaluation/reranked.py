"""Two stages (issue 43): a first stage's result reranked, :func:`evaluate_reranked`, what the
session runs for a case with ``rerankers=``; the reranker built from its spec
(:func:`create_reranker`, where the providers are known) and the lift (:func:`lift_of`).

Usage::

    stage1 = evaluator.evaluate("bm25", ds, k=(1, 10, 100))
    (spec,) = parse_rerankers(["hf:sentence-transformers/all-MiniLM-L6-v2@100"], "here")
    reranked = evaluate_reranked(evaluator, stage1, ds, spec, k=(1, 10))
    reranked.lift("ndcg@10"), reranked.stage1 is stage1, reranked.rerank.p95_ms

The reranked result is scored as any other, on the reranked top ``depth`` (the documents below
it were never shown to the reranker, so the result's cut-offs stop at the depth). Its
latency is the pipeline's on the first stage's timed queries (the first stage's search plus
the reranking of the same query); the reranking's own latency, tokens and cost are
:attr:`RetrievalResult.rerank`'s. The first stage is computed once per model and shared by
every reranker of the test (the session keeps it); its recall at the depth is the ceiling a
reranker cannot pass.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import numpy as np

from ..core.exceptions import ConfigError, did_you_mean
from ..models import rerankers as _hosted  # noqa: F401 - registers cohere, voyage, bedrock
from ..models.providers import ModelSpec
from ..models.providers.registry import has_vectors
from ..retrieval.rerank import (
    EmbeddingRescorer,
    Reranker,
    RerankerSpec,
    rerank,
    reranker_class,
    reranker_names,
)
from .measure import LatencyStats

if TYPE_CHECKING:
    from ..data.datasets import RetrievalDataset
    from .evaluate import Evaluator
    from .result import RetrievalResult

__all__ = [
    "check_reranker",
    "create_reranker",
    "evaluate_reranked",
    "family_of",
    "with_options",
]


def _embedding_providers() -> list[str]:
    from ..models.providers import PROVIDERS, provider_class
    from ..models.providers.base import EmbeddingProvider

    provider_class("bm25")  # the built-ins and entry points are registered
    return sorted(n for n, c in PROVIDERS.items() if issubclass(c, EmbeddingProvider))


def family_of(spec: RerankerSpec) -> type[Reranker] | None:
    """The registered reranker class ``spec`` names (the hosted ones of
    :mod:`~..models.rerankers` included), or None: the bi-encoder rescorer of an embedding
    provider (``cohere:embed-v4.0`` rescores with Cohere's vectors, ``cohere:rerank-v3.5``
    reranks with Cohere Rerank)."""
    cls = reranker_class(spec.family)
    return cls if cls is not None and cls.handles(spec.model) else None


def with_options(
    spec: RerankerSpec, providers: Mapping[str, Mapping[str, Any]], where: str
) -> RerankerSpec:
    """``spec`` with its options from ``providers:`` of embedbench.yaml: for the bi-encoder
    rescorer, its embedding provider's (as a model of the run takes them); for a reranker,
    those of its family it takes (``providers: {cohere: {base_url: ...}}``, shared with the
    embedding provider), then those under its name or short name (``providers: {rerank-v3.5:
    {max_tokens_per_doc: 512}}``). An option that neither the reranker nor its family's
    embedding provider takes (a typo) is a ConfigError naming ``where``, the key and what the
    reranker takes."""
    if spec.obj is not None or spec.is_none:
        return spec
    cls = family_of(spec)
    if cls is None:  # the bi-encoder rescorer: the embedding provider's options, as a model's
        rescorer: dict[str, Any] = {**providers.get(spec.family, {})}
        rescorer.update(providers.get(spec.short_name, {}))
        return replace(spec, options=tuple(sorted(rescorer.items())))
    family = dict(providers.get(spec.family, {}))
    merged = {k: v for k, v in family.items() if k in cls.options_taken}
    shared = _provider_options(spec.family)  # the embedding provider's, when there is one
    entries = [(spec.family, family, cls.options_taken | shared)]
    entries += [
        (key, dict(providers.get(key, {})), cls.options_taken)
        for key in dict.fromkeys(n for n in (spec.name, spec.short_name) if n)
        if key != spec.family
    ]
    for index, (key, own, taken) in enumerate(entries):
        unknown = sorted(set(own) - taken)
        if unknown:
            raise ConfigError(
                f"{where}: providers.{key}: reranker {spec.text!r} takes no option "
                f"{unknown[0]!r}{did_you_mean(unknown[0], cls.options_taken) or '.'} It takes "
                f"{sorted(cls.options_taken)}"
            )
        if index:
            merged.update(own)
    return replace(spec, options=tuple(sorted(merged.items())))


def _provider_options(name: str) -> frozenset[str]:
    """The options the embedding provider ``name`` takes (none when no provider is so named)."""
    from ..models.providers import PROVIDERS, provider_class

    provider_class("bm25")  # the built-ins and entry points are registered
    found = PROVIDERS.get(name)
    return found.all_option_names() if found is not None else frozenset()


def check_reranker(spec: RerankerSpec, where: str) -> None:
    """A spec naming no reranker family and no embedding provider is a ConfigError naming
    ``where`` and the spec, with a did-you-mean and the known names (at collection)."""
    if spec.obj is not None or spec.is_none or family_of(spec) is not None:
        return
    if has_vectors(ModelSpec(spec.spec)):
        return  # the bi-encoder rescorer over that provider's vectors
    known = ["none", *reranker_names(), *_embedding_providers()]
    raise ConfigError(
        f"{where}: reranker {spec.text!r}: {spec.family!r} is neither a reranker nor an "
        f"embedding provider{did_you_mean(spec.family, known) or '.'} Rerankers: "
        f"{['none', *reranker_names()]}; embedding providers (which rescore with their "
        f"vectors): {_embedding_providers()}. Write 'family:model@depth', e.g. "
        "'hf-ce:/models/my-ce@100'"
    )


def create_reranker(evaluator: Evaluator, spec: RerankerSpec) -> Reranker:
    """The reranker ``spec`` names: its Python object, a registered family's class, or the
    bi-encoder rescorer over the embedding provider it names (loaded once by the evaluator,
    so a model that is also a first stage loads once)."""
    if spec.obj is not None:
        return spec.obj
    cls = family_of(spec)
    if cls is not None:
        return cls(spec.model, **dict(spec.options))
    check_reranker(spec, "reranker")
    from ..models.providers.base import EmbeddingProvider

    provider = evaluator.provider(ModelSpec(spec.spec, **dict(spec.options)))
    assert isinstance(provider, EmbeddingProvider)  # check_reranker: it has vectors
    return EmbeddingRescorer(provider, evaluator.cache, spec=spec.spec)


def evaluate_reranked(
    evaluator: Evaluator,
    stage1: RetrievalResult,
    dataset: RetrievalDataset,
    spec: RerankerSpec,
    *,
    k: tuple[int, ...],
    reranker: Reranker | None = None,
) -> RetrievalResult:
    """``stage1``'s top ``spec.depth`` of each query reranked, scored at cut-offs ``k`` (all
    at most the depth), with the run and the first stage attached (see the module doc)."""
    from .result import RetrievalResult

    if spec.is_none:
        raise ConfigError(
            "reranker 'none' is the first stage alone: nothing to rerank; use the first "
            "stage's result itself, or give a reranker spec such as 'hf-ce:/models/my-ce@100'"
        )
    if max(k) > spec.depth:
        raise ConfigError(
            f"reranker {spec.text!r} reranks the top {spec.depth}, but the test computes k up "
            f"to {max(k)}; give a depth >= {max(k)} ('{spec.spec}@{max(k)}') or drop the "
            f"cut-offs above {spec.depth}"
        )
    if spec.depth > stage1.depth:
        raise ConfigError(
            f"reranker {spec.text!r} reranks the top {spec.depth}, but the first stage "
            f"retrieved {stage1.depth}; evaluate the first stage with k including {spec.depth}"
        )
    found = reranker if reranker is not None else create_reranker(evaluator, spec)
    queries = dataset.queries
    run = rerank(
        found,
        spec,
        queries,
        [stage1.rankings[q.id] for q in queries],
        {d.id: d for d in dataset.documents},
    )
    result = RetrievalResult(
        model=stage1.model,
        dataset=dataset,
        rankings=run.rankings,
        scores=run.scores,
        k=k,
        timings=stage1.timings,
        latency=_pipeline_latency(stage1, run.seconds),
        cold_query_ms=stage1.cold_query_ms,
        documents_per_s=stage1.documents_per_s,
        peak_rss_mb=stage1.peak_rss_mb,
        cache=stage1.cache,
        added_rss_mb=stage1.added_rss_mb,
        start_rss_mb=stage1.start_rss_mb,
        environment=stage1.environment,
        model_info=stage1.model_info,
        seed=stage1.seed,
        n_resamples=stage1.n_resamples,
        level=stage1.level,
        query_cache=stage1.query_cache,
    )
    # the first stage's embedding tokens and resources are this pipeline's too
    result._token_source = stage1._token_source
    result.measured = dict(stage1.measured)
    result.rerank = run
    result.stage1 = stage1
    return result


def _pipeline_latency(stage1: RetrievalResult, rerank_s: np.ndarray) -> LatencyStats:
    """The first stage's timed queries, each its search plus its reranking."""
    timed = stage1.latency.by_query(stage1.query_ids)
    if not timed:
        return LatencyStats.from_seconds(np.empty((0, 0)))
    position = {qid: i for i, qid in enumerate(stage1.query_ids)}
    ids = list(timed)
    seconds = [timed[q] / 1000.0 + float(rerank_s[position[q]]) for q in ids]
    return LatencyStats.from_seconds(seconds, ids, queries=len(stage1.query_ids))

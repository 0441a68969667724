"""One result of a dataset whose languages each have their own corpus, from the results of
its languages (:func:`combine_languages`).

Each language is evaluated on its own, its queries over its own documents (one index a
language), as the seed study evaluates MIRACL's Korean, Chinese and English; the combined
result holds every query's ranking, so its metrics are the macro average over the languages
(the mean of their means, bootstrapped within each language) and ``by_language`` holds the
languages' own results. Time, documents, cache lookups and index bytes add up over the
languages; memory figures are the largest a language reached.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import numpy as np

from ..core.exceptions import ConfigError
from .measure import CacheStats, LatencyStats, Timings
from .result import RetrievalResult

if TYPE_CHECKING:
    from ..data.datasets import RetrievalDataset
    from ..models.providers import Provider
    from ..retrieval.pooling import PooledRun

__all__ = ["combine_languages"]


def combine_languages(
    dataset: RetrievalDataset,
    parts: Mapping[str, RetrievalResult],
    *,
    provider: Provider,
) -> RetrievalResult:
    """The result of ``dataset`` (every language) from ``parts``, each language's result over
    its own corpus (``dataset.language_part(language)``)."""
    first = next(iter(parts.values()))
    by_query = {qid: part for part in parts.values() for qid in part.query_ids}
    ids = [q.id for q in dataset.queries]
    timed = [
        (qid, ms)
        for part in parts.values()
        for qid, ms in zip(part.latency.query_ids, part.latency.per_query_ms, strict=True)
    ]
    latency = replace(
        LatencyStats.from_seconds(
            np.array([ms for _, ms in timed]) / 1000.0, [q for q, _ in timed], queries=len(ids)
        ),
        passes=max(part.latency.passes for part in parts.values()),
    )
    result = RetrievalResult(
        model=first.model,
        dataset=dataset,
        rankings=[by_query[q].rankings[q] for q in ids],
        scores=[by_query[q].scores[q] for q in ids],
        k=first.k,
        timings=_summed_timings(parts),
        latency=latency,
        cold_query_ms=first.cold_query_ms,
        documents_per_s=_documents_per_s(parts),
        peak_rss_mb=_largest(p.peak_rss_mb for p in parts.values()),
        added_rss_mb=_largest(p.added_rss_mb for p in parts.values()),
        start_rss_mb=first.start_rss_mb,
        environment=first.environment,
        cache=_summed_cache(p.cache for p in parts.values()),
        query_cache=_summed_cache(p.query_cache for p in parts.values()),
        model_info=first.model_info,
        seed=first.seed,
        n_resamples=first.n_resamples,
        level=first.level,
        provider=provider,
        resources=_summed_resources(parts),
        chunked=_pooled(parts, ids),
    )
    result.process_peak_rss_mb = _largest(p.process_peak_rss_mb for p in parts.values())
    result._by_language = dict(parts)
    result.retriever_factory = _per_language_only(dataset)
    return result


def _summed_timings(parts: Mapping[str, RetrievalResult]) -> Timings:
    out = Timings()
    for part in parts.values():
        for key, value in vars(part.timings).items():
            setattr(out, key, getattr(out, key) + value)
    return out


def _summed_cache(stats: Any) -> CacheStats:
    hits = misses = 0
    for found in stats:
        hits, misses = hits + found.hits, misses + found.misses
    return CacheStats(hits, misses)


def _largest(values: Any) -> float:
    finite = [v for v in values if v is not None and not math.isnan(v)]
    return max(finite) if finite else math.nan


def _documents_per_s(parts: Mapping[str, RetrievalResult]) -> float:
    """Documents over seconds, summed over the languages that measured a rate."""
    documents = seconds = 0.0
    for part in parts.values():
        if part.documents_per_s > 0 and not math.isnan(part.documents_per_s):
            n = part.cache.misses or part.n_documents
            documents += n
            seconds += n / part.documents_per_s
    return documents / seconds if seconds else math.nan


def _summed_resources(parts: Mapping[str, RetrievalResult]) -> dict[str, Any]:
    """The first language's resources, with the index bytes, the document batches and the
    cached vectors of every language."""
    measured = [part.measured for part in parts.values()]
    out = dict(measured[0])
    for key in ("index_bytes", "cache_vectors"):
        values = [m.get(key) for m in measured]
        out[key] = None if any(v is None for v in values) else sum(values)
    out["document_batch_s"] = [s for m in measured for s in m.get("document_batch_s") or []]
    return out


def _pooled(parts: Mapping[str, RetrievalResult], ids: list[str]) -> PooledRun | None:
    """The chunks and winning chunks of every language (None: not chunked)."""
    if any(part.winning_chunks is None for part in parts.values()):
        return None
    from ..retrieval.pooling import PooledRun

    winners = {
        qid: won for part in parts.values() for qid, won in (part.winning_chunks or {}).items()
    }
    return PooledRun(
        chunks={cid: c for part in parts.values() for cid, c in part.chunks.items()},
        winners=[winners[q] for q in ids],
        depths=[d for part in parts.values() for d in part.chunk_depths],
    )


def _per_language_only(dataset: RetrievalDataset) -> Any:
    """The retriever factory of a combined result: there is no one index over every language,
    so what needs one (cut-offs) is read per language."""

    def refuse() -> Any:
        languages = list(dataset.languages)
        raise ConfigError(
            f"dataset {dataset.name!r} keeps a corpus per language ({languages}), so cut-offs "
            f"are measured per language: read retrieval.by_language[{languages[0]!r}].cutoffs"
        )

    return refuse

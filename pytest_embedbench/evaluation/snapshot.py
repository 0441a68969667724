"""The typed records a :class:`~pytest_embedbench.evaluation.result.RetrievalResult` keeps
(:mod:`~pytest_embedbench.records.resultdata`'s): its :meth:`data` with the per-query detail
and the winning chunks, the index axis's figures and the resources. The result only delegates
here: :func:`result_data` is its ``data()``, :func:`retrieved_rows` its ``retrieved()``,
:func:`resources_of` its ``resources`` and :func:`index_data` the record's ``index``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ..records.querydiff import EXCERPT_CHARS
from ..records.resultdata import (
    CacheData,
    ChunkHit,
    IndexData,
    LatencyData,
    LoadData,
    MetricData,
    ResourcesData,
    ResultData,
)
from ..records.serial import from_data
from .lift import rerank_data

if TYPE_CHECKING:
    from ..data.chunking import ChunkingSettings

    RetrievalResult = Any  # evaluation.result imports this module: no import back

__all__ = ["RETRIEVED_KEPT", "index_data", "resources_of", "result_data", "retrieved_rows"]

#: the top documents of each query kept in the report (``retrieved``): enough to read a miss
RETRIEVED_KEPT = 10


def result_data(result: RetrievalResult, *, per_query: bool = False) -> ResultData:
    """``result.data(per_query=...)`` (see :meth:`RetrievalResult.data`)."""
    latency = result.latency.to_dict()
    if per_query:
        # the timed queries only (a seeded sample by default), by id; empty when none was
        latency["per_query_ms"] = result.latency.by_query(result.query_ids)
    return ResultData(
        model=result.name,
        spec=result.model.spec,
        dataset=result.dataset_name,
        dataset_fingerprint=result.dataset_fingerprint,
        queries=len(result.query_ids),
        documents=result.n_documents,
        k=tuple(result.k),
        metrics={name: MetricData.of(est) for name, est in result.metrics().items()},
        latency=from_data(LatencyData, latency),
        cold_query_ms=result.cold_query_ms,
        timings=result.timings.to_dict(),
        documents_per_s=result.documents_per_s,
        peak_rss_mb=result.peak_rss_mb,
        added_rss_mb=result.added_rss_mb,
        process_peak_rss_mb=result.process_peak_rss_mb,
        start_rss_mb=result.start_rss_mb,
        environment=dict(result.environment),
        cache=from_data(CacheData, result.cache.to_dict()),
        query_cache=from_data(CacheData, result.query_cache.to_dict()),
        tokens=result.tokens,
        cost=result.cost,
        model_info={k: v for k, v in result.model_info.items() if _jsonable(v)},
        resources=result.resources,
        seed=result.seed,
        chunking=_chunking_summary(result, result.chunking)
        if result.chunking is not None
        else None,
        cutoffs=result.measured_cutoffs.to_dict() if result.measured_cutoffs is not None else None,
        index=index_data(result),
        query_load=tuple(from_data(LoadData, vars(lv)) for lv in result.query_load) or None,
        languages=result.languages_data(),
        query_languages=(
            dict(zip(result.query_ids, result.query_languages, strict=True))
            if result.query_languages is not None
            else None
        ),
        judge=result.judge,
        rerank=(
            rerank_data(result, per_query=per_query, kept=RETRIEVED_KEPT)
            if result.rerank is not None
            else None
        ),
        **(_per_query_detail(result) if per_query else {}),
    )


def _chunking_summary(result: RetrievalResult, chunking: ChunkingSettings) -> dict[str, Any]:
    """The chunking settings with the number of chunks and the chunk depths searched."""
    depths = result.chunk_depths
    return {
        **chunking.as_dict(),
        "chunks": len(result.chunks),
        "chunk_depth": {"max": max(depths), "mean": sum(depths) / len(depths)} if depths else None,
    }


def _per_query_detail(result: RetrievalResult) -> dict[str, Any]:
    """Each metric per query, and for the report's per-query drill-down what came back
    against what was wanted (with the winning chunks on a chunked dataset)."""
    out: dict[str, Any] = {
        "per_query": {
            name: dict(zip(result.query_ids, result.per_query(name).tolist(), strict=True))
            for name in result.metrics()
        },
        "query_texts": dict(result.query_texts),
        "retrieved": {qid: tuple(ids[:RETRIEVED_KEPT]) for qid, ids in result.rankings.items()},
        "relevant": {
            qid: {doc: grade for doc, grade in sorted(j.items()) if grade > 0}
            for qid, j in result.qrels.items()
        },
    }
    if result.winning_chunks is not None:
        out["winning_chunks"] = {
            qid: tuple(from_data(ChunkHit, hit) for hit in hits)
            for qid, hits in retrieved_rows(result).items()
        }
    return out


def retrieved_rows(result: RetrievalResult) -> dict[str, list[dict[str, Any]]]:
    """``result.retrieved()`` (see :meth:`RetrievalResult.retrieved`); the start of a
    chunk's text is :data:`EXCERPT_CHARS` characters on one line."""
    out: dict[str, list[dict[str, Any]]] = {}
    qrels = result.qrels
    for qid, ids in result.rankings.items():
        won = (result.winning_chunks or {}).get(qid, [])
        wanted = {doc for doc, grade in qrels.get(qid, {}).items() if grade > 0}
        rows = []
        for rank, (did, score, cid) in enumerate(zip(ids, result.scores[qid], won, strict=True)):
            chunk = result.chunks[cid]
            row = {
                "doc_id": did,
                "score": score,
                "chunk_id": cid,
                "start": chunk.start,
                "end": chunk.end,
            }
            if chunk.page is not None:
                row["page"] = chunk.page
            if rank < RETRIEVED_KEPT or did in wanted:
                row["text"] = _excerpt(chunk.text)
            rows.append(row)
        out[qid] = rows
    return out


def index_data(result: RetrievalResult) -> IndexData | None:
    """What the index axis measured, typed (None: the test had no ``indexes=``)."""
    run = result.index
    if run is None:
        return None

    return IndexData(
        spec=run.spec.spec,
        engine=run.spec.engine,
        description=run.description,
        deterministic=run.deterministic,
        note=run.note,
        build_s=run.build_s,
        bytes=run.nbytes,
        bytes_per_document=run.bytes_per_document,
        p50_ms=run.p50_ms,
        p95_ms=run.p95_ms,
        qps=run.qps,
        neighbour_recall={
            f"neighbour_recall@{k}": MetricData.of(result.neighbour_recall(k))
            for k in run.neighbours
        },
        delta={name: MetricData.of(result.delta_vs_exact(name)) for name in result.metrics()},
        load=tuple(from_data(LoadData, vars(level)) for level in run.load) or None,
    )


def resources_of(result: RetrievalResult) -> ResourcesData:
    """``result.resources`` (see :attr:`RetrievalResult.resources`)."""
    m = result.measured
    batches = [float(x) for x in m.get("document_batch_s") or []]
    cold = batches[0] if batches and m.get("cold_model") else None
    warm = batches[1:] if cold is not None else batches
    index_bytes = m.get("index_bytes")
    tokens = result.tokens.documents
    embedded = result.cache.misses
    seconds = result.timings.document_embedding_s
    tokens_per_s = None
    if tokens is not None and embedded and seconds > 0 and result.n_documents:
        tokens_per_s = tokens * (embedded / result.n_documents) / seconds
    return ResourcesData(
        dimension=m.get("dimension"),
        index_bytes=index_bytes,
        bytes_per_document=(
            index_bytes / result.n_documents
            if index_bytes is not None and result.n_documents
            else None
        ),
        cache_bytes=_cache_bytes(m.get("cache_vectors"), m.get("dimension")),
        model_load_s=result.timings.model_load_s,
        document_batches=len(batches),
        cold_batch_ms=cold * 1000.0 if cold is not None else None,
        warm_batch_p50_ms=float(np.percentile(warm, 50)) * 1000.0 if warm else None,
        warm_batch_p95_ms=float(np.percentile(warm, 95)) * 1000.0 if warm else None,
        tokens_per_s=tokens_per_s,
        vram_peak_mb=m.get("vram_peak_mb"),
        vram_source=m.get("vram_source"),
        device=m.get("device"),
    )


def _cache_bytes(vectors: Any, dimension: Any) -> int | None:
    """The float32 bytes of ``vectors`` cached vectors of ``dimension`` values (None: not
    known)."""
    if vectors is None or not dimension:
        return None
    return int(vectors) * int(dimension) * 4


def _excerpt(text: str) -> str:
    """The start of ``text`` on one line, at most :data:`EXCERPT_CHARS` characters."""
    flat = " ".join(text.split())
    return flat if len(flat) <= EXCERPT_CHARS else flat[: EXCERPT_CHARS - 1].rstrip() + "…"


def _jsonable(value: Any) -> bool:
    return isinstance(value, (str, int, float, bool, type(None), list, dict))

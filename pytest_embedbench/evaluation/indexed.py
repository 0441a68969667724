"""One model on one dataset through one index of the index axis (issue 35):
:func:`evaluate_indexed`, what the session runs for a case with ``indexes=``.

Usage::

    result = evaluate_indexed(Evaluator(), ModelSpec("hf:..."), ds, IndexSpec.parse(
        "faiss:hnsw(M=32,efSearch=64)", "here"), k=(1, 10))
    result.neighbour_recall(10), result.delta_vs_exact("ndcg@10"), result.index.qps

The model's dense retriever is searched through the index
(:meth:`~pytest_embedbench.retrieval.dense.DenseRetriever.with_index`). A chunked dataset indexes
its chunk vectors: the index answers in chunks and
:class:`~pytest_embedbench.retrieval.pooling.PooledRetriever` ranks documents by their best
chunk, as in the run without an index. Neighbour recall counts chunks, the items the index holds
(the ann-benchmarks measure: the index's top k chunks against exact search's top k chunks of
the same query vector); the metrics and their delta against exact count documents, pooled the
same way from exact search's chunks.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from ..core.exceptions import ConfigError
from ..retrieval.dense import DenseRetriever
from ..retrieval.indexes import IndexRun, IndexSpec, measure_index

if TYPE_CHECKING:
    from ..core.types import Query
    from ..data.datasets import RetrievalDataset
    from ..models.providers.spec import ModelSpec
    from ..retrieval.pooling import PooledRetriever
    from .evaluate import Evaluator
    from .result import RetrievalResult

__all__ = ["evaluate_indexed"]


def evaluate_indexed(
    evaluator: Evaluator,
    model: ModelSpec,
    dataset: RetrievalDataset,
    index: IndexSpec,
    *,
    k: tuple[int, ...],
    concurrency: Sequence[int] = (),
) -> RetrievalResult:
    """``model`` on ``dataset`` with its queries answered through ``index``: the corpus (or
    chunk) vectors from the embedding cache (embedded once for every index of the model), the
    index built over them, the run scored as any other, and the index's figures attached
    (:meth:`~pytest_embedbench.result.RetrievalResult.attach_index`); with ``concurrency``
    levels (``--embedbench-concurrency``), the index's queries under that many threads each
    (:func:`~pytest_embedbench.retrieval.indexes.measure_load`)."""
    from ..retrieval.base import BuildStats
    from ..retrieval.pooling import PooledRetriever

    if dataset.separate_corpora and len(dataset.languages) > 1:
        # one index a language, each with its own build, size and neighbour recall: figures
        # with no one sum across languages, so the axis runs on one corpus at a time
        raise ConfigError(
            f"indexes=: dataset {dataset.name!r} keeps a corpus per language "
            f"{list(dataset.languages)}, and the index axis measures one index over one corpus: "
            "name each language as a dataset of its own in embedbench.yaml (datasets: "
            f"{{{dataset.name}-{dataset.languages[0]}: {{path: ...}}}}) and run indexes= on it"
        )
    provider = evaluator.provider(model)
    stats = BuildStats()
    built = evaluator.build_retriever(provider, dataset, stats=stats)
    pooled = built if isinstance(built, PooledRetriever) else None
    inner = pooled.inner if pooled is not None else built
    if not isinstance(inner, DenseRetriever):
        raise ConfigError(
            f"index {index.spec!r}: model {model.short_name!r} has no vectors to index"
        )
    indexed = inner.with_index(index, seed=evaluator.seed)
    retriever = (
        PooledRetriever(indexed, list(pooled.chunks.values())) if pooled is not None else indexed
    )
    result = evaluator.evaluate(model, dataset, k=k, retriever=retriever, stats=stats)
    result.timings.document_embedding_s = stats.document_embedding_s
    result.timings.index_build_s = indexed.build_s
    if pooled is None:
        run = measure_index(
            indexed,
            [q.id for q in dataset.queries],
            result.k,
            concurrency=concurrency,
            seed=evaluator.seed,
        )
    else:
        run = _measure_pooled(
            indexed, pooled, dataset.queries, result.k, concurrency, evaluator.seed
        )
    result.attach_index(run, dataset)
    return result


def _measure_pooled(
    indexed: DenseRetriever,
    exact: PooledRetriever,
    queries: Sequence[Query],
    ks: Sequence[int],
    concurrency: Sequence[int] = (),
    seed: int = 0,
) -> IndexRun:
    """An index over chunks measured on the query vectors the scored pass encoded: neighbour
    recall and latency on chunks (:func:`measure_index` at the depth ``max(ks)``), and exact
    search's document rankings for the delta, pooled from its chunks as the run without an
    index pools them (``exact``: the exact chunk retriever's own pooling)."""
    depth = max(ks)
    encoded = indexed.encoded or {}
    vectors = (
        np.vstack([np.atleast_2d(encoded[q.text]) for q in queries])
        if queries
        else np.empty((0, 0), dtype=np.float32)
    )
    run = measure_index(
        indexed, [q.id for q in queries], ks, vectors=vectors, concurrency=concurrency, seed=seed
    )
    run.exact_rankings, run.exact_scores = [], []
    for vector in vectors:
        ids, scores, _ = exact.search_pooled_encoded(vector[None, :], depth)
        run.exact_rankings.append(ids)
        run.exact_scores.append(scores)
    return run

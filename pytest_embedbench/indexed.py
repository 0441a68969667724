"""One model on one dataset through one index of the index axis (issue 35):
:func:`evaluate_indexed`, what the session runs for a case with ``indexes=``.

Usage::

    result = evaluate_indexed(Evaluator(), ModelSpec("hf:..."), ds, IndexSpec.parse(
        "faiss:hnsw(M=32,efSearch=64)", "here"), k=(1, 10))
    result.neighbour_recall(10), result.delta_vs_exact("ndcg@10"), result.index.qps
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .ann import IndexedRetriever, IndexSpec, measure_index
from .exceptions import ConfigError

if TYPE_CHECKING:
    from .datasets import RetrievalDataset
    from .evaluate import Evaluator
    from .providers.spec import ModelSpec
    from .result import RetrievalResult

__all__ = ["evaluate_indexed"]


def evaluate_indexed(
    evaluator: Evaluator,
    model: ModelSpec,
    dataset: RetrievalDataset,
    index: IndexSpec,
    *,
    k: tuple[int, ...],
) -> RetrievalResult:
    """``model`` on ``dataset`` with its queries answered through ``index``: the corpus
    vectors from the embedding cache (embedded once for every index of the model), the index
    built over them, the run scored as any other, and the index's figures attached
    (:meth:`~pytest_embedbench.result.RetrievalResult.attach_index`)."""
    from .providers.dense import DenseRetriever
    from .providers.retriever import BuildStats

    provider = evaluator.provider(model)
    if dataset.chunking is not None:
        raise ConfigError(
            f"index {index.spec!r}: a chunked dataset ({dataset.name!r}) is not indexed yet; "
            "drop chunking or indexes= for this test"
        )
    stats = BuildStats()
    inner = evaluator.build_retriever(provider, dataset, stats=stats)
    if not isinstance(inner, DenseRetriever):
        raise ConfigError(
            f"index {index.spec!r}: model {model.short_name!r} has no vectors to index"
        )
    retriever = IndexedRetriever(inner, index, seed=evaluator.seed)
    result = evaluator.evaluate(model, dataset, k=k, retriever=retriever)
    result.timings.document_embedding_s = stats.document_embedding_s
    result.timings.index_build_s = retriever.build_s
    run = measure_index(retriever, [q.id for q in dataset.queries], result.k)
    result.attach_index(run, dataset)
    return result

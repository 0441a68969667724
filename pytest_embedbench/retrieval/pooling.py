"""Scoring by document on a chunked corpus: retrieve chunks, rank documents.

A chunked dataset (``RetrievalDataset.chunking`` set) is searched chunk by chunk, and each
document takes the score of its best chunk (max-pooling, as DESIGN.md's "chunked corpora" rule
says). :class:`PooledRetriever` wraps the retriever a provider built over the chunks (each one a
pseudo-document ``Document(id=chunk.id, text=chunk.text)``, so the embedding cache, keyed by
text, reuses every unchanged chunk) and answers in documents::

    chunks = dataset_chunks(ds)                       # chunk_documents with ds.chunking
    inner = provider.build(chunk_documents_of(chunks), cache=cache)
    retriever = PooledRetriever(inner, chunks)
    ids, scores = retriever.search("how do I reset my password", 10)   # ten documents
    ids, scores, won = retriever.search_pooled("...", 10)              # and each one's chunk

Depth: a query (embedded once, :meth:`Retriever.encode`) asks the chunk retriever for ``k``
times the mean chunks per document (at least ``2k``) and doubles that depth until the top ``k``
documents are settled or every chunk has been returned. Settled means ``k`` distinct documents
were found *and* the last chunk returned scores strictly below the ``k``-th document's score:
then no chunk left out can bring a document into the top ``k``, not even through a tie (a tie
between documents is broken by document id descending, the rule everywhere else, which the chunk
retriever's tie rule on chunk ids does not follow). A document's winning chunk is its
highest-scoring one; between its own tied chunks, the one the chunk retriever ranked first.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..core.exceptions import ConfigError, DatasetError
from ..core.types import Document
from ..data.datasets import RetrievalDataset
from ..data.datasets.core import format_problems
from .base import Retriever

if TYPE_CHECKING:
    from ..core.types import Chunk

__all__ = [
    "PooledRetriever",
    "PooledRun",
    "check_judged_chunks",
    "chunk_pseudo_documents",
    "dataset_chunks",
    "pool",
]


@dataclass(frozen=True)
class PooledRun:
    """What a run over a chunked dataset adds to its result: the chunks searched (by id), each
    query's winning chunk per retrieved document (in query order), and the chunk depth every
    search ended at (the scored pass and the timed passes)."""

    chunks: Mapping[str, Chunk]
    winners: Sequence[Sequence[str]]
    depths: Sequence[int]


def dataset_chunks(ds: RetrievalDataset, *, tokenizer: Any = None) -> list[Chunk]:
    """The chunks of ``ds``'s documents with its chunking settings.

    ``tokenizer`` counts tokens for ``unit="tokens"``: the settings' named tokenizer wins, then
    this one (the model's own); with neither, a ConfigError says how to name one.
    """
    from ..data import chunking as chunking_module

    settings = ds.chunking
    if settings is None:
        raise ValueError(f"dataset {ds.name!r} is not chunked")
    counter: Any = None
    if settings.unit == "tokens":
        counter = settings.tokenizer if settings.tokenizer is not None else tokenizer
        if counter is None:
            raise ConfigError(
                f"dataset {ds.name!r}: chunking unit 'tokens' needs a tokenizer, and this model "
                "has none of its own; name one with chunking.tokenizer (a Hugging Face "
                "tokenizer name or a tokenizer.json path), or use unit: chars"
            )
    # looked up on the module at call time, so a test can stand a simple chunker in for it
    return chunking_module.chunk_documents(
        ds.documents,
        strategy=settings.strategy,
        size=settings.size,
        overlap=settings.overlap,
        unit=settings.unit,
        tokenizer=counter,
        min_chunk_chars=settings.min_chunk_chars,
    )


def chunk_pseudo_documents(chunks: Sequence[Chunk]) -> list[Document]:
    """One document per chunk (its id and text, nothing else), for a provider to index."""
    return [Document(chunk.id, chunk.text) for chunk in chunks]


def check_judged_chunks(ds: RetrievalDataset, chunks: Iterable[Chunk]) -> None:
    """Every judged document yields at least one chunk; a DatasetError lists each one that
    does not with the eval-set file and line that judges it (run before any model embeds)."""
    chunked = {chunk.doc_id for chunk in chunks}
    settings = ds.chunking
    min_chars = settings.min_chunk_chars if settings is not None else 0
    problems = []
    for qid in ds.qrels:
        for did in ds.qrels[qid]:
            if did in chunked:
                continue
            length = len(ds.document(did).text)
            problems.append(
                f"{ds.judgement_origin(qid, did)}: document {did!r} yields no chunk (its text "
                f"is {length} characters, chunking min_chunk_chars is {min_chars}); give it "
                "more text, lower min_chunk_chars, or drop it from this line"
            )
    if problems:
        raise DatasetError(format_problems(ds.name, problems))


def first_depth(k: int, n_chunks: int, n_documents: int) -> int:
    """The chunk depth a query starts at: ``k`` times the mean chunks per document (rounded
    up), at least ``2k``, at most every chunk."""
    per_document = math.ceil(n_chunks / max(n_documents, 1))
    return max(1, min(n_chunks, k * max(2, per_document)))


def pool(
    chunk_ids: Sequence[str],
    scores: Sequence[float],
    doc_of: Mapping[str, str],
    k: int,
) -> tuple[list[str], list[float], list[str]]:
    """Max-pool a chunk ranking into a document ranking: the top ``k`` documents, their
    scores and winning chunks, ordered by score descending then document id descending.

    Usage::

        pool(["a#1", "b#0", "a#0"], [0.9, 0.8, 0.7], {"a#0": "a", "a#1": "a", "b#0": "b"}, 2)
        # (["a", "b"], [0.9, 0.8], ["a#1", "b#0"])
    """
    best: dict[str, tuple[float, str]] = {}
    for cid, score in zip(chunk_ids, scores, strict=True):
        did = doc_of[cid]
        found = best.get(did)
        if found is None or score > found[0]:  # a tie keeps the chunk ranked first
            best[did] = (score, cid)
    ranked = sorted(best.items(), key=lambda item: (item[1][0], item[0]), reverse=True)[:k]
    return (
        [did for did, _ in ranked],
        [score for _, (score, _) in ranked],
        [cid for _, (_, cid) in ranked],
    )


def settled(scores: Sequence[float], doc_scores: Sequence[float], k: int) -> bool:
    """Whether a chunk ranking ending at ``scores[-1]`` settles the top ``k`` documents:
    ``k`` of them found and no chunk beyond the ranking can tie or beat the ``k``-th."""
    return len(doc_scores) >= k and scores[-1] < doc_scores[k - 1]


class PooledRetriever(Retriever):
    """Searches chunks through ``inner`` and answers with documents (see the module doc).

    ``depths`` holds the chunk depth each search ended at, for reports; the time spent pooling
    counts as search time, so a query's latency includes it.
    """

    def __init__(self, inner: Retriever, chunks: Sequence[Chunk]) -> None:
        self.inner = inner
        self.doc_of = {chunk.id: chunk.doc_id for chunk in chunks}
        self.chunks = {chunk.id: chunk for chunk in chunks}
        self.ids = tuple(dict.fromkeys(chunk.doc_id for chunk in chunks))
        self.n_chunks = len(chunks)
        self.depths: list[int] = []

    def index_bytes(self) -> int | None:
        """The chunk index's bytes: what a chunked corpus costs in memory."""
        return self.inner.index_bytes()

    def search(self, text: str, k: int) -> tuple[list[str], list[float]]:
        ids, scores, _ = self.search_pooled(text, k)
        return ids, scores

    def search_pooled(self, text: str, k: int) -> tuple[list[str], list[float], list[str]]:
        """The top-k documents, their scores and the id of each one's winning chunk."""
        embed_before = self.inner.query_embedding_s
        t0 = time.perf_counter()
        query = self.inner.encode(text)  # once, however deep the search goes
        out = self.search_pooled_encoded(query, k)
        inner_embed = self.inner.query_embedding_s - embed_before
        self.query_embedding_s += inner_embed
        # everything but the inner retriever's query embedding: its searches and the pooling
        self.search_s += time.perf_counter() - t0 - inner_embed
        return out

    def search_pooled_encoded(self, query: Any, k: int) -> tuple[list[str], list[float], list[str]]:
        """:meth:`search_pooled` of a query vector already encoded (untimed)."""
        depth = first_depth(k, self.n_chunks, len(self.ids))
        while True:
            chunk_ids, scores = self.inner.search_encoded(query, depth)
            out = pool(chunk_ids, scores, self.doc_of, k)
            exhausted = len(chunk_ids) < depth or depth >= self.n_chunks
            if exhausted or settled(scores, out[1], k):
                break
            depth = min(self.n_chunks, depth * 2)
        self.depths.append(depth)
        return out

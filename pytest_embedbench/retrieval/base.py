"""What a provider builds over a corpus: a :class:`Retriever`, and the :class:`BuildStats` of
building it.

Every provider's ``build(documents)`` returns a Retriever; the evaluator times its
:meth:`~Retriever.search` one query text at a time::

    retriever = provider.build(dataset.documents, stats=(stats := BuildStats()))
    ids, scores = retriever.search("how do I reset my password", 10)
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

__all__ = ["BuildStats", "Kind", "Retriever"]

#: which side of a search a text is on: a provider may prefix or embed the two differently
Kind = Literal["query", "document"]


class Retriever(ABC):
    """A provider's search structure over one corpus; answers one query at a time."""

    #: document ids in corpus order
    ids: tuple[str, ...]
    #: seconds spent turning query texts into model input (embedding, tokenising), all calls
    query_embedding_s: float = 0.0
    #: seconds spent searching the index, all calls
    search_s: float = 0.0
    #: query texts :meth:`search_many` found in the embedding cache / had to embed (a retriever
    #: that caches no query vectors counts neither)
    query_cache_hits: int = 0
    query_cache_misses: int = 0

    @abstractmethod
    def search(self, text: str, k: int) -> tuple[list[str], list[float]]:
        """The top-k document ids and scores for one query text, best first."""

    def search_many(
        self, texts: Sequence[str], k: int
    ) -> tuple[list[list[str]], list[list[float]]]:
        """Every text's top-k, in batches where the retriever can: the path of a run that
        measures no latency (``latency_passes=0``). This default answers one text at a time."""
        rankings: list[list[str]] = []
        scores: list[list[float]] = []
        for text in texts:
            ids, sc = self.search(text, k)
            rankings.append(ids)
            scores.append(sc)
        return rankings, scores

    def index_bytes(self) -> int | None:
        """Bytes the in-memory index holds (vectors, or a lexical index's arrays); None when
        unknown."""
        return None

    def encode(self, text: str) -> Any:
        """The query as this retriever searches with it (its embedding, its tokens), so one
        query searched at several depths is embedded once (see :mod:`~..docscore`); the
        default is the text itself, for :meth:`search_encoded` to search."""
        return text

    def search_encoded(self, query: Any, k: int) -> tuple[list[str], list[float]]:
        """:meth:`search` for a query :meth:`encode` gave."""
        return self.search(query, k)


@dataclass
class BuildStats:
    """What building a retriever cost: embedding, index and cache figures."""

    document_embedding_s: float = 0.0
    index_build_s: float = 0.0
    documents: int = 0
    cache_hits: int = 0
    cache_misses: int = 0

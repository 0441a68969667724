"""A model with its index built over a corpus, ready to answer queries: :class:`Searcher`.

The ``searcher`` fixture returns one, for timing search with pytest-benchmark or for looking
at what a model retrieves; without pytest, build one from a provider::

    provider = create_provider("bm25")
    provider.ensure_loaded()
    searcher = Searcher(ModelSpec("bm25"), provider, provider.build(dataset.documents))
    searcher.search("how do I reset my password", 3)    # [(doc id, score), ...] best first
"""

from __future__ import annotations

from ..retrieval.base import Retriever
from .providers.base import Provider
from .providers.spec import ModelSpec

__all__ = ["Searcher"]


class Searcher:
    """A model plus its built index: ``search(query, k)`` for timing with pytest-benchmark.

    Usage::

        @pytest.mark.embedbench(dataset="support", models=["bm25"])
        def test_search_speed(searcher, benchmark):
            hits = benchmark(searcher.search, "how do I reset my password", 10)
            assert len(hits) == 10
    """

    def __init__(self, spec: ModelSpec, provider: Provider, retriever: Retriever) -> None:
        self.spec = spec
        self.provider = provider
        self.retriever = retriever

    @property
    def name(self) -> str:
        return self.spec.short_name

    def search(self, query: str, k: int = 10) -> list[tuple[str, float]]:
        """The top-k ``(document id, score)`` pairs for one query text, best first."""
        ids, scores = self.retriever.search(query, k)
        return list(zip(ids, scores, strict=True))

"""The engine ``exact``: the project's exact inner-product search
(:class:`~pytest_embedbench.retrieval.exact.ExactIndex`) as a :class:`~.registry.VectorIndex`.

Named in an index axis, it builds an exact index of its own over the vectors; a dense retriever
given no index searches its own exact index through :meth:`ExactVectorIndex.over` (no copy).
Given a precision (``exact+int8``), it searches the codes exactly in NumPy
(:class:`~.precision.QuantizedSearch`)::

    index = create_index(IndexSpec.parse("exact", "here"))
    index.build(vectors, ids)
    positions, scores = index.search(queries, 10)
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..exact import ExactIndex, ShardedIndex
from .precision import PRECISIONS, QuantizedSearch
from .registry import VectorIndex, register_index
from .spec import EXACT

__all__ = ["ExactVectorIndex"]


@register_index
class ExactVectorIndex(VectorIndex):
    """The project's exact search (:class:`~pytest_embedbench.retrieval.exact.ExactIndex`)."""

    name = "exact"
    precisions = frozenset(PRECISIONS)

    @classmethod
    def over(cls, index: ExactIndex | ShardedIndex) -> ExactVectorIndex:
        """An exact index already built (a :class:`ShardedIndex` under a memory budget)."""
        engine = cls(EXACT)
        engine._use(index)
        return engine

    def build(self, vectors: np.ndarray, ids: Sequence[str]) -> None:
        if self.codec is not None:
            self._use(QuantizedSearch(self.codec, vectors, ids))
        else:
            self._use(ExactIndex(vectors, ids))

    def _use(self, index: ExactIndex | ShardedIndex | QuantizedSearch) -> None:
        self._index = index
        backend = getattr(index, "backend", f"numpy, {self.codec and self.codec.precision} codes")
        self.description = f"exact ({backend})"
        self.note = "exact search: deterministic"

    def search(self, queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        return self._index.search(queries, k)

    @property
    def nbytes(self) -> int | None:
        return self._index.nbytes

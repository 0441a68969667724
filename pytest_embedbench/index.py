"""Exact top-k search by inner product (cosine on L2-normalised vectors).

Two backends return identical rankings: FAISS ``IndexFlatIP`` when faiss-cpu is installed, and
a NumPy fallback. Both follow the project's tie rule, score descending then document id
descending: vectors are stored in descending id order, so among equal scores the lower stored
position wins. Either backend proposes k plus a margin of candidates by float32 score; their
float64 scores, computed the same way for both, give the final order, so even near-ties rank
identically. Queries are searched in batches sized so the ``(batch, n_docs)`` score block stays
under ``max_block_bytes``; no full query x corpus matrix is ever built (the NumPy path's
temporaries peak near four blocks: scores, their negation and argpartition's int64 indices).

Usage::

    index = ExactIndex(doc_vectors, doc_ids)             # backend="auto"
    positions, scores = index.search(query_vectors, k=10)
    ids = index.ids_of(positions[0])
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

import numpy as np

from .exceptions import ConfigError, MissingExtraError

__all__ = ["ExactIndex", "faiss_available", "topk_desc"]

Backend = Literal["auto", "faiss", "numpy"]
DEFAULT_BLOCK_BYTES = 64 * 1024 * 1024


def faiss_available() -> bool:
    """Whether faiss-cpu can be imported."""
    try:
        import faiss  # noqa: F401
    except ImportError:
        return False
    return True


def topk_desc(scores: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Top-k columns of each row of ``scores``: score descending, then column ascending.

    Exact for ties at the cut: when equal scores straddle rank k, the lowest columns are kept.
    Returns ``(columns, values)``, both ``(n_rows, min(k, n_cols))``.
    """
    n_rows, n_cols = scores.shape
    k = min(k, n_cols)
    if k <= 0:
        return np.empty((n_rows, 0), dtype=np.int64), np.empty((n_rows, 0), dtype=scores.dtype)
    if k == n_cols:
        cols = np.argsort(-scores, axis=1, kind="stable")
        return cols.astype(np.int64), np.take_along_axis(scores, cols, axis=1)
    part = np.argpartition(-scores, k - 1, axis=1)[:, :k]
    vals = np.take_along_axis(scores, part, axis=1)
    kth = vals.min(axis=1)
    # rows where ties at the k-th score reach past the partition need the exact tie-break
    crowded = np.flatnonzero((scores >= kth[:, None]).sum(axis=1) > k)
    for r in crowded:
        row = scores[r]
        above = np.flatnonzero(row > kth[r])
        tied = np.flatnonzero(row == kth[r])[: k - len(above)]
        part[r] = np.concatenate([above, tied])
        vals[r] = row[part[r]]
    order = np.lexsort((part, -vals), axis=-1)
    cols = np.take_along_axis(part, order, axis=1).astype(np.int64)
    return cols, np.take_along_axis(vals, order, axis=1)


class ExactIndex:
    """Exact inner-product search over ``vectors`` (one row per id in ``ids``).

    ``backend`` is ``"faiss"``, ``"numpy"`` or ``"auto"`` (FAISS when installed). Positions
    returned by :meth:`search` index into ``ids`` as given.
    """

    def __init__(
        self,
        vectors: np.ndarray,
        ids: Sequence[str],
        *,
        backend: Backend = "auto",
        max_block_bytes: int = DEFAULT_BLOCK_BYTES,
    ) -> None:
        matrix = np.asarray(vectors, dtype=np.float32)
        if matrix.ndim != 2:
            raise ConfigError(f"index vectors must be 2-d (n, dim), got shape {matrix.shape}")
        if matrix.shape[0] != len(ids):
            raise ConfigError(f"{matrix.shape[0]} vectors for {len(ids)} ids")
        if backend not in ("auto", "faiss", "numpy"):
            raise ConfigError(f"index backend {backend!r}: use 'auto', 'faiss' or 'numpy'")
        if backend == "auto":
            backend = "faiss" if faiss_available() else "numpy"
        self.backend: str = backend
        self.dim = matrix.shape[1]
        self.max_block_bytes = max_block_bytes
        # stored in descending id order: among equal scores, the lower position wins
        order = sorted(range(len(ids)), key=lambda i: ids[i], reverse=True)
        self._stored_to_given = np.asarray(order, dtype=np.int64)
        self._vectors = np.ascontiguousarray(matrix[self._stored_to_given])
        self.ids: tuple[str, ...] = tuple(ids)
        self._faiss: Any = None
        if backend == "faiss":
            try:
                import faiss
            except ImportError:
                raise MissingExtraError(
                    "index backend 'faiss' needs faiss-cpu: pip install 'pytest-embedbench[faiss]'"
                ) from None
            self._faiss = faiss.IndexFlatIP(self.dim)
            if len(self._vectors):
                self._faiss.add(self._vectors)

    def __len__(self) -> int:
        return len(self.ids)

    @property
    def nbytes(self) -> int:
        """Bytes held by the stored vectors."""
        return int(self._vectors.nbytes)

    def ids_of(self, positions: np.ndarray) -> list[str]:
        """Document ids for positions returned by :meth:`search` (``-1`` padding dropped)."""
        return [self.ids[p] for p in positions if p >= 0]

    def search(self, queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """Top-k positions and scores per query row, ``(n_queries, k)``, padded with -1 / -inf.

        Scores are float64 inner products of the stored float32 vectors.
        """
        q = np.asarray(queries, dtype=np.float32)
        if q.ndim == 1:
            q = q[None, :]
        if q.ndim != 2 or q.shape[1] != self.dim:
            raise ConfigError(
                f"query vectors have shape {q.shape}; the index holds {self.dim}-d vectors"
            )
        if k < 1:
            raise ConfigError(f"k={k!r}: ask for at least one result")
        n_q, n_docs = q.shape[0], len(self.ids)
        positions = np.full((n_q, k), -1, dtype=np.int64)
        scores = np.full((n_q, k), -np.inf, dtype=np.float64)
        if n_docs == 0 or n_q == 0:
            return positions, scores
        batch = max(1, self.max_block_bytes // (4 * n_docs))
        k_eff = min(k, n_docs)
        # candidates: k plus a margin by float32 scores from either backend, so near-ties at
        # the cut survive; then the final order comes from float64 scores of the candidates,
        # computed the same way for both backends, so FAISS and NumPy rank identically
        wide = min(n_docs, k_eff + max(16, k_eff))
        for start in range(0, n_q, batch):
            block = np.ascontiguousarray(q[start : start + batch])
            if self._faiss is not None:
                candidates = self._candidates_faiss(block, wide)
            else:
                candidates, _ = topk_desc(block @ self._vectors.T, wide)
            cols, vals = self._refine(block, candidates, k_eff)
            positions[start : start + len(block), :k_eff] = self._stored_to_given[cols]
            scores[start : start + len(block), :k_eff] = vals
        return positions, scores

    def _refine(
        self, block: np.ndarray, candidates: np.ndarray, k: int
    ) -> tuple[np.ndarray, np.ndarray]:
        """The top k of each row's candidates by float64 score, then stored position."""
        cols = np.empty((len(block), k), dtype=np.int64)
        vals = np.empty((len(block), k), dtype=np.float64)
        for r in range(len(block)):
            cand = candidates[r]
            exact = self._vectors[cand].astype(np.float64) @ block[r].astype(np.float64)
            order = np.lexsort((cand, -exact))[:k]
            cols[r], vals[r] = cand[order], exact[order]
        return cols, vals

    def _candidates_faiss(self, block: np.ndarray, wide: int) -> np.ndarray:
        """FAISS's top ``wide`` per row; a row whose float32 tie reaches past them is scored
        fully, so no tied document is lost."""
        n_docs = len(self.ids)
        dist, idx = self._faiss.search(block, wide)
        out = np.empty((len(block), wide), dtype=np.int64)
        for r in range(len(block)):
            if wide < n_docs and (dist[r] == dist[r].min()).sum() > 1:
                out[r] = topk_desc(block[r : r + 1] @ self._vectors.T, wide)[0][0]
            else:
                out[r] = idx[r]
        return out

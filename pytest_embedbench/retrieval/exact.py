"""Exact top-k search by inner product (cosine on L2-normalised vectors).

Two backends return identical rankings: FAISS ``IndexFlatIP`` when faiss-cpu is installed, and
a NumPy fallback. Both follow the project's tie rule, score descending then document id
descending: vectors are stored in descending id order, so among equal scores the lower stored
position wins.

The final order is by float64 scores (the exact float32 x float32 products, summed the same way
for every document and query), so near-ties rank identically whichever backend proposed the
candidates. Each backend proposes k plus a margin of candidates by its float32 scores; a
float32 inner product of d terms is within ``d * 2**-24 * |q| * max|v|`` of the true one, so when
the k-th float64 score is above the last candidate's float32 score by more than that bound, no
document outside the candidates can rank in the top k; a query where it is not (exact ties
across the margin, duplicates) is re-scanned over the whole corpus for every document within
the bound. The rankings are therefore the exact float64 top k, not a heuristic.

* FAISS gets the queries in blocks of up to 4,096: FAISS bounds its own memory (it tiles the
  score matrix internally) and only switches to its BLAS kernel for large query blocks, so small
  blocks would force its slow kernel.
* NumPy computes ``(query block, doc chunk)`` score blocks of at most ``max_block_bytes`` with
  one BLAS sgemm each, and keeps a running top-k per query: after the first chunk, only scores
  above each query's current k-th candidate are gathered and merged. No full query x corpus
  matrix is ever built; the temporaries peak near three blocks (the score block and the int64
  indices of the first chunk's argpartition).

Usage::

    index = ExactIndex(doc_vectors, doc_ids)             # backend="auto"
    positions, scores = index.search(query_vectors, k=10)
    ids = index.ids_of(positions[0])
"""

from __future__ import annotations

import math
import operator
from collections.abc import Sequence
from typing import Any, Literal

import numpy as np

from ..core.exceptions import ConfigError, MissingExtraError

__all__ = ["ExactIndex", "ShardedIndex", "faiss_available", "shard_rows", "topk_desc"]

Backend = Literal["auto", "faiss", "numpy"]
DEFAULT_BLOCK_BYTES = 64 * 1024 * 1024
#: queries per FAISS call: FAISS tiles its own score matrix, and its BLAS kernel needs large
#: blocks (faiss 1.15 switches to it only when n_queries * dim >= 128,000)
FAISS_QUERY_BLOCK = 4096
#: the NumPy path's query block and the smallest doc chunk it trades it against
NUMPY_QUERY_BLOCK = 256
NUMPY_MIN_CHUNK = 65536
#: float64 elements per gather when rescoring candidates (16 MiB)
EXACT_GATHER_ELEMS = 2 * 1024 * 1024


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


def storage_order(ids: Sequence[str]) -> np.ndarray:
    """The positions of ``ids`` in the order :class:`ExactIndex` stores their vectors:
    descending id (equal ids keep their order), so that among equal scores the lower stored
    position, the higher id, wins as the tie rule says."""
    return np.asarray(sorted(range(len(ids)), key=ids.__getitem__, reverse=True), dtype=np.int64)


def _checked_order(order: np.ndarray, ids: Sequence[str]) -> np.ndarray:
    """``order`` if it is :func:`storage_order` of ``ids`` (each position once, the ids
    descending along it), else a :class:`ConfigError`: a wrong order would pair vectors with
    the wrong ids."""
    order = np.asarray(order)
    n = len(ids)
    if order.shape != (n,) or order.dtype.kind not in "iu":
        raise ConfigError(f"stored_order must be {n} integer positions, got shape {order.shape}")
    if n and (
        int(order.min()) < 0
        or int(order.max()) >= n
        or not (np.bincount(order, minlength=n) == 1).all()
    ):
        raise ConfigError("stored_order must list each position of ids once")
    ordered = [ids[i] for i in order.tolist()]
    if not all(map(operator.ge, ordered, ordered[1:])):
        raise ConfigError("stored_order must be storage_order(ids): the ids in descending order")
    return order.astype(np.int64, copy=False)


def _query_rows(queries: np.ndarray, dim: int, k: int) -> np.ndarray:
    """``queries`` as float32 rows of ``dim`` values (one vector is one row), checked with ``k``
    before a search: a wrong width or ``k < 1`` is a ConfigError."""
    q = np.asarray(queries, dtype=np.float32)
    if q.ndim == 1:
        q = q[None, :]
    if q.ndim != 2 or q.shape[1] != dim:
        raise ConfigError(f"query vectors have shape {q.shape}; the index holds {dim}-d vectors")
    if k < 1:
        raise ConfigError(f"k={k!r}: ask for at least one result")
    return q


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
        stored_order: np.ndarray | None = None,
    ) -> None:
        """``stored_order``: :func:`storage_order` of ``ids``, when the rows of ``vectors``
        are already in it (row ``j`` the vector of ``ids[stored_order[j]]``: the caller
        gathered them in that order as it read them, e.g. from the cache); they are then kept
        as they are, with no second copy and no second sort (the order is checked)."""
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
        if stored_order is not None:
            self._stored_to_given = _checked_order(stored_order, ids)
            self._vectors = np.ascontiguousarray(matrix)
        else:
            self._stored_to_given = storage_order(ids)
            self._vectors = np.ascontiguousarray(matrix[self._stored_to_given])
        self.ids: tuple[str, ...] = tuple(ids)
        self._max_norm = self._largest_norm()
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

    def _largest_norm(self) -> float:
        """The largest stored vector norm, in chunks (no float64 copy of the corpus)."""
        largest = 0.0
        for lo in range(0, len(self._vectors), 65536):
            part = self._vectors[lo : lo + 65536]
            largest = max(largest, float(np.einsum("ij,ij->i", part, part).max()))
        return math.sqrt(largest) * (1 + 1e-3)

    def __len__(self) -> int:
        return len(self.ids)

    @property
    def nbytes(self) -> int:
        """Bytes held by the stored vectors."""
        return int(self._vectors.nbytes)

    def ids_of(self, positions: np.ndarray) -> list[str]:
        """Document ids for positions returned by :meth:`search` (``-1`` padding dropped)."""
        return [self.ids[p] for p in positions if p >= 0]

    def vectors_in_order(self) -> np.ndarray:
        """The stored vectors in the order of :attr:`ids` (a copy), for another index over
        the same vectors (:mod:`~pytest_embedbench.ann`)."""
        given = np.empty_like(self._stored_to_given)
        given[self._stored_to_given] = np.arange(len(self._stored_to_given))
        return self._vectors[given]

    def search(self, queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """Top-k positions and scores per query row, ``(n_queries, k)``, padded with -1 / -inf.

        Scores are float64 inner products of the stored float32 vectors.
        """
        q = _query_rows(queries, self.dim, k)
        n_q, n_docs = q.shape[0], len(self.ids)
        positions = np.full((n_q, k), -1, dtype=np.int64)
        scores = np.full((n_q, k), -np.inf, dtype=np.float64)
        if n_docs == 0 or n_q == 0:
            return positions, scores
        k_eff = min(k, n_docs)
        # candidates: k plus a margin by float32 score; the margin is what lets the bound in
        # _finish prove, for almost every query, that nothing outside them reaches the top k
        wide = min(n_docs, k_eff + max(16, k_eff))
        if self._faiss is not None:
            batch = FAISS_QUERY_BLOCK
        else:
            batch, chunk = self._numpy_blocks(n_q)
        for start in range(0, n_q, batch):
            block = np.ascontiguousarray(q[start : start + batch])
            if self._faiss is not None:
                cand_s, cand_p = self._faiss.search(block, wide)
            else:
                cand_s, cand_p = self._candidates_numpy(block, wide, chunk)
            cols, vals = self._finish(block, cand_s, cand_p, k_eff)
            positions[start : start + len(block), :k_eff] = self._stored_to_given[cols]
            scores[start : start + len(block), :k_eff] = vals
        return positions, scores

    def _numpy_blocks(self, n_q: int) -> tuple[int, int]:
        """(queries per block, documents per chunk) with the score block under the bound.

        Large query blocks keep sgemm efficient and read the vectors fewer times; the doc chunk
        takes the rest of the budget, at most the whole corpus.
        """
        n_docs = len(self.ids)
        budget = max(1, self.max_block_bytes // 4)  # float32 scores per block
        batch = max(1, min(n_q, NUMPY_QUERY_BLOCK, budget // min(n_docs, NUMPY_MIN_CHUNK)))
        chunk = max(1, min(n_docs, budget // batch))
        return batch, chunk

    def _candidates_numpy(
        self, block: np.ndarray, wide: int, chunk: int
    ) -> tuple[np.ndarray, np.ndarray]:
        """Each row's ``wide`` best stored positions by float32 score (any order), streamed over
        doc chunks: ``(scores, positions)``, both ``(len(block), wide)``."""
        n_rows, n_docs = len(block), len(self.ids)
        cand_s = np.full((n_rows, wide), -np.inf, dtype=np.float32)
        cand_p = np.full((n_rows, wide), -1, dtype=np.int64)
        filled = 0  # candidate slots in use, the same for every row
        thr = np.full(n_rows, -np.inf, dtype=np.float32)
        buf = np.empty((n_rows, min(chunk, n_docs)), dtype=np.float32)
        for lo in range(0, n_docs, chunk):
            hi = min(n_docs, lo + chunk)
            out = buf if hi - lo == buf.shape[1] else np.empty((n_rows, hi - lo), np.float32)
            s = np.matmul(block, self._vectors[lo:hi].T, out=out)
            if filled < wide:
                # still filling: merge the whole chunk (only the first chunk is large)
                if filled == 0:
                    merged_s, merged_p = s, None
                else:
                    merged_s = np.concatenate([cand_s[:, :filled], s], axis=1)
                    merged_p = np.concatenate(
                        [cand_p[:, :filled], np.broadcast_to(np.arange(lo, hi), s.shape)], axis=1
                    )
                width = merged_s.shape[1]
                take = min(wide, width)
                if take < width:
                    part = np.argpartition(merged_s, width - take, axis=1)[:, width - take :]
                else:
                    part = np.broadcast_to(np.arange(width), (n_rows, width))
                cand_s[:, :take] = np.take_along_axis(merged_s, part, axis=1)
                cand_p[:, :take] = (
                    part + lo if merged_p is None else np.take_along_axis(merged_p, part, axis=1)
                )
                filled = take
                if filled == wide:
                    thr = cand_s.min(axis=1)
                continue
            # full: only scores above a row's current worst candidate can enter
            rows, cols = np.nonzero(s > thr[:, None])
            if len(rows) == 0:
                continue
            vals = s[rows, cols]
            counts = np.bincount(rows, minlength=n_rows)
            active = np.flatnonzero(counts)
            slot = np.arange(len(rows)) - (np.cumsum(counts) - counts)[rows]
            where = np.empty(n_rows, dtype=np.int64)
            where[active] = np.arange(len(active))
            extra = int(counts.max())
            new_s = np.full((len(active), wide + extra), -np.inf, dtype=np.float32)
            new_p = np.full((len(active), wide + extra), -1, dtype=np.int64)
            new_s[:, :wide], new_p[:, :wide] = cand_s[active], cand_p[active]
            new_s[where[rows], wide + slot] = vals
            new_p[where[rows], wide + slot] = cols + lo
            part = np.argpartition(new_s, extra, axis=1)[:, extra:]
            cand_s[active] = np.take_along_axis(new_s, part, axis=1)
            cand_p[active] = np.take_along_axis(new_p, part, axis=1)
            thr[active] = cand_s[active].min(axis=1)
        return cand_s, cand_p

    def _finish(
        self, block: np.ndarray, cand_s: np.ndarray, cand_p: np.ndarray, k: int
    ) -> tuple[np.ndarray, np.ndarray]:
        """The exact top k per row by float64 score, then stored position, from float32
        candidates ``(scores, positions)``; rows the bound cannot settle are re-scanned."""
        n_rows, wide = cand_s.shape
        n_docs = len(self.ids)
        order = np.argsort(-cand_s, axis=1, kind="stable")
        cand_s = np.take_along_axis(cand_s, order, axis=1).astype(np.float64)
        cand_p = np.take_along_axis(cand_p, order, axis=1)
        err = self._error_bound(block)
        # candidates below the k-th float32 score by more than twice the bound cannot reach
        # the top k (k candidates beat them in float64): rescore only the columns before them
        keep = cand_s >= (cand_s[:, k - 1] - 2 * err)[:, None]
        depth = int(keep.sum(axis=1).max())
        exact = self._exact_scores(block, cand_p[:, :depth])
        cols = np.empty((n_rows, k), dtype=np.int64)
        vals = np.empty((n_rows, k), dtype=np.float64)
        for r in range(n_rows):
            pos, val = cand_p[r, :depth], exact[r]
            top = np.lexsort((pos, -val))[:k]
            cols[r], vals[r] = pos[top], val[top]
        if wide < n_docs:
            # a document outside the candidates has float32 score <= the last candidate's,
            # so float64 score <= that + err; below the k-th float64 score it cannot enter
            unsettled = np.flatnonzero(~(cand_s[:, -1] + err < vals[:, k - 1]))
            for row in unsettled.tolist():
                lower = float(vals[row, k - 1] - err[row])
                cols[row], vals[row] = self._rescan(block[row], lower, k)
        return cols, vals

    def _error_bound(self, block: np.ndarray) -> np.ndarray:
        """Per row, a bound on |float32 score - float64 score| for any stored vector: twice
        ``d * 2**-24 * |q| * max|v|`` (any summation order, FMA or not, plus float64's error)."""
        norms = np.sqrt(np.einsum("ij,ij->i", block, block, dtype=np.float64))
        return 2.0 * (self.dim + 2) * 2.0**-24 * norms * self._max_norm + 1e-300

    def _exact_scores(self, block: np.ndarray, pos: np.ndarray) -> np.ndarray:
        """float64 scores of ``block[r]`` against stored vectors ``pos[r]`` (shape of ``pos``).

        The float32 products are exact in float64 and each dot product is one pairwise sum
        along the contiguous last axis, so a (query, document) pair gets the same bits whatever
        the batch it is scored in. Gathers stay under ~16 MiB.
        """
        n_rows, depth = pos.shape
        out = np.empty((n_rows, depth), dtype=np.float64)
        q64 = block.astype(np.float64)
        step = max(1, EXACT_GATHER_ELEMS // max(1, self.dim))  # vectors per gather
        rows_per = max(1, step // max(1, depth))
        cols_per = min(depth, step) if depth else 1
        for r0 in range(0, n_rows, rows_per):
            r1 = min(n_rows, r0 + rows_per)
            for c0 in range(0, max(depth, 1), cols_per):
                c1 = min(depth, c0 + cols_per)
                # float32 x float64 in the ufunc: exact products, no float64 copy first
                prod = np.multiply(self._vectors[pos[r0:r1, c0:c1]], q64[r0:r1, None, :])
                out[r0:r1, c0:c1] = prod.sum(axis=2)
        return out

    def _rescan(self, query: np.ndarray, lower: float, k: int) -> tuple[np.ndarray, np.ndarray]:
        """The exact top k for one query by scanning the whole corpus for every document whose
        float32 score is at least ``lower`` (the k-th float64 score found so far, less the
        bound): a superset of the true top k, rescored in float64."""
        n_docs = len(self.ids)
        step = max(1, self.max_block_bytes // 4)
        found = []
        for lo in range(0, n_docs, step):
            s = self._vectors[lo : lo + step] @ query
            found.append(np.flatnonzero(s >= lower) + lo)
        pos = np.concatenate(found)
        val = self._exact_scores(query[None, :], pos[None, :])[0]
        top = np.lexsort((pos, -val))[:k]
        return pos[top], val[top]


#: bytes a shard takes per byte of its float32 vectors while it is searched: the cache's blobs,
#: those laid side by side, the matrix gathered in key order, the index's copy in descending id
#: order and FAISS's own copy
SHARD_COPIES = 5


def shard_rows(memory_budget: int, dim: int) -> int:
    """Documents per shard so that searching one stays under ``memory_budget`` bytes."""
    return max(1, int(memory_budget) // (SHARD_COPIES * 4 * max(1, int(dim))))


class ShardedIndex:
    """Exact inner-product search over vectors that are never all in memory.

    ``load(lo, hi)`` returns the float32 vectors of ``ids[lo:hi]`` (read from the embedding
    cache, or a spill file); :meth:`search` loads ``rows`` documents at a time, searches each
    shard with an :class:`ExactIndex` (its exact float64 top k) and keeps a running top k,
    merged by the same rule: float64 score descending, then document id descending. A
    document's float64 score has the same bits in any shard (see
    :meth:`ExactIndex._exact_scores`), so the rankings equal those of one ExactIndex over the
    whole corpus, ties across shard boundaries included.

    Usage::

        index = ShardedIndex(ids, 384, load, rows=shard_rows(2**30, 384))
        positions, scores = index.search(query_vectors, k=10)
    """

    def __init__(
        self,
        ids: Sequence[str],
        dim: int,
        load: Any,
        *,
        rows: int,
        backend: Backend = "auto",
    ) -> None:
        if backend not in ("auto", "faiss", "numpy"):
            raise ConfigError(f"index backend {backend!r}: use 'auto', 'faiss' or 'numpy'")
        if backend == "auto":
            backend = "faiss" if faiss_available() else "numpy"
        self.backend: str = backend
        self.ids: tuple[str, ...] = tuple(ids)
        self.dim = int(dim)
        self.rows = max(1, int(rows))
        self._load = load
        # the tie rule across shards: each document's place in descending id order
        self._id_rank = np.empty(len(self.ids), dtype=np.int64)
        self._id_rank[storage_order(self.ids)] = np.arange(len(self.ids))

    def __len__(self) -> int:
        return len(self.ids)

    @property
    def nbytes(self) -> int:
        """Bytes of the vectors held at once: one shard."""
        return min(self.rows, len(self.ids)) * self.dim * 4

    def ids_of(self, positions: np.ndarray) -> list[str]:
        return [self.ids[p] for p in positions if p >= 0]

    def vectors_in_order(self) -> np.ndarray:
        """Every vector in the order of :attr:`ids`, read shard by shard into one matrix (for
        an approximate index over the same vectors, which holds them all anyway)."""
        out = np.empty((len(self.ids), self.dim), dtype=np.float32)
        for lo in range(0, len(self.ids), self.rows):
            hi = min(len(self.ids), lo + self.rows)
            out[lo:hi] = self._load(lo, hi)
        return out

    def search(self, queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """As :meth:`ExactIndex.search`, one shard at a time."""
        q = _query_rows(queries, self.dim, k)
        positions = np.full((len(q), k), -1, dtype=np.int64)
        scores = np.full((len(q), k), -np.inf, dtype=np.float64)
        for lo in range(0, len(self.ids), self.rows):
            hi = min(len(self.ids), lo + self.rows)
            shard = ExactIndex(self._load(lo, hi), self.ids[lo:hi], backend=self.backend)  # type: ignore[arg-type]
            pos, val = shard.search(q, k)
            del shard
            positions, scores = self._merge(
                positions, scores, np.where(pos >= 0, pos + lo, -1), val, k
            )
        return positions, scores

    def _merge(
        self, pos_a: np.ndarray, val_a: np.ndarray, pos_b: np.ndarray, val_b: np.ndarray, k: int
    ) -> tuple[np.ndarray, np.ndarray]:
        """The top k of two top-k lists per row: score descending, then id descending."""
        pos = np.concatenate([pos_a, pos_b], axis=1)
        val = np.concatenate([val_a, val_b], axis=1)
        rank = np.where(pos >= 0, self._id_rank[np.maximum(pos, 0)], len(self.ids))
        order = np.lexsort((rank, -val), axis=-1)[:, :k]
        return np.take_along_axis(pos, order, axis=1), np.take_along_axis(val, order, axis=1)

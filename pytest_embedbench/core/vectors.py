"""The checks every batch of embedding vectors passes before it is used.

A vector is used only as a ``(rows, dimension)`` float32 matrix with the model's one dimension
and finite values, of unit L2 norm where the model normalises. Two readers apply them: a
provider to each response (:class:`~pytest_embedbench.models.providers.base.EmbeddingProvider`:
anything else is a :class:`~pytest_embedbench.core.exceptions.ProviderError` that says ``where``
it came from), and the embedding cache to each row it reads back (a row that fails is reported
missing, so it is embedded again). The row kernels below are what both use.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .exceptions import ProviderError

__all__ = [
    "NORM_TOLERANCE",
    "as_matrix",
    "check_finite",
    "finite_rows",
    "l2_normalised",
    "squared_norms",
    "unit_rows",
]

#: how far a stored vector's norm may be from 1 where the model normalises (float32 rounding
#: stays below 1e-5 even at 4096 dimensions)
NORM_TOLERANCE = 1e-3


def squared_norms(rows: np.ndarray) -> np.ndarray:
    """Each row's squared L2 norm, in the rows' float32 (a relative error near 1e-7) and without
    a temporary copy; a NaN or infinite value makes it non-finite."""
    return np.einsum("ij,ij->i", rows, rows)


def finite_rows(rows: np.ndarray, squares: np.ndarray | None = None) -> np.ndarray:
    """Which rows hold only finite values. Given their :func:`squared_norms`, only the rows
    whose square is not finite are looked at (a finite square has finite terms; a huge finite
    value can overflow it, so those rows are checked value by value)."""
    if squares is None:
        return np.isfinite(rows).all(axis=1)
    finite = np.isfinite(squares)
    odd = np.flatnonzero(~finite)
    if len(odd):
        finite[odd] = np.isfinite(rows[odd]).all(axis=1)
    return finite


def unit_rows(squares: np.ndarray, tolerance: float = NORM_TOLERANCE) -> np.ndarray:
    """Which rows, given their :func:`squared_norms`, have an L2 norm within ``tolerance`` of
    1."""
    return np.abs(np.sqrt(squares) - 1.0) <= tolerance


def as_matrix(raw: Any, expected: int, dimension: int | None, where: str) -> np.ndarray:
    """``raw`` as a float32 matrix of ``expected`` rows and ``dimension`` columns (any non-zero
    width while the dimension is still unknown)."""
    if isinstance(raw, (list, tuple)) and raw and all(hasattr(r, "__len__") for r in raw):
        lengths = sorted({len(r) for r in raw})
        if len(lengths) > 1:
            raise ProviderError(
                f"{where}: embeddings of different dimensions in one response "
                f"({', '.join(map(str, lengths))})"
            )
    try:
        arr = np.asarray(raw, dtype=np.float32)
    except (TypeError, ValueError) as exc:
        raise ProviderError(f"{where}: response is not a numeric matrix ({exc})") from None
    if arr.ndim != 2 or arr.shape[0] != expected:
        raise ProviderError(
            f"{where}: expected {expected} embeddings, got an array of shape {arr.shape}"
        )
    if dimension is None:
        if arr.shape[1] == 0:
            raise ProviderError(f"{where}: embeddings have dimension 0")
    elif arr.shape[1] != dimension:
        raise ProviderError(
            f"{where}: embedding dimension {arr.shape[1]} differs from the model's {dimension}"
        )
    return arr


def check_finite(arr: np.ndarray, where: str, first: int) -> None:
    """Fail on NaN or inf, naming up to five rows by sorted position (``first`` is the batch's)."""
    bad = ~finite_rows(arr)
    if bad.any():
        rows = (np.flatnonzero(bad) + first).tolist()[:5]
        raise ProviderError(
            f"{where}: non-finite values (NaN or inf) in {int(bad.sum())} embedding(s), "
            f"e.g. at sorted position(s) {rows}"
        )


def l2_normalised(arr: np.ndarray, where: str) -> np.ndarray:
    """Each row divided by its L2 norm; a zero row cannot be."""
    norms = np.linalg.norm(arr, axis=1, keepdims=True)
    if (norms == 0).any():
        raise ProviderError(f"{where}: a zero vector cannot be L2-normalised")
    return arr / norms

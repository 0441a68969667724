"""The checks every batch of embeddings passes before it is used (see :class:`.EmbeddingProvider`).

A response becomes a ``(rows, dimension)`` float32 matrix with the row count asked for, the
model's one dimension and finite values, L2-normalised when the provider normalises; anything
else is a :class:`~pytest_embedbench.exceptions.ProviderError` that says ``where`` it came from.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...core.exceptions import ProviderError

__all__ = ["as_matrix", "check_finite", "l2_normalised"]


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
    bad = ~np.isfinite(arr).all(axis=1)
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

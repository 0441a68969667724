"""The optional index engines (LanceDB, Chroma, pgvector, Qdrant) in tests: skipped when their
package is not installed, except under EMBEDBENCH_REQUIRE_INDEX_ENGINES=1 (.ci/run installs
the extras and sets it), where a missing engine fails the test instead of hiding it; and
:func:`random_vectors`, the seeded vectors the index tests build and search."""

from __future__ import annotations

import importlib
import importlib.util
import os

import numpy as np
import pytest


def random_vectors(
    n: int, dim: int, n_queries: int, *, seed: int
) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """``n`` unit-length document vectors of ``dim`` float32 values, then ``n_queries`` query
    vectors (not normalised), all standard normal from ``seed``, and the documents' ids
    ``d0000``, ``d0001``, ..."""
    rng = np.random.default_rng(seed)
    docs = rng.standard_normal((n, dim)).astype(np.float32)
    docs /= np.linalg.norm(docs, axis=1, keepdims=True)
    queries = rng.standard_normal((n_queries, dim)).astype(np.float32)
    return docs, queries, [f"d{i:04d}" for i in range(n)]


def require_engine(module: str, extra: str, *, imported: bool = True) -> None:
    """Skip without ``module`` (the engine's package), or fail when the environment requires the
    engines; the message names the extra that installs it. ``imported=False`` only finds the
    package, without importing it here (a test that imports it in a fresh process: lancedb's
    Rust core panics when imported after chromadb's has set up the logger in this one)."""
    if not imported:
        if importlib.util.find_spec(module) is not None:
            return
        reason = f"an optional engine: pip install 'pytest-embedbench[{extra}]'"
        if os.environ.get("EMBEDBENCH_REQUIRE_INDEX_ENGINES") == "1":
            pytest.fail(
                f"EMBEDBENCH_REQUIRE_INDEX_ENGINES=1 but {module} is not installed: {reason}"
            )
        pytest.skip(reason)
    if os.environ.get("EMBEDBENCH_REQUIRE_INDEX_ENGINES") == "1":
        try:
            importlib.import_module(module)
        except ImportError as exc:
            pytest.fail(
                f"EMBEDBENCH_REQUIRE_INDEX_ENGINES=1 but {module} cannot be imported ({exc}): "
                f"pip install 'pytest-embedbench[{extra}]'"
            )
    pytest.importorskip(
        module, reason=f"an optional engine: pip install 'pytest-embedbench[{extra}]'"
    )

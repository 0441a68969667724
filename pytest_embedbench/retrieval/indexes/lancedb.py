"""The engine ``lancedb``: LanceDB, embedded (a table in a temporary folder, no server; extra
``lancedb``), searched with ``distance_type="dot"``.

Kinds are LanceDB's index types with its own parameter names::

    lancedb                            no index: LanceDB's flat scan
    lancedb:ivf_flat(num_partitions, nprobes, refine_factor)
    lancedb:ivf_pq(... num_sub_vectors, num_bits)
    lancedb:ivf_hnsw_sq(... m, ef_construction, ef)

This module's name is the library's: ``import lancedb`` here is an absolute import and gets
LanceDB.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ...core.exceptions import ConfigError
from .registry import (
    EngineSpec,
    VectorIndex,
    folder_bytes,
    missing_extra,
    register_index,
    unfilled,
)

__all__ = ["LanceIndex"]

_LANCE_IVF = frozenset({"num_partitions", "nprobes", "refine_factor"})


@register_index
class LanceIndex(VectorIndex):
    """LanceDB, embedded (a table in a temporary folder, no server), ``distance_type="dot"``.

    Kinds are LanceDB's index types with its own parameter names: ``ivf_flat``, ``ivf_pq``
    (``num_sub_vectors``, ``num_bits``), ``ivf_hnsw_sq`` (``m``, ``ef_construction``, ``ef``);
    every kind takes ``num_partitions``, ``nprobes`` and ``refine_factor``; the engine named
    alone searches the table without an index (LanceDB's flat scan). LanceDB exposes no seed
    for its k-means training, so its IVF indexes are not promised to be deterministic."""

    name = "lancedb"
    kinds = {
        "": frozenset(),
        "ivf_flat": _LANCE_IVF,
        "ivf_pq": _LANCE_IVF | {"num_sub_vectors", "num_bits"},
        "ivf_hnsw_sq": _LANCE_IVF | {"m", "ef_construction", "ef"},
    }

    def __init__(self, spec: EngineSpec, *, seed: int = 0) -> None:
        super().__init__(spec, seed=seed)
        self.deterministic = not spec.kind  # type: ignore[misc]

    def build(self, vectors: np.ndarray, ids: Sequence[str]) -> None:
        import tempfile
        import weakref

        try:
            import lancedb
            import pyarrow as pa
        except ImportError:
            raise missing_extra(self.spec, "LanceDB", "lancedb") from None
        x = np.ascontiguousarray(vectors, dtype=np.float32)
        n, dim = x.shape
        self._folder = tempfile.TemporaryDirectory(prefix="embedbench-lancedb-")
        weakref.finalize(self, self._folder.cleanup)
        table = lancedb.connect(self._folder.name).create_table(
            "documents",
            data=pa.table(
                {
                    "pos": pa.array(np.arange(n, dtype=np.int64)),
                    "vector": pa.FixedSizeListArray.from_arrays(pa.array(x.ravel()), dim),
                }
            ),
        )
        kind, p = self.spec.kind, self.spec.param
        self.description = f"lancedb table, {kind or 'no index (flat scan)'}, distance dot"
        if kind:
            from lancedb import index as lance_index

            options: dict[str, Any] = {"distance_type": "dot"}
            if p("num_partitions") is not None:
                options["num_partitions"] = int(p("num_partitions"))
            config: Any
            if kind == "ivf_pq":
                config = lance_index.IvfPq(
                    **options,
                    num_sub_vectors=p("num_sub_vectors"),
                    num_bits=int(p("num_bits", 8)),
                )
            elif kind == "ivf_hnsw_sq":
                config = lance_index.IvfHnswSq(
                    **options, m=int(p("m", 20)), ef_construction=int(p("ef_construction", 300))
                )
            else:
                config = lance_index.IvfFlat(**options)
            table.create_index("vector", config=config)
            self.description = f"lancedb {type(config).__name__}({options}), distance dot"
        self._table = table
        self.note = (
            "LanceDB's k-means takes no seed: the IVF partitions may differ between runs"
            if kind
            else "flat scan in corpus order: deterministic"
        )

    def search(self, queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        q = np.atleast_2d(np.asarray(queries, dtype=np.float32))
        positions, scores = unfilled(len(q), k)
        p = self.spec.param
        query: Any = self._table.search(q if len(q) > 1 else q[0])
        query = query.distance_type("dot").limit(k)
        if p("nprobes") is not None:
            query = query.nprobes(int(p("nprobes")))
        if p("ef") is not None:
            if int(p("ef")) < k:
                raise ConfigError(
                    f"index {self.spec.spec!r}: ef={p('ef')} is below the depth searched "
                    f"(k={k}); LanceDB's HNSW needs ef >= the test's largest k: give ef >= {k}"
                )
            query = query.ef(int(p("ef")))
        if p("refine_factor") is not None:
            query = query.refine_factor(int(p("refine_factor")))
        found = query.select(["pos", "_distance"]).to_arrow().to_pydict()
        rows = found.get("query_index") or [0] * len(found["pos"])
        filled = [0] * len(q)
        for row, pos, distance in zip(rows, found["pos"], found["_distance"], strict=True):
            if filled[row] < k:
                positions[row, filled[row]] = pos
                scores[row, filled[row]] = 1.0 - float(distance)  # LanceDB's dot: 1 - q.v
                filled[row] += 1
        return positions, scores

    @property
    def nbytes(self) -> int | None:
        return folder_bytes(self._folder.name)

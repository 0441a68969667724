"""The engine ``qdrant``: Qdrant in the test process, no server (extra ``qdrant``)::

    qdrant:exact                        qdrant-client's local mode (QdrantClient(path=...))
    qdrant:hnsw(m, ef_construct, ef)    Qdrant's own HNSW, in process (qdrant-edge-py)

Two libraries, because qdrant-client's local mode has no index at all: it is a NumPy
brute-force search that takes any ``hnsw_config`` and ignores it (its collection info says
``indexed_vectors_count=0``; a ``search_params`` with ``hnsw_ef`` gets its warning "Local mode
performs exact (brute-force) search"). Naming its search HNSW would measure exact search under
another name, so the local mode is ``qdrant:exact`` and HNSW comes from ``qdrant-edge-py``, the
Qdrant core (Rust) embedded as a library: an ``EdgeShard`` in a temporary folder with
``Distance.Dot``, its HNSW built by ``optimize()`` (the indexing and full-scan thresholds set
to their least, so even a small corpus is indexed and searched through the graph; the shard's
``indexed_vectors_count`` is checked and a shard left unindexed is said in the note). ``ef`` is
the search's ``hnsw_ef``; Qdrant searches with ``max(ef, k)`` candidates. The size is the
folder's allocated bytes (Qdrant preallocates sparse files: their apparent size is far larger
than what they hold). This module's name is not a library's.
"""

from __future__ import annotations

from collections.abc import Sequence
from importlib.metadata import version
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from .registry import VectorIndex, missing_extra, register_index, unfilled

__all__ = ["QdrantIndex"]

_BATCH = 1000
_LOCAL = (
    "qdrant:exact is qdrant-client's local mode, a brute-force scan of the float32 vectors "
    "that creates its collections with quantization_config=None and ignores a search's "
    "quantization parameters, so its figures would be float32's under another name"
)
_EDGE = (
    "qdrant:hnsw's quantisation (qdrant-edge-py's quantization_config) keeps the float32 "
    "vectors beside its codes (and takes int8 ranges from its own quantile), so it is not "
    "this spec's store; the engine does not measure it yet"
)


def allocated_bytes(folder: str) -> int:
    """Bytes the files under ``folder`` occupy on disk (their allocated blocks)."""
    return sum(f.stat().st_blocks * 512 for f in Path(folder).rglob("*") if f.is_file())


@register_index
class QdrantIndex(VectorIndex):
    """Qdrant embedded: ``exact`` through qdrant-client's local mode (brute force, the only
    search it has), ``hnsw`` through qdrant-edge-py's in-process shard with Qdrant's parameter
    names (``m`` 16, ``ef_construct`` 100, search ``ef`` 64 by default).

    Qdrant's HNSW takes no seed: two builds of the same vectors on one indexing thread gave
    different rankings, so it is not promised to be deterministic; the local mode's exact scan
    is."""

    name = "qdrant"
    kinds = {"exact": frozenset(), "hnsw": frozenset({"m", "ef_construct", "ef"})}
    #: none measured: the local mode would ignore a quantisation, and qdrant-edge-py's own
    #: (scalar int8 on its quantile, binary, float16 storage) keeps the float32 vectors
    #: beside the codes and calibrates its own way, which this engine does not measure yet
    precision_refusals: ClassVar[dict[str, str]] = {
        f"exact+{precision}": _LOCAL for precision in ("float16", "int8", "binary")
    } | {precision: _EDGE for precision in ("float16", "int8", "binary")}

    def __init__(self, spec: Any, *, seed: int = 0) -> None:
        super().__init__(spec, seed=seed)
        self.deterministic = spec.kind == "exact"  # type: ignore[misc]

    def build(self, vectors: np.ndarray, ids: Sequence[str]) -> None:
        import tempfile
        import weakref

        x = np.ascontiguousarray(vectors, dtype=np.float32)
        self._ids = list(ids)
        self._folder = tempfile.TemporaryDirectory(prefix="embedbench-qdrant-")
        if self.spec.kind == "exact":
            self._store: Any = self._local(x)
        else:
            self._store = self._edge(x)
        weakref.finalize(self, _close, self._store, self._folder)

    def _local(self, x: np.ndarray) -> Any:
        try:
            from qdrant_client import QdrantClient, models
        except ImportError:
            raise missing_extra(self.spec, "qdrant-client", "qdrant") from None
        client = QdrantClient(path=self._folder.name)
        client.create_collection(
            "documents",
            vectors_config=models.VectorParams(size=x.shape[1], distance=models.Distance.DOT),
        )
        for start in range(0, len(x), _BATCH):
            points = [
                models.PointStruct(id=i, vector=x[i].tolist())
                for i in range(start, min(len(x), start + _BATCH))
            ]
            client.upsert("documents", points=points, wait=True)
        self.description = (
            f"qdrant-client {version('qdrant-client')} local mode (QdrantClient(path=...)), "
            "Distance.DOT: a brute-force scan, no index"
        )
        self.note = "qdrant-client's local mode scans every vector: deterministic"
        return client

    def _edge(self, x: np.ndarray) -> Any:
        try:
            import qdrant_edge as qe
        except ImportError:
            raise missing_extra(self.spec, "qdrant-edge-py", "qdrant") from None
        p = self.spec.param
        m, ef_construct = int(p("m", 16)), int(p("ef_construct", 100))
        config = qe.EdgeConfig(
            vectors=qe.EdgeVectorParams(size=x.shape[1], distance=qe.Distance.Dot),
            # the least thresholds (KB): every segment indexed, and searched through its graph
            hnsw_config=qe.HnswIndexConfig(
                m=m, ef_construct=ef_construct, full_scan_threshold=1, max_indexing_threads=1
            ),
            optimizers=qe.EdgeOptimizersConfig(indexing_threshold=1, default_segment_number=1),
            wal_enabled=False,
        )
        shard = qe.EdgeShard.create(self._folder.name, config)
        for start in range(0, len(x), _BATCH):
            points = [qe.Point(i, x[i].tolist()) for i in range(start, min(len(x), start + _BATCH))]
            shard.update(qe.UpdateOperation.upsert_points(points))
        shard.optimize()
        shard.flush()
        indexed = shard.info().indexed_vectors_count
        self._params = qe.SearchParams(hnsw_ef=int(p("ef", 64)))
        self._qe = qe
        self.description = (
            f"qdrant-edge-py {version('qdrant-edge-py')} EdgeShard, "
            f"HNSW(m={m}, ef_construct={ef_construct}), "
            f"hnsw_ef={int(p('ef', 64))}, Distance.Dot; {indexed} of {len(x)} vectors indexed"
        )
        self.note = (
            "Qdrant's HNSW takes no seed: its graph, and so its rankings, may differ between runs"
        )
        if indexed < len(x):
            self.note += (
                f"; only {indexed} of {len(x)} vectors are in the HNSW graph, the others are "
                "scanned in full"
            )
        return shard

    def search(self, queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        q = np.atleast_2d(np.asarray(queries, dtype=np.float32))
        positions, scores = unfilled(len(q), k)
        if len(q) == 0 or k == 0 or not self._ids:
            return positions, scores
        for row, vector in enumerate(q):
            if self.spec.kind == "exact":
                found = self._store.query_points("documents", query=vector.tolist(), limit=k).points
            else:
                qe = self._qe
                found = self._store.query(
                    qe.QueryRequest(
                        limit=k, query=qe.Query.Nearest(vector.tolist()), params=self._params
                    )
                )
            # Qdrant's Dot score is the inner product; ties: document id descending
            hits = sorted(
                ((float(f.score), self._ids[int(f.id)], int(f.id)) for f in found), reverse=True
            )
            for col, (score, _, pos) in enumerate(hits[:k]):
                positions[row, col], scores[row, col] = pos, score
        return positions, scores

    @property
    def nbytes(self) -> int | None:
        return allocated_bytes(self._folder.name)


def _close(store: Any, folder: Any) -> None:
    """Close the client or shard (its files and locks), then remove its folder."""
    try:
        store.close()
    finally:
        folder.cleanup()

"""The engine ``chroma``: Chroma, embedded (a ``chromadb.PersistentClient`` in a temporary
folder, no server; extra ``chroma``), its HNSW with ``space="ip"``::

    chroma                             Chroma's HNSW defaults
    chroma:hnsw(max_neighbors, ef_construction, ef_search, num_threads, batch_size,
                sync_threshold, resize_factor)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .registry import (
    VectorIndex,
    folder_bytes,
    missing_extra,
    place_hits,
    register_index,
    unfilled,
)

__all__ = ["ChromaIndex"]

_CHROMA_HNSW = frozenset(
    {
        "max_neighbors",
        "ef_construction",
        "ef_search",
        "num_threads",
        "batch_size",
        "sync_threshold",
        "resize_factor",
    }
)


@register_index
class ChromaIndex(VectorIndex):
    """Chroma, embedded: a ``chromadb.PersistentClient`` in a temporary folder (no server),
    telemetry off, a collection with ``configuration={"hnsw": {"space": "ip", ...}}``.

    The engine named alone takes Chroma's HNSW defaults; ``chroma:hnsw(...)`` sets the
    parameters of Chroma's collection configuration by its own names (``max_neighbors``,
    ``ef_construction``, ``ef_search``, ``num_threads``, ``batch_size``, ``sync_threshold``,
    ``resize_factor``; the old metadata keys ``hnsw:M``, ``hnsw:construction_ef`` and
    ``hnsw:search_ef`` are errors naming the new ones). Vectors go in as embeddings, so Chroma's
    default embedding function never runs; ``space="ip"`` is Chroma's ``1 - q.v``, given back as
    the inner product, the exact search's score. Chroma's HNSW takes no seed and builds on
    several threads: it is not promised to be deterministic."""

    name = "chroma"
    kinds = {"": frozenset(), "hnsw": _CHROMA_HNSW}
    renamed = {"M": "max_neighbors", "construction_ef": "ef_construction", "search_ef": "ef_search"}
    real_params = frozenset({"resize_factor"})
    deterministic = False

    def build(self, vectors: np.ndarray, ids: Sequence[str]) -> None:
        import tempfile
        import weakref

        try:
            import chromadb
            from chromadb.config import Settings
        except ImportError:
            raise missing_extra(self.spec, "Chroma", "chroma") from None
        x = np.ascontiguousarray(vectors, dtype=np.float32)
        self._ids = list(ids)
        self._folder = tempfile.TemporaryDirectory(prefix="embedbench-chroma-")
        client: Any = chromadb.PersistentClient(
            path=self._folder.name, settings=Settings(anonymized_telemetry=False)
        )
        weakref.finalize(self, _close_chroma, client, self._folder)
        hnsw: dict[str, Any] = {"space": "ip", **dict(self.spec.params)}
        collection: Any = client.create_collection(
            "documents", configuration={"hnsw": hnsw}, embedding_function=None
        )
        batch = int(client.get_max_batch_size())
        for start in range(0, len(x), batch):
            collection.add(
                ids=[str(i) for i in range(start, min(len(x), start + batch))],
                embeddings=x[start : start + batch],
            )
        self._collection = collection
        # the raw JSON: `.configuration` parses it and warns of the "legacy" embedding function
        # that embedding_function=None records (none is ever called)
        used = dict(collection.configuration_json.get("hnsw") or hnsw)
        shown = ", ".join(f"{k}={used[k]}" for k in sorted(used) if k != "space")
        self.description = f"chromadb {chromadb.__version__} collection, HNSW({shown}), space ip"
        self.note = (
            "Chroma's HNSW takes no seed and inserts on several threads: its graph, and so its "
            "rankings, may differ between runs"
        )

    def search(self, queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        q = np.atleast_2d(np.asarray(queries, dtype=np.float32))
        positions, scores = unfilled(len(q), k)
        depth = min(k, len(self._ids))
        if depth == 0 or len(q) == 0:
            return positions, scores
        found = self._collection.query(query_embeddings=q, n_results=depth, include=["distances"])
        for row, (labels, distances) in enumerate(
            zip(found["ids"], found["distances"], strict=True)
        ):
            # Chroma's ip distance is 1 - q.v
            hits = ((1.0 - float(d), int(p)) for p, d in zip(labels, distances, strict=True))
            place_hits(positions, scores, row, hits, self._ids)
        return positions, scores

    @property
    def nbytes(self) -> int | None:
        return folder_bytes(self._folder.name)


def _close_chroma(client: Any, folder: Any) -> None:
    """Stop the Chroma client's system (its files closed), then remove its folder."""
    try:
        client.close()
    finally:
        folder.cleanup()

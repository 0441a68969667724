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

``qdrant:hnsw`` takes a precision (:mod:`.precision`) with Qdrant's own quantisation, given the
float32 vectors: ``+float16`` the ``Float16`` datatype (Qdrant converts the query too),
``+int8`` scalar int8 quantisation (the range Qdrant's own, from its quantile: the spec's
``calibration`` is refused, no Qdrant setting matches it), ``+binary`` one-bit binary
quantisation; ``rescore=R`` is Qdrant's ``rescore=True, oversampling=R`` (with the float32
originals), and without it the search sets ``rescore=False``. Qdrant keeps the float32
originals beside int8 and binary codes, so the size stays the folder's, both; the description
gives the codes' own bytes. The indexed segment's ``segment.json`` is read back, and a
precision it does not record is an error.
"""

from __future__ import annotations

from collections.abc import Sequence
from importlib.metadata import version
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from ...core.exceptions import EmbedBenchError
from .registry import VectorIndex, missing_extra, place_hits, register_index, unfilled

__all__ = ["QdrantIndex"]

_BATCH = 1000
_PRECISIONS = ("float16", "int8", "binary")
_LOCAL = (
    "qdrant:exact is qdrant-client's local mode, a brute-force scan of the float32 vectors "
    "that creates its collections with quantization_config=None and ignores a search's "
    "quantization parameters, so its figures would be float32's under another name; "
    "qdrant:hnsw measures it with Qdrant's own quantisation"
)
_CALIBRATION = (
    "Qdrant's scalar quantisation takes its int8 range itself, from the quantile of the "
    "corpus' values (ScalarQuantizationConfig.quantile, left at Qdrant's default), and has no "
    "setting for a calibration sample"
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
    #: qdrant:hnsw quantises with qdrant-edge-py's own settings (float16 storage, scalar int8,
    #: binary); the local mode (qdrant:exact) would ignore a quantisation
    precisions = frozenset(_PRECISIONS)
    quantises = frozenset(_PRECISIONS)
    precision_refusals: ClassVar[dict[str, str]] = {
        f"exact+{precision}": _LOCAL for precision in _PRECISIONS
    } | {"int8(calibration)": _CALIBRATION}

    def __init__(self, spec: Any, *, seed: int = 0) -> None:
        super().__init__(spec, seed=seed)
        self.deterministic = spec.kind == "exact"  # type: ignore[misc]
        #: what Qdrant recorded for a precision (:func:`read_stored`), after ``build``
        self.stored: dict[str, Any] = {}

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
        sizing = getattr(self.spec, "sizing", None)
        precision = sizing.precision if sizing else ""
        rescore = sizing.param("rescore") if sizing else None
        stored, quantization = _precision(qe, precision)
        config = qe.EdgeConfig(
            vectors=qe.EdgeVectorParams(size=x.shape[1], distance=qe.Distance.Dot, datatype=stored),
            # the least thresholds (KB): every segment indexed, and searched through its graph
            hnsw_config=qe.HnswIndexConfig(
                m=m, ef_construct=ef_construct, full_scan_threshold=1, max_indexing_threads=1
            ),
            quantization_config=quantization,
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
        searched = None
        if quantization is not None:  # the spec's rescore, else Qdrant's codes alone
            searched = qe.QuantizationSearchParams(
                rescore=bool(rescore), oversampling=float(rescore) if rescore else None
            )
        self._params = qe.SearchParams(hnsw_ef=int(p("ef", 64)), quantization=searched)
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
        if precision:
            try:
                self.stored = read_stored(self._folder.name)
                self._say_stored(precision, rescore, len(x), indexed)
            except BaseException:
                _close(shard, self._folder)  # no shard or folder left behind
                raise
        return shard

    def _say_stored(self, precision: str, rescore: int | None, n: int, indexed: int) -> None:
        """Check that Qdrant's segments record the precision (a quantisation it ignored would
        be float32's figures under another name) and say what it stores, in bytes a vector."""
        stored, each = self.stored, (lambda nbytes: f"{nbytes / max(n, 1):.0f} bytes a vector")
        recorded = stored["datatype"] if precision == "float16" else stored["quantization"]
        wanted = {"float16": "float16", "int8": "scalar int8", "binary": "binary"}[precision]
        if precision != "float16" and indexed < n:
            raise EmbedBenchError(
                f"index {self.spec.spec!r}: Qdrant indexed {indexed} of {n} vectors, and it "
                f"quantises only the segments its optimizer indexes: the others are scanned as "
                f"float32, so the figures would not be {precision}'s (a corpus under Qdrant's "
                f"least indexing threshold, 1 KB of vectors, stays unindexed); give a larger "
                f"corpus, or measure {precision} with 'exact+{precision}'"
            )
        if n and recorded != wanted:
            raise EmbedBenchError(
                f"index {self.spec.spec!r}: Qdrant's indexed segment records "
                f"{recorded or 'no quantisation'!r}, not {wanted!r}: its figures would not be "
                f"{precision}'s; qdrant-edge-py {version('qdrant-edge-py')} may not support it"
            )
        if precision == "float16":
            size = f" ({each(stored['vectors'])})" if stored["vectors"] else ""
            self.description += (
                f"; stored as Qdrant's float16 datatype{size}, the query converted to float16 too"
            )
            return
        self.description += (
            f"; Qdrant's {wanted} quantisation (its codes {each(stored['codes'])}, beside the "
            f"float32 originals, {each(stored['vectors'])})"
            + (
                "; the int8 range from Qdrant's own quantile of the corpus"
                if precision == "int8"
                else "; 1 bit a dimension, padded by Qdrant to 128-bit words, the query "
                "binarised too"
            )
            + (
                f"; the top {rescore} x k (oversampling={rescore}) rescored by Qdrant with "
                "the float32 originals"
                if rescore
                else "; scored by the codes alone (rescore=False)"
            )
        )
        self.note += (
            "; bytes/doc is the shard's whole folder: Qdrant keeps the float32 originals beside "
            f"the {precision} codes (the codes alone: {each(stored['codes'])})"
        )

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
            # Qdrant's Dot score is the inner product
            place_hits(
                positions, scores, row, ((float(f.score), int(f.id)) for f in found), self._ids
            )
        return positions, scores

    @property
    def nbytes(self) -> int | None:
        return allocated_bytes(self._folder.name)


def _precision(qe: Any, precision: str) -> tuple[Any, Any]:
    """qdrant-edge-py's vector datatype and quantisation config of a precision."""
    if precision == "float16":
        return qe.VectorStorageDatatype.Float16, None
    if precision == "int8":  # quantile unset: Qdrant's default range
        return None, qe.ScalarQuantizationConfig(type=qe.ScalarType.Int8)
    if precision == "binary":
        return None, qe.BinaryQuantizationConfig(
            encoding=qe.BinaryQuantizationEncoding.OneBit,
            query_encoding=qe.BinaryQuantizationQueryEncoding.Binary,
        )
    return None, None


def read_stored(folder: str) -> dict[str, Any]:
    """What Qdrant recorded for the shard's indexed segments (their ``segment.json``; the
    plain ones when none is indexed): the quantisation (``"scalar int8"``, ``"binary"``,
    ``""``) and datatype (``"float16"``, ``"float32"``), and the bytes of its stored vectors
    (``matrix.dat``) and of its quantised codes (``quantized.data``), the files' sizes summed
    over the segments."""
    import json

    out: dict[str, Any] = {"quantization": "", "datatype": "", "vectors": 0, "codes": 0}
    vectors = []
    for segment in sorted(Path(folder, "segments").iterdir()):
        try:
            config = json.loads((segment / "segment.json").read_text())["config"]
        except (OSError, ValueError, KeyError):
            continue
        vectors.append((segment, config.get("vector_data", {}).get("", {})))
    # the indexed segments; the plain appendable one holds the points only when none is
    indexed = [(seg, v) for seg, v in vectors if v.get("index", {}).get("type") == "hnsw"]
    for segment, vector in indexed or vectors:
        found = vector.get("quantization_config") or {}
        if "scalar" in found:
            out["quantization"] = f"scalar {found['scalar'].get('type', '')}"
        elif found:
            out["quantization"] = next(iter(found))
        out["datatype"] = vector.get("datatype") or "float32"
        storage = segment / "vector_storage"
        for name, key in (("matrix.dat", "vectors"), ("quantized.data", "codes")):
            if (storage / name).is_file():
                out[key] += (storage / name).stat().st_size
    return out


def _close(store: Any, folder: Any) -> None:
    """Close the client or shard (its files and locks), then remove its folder."""
    try:
        store.close()
    finally:
        folder.cleanup()

"""The index axis: one model's corpus vectors indexed many ways, each measured against exact
search on the same query vectors.

An index is named by a spec string, ``engine[:kind][(name=value, ...)]``::

    exact                                  # the exact inner-product search (ExactIndex)
    faiss:hnsw(M=32,efSearch=64)           # faiss.index_factory("HNSW32,Flat"), efSearch 64
    faiss:ivf(nlist=256,nprobe=8)          # "IVF256,Flat", 8 lists probed
    faiss:ivfpq(nlist=64,m=8,nbits=8)      # "IVF64,PQ8x8"
    faiss:flat                             # "Flat": exact, by FAISS alone
    lancedb:ivf_flat(num_partitions=8)     # LanceDB, embedded (extra "lancedb")
    chroma:hnsw(max_neighbors=32,ef_search=64)  # Chroma, embedded (extra "chroma")

The vectors come from the embedding cache through the model's exact retriever
(:class:`~pytest_embedbench.providers.dense.DenseRetriever`): a corpus is embedded once and
indexed once per spec. :class:`IndexedRetriever` answers the run's queries through the index
and keeps what :func:`measure_index` needs: its rankings beside the exact ones (the
ann-benchmarks "recall of the top k against the exact top k"), the index's own query latency
(p50, p95, QPS as one over the mean single-query time), its build time and size.

A custom engine registers like a provider: decorate a :class:`VectorIndex` subclass with
:func:`register_index`, or name it in the ``pytest_embedbench.indexes`` entry point group::

    @register_index
    class MyIndex(VectorIndex):
        name = "mine"
        kinds = {"": frozenset({"depth"})}
        def build(self, vectors, ids): ...
        def search(self, queries, k): ...   # (positions, scores), -1 padded

Determinism: FAISS builds single-threaded (HNSW insertion is order dependent under threads)
with the run's seed for k-means (``ClusteringParameters.seed``) and vectors added in corpus
order, so the same inputs give the same index and the same rankings.
"""

from __future__ import annotations

import math
import re
import time
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field
from importlib import metadata
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from ...core.exceptions import ConfigError, MissingExtraError, did_you_mean
from ..base import Retriever
from ..exact import ExactIndex

if TYPE_CHECKING:
    from ..dense import DenseRetriever

__all__ = [
    "INDEX_ENTRY_POINT_GROUP",
    "INDEXES",
    "IndexRun",
    "IndexSpec",
    "IndexedRetriever",
    "VectorIndex",
    "create_index",
    "index_class",
    "measure_index",
    "neighbour_recall",
    "parse_indexes",
    "register_index",
]

INDEX_ENTRY_POINT_GROUP = "pytest_embedbench.indexes"

#: engine name -> class; the built-in engines and those of entry points
INDEXES: dict[str, type[VectorIndex]] = {}

_SPEC = re.compile(r"^\s*([A-Za-z][\w.-]*)\s*(?::\s*([A-Za-z][\w-]*))?\s*(?:\((.*)\))?\s*$")


@dataclass(frozen=True)
class IndexSpec:
    """A parsed index spec: engine, kind and parameters; ``spec`` is its canonical string
    (what the pytest id shows, so ``pytest -k hnsw`` selects the HNSW tests)."""

    engine: str
    kind: str = ""
    params: tuple[tuple[str, Any], ...] = ()

    @property
    def spec(self) -> str:
        head = f"{self.engine}:{self.kind}" if self.kind else self.engine
        if not self.params:
            return head
        return head + "(" + ",".join(f"{k}={v}" for k, v in self.params) + ")"

    @property
    def id(self) -> str:
        return self.spec

    def __str__(self) -> str:
        return self.spec

    def param(self, name: str, default: Any = None) -> Any:
        return dict(self.params).get(name, default)

    @property
    def is_exact(self) -> bool:
        return self.engine == "exact"

    @classmethod
    def parse(cls, raw: Any, where: str) -> IndexSpec:
        """``raw`` (a spec string or an IndexSpec), checked against the registered engine's
        kinds and parameters; a ConfigError names ``where`` and the fix."""
        if isinstance(raw, IndexSpec):
            return raw
        if not isinstance(raw, str):
            raise ConfigError(
                f"{where}: index {raw!r}: give a spec string such as 'exact' or "
                "'faiss:hnsw(M=32,efSearch=64)'"
            )
        match = _SPEC.match(raw)
        if match is None:
            raise ConfigError(
                f"{where}: index {raw!r} is not engine[:kind][(name=value,...)], e.g. "
                "'faiss:ivf(nlist=256,nprobe=8)'"
            )
        engine, kind, body = match.group(1), match.group(2) or "", match.group(3)
        cls_ = index_class(engine, where)
        if kind not in cls_.kinds:
            kinds = sorted(k for k in cls_.kinds if k)
            raise ConfigError(
                f"{where}: index {raw!r}: engine {engine!r} has no kind {kind or '(none)'!r}"
                f"{did_you_mean(kind, kinds) or '.'} Kinds: {kinds}"
            )
        params: list[tuple[str, Any]] = []
        for part in (body or "").split(","):
            if not part.strip():
                continue
            name, eq, value = part.partition("=")
            name = name.strip()
            allowed = cls_.kinds[kind]
            if eq and name in cls_.renamed and cls_.renamed[name] in allowed:
                raise ConfigError(
                    f"{where}: index {raw!r}: {engine} now calls {name!r} "
                    f"{cls_.renamed[name]!r}: give {cls_.renamed[name]}={value.strip()}"
                )
            if not eq or name not in allowed:
                raise ConfigError(
                    f"{where}: index {raw!r}: {part.strip()!r} is not a parameter of "
                    f"{engine}:{kind}{did_you_mean(name, allowed) or '.'} "
                    f"Parameters: {sorted(allowed)} as name=value"
                )
            if name in dict(params):
                raise ConfigError(f"{where}: index {raw!r}: {name} is given twice")
            params.append((name, _value(value.strip(), raw, where)))
        return cls(engine, kind, tuple(params))


def _value(text: str, raw: str, where: str) -> Any:
    for convert in (int, float):
        try:
            return convert(text)
        except ValueError:
            pass
    if not text:
        raise ConfigError(f"{where}: index {raw!r}: a parameter has no value")
    return text


def parse_indexes(raw: Any, where: str) -> tuple[IndexSpec, ...]:
    """A list of index specs (marker ``indexes=`` or embedbench.yaml ``indexes:``), each
    spec at most once."""
    if raw is None:
        return ()
    items = [raw] if isinstance(raw, (str, IndexSpec)) else raw
    if not isinstance(items, Sequence) or isinstance(items, (bytes, bytearray)):
        raise ConfigError(f"{where}: expected a list of index specs, got {raw!r}")
    specs = [IndexSpec.parse(item, f"{where}[{i}]") for i, item in enumerate(items)]
    names = [s.spec for s in specs]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise ConfigError(f"{where}: index(es) {dupes} appear more than once")
    return tuple(specs)


# -- the engines ----------------------------------------------------------------------------


class VectorIndex(ABC):
    """An index over float32 vectors searched by inner product (cosine on unit vectors).

    ``kinds`` maps each kind (``""``: the engine named alone) to its parameter names."""

    name: ClassVar[str] = ""
    kinds: ClassVar[dict[str, frozenset[str]]] = {"": frozenset()}
    #: whether the same vectors, spec and seed give the same rankings
    deterministic: ClassVar[bool] = True
    #: an older name of a parameter -> its name in ``kinds`` (the error names the new one)
    renamed: ClassVar[dict[str, str]] = {}

    def __init__(self, spec: IndexSpec, *, seed: int = 0) -> None:
        self.spec = spec
        self.seed = int(seed)
        #: what the engine was asked to build (a FAISS factory string), for the report
        self.description = spec.spec
        #: how the engine was made deterministic, or why it is not
        self.note = ""

    @abstractmethod
    def build(self, vectors: np.ndarray, ids: Sequence[str]) -> None:
        """Index ``vectors`` (row i is document ``ids[i]``), added in that order."""

    @abstractmethod
    def search(self, queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """Positions into ``ids`` and scores, ``(n_queries, k)``, padded with -1 / -inf."""

    @property
    def nbytes(self) -> int | None:
        """Bytes the index takes (serialised or in memory); None when unknown."""
        return None


def register_index(cls: type[VectorIndex]) -> type[VectorIndex]:
    """Register an index engine under ``cls.name`` (usable as a decorator)."""
    if not cls.name or ":" in cls.name:
        raise ConfigError(f"index class {cls.__name__} needs a 'name' without ':'")
    INDEXES[cls.name] = cls
    return cls


def index_class(engine: str, where: str = "index") -> type[VectorIndex]:
    """The class of engine ``engine`` (entry points scanned when unknown)."""
    if engine not in INDEXES:
        for ep in metadata.entry_points(group=INDEX_ENTRY_POINT_GROUP):
            if ep.name == engine:
                loaded = ep.load()
                register_index(loaded)
    if engine not in INDEXES:
        raise ConfigError(
            f"{where}: unknown index engine {engine!r}{did_you_mean(engine, INDEXES) or '.'} "
            f"Engines: {sorted(INDEXES)} (or one registered in the {INDEX_ENTRY_POINT_GROUP!r} "
            "entry point group)"
        )
    return INDEXES[engine]


def create_index(spec: IndexSpec, *, seed: int = 0) -> VectorIndex:
    return index_class(spec.engine)(spec, seed=seed)


@register_index
class ExactVectorIndex(VectorIndex):
    """The project's exact search (:class:`~pytest_embedbench.index.ExactIndex`)."""

    name = "exact"

    def build(self, vectors: np.ndarray, ids: Sequence[str]) -> None:
        self._index = ExactIndex(vectors, ids)
        self.description = f"exact ({self._index.backend})"
        self.note = "exact search: deterministic"

    def search(self, queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        return self._index.search(queries, k)

    @property
    def nbytes(self) -> int | None:
        return self._index.nbytes


_HNSW = frozenset({"M", "efConstruction", "efSearch"})
_IVF = frozenset({"nlist", "nprobe"})


@register_index
class FaissIndex(VectorIndex):
    """faiss-cpu through ``faiss.index_factory`` with ``METRIC_INNER_PRODUCT``.

    Defaults are FAISS's own (M=32, efConstruction=40, efSearch=16, nprobe=1); ``nlist``
    defaults to 4 * sqrt(documents), ``m`` (PQ sub-quantisers) to 8, ``nbits`` to 8."""

    name = "faiss"
    kinds = {
        "": frozenset(),
        "flat": frozenset(),
        "hnsw": _HNSW,
        "ivf": _IVF,
        "ivfpq": _IVF | {"m", "nbits"},
    }

    def build(self, vectors: np.ndarray, ids: Sequence[str]) -> None:
        try:
            import faiss
        except ImportError:
            raise MissingExtraError(
                f"index {self.spec.spec!r} needs faiss-cpu: pip install 'pytest-embedbench[faiss]'"
            ) from None
        x = np.ascontiguousarray(vectors, dtype=np.float32)
        n, dim = x.shape
        kind, p = self.spec.kind or "flat", self.spec.param
        if kind == "flat":
            factory = "Flat"
        elif kind == "hnsw":
            factory = f"HNSW{int(p('M', 32))},Flat"
        else:
            nlist = int(p("nlist", max(1, round(4 * math.sqrt(n)))))
            if nlist > n:
                raise ConfigError(
                    f"index {self.spec.spec!r}: nlist={nlist} lists for {n} documents; k-means "
                    f"needs at least one document per list: give nlist <= {n}"
                )
            factory = f"IVF{nlist},Flat"
            if kind == "ivfpq":
                m, nbits = int(p("m", 8)), int(p("nbits", 8))
                if dim % m:
                    raise ConfigError(
                        f"index {self.spec.spec!r}: m={m} must divide the dimension {dim}"
                    )
                if n < 2**nbits:
                    raise ConfigError(
                        f"index {self.spec.spec!r}: nbits={nbits} trains {2**nbits} centroids "
                        f"per sub-quantiser on {n} documents; give nbits <= {int(math.log2(n))}"
                    )
                factory = f"IVF{nlist},PQ{m}x{nbits}"
        self.description = f"faiss.index_factory({dim}, {factory!r}, METRIC_INNER_PRODUCT)"
        threads = faiss.omp_get_max_threads()
        faiss.omp_set_num_threads(1)  # HNSW insertion under threads depends on their order
        try:
            index: Any = faiss.index_factory(dim, factory, faiss.METRIC_INNER_PRODUCT)
            if kind == "hnsw":
                index.hnsw.efConstruction = int(p("efConstruction", 40))
                index.hnsw.efSearch = int(p("efSearch", 16))
            if kind in ("ivf", "ivfpq"):
                ivf: Any = faiss.downcast_index(faiss.extract_index_ivf(index))
                ivf.cp.seed = self.seed
                ivf.nprobe = int(p("nprobe", 1))
                if kind == "ivfpq":
                    ivf.pq.cp.seed = self.seed
            if not index.is_trained:
                index.train(x)
            index.add(x)
        finally:
            faiss.omp_set_num_threads(threads)
        self._index = index
        self.note = (
            f"built on one thread, vectors added in corpus order, k-means seed {self.seed}: "
            "deterministic"
        )

    def search(self, queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        q = np.ascontiguousarray(np.atleast_2d(queries), dtype=np.float32)
        scores, labels = self._index.search(q, k)
        labels = labels.astype(np.int64)
        out = np.where(labels >= 0, scores.astype(np.float64), -np.inf)
        return labels, out

    @property
    def nbytes(self) -> int | None:
        import faiss

        return int(faiss.serialize_index(self._index).size)


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

    def __init__(self, spec: IndexSpec, *, seed: int = 0) -> None:
        super().__init__(spec, seed=seed)
        self.deterministic = not spec.kind  # type: ignore[misc]

    def build(self, vectors: np.ndarray, ids: Sequence[str]) -> None:
        import tempfile
        import weakref

        try:
            import lancedb
            import pyarrow as pa
        except ImportError:
            raise MissingExtraError(
                f"index {self.spec.spec!r} needs LanceDB: pip install 'pytest-embedbench[lancedb]'"
            ) from None
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
        positions = np.full((len(q), k), -1, dtype=np.int64)
        scores = np.full((len(q), k), -np.inf, dtype=np.float64)
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
        from pathlib import Path

        return sum(f.stat().st_size for f in Path(self._folder.name).rglob("*") if f.is_file())


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
    deterministic = False

    def build(self, vectors: np.ndarray, ids: Sequence[str]) -> None:
        import tempfile
        import weakref

        try:
            import chromadb
            from chromadb.config import Settings
        except ImportError:
            raise MissingExtraError(
                f"index {self.spec.spec!r} needs Chroma: pip install 'pytest-embedbench[chroma]'"
            ) from None
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
        positions = np.full((len(q), k), -1, dtype=np.int64)
        scores = np.full((len(q), k), -np.inf, dtype=np.float64)
        depth = min(k, len(self._ids))
        if depth == 0 or len(q) == 0:
            return positions, scores
        found = self._collection.query(query_embeddings=q, n_results=depth, include=["distances"])
        for row, (labels, distances) in enumerate(
            zip(found["ids"], found["distances"], strict=True)
        ):
            # Chroma's ip distance is 1 - q.v; ties ordered by the project's rule, id descending
            pairs = zip(labels, distances, strict=True)
            hits = sorted(
                ((1.0 - float(d), self._ids[int(p)], int(p)) for p, d in pairs), reverse=True
            )
            for col, (score, _, pos) in enumerate(hits[:k]):
                positions[row, col], scores[row, col] = pos, score
        return positions, scores

    @property
    def nbytes(self) -> int | None:
        from pathlib import Path

        return sum(f.stat().st_size for f in Path(self._folder.name).rglob("*") if f.is_file())


def _close_chroma(client: Any, folder: Any) -> None:
    """Stop the Chroma client's system (its files closed), then remove its folder."""
    try:
        client.close()
    finally:
        folder.cleanup()


# -- a run through an index -----------------------------------------------------------------


class IndexedRetriever(Retriever):
    """A dense retriever's queries answered through another index over the same vectors.

    The exact retriever (``inner``) gives the vectors and the query cache; what the run
    searched is kept for :func:`measure_index`."""

    def __init__(self, inner: DenseRetriever, spec: IndexSpec, *, seed: int = 0) -> None:
        # an ExactIndex, or a ShardedIndex under a memory budget: its vectors are read back
        # shard by shard into one matrix, which the approximate index holds anyway
        exact = inner.index
        self.inner = inner
        self.spec = spec
        self.ids = inner.ids
        self.index = create_index(spec, seed=seed)
        t0 = time.perf_counter()
        self.index.build(exact.vectors_in_order(), exact.ids)
        self.build_s = time.perf_counter() - t0
        #: the last :meth:`search_many`'s query vectors and the index's positions for them
        self.query_vectors: np.ndarray | None = None
        self.positions: np.ndarray | None = None
        #: query text -> its vector as :meth:`encode` gave it (a chunked run searches query by
        #: query; its figures are measured on these same vectors)
        self.encoded: dict[str, np.ndarray] = {}

    def encode(self, text: str) -> Any:
        t0 = time.perf_counter()
        vector = self.inner.provider.embed([text], kind="query")
        self.query_embedding_s += time.perf_counter() - t0
        self.encoded[text] = vector
        return vector

    def search(self, text: str, k: int) -> tuple[list[str], list[float]]:
        return self.search_encoded(self.encode(text), k)

    def search_encoded(self, query: Any, k: int) -> tuple[list[str], list[float]]:
        t0 = time.perf_counter()
        positions, scores = self.index.search(query, k)
        self.search_s += time.perf_counter() - t0
        keep = positions[0] >= 0
        return [self.ids[p] for p in positions[0][keep]], scores[0][keep].astype(float).tolist()

    def search_many(
        self, texts: Sequence[str], k: int
    ) -> tuple[list[list[str]], list[list[float]]]:
        from ..dense import embed_cached

        if not texts:
            return [], []
        t0 = time.perf_counter()
        vectors, embedded = embed_cached(
            self.inner.provider, list(texts), self.inner.cache, kind="query"
        )
        self.query_cache_hits += len(texts) - embedded
        self.query_cache_misses += embedded
        t1 = time.perf_counter()
        positions, scores = self.index.search(vectors, k)
        self.search_s += time.perf_counter() - t1
        self.query_embedding_s += t1 - t0
        self.query_vectors, self.positions = vectors, positions
        rankings, out = [], []
        for row, row_scores in zip(positions, scores, strict=True):
            keep = row >= 0
            rankings.append([self.ids[p] for p in row[keep]])
            out.append(row_scores[keep].astype(float).tolist())
        return rankings, out

    def index_bytes(self) -> int | None:
        return self.index.nbytes


def neighbour_recall(found: np.ndarray, exact: np.ndarray, k: int) -> np.ndarray:
    """Per query, the share of the exact top ``k`` that ``found``'s top ``k`` holds (the
    ann-benchmarks measure; rows of positions, -1 padded; a row with no exact neighbour is
    1.0)."""
    out = np.empty(len(found), dtype=np.float64)
    for i, (row, truth) in enumerate(zip(found, exact, strict=True)):
        want = {int(p) for p in truth[:k] if p >= 0}
        got = {int(p) for p in row[:k] if p >= 0}
        out[i] = len(want & got) / len(want) if want else 1.0
    return out


@dataclass
class IndexRun:
    """What one index did on one run: its spec and engine, build time, size, the index's own
    query latency, and per query its neighbour recall at each cut-off; ``exact`` holds the
    exact rankings of the same query vectors, ``(ids, scores)`` per query."""

    spec: IndexSpec
    description: str
    note: str
    deterministic: bool
    build_s: float
    nbytes: int | None
    #: the index's own search time of each query vector, alone, in milliseconds
    latency_ms: np.ndarray
    #: cut-off -> per-query neighbour recall, in the searched queries' order
    neighbours: dict[int, np.ndarray]
    query_ids: tuple[str, ...]
    exact_rankings: list[list[str]] = field(default_factory=list, repr=False)
    exact_scores: list[list[float]] = field(default_factory=list, repr=False)

    @property
    def p50_ms(self) -> float:
        return float(np.percentile(self.latency_ms, 50)) if len(self.latency_ms) else math.nan

    @property
    def p95_ms(self) -> float:
        return float(np.percentile(self.latency_ms, 95)) if len(self.latency_ms) else math.nan

    @property
    def qps(self) -> float:
        """Queries per second, one at a time: one over the mean single-query time."""
        total = float(np.sum(self.latency_ms))
        return len(self.latency_ms) / (total / 1000.0) if total > 0 else math.nan


def measure_index(
    retriever: IndexedRetriever, query_ids: Sequence[str], ks: Sequence[int]
) -> IndexRun:
    """The figures of ``retriever``'s last :meth:`~IndexedRetriever.search_many`: the exact
    top ``max(ks)`` of the same query vectors, neighbour recall at each cut-off, and each query
    vector searched alone through the index (one untimed warm-up first)."""
    depth = max(ks)
    vectors = retriever.query_vectors
    if vectors is None or retriever.positions is None:
        vectors = np.empty((0, 0), dtype=np.float32)
        found = exact = np.empty((0, depth), dtype=np.int64)
        exact_s = np.empty((0, depth))
    else:
        found = retriever.positions
        exact, exact_s = retriever.inner.index.search(vectors, depth)
    latency = np.empty(len(vectors))
    if len(vectors):
        retriever.index.search(vectors[:1], depth)  # warm-up
    for i in range(len(vectors)):
        t0 = time.perf_counter()
        retriever.index.search(vectors[i : i + 1], depth)
        latency[i] = (time.perf_counter() - t0) * 1000.0
    ids = retriever.ids
    rankings, scores = [], []
    for row, row_s in zip(exact, exact_s, strict=True):
        keep = row >= 0
        rankings.append([ids[p] for p in row[keep]])
        scores.append(row_s[keep].astype(float).tolist())
    engine = retriever.index
    return IndexRun(
        spec=retriever.spec,
        description=engine.description,
        note=engine.note,
        deterministic=engine.deterministic,
        build_s=retriever.build_s,
        nbytes=engine.nbytes,
        latency_ms=latency,
        neighbours={k: neighbour_recall(found, exact, k) for k in ks},
        query_ids=tuple(query_ids),
        exact_rankings=rankings,
        exact_scores=scores,
    )

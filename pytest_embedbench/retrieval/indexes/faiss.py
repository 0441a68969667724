"""The engine ``faiss``: faiss-cpu's indexes through ``faiss.index_factory`` (extra ``faiss``).

Kinds and their parameters, FAISS's own names and defaults::

    faiss / faiss:flat                 "Flat": exact, by FAISS alone
    faiss:hnsw(M, efConstruction, efSearch)
    faiss:ivf(nlist, nprobe)
    faiss:ivfpq(nlist, nprobe, m, nbits)

With a precision (``faiss:hnsw(M=16)+int8``, :mod:`.precision`) the same kinds store codes:
``float16`` as ``SQfp16``, ``int8`` as ``SQ8_direct_signed`` (sentence-transformers' int8
values, searched by inner product), ``binary`` in FAISS's binary indexes (``BFlat``,
``BHNSW<M>``, ``BIVF<nlist>``, Hamming distance); ``ivfpq`` compresses by itself and takes none.

Determinism: FAISS builds single-threaded (HNSW insertion is order dependent under threads)
with the run's seed for k-means (``ClusteringParameters.seed``) and vectors added in corpus
order, so the same inputs give the same index and the same rankings. This module's name is the
library's: ``import faiss`` here is an absolute import and gets faiss-cpu.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from ...core.exceptions import ConfigError
from .registry import VectorIndex, missing_extra, register_index

__all__ = ["FaissIndex"]

_HNSW = frozenset({"M", "efConstruction", "efSearch"})
_IVF = frozenset({"nlist", "nprobe"})


@register_index
class FaissIndex(VectorIndex):
    """faiss-cpu through ``faiss.index_factory`` with ``METRIC_INNER_PRODUCT``.

    Defaults are FAISS's own (M=32, efConstruction=40, efSearch=16, nprobe=1); ``nlist``
    defaults to 4 * sqrt(documents), ``m`` (PQ sub-quantisers) to 8, ``nbits`` to 8."""

    name = "faiss"
    precisions = frozenset({"float16", "int8", "binary"})
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
            raise missing_extra(self.spec, "faiss-cpu", "faiss") from None
        kind, p = self.spec.kind or "flat", self.spec.param
        precision = self.codec.precision if self.codec is not None else ""
        if precision and kind == "ivfpq":
            raise ConfigError(
                f"index {self.spec.spec!r}: ivfpq compresses the vectors itself (PQ codes); "
                "give a precision with faiss:flat, faiss:hnsw or faiss:ivf"
            )
        if precision == "binary":
            codes = np.ascontiguousarray(vectors, dtype=np.uint8)
            bits = codes.shape[1] * 8
            kinds = {"flat": "BFlat", "hnsw": f"BHNSW{int(p('M', 32))}"}
            factory = kinds.get(kind) or f"BIVF{self._nlist(len(codes))}"
            self.description = f"faiss.index_binary_factory({bits}, {factory!r})"
            self._binary = True
            self._fill(faiss, lambda: faiss.index_binary_factory(bits, factory), codes)
            return
        x = np.ascontiguousarray(vectors, dtype=np.float32)
        n, dim = x.shape
        if kind == "flat":
            factory = "Flat"
        elif kind == "hnsw":
            factory = f"HNSW{int(p('M', 32))},Flat"
        else:
            factory = f"IVF{self._nlist(n)},Flat"
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
                factory = factory.removesuffix("Flat") + f"PQ{m}x{nbits}"
        if precision:
            stored = {"float16": "SQfp16", "int8": "SQ8_direct_signed"}[precision]
            factory = factory.removesuffix("Flat") + stored
        self.description = f"faiss.index_factory({dim}, {factory!r}, METRIC_INNER_PRODUCT)"
        self._fill(faiss, lambda: faiss.index_factory(dim, factory, faiss.METRIC_INNER_PRODUCT), x)

    def _nlist(self, n: int) -> int:
        """The spec's ``nlist`` (4 x sqrt(n) by default), at most one list per document."""
        nlist = int(self.spec.param("nlist", max(1, round(4 * math.sqrt(n)))))
        if nlist > n:
            raise ConfigError(
                f"index {self.spec.spec!r}: nlist={nlist} lists for {n} documents; k-means "
                f"needs at least one document per list: give nlist <= {n}"
            )
        return nlist

    def _fill(self, faiss: Any, make: Any, data: np.ndarray) -> None:
        """The index ``make()`` gives (a float or a binary one), set as the spec says, trained
        and filled with ``data`` on one thread."""
        kind, p = self.spec.kind or "flat", self.spec.param
        threads = faiss.omp_get_max_threads()
        faiss.omp_set_num_threads(1)  # HNSW insertion under threads depends on their order
        try:
            index: Any = make()
            if kind == "hnsw":
                index.hnsw.efConstruction = int(p("efConstruction", 40))
                index.hnsw.efSearch = int(p("efSearch", 16))
            if kind in ("ivf", "ivfpq"):
                binary = getattr(self, "_binary", False)
                ivf: Any = index if binary else faiss.downcast_index(faiss.extract_index_ivf(index))
                ivf.cp.seed = self.seed
                ivf.nprobe = int(p("nprobe", 1))
                if kind == "ivfpq":
                    ivf.pq.cp.seed = self.seed
            if not index.is_trained:
                index.train(data)
            index.add(data)
        finally:
            faiss.omp_set_num_threads(threads)
        self._index = index
        self.note = (
            f"built on one thread, vectors added in corpus order, k-means seed {self.seed}: "
            "deterministic"
        )

    def search(self, queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        if getattr(self, "_binary", False):
            q = np.ascontiguousarray(np.atleast_2d(queries), dtype=np.uint8)
            hamming, labels = self._index.search(q, k)
            labels = labels.astype(np.int64)
            # bits - 2 x Hamming: the dot product of the +-1 vectors (see .precision)
            score = self.codec.dim - 2.0 * hamming.astype(np.float64)
            return labels, np.where(labels >= 0, score, -np.inf)
        q = np.ascontiguousarray(np.atleast_2d(queries), dtype=np.float32)
        scores, labels = self._index.search(q, k)
        labels = labels.astype(np.int64)
        out = np.where(labels >= 0, scores.astype(np.float64), -np.inf)
        return labels, out

    @property
    def nbytes(self) -> int | None:
        import faiss

        if getattr(self, "_binary", False):
            return int(faiss.serialize_index_binary(self._index).size)
        return int(faiss.serialize_index(self._index).size)

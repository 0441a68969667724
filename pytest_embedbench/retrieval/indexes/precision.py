"""Vector width and precision as parts of an index spec (issue 45): what a store's bytes and
quality come to when its vectors are truncated (Matryoshka) or quantised, measured like any
index against the float32 exact search of the same model::

    exact+dim=256                      # the first 256 dimensions, renormalised
    exact+float16                      # half-precision vectors
    exact+int8                         # int8, ranges from a seeded sample of the corpus
    exact+int8(calibration=500,rescore=4)
    faiss:hnsw(M=16)+binary(rescore=4) # 1 bit a dimension, the top 4 x k rescored in float
    faiss:hnsw(M=16)+dim=256+binary    # both: truncated first, then quantised

Width works with every engine (the engine is given the truncated vectors). Precision needs an
engine that stores the codes itself (``VectorIndex.precisions``): ``exact`` searches them in
NumPy, ``faiss`` with its own structures (``SQfp16``, ``SQ8_direct_signed``, the binary
indexes), ``pgvector`` as ``halfvec`` and ``bit``, ``qdrant:hnsw`` with Qdrant's own
quantisation (``VectorIndex.quantises``: given the float32 vectors, it codes and rescores them
itself); another engine's spec with a precision is an error that says why
(``VectorIndex.precision_refusals``: Qdrant's local mode would ignore it) and names the ones
that can, and so is a parameter an engine's own quantisation has no setting for.

Quantisation is sentence-transformers' ``quantize_embeddings``: ``int8`` maps each dimension's
range in a calibration sample (``calibration`` documents drawn with the run's seed, 1,000 or the
whole corpus when smaller) onto 256 steps, queries with the same ranges, scored by the int8 dot
product; ``binary`` keeps the sign bit (packed, ``ubinary``), scored by ``bits - 2 x Hamming``
(the dot product of the +-1 vectors). ``rescore=R`` searches the top ``R x k`` and scores them
again with the float32 query against the stored codes (dequantised int8, or the 0/1 bits as
sentence-transformers' ``semantic_search_faiss`` does), so no float copy of the corpus is kept.

Truncation never touches the embedding cache: the cache keeps the model's full vectors, and the
index truncates its copy, so vectors of two widths are never mixed. For an ``hf:`` model the
truncated vectors equal sentence-transformers' ``truncate_dim`` output, renormalised.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...core.exceptions import ConfigError, MissingExtraError, did_you_mean
from ..exact import storage_order, topk_desc
from .registry import INDEXES, EngineSpec, VectorIndex, create_index, index_class

__all__ = [
    "DEFAULT_CALIBRATION",
    "PRECISIONS",
    "Codec",
    "QuantizedSearch",
    "SizedIndex",
    "Sizing",
    "open_index",
    "parse_sizing",
    "truncated",
]

#: precision -> its parameters (float32, the default, is named by giving none)
PRECISIONS: dict[str, frozenset[str]] = {
    "float16": frozenset(),
    "int8": frozenset({"calibration", "rescore"}),
    "binary": frozenset({"rescore"}),
}
#: documents in the int8 calibration sample unless ``calibration`` says (or fewer documents)
DEFAULT_CALIBRATION = 1000
#: the bytes one dimension takes at each precision
_BYTES = {"": 4.0, "float16": 2.0, "int8": 1.0, "binary": 1 / 8}
_POPCOUNT = np.array([bin(i).count("1") for i in range(256)], dtype=np.int32)


@dataclass(frozen=True)
class Sizing:
    """The width and precision parts of an index spec (``+dim=256``, ``+int8(rescore=4)``);
    the default is the model's full float32 vectors."""

    dim: int | None = None
    precision: str = ""
    params: tuple[tuple[str, int], ...] = ()

    @property
    def text(self) -> str:
        """The parts as the canonical spec shows them: ``+dim=256+binary(rescore=4)``."""
        out = f"+dim={self.dim}" if self.dim is not None else ""
        if self.precision:
            out += f"+{self.precision}"
            if self.params:
                out += "(" + ",".join(f"{k}={v}" for k, v in self.params) + ")"
        return out

    def param(self, name: str, default: int | None = None) -> int | None:
        return dict(self.params).get(name, default)

    def __bool__(self) -> bool:
        return self.dim is not None or bool(self.precision)


def _number(text: str, name: str, raw: str, where: str) -> int:
    try:
        number = int(text)
    except ValueError:
        number = 0
    if number < 1:
        raise ConfigError(f"{where}: index {raw!r}: {name}={text!r} must be a whole number >= 1")
    return number


def parse_sizing(parts: Sequence[str], engine: str, raw: str, where: str, kind: str = "") -> Sizing:
    """The ``+`` parts after an engine's spec (of kind ``kind``): ``dim=N`` at most once, one
    precision at most (with its parameters); a precision the engine does not store is a
    ConfigError saying why (the engine's ``precision_refusals``) and naming the engines that
    do."""
    dim: int | None = None
    precision = ""
    params: tuple[tuple[str, int], ...] = ()
    known = ["dim=N", *sorted(PRECISIONS)]
    for part in (p.strip() for p in parts):
        if part.startswith("dim="):
            if dim is not None:
                raise ConfigError(f"{where}: index {raw!r}: dim is given twice")
            dim = _number(part[4:].strip(), "dim", raw, where)
            continue
        name, _, body = part.partition("(")
        name = name.strip()
        if name not in PRECISIONS or (body and not body.endswith(")")):
            raise ConfigError(
                f"{where}: index {raw!r}: {'+' + part!r} is not a width or precision"
                f"{did_you_mean(name, PRECISIONS) or '.'} Give one of {known}, e.g. "
                "'exact+int8' or 'faiss:hnsw(M=16)+binary(rescore=4)'"
            )
        if precision:
            raise ConfigError(
                f"{where}: index {raw!r}: one precision at most, got {precision!r} and {name!r}"
            )
        precision, params = name, _params(name, body[:-1], raw, where)
    if precision:
        cls = index_class(engine, where)
        refusals = cls.precision_refusals
        why = refusals.get(f"{kind}+{precision}") or refusals.get(precision, "")
        if precision not in cls.precisions or f"{kind}+{precision}" in refusals:
            able = sorted(n for n, c in INDEXES.items() if precision in c.precisions)
            raise ConfigError(
                f"{where}: index {raw!r}: engine {engine!r} "
                + (f"cannot store {precision}: {why}" if why else "stores float32 vectors only")
                + f"; {precision} is measured with the engines {able}, e.g. 'exact+{precision}'"
            )
        for name, _ in params:  # a parameter the engine's own quantisation has no setting for
            why = refusals.get(f"{kind}+{precision}({name})") or refusals.get(
                f"{precision}({name})", ""
            )
            if why:
                raise ConfigError(
                    f"{where}: index {raw!r}: engine {engine!r} takes no {name} for "
                    f"{precision}: {why}; leave it out, or measure it with 'exact+{precision}"
                    f"({name}=...)'"
                )
    return Sizing(dim, precision, params)


def _params(precision: str, body: str, raw: str, where: str) -> tuple[tuple[str, int], ...]:
    allowed = PRECISIONS[precision]
    out: dict[str, int] = {}
    for item in (p for p in body.split(",") if p.strip()):
        name, eq, value = (s.strip() for s in item.partition("="))
        if not eq or name not in allowed:
            raise ConfigError(
                f"{where}: index {raw!r}: {item.strip()!r} is not a parameter of {precision}"
                f"{did_you_mean(name, allowed) or '.'} Parameters: {sorted(allowed)} as "
                "name=value"
            )
        if name in out:
            raise ConfigError(f"{where}: index {raw!r}: {name} is given twice")
        out[name] = _number(value, name, raw, where)
    return tuple(sorted(out.items()))


def truncated(vectors: np.ndarray, dim: int, spec: str) -> np.ndarray:
    """The first ``dim`` values of each row, renormalised to unit length (a zero row stays
    zero): Matryoshka truncation. ``dim`` above the vectors' width is a ConfigError."""
    x = np.asarray(vectors, dtype=np.float32)
    if x.ndim == 1:
        x = x[None, :]
    if dim > x.shape[1]:
        raise ConfigError(
            f"index {spec!r}: dim={dim} is above the model's {x.shape[1]} dimensions; give "
            f"dim <= {x.shape[1]}"
        )
    cut = np.ascontiguousarray(x[:, :dim])
    norms = np.linalg.norm(cut, axis=1, keepdims=True)
    return np.divide(cut, norms, out=np.zeros_like(cut), where=norms > 0)


def _quantize() -> Any:
    try:
        from sentence_transformers import quantize_embeddings
    except ImportError:
        raise MissingExtraError(
            "int8 and binary index specs quantise with sentence-transformers: pip install "
            "'pytest-embedbench[st]'"
        ) from None
    return quantize_embeddings


@dataclass(frozen=True)
class Codec:
    """One precision's codes of float32 vectors: ``float16`` rows, ``int8`` rows with the
    calibration ``ranges`` (2, dim), or packed sign bits (``uint8``, dim/8 a row)."""

    precision: str
    dim: int
    ranges: np.ndarray | None = None
    #: documents the int8 ranges were taken from
    calibrated_on: int = 0

    @classmethod
    def fit(
        cls, precision: str, vectors: np.ndarray, *, calibration: int | None, seed: int, spec: str
    ) -> Codec:
        """The codec of ``precision`` for the corpus ``vectors``: int8 ranges from
        ``calibration`` rows drawn with ``seed`` (``DEFAULT_CALIBRATION`` or all rows when
        fewer); a sample larger than the corpus is a ConfigError."""
        n, dim = vectors.shape
        if precision != "int8":
            return cls(precision, dim)
        if calibration is not None and calibration > n:
            raise ConfigError(
                f"index {spec!r}: calibration={calibration} documents for a corpus of {n}; "
                f"give calibration <= {n}"
            )
        size = calibration if calibration is not None else min(DEFAULT_CALIBRATION, n)
        if size == 0:  # an empty corpus: nothing to calibrate on, nothing to quantise
            return cls(precision, dim, np.zeros((2, dim), dtype=np.float32), 0)
        rows = np.sort(np.random.default_rng(seed).choice(n, size=size, replace=False))
        sample = vectors[rows]
        ranges = np.stack([sample.min(axis=0), sample.max(axis=0)]).astype(np.float32)
        return cls(precision, dim, ranges, size)

    @property
    def bytes_per_vector(self) -> float:
        return self.dim * _BYTES[self.precision]

    def encode(self, vectors: np.ndarray) -> np.ndarray:
        """The codes of float32 ``vectors`` (documents and queries alike)."""
        x = np.ascontiguousarray(vectors, dtype=np.float32)
        if self.precision == "float16":
            return x.astype(np.float16)
        if self.precision == "int8":
            return np.asarray(_quantize()(x, "int8", ranges=self.ranges), dtype=np.int8)
        return np.asarray(_quantize()(x, "ubinary"), dtype=np.uint8)

    def query(self, vectors: np.ndarray) -> np.ndarray:
        """What the index is searched with: float16 keeps the float32 query (only the stored
        vectors are halved); int8 and binary quantise it as the documents."""
        if self.precision == "float16":
            return np.ascontiguousarray(vectors, dtype=np.float32)
        return self.encode(vectors)

    def decode(self, codes: np.ndarray) -> np.ndarray:
        """Stored codes as float rows for rescoring: int8 dequantised with the ranges (as
        sentence-transformers' rescoring does), bits as 0/1."""
        if self.precision == "binary":
            return np.unpackbits(codes, axis=-1)[..., : self.dim].astype(np.float32)
        if self.precision == "int8":
            assert self.ranges is not None
            steps = (self.ranges[1] - self.ranges[0]) / 255
            steps = np.where(steps == 0, 1, steps)
            return ((codes.astype(np.float64) + 128) * steps + self.ranges[0]).astype(np.float32)
        return codes.astype(np.float32)

    def scores(self, queries: np.ndarray, codes: np.ndarray) -> np.ndarray:
        """Query codes against stored codes, float64 ``(queries, rows)``: the inner product
        (float16, int8: exact in float64) or ``bits - 2 x Hamming`` (binary)."""
        if self.precision == "binary":
            out = np.empty((len(queries), len(codes)), dtype=np.float64)
            for i, q in enumerate(queries):
                out[i] = self.dim - 2 * _POPCOUNT[np.bitwise_xor(codes, q)].sum(axis=1)
            return out
        return queries.astype(np.float64) @ codes.astype(np.float64).T

    def describe(self) -> str:
        if self.precision == "int8":
            return (
                f"int8 (sentence-transformers quantize_embeddings, ranges from "
                f"{self.calibrated_on} documents drawn with the seed)"
            )
        if self.precision == "binary":
            return "binary (sentence-transformers quantize_embeddings 'ubinary', Hamming)"
        return "float16"


class QuantizedSearch:
    """Exact search over codes in NumPy (the ``exact`` engine given a precision): every
    stored row scored, top k by score then document id descending, as exact search ranks."""

    def __init__(self, codec: Codec, codes: np.ndarray, ids: Sequence[str]) -> None:
        self.codec = codec
        self._stored_to_given = storage_order(ids)
        self._codes = np.ascontiguousarray(codes[self._stored_to_given])

    @property
    def nbytes(self) -> int:
        return int(self._codes.nbytes)

    def search(self, queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        n_q, n = len(queries), len(self._codes)
        positions = np.full((n_q, k), -1, dtype=np.int64)
        scores = np.full((n_q, k), -np.inf, dtype=np.float64)
        if n == 0 or n_q == 0:
            return positions, scores
        block = max(1, min(n_q, (1 << 24) // n))  # a score block of at most 128 MiB
        for lo in range(0, n_q, block):
            cols, vals = topk_desc(self.codec.scores(queries[lo : lo + block], self._codes), k)
            positions[lo : lo + len(cols), : cols.shape[1]] = self._stored_to_given[cols]
            scores[lo : lo + len(cols), : cols.shape[1]] = vals
        return positions, scores


class SizedIndex(VectorIndex):
    """An engine given truncated and/or quantised vectors: the corpus truncated to ``dim``
    (renormalised), coded at the precision (the codec fitted on the corpus with the run's
    seed) and handed to the engine, each query truncated and coded the same way, and with
    ``rescore`` the engine's top ``rescore x k`` scored again in float32. An engine that
    quantises by itself (``VectorIndex.quantises``: ``qdrant:hnsw``) is given the float32
    vectors at the width and does its own coding and rescoring."""

    def __init__(self, spec: EngineSpec, inner: VectorIndex, sizing: Sizing) -> None:
        super().__init__(spec, seed=inner.seed)
        self.inner = inner
        self.sizing = sizing
        self.codec: Codec | None = None
        self._codes: np.ndarray | None = None
        self._rank: np.ndarray | None = None
        self.deterministic = inner.deterministic  # type: ignore[misc]
        self.documents = 0
        self._done = ""
        self._built = False
        #: the engine quantises the float32 vectors itself (``VectorIndex.quantises``)
        self.engine_quantises = sizing.precision in inner.quantises
        if sizing.precision in ("int8", "binary") and not self.engine_quantises:
            _quantize()  # its import (torch) now: the build time is the index's, not an import's

    def build(self, vectors: np.ndarray, ids: Sequence[str]) -> None:
        x = np.asarray(vectors, dtype=np.float32)
        if self.sizing.dim is not None:
            x = truncated(x, self.sizing.dim, self.spec.spec)
        self.documents = len(x)
        done = [f"the first {self.sizing.dim} dimensions, renormalised"] if self.sizing.dim else []
        if self.sizing.precision and not self.engine_quantises:
            self.codec = Codec.fit(
                self.sizing.precision,
                x,
                calibration=self.sizing.param("calibration"),
                seed=self.seed,
                spec=self.spec.spec,
            )
            self._codes = self.codec.encode(x)
            done.append(self.codec.describe())
            if self.sizing.param("rescore"):
                done.append(f"the top {self.sizing.param('rescore')} x k rescored in float32")
                given_to_stored = np.empty(len(ids), dtype=np.int64)
                given_to_stored[storage_order(ids)] = np.arange(len(ids))
                self._rank = given_to_stored
            self.inner.codec = self.codec
            self.inner.build(self._codes, ids)
        else:  # float32, or the engine's own quantisation (its description says it)
            self.inner.build(x, ids)
        self._done = "; " + "; ".join(done) if done else ""
        self._built = True

    # the engine's own description and note, read when shown: an engine adds to them as it
    # searches (pgvector's query plan, its fall back to a sequential scan)
    @property
    def description(self) -> str:
        return self.inner.description + self._done if self._built else self.spec.spec

    @description.setter
    def description(self, value: str) -> None:  # VectorIndex.__init__ sets the spec's text
        pass

    @property
    def note(self) -> str:
        return self.inner.note

    @note.setter
    def note(self, value: str) -> None:
        pass

    def search(self, queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        q = np.atleast_2d(np.asarray(queries, dtype=np.float32))
        if self.sizing.dim is not None:
            q = truncated(q, self.sizing.dim, self.spec.spec)
        if self.codec is None:
            return self.inner.search(q, k)
        rescore = self.sizing.param("rescore")
        depth = k * rescore if rescore else k
        positions, scores = self.inner.search(self.codec.query(q), depth)
        if not rescore or not self.documents:  # an empty corpus has nothing to rescore
            return positions[:, :k], scores[:, :k]
        return self._rescored(q, positions, k)

    def _rescored(
        self, q: np.ndarray, positions: np.ndarray, k: int
    ) -> tuple[np.ndarray, np.ndarray]:
        """The candidates scored with the float32 query against their decoded codes, top k by
        score then document id descending."""
        assert self.codec is not None and self._codes is not None and self._rank is not None
        found = np.where(positions >= 0, positions, 0)
        rows = self.codec.decode(self._codes[found])  # (queries, depth, dim)
        scores = np.einsum("ij,ikj->ik", q.astype(np.float64), rows.astype(np.float64))
        scores[positions < 0] = -np.inf
        rank = np.where(positions >= 0, self._rank[found], np.iinfo(np.int64).max)
        order = np.lexsort((rank, -scores), axis=-1)[:, :k]
        out_p = np.take_along_axis(positions, order, axis=1)
        out_s = np.take_along_axis(scores, order, axis=1)
        pad = k - out_p.shape[1]
        if pad > 0:
            out_p = np.pad(out_p, ((0, 0), (0, pad)), constant_values=-1)
            out_s = np.pad(out_s, ((0, 0), (0, pad)), constant_values=-np.inf)
        return out_p, out_s

    @property
    def nbytes(self) -> int | None:
        return self.inner.nbytes

    @property
    def bytes_per_document(self) -> float | None:
        """The index's bytes over its documents (None when the engine does not tell)."""
        nbytes = self.nbytes
        return None if nbytes is None or not self.documents else nbytes / self.documents


def open_index(spec: Any, *, seed: int = 0) -> VectorIndex:
    """An unbuilt index of ``spec`` (an :class:`~.spec.IndexSpec`): its engine, inside a
    :class:`SizedIndex` when the spec names a width or a precision."""
    engine = create_index(spec, seed=seed)
    sizing = getattr(spec, "sizing", None)
    if not sizing:
        return engine
    if sizing.precision and sizing.precision not in engine.precisions:  # a spec made in code
        raise ConfigError(f"index {spec.spec!r}: engine {spec.engine!r} stores float32 only")
    return SizedIndex(spec, engine, sizing)

"""BM25 through bm25s, and rank fusion (reciprocal rank fusion, weighted).

BM25 scores every document for a query (bm25s ``get_scores``) and ranks them with the project's
tie rule (score descending, then document id descending), so a tie never depends on bm25s's
internal order.

RRF gives a document ``sum_i w_i / (k + rank_i)`` over the rankings it appears in (rank from 1,
k = 60 by default; Cormack, Clarke and Büttcher 2009). Fused ties follow the same tie rule.

Usage::

    index = BM25Index(["the cat sat", "a dog ran"], ["d1", "d2"])
    ids, scores = index.search("cat", k=10)
    fused = reciprocal_rank_fusion([dense_ids, bm25_ids], k=60, weights=(1.0, 1.0))
"""

from __future__ import annotations

import functools
import gc
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from itertools import chain
from typing import Any

import numpy as np

from .exceptions import ConfigError, MissingExtraError
from .index import topk_desc

__all__ = ["BM25Index", "reciprocal_rank_fusion"]

#: bm25s's scoring variants
BM25_METHODS = ("lucene", "robertson", "atire", "bm25l", "bm25+")


def require_bm25s() -> Any:
    """The bm25s module, or a MissingExtraError that names the pip command."""
    try:
        import bm25s
    except ImportError:
        raise MissingExtraError(
            "provider 'bm25' needs the bm25s package: pip install 'pytest-embedbench[bm25]'"
        ) from None
    return bm25s


def make_stemmer(language: str | None) -> Any:
    """A PyStemmer stemmer for ``language`` (None: no stemming)."""
    if not language:
        return None
    try:
        import Stemmer
    except ImportError:
        raise MissingExtraError(
            f"bm25 stemmer={language!r} needs PyStemmer: pip install 'pytest-embedbench[bm25]' "
            "(or pass stemmer=None)"
        ) from None
    try:
        return Stemmer.Stemmer(language)
    except KeyError:
        raise ConfigError(
            f"bm25 stemmer {language!r} is not known to PyStemmer; known: "
            f"{sorted(Stemmer.algorithms())}"
        ) from None


@contextmanager
def _no_cyclic_gc() -> Iterator[None]:
    """Python's cyclic garbage collector off for a block, restored after.

    Tokenising a corpus creates a list of token ids per document, all of which survive, so the
    collector runs full passes over a heap that grows with the corpus (14 passes, 3.5 s of 30 s
    at 1M documents); bm25s makes no reference cycles, and whatever cycle the block leaves is
    collected once the collector is back on."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


@functools.cache
def _vectorised_bm25(bm25s: Any) -> Any:
    """bm25s's ``BM25`` with its index built by numpy over all documents at once.

    bm25s builds its score matrix with a Python loop per document (a ``Counter``, two small
    arrays and the term-frequency formula each); this override of ``build_index_from_ids``,
    the method bm25s documents for building the index another way, counts every (token,
    document) pair in one sort and calls bm25s's own idf and term-frequency functions on whole
    arrays. Every float operation is the one bm25s does per document, in the same dtypes, so
    the score matrix is equal bit for bit (tests/unit/test_lexical_index.py compares it with
    bm25s's for every method)."""
    from bm25s import scoring

    class VectorisedBM25(bm25s.BM25):
        def build_index_from_ids(
            self,
            unique_token_ids: list[int],
            corpus_token_ids: list[list[int]],
            show_progress: bool = True,
            leave_progress: bool = False,
        ) -> dict[str, Any]:
            n_docs, n_vocab = len(corpus_token_ids), len(unique_token_ids)
            lengths = np.array([len(doc_ids) for doc_ids in corpus_token_ids])
            avg_doc_len = lengths.mean()  # as bm25s: the mean of an int array, a numpy float
            flat = np.fromiter(
                chain.from_iterable(corpus_token_ids), dtype=np.int64, count=int(lengths.sum())
            )
            docs = np.repeat(np.arange(n_docs, dtype=np.int64), lengths)
            # every (token, document) pair once, sorted by token then document: CSC order
            pairs, tf = np.unique(flat * max(n_docs, 1) + docs, return_counts=True)
            token, doc = np.divmod(pairs, max(n_docs, 1))
            df = np.bincount(token, minlength=n_vocab)
            frequencies = dict(zip(unique_token_ids, df[unique_token_ids].tolist(), strict=True))
            idf_fn = scoring._select_idf_scorer(self.idf_method)
            tfc_fn = scoring._select_tfc_scorer(self.method)
            if self.method in self.methods_requiring_nonoccurrence:
                self.nonoccurrence_array = scoring._build_nonoccurrence_array(
                    doc_frequencies=frequencies,
                    n_docs=n_docs,
                    compute_idf_fn=idf_fn,
                    calculate_tfc_fn=tfc_fn,
                    l_d=avg_doc_len,
                    l_avg=avg_doc_len,
                    k1=self.k1,
                    b=self.b,
                    delta=self.delta,
                    dtype=self.dtype,
                )
            else:
                self.nonoccurrence_array = None
            idf = scoring._build_idf_array(frequencies, n_docs, idf_fn, dtype=self.dtype)
            tfc = tfc_fn(
                tf_array=tf.astype(self.dtype),
                l_d=lengths[doc],
                l_avg=avg_doc_len,
                k1=self.k1,
                b=self.b,
                delta=self.delta,
            )
            scores = idf[token] * tfc
            if self.nonoccurrence_array is not None:
                scores -= self.nonoccurrence_array[token]
            indptr = np.zeros(n_vocab + 1, dtype=np.int64)
            np.cumsum(np.bincount(token, minlength=n_vocab), out=indptr[1:])
            return {
                "data": scores.astype(self.dtype),
                "indices": doc.astype(self.int_dtype),
                "indptr": indptr,
                "num_docs": n_docs,
            }

    return VectorisedBM25


class BM25Index:
    """A bm25s index over ``texts`` with exact, tie-ruled top-k search."""

    def __init__(
        self,
        texts: Sequence[str],
        ids: Sequence[str],
        *,
        k1: float = 1.5,
        b: float = 0.75,
        method: str = "lucene",
        stopwords: str | list[str] | None = "en",
        stemmer: str | None = "english",
    ) -> None:
        if len(texts) != len(ids):
            raise ConfigError(f"{len(texts)} texts for {len(ids)} ids")
        if method not in BM25_METHODS:
            raise ConfigError(f"bm25 method {method!r}: use one of {list(BM25_METHODS)}")
        if not (k1 >= 0 and 0 <= b <= 1):
            raise ConfigError(f"bm25 k1={k1!r} must be >= 0 and b={b!r} within [0, 1]")
        bm25s = require_bm25s()
        self.ids = tuple(ids)
        self._stemmer = make_stemmer(stemmer)
        self._stopwords = stopwords if stopwords is not None else []
        self._bm25s = bm25s
        with _no_cyclic_gc():
            tokens = bm25s.tokenize(
                list(texts),
                stopwords=self._stopwords,
                stemmer=self._stemmer,
                show_progress=False,
            )
            self._retriever = _vectorised_bm25(bm25s)(k1=k1, b=b, method=method)
            self._retriever.index(tokens, show_progress=False)
            del tokens
        # rank ties by descending id: precompute each document's place in that order
        order = sorted(range(len(self.ids)), key=self.ids.__getitem__, reverse=True)
        self._stored_to_given = np.asarray(order, dtype=np.int64)

    @property
    def nbytes(self) -> int:
        """Bytes of bm25s's score arrays (its sparse document-term matrix)."""
        scores = getattr(self._retriever, "scores", None) or {}
        return int(sum(getattr(v, "nbytes", 0) for v in scores.values()))

    def tokenize(self, text: str) -> list[str]:
        """The query's tokens as the index knows them (stopwords, stemming)."""
        out = self._bm25s.tokenize(
            [text],
            stopwords=self._stopwords,
            stemmer=self._stemmer,
            return_ids=False,
            show_progress=False,
        )
        return list(out[0])

    def scores(self, tokens: list[str]) -> np.ndarray:
        """BM25 score of every document (corpus order) for a tokenised query."""
        vocab = self._retriever.vocab_dict
        known = [t for t in tokens if t in vocab]
        if not known:
            return np.zeros(len(self.ids), dtype=np.float32)
        return np.asarray(self._retriever.get_scores(known), dtype=np.float32)

    def search_tokens(self, tokens: list[str], k: int) -> tuple[list[str], list[float]]:
        """Top-k ids and scores for a tokenised query, by the tie rule."""
        stored = self.scores(tokens)[self._stored_to_given]
        cols, vals = topk_desc(stored[None, :], k)
        positions = self._stored_to_given[cols[0]]
        return [self.ids[p] for p in positions], vals[0].astype(float).tolist()

    def search(self, text: str, k: int) -> tuple[list[str], list[float]]:
        """Top-k ids and scores for a query text."""
        return self.search_tokens(self.tokenize(text), k)


def reciprocal_rank_fusion(
    rankings: Sequence[Sequence[str]],
    *,
    k: float = 60.0,
    weights: Sequence[float] | None = None,
) -> tuple[list[str], list[float]]:
    """Fuse ranked id lists: ``score(d) = sum_i w_i / (k + rank_i(d))``, best first.

    Ties are broken by document id descending, as every ranking in this project.
    """
    if weights is None:
        weights = [1.0] * len(rankings)
    if len(weights) != len(rankings):
        raise ConfigError(f"{len(weights)} fusion weights for {len(rankings)} rankings")
    if k < 0:
        raise ConfigError(f"rrf k={k!r} must be >= 0")
    fused: dict[str, float] = {}
    for ranking, weight in zip(rankings, weights, strict=True):
        for rank, doc_id in enumerate(ranking, start=1):
            fused[doc_id] = fused.get(doc_id, 0.0) + float(weight) / (k + rank)
    items = sorted(((score, doc_id) for doc_id, score in fused.items()), reverse=True)
    return [d for _, d in items], [s for s, _ in items]

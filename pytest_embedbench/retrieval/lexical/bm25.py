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
import inspect
import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from itertools import chain
from typing import Any

import numpy as np

from ...core.exceptions import ConfigError, MissingExtraError
from ..exact import storage_order, topk_desc

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


#: documents tokenised per step by :func:`_tokenize_pairs`: the token strings of one step stay
#: in the CPU caches (500 documents, ~8,500 strings); 20,000 per step spread ~340,000 fresh
#: strings over the heap and cost 2-3x the CPU time per document at 1M documents
TOKENIZE_CHUNK = 500
#: index entries scored per step (bounds the float64 temporaries of the tf formula)
SCORE_CHUNK = 1 << 20


def _tokenize_pairs(
    bm25s: Any, texts: Sequence[str], stopwords: str | list[str], stemmer: Any
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict[str, int]]:
    """``bm25s.tokenize(texts, stopwords=..., stemmer=...)`` (its defaults otherwise), counted:
    every (document, token) pair once, documents in order (a CSR matrix of term counts): the
    pairs' token ids and counts, each document's number of pairs and of tokens, and the
    vocabulary. The ids and vocabulary are bm25s's (tests/unit/test_lexical_index.py).

    bm25s loops over every token in Python and keeps a list of ids per document; here each
    document is only split (``re.findall``, as bm25s), and a step of documents at a time has
    its new tokens numbered through one dict and its pairs counted by one small sort, which
    stays in the CPU caches: every pass is linear in the corpus, none sorts it whole. A token
    is numbered by its stem, in first-seen order (stopwords: -1, dropped); bm25s numbers the
    stems in the order of a set of them (the first-seen order without a stemmer), so the
    numbers are mapped to bm25s's once at the end."""
    from bm25s.tokenization import _infer_stopwords

    signature = inspect.signature(bm25s.tokenize).parameters
    split = re.compile(signature["token_pattern"].default).findall
    numbers: dict[str, int] = dict.fromkeys(_infer_stopwords(stopwords), -1)
    stem_numbers: dict[str, int] = {}  # stem -> number, in first-seen order
    stems: list[str] = []  # each kept token's stem, tokens in first-seen order (bm25s's list)
    token_parts, count_parts, width_parts, length_parts = [], [], [], []
    for start in range(0, len(texts), TOKENIZE_CHUNK):
        tokens = list(map(split, map(str.lower, texts[start : start + TOKENIZE_CHUNK])))
        n = len(tokens)
        split_lengths = np.fromiter(map(len, tokens), dtype=np.int64, count=n)
        flat = list(chain.from_iterable(tokens))
        del tokens
        unseen = set(flat).difference(numbers)  # one C loop; most steps meet no new token
        if unseen:
            new = [token for token in dict.fromkeys(flat) if token in unseen]  # first-seen order
            new_stems = new
            if stemmer is not None:
                new_stems = stemmer.stemWords(new)
                stems += new_stems
            fresh = [stem for stem in dict.fromkeys(new_stems) if stem not in stem_numbers]
            first = len(stem_numbers)
            stem_numbers.update(zip(fresh, range(first, first + len(fresh)), strict=True))
            numbers.update(zip(new, map(stem_numbers.__getitem__, new_stems), strict=True))
        ids = np.fromiter(map(numbers.__getitem__, flat), np.int64, count=len(flat))
        doc = np.repeat(np.arange(n, dtype=np.int64), split_lengths)
        keep = ids >= 0
        if not keep.all():
            ids, doc = ids[keep], doc[keep]
        length_parts.append(np.bincount(doc, minlength=n))
        width = max(len(stem_numbers), 1)
        pairs, counts = np.unique(doc * width + ids, return_counts=True)
        token_parts.append((pairs % width).astype(np.int32))
        count_parts.append(counts.astype(np.int32))
        width_parts.append(np.bincount(pairs // width, minlength=n))
    token = np.concatenate(token_parts) if token_parts else np.zeros(0, dtype=np.int32)
    counts = np.concatenate(count_parts) if count_parts else np.zeros(0, dtype=np.int32)
    widths = np.concatenate(width_parts) if width_parts else np.zeros(0, dtype=np.int64)
    lengths = np.concatenate(length_parts) if length_parts else np.zeros(0, dtype=np.int64)
    if stemmer is None:  # as bm25s: the kept tokens in first-seen order
        return token, counts, widths, lengths, stem_numbers
    vocab = {stem: i for i, stem in enumerate(set(stems))}  # as bm25s: the set's order
    to_vocab = np.fromiter(map(vocab.__getitem__, stem_numbers), np.int32, len(stem_numbers))
    return to_vocab[token], counts, widths, lengths, vocab


@functools.cache
def _vectorised_bm25(bm25s: Any) -> Any:
    """bm25s's ``BM25`` with its index built by numpy over all documents at once, or None when
    this bm25s lacks the parts it calls (bm25s 0.2.6 may).

    bm25s builds its score matrix with a Python loop per document (a ``Counter``, two small
    arrays and the term-frequency formula each). ``index_pairs`` takes the counted (document,
    token) pairs of :func:`_tokenize_pairs`, calls bm25s's own idf and term-frequency functions
    on whole arrays and turns the matrix by token with scipy. Every float operation is the one
    bm25s does per document, in the same dtypes, so the score matrix is equal bit for bit
    (tests/unit/test_lexical_index.py compares it with bm25s's for every method)."""
    from bm25s import scoring, tokenization

    needed = ("_select_idf_scorer", "_select_tfc_scorer", "_build_idf_array")
    model = bm25s.BM25()
    if not (
        all(hasattr(scoring, name) for name in (*needed, "_build_nonoccurrence_array"))
        and hasattr(tokenization, "_infer_stopwords")
        and all(
            hasattr(model, name)
            for name in ("idf_method", "methods_requiring_nonoccurrence", "int_dtype", "delta")
        )
    ):
        return None

    class VectorisedBM25(bm25s.BM25):
        def index_pairs(
            self,
            token: np.ndarray,
            counts: np.ndarray,
            widths: np.ndarray,
            lengths: np.ndarray,
            vocab: dict[str, int],
        ) -> None:
            """What ``index(tokens)`` does, from :func:`_tokenize_pairs`'s arrays."""
            self.scores = self.scores_from_pairs(token, counts, widths, lengths, len(vocab))
            if "" not in vocab:  # as bm25s: the empty token, for queries without a known one
                vocab[""] = max(vocab.values()) + 1
            self.vocab_dict = vocab
            self.unique_token_ids_set = set(vocab.values())

        def scores_from_pairs(
            self,
            token: np.ndarray,
            counts: np.ndarray,
            widths: np.ndarray,
            lengths: np.ndarray,
            n_vocab: int,
        ) -> dict[str, Any]:
            from scipy.sparse import csr_matrix

            n_docs = len(lengths)
            avg_doc_len = lengths.mean()  # as bm25s: the mean of an int64 array, a numpy float
            df = np.bincount(token, minlength=n_vocab)
            frequencies = dict(enumerate(df.tolist()))  # bm25s's ids are 0 .. n_vocab - 1
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
            # scored in document order, element by element: the order changes no value
            doc = np.repeat(np.arange(n_docs, dtype=np.int32), widths)
            data = np.empty(len(token), dtype=self.dtype)
            for a in range(0, len(token), SCORE_CHUNK):  # element-wise: chunks change nothing
                end = a + SCORE_CHUNK
                tfc = tfc_fn(
                    tf_array=counts[a:end].astype(self.dtype),
                    l_d=lengths[doc[a:end]],
                    l_avg=avg_doc_len,
                    k1=self.k1,
                    b=self.b,
                    delta=self.delta,
                )
                scores = idf[token[a:end]] * tfc
                if self.nonoccurrence_array is not None:
                    scores -= self.nonoccurrence_array[token[a:end]]
                data[a:end] = scores  # float64 -> the index dtype, as bm25s stores them
            del doc
            # bm25s's matrix is by token (CSC), documents ascending within a token: scipy's
            # CSR -> CSC transposes by counting (linear; no sort of all pairs) and keeps the
            # documents' order within each token
            indptr = np.zeros(n_docs + 1, dtype=np.int64)
            np.cumsum(widths, out=indptr[1:])
            by_token = csr_matrix((data, token, indptr), shape=(n_docs, n_vocab)).tocsc()
            return {
                "data": by_token.data,
                "indices": by_token.indices.astype(self.int_dtype, copy=False),
                "indptr": by_token.indptr.astype(np.int64, copy=False),
                "num_docs": n_docs,
            }

    return VectorisedBM25


def _no_words(n: int, stopwords: str | list[str] | None) -> ConfigError:
    """The error for a corpus with no word left to index (bm25s fails on it with a bare
    ``max() arg is an empty sequence``)."""
    dropped = f" once the stopwords ({stopwords!r}) are dropped" if stopwords else ""
    keep = ", or keep the stopwords with the option stopwords: null" if stopwords else ""
    return ConfigError(
        f"bm25: none of the {n} documents has a word to index{dropped}: the documents are "
        f"empty or hold only stopwords and punctuation; check the corpus (its text field){keep}"
    )


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
        vectorised = _vectorised_bm25(bm25s) if texts else None
        with _no_cyclic_gc():
            if vectorised is not None:
                pairs = _tokenize_pairs(bm25s, texts, self._stopwords, self._stemmer)
                if not pairs[4]:
                    raise _no_words(len(texts), stopwords)
                self._retriever = vectorised(k1=k1, b=b, method=method)
                self._retriever.index_pairs(*pairs)
                del pairs
            else:  # an older bm25s, or no document: bm25s's own loops
                tokens = bm25s.tokenize(
                    list(texts),
                    stopwords=self._stopwords,
                    stemmer=self._stemmer,
                    show_progress=False,
                )
                if texts and not tokens.vocab:
                    raise _no_words(len(texts), stopwords)
                self._retriever = bm25s.BM25(k1=k1, b=b, method=method)
                self._retriever.index(tokens, show_progress=False)
                del tokens
        # rank ties by descending id, as exact search does: each document's place in that order
        self._stored_to_given = storage_order(self.ids)

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

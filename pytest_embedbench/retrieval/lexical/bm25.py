"""BM25 through bm25s: the index and its retriever.

The index counts the terms a :class:`~.tokenize.Tokenizer` gives (bm25s's own tokenisation by
default, :class:`~.tokenize.WordTokenizer`) and builds bm25s's score matrix from them with numpy
(bit for bit bm25s's own, tests/unit/test_lexical_index.py); a query is tokenised by the same
tokeniser. BM25 scores every document for a query (bm25s ``get_scores``) and ranks them with the
project's tie rule (score descending, then document id descending), so a tie never depends on
bm25s's internal order.

Usage::

    index = BM25Index(["the cat sat", "a dog ran"], ["d1", "d2"])  # WordTokenizer()
    ids, scores = index.search("cat", k=10)
    retriever = BM25Retriever(index)  # what the bm25 provider builds
"""

from __future__ import annotations

import functools
import gc
import time
import warnings
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from itertools import chain
from typing import Any

import numpy as np

from ...core.exceptions import ConfigError, EmbedBenchWarning
from ...core.scripts import SEGMENTED_SCRIPT, SUBWORD_SCRIPT
from ..base import Retriever
from ..exact import storage_order, topk_desc
from .tokenize import Tokenizer, WordTokenizer, require_bm25s

__all__ = ["BM25_METHODS", "BM25Index", "BM25Retriever"]

#: bm25s's scoring variants
BM25_METHODS = ("lucene", "robertson", "atire", "bm25l", "bm25+")


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


#: documents tokenised per step by :func:`_count_terms`: the token strings of one step stay
#: in the CPU caches (500 documents, ~8,500 strings); 20,000 per step spread ~340,000 fresh
#: strings over the heap and cost 2-3x the CPU time per document at 1M documents
TOKENIZE_CHUNK = 500
#: index entries scored per step (bounds the float64 temporaries of the tf formula)
SCORE_CHUNK = 1 << 20


def _count_terms(
    tokenizer: Tokenizer, texts: Sequence[str]
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict[str, int]]:
    """Every (document, term) pair of ``texts`` once, documents in order (a CSR matrix of term
    counts): the pairs' term numbers and counts, each document's number of pairs and of terms,
    and the vocabulary (term -> number, numbered in first-seen order). Each document's terms
    are ``tokenizer.tokenize([text])[0]``'s.

    A step of documents at a time is split, its new words are given their terms through one
    :meth:`~.tokenize.Tokenizer.terms` call and numbered through one dict (word -> its term's
    number, -1 for a dropped word), and its pairs are counted by one small sort, which stays in
    the CPU caches: every pass is linear in the corpus, none sorts it whole, and a word met
    again costs one dict lookup (bm25s loops over every token in Python and keeps a list of
    ids per document)."""
    numbers: dict[str, int] = {}  # word -> its term's number, -1: dropped
    vocab: dict[str, int] = {}  # term -> number, in first-seen order
    token_parts, count_parts, width_parts, length_parts = [], [], [], []
    for start in range(0, len(texts), TOKENIZE_CHUNK):
        words = tokenizer.split(texts[start : start + TOKENIZE_CHUNK])
        n = len(words)
        split_lengths = np.fromiter(map(len, words), dtype=np.int64, count=n)
        flat = list(chain.from_iterable(words))
        del words
        unseen = set(flat).difference(numbers)  # one C loop; most steps meet no new word
        if unseen:
            new = [word for word in dict.fromkeys(flat) if word in unseen]  # first-seen order
            terms = tokenizer.terms(new)
            fresh = [t for t in dict.fromkeys(terms) if t is not None and t not in vocab]
            first = len(vocab)
            vocab.update(zip(fresh, range(first, first + len(fresh)), strict=True))
            numbers.update(zip(new, [-1 if t is None else vocab[t] for t in terms], strict=True))
        ids = np.fromiter(map(numbers.__getitem__, flat), np.int64, count=len(flat))
        doc = np.repeat(np.arange(n, dtype=np.int64), split_lengths)
        keep = ids >= 0
        if not keep.all():
            ids, doc = ids[keep], doc[keep]
        length_parts.append(np.bincount(doc, minlength=n))
        width = max(len(vocab), 1)
        pairs, counts = np.unique(doc * width + ids, return_counts=True)
        token_parts.append((pairs % width).astype(np.int32))
        count_parts.append(counts.astype(np.int32))
        width_parts.append(np.bincount(pairs // width, minlength=n))
    token = np.concatenate(token_parts) if token_parts else np.zeros(0, dtype=np.int32)
    counts = np.concatenate(count_parts) if count_parts else np.zeros(0, dtype=np.int32)
    widths = np.concatenate(width_parts) if width_parts else np.zeros(0, dtype=np.int64)
    lengths = np.concatenate(length_parts) if length_parts else np.zeros(0, dtype=np.int64)
    return token, counts, widths, lengths, vocab


@functools.cache
def _vectorised_bm25(bm25s: Any) -> Any:
    """bm25s's ``BM25`` with its index built by numpy over all documents at once, or None when
    this bm25s lacks the parts it calls (bm25s 0.2.6 may).

    bm25s builds its score matrix with a Python loop per document (a ``Counter``, two small
    arrays and the term-frequency formula each). ``index_pairs`` takes the counted (document,
    term) pairs of :func:`_count_terms`, calls bm25s's own idf and term-frequency functions
    on whole arrays and turns the matrix by token with scipy. Every float operation is the one
    bm25s does per document, in the same dtypes, so the score matrix is equal bit for bit
    (tests/unit/test_lexical_index.py compares it with bm25s's for every method).

    The only private bm25s parts this package calls are here: bm25s has no public function that
    scores counted pairs, so its own (``scoring._select_*``, ``_build_*``) are called, each one
    checked first; without them bm25s's public ``BM25.index`` builds the same matrix."""
    from bm25s import scoring

    needed = ("_select_idf_scorer", "_select_tfc_scorer", "_build_idf_array")
    model = bm25s.BM25()
    if not (
        all(hasattr(scoring, name) for name in (*needed, "_build_nonoccurrence_array"))
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
            """What ``index(tokens)`` does, from :func:`_count_terms`'s arrays."""
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


def _no_words(n: int, stopwords: str | Sequence[str] | None) -> ConfigError:
    """The error for a corpus with no word left to index (bm25s fails on it with a bare
    ``max() arg is an empty sequence``)."""
    dropped = f" once the stopwords ({stopwords!r}) are dropped" if stopwords else ""
    keep = ", or keep the stopwords with the option stopwords: null" if stopwords else ""
    return ConfigError(
        f"bm25: none of the {n} documents has a word to index{dropped}: the documents are "
        f"empty or hold only stopwords and punctuation; check the corpus (its text field){keep}"
    )


#: the share of a corpus's documents in a script bm25 may not read that may give no term
#: before bm25 warns
UNREAD_SHARE = 0.05


def _other_script(text: str) -> bool:
    """Whether ``text`` holds a character of a script with no spaces between words or with
    vowel signs that bm25s's word pattern does not take (Han, kana, Hangul, Thai, Devanagari
    ...): where a document with no term means a tokeniser that does not read it, not a
    document of stop words."""
    return bool(SEGMENTED_SCRIPT.search(text) or SUBWORD_SCRIPT.search(text))


def _warn_unread(tokenizer: Tokenizer, texts: Sequence[str], lengths: np.ndarray) -> None:
    """An EmbedBenchWarning when more than :data:`UNREAD_SHARE` of the documents give no term
    at all although they hold the letters of such a script: the tokeniser does not read it
    (the words of a Devanagari text are invisible to bm25s's word pattern; a subword tokenizer
    may know none of a script's characters), so BM25 would score them nothing, silently."""
    unread = [i for i in np.flatnonzero(lengths == 0).tolist() if _other_script(texts[i])]
    if not unread or len(unread) <= UNREAD_SHARE * len(texts):
        return
    warnings.warn(
        f"bm25: {len(unread)} of {len(texts)} documents have letters but give no term to index "
        f"(e.g. {texts[unread[0]][:40]!r}), so BM25 scores them 0; tokeniser "
        f"{tokenizer.fingerprint[:120]!r} does not read their script. For a script with no "
        "segmenter here set language: auto or subword, with tokenizer: the tokenizer.json of "
        "a model that knows the script",
        EmbedBenchWarning,
        stacklevel=4,
    )


class BM25Index:
    """A bm25s index over ``texts``, tokenised by ``tokenizer`` (default: English
    :class:`~.tokenize.WordTokenizer`), with exact, tie-ruled top-k search."""

    def __init__(
        self,
        texts: Sequence[str],
        ids: Sequence[str],
        *,
        tokenizer: Tokenizer | None = None,
        k1: float = 1.5,
        b: float = 0.75,
        method: str = "lucene",
    ) -> None:
        if len(texts) != len(ids):
            raise ConfigError(f"{len(texts)} texts for {len(ids)} ids")
        if method not in BM25_METHODS:
            raise ConfigError(f"bm25 method {method!r}: use one of {list(BM25_METHODS)}")
        if not (k1 >= 0 and 0 <= b <= 1):
            raise ConfigError(f"bm25 k1={k1!r} must be >= 0 and b={b!r} within [0, 1]")
        bm25s = require_bm25s()
        self.ids = tuple(ids)
        #: documents and queries alike: the index's terms are this tokeniser's
        self.tokenizer = tokenizer if tokenizer is not None else WordTokenizer()
        with _no_cyclic_gc():
            pairs = _count_terms(self.tokenizer, texts)
            if not pairs[4]:  # a tokeniser's stop words, when it has them, are the likely cause
                raise _no_words(len(texts), getattr(self.tokenizer, "stopwords", None))
            _warn_unread(self.tokenizer, texts, pairs[3])
            vectorised = _vectorised_bm25(bm25s)
            if vectorised is not None:
                self._retriever = vectorised(k1=k1, b=b, method=method)
                self._retriever.index_pairs(*pairs)
            else:  # an older bm25s: its own loop per document, over the same term numbers
                token, counts, _, lengths, vocab = pairs
                ends = np.cumsum(lengths)[:-1]
                per_doc = [d.tolist() for d in np.split(np.repeat(token, counts), ends)]
                self._retriever = bm25s.BM25(k1=k1, b=b, method=method)
                self._retriever.index((per_doc, vocab), show_progress=False)
                del per_doc
            del pairs
        # rank ties by descending id, as exact search does: each document's place in that order
        self._stored_to_given = storage_order(self.ids)

    @property
    def fingerprint(self) -> str:
        """The tokenisation this index was built with (:attr:`.Tokenizer.fingerprint`)."""
        return self.tokenizer.fingerprint

    @property
    def nbytes(self) -> int:
        """Bytes of bm25s's score arrays (its sparse document-term matrix)."""
        scores = getattr(self._retriever, "scores", None) or {}
        return int(sum(getattr(v, "nbytes", 0) for v in scores.values()))

    def tokenize(self, text: str) -> list[str]:
        """The query's terms, by the tokeniser that tokenised the documents."""
        return self.tokenizer.tokenize([text])[0]

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


class BM25Retriever(Retriever):
    """A :class:`BM25Index` as a retriever: a query is encoded to its terms (timed as the
    query's embedding), then searched."""

    def __init__(self, index: BM25Index) -> None:
        self.index = index
        self.ids = index.ids

    def search(self, text: str, k: int) -> tuple[list[str], list[float]]:
        return self.search_encoded(self.encode(text), k)

    def encode(self, text: str) -> Any:
        t0 = time.perf_counter()
        tokens = self.index.tokenize(text)
        self.query_embedding_s += time.perf_counter() - t0
        return tokens

    def search_encoded(self, query: Any, k: int) -> tuple[list[str], list[float]]:
        t1 = time.perf_counter()
        result = self.index.search_tokens(query, k)
        self.search_s += time.perf_counter() - t1
        return result

    def index_bytes(self) -> int | None:
        return self.index.nbytes

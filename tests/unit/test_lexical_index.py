"""The bm25 index built by numpy (retrieval/lexical/bm25.py, issue 33) equals bm25s's own, bit
for bit.

BM25Index builds bm25s's score matrix over all documents at once instead of bm25s's loop per
document; these tests build both on the same tokens and compare the matrices and the rankings
on the bundled example datasets and on a seeded corpus with repeats and empty documents. Our
index numbers its terms in first-seen order (bm25s, with a stemmer, in the order of a set of
strings, which changes with the process's hash seed), so the matrices are compared term by term:
each term's column, its documents and its scores, equal bit for bit.
"""

from __future__ import annotations

import gc
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from pytest_embedbench import load_dataset
from pytest_embedbench.retrieval.lexical import bm25 as lexical
from pytest_embedbench.retrieval.lexical.bm25 import BM25_METHODS, BM25Index
from pytest_embedbench.retrieval.lexical.tokenize import WordTokenizer, make_stemmer

bm25s = pytest.importorskip("bm25s")

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def bm25s_alone(index: BM25Index, texts: list[str], method: str) -> object:
    """bm25s's own BM25 (its loop per document) on bm25s's own tokens of ``texts``, with the
    stopwords and stemmer of ``index``'s tokeniser."""
    tokenizer = index.tokenizer
    assert isinstance(tokenizer, WordTokenizer)
    stopwords = tokenizer.stopwords if tokenizer.stopwords is not None else []
    stemmer = make_stemmer(tokenizer.stemmer)
    tokens = bm25s.tokenize(texts, stopwords=stopwords, stemmer=stemmer, show_progress=False)
    plain = bm25s.BM25(k1=index._retriever.k1, b=index._retriever.b, method=method)
    plain.index(tokens, show_progress=False)
    return plain


def columns(model: object) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Each term's column of a bm25s score matrix: its documents and their scores."""
    scores = model.scores  # type: ignore[attr-defined]
    indptr = scores["indptr"]
    return {
        term: (
            scores["indices"][indptr[i] : indptr[i + 1]],
            scores["data"][indptr[i] : indptr[i + 1]],
        )
        for term, i in model.vocab_dict.items()  # type: ignore[attr-defined]
        if i < len(indptr) - 1  # the empty token "" has no column
    }


def assert_same_index(ours: object, plain: object) -> None:
    for key in ("data", "indices", "indptr"):
        a, b = ours.scores[key], plain.scores[key]  # type: ignore[attr-defined]
        assert a.dtype == b.dtype, key
        assert len(a) == len(b), key
    assert ours.scores["num_docs"] == plain.scores["num_docs"]  # type: ignore[attr-defined]
    assert set(ours.vocab_dict) == set(plain.vocab_dict)  # type: ignore[attr-defined]
    ours_columns, plain_columns = columns(ours), columns(plain)
    assert ours_columns.keys() == plain_columns.keys()
    for term, (docs, data) in ours_columns.items():
        # bit for bit: the same float operations
        assert np.array_equal(docs, plain_columns[term][0]), term
        assert np.array_equal(data, plain_columns[term][1]), term
    a, b = ours.nonoccurrence_array, plain.nonoccurrence_array  # type: ignore[attr-defined]
    assert (a is None) == (b is None)
    if a is not None:
        for term, i in ours.vocab_dict.items():  # type: ignore[attr-defined]
            if i < len(a):
                assert a[i] == b[plain.vocab_dict[term]], term  # type: ignore[attr-defined]


@pytest.mark.parametrize("example", ["support", "manuals"])
@pytest.mark.parametrize("method", BM25_METHODS)
def test_rankings_equal_bm25s_on_the_examples(example: str, method: str) -> None:
    ds = load_dataset(EXAMPLES / example)
    texts = [d.embed_text for d in ds.documents]
    ids = [d.id for d in ds.documents]
    ours = BM25Index(texts, ids, method=method)
    plain = bm25s_alone(ours, texts, method)
    assert type(ours._retriever).__name__ == "VectorisedBM25"
    assert_same_index(ours._retriever, plain)
    reference = BM25Index(texts, ids, method=method)
    reference._retriever = plain  # the same tie rule and top-k over bm25s's own matrix
    for query in ds.queries:
        assert ours.search(query.text, 10) == reference.search(query.text, 10), query.id


@pytest.mark.parametrize("method", BM25_METHODS)
@pytest.mark.parametrize("chunk", [7, 1 << 20])
def test_matrix_equals_bm25s_with_repeats_and_empty_documents(
    method: str, chunk: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(lexical, "SCORE_CHUNK", chunk)  # scored in chunks of 7 entries, or all
    rng = np.random.default_rng(5)
    words = [f"word{i}" for i in range(300)]
    texts = []
    for i in range(400):
        n = 0 if i % 37 == 0 else int(rng.integers(1, 40))
        picked = rng.zipf(1.3, size=n) % len(words)  # heavy repeats within a document
        texts.append(" ".join(words[j] for j in picked))
    ours = BM25Index(texts, [f"d{i}" for i in range(len(texts))], method=method, k1=1.2, b=0.6)
    assert_same_index(ours._retriever, bm25s_alone(ours, texts, method))


def counted(
    token: np.ndarray, counts: np.ndarray, widths: np.ndarray, vocab: dict[str, int]
) -> list[Counter]:
    """Each document's {term: count} from _count_terms's arrays (documents in order)."""
    names = {i: term for term, i in vocab.items()}
    ends = np.cumsum(widths).tolist()
    return [
        Counter(dict(zip(map(names.get, token[a:b].tolist()), counts[a:b].tolist(), strict=True)))
        for a, b in zip([0, *ends[:-1]], ends, strict=True)
    ]


@pytest.mark.parametrize("stemmer", ["english", None])
@pytest.mark.parametrize("chunk", [1, 3, 500])
def test_matrix_equals_bm25s_over_many_steps(
    stemmer: str | None, chunk: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    # tokenised a step of 1 or 3 documents at a time (or all at once): the first steps hold only
    # stopwords or nothing, the vocabulary grows to the last document, a stem is met first as one
    # word and later as another ("connected" ... "connections"), stopwords appear late
    monkeypatch.setattr(lexical, "TOKENIZE_CHUNK", chunk)
    rng = np.random.default_rng(11)
    forms = ["connected", "connecting", "connections", "connects", "runs", "running", "runner"]
    texts = ["", "the and of", "", "a an the"]
    for i in range(200):
        vocabulary = 5 + i * 3  # words first seen late in the corpus
        picked = rng.zipf(1.5, size=int(rng.integers(1, 30))) % vocabulary
        words = [f"t{j}" for j in picked] + [forms[(i + j) % len(forms)] for j in range(i % 3)]
        if i > 150:
            words += ["the", "of", "between"]
        texts.append(" ".join(words))
    tokenizer = WordTokenizer(stemmer=stemmer)
    ours = BM25Index(texts, [f"d{i}" for i in range(len(texts))], tokenizer=tokenizer)
    plain = bm25s_alone(ours, texts, "lucene")
    assert_same_index(ours._retriever, plain)
    reference = BM25Index(texts, [f"d{i}" for i in range(len(texts))], tokenizer=tokenizer)
    reference._retriever = plain
    for query in ["connection runs", "t1 t7 t400", "t599 running the", "t2 t2 t3"]:
        assert ours.search(query, 10) == reference.search(query, 10), query


MIXED = [
    "The Cats SAT on the mat, the cats!",
    "",
    "the and of",  # stopwords only
    "Ünïcode naïve café CAFÉ 東京 tokyo x y z",
    "a b c-d e_f 42 4 2 running runs ran",
    "Running RUNNING runner's run-time",
]


@pytest.mark.parametrize("stemmer", ["english", None])
@pytest.mark.parametrize("stopwords", ["en", None])
@pytest.mark.parametrize("chunk", [1, 4, 20_000])
def test_tokens_equal_bm25s(
    stemmer: str | None, stopwords: str | None, chunk: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    # each document's counted terms, its length and the vocabulary equal bm25s.tokenize's,
    # tokenised in chunks of 1, 4 or all documents
    monkeypatch.setattr(lexical, "TOKENIZE_CHUNK", chunk)
    ds = load_dataset(EXAMPLES / "support")
    texts = MIXED + [d.embed_text for d in ds.documents]
    stem, stop = make_stemmer(stemmer), stopwords if stopwords is not None else []
    want = bm25s.tokenize(texts, stopwords=stop, stemmer=stem, show_progress=False)
    want_names = {i: term for term, i in want.vocab.items()}
    tokenizer = WordTokenizer(stopwords=stopwords, stemmer=stemmer)
    token, counts, widths, lengths, vocab = lexical._count_terms(tokenizer, texts)
    assert vocab.keys() == want.vocab.keys()
    assert lengths.tolist() == [len(doc) for doc in want.ids]
    assert counted(token, counts, widths, vocab) == [
        Counter(want_names[i] for i in doc) for doc in want.ids
    ]
    ours = BM25Index(texts, [f"d{i}" for i in range(len(texts))], tokenizer=tokenizer)
    assert_same_index(ours._retriever, bm25s_alone(ours, texts, "lucene"))


def test_the_collector_is_restored() -> None:
    assert gc.isenabled()
    BM25Index(["the cat sat", "a dog ran"], ["d1", "d2"])
    assert gc.isenabled()
    gc.disable()
    try:
        BM25Index(["the cat sat", "a dog ran"], ["d1", "d2"])
        assert not gc.isenabled()  # off before: left off
    finally:
        gc.enable()


def test_a_corpus_with_no_word_to_index_is_named() -> None:
    """All stopwords: bm25s itself fails with "max() arg is an empty sequence"."""
    from pytest_embedbench import ConfigError

    with pytest.raises(ConfigError, match=r"none of the 2 documents has a word to index once"):
        lexical.BM25Index(["the and of", "a an the"], ["d1", "d2"])
    with pytest.raises(ConfigError, match=r"keep the stopwords with the option stopwords: null"):
        lexical.BM25Index(["the and of", "a an the"], ["d1", "d2"])
    with pytest.raises(ConfigError, match=r"documents has a word to index: the documents are em"):
        lexical.BM25Index(["", "  ..."], ["d1", "d2"], tokenizer=WordTokenizer(stopwords=None))
    index = lexical.BM25Index(
        ["the and of", "a an the"], ["d1", "d2"], tokenizer=WordTokenizer(stopwords=None)
    )
    assert index.ids == ("d1", "d2")  # kept, they are words

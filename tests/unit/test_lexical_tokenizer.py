"""The Tokenizer protocol of the lexical room: one object tokenises documents and queries, its
fingerprint names the tokenisation, any tokeniser plugs into the bm25 index, and the retrievers
live on the retrieval floor (the providers only build them)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Sequence

import pytest

from pytest_embedbench import ConfigError
from pytest_embedbench.core.types import Document
from pytest_embedbench.models.providers import lexical as providers_lexical
from pytest_embedbench.retrieval import fusion
from pytest_embedbench.retrieval.lexical import bm25 as lexical
from pytest_embedbench.retrieval.lexical.bm25 import BM25Index, BM25Retriever
from pytest_embedbench.retrieval.lexical.tokenize import Tokenizer, WordTokenizer

bm25s = pytest.importorskip("bm25s")
pytest.importorskip("Stemmer")

TEXTS = [
    "The cats sat on the mat",
    "A dog ran after the cats",
    "Connections between running dogs",
    "",
    "mat MAT mat, the rug",
]
IDS = ["a", "b", "c", "d", "e"]
QUERIES = ["cats mat", "running dog", "rug", "nothing known here", ""]


class Whitespace(Tokenizer):
    """Lower-cased whitespace words, ``drop`` left out; counts what it is asked."""

    def __init__(self, drop: Sequence[str] = ()) -> None:
        self.drop = frozenset(drop)
        self.split_calls: list[int] = []
        self.term_calls = 0

    @property
    def fingerprint(self) -> str:
        return f"whitespace:{sorted(self.drop)}"

    def split(self, texts: Sequence[str]) -> list[list[str]]:
        self.split_calls.append(len(texts))
        return [text.lower().split() for text in texts]

    def terms(self, words: Sequence[str]) -> list[str | None]:
        self.term_calls += 1
        return [None if word in self.drop else word for word in words]


def test_word_tokenizer_is_a_tokenizer_with_a_stable_fingerprint() -> None:
    english = WordTokenizer()
    assert isinstance(english, Tokenizer) and isinstance(Whitespace(), Tokenizer)
    assert english.fingerprint == WordTokenizer(stopwords="en", stemmer="english").fingerprint
    others = [
        WordTokenizer(stopwords=None),
        WordTokenizer(stemmer=None),
        WordTokenizer(stopwords=["the"]),
        WordTokenizer(stopwords="fr", stemmer="french"),
    ]
    fingerprints = {english.fingerprint, *(t.fingerprint for t in others)}
    assert len(fingerprints) == 5  # every setting its own
    # a list of stop words is keyed by its words, not its order
    assert WordTokenizer(stopwords=["a", "b"]).fingerprint == (
        WordTokenizer(stopwords=["b", "a", "b"]).fingerprint
    )
    # the same string in another process, whatever its hash seed
    code = (
        "from pytest_embedbench.retrieval.lexical.tokenize import WordTokenizer;"
        "print(WordTokenizer(stopwords=['x', 'y', 'z']).fingerprint)"
    )
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    other = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    )
    assert other.stdout.strip() == WordTokenizer(stopwords=["x", "y", "z"]).fingerprint


def test_terms_are_a_function_of_the_word() -> None:
    tokenizer = WordTokenizer()
    words = tokenizer.split(["Running runs, THE runner", "the cats"])
    assert words == [["running", "runs", "the", "runner"], ["the", "cats"]]
    assert tokenizer.terms(words[0]) == ["run", "run", None, "runner"]
    assert tokenizer.tokenize(["Running runs, THE runner", "the cats"]) == [
        ["run", "run", "runner"],
        ["cat"],
    ]


def test_documents_and_queries_go_through_the_index_s_tokenizer() -> None:
    tokenizer = Whitespace(drop=["the", "a"])
    index = BM25Index(TEXTS, IDS, tokenizer=tokenizer)
    assert index.tokenizer is tokenizer and index.fingerprint == tokenizer.fingerprint
    assert tokenizer.split_calls == [len(TEXTS)]  # the documents, in one step
    assert index.tokenize("The CATS mat") == ["cats", "mat"]
    assert tokenizer.split_calls == [len(TEXTS), 1]  # then the query, through the same object
    # the scores are bm25s's own over the same tokens
    plain = bm25s.BM25()
    plain.index(tokenizer.tokenize(TEXTS), show_progress=False)
    for query in QUERIES:
        tokens = tokenizer.tokenize([query])[0]
        known = [t for t in tokens if t in plain.vocab_dict]
        want = plain.get_scores(known).astype("float32") if known else None
        got = index.scores(tokens)
        assert (got == 0).all() if want is None else (got == want).all(), query


def test_older_bm25s_gives_the_same_index(monkeypatch: pytest.MonkeyPatch) -> None:
    # a bm25s without the scoring parts the numpy build calls: bm25s's own loop over the same
    # term numbers, the same scores and rankings
    fast = BM25Index(TEXTS, IDS, method="bm25+")
    monkeypatch.setattr(lexical, "_vectorised_bm25", lambda bm25s: None)
    slow = BM25Index(TEXTS, IDS, method="bm25+")
    assert type(slow._retriever) is bm25s.BM25
    assert type(fast._retriever).__name__ == "VectorisedBM25"
    for query in QUERIES:
        assert slow.search(query, 5) == fast.search(query, 5), query
        assert (slow.scores(slow.tokenize(query)) == fast.scores(fast.tokenize(query))).all()


def test_an_empty_corpus_or_unknown_stopwords_are_named() -> None:
    with pytest.raises(ConfigError, match="none of the 0 documents has a word to index"):
        BM25Index([], [])
    with pytest.raises(ValueError, match="klingon not recognized"):  # bm25s's own message
        WordTokenizer(stopwords="klingon")
    with pytest.raises(ConfigError, match="stemmer 'klingon' is not known to PyStemmer"):
        WordTokenizer(stemmer="klingon")


def test_the_retrievers_live_on_the_retrieval_floor() -> None:
    # the providers one floor up only build them (retrieval must not import providers)
    assert BM25Retriever.__module__ == "pytest_embedbench.retrieval.lexical.bm25"
    assert fusion.HybridRetriever.__module__ == "pytest_embedbench.retrieval.fusion"
    own = {
        name
        for name, value in vars(providers_lexical).items()
        if isinstance(value, type) and value.__module__ == providers_lexical.__name__
    }
    assert own == {"BM25Provider", "HybridProvider"}
    provider = providers_lexical.BM25Provider("", stemmer=None, stopwords=["cats"], k1=1.2)
    retriever = provider.build([Document(id=i, text=t) for i, t in zip(IDS, TEXTS, strict=True)])
    assert isinstance(retriever, BM25Retriever)
    tokenizer = retriever.index.tokenizer
    assert isinstance(tokenizer, WordTokenizer)
    assert (tokenizer.stopwords, tokenizer.stemmer) == (["cats"], None)
    assert retriever.index.tokenize("The cats running") == ["the", "running"]

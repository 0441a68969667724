"""BM25 tokens, scores and rankings are the ones recorded before the Tokenizer protocol (issue 41).

test_lexical_tokens.json was written by the code of commit 73441c3 (BM25Index tokenising
documents in its own loop and queries through ``bm25s.tokenize``) over the corpus and queries
below, for ten settings (every bm25s method; stopwords and stemmer on, off, as a list and in
French): each document's tokens (``bm25s.tokenize(..., return_ids=False)``, the tokens that index
counted), each query's tokens, the score of every document for it and its top 5. One tokeniser
now serves documents and queries; these must not change by a bit.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from pytest_embedbench.retrieval.lexical import bm25
from pytest_embedbench.retrieval.lexical.bm25 import BM25Index
from pytest_embedbench.retrieval.lexical.tokenize import WordTokenizer
from tests.unit.test_lexical_index import counted

pytest.importorskip("bm25s")
pytest.importorskip("Stemmer")

RECORDED = json.loads(
    (Path(__file__).with_name("test_lexical_tokens.json")).read_text(encoding="utf-8")
)

TEXTS = [
    "The Cats SAT on the mat, the cats!",
    "",
    "the and of",
    "Ünïcode naïve café CAFÉ 東京 tokyo x y z",
    "a b c-d e_f 42 4 2 running runs ran",
    "Running RUNNING runner's run-time",
    "Connected connections connecting: the network connects every node",
    "How do I reset my password? Reset it from the account page.",
    "Password resets expire after 24 hours; request a new reset link.",
    "Le chat est sur la table, les chats mangent des croquettes",
    "Die Katzen schlafen auf dem Sofa und die Hunde bellen",
    "dog dog dog dog dog cat",
    "A quick brown fox jumps over the lazy dog near the river bank",
    "Banks raise interest rates; the bank's rate rose to 5%",
    "Rivers flow; river banks erode. Flowing water shapes the banks.",
]
IDS = [f"d{i:02d}" for i in range(len(TEXTS))]


def setting_id(setting: dict[str, Any]) -> str:
    return f"{setting['method']}-{setting['stopwords']}-{setting['stemmer']}"


def tokenizer(setting: dict[str, Any]) -> WordTokenizer:
    return WordTokenizer(stopwords=setting["stopwords"], stemmer=setting["stemmer"])


def build(setting: dict[str, Any]) -> BM25Index:
    return BM25Index(TEXTS, IDS, tokenizer=tokenizer(setting), method=setting["method"])


def test_the_record_covers_every_setting() -> None:
    assert len(RECORDED) == 10
    assert {s["method"] for s in RECORDED} == {"lucene", "robertson", "atire", "bm25l", "bm25+"}
    assert all(len(s["documents"]) == len(TEXTS) for s in RECORDED)


@pytest.mark.parametrize("setting", RECORDED, ids=setting_id)
def test_query_tokens_scores_and_rankings_are_unchanged(setting: dict[str, Any]) -> None:
    index = build(setting)
    for query in setting["queries"]:
        tokens = index.tokenize(query["text"])
        assert tokens == query["tokens"], query["text"]
        scores = index.scores(tokens)
        assert scores.dtype == np.float32
        # the recorded floats are float32 values written as float64: equal bit for bit
        assert scores.tolist() == query["scores"], query["text"]
        assert index.search(query["text"], 5) == (query["top"], query["top_scores"])


@pytest.mark.parametrize("setting", RECORDED, ids=setting_id)
@pytest.mark.parametrize("chunk", [1, 4, 500])
def test_document_tokens_are_unchanged(
    setting: dict[str, Any], chunk: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the tokeniser's terms, and what the index counted of them, a step of 1, 4 or all documents
    # at a time
    assert tokenizer(setting).tokenize(TEXTS) == setting["documents"]
    monkeypatch.setattr(bm25, "TOKENIZE_CHUNK", chunk)
    token, counts, widths, lengths, vocab = bm25._count_terms(tokenizer(setting), TEXTS)
    assert counted(token, counts, widths, vocab) == [Counter(d) for d in setting["documents"]]
    assert lengths.tolist() == [len(doc) for doc in setting["documents"]]
    # numbered in first-seen order, the same in every process
    assert list(vocab) == list(dict.fromkeys(t for doc in setting["documents"] for t in doc))

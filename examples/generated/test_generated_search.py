"""A generated eval set as a benchmark: ``pytest examples/generated``.

Generated questions share words with the chunk they were written from, so a lexical model
finds their documents easily: a generated set flatters BM25 and ranks models less reliably
than questions written by people. Use it to get started, then review and add real questions.
"""

import pytest


@pytest.mark.embedbench(dataset="support-generated", models=["bm25"])
def test_generated_questions_find_their_documents(retrieval):
    assert retrieval.ndcg10 >= 0.5
    assert retrieval.recall(10) >= 0.7

"""A chunked dataset of mixed-format files: PDF manuals, Word documents and saved web pages.

``examples/manuals/docs`` holds 13 documents (.pdf, .docx, .html) that ingestion turns into
clean text; ``embedbench.yaml`` chunks them into 64-token pieces (in all-MiniLM-L6-v2's
tokenizer, so both models search the same chunks), and each document is scored by its best
chunk: ``recall(5)`` counts five documents, not five chunks.
"""

import pytest

MINILM = "hf:sentence-transformers/all-MiniLM-L6-v2"


@pytest.mark.embedbench(dataset="manuals", models=["bm25", MINILM])
def test_manuals_search(retrieval):
    assert retrieval.chunking.unit == "tokens"
    assert len(retrieval.chunks) > retrieval.n_documents  # documents were really chunked
    assert retrieval.hit(1) >= 0.6
    assert retrieval.recall(5) >= 0.85
    assert retrieval.ndcg10 >= 0.7


@pytest.mark.embedbench(dataset="manuals", models=["bm25"], chunking=None)
def test_whole_documents_for_comparison(retrieval):
    # the same files embedded whole: the marker turns the yaml's chunking off
    assert retrieval.chunking is None
    assert retrieval.recall(5) >= 0.85

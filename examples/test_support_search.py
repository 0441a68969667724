"""The example benchmark suite: three retrievers on the bundled Lumio documentation.

Run it with ``pytest examples``: one test per model, a comparison table at the end, and the
thresholds of ``embedbench.yaml`` checked after each test. ``pytest examples -k bm25`` runs the
lexical model alone.
"""

import pytest


@pytest.mark.embedbench(dataset="support")
def test_support_search(retrieval):
    # each metric is a float with a bootstrap interval; a failure shows it and the worst queries
    assert retrieval.ndcg10 >= 0.6
    assert retrieval.mrr10 >= 0.7
    assert retrieval.recall(100) >= 0.95
    assert retrieval.latency.p95_ms <= 2000


@pytest.mark.embedbench(dataset="support", k=(1, 3, 10))
def test_first_result_is_often_right(retrieval):
    # a stricter look at the top of the ranking
    assert retrieval.hit(1) >= 0.55
    assert retrieval.hit(3) >= 0.8


@pytest.mark.embedbench(dataset="support")
def test_every_judgement_points_at_a_document(corpus, evalset):
    ids = {doc.id for doc in corpus}
    assert len(evalset) >= 40
    for query in evalset:
        assert set(evalset.qrels[query.id]) <= ids, query.id

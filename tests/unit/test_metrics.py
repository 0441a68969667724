"""Hand-computed metric values and metric-name parsing."""

from __future__ import annotations

import math

import pytest

from pytest_embedbench import METRICS, MetricError, score_run
from pytest_embedbench.evaluation.metrics import parse_metric


def test_graded_ndcg_by_hand() -> None:
    qrels = {"q": {"a": 3, "b": 1, "c": 2}}
    run = {"q": {"x": 0.9, "b": 0.8, "a": 0.7}}
    got = score_run(qrels, run, ["ndcg@3", "ndcg@1"])
    dcg = 0 / math.log2(2) + 1 / math.log2(3) + 3 / math.log2(4)
    idcg = 3 / math.log2(2) + 2 / math.log2(3) + 1 / math.log2(4)
    assert got["ndcg@3"]["q"] == pytest.approx(dcg / idcg, abs=1e-15)
    assert got["ndcg@1"]["q"] == 0.0


def test_binary_metrics_by_hand() -> None:
    qrels = {"q": {"a": 1, "b": 1, "c": 0}}
    run = {"q": {"c": 0.9, "a": 0.8, "z": 0.7, "b": 0.6}}
    got = score_run(qrels, run, ["precision@5", "recall@2", "mrr@1", "mrr@2", "hit@1", "map@4"])
    assert got["precision@5"]["q"] == pytest.approx(2 / 5)  # divides by k, not by retrieved
    assert got["recall@2"]["q"] == pytest.approx(1 / 2)
    assert got["mrr@1"]["q"] == 0.0
    assert got["mrr@2"]["q"] == pytest.approx(1 / 2)
    assert got["hit@1"]["q"] == 0.0
    assert got["map@4"]["q"] == pytest.approx((1 / 2 + 2 / 4) / 2)


def test_judged_query_without_results_scores_zero_and_unjudged_ignored() -> None:
    qrels = {"q1": {"a": 1}, "q2": {"b": 1}}
    run = {"q1": {"a": 1.0}, "other": {"a": 1.0}}
    got = score_run(qrels, run, ["ndcg@10"])
    assert got["ndcg@10"] == {"q1": 1.0, "q2": 0.0}


def test_metric_names() -> None:
    assert str(parse_metric(" NDCG @ 10 ")) == "ndcg@10"
    official = ["hit", "map", "mrr", "ndcg", "precision", "recall"]
    assert sorted(METRICS) == sorted(
        [*official, "judged", *(f"condensed_{name}" for name in official)]
    )
    assert str(parse_metric("Condensed_NDCG@10")) == "condensed_ndcg@10"
    with pytest.raises(MetricError, match=r"unknown metric 'bleu'.*\['condensed_hit'"):
        parse_metric("bleu@4")
    with pytest.raises(MetricError, match=r"'ndcg' is not of the form"):
        parse_metric("ndcg")
    with pytest.raises(MetricError, match="at least 1"):
        parse_metric("ndcg@0")


def test_bad_inputs() -> None:
    with pytest.raises(MetricError, match="NaN"):
        score_run({"q": {"a": 1}}, {"q": {"a": float("nan")}}, ["ndcg@10"])
    with pytest.raises(MetricError, match=r"qrels\['q'\]\['a'\] = -1"):
        score_run({"q": {"a": -1}}, {"q": {"a": 1.0}}, ["ndcg@10"])
    with pytest.raises(MetricError, match="no metric names"):
        score_run({"q": {"a": 1}}, {}, [])


def test_judged_counts_every_judged_document_over_the_ranks_filled() -> None:
    # q1: top 4 is a (judged 1), x (unjudged), b (judged 0), y (unjudged): 2 of 4 judged;
    # q2 retrieved 2 documents, both judged: judged@4 is 2 of the 2 ranks filled;
    # q3 retrieved nothing: 0
    qrels = {"q1": {"a": 1, "b": 0, "c": 2}, "q2": {"d": 0, "e": 1}, "q3": {"f": 1}}
    run = {"q1": {"a": 0.9, "x": 0.8, "b": 0.7, "y": 0.6, "c": 0.5}, "q2": {"d": 1.0, "e": 0.5}}
    got = score_run(qrels, run, ["judged@1", "judged@2", "judged@4", "judged@10"])
    assert got["judged@1"] == {"q1": 1.0, "q2": 1.0, "q3": 0.0}
    assert got["judged@2"] == {"q1": 0.5, "q2": 1.0, "q3": 0.0}
    assert got["judged@4"] == {"q1": 0.5, "q2": 1.0, "q3": 0.0}
    assert got["judged@10"] == {"q1": 3 / 5, "q2": 1.0, "q3": 0.0}


def test_condensed_lists_drop_the_unjudged_documents_before_scoring() -> None:
    # q1's condensed list is a, b, c: c (grade 2) moves from rank 5 to rank 3. The list is
    # condensed from the ranking the run holds, to its deepest cut-off (10 here, then 3)
    qrels = {"q1": {"a": 1, "b": 0, "c": 2}}
    run = {"q1": {"x": 0.95, "a": 0.9, "y": 0.8, "b": 0.7, "c": 0.5}}
    names = ["condensed_ndcg@3", "condensed_mrr@1", "ndcg@3", "mrr@1", "hit@10"]
    got = score_run(qrels, run, names)
    idcg = 2 + 1 / math.log2(3)
    assert got["condensed_ndcg@3"]["q1"] == pytest.approx((1 + 2 / math.log2(4)) / idcg)
    assert got["ndcg@3"]["q1"] == pytest.approx((1 / math.log2(3)) / idcg)
    assert got["condensed_mrr@1"]["q1"] == 1.0
    assert got["mrr@1"]["q1"] == 0.0
    # held to the top 3 (x, a, y), the condensed list is a alone
    shallow = score_run(qrels, run, ["condensed_ndcg@3"])["condensed_ndcg@3"]["q1"]
    assert shallow == pytest.approx(1 / idcg)

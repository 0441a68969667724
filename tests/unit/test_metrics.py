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
    assert sorted(METRICS) == ["hit", "map", "mrr", "ndcg", "precision", "recall"]
    with pytest.raises(MetricError, match=r"unknown metric 'bleu'.*\['hit', 'map'"):
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

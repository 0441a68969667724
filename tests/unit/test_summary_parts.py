"""The summary's parts, each computed in one place (issue 41): the paired comparisons built as
Deltas directly, one rule for "the interval excludes 0", one for NaN to null, and the score
histograms' shares computed in the summary for every writer."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest

from pytest_embedbench.core.io import finite as finite_data
from pytest_embedbench.core.io import missing
from pytest_embedbench.evaluation.record import Status, TestRecord
from pytest_embedbench.records.resultdata import GateDelta, IndexData, MetricData, ResultData
from pytest_embedbench.records.serial import to_data
from pytest_embedbench.report.summary import Delta, Summary, comparisons, model_rows, summarize
from pytest_embedbench.report.summary.comparisons import (
    baseline_delta,
    comparison_entry,
    versus_delta,
)
from pytest_embedbench.report.summary.cutoffs import (
    CutoffModel,
    CutoffRow,
    ScoreDistribution,
    score_bins,
)
from pytest_embedbench.report.summary.indexes import index_sections
from pytest_embedbench.report.summary.values import excludes_zero, interval_delta


def _result(scores: dict[str, float]) -> dict[str, Any]:
    mean = sum(scores.values()) / len(scores)
    return {
        "queries": len(scores),
        "documents": 10,
        "metrics": {"ndcg@10": {"value": mean, "low": mean - 0.1, "high": mean + 0.1, "n": 4}},
        "per_query": {"ndcg@10": scores},
    }


def _record(model: str, result: Any) -> TestRecord:
    name = dict(nodeid=f"t.py::test_x[{model}]", test="test_x", model=model, spec=model)
    return TestRecord(**name, dataset="d", k=[10], status=Status.PASSED, result=result)


RECORDS = [
    _record("a", _result({"q1": 1.0, "q2": 0.9, "q3": 1.0, "q4": 0.8, "q5": 1.0, "q6": 0.9})),
    _record("b", _result({"q1": 0.2, "q2": 0.1, "q3": 0.3, "q4": 0.2, "q5": 0.1, "q6": 0.0})),
    _record("c", _result({"q1": 0.9, "q2": 1.0, "q3": 0.9, "q4": 0.9, "q5": 1.0, "q6": 0.8})),
]


def test_comparisons_are_deltas_built_once() -> None:
    """comparisons() returns typed Deltas (no JSON dict parsed back); their JSON form reads back
    equal, and the summary of a run equals the one its JSON report gives."""
    found = comparisons(model_rows(RECORDS), "a", seed=0, n_resamples=200)
    deltas = found["d"]
    assert set(deltas) == {"b", "c"} and all(isinstance(d, Delta) for d in deltas.values())
    worse = deltas["b"]
    assert worse.against == "a" and worse.test == "randomization" and worse.n == 6
    assert worse.difference == pytest.approx(-0.783333, abs=1e-6)
    assert worse.verdict == ("worse" if worse.significant else "")
    for delta in deltas.values():
        entry = json.loads(json.dumps(comparison_entry(delta)))
        assert versus_delta(entry) == delta
    run = summarize(RECORDS, reference="a", comparisons=found)
    saved = json.loads(json.dumps({"summary": run.to_dict(), "comparisons": {}}))
    saved["tests"] = [r.to_dict() for r in RECORDS]
    assert Summary.from_json(saved) == run
    older = {"tests": saved["tests"], "comparisons": run.comparisons_section()}
    assert Summary.from_json(older).datasets == run.datasets  # a report without "summary"


@pytest.mark.parametrize(
    ("low", "high", "significant"),
    [
        (-0.3, -0.1, True),
        (0.1, 0.3, True),
        (-0.1, 0.1, False),
        (0.0, 0.2, False),
        (None, 0.2, False),
    ],
)
def test_one_rule_decides_a_bootstrap_difference(
    low: float | None, high: float | None, significant: bool
) -> None:
    """The interval excludes 0: the same decision for a stress point's delta, the baseline
    gate's delta (when it stored no flag) and an index's delta against exact search."""
    assert excludes_zero(low, high) is significant
    stress = interval_delta({"value": 0.05, "low": low, "high": high}, against="clean", metric="m")
    gate = baseline_delta(GateDelta(difference=0.05, low=low, high=high), "m")
    index = IndexData(spec="x", engine="faiss", delta={"m": MetricData(0.05, low, high, 4)})
    result = ResultData(index=index, metrics={"m": MetricData(0.5, 0.4, 0.6, 4)})
    (section,) = index_sections([_record("m1", result)])
    deltas = [stress, gate, section.rows[0].delta]
    assert all(d is not None and d.significant is significant for d in deltas)
    assert {d.verdict for d in deltas if d is not None} == {"better" if significant else ""}
    # a gate's own flag wins over the interval
    flagged = baseline_delta(GateDelta(difference=0.05, low=low, high=high, significant=True))
    assert flagged is not None and flagged.significant and flagged.verdict == "better"


def test_nan_becomes_null_by_one_rule() -> None:
    """The JSON files, the records' serial form and the cut-offs' JSON write NaN and infinities
    as null the same way, in nested mappings, lists and tuples."""
    from pytest_embedbench.evaluation.cutoffs import CutoffLevel

    value = {"a": math.nan, "b": [1.0, math.inf, (2.0, -math.inf)], "c": "x"}
    expected = {"a": None, "b": [1.0, None, [2.0, None]], "c": "x"}
    assert finite_data(value) == expected == to_data(value)
    level = CutoffLevel("strict", 0.001, math.nan, 0.5, math.inf)
    data = to_data(level)
    assert data["threshold"] is None and data["lets_random"] is None
    assert finite_data({"level": vars(level)})["level"]["keeps_relevant_low"] is None
    # the baseline's entries: the same rule, rounding what stays; missing() names what goes
    rounded = finite_data({"a": [1.23456789, math.nan], "b": 7}, digits=6)
    assert rounded == {"a": [1.234568, None], "b": 7}
    for scalar in (None, math.nan, math.inf, -math.inf, 0.0, 1.5, 3, "x"):
        assert missing(scalar) is (finite_data(scalar) is None)


def test_the_histogram_shares_are_the_summarys() -> None:
    """Each bin's share of its kind's pairs (the unscored pairs count in the total) is computed
    by the summary's ScoreDistribution; the bins every writer shows carry those shares."""
    dist = ScoreDistribution(
        edges=(0.0, 0.5, 1.0),
        relevant=(1, 3),
        random=(6, 2),
        relevant_unscored=4,
        random_unscored=0,
    )
    assert dist.relevant_shares == (1 / 8, 3 / 8) and dist.random_shares == (6 / 8, 2 / 8)
    rows = (CutoffRow("strict", 0.001, 0.75), CutoffRow("loose", 0.05, None))
    bins = score_bins(CutoffModel("m", True, rows=rows, distribution=dist))
    assert [(b.relevant_share, b.random_share) for b in bins] == list(
        zip(dist.relevant_shares, dist.random_shares, strict=True)
    )
    assert [b.levels for b in bins] == [(), (("strict", 0.75),)]
    empty = ScoreDistribution(edges=(0.0, 1.0), relevant=(0,), random=(0,))
    assert empty.relevant_shares == (0.0,) and empty.random_shares == (0.0,)

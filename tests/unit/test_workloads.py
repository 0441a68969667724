"""Workload points evaluated without pytest: seeds averaged per query, delta paired with clean."""

from __future__ import annotations

import numpy as np
import pytest

from pytest_embedbench import Evaluator, RetrievalDataset
from pytest_embedbench.core.exceptions import ConfigError
from pytest_embedbench.evaluation.workloads import evaluate_workload, parse_workloads


@pytest.fixture
def dataset() -> RetrievalDataset:
    return RetrievalDataset.from_dicts(
        {
            "d1": "Reset your password from the login page.",
            "d2": "Invoices are emailed every month as PDF.",
            "d3": "Export workspace data as CSV from settings.",
            "d4": "Change the card used for billing payments.",
        },
        {
            "q1": "how do I reset my password",
            "q2": "export workspace data csv",
            "q3": "monthly invoices pdf",
            "q4": "change billing card",
        },
        {"q1": {"d1": 1}, "q2": {"d3": 1}, "q3": {"d2": 1}, "q4": {"d4": 1}},
        name="tiny",
    )


def test_seeds_average_per_query_and_delta_pairs_with_clean(dataset: RetrievalDataset) -> None:
    ev = Evaluator(cache=False, latency_passes=0, n_resamples=500, k=(1, 3))
    (point,) = parse_workloads(["noise:typo*4"])
    result = evaluate_workload(ev, "bm25", dataset, point)
    assert len(result.runs) == 4 and result.clean is not None
    expected = np.mean([r.per_query("ndcg@3") for r in result.runs], axis=0)
    assert np.array_equal(result.per_query("ndcg@3"), expected)
    assert float(result.ndcg(3)) == pytest.approx(float(expected.mean()))
    delta = result.delta("NDCG@3")  # metric names are normalised
    assert float(delta) == pytest.approx(float(result.ndcg(3)) - float(result.clean.ndcg(3)))
    assert delta.n == 4 and delta.low <= float(delta) <= delta.high
    stress = result.to_dict()["stress"]
    assert stress["seeds"] == [0, 1, 2, 3] and "ndcg@3" in stress["delta"]
    # the same inputs give the same numbers
    again = evaluate_workload(ev, "bm25", dataset, point)
    assert again.to_dict()["stress"]["delta"] == stress["delta"]


def test_needle_points_have_no_clean(dataset: RetrievalDataset) -> None:
    ev = Evaluator(cache=False, latency_passes=0, n_resamples=100, k=(1, 10))
    (point,) = parse_workloads(["needle:512@0"])
    result = evaluate_workload(ev, "bm25", None, point)
    assert result.clean is None and result.info["length"] == 512
    with pytest.raises(ConfigError, match="no clean counterpart"):
        result.delta("ndcg@10")


def test_chunk_size_dataset_keeps_strategy_and_overlap_share(dataset: RetrievalDataset) -> None:
    from pytest_embedbench.data.chunking import ChunkingSettings
    from pytest_embedbench.data.stress.chunks import chunk_size_dataset

    plain = chunk_size_dataset(dataset, 256)
    assert plain.chunking is not None and dataset.chunking is None  # the input is left alone
    assert (plain.chunking.unit, plain.chunking.size, plain.chunking.tokenizer) == (
        "tokens",
        256,
        "all-MiniLM-L6-v2",
    )
    assert plain.chunking.overlap == round(120 / 800 * 256)  # the defaults' share
    base = dataset.with_chunking(ChunkingSettings(strategy="sentence", size=400, overlap=40))
    swept = chunk_size_dataset(base, 128)
    assert swept.chunking is not None
    assert (swept.chunking.strategy, swept.chunking.overlap) == ("sentence", 13)
    assert swept.fingerprint != plain.fingerprint

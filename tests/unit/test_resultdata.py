"""A record's typed result: one field list writes and reads it (issue 29, step 2)."""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path

import pytest

from pytest_embedbench import evaluate
from pytest_embedbench.evaluation.record import TestRecord
from pytest_embedbench.records.resultdata import (
    GateDelta,
    GateOutcome,
    LatencyData,
    ResultData,
)

pytest.importorskip("bm25s")


def _fields(cls: type) -> set[str]:
    return {f.name for f in dataclasses.fields(cls)}


def test_a_real_result_round_trips_through_json_by_its_fields(beir_folder: Path) -> None:
    result = evaluate("bm25", beir_folder, k=(1, 10))
    data = result.data(per_query=True)
    written = data.to_dict()
    # the JSON keys are the dataclass's fields, nothing else
    assert set(written) <= _fields(ResultData)
    assert set(written["latency"]) <= _fields(LatencyData)
    back = ResultData.from_dict(json.loads(json.dumps(written)))
    assert back.to_dict() == written
    # read back typed: the values the result itself reports
    assert back.metrics["ndcg@10"].value == pytest.approx(float(result.ndcg10))
    assert back.metrics["ndcg@10"].low == pytest.approx(result.ndcg10.low)
    assert back.scores("ndcg@10") == pytest.approx(
        dict(zip(result.query_ids, result.per_query("ndcg@10").tolist(), strict=True))
    )
    assert back.retrieved == {q: tuple(ids[:10]) for q, ids in result.rankings.items()}
    assert back.latency.p95_ms == pytest.approx(result.latency.p95_ms)
    # the optional parts are absent, not null, from a bare summary
    bare = result.to_dict()
    for name in ("per_query", "query_texts", "retrieved", "relevant", "winning_chunks"):
        assert name not in bare
    assert "per_query_ms" not in bare["latency"]


def test_not_a_number_is_null_in_json_and_none_when_read() -> None:
    data = ResultData(documents_per_s=math.nan, latency=LatencyData(p95_ms=math.inf))
    written = data.to_dict()
    assert written["documents_per_s"] is None and written["latency"]["p95_ms"] is None
    back = ResultData.from_dict(json.loads(json.dumps(written, allow_nan=False)))
    assert back.documents_per_s is None and back.latency.p95_ms is None


def test_a_gate_outcome_round_trips_and_each_delta_keeps_only_its_own_keys() -> None:
    outcome = GateOutcome(
        "regressed",
        failures=["ndcg@10 regressed"],
        deltas={
            "ndcg@10": GateDelta(
                baseline=0.8,
                current=0.7,
                regressed=True,
                difference=-0.1,
                low=-0.15,
                high=-0.05,
                shared_queries=40,
                significant=True,
                inconclusive=False,
                minimum_detectable=0.04,
            ),
            "latency.p95_ms": GateDelta(baseline=10.0, current=11.0, p_value=0.3),
        },
    )
    written = outcome.to_dict()
    assert "p_value" not in written["deltas"]["ndcg@10"]
    assert set(written["deltas"]["latency.p95_ms"]) == {
        "baseline",
        "current",
        "p_value",
        "regressed",
    }
    assert "queries" not in written  # no per-query diff: absent
    back = GateOutcome.from_dict(json.loads(json.dumps(written)))
    assert back == outcome
    back.failures.append("more")  # the gate appends to its lists
    assert outcome.failures == ["ndcg@10 regressed"]


def test_a_record_given_mappings_reads_them_into_their_types() -> None:
    record = TestRecord(
        nodeid="t.py::t[bm25]",
        test="t",
        model="bm25",
        spec="bm25",
        dataset="d",
        k=[10],
        result={"queries": 3, "metrics": {"ndcg@10": {"value": 0.5, "n": 3}}},
        baseline={"status": "passed", "deltas": {"ndcg@10": {"difference": 0.01}}},
    )
    assert isinstance(record.result, ResultData) and record.result.queries == 3
    assert record.result.metrics["ndcg@10"].value == 0.5
    assert isinstance(record.baseline, GateOutcome)
    assert record.baseline.deltas["ndcg@10"].difference == 0.01
    again = TestRecord.from_dict(json.loads(json.dumps(record.to_dict())))
    assert again == record


def test_the_storage_figures_are_computed_once(beir_folder: Path, tmp_path: Path) -> None:
    """The attributes a test asserts on and the figures the baseline keeps are one computation
    (issue 33): ``bytes_per_doc``, ``index_mb`` and ``cache_mb`` in MiB, ``docs_per_s``."""
    from pytest_embedbench.records.resultdata import MIB

    lexical = evaluate("bm25", beir_folder, k=(1, 10), cache=tmp_path)
    data = lexical.data()
    assert data.storage == {
        "bytes_per_doc": lexical.bytes_per_doc,
        "index_mb": lexical.index_mb,
        "cache_mb": None,  # bm25 caches no vectors
        "docs_per_s": lexical.docs_per_s,
    }
    assert lexical.index_mb == data.resources.index_bytes / MIB
    assert math.isnan(lexical.cache_mb) and lexical.docs_per_s == lexical.documents_per_s
    # a report of an older version, without cache_bytes, reads as not measured
    older = data.to_dict()
    del older["resources"]["cache_bytes"]
    assert ResultData.from_dict(older).storage["cache_mb"] is None


def test_tokens_cost_and_resources_are_typed_records_read_by_key_too(beir_folder: Path) -> None:
    """Built as records by the result and kept as they are in its data (issue 41); the dict
    access tests and docs use keeps working."""
    from pytest_embedbench.records.resultdata import CostData, ResourcesData, TokensData
    from pytest_embedbench.records.serial import to_data

    result = evaluate("hashing:h", beir_folder, k=(1, 10), cache=False)
    tokens, cost, resources = result.tokens, result.cost, result.resources
    assert isinstance(tokens, TokensData) and isinstance(cost, CostData)
    assert isinstance(resources, ResourcesData)
    assert tokens["documents"] == tokens.documents and tokens.documents > 0
    assert resources["dimension"] == resources.get("dimension") == 64
    assert cost["usd"] == cost.usd and "usd" in cost and "nope" not in cost
    assert resources.get("nope") is None
    with pytest.raises(KeyError, match="nope"):
        tokens["nope"]
    assert list(cost) == ["price_per_1m_tokens", "usd"] and len(tokens) == 3
    assert dict(resources) == to_data(resources)  # the mapping view is the JSON's keys
    data = result.data()
    assert (data.tokens, data.cost, data.resources) == (tokens, cost, resources)
    assert data.to_dict()["tokens"] == dict(tokens)


def test_the_gate_status_is_an_enum_whose_json_is_its_name() -> None:
    from pytest_embedbench.records.resultdata import GateStatus

    outcome = GateOutcome("regressed")
    assert outcome.status is GateStatus.REGRESSED and outcome.status == "regressed"
    assert f"{outcome.status}" == str(outcome.status) == "regressed"
    written = outcome.to_dict()
    assert type(written["status"]) is str and json.dumps(written["status"]) == '"regressed"'
    assert GateOutcome.from_dict(written).status is GateStatus.REGRESSED
    assert GateOutcome.from_dict({}).status is GateStatus.UNKNOWN  # a hand-built record's
    with pytest.raises(ValueError, match="'bogus'"):
        GateOutcome("bogus")  # type: ignore[arg-type]


def test_a_results_cut_offs_are_public_once_measured(beir_folder: Path) -> None:
    result = evaluate("bm25", beir_folder, k=(1, 10))
    assert result.measured_cutoffs is None  # reading it measures nothing
    assert result.data().cutoffs is None
    cut = result.cutoffs
    assert result.measured_cutoffs is cut
    assert result.data().cutoffs == cut.to_dict()


def test_a_winning_chunks_page_is_its_printed_label() -> None:
    # Chunk.page is the PDF page's printed label ("iv", "12"): the record reads it back as the
    # same string (it was declared an int, so the strict reader refused every PDF's hits)
    from pytest_embedbench.records.resultdata import ChunkHit
    from pytest_embedbench.records.serial import from_data, to_data

    for label in ("1", "iv", "A-3"):
        hit = ChunkHit("manual.pdf", 0.5, "manual.pdf#0", 0, 120, page=label)
        data = json.loads(json.dumps(to_data(hit)))
        assert data["page"] == label
        assert from_data(ChunkHit, data) == hit
